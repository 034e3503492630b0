#include "algos/cudnn_fwd.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstring>
#include <vector>

#include "core/check.h"

#if FFTCONV_WITH_CUDNN
#include <cudnn.h>

#include "stages/fill.h"
#endif

namespace fftconv::detail {

Support cudnn_can_implement(const ConvDesc& d) {
  if (!cudnn_available()) {
    return Support::no(Status::kNotSupported,
                       "this build of fftconv has no cuDNN path (configure with "
                       "-DFFTCONV_WITH_CUDNN=ON where cuDNN is installed)");
  }
  const std::int64_t dims[] = {d.n, d.c, d.h, d.w, d.k, d.r, d.s, d.pad_h, d.pad_w,
                               d.stride_h, d.stride_w, d.dil_h, d.dil_w, d.groups};
  for (std::int64_t v : dims) {
    if (v > INT_MAX) return Support::no(Status::kNotSupported, "cuDNN takes 32-bit sizes");
  }
  // cuDNN's legacy API addresses tensors with 32-bit element offsets.
  const std::int64_t limit = INT_MAX;
  if (d.x_elems() > limit || d.w_elems() > limit || d.y_elems() > limit) {
    return Support::no(Status::kNotSupported, "a tensor has more than 2^31-1 elements, over cuDNN's limit");
  }
  return Support::yes();
}

#if !FFTCONV_WITH_CUDNN

bool cudnn_available() { return false; }

std::unique_ptr<ConvAlgo> make_cudnn_forward(const ConvDesc& d, const Options&) {
  const Support s = cudnn_can_implement(d);
  throw Error(s.status, s.reason);
}

#else

bool cudnn_available() { return true; }

namespace {

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

#define FFTCONV_CUDNN_CHECK(expr)                                                         \
  do {                                                                                    \
    const cudnnStatus_t fftconv_st_ = (expr);                                             \
    if (fftconv_st_ != CUDNN_STATUS_SUCCESS) throw_cudnn(fftconv_st_, #expr, __FILE__, __LINE__); \
  } while (0)

const char* fwd_algo_name(cudnnConvolutionFwdAlgo_t a) {
  switch (a) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM: return "IMPLICIT_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM: return "IMPLICIT_PRECOMP_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM: return "GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT: return "DIRECT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT: return "FFT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING: return "FFT_TILING";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD: return "WINOGRAD";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
    default: return "UNKNOWN";
  }
}

const char* math_name(cudnnMathType_t m) {
  switch (m) {
    case CUDNN_DEFAULT_MATH: return "default";
    case CUDNN_TENSOR_OP_MATH: return "tensor_op";
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION: return "tensor_op_conv";
    case CUDNN_FMA_MATH: return "fma";
    default: return "unknown";
  }
}

cudnnDataType_t cudnn_dtype(DType t) {
  switch (t) {
    case DType::kF16: return CUDNN_DATA_HALF;
    case DType::kBF16: return CUDNN_DATA_BFLOAT16;
    case DType::kF32: break;
  }
  return CUDNN_DATA_FLOAT;
}

/// Device buffer used only while planning (cuDNN's search needs real tensors).
struct ScratchBuffer {
  void* ptr = nullptr;
  explicit ScratchBuffer(std::size_t bytes) {
    if (bytes) FFTCONV_CUDA_CHECK(cudaMalloc(&ptr, bytes));
  }
  ~ScratchBuffer() {
    if (ptr) cudaFree(ptr);
  }
  ScratchBuffer(const ScratchBuffer&) = delete;
  ScratchBuffer& operator=(const ScratchBuffer&) = delete;
};

class CudnnFwdAlgo final : public ConvAlgo {
 public:
  CudnnFwdAlgo(const ConvDesc& d, const Options& o) : d_(d) {
    try {
      build(o);
    } catch (...) {
      release();
      throw;
    }
  }

  ~CudnnFwdAlgo() override { release(); }

 private:
  void build(const Options& o) {
    const ConvDesc& d = d_;
    FFTCONV_CUDNN_CHECK(cudnnCreate(&handle_));
    FFTCONV_CUDNN_CHECK(cudnnCreateTensorDescriptor(&x_desc_));
    FFTCONV_CUDNN_CHECK(cudnnCreateTensorDescriptor(&y_desc_));
    FFTCONV_CUDNN_CHECK(cudnnCreateTensorDescriptor(&b_desc_));
    FFTCONV_CUDNN_CHECK(cudnnCreateFilterDescriptor(&w_desc_));
    FFTCONV_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&conv_desc_));
    const cudnnDataType_t dt = cudnn_dtype(d.dtype);
    auto i = [](std::int64_t v) { return static_cast<int>(v); };
    FFTCONV_CUDNN_CHECK(cudnnSetTensor4dDescriptor(x_desc_, CUDNN_TENSOR_NCHW, dt, i(d.n), i(d.c),
                                                   i(d.h), i(d.w)));
    FFTCONV_CUDNN_CHECK(cudnnSetFilter4dDescriptor(w_desc_, dt, CUDNN_TENSOR_NCHW, i(d.k),
                                                   i(d.c_per_group()), i(d.r), i(d.s)));
    FFTCONV_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(
        conv_desc_, i(d.pad_h), i(d.pad_w), i(d.stride_h), i(d.stride_w), i(d.dil_h), i(d.dil_w),
        CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    FFTCONV_CUDNN_CHECK(cudnnSetConvolutionGroupCount(conv_desc_, i(d.groups)));
    // Strict fp32 is FMA only; TF32 (and fp16/bf16 tensor cores) need tensor-op math.
    const bool strict = d.dtype == DType::kF32 && !o.allow_tf32;
    const cudnnMathType_t math = strict ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH;
    FFTCONV_CUDNN_CHECK(cudnnSetConvolutionMathType(conv_desc_, math));
    int on, oc, oh, ow;
    FFTCONV_CUDNN_CHECK(
        cudnnGetConvolution2dForwardOutputDim(conv_desc_, x_desc_, w_desc_, &on, &oc, &oh, &ow));
    FFTCONV_ASSERT(on == d.n && oc == d.k && oh == d.out_h() && ow == d.out_w(),
                   "cuDNN output size disagrees with ConvDesc");
    FFTCONV_CUDNN_CHECK(cudnnSetTensor4dDescriptor(y_desc_, CUDNN_TENSOR_NCHW, dt, on, oc, oh, ow));
    FFTCONV_CUDNN_CHECK(cudnnSetTensor4dDescriptor(b_desc_, CUDNN_TENSOR_NCHW, dt, 1, oc, 1, 1));

    if (o.cudnn_search == CudnnSearch::kFind) {
      find_algo(strict, o.workspace_limit);
    } else {
      heuristic_algo(strict, o.workspace_limit);
    }
    FFTCONV_CUDNN_CHECK(cudnnSetConvolutionMathType(conv_desc_, math_));
  }

  void release() noexcept {
    clear_filter();
    if (conv_desc_) cudnnDestroyConvolutionDescriptor(conv_desc_);
    if (w_desc_) cudnnDestroyFilterDescriptor(w_desc_);
    if (b_desc_) cudnnDestroyTensorDescriptor(b_desc_);
    if (y_desc_) cudnnDestroyTensorDescriptor(y_desc_);
    if (x_desc_) cudnnDestroyTensorDescriptor(x_desc_);
    if (handle_) cudnnDestroy(handle_);
    conv_desc_ = nullptr;
    w_desc_ = nullptr;
    b_desc_ = y_desc_ = x_desc_ = nullptr;
    handle_ = nullptr;
  }

 public:
  std::size_t workspace_size() const override { return align_up(workspace_); }

  void forward(const FwdArgs& a, cudaStream_t stream, StageMarks* marks) override {
    const float one = 1.0f, zero = 0.0f;
    const void* w = a.w ? a.w : kept_w_;
    FFTCONV_CUDNN_CHECK(cudnnSetStream(handle_, stream));
    FFTCONV_CUDNN_CHECK(cudnnConvolutionForward(handle_, &one, x_desc_, a.x, w_desc_, w,
                                                conv_desc_, algo_, a.workspace, workspace_, &zero,
                                                y_desc_, a.y));
    if (marks) marks->mark("cudnn", stream);
    if (a.bias) {
      FFTCONV_CUDNN_CHECK(cudnnAddTensor(handle_, &one, b_desc_, a.bias, &one, y_desc_, a.y));
      if (marks) marks->mark("bias", stream);
    }
  }

  // cuDNN has no transform to skip: the kept filter is a copy the plan owns.
  void set_filter(const void* w, cudaStream_t stream) override {
    const std::size_t bytes = dtype_size(d_.dtype) * static_cast<std::size_t>(d_.w_elems());
    if (!kept_w_) {
      const cudaError_t err = cudaMalloc(&kept_w_, bytes);
      if (err != cudaSuccess) {
        cudaGetLastError();
        kept_w_ = nullptr;
        throw Error(Status::kOutOfMemory, "set_filter: keeping the filter needs " +
                                              std::to_string(bytes) + " bytes of device memory");
      }
    }
    FFTCONV_CUDA_CHECK(cudaMemcpyAsync(kept_w_, w, bytes, cudaMemcpyDeviceToDevice, stream));
  }
  void clear_filter() override {
    if (kept_w_) {
      cudaDeviceSynchronize();
      cudaFree(kept_w_);
    }
    kept_w_ = nullptr;
  }
  bool has_filter() const override { return kept_w_ != nullptr; }
  std::size_t filter_bytes() const override {
    return kept_w_ ? dtype_size(d_.dtype) * static_cast<std::size_t>(d_.w_elems()) : 0;
  }

  void fill_info(PlanInfo& info) const override {
    info.algo = Algo::kCudnn;
    info.cudnn_algo = fwd_algo_name(algo_);
    info.cudnn_math = math_name(math_);
    info.workspace_bytes = workspace_size();
    info.reason = search_;
  }

 private:
  static constexpr int kAlgoCount = CUDNN_CONVOLUTION_FWD_ALGO_COUNT;

  bool acceptable(const cudnnConvolutionFwdAlgoPerf_t& p, bool strict, std::size_t limit) const {
    return p.status == CUDNN_STATUS_SUCCESS && p.memory <= limit &&
           (!strict || p.mathType == CUDNN_FMA_MATH);
  }

  void find_algo(bool strict, std::size_t limit) {
    // Search workspace: the largest any algorithm asks for, within the limit and free memory.
    std::size_t free_bytes = 0, total_bytes = 0;
    FFTCONV_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    const std::size_t esize = dtype_size(d_.dtype);
    const std::size_t tensors =
        esize * static_cast<std::size_t>(d_.x_elems() + d_.w_elems() + d_.y_elems());
    std::size_t search_ws = 0;
    for (int a = 0; a < kAlgoCount; ++a) {
      std::size_t bytes = 0;
      if (cudnnGetConvolutionForwardWorkspaceSize(handle_, x_desc_, w_desc_, conv_desc_, y_desc_,
                                                  static_cast<cudnnConvolutionFwdAlgo_t>(a),
                                                  &bytes) == CUDNN_STATUS_SUCCESS &&
          bytes <= limit && tensors + bytes < free_bytes / 10 * 9) {
        search_ws = std::max(search_ws, bytes);
      }
    }
    ScratchBuffer x(esize * d_.x_elems()), w(esize * d_.w_elems()), y(esize * d_.y_elems());
    ScratchBuffer ws(search_ws);
    // Random data: timing on zeros can flatter kernels.
    launch_fill_uniform(x.ptr, d_.x_elems(), d_.dtype, 1, nullptr);
    launch_fill_uniform(w.ptr, d_.w_elems(), d_.dtype, 2, nullptr);
    FFTCONV_CUDA_CHECK(cudaDeviceSynchronize());
    int returned = 0;
    cudnnConvolutionFwdAlgoPerf_t perf[kAlgoCount];
    FFTCONV_CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithmEx(
        handle_, x_desc_, x.ptr, w_desc_, w.ptr, conv_desc_, y_desc_, y.ptr, kAlgoCount, &returned,
        perf, ws.ptr, search_ws));
    pick(perf, returned, strict, limit, "find");
  }

  void heuristic_algo(bool strict, std::size_t limit) {
    int returned = 0;
    cudnnConvolutionFwdAlgoPerf_t perf[kAlgoCount];
    FFTCONV_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(
        handle_, x_desc_, w_desc_, conv_desc_, y_desc_, kAlgoCount, &returned, perf));
    // The v7 heuristics report memory only through the workspace query.
    for (int i = 0; i < returned; ++i) {
      std::size_t bytes = 0;
      if (cudnnGetConvolutionForwardWorkspaceSize(handle_, x_desc_, w_desc_, conv_desc_, y_desc_,
                                                  perf[i].algo, &bytes) == CUDNN_STATUS_SUCCESS) {
        perf[i].memory = bytes;
      } else {
        perf[i].status = CUDNN_STATUS_NOT_SUPPORTED;
      }
    }
    pick(perf, returned, strict, limit, "heuristic");
  }

  void pick(const cudnnConvolutionFwdAlgoPerf_t* perf, int count, bool strict, std::size_t limit,
            const char* how) {
    std::string tried;
    int chosen = -1;
    for (int i = 0; i < count; ++i) {
      const bool ok = acceptable(perf[i], strict, limit);
      char buf[96];
      if (perf[i].status == CUDNN_STATUS_SUCCESS) {
        std::snprintf(buf, sizeof(buf), "%s%s/%s %.3f ms", tried.empty() ? "" : ", ",
                      fwd_algo_name(perf[i].algo), math_name(perf[i].mathType), perf[i].time);
        tried += buf;
      }
      if (ok && chosen < 0) chosen = i;
    }
    if (chosen < 0) {
      throw Error(Status::kNotSupported,
                  std::string("cuDNN has no ") + (strict ? "strict fp32 " : "") +
                      "forward algorithm for this problem within the workspace limit (" + how +
                      ": " + (tried.empty() ? "none succeeded" : tried) + ")");
    }
    algo_ = perf[chosen].algo;
    math_ = perf[chosen].mathType;
    workspace_ = perf[chosen].memory;
    search_ = std::string("cudnn ") + how + " [" + tried + "]";
  }

  ConvDesc d_;
  cudnnHandle_t handle_ = nullptr;
  cudnnTensorDescriptor_t x_desc_ = nullptr, y_desc_ = nullptr, b_desc_ = nullptr;
  cudnnFilterDescriptor_t w_desc_ = nullptr;
  cudnnConvolutionDescriptor_t conv_desc_ = nullptr;
  cudnnConvolutionFwdAlgo_t algo_ = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  cudnnMathType_t math_ = CUDNN_FMA_MATH;
  std::size_t workspace_ = 0;
  std::string search_;
  void* kept_w_ = nullptr;
};

}  // namespace

std::unique_ptr<ConvAlgo> make_cudnn_forward(const ConvDesc& d, const Options& o) {
  const Support s = cudnn_can_implement(d);
  if (!s.ok()) throw Error(s.status, s.reason);
  return std::make_unique<CudnnFwdAlgo>(d, o);
}

#endif  // FFTCONV_WITH_CUDNN

}  // namespace fftconv::detail
