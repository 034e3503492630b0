// Public option and result types of a plan: algorithms, passes, backends, tuning modes, Options,
// PlanInfo. Names of every enum round-trip through *_name / parse_* (one table each, lib/core).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>
#include "fftconv/export.h"

#include "fftconv/conv_desc.hpp"

namespace fftconv {

/// Which implementation computes the convolution.
enum class Algo : int {
  kAuto = 0,       ///< the heuristics choose (FFT for large kernels, cuDNN where it is cheaper)
  kFft = 1,        ///< full-image FFT: pad, r2c, per-frequency complex GEMM, c2r, clip
  kCudnn = 2,      ///< cuDNN (fallback for small kernels and baseline); needs FFTCONV_WITH_CUDNN
  kFftTiled = 3,   ///< overlap-save: output tiles of T - R' + 1, an FFT of size T per tile
  kFftFused = 4,   ///< one kernel per call: the FFTs in shared memory (one channel per group,
                   ///< FFT planes up to 128x128; forward and backward data)
  kSeparable = 5,  ///< a kept filter of low rank as 1-D row and column passes (forward and
                   ///< backward data; set_filter only: see Options::kept_separable)
  kDirect = 6,     ///< each output summed over its taps in one kernel, for problems too small for
                   ///< the FFT's launches to pay (every pass; backward data with unit stride)
  kImplicitGemm = 7,  ///< the backward filter of fp32 data as an implicit GEMM per group on the
                      ///< tensor cores in the 3xTF32 split (fp32 accuracy); a build with CUTLASS
};

/// "auto", "fft", "cudnn", "fft_tiled", "fft_fused", "separable", "direct", "implicit_gemm".
FFTCONV_API const char* algo_name(Algo a) noexcept;
/// Parses an algo name; throws Error(kInvalidArgument) otherwise.
FFTCONV_API Algo parse_algo(const std::string& name);

/// Which pass of a convolution a plan computes. Each pass has its own algorithm choice and
/// workspace (as in cuDNN); build one plan per pass.
enum class Pass : int {
  kForward = 0,         ///< y = conv(x, w) + bias
  kBackwardData = 1,    ///< dx = dL/dx given dy and w (torch.nn.grad.conv2d_input)
  kBackwardFilter = 2,  ///< dw = alpha * dL/dw + beta * dw given x and dy (conv2d_weight)
};

/// "fwd", "dgrad", "wgrad".
FFTCONV_API const char* pass_name(Pass p) noexcept;
/// Parses a pass name; throws Error(kInvalidArgument) otherwise.
FFTCONV_API Pass parse_pass(const std::string& name);

/// Where a plan runs.
enum class Backend : int {
  kGpu = 0,   ///< the current CUDA device; tensors and workspace are device memory
  kCpu = 1,   ///< the host FFT pipeline (FFTW, fp32, every pass); tensors are host memory
  kAuto = 2,  ///< the GPU when one is present, else the CPU
};

/// "gpu", "cpu", "auto".
FFTCONV_API const char* backend_name(Backend b) noexcept;
/// Parses a backend name; throws Error(kInvalidArgument) otherwise.
FFTCONV_API Backend parse_backend(const std::string& name);

/// How the cuDNN path picks its algorithm at plan time.
enum class CudnnSearch : int {
  kFind = 0,  ///< cudnnFindConvolutionForwardAlgorithmEx: time every algorithm, keep the fastest
  kHeuristic =
      1,  ///< cudnnGetConvolutionForwardAlgorithm_v7: first suggestion that fits, no timing
  /// cuDNN's graph API (the engines PyTorch's cuDNN calls use): the engine configurations of its
  /// heuristics (modes A and fallback) that the plan admits, each timed once after a warm-up run,
  /// the fastest kept as a finalized execution plan; a call is one cudnnBackendExecute instead
  /// of the legacy API's per-call set-up. Engines that down-convert their inputs or reduce in
  /// lower precision are left out, so are TF32 engines in strict fp32, and the chosen engine's
  /// error is measured at plan time on random data against an fp64 direct convolution, the next
  /// fastest taken where it misses 1e-5 (where that oracle would be too slow, the legacy algorithm
  /// alone serves); describe() says what was timed, left out and measured. Calls the execution plan
  /// cannot take (tensors not 16-byte aligned, backward filter with alpha != 1 or beta != 0) run
  /// the legacy API's heuristic choice, kept by the same plan.
  kGraph = 2,
  /// Both: kFind's fastest legacy algorithm and kGraph's fastest engine, each timed at plan
  /// time; the faster serves the plan (where the graph engine does, the calls its execution plan
  /// does not take run the legacy heuristic's algorithm, as under kGraph). Neither search alone
  /// wins everywhere on the H200: the graph engines took 0.72x the legacy time in fp16 on the
  /// small-kernel parity set, but up to 2.6x in strict fp32, where the legacy FFT algorithms win
  /// (data/results/h200/2026-12-05-direct). The default; its plans take the two searches' time.
  kAuto = 3,
};

/// "find", "heuristic", "graph", "auto".
FFTCONV_API const char* cudnn_search_name(CudnnSearch s) noexcept;
/// Parses a cuDNN search name; throws Error(kInvalidArgument) otherwise.
FFTCONV_API CudnnSearch parse_cudnn_search(const std::string& name);

/// How a plan picks what the cost model would otherwise decide: under Algo::kAuto on the GPU,
/// the algorithm (the entries whose estimates are within 4x of the best, at most four, timed on
/// the plan's shapes, each call cold: the L2 flushed, its host launch included); in the FFT
/// path, the per-frequency GEMM tiling and the forward pass's FFT size.
enum class Tuning : int {
  kHeuristic = 0,   ///< the cost model in lib/tuning, no timing
  kAutotune = 1,    ///< time the candidates at plan time, keep the fastest (cached)
  kExhaustive = 2,  ///< also time the cuBLAS GEMM paths (cached)
};

/// "heuristic", "autotune", "exhaustive".
FFTCONV_API const char* tuning_name(Tuning t) noexcept;
/// Parses a tuning name; throws Error(kInvalidArgument) otherwise.
FFTCONV_API Tuning parse_tuning(const std::string& name);

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
  CudnnSearch cudnn_search = CudnnSearch::kAuto;
  /// cuDNN path only: force one of cudnn_algo_names(pass) instead of searching; a forced
  /// algorithm that cannot run the problem fails at plan time. Forcing bypasses the strict-fp32
  /// filter, so a Winograd algorithm runs even though its error can exceed the fp32 tolerance.
  std::string cudnn_algo;
  /// FFT path only: force a per-frequency GEMM tiling by name (one of gemm_kernel_names());
  /// empty: chosen per `tuning`.
  std::string gemm_kernel;
  Tuning tuning = Tuning::kHeuristic;
  /// FFT paths only: force the FFT size (both > 0): for kFft at least the exact circular period
  /// of the problem, for kFftTiled the tile's FFT size (at least the dilated kernel), for
  /// kFftFused (named by `algo`, as kFftTiled) one size for both axes, one of its sizes (8, 16,
  /// 24, 32, 40, 48, 64, 72, 80, 96, 128): at or above the plane's period the whole plane,
  /// below it overlap-save tiles (forward, backward data at unit stride); 0 x 0: chosen by the
  /// cost model (and the tuning mode).
  std::int64_t fft_h = 0, fft_w = 0;
  /// GPU plans: check at every call that each pointer is device (or managed) memory of the
  /// plan's device (cudaPointerGetAttributes), so a host buffer is rejected with
  /// Status::kInvalidArgument instead of faulting on the device, which would end the process's
  /// CUDA context. Off saves that query per pointer.
  bool check_pointers = true;
  /// Persistent tuning cache (JSON) used by kAutotune / kExhaustive: a hit skips the timing, a
  /// miss stores the winner. Empty: the file named by $FFTCONV_TUNING_CACHE, or no cache.
  std::string tuning_cache;
  /// GPU forward and backward-data plans with Algo::kAuto: when set_filter keeps a filter whose
  /// every plane is of rank 4 or less (within 2^-22 of its norm; the SVD in fp64 on the host,
  /// which waits for the stream), it runs as 1-D passes (Algo::kSeparable) where their estimate
  /// is below the plan's algorithm's; describe() says which. Where even rank 1 would be slower,
  /// the filter is not read back. false: never. Algo::kSeparable forces the path (kept low-rank
  /// filters only).
  bool kept_separable = true;
  /// GPU plans of the FFT, tiled, fused and separable paths: the second call with the same
  /// pointers (and alpha, beta) captures the pass into a CUDA graph on a private stream, and
  /// every later call with them launches that graph: one launch instead of the pass's five to
  /// ten kernels and cuFFT executions, a few microseconds of host time instead of tens. A call
  /// that captures as one node (a launch costs what the graph's would), or whose capture fails,
  /// runs its stages; so do cuDNN plans (a graph would outlive the capturing thread's handle). Up
  /// to 64 pointer sets per plan keep a graph (Plan::replay_graphs()); other calls, and calls on a
  /// stream that is being captured, enqueue the stages as before. Results are the same either
  /// way. false: never.
  bool graph_replay = true;
  /// GPU plans of the FFT and tiled paths: zero-pad the operands as cuFFT's r2c reads them (a
  /// load callback, linked into cuFFT's kernels at plan time) instead of in a pad kernel that
  /// writes padded planes for the r2c to read back. Saves a launch and the padded planes'
  /// traffic per call; the plan takes longer to make (describe() says which way a plan pads).
  /// Where cuFFT cannot link the callback, or the operands' planes exceed 32-bit indices, the
  /// pad kernel runs. Off by default until measured on every suite row.
  bool fft_callbacks = false;
  /// GPU plans of the FFT and tiled paths: transform each plane in one kernel of our own, the
  /// zero-pad and the r2c in one, the c2r and the clip in another (one block per plane in shared
  /// memory, mixed-radix passes of radix 2 to 16), instead of a pad kernel, cuFFT's r2c and c2r
  /// (two or more passes over memory each for a 2-D plane) and a clip kernel. The spectra are
  /// cuFFT's layout and scale, so kept and shared filter spectra work either way. FFT sizes
  /// with a prime factor above 7, or planes over 100 KiB of shared memory, stay on cuFFT
  /// (describe() says which). Takes precedence over fft_callbacks. Off by default until
  /// measured on every suite row.
  bool own_fft = false;
};

/// Time of one stage of a forward pass (Plan::profile_forward).
struct StageTime {
  std::string stage;  ///< e.g. "pad", "r2c", "gemm", "c2r", "clip", "cudnn"
  double ms = 0.0;    ///< median over the profiled runs
};

/// Names of the per-frequency GEMM paths the FFT path can use: own tilings first, then the
/// cuBLAS comparison paths.
FFTCONV_API std::vector<std::string> gemm_kernel_names();

/// cuDNN's algorithms for a pass, by name ("IMPLICIT_PRECOMP_GEMM", "FFT_TILING", "ALGO_1", ...);
/// empty when the library was built without cuDNN.
FFTCONV_API std::vector<std::string> cudnn_algo_names(Pass pass);

/// One entry of the implementation list as a plan saw it (PlanInfo::candidates).
struct AlgoCandidate {
  std::string name;           ///< the entry's name, e.g. "fft", "fft_tiled", "cudnn", "cpu_fft"
  Algo algo = Algo::kAuto;    ///< its Algo value
  double estimate_us = -1.0;  ///< estimated device time; < 0 when it could not implement the plan
  bool chosen = false;        ///< the plan runs this one
  std::string note;  ///< why it was not used ("not possible: ...", "not tried: ...") or details
};

/// What a plan chose; for reports, logs and benchmarks.
struct PlanInfo {
  Pass pass = Pass::kForward;       ///< the pass the plan computes
  Backend backend = Backend::kGpu;  ///< where it runs (never kAuto)
  Algo algo = Algo::kAuto;          ///< the algorithm that runs (never kAuto)
  std::int64_t fft_h = 0;           ///< FFT size (FFT paths; per tile when tiled), else 0
  std::int64_t fft_w = 0;
  /// Overlap-save tiles per image (kFftTiled) or plane (kFftFused); 1 x 1: whole.
  std::int64_t tiles_h = 1;
  std::int64_t tiles_w = 1;
  std::string gemm;             ///< per-frequency GEMM kernel (FFT path), e.g. "regtile_8x8"
  double gemm_flops = 0.0;      ///< FLOPs of the per-frequency GEMM (FFT path)
  double gemm_min_bytes = 0.0;  ///< bytes the GEMM must move at least (FFT path)
  std::string cudnn_algo;       ///< cuDNN algorithm (cuDNN path), e.g. "IMPLICIT_PRECOMP_GEMM"
  std::string cudnn_math;       ///< cuDNN math mode: "fma" (strict fp32) or "tensor_op"
  std::size_t workspace_bytes = 0;
  std::string reason;  ///< why this algorithm and these sizes were chosen
  /// Every algorithm of the implementation list for the plan's backend, in the order Auto ranked
  /// them (forced plans: the forced one first), with its estimate or why it was not used.
  std::vector<AlgoCandidate> candidates;
};

}  // namespace fftconv
