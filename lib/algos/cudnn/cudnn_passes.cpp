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

using FwdAlgo = cudnnConvolutionFwdAlgo_t;
using BwdDataAlgo = cudnnConvolutionBwdDataAlgo_t;
using BwdFilterAlgo = cudnnConvolutionBwdFilterAlgo_t;
constexpr float kOne = 1.0f, kZero = 0.0f;

const CudnnPassOps kForward{
    {"IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT", "FFT", "FFT_TILING", "WINOGRAD",
     "WINOGRAD_NONFUSED"},
    [](const CudnnDescs& d, int algo, std::size_t* bytes) {
      return cudnnGetConvolutionForwardWorkspaceSize(d.handle, d.x, d.w, d.conv, d.y,
                                                     static_cast<FwdAlgo>(algo), bytes);
    },
    [](const CudnnDescs& d, int algo, const RunArgs& a, std::size_t ws) {
      FFTCONV_CUDNN_CHECK(cudnnConvolutionForward(d.handle, &kOne, d.x, a.x, d.w, a.w, d.conv,
                                                  static_cast<FwdAlgo>(algo), a.workspace, ws,
                                                  &kZero, d.y, a.out));
    },
    [](const CudnnDescs& d, const CudnnSearchTensors& t) {
      return collect<cudnnConvolutionFwdAlgoPerf_t, CUDNN_CONVOLUTION_FWD_ALGO_COUNT>(
          [&](int n, int* returned, cudnnConvolutionFwdAlgoPerf_t* p) {
            FFTCONV_CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithmEx(
                d.handle, d.x, t.x, d.w, t.w, d.conv, d.y, t.y, n, returned, p, t.workspace,
                t.workspace_bytes));
          });
    },
    [](const CudnnDescs& d) {
      return collect<cudnnConvolutionFwdAlgoPerf_t, CUDNN_CONVOLUTION_FWD_ALGO_COUNT>(
          [&](int n, int* returned, cudnnConvolutionFwdAlgoPerf_t* p) {
            FFTCONV_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(d.handle, d.x, d.w, d.conv,
                                                                       d.y, n, returned, p));
          });
    }};

const CudnnPassOps kBackwardData{
    {"ALGO_0", "ALGO_1", "FFT", "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"},
    [](const CudnnDescs& d, int algo, std::size_t* bytes) {
      return cudnnGetConvolutionBackwardDataWorkspaceSize(d.handle, d.w, d.y, d.conv, d.x,
                                                          static_cast<BwdDataAlgo>(algo), bytes);
    },
    [](const CudnnDescs& d, int algo, const RunArgs& a, std::size_t ws) {
      FFTCONV_CUDNN_CHECK(cudnnConvolutionBackwardData(d.handle, &kOne, d.w, a.w, d.y, a.dy,
                                                       d.conv, static_cast<BwdDataAlgo>(algo),
                                                       a.workspace, ws, &kZero, d.x, a.out));
    },
    [](const CudnnDescs& d, const CudnnSearchTensors& t) {
      return collect<cudnnConvolutionBwdDataAlgoPerf_t, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT>(
          [&](int n, int* returned, cudnnConvolutionBwdDataAlgoPerf_t* p) {
            FFTCONV_CUDNN_CHECK(cudnnFindConvolutionBackwardDataAlgorithmEx(
                d.handle, d.w, t.w, d.y, t.y, d.conv, d.x, t.x, n, returned, p, t.workspace,
                t.workspace_bytes));
          });
    },
    [](const CudnnDescs& d) {
      return collect<cudnnConvolutionBwdDataAlgoPerf_t, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT>(
          [&](int n, int* returned, cudnnConvolutionBwdDataAlgoPerf_t* p) {
            FFTCONV_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(
                d.handle, d.w, d.y, d.conv, d.x, n, returned, p));
          });
    }};

// BWD_FILTER_ALGO_WINOGRAD (value 4) is documented as not implemented and left out.
const CudnnPassOps kBackwardFilter{
    {"ALGO_0", "ALGO_1", "FFT", "ALGO_3", "", "WINOGRAD_NONFUSED", "FFT_TILING"},
    [](const CudnnDescs& d, int algo, std::size_t* bytes) {
      return cudnnGetConvolutionBackwardFilterWorkspaceSize(
          d.handle, d.x, d.y, d.conv, d.w, static_cast<BwdFilterAlgo>(algo), bytes);
    },
    [](const CudnnDescs& d, int algo, const RunArgs& a, std::size_t ws) {
      FFTCONV_CUDNN_CHECK(cudnnConvolutionBackwardFilter(d.handle, &a.alpha, d.x, a.x, d.y, a.dy,
                                                         d.conv, static_cast<BwdFilterAlgo>(algo),
                                                         a.workspace, ws, &a.beta, d.w, a.out));
    },
    [](const CudnnDescs& d, const CudnnSearchTensors& t) {
      return collect<cudnnConvolutionBwdFilterAlgoPerf_t,
                     CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT>(
          [&](int n, int* returned, cudnnConvolutionBwdFilterAlgoPerf_t* p) {
            FFTCONV_CUDNN_CHECK(cudnnFindConvolutionBackwardFilterAlgorithmEx(
                d.handle, d.x, t.x, d.y, t.y, d.conv, d.w, t.w, n, returned, p, t.workspace,
                t.workspace_bytes));
          });
    },
    [](const CudnnDescs& d) {
      return collect<cudnnConvolutionBwdFilterAlgoPerf_t,
                     CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT>(
          [&](int n, int* returned, cudnnConvolutionBwdFilterAlgoPerf_t* p) {
            FFTCONV_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
                d.handle, d.x, d.y, d.conv, d.w, n, returned, p));
          });
    }};

}  // namespace

const CudnnPassOps& cudnn_pass_ops(Pass pass) {
  return pass == Pass::kForward ? kForward : pass == Pass::kBackwardData ? kBackwardData
                                                                         : kBackwardFilter;
}

}  // namespace fftconv::detail
