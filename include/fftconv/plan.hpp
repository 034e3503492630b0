// Plan: a descriptor bound to an algorithm, with everything prepared to run it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "fftconv/conv_desc.hpp"

namespace fftconv {

/// Which implementation computes the convolution.
enum class Algo : int {
  kAuto = 0,      ///< the heuristics choose (FFT for large kernels, cuDNN where it is cheaper)
  kFft = 1,       ///< full-image FFT: pad, r2c, per-frequency complex GEMM, c2r, clip
  kCudnn = 2,     ///< cuDNN (fallback for small kernels and baseline); needs FFTCONV_WITH_CUDNN
  kFftTiled = 3,  ///< overlap-save: output tiles of T - R' + 1, an FFT of size T per tile
};

/// "auto", "fft", "cudnn", "fft_tiled".
const char* algo_name(Algo a) noexcept;
/// Parses an algo name; throws Error(kInvalidArgument) otherwise.
Algo parse_algo(const std::string& name);

/// Which pass of a convolution a plan computes. Each pass has its own algorithm choice and
/// workspace (as in cuDNN); build one plan per pass.
enum class Pass : int {
  kForward = 0,         ///< y = conv(x, w) + bias
  kBackwardData = 1,    ///< dx = dL/dx given dy and w (torch.nn.grad.conv2d_input)
  kBackwardFilter = 2,  ///< dw = alpha * dL/dw + beta * dw given x and dy (conv2d_weight)
};

/// "fwd", "dgrad", "wgrad".
const char* pass_name(Pass p) noexcept;
/// Parses a pass name; throws Error(kInvalidArgument) otherwise.
Pass parse_pass(const std::string& name);

/// Where a plan runs.
enum class Backend : int {
  kGpu = 0,   ///< the current CUDA device; tensors and workspace are device memory
  kCpu = 1,   ///< the host FFT pipeline (FFTW, fp32, every pass); tensors are host memory
  kAuto = 2,  ///< the GPU when one is present, else the CPU
};

/// "gpu", "cpu", "auto".
const char* backend_name(Backend b) noexcept;
/// Parses a backend name; throws Error(kInvalidArgument) otherwise.
Backend parse_backend(const std::string& name);

/// How the cuDNN path picks its algorithm at plan time.
enum class CudnnSearch : int {
  kFind = 0,  ///< cudnnFindConvolutionForwardAlgorithmEx: time every algorithm, keep the fastest
  kHeuristic =
      1,  ///< cudnnGetConvolutionForwardAlgorithm_v7: first suggestion that fits, no timing
};

/// How the FFT path picks its per-frequency GEMM tiling.
enum class Tuning : int {
  kHeuristic = 0,   ///< the cost model in lib/tuning, no timing
  kAutotune = 1,    ///< time every own tiling at plan time, keep the fastest (cached)
  kExhaustive = 2,  ///< also time the cuBLAS paths (cached)
};

/// "heuristic", "autotune", "exhaustive".
const char* tuning_name(Tuning t) noexcept;
/// Parses a tuning name; throws Error(kInvalidArgument) otherwise.
Tuning parse_tuning(const std::string& name);

/// Planning options.
struct Options {
  static constexpr std::size_t kNoLimit = ~std::size_t{0};

  Algo algo = Algo::kAuto;
  /// The pass the plan computes: forward(), backward_data() or backward_filter().
  Pass pass = Pass::kForward;
  /// Where the plan runs. kCpu: host pointers, no workspace, synchronous calls (see Plan).
  Backend backend = Backend::kGpu;
  /// Backward-filter plans with fp16/bf16 tensors: write dw in fp32 (master gradients) instead
  /// of the descriptor's dtype. Ignored for fp32.
  bool dw_fp32 = false;
  /// Largest workspace the plan may ask for, in bytes. An algorithm that needs more is not used.
  std::size_t workspace_limit = kNoLimit;
  /// cuDNN path only: allow TF32 tensor cores for fp32 data. The FFT path is always full fp32.
  bool allow_tf32 = false;
  CudnnSearch cudnn_search = CudnnSearch::kFind;
  /// cuDNN path only: force one of cudnn_algo_names(pass) instead of searching; a forced
  /// algorithm that cannot run the problem fails at plan time. Forcing bypasses the strict-fp32
  /// filter, so a Winograd algorithm runs even though its error can exceed the fp32 tolerance.
  std::string cudnn_algo;
  /// FFT path only: force a per-frequency GEMM tiling by name (one of gemm_kernel_names());
  /// empty: chosen per `tuning`.
  std::string gemm_kernel;
  Tuning tuning = Tuning::kHeuristic;
  /// FFT paths only: force the FFT size (both > 0): for kFft at least the exact circular period
  /// of the problem, for kFftTiled the tile's FFT size (at least the dilated kernel);
  /// 0 x 0: chosen by the cost model (and the tuning mode).
  std::int64_t fft_h = 0, fft_w = 0;
  /// Persistent tuning cache (JSON) used by kAutotune / kExhaustive: a hit skips the timing, a
  /// miss stores the winner. Empty: the file named by $FFTCONV_TUNING_CACHE, or no cache.
  std::string tuning_cache;
};

/// Time of one stage of a forward pass (Plan::profile_forward).
struct StageTime {
  std::string stage;  ///< e.g. "pad", "r2c", "gemm", "c2r", "clip", "cudnn"
  double ms = 0.0;    ///< median over the profiled runs
};

/// Names of the per-frequency GEMM paths the FFT path can use: own tilings first, then the
/// cuBLAS comparison paths.
std::vector<std::string> gemm_kernel_names();

/// cuDNN's algorithms for a pass, by name ("IMPLICIT_PRECOMP_GEMM", "FFT_TILING", "ALGO_1", ...);
/// empty when the library was built without cuDNN.
std::vector<std::string> cudnn_algo_names(Pass pass);

/// What a plan chose; for reports, logs and benchmarks.
struct PlanInfo {
  Pass pass = Pass::kForward;       ///< the pass the plan computes
  Backend backend = Backend::kGpu;  ///< where it runs (never kAuto)
  Algo algo = Algo::kAuto;          ///< the algorithm that runs (never kAuto)
  std::int64_t fft_h = 0;           ///< FFT size (FFT paths; per tile when tiled), else 0
  std::int64_t fft_w = 0;
  std::int64_t tiles_h = 1;  ///< overlap-save tiles per image (1 x 1: full image)
  std::int64_t tiles_w = 1;
  std::string gemm;             ///< per-frequency GEMM kernel (FFT path), e.g. "regtile_8x8"
  double gemm_flops = 0.0;      ///< FLOPs of the per-frequency GEMM (FFT path)
  double gemm_min_bytes = 0.0;  ///< bytes the GEMM must move at least (FFT path)
  std::string cudnn_algo;       ///< cuDNN algorithm (cuDNN path), e.g. "IMPLICIT_PRECOMP_GEMM"
  std::string cudnn_math;       ///< cuDNN math mode: "fma" (strict fp32) or "tensor_op"
  std::size_t workspace_bytes = 0;
  std::string reason;  ///< why this algorithm and these sizes were chosen
};

/// A convolution pass prepared for execution on the current CUDA device (or on the host, with
/// Backend::kCpu: then every tensor is host memory, workspace_size() is 0 (the plan owns its
/// buffers), the stream is ignored and calls run to completion before they return).
/// On the host, set_filter() keeps the spectrum in host memory and profile_forward() times the
/// stages with the host clock.
///
/// Building a plan may allocate (cuFFT plans, cuDNN's search buffers) and synchronise; running it
/// never does: forward() only enqueues work on the caller's stream and uses the caller's workspace,
/// so it can be captured in a CUDA graph. A plan's configuration is fixed once built; only the
/// kept filter (set_filter / clear_filter) changes. Several threads may call forward() on one plan
/// at once: host-side enqueueing is serialised inside, and each call must have its own workspace
/// while calls overlap on the device.
class Plan {
 public:
  /// Validates the descriptor and builds the plan; throws Error with the reason on failure.
  explicit Plan(const ConvDesc& desc, const Options& options = Options{});
  ~Plan();
  Plan(Plan&&) noexcept;
  Plan& operator=(Plan&&) noexcept;
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;

  const ConvDesc& desc() const;
  const Options& options() const;
  const PlanInfo& info() const;
  /// Device bytes forward() needs as workspace (256-byte aligned); may be 0.
  std::size_t workspace_size() const;
  /// One line: descriptor, algorithm, sizes, workspace and the reason for the choice.
  std::string describe() const;

  /// y = conv(x, w) + bias. x, w (null: the filter kept by set_filter), bias (null: no bias) and
  /// y are device pointers of the
  /// descriptor's dtype; workspace is a device buffer of workspace_bytes >= workspace_size(),
  /// aligned to 256 bytes (may be null when workspace_size() is 0). Arguments are checked before
  /// anything is enqueued: on error nothing is written.
  void forward(const void* x, const void* w, const void* bias, void* y, void* workspace,
               std::size_t workspace_bytes, cudaStream_t stream) const;

  /// Backward data (plans built with Options::pass = Pass::kBackwardData): dx = dL/dx for the
  /// output gradient dy (n x k x Ho x Wo) and filter w (null: the kept filter), dx is n x c x h x
  /// w, all of the descriptor's dtype. Same rules as forward(): checked first, enqueue only.
  void backward_data(const void* dy, const void* w, void* dx, void* workspace,
                     std::size_t workspace_bytes, cudaStream_t stream) const;

  /// Backward filter (plans built with Options::pass = Pass::kBackwardFilter):
  /// dw = alpha * dL/dw + beta * dw for input x and output gradient dy. dw is k x c/groups x r x s
  /// of the descriptor's dtype, or fp32 when Options::dw_fp32 is set for fp16/bf16 data. With
  /// beta == 0, dw is not read (it may hold anything, NaN included). Same rules as forward().
  void backward_filter(const void* x, const void* dy, void* dw, void* workspace,
                       std::size_t workspace_bytes, cudaStream_t stream, float alpha = 1.0f,
                       float beta = 0.0f) const;

  /// Keeps the filter in device memory owned by the plan: for the FFT paths its spectrum at the
  /// plan's FFT size (the filter's pad and transform then leave forward()), for cuDNN a copy.
  /// Afterwards forward() (and backward_data() on a backward-data plan) accepts w == nullptr and
  /// uses the kept filter; a non-null w is still used as given, for that call only. Enqueued on
  /// `stream` (which must finish before `w` is freed or changed); allocates filter_bytes() of
  /// device memory on the first call, so it is a set-up step, not part of the hot path. Calling it
  /// again replaces the kept filter in place; forward() calls on other streams must be ordered
  /// after it by the caller. The memory is released by clear_filter() or when the plan is
  /// destroyed.
  void set_filter(const void* w, cudaStream_t stream);
  /// Releases the kept filter; waits for the device first.
  void clear_filter();
  bool has_filter() const;
  /// Device bytes the kept filter holds (0 when none).
  std::size_t filter_bytes() const;

  /// Runs forward() `iters` times after one warm-up, timing every stage with CUDA events, and
  /// returns the median per stage. Synchronises the stream: for diagnosis and benchmarks, not the
  /// hot path.
  std::vector<StageTime> profile_forward(const void* x, const void* w, const void* bias, void* y,
                                         void* workspace, std::size_t workspace_bytes,
                                         cudaStream_t stream, int iters = 10) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Number of CUDA devices that can run fftconv (0 when none or no driver).
int device_count() noexcept;

}  // namespace fftconv
