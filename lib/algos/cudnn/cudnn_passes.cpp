#include "algos/cudnn/cudnn_passes.h"

#include <cstring>
#include <string>

namespace fftconv::detail {

[[noreturn]] void throw_cudnn(cudnnStatus_t st, const char* expr, const char* file, int line) {
  Status s = Status::kCudnnError;
  if (st / 1000 == CUDNN_STATUS_NOT_SUPPORTED / 1000) s = Status::kNotSupported;
  if (st == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED ||
      st == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED) {
    s = Status::kOutOfMemory;
  }
  const char* base = std::strrchr(file, '/');
  throw Error(s, std::string(cudnnGetErrorString(st)) + " from " + expr + " at " +
                     (base ? base + 1 : file) + ":" + std::to_string(line));
}

cudnnDataType_t cudnn_data_type(DType t) {
  switch (t) {
    case DType::kF16:
      return CUDNN_DATA_HALF;
    case DType::kBF16:
      return CUDNN_DATA_BFLOAT16;
    case DType::kF32:
      break;
  }
  return CUDNN_DATA_FLOAT;
}

namespace {

static_assert(CUDNN_CONVOLUTION_FWD_ALGO_COUNT == 8 && CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT == 6 &&
                  CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT == 7,
              "cuDNN's algorithm lists changed");

// One of cuDNN's searches, search(capacity, &returned, results), as a CudnnPerf list.
template <typename P, int kCapacity, typename Search>
std::vector<CudnnPerf> collect(Search&& search) {
  P results[kCapacity];
  int returned = 0;
  search(kCapacity, &returned, results);
  std::vector<CudnnPerf> out;
  for (int i = 0; i < returned; ++i) {
    const P& p = results[i];
    out.push_back(CudnnPerf{static_cast<int>(p.algo), p.status, p.time, p.memory, p.mathType});
  }
  return out;
}

// cuDNN's three passes have one call shape: (two operand descriptors and pointers, the
// convolution, the result's descriptor and pointer), only the names and the operands' roles
// differ. One definition makes the table entry of each pass:
//   Name, Short: the API's spellings (cudnnConvolution<Name>, cudnnConvolution<Short>AlgoPerf_t)
//   COUNT:       CUDNN_CONVOLUTION_<COUNT>_ALGO_COUNT
//   in1, in2, res: which of CudnnDescs' x, w, y (and the search tensors) the call reads and writes
//   arg1, arg2:  which RunArgs pointers are the operands (the result is always RunArgs::out)
// alpha and beta come from RunArgs (1 and 0 unless a backward-filter call accumulates).
#define FFTCONV_CUDNN_PASS_OPS(Name, Short, COUNT, in1, in2, res, arg1, arg2, ...)              \
  CudnnPassOps {                                                                                \
    {__VA_ARGS__},                                                                              \
        [](const CudnnDescs& d, int algo, std::size_t* bytes) {                                 \
          return cudnnGetConvolution##Name##WorkspaceSize(                                      \
              d.handle, d.in1, d.in2, d.conv, d.res,                                            \
              static_cast<cudnnConvolution##Short##Algo_t>(algo), bytes);                       \
        },                                                                                      \
        [](const CudnnDescs& d, int algo, const RunArgs& a, std::size_t ws) {                   \
          FFTCONV_CUDNN_CHECK(                                                                  \
              cudnnConvolution##Name(d.handle, &a.alpha, d.in1, a.arg1, d.in2, a.arg2, d.conv,  \
                                     static_cast<cudnnConvolution##Short##Algo_t>(algo),        \
                                     a.workspace, ws, &a.beta, d.res, a.out));                  \
        },                                                                                      \
        [](const CudnnDescs& d, const CudnnSearchTensors& t) {                                  \
          using Perf = cudnnConvolution##Short##AlgoPerf_t;                                     \
          return collect<Perf, CUDNN_CONVOLUTION_##COUNT##_ALGO_COUNT>(                         \
              [&](int n, int* returned, Perf* p) {                                              \
                FFTCONV_CUDNN_CHECK(cudnnFindConvolution##Name##AlgorithmEx(                    \
                    d.handle, d.in1, t.in1, d.in2, t.in2, d.conv, d.res, t.res, n, returned, p, \
                    t.workspace, t.workspace_bytes));                                           \
              });                                                                               \
        },                                                                                      \
        [](const CudnnDescs& d) {                                                               \
          using Perf = cudnnConvolution##Short##AlgoPerf_t;                                     \
          return collect<Perf, CUDNN_CONVOLUTION_##COUNT##_ALGO_COUNT>(                         \
              [&](int n, int* returned, Perf* p) {                                              \
                FFTCONV_CUDNN_CHECK(cudnnGetConvolution##Name##Algorithm_v7(                    \
                    d.handle, d.in1, d.in2, d.conv, d.res, n, returned, p));                    \
              });                                                                               \
        },                                                                                      \
  }

const CudnnPassOps kForward = FFTCONV_CUDNN_PASS_OPS(
    Forward, Fwd, FWD, x, w, y, x, w, "IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT",
    "FFT", "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED");
const CudnnPassOps kBackwardData =
    FFTCONV_CUDNN_PASS_OPS(BackwardData, BwdData, BWD_DATA, w, y, x, w, dy, "ALGO_0", "ALGO_1",
                           "FFT", "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED");
// BWD_FILTER_ALGO_WINOGRAD (value 4) is documented as not implemented and left out.
const CudnnPassOps kBackwardFilter =
    FFTCONV_CUDNN_PASS_OPS(BackwardFilter, BwdFilter, BWD_FILTER, x, y, w, x, dy, "ALGO_0",
                           "ALGO_1", "FFT", "ALGO_3", "", "WINOGRAD_NONFUSED", "FFT_TILING");

#undef FFTCONV_CUDNN_PASS_OPS

}  // namespace

const CudnnPassOps& cudnn_pass_ops(Pass pass) {
  return pass == Pass::kForward        ? kForward
         : pass == Pass::kBackwardData ? kBackwardData
                                       : kBackwardFilter;
}

}  // namespace fftconv::detail
