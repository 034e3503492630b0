#include "algos/cudnn_conv.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstring>
#include <vector>

#include "core/check.h"

#if FFTCONV_WITH_CUDNN
#include <cudnn.h>

#include "stages/fill.h"
#include "tuning/heuristics.h"
#endif

namespace fftconv::detail {

Support cudnn_can_implement(const ConvDesc& d, const Options& o) {
  if (!cudnn_available()) {
    return Support::no(Status::kNotSupported,
                       "this build of fftconv has no cuDNN path (configure with "
                       "-DFFTCONV_WITH_CUDNN=ON where cuDNN is installed)");
  }
  const std::int64_t dims[] = {d.n,        d.c,     d.h,     d.w,     d.k,
                               d.r,        d.s,     d.pad_h, d.pad_w, d.stride_h,
                               d.stride_w, d.dil_h, d.dil_w, d.groups};
  for (std::int64_t v : dims) {
    if (v > INT_MAX) return Support::no(Status::kNotSupported, "cuDNN takes 32-bit sizes");
  }
  // cuDNN's legacy API addresses tensors with 32-bit element offsets.
  const std::int64_t limit = INT_MAX;
  if (d.x_elems() > limit || d.w_elems() > limit || d.y_elems() > limit) {
    return Support::no(Status::kNotSupported,
                       "a tensor has more than 2^31-1 elements, over cuDNN's limit");
  }
  if (o.pass == Pass::kBackwardFilter && o.dw_fp32 && d.dtype != DType::kF32) {
    return Support::no(Status::kNotSupported,
                       "cuDNN writes dw in the data's dtype; Options::dw_fp32 needs the FFT path");
  }
  return Support::yes();
}

bool cudnn_algo_known_slow(const ConvDesc& d, Pass pass, int algo) {
  return pass == Pass::kBackwardData && algo == kCudnnBwdDataAlgo1 &&
         d.h * d.w >= (std::int64_t(1) << 20) && d.r * d.s >= 1024;
}

bool cudnn_algo_inaccurate_fp32(const ConvDesc& d, Pass pass, int algo) {
  return pass == Pass::kBackwardFilter && algo == kCudnnBwdFilterAlgo1 &&
         d.n * d.out_h() * d.out_w() >= 16384;
}

#if !FFTCONV_WITH_CUDNN

bool cudnn_available() { return false; }

std::unique_ptr<ConvAlgo> make_cudnn(const ConvDesc& d, const Options& o) {
  const Support s = cudnn_can_implement(d, o);
  throw Error(s.status, s.reason);
}

std::vector<std::string> cudnn_algos(Pass) { return {}; }

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

#define FFTCONV_CUDNN_CHECK(expr)                                                                 \
  do {                                                                                            \
    const cudnnStatus_t fftconv_st_ = (expr);                                                     \
    if (fftconv_st_ != CUDNN_STATUS_SUCCESS) throw_cudnn(fftconv_st_, #expr, __FILE__, __LINE__); \
  } while (0)

// cuDNN's algorithm enums per pass, by value (the names without the CUDNN_CONVOLUTION_*_ALGO_
// prefix). BWD_FILTER_ALGO_WINOGRAD is documented as not implemented and left out.
const std::vector<const char*>& algo_names(Pass pass) {
  static const std::vector<const char*> fwd = {
      "IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT", "FFT", "FFT_TILING",
      "WINOGRAD",      "WINOGRAD_NONFUSED"};
  static const std::vector<const char*> dgrad = {"ALGO_0",     "ALGO_1",   "FFT",
                                                 "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
  static const std::vector<const char*> wgrad = {
      "ALGO_0", "ALGO_1", "FFT", "ALGO_3", "", "WINOGRAD_NONFUSED", "FFT_TILING"};
  static_assert(CUDNN_CONVOLUTION_FWD_ALGO_COUNT == 8 &&
                    CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT == 6 &&
                    CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT == 7,
                "cuDNN's algorithm lists changed");
  return pass == Pass::kForward ? fwd : pass == Pass::kBackwardData ? dgrad : wgrad;
}

const char* algo_name(Pass pass, int algo) {
  const auto& names = algo_names(pass);
  return algo >= 0 && algo < static_cast<int>(names.size()) ? names[algo] : "UNKNOWN";
}

const char* math_name(cudnnMathType_t m) {
  switch (m) {
    case CUDNN_DEFAULT_MATH:
      return "default";
    case CUDNN_TENSOR_OP_MATH:
      return "tensor_op";
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION:
      return "tensor_op_conv";
    case CUDNN_FMA_MATH:
      return "fma";
    default:
      return "unknown";
  }
}

cudnnDataType_t cudnn_dtype(DType t) {
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

// cudnnFind*AlgorithmEx runs every algorithm several times: on wide_c64_512_r45 (45x45 filters,
// 64 channels, 512x512) the backward searches took minutes on the H200. Above this direct-cost
// estimate the v7 heuristics' candidates are instead timed once each, best first, until the
// budget is spent (ENGINEERING §9).
constexpr double kExhaustiveFindMaxUs = 20000.0;
constexpr float kBoundedSearchBudgetMs = 3000.0f;
// A candidate whose untimed run took this many times the best time so far is not run again: on
// multichannel_r45 strict fp32 backward data the heuristics list ALGO_0 (133 ms) and ALGO_1 before
// FFT (2.70 ms), and timing them twice spent the whole budget before FFT (H200).
constexpr float kSlowCandidateFactor = 2.0f;

// Winograd transforms lose accuracy: WINOGRAD_NONFUSED backward filter gave rel-L2 1.24e-5 on
// seed1_grouped3x3_f32 (H200), over the fp32 tolerance; strict fp32 leaves them out.
bool winograd(Pass pass, int algo) { return std::strstr(algo_name(pass, algo), "WINOGRAD"); }

static_assert(kCudnnBwdDataAlgo1 == CUDNN_CONVOLUTION_BWD_DATA_ALGO_1 &&
                  kCudnnBwdFilterAlgo1 == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1,
              "cuDNN's algorithm numbering changed");

// One algorithm's result from cuDNN's search, whatever the pass.
struct Perf {
  int algo = 0;
  cudnnStatus_t status = CUDNN_STATUS_NOT_SUPPORTED;
  float time = 0.0f;
  std::size_t memory = 0;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
};

template <typename P>
Perf to_perf(const P& p) {
  return Perf{static_cast<int>(p.algo), p.status, p.time, p.memory, p.mathType};
}

// One of cuDNN's per-pass searches, search(capacity, &returned, results), as a Perf list.
template <typename P, int kCapacity, typename Search>
std::vector<Perf> collect(Search&& search) {
  P results[kCapacity];
  int returned = 0;
  search(kCapacity, &returned, results);
  std::vector<Perf> out;
  for (int i = 0; i < returned; ++i) out.push_back(to_perf(results[i]));
  return out;
}

class CudnnAlgo final : public ConvAlgo {
 public:
  CudnnAlgo(const ConvDesc& d, const Options& o) : d_(d), pass_(o.pass) {
    try {
      build(o);
    } catch (...) {
      release();
      throw;
    }
  }

  ~CudnnAlgo() override { release(); }

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
    FFTCONV_CUDNN_CHECK(
        cudnnSetTensor4dDescriptor(x_desc_, CUDNN_TENSOR_NCHW, dt, i(d.n), i(d.c), i(d.h), i(d.w)));
    FFTCONV_CUDNN_CHECK(cudnnSetFilter4dDescriptor(w_desc_, dt, CUDNN_TENSOR_NCHW, i(d.k),
                                                   i(d.c_per_group()), i(d.r), i(d.s)));
    FFTCONV_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(
        conv_desc_, i(d.pad_h), i(d.pad_w), i(d.stride_h), i(d.stride_w), i(d.dil_h), i(d.dil_w),
        CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    FFTCONV_CUDNN_CHECK(cudnnSetConvolutionGroupCount(conv_desc_, i(d.groups)));
    // Strict fp32 is FMA only; TF32 (and fp16/bf16 tensor cores) need tensor-op math.
    const bool strict = d.dtype == DType::kF32 && !o.allow_tf32;
    fp32_contract_ = strict && o.algo == Algo::kAuto;
    const cudnnMathType_t math = strict ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH;
    FFTCONV_CUDNN_CHECK(cudnnSetConvolutionMathType(conv_desc_, math));
    int on, oc, oh, ow;
    FFTCONV_CUDNN_CHECK(
        cudnnGetConvolution2dForwardOutputDim(conv_desc_, x_desc_, w_desc_, &on, &oc, &oh, &ow));
    FFTCONV_ASSERT(on == d.n && oc == d.k && oh == d.out_h() && ow == d.out_w(),
                   "cuDNN output size disagrees with ConvDesc");
    FFTCONV_CUDNN_CHECK(cudnnSetTensor4dDescriptor(y_desc_, CUDNN_TENSOR_NCHW, dt, on, oc, oh, ow));
    FFTCONV_CUDNN_CHECK(cudnnSetTensor4dDescriptor(b_desc_, CUDNN_TENSOR_NCHW, dt, 1, oc, 1, 1));

    if (!o.cudnn_algo.empty()) {
      forced_algo(o.cudnn_algo, math, o.workspace_limit);
    } else if (o.cudnn_search == CudnnSearch::kFind) {
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

  void run(const RunArgs& a, cudaStream_t stream, StageMarks* marks) override {
    const float one = 1.0f;
    RunArgs args = a;
    if (!args.w) args.w = kept_w_;
    FFTCONV_CUDNN_CHECK(cudnnSetStream(handle_, stream));
    enqueue(algo_, args, workspace_);
    if (marks) marks->mark("cudnn", stream);
    if (pass_ == Pass::kForward && a.bias) {
      FFTCONV_CUDNN_CHECK(cudnnAddTensor(handle_, &one, b_desc_, a.bias, &one, y_desc_, a.out));
      if (marks) marks->mark("bias", stream);
    }
  }

  // cuDNN has no transform to skip: the kept filter is a copy the plan owns.
  void set_filter(const void* w, cudaStream_t stream) override {
    if (pass_ == Pass::kBackwardFilter) {
      throw Error(
          Status::kInvalidArgument,
          "set_filter: a backward-filter plan has no filter input [" + d_.to_string() + "]");
    }
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
    info.cudnn_algo = algo_name(pass_, algo_);
    info.cudnn_math = math_name(math_);
    info.workspace_bytes = workspace_size();
    info.reason = search_;
  }

 private:
  int algo_count() const { return static_cast<int>(algo_names(pass_).size()); }

  // The pass with one algorithm, on the handle's stream.
  void enqueue(int algo, const RunArgs& a, std::size_t workspace_bytes) {
    const float zero = 0.0f, one = 1.0f;
    switch (pass_) {
      case Pass::kForward:
        FFTCONV_CUDNN_CHECK(
            cudnnConvolutionForward(handle_, &one, x_desc_, a.x, w_desc_, a.w, conv_desc_,
                                    static_cast<cudnnConvolutionFwdAlgo_t>(algo), a.workspace,
                                    workspace_bytes, &zero, y_desc_, a.out));
        break;
      case Pass::kBackwardData:
        FFTCONV_CUDNN_CHECK(
            cudnnConvolutionBackwardData(handle_, &one, w_desc_, a.w, y_desc_, a.dy, conv_desc_,
                                         static_cast<cudnnConvolutionBwdDataAlgo_t>(algo),
                                         a.workspace, workspace_bytes, &zero, x_desc_, a.out));
        break;
      case Pass::kBackwardFilter:
        FFTCONV_CUDNN_CHECK(cudnnConvolutionBackwardFilter(
            handle_, &a.alpha, x_desc_, a.x, y_desc_, a.dy, conv_desc_,
            static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo), a.workspace, workspace_bytes,
            &a.beta, w_desc_, a.out));
        break;
    }
  }

  // Workspace of one algorithm, or false when cuDNN does not support it here.
  bool algo_workspace(int algo, std::size_t* bytes) const {
    cudnnStatus_t st = CUDNN_STATUS_NOT_SUPPORTED;
    switch (pass_) {
      case Pass::kForward:
        st = cudnnGetConvolutionForwardWorkspaceSize(handle_, x_desc_, w_desc_, conv_desc_, y_desc_,
                                                     static_cast<cudnnConvolutionFwdAlgo_t>(algo),
                                                     bytes);
        break;
      case Pass::kBackwardData:
        st = cudnnGetConvolutionBackwardDataWorkspaceSize(
            handle_, w_desc_, y_desc_, conv_desc_, x_desc_,
            static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), bytes);
        break;
      case Pass::kBackwardFilter:
        st = cudnnGetConvolutionBackwardFilterWorkspaceSize(
            handle_, x_desc_, y_desc_, conv_desc_, w_desc_,
            static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo), bytes);
        break;
    }
    return st == CUDNN_STATUS_SUCCESS;
  }

  bool acceptable(const Perf& p, bool strict, std::size_t limit) const {
    return p.status == CUDNN_STATUS_SUCCESS && p.memory <= limit &&
           !cudnn_algo_known_slow(d_, pass_, p.algo) &&
           (!strict || (p.math == CUDNN_FMA_MATH && !winograd(pass_, p.algo) &&
                        !(fp32_contract_ && cudnn_algo_inaccurate_fp32(d_, pass_, p.algo))));
  }

  void forced_algo(const std::string& name, cudnnMathType_t math, std::size_t limit) {
    int algo = -1;
    for (int a = 0; a < algo_count(); ++a) {
      if (name == algo_name(pass_, a) && *algo_name(pass_, a)) algo = a;
    }
    if (algo < 0) {
      std::string known;
      for (const std::string& n : cudnn_algos(pass_)) known += (known.empty() ? "" : ", ") + n;
      throw Error(Status::kInvalidArgument, "unknown cuDNN " + std::string(pass_name(pass_)) +
                                                " algorithm '" + name + "' (expected one of " +
                                                known + ")");
    }
    std::size_t bytes = 0;
    if (!algo_workspace(algo, &bytes)) {
      throw Error(Status::kNotSupported, "cuDNN " + std::string(pass_name(pass_)) + " algorithm " +
                                             name + " does not support " + d_.to_string());
    }
    if (bytes > limit) {
      throw Error(Status::kOutOfMemory,
                  "cuDNN algorithm " + name + " needs " + std::to_string(bytes) +
                      " bytes of workspace, over the limit of " + std::to_string(limit));
    }
    algo_ = algo;
    math_ = math;
    workspace_ = bytes;
    search_ = "cudnn algorithm forced by options";
  }

  // Random tensors of the descriptor and a search workspace, for timing algorithms at plan time.
  struct SearchBuffers {
    ScratchBuffer x, w, y, ws;
    std::size_t ws_bytes;
  };

  // Whether a workspace of `bytes` fits the limit and, with the tensors, 90% of free memory.
  bool search_fits(std::size_t bytes, std::size_t limit) const {
    std::size_t free_bytes = 0, total_bytes = 0;
    FFTCONV_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    const std::size_t tensors = dtype_size(d_.dtype) *
                                static_cast<std::size_t>(d_.x_elems() + d_.w_elems() + d_.y_elems());
    return bytes <= limit && tensors + bytes < free_bytes / 10 * 9;
  }

  std::unique_ptr<SearchBuffers> search_buffers(std::size_t ws_bytes) const {
    const std::size_t es = dtype_size(d_.dtype);
    auto b = std::unique_ptr<SearchBuffers>(new SearchBuffers{
        ScratchBuffer(es * d_.x_elems()), ScratchBuffer(es * d_.w_elems()),
        ScratchBuffer(es * d_.y_elems()), ScratchBuffer(ws_bytes), ws_bytes});
    // Random data: timing on zeros can flatter kernels.
    launch_fill_uniform(b->x.ptr, d_.x_elems(), d_.dtype, 1, nullptr);
    launch_fill_uniform(b->w.ptr, d_.w_elems(), d_.dtype, 2, nullptr);
    launch_fill_uniform(b->y.ptr, d_.y_elems(), d_.dtype, 3, nullptr);
    FFTCONV_CUDA_CHECK(cudaDeviceSynchronize());
    return b;
  }

  void find_algo(bool strict, std::size_t limit) {
    bool slow = false;
    for (int a = 0; a < algo_count(); ++a) slow |= cudnn_algo_known_slow(d_, pass_, a);
    // cudnnFind*AlgorithmEx runs every algorithm: where one is known to take minutes, the own
    // search (which leaves it out) runs instead.
    if (slow || estimate_direct_us(d_, pass_) > kExhaustiveFindMaxUs) {
      bounded_find(strict, limit);
      return;
    }
    // Search workspace: the largest any algorithm asks for, within the limit and free memory.
    std::size_t search_ws = 0;
    for (int a = 0; a < algo_count(); ++a) {
      std::size_t bytes = 0;
      if (*algo_name(pass_, a) && algo_workspace(a, &bytes) && search_fits(bytes, limit)) {
        search_ws = std::max(search_ws, bytes);
      }
    }
    const auto b = search_buffers(search_ws);
    void* ws = b->ws.ptr;
    std::vector<Perf> perf;
    switch (pass_) {
      case Pass::kForward:
        perf = collect<cudnnConvolutionFwdAlgoPerf_t, CUDNN_CONVOLUTION_FWD_ALGO_COUNT>(
            [&](int n, int* returned, cudnnConvolutionFwdAlgoPerf_t* p) {
              FFTCONV_CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithmEx(
                  handle_, x_desc_, b->x.ptr, w_desc_, b->w.ptr, conv_desc_, y_desc_, b->y.ptr, n,
                  returned, p, ws, search_ws));
            });
        break;
      case Pass::kBackwardData:
        perf = collect<cudnnConvolutionBwdDataAlgoPerf_t, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT>(
            [&](int n, int* returned, cudnnConvolutionBwdDataAlgoPerf_t* p) {
              FFTCONV_CUDNN_CHECK(cudnnFindConvolutionBackwardDataAlgorithmEx(
                  handle_, w_desc_, b->w.ptr, y_desc_, b->y.ptr, conv_desc_, x_desc_, b->x.ptr, n,
                  returned, p, ws, search_ws));
            });
        break;
      case Pass::kBackwardFilter:
        perf =
            collect<cudnnConvolutionBwdFilterAlgoPerf_t, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT>(
                [&](int n, int* returned, cudnnConvolutionBwdFilterAlgoPerf_t* p) {
                  FFTCONV_CUDNN_CHECK(cudnnFindConvolutionBackwardFilterAlgorithmEx(
                      handle_, x_desc_, b->x.ptr, y_desc_, b->y.ptr, conv_desc_, w_desc_, b->w.ptr,
                      n, returned, p, ws, search_ws));
                });
        break;
    }
    pick(perf, strict, limit, "find");
  }

  // Times the heuristics' acceptable candidates once each, best first, within the budget.
  void bounded_find(bool strict, std::size_t limit) {
    std::vector<Perf> perf = heuristic_perf(strict);
    std::size_t search_ws = 0;
    for (const Perf& p : perf) {
      if (acceptable(p, strict, limit) && search_fits(p.memory, limit)) {
        search_ws = std::max(search_ws, p.memory);
      }
    }
    const auto b = search_buffers(search_ws);
    // The pass's operands: x (forward, backward filter), w (forward, backward data), dy = y
    // (backward); its output is the remaining tensor.
    RunArgs a;
    a.x = b->x.ptr;
    a.w = b->w.ptr;
    a.dy = b->y.ptr;
    a.out = pass_ == Pass::kForward         ? b->y.ptr
            : pass_ == Pass::kBackwardData ? b->x.ptr
                                           : b->w.ptr;
    a.workspace = b->ws.ptr;
    struct Events {
      cudaEvent_t e[3] = {nullptr, nullptr, nullptr};
      Events() {
        for (cudaEvent_t& ev : e) FFTCONV_CUDA_CHECK(cudaEventCreate(&ev));
      }
      ~Events() {
        for (cudaEvent_t ev : e) {
          if (ev) cudaEventDestroy(ev);
        }
      }
    } ev;
    FFTCONV_CUDNN_CHECK(cudnnSetStream(handle_, nullptr));
    float spent = 0.0f, best = 0.0f;
    std::vector<Perf> timed;
    std::string skipped;
    for (Perf& p : perf) {
      if (spent > kBoundedSearchBudgetMs) break;
      if (!acceptable(p, strict, limit) || p.memory > search_ws) continue;
      // One untimed run first (it pays for loading the kernels), then one timed run.
      float first = 0.0f;
      try {
        FFTCONV_CUDNN_CHECK(cudnnSetConvolutionMathType(conv_desc_, p.math));
        FFTCONV_CUDA_CHECK(cudaEventRecord(ev.e[0], nullptr));
        enqueue(p.algo, a, p.memory);
        FFTCONV_CUDA_CHECK(cudaEventRecord(ev.e[1], nullptr));
        FFTCONV_CUDA_CHECK(cudaEventSynchronize(ev.e[1]));
        FFTCONV_CUDA_CHECK(cudaEventElapsedTime(&first, ev.e[0], ev.e[1]));
        if (!timed.empty() && first > kSlowCandidateFactor * best) {
          // Slower than the best even with its kernels loaded: its untimed run stands.
          p.time = first;
          spent += first;
          timed.push_back(p);
          continue;
        }
        enqueue(p.algo, a, p.memory);
        FFTCONV_CUDA_CHECK(cudaEventRecord(ev.e[2], nullptr));
        FFTCONV_CUDA_CHECK(cudaEventSynchronize(ev.e[2]));
      } catch (const Error& e) {
        if (e.status() != Status::kCudnnError && e.status() != Status::kNotSupported) throw;
        skipped += std::string(skipped.empty() ? "" : ", ") + algo_name(pass_, p.algo) +
                   " failed: " + e.what();
        continue;
      }
      float total = 0.0f;
      FFTCONV_CUDA_CHECK(cudaEventElapsedTime(&total, ev.e[0], ev.e[2]));
      FFTCONV_CUDA_CHECK(cudaEventElapsedTime(&p.time, ev.e[1], ev.e[2]));
      spent += total;
      best = timed.empty() ? p.time : std::min(best, p.time);
      timed.push_back(p);
    }
    std::stable_sort(timed.begin(), timed.end(),
                     [](const Perf& l, const Perf& r) { return l.time < r.time; });
    char how[128];
    std::snprintf(how, sizeof(how),
                  "bounded search, one timed run each after a warm-up (direct estimate %.0f ms)",
                  estimate_direct_us(d_, pass_) / 1000.0);
    pick(timed, strict, limit, skipped.empty() ? std::string(how) : how + ("; " + skipped));
  }

  // The v7 heuristics' suggestions, with the workspace each needs (strict: FMA math).
  std::vector<Perf> heuristic_perf(bool strict) {
    std::vector<Perf> perf;
    switch (pass_) {
      case Pass::kForward:
        perf = collect<cudnnConvolutionFwdAlgoPerf_t, CUDNN_CONVOLUTION_FWD_ALGO_COUNT>(
            [&](int n, int* returned, cudnnConvolutionFwdAlgoPerf_t* p) {
              FFTCONV_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(
                  handle_, x_desc_, w_desc_, conv_desc_, y_desc_, n, returned, p));
            });
        break;
      case Pass::kBackwardData:
        perf = collect<cudnnConvolutionBwdDataAlgoPerf_t, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT>(
            [&](int n, int* returned, cudnnConvolutionBwdDataAlgoPerf_t* p) {
              FFTCONV_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(
                  handle_, w_desc_, y_desc_, conv_desc_, x_desc_, n, returned, p));
            });
        break;
      case Pass::kBackwardFilter:
        perf =
            collect<cudnnConvolutionBwdFilterAlgoPerf_t, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT>(
                [&](int n, int* returned, cudnnConvolutionBwdFilterAlgoPerf_t* p) {
                  FFTCONV_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
                      handle_, x_desc_, y_desc_, conv_desc_, w_desc_, n, returned, p));
                });
        break;
    }
    // One entry per algorithm, the heuristics' order first, then any algorithm they left out.
    // Whether an algorithm runs, and its memory, come from the workspace query (the v7
    // heuristics report memory only there). In strict fp32 every algorithm is tried with FMA math
    // as cudnnFind*AlgorithmEx does: the heuristics list some with default math only (backward
    // data FFT on multichannel_r45, which runs in 2.70 ms with FMA math, H200) and the bounded
    // search would otherwise time only the slow rest (ALGO_0, 133 ms).
    std::vector<Perf> out;
    std::vector<bool> seen(static_cast<std::size_t>(algo_count()), false);
    auto add = [&](Perf p) {
      if (p.algo < 0 || p.algo >= algo_count() || seen[p.algo] || !*algo_name(pass_, p.algo))
        return;
      seen[p.algo] = true;
      p.status =
          algo_workspace(p.algo, &p.memory) ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_NOT_SUPPORTED;
      if (strict) p.math = CUDNN_FMA_MATH;
      out.push_back(p);
    };
    for (const Perf& p : perf) {
      if (p.status == CUDNN_STATUS_SUCCESS) add(p);
    }
    for (int a = 0; a < algo_count(); ++a) {
      Perf p;
      p.algo = a;
      p.math = CUDNN_TENSOR_OP_MATH;
      add(p);
    }
    return out;
  }

  void heuristic_algo(bool strict, std::size_t limit) {
    pick(heuristic_perf(strict), strict, limit, "heuristic");
  }

  void pick(const std::vector<Perf>& perf, bool strict, std::size_t limit, const std::string& how) {
    std::string tried;
    int chosen = -1;
    for (std::size_t i = 0; i < perf.size(); ++i) {
      const bool ok = acceptable(perf[i], strict, limit);
      char buf[96];
      if (perf[i].status == CUDNN_STATUS_SUCCESS) {
        std::snprintf(buf, sizeof(buf), "%s%s/%s %.3f ms", tried.empty() ? "" : ", ",
                      algo_name(pass_, perf[i].algo), math_name(perf[i].math), perf[i].time);
        tried += buf;
      }
      if (ok && chosen < 0) chosen = static_cast<int>(i);
    }
    if (chosen < 0) {
      throw Error(Status::kNotSupported,
                  std::string("cuDNN has no ") + (strict ? "strict fp32 " : "") + pass_name(pass_) +
                      " algorithm for this problem within the workspace limit (" + how + ": " +
                      (tried.empty() ? "none succeeded" : tried) + ")");
    }
    algo_ = perf[chosen].algo;
    math_ = perf[chosen].math;
    workspace_ = perf[chosen].memory;
    search_ = "cudnn " + how + " [" + tried + "]";
  }

  ConvDesc d_;
  Pass pass_;
  cudnnHandle_t handle_ = nullptr;
  cudnnTensorDescriptor_t x_desc_ = nullptr, y_desc_ = nullptr, b_desc_ = nullptr;
  cudnnFilterDescriptor_t w_desc_ = nullptr;
  cudnnConvolutionDescriptor_t conv_desc_ = nullptr;
  int algo_ = 0;
  cudnnMathType_t math_ = CUDNN_FMA_MATH;
  std::size_t workspace_ = 0;
  std::string search_;
  bool fp32_contract_ = false;  // chosen by Auto in strict fp32: held to the fp32 tolerance
  void* kept_w_ = nullptr;
};

}  // namespace

std::unique_ptr<ConvAlgo> make_cudnn(const ConvDesc& d, const Options& o) {
  const Support s = cudnn_can_implement(d, o);
  if (!s.ok()) throw Error(s.status, s.reason);
  return std::make_unique<CudnnAlgo>(d, o);
}

std::vector<std::string> cudnn_algos(Pass pass) {
  std::vector<std::string> out;
  for (const char* n : algo_names(pass)) {
    if (*n) out.emplace_back(n);
  }
  return out;
}

#endif  // FFTCONV_WITH_CUDNN

}  // namespace fftconv::detail
