// Helpers shared by the tests, the benchmark driver and the benchmarks: random tensors, error
// metrics against the oracle, device buffers, shape suites and timing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <random>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "core/device_buffer.h"
#include "fftconv/conv_desc.hpp"
#include "fftconv/fftconv.h"
#include "fftconv/options.hpp"

namespace fftconv::testing {

/// Values uniform in [-1, 1) from a fixed seed, rounded to what `dtype` can hold exactly.
std::vector<float> random_values(std::int64_t count, std::uint64_t seed, DType dtype);

/// The C API's descriptor of `d` (every field as the C++ descriptor's).
fftconv_conv_desc_t c_desc(const ConvDesc& d);
/// Encodes fp32 values as `dtype` elements (round to nearest even).
std::vector<unsigned char> encode(const std::vector<float>& values, DType dtype);
/// Decodes `count` elements of `dtype` to fp32.
std::vector<float> decode(const void* data, std::int64_t count, DType dtype);
/// A filter of d's shape whose every plane is the normalised 2D Gaussian of `sigma` (the outer
/// product of two 1-D ones: rank 1), rounded to d.dtype.
std::vector<float> gaussian_filter(const ConvDesc& d, double sigma);

/// Accuracy of a result against the fp64 oracle.
struct ErrorStats {
  double rel_l2 = 0.0;         ///< ||y - ref|| / ||ref||
  double max_err = 0.0;        ///< max |y - ref| / max |ref|
  std::int64_t nonfinite = 0;  ///< NaN/Inf elements (a poisoned, never-written output shows here)
  std::int64_t count = 0;
  bool pass(double tol) const { return nonfinite == 0 && rel_l2 <= tol && max_err <= tol; }
  std::string to_string() const;
};
ErrorStats compare(const std::vector<float>& y, const std::vector<double>& ref);

/// Random fp32 operands of a forward or backward-data pass, exact in fp32: the source (x, or dy
/// for backward data), the filter and, for the forward pass with an even seed, a bias; and the
/// pass's fp64 result by the host oracle.
struct OracleCase {
  std::vector<float> src, w, bias;
  std::vector<double> ref;
};
OracleCase host_oracle_case(const ConvDesc& d, Pass pass, std::uint64_t seed);
/// sum of a[i] * b[i] in double over a's elements (b at least as long): the inner products of
/// the adjoint identities.
double dot(const std::vector<double>& a, const std::vector<float>& b);

/// Tolerance (docs/benchmarking.md, "Accuracy and tolerance"): fp32 1e-5, fp16 I/O 2e-3, bf16
/// I/O 1e-2.
double tolerance(DType dtype);

/// A fresh folder under /tmp (mkdtemp), removed with everything in it on destruction.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "fftconv");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/// True when a CUDA device is usable; otherwise `why` says what failed.
bool has_device(std::string* why = nullptr);

/// The library's owning device allocation (detail::DeviceBuffer: cudaMalloc'd, move-only,
/// throws fftconv::Error when it cannot allocate) with the tests' conveniences.
class DeviceBuffer : public detail::DeviceBuffer {
 public:
  DeviceBuffer() = default;
  using detail::DeviceBuffer::DeviceBuffer;

  /// Copies `bytes` (at most bytes()) from the host, synchronously.
  void upload(const void* host, std::size_t bytes);
  /// Copies `bytes` (at most bytes()) to the host, synchronously.
  void download(void* host, std::size_t bytes) const;
  /// Fills every byte with 0xFF: NaN for f32, f16 and bf16, so unwritten outputs are caught.
  void poison();
};

/// `values` encoded as `dtype` in a new device buffer (synchronous copy).
DeviceBuffer upload(const std::vector<float>& values, DType dtype);
/// `count` elements of `dtype` from the device, decoded to fp32.
std::vector<float> download(const DeviceBuffer& b, std::int64_t count, DType dtype);
/// `count` doubles (an oracle's output) from the device.
std::vector<double> download_f64(const DeviceBuffer& b, std::int64_t count);

/// Throws std::runtime_error with the expression and error string when a CUDA call fails.
void cuda_check(cudaError_t err, const char* what);

/// One row of a shape-suite CSV (columns as data/shapes/suite.csv).
struct ShapeRow {
  std::string name;
  ConvDesc desc;
};
/// Prints a row as its name and canonical descriptor (GoogleTest parameter names and logs).
void PrintTo(const ShapeRow& row, std::ostream* os);
/// Parses a suite file; throws std::runtime_error naming the file and line on malformed input.
std::vector<ShapeRow> load_shapes(const std::string& path);
/// Parses a suite from `in`, as load_shapes(path) does a file; errors name `source` (a path) in
/// place of the file.
std::vector<ShapeRow> load_shapes(std::istream& in, const std::string& source);
/// Every row in each of `dtypes`, in row order (a row's variants together). A variant in the
/// row's own dtype keeps its name; another is named after the row without a dtype suffix (_f32,
/// _f16, _bf16) plus "_<dtype>" (none for f32). A variant whose descriptor is already present
/// (landmark_batch64 in f16 when the suite has landmark_batch64_f16) appears once.
std::vector<ShapeRow> with_dtypes(const std::vector<ShapeRow>& rows,
                                  const std::vector<DType>& dtypes);
/// Parses a comma-separated dtype list ("f32,f16,bf16"); throws on an unknown or empty list.
std::vector<DType> parse_dtype_list(const std::string& list);

/// The planner's candidate FFT sizes along one axis (height or width) of a full-image plan,
/// smallest first, from the exact circular period up: what `fftconv-bench --fft all` sweeps.
std::vector<std::int64_t> fft_sweep_sizes_along(const ConvDesc& d, bool height);

/// True when at least one output element reads an input element (not only padding).
bool output_reads_data(const ConvDesc& d);

/// Options of random_desc(). The defaults are the mix of the GPU and host sweeps; small() bounds
/// it for oracles and exact emulations that must stay fast. The bounds narrow the ranges drawn
/// from without adding draws, so a sweep's seed gives the same cases while its options do.
struct RandomDescOptions {
  DType dtype = DType::kF32;
  /// A fifth of the descriptors pad up to `wide_padding_extra` beyond the kernel (the FFT period
  /// then falls below the output extent). Takes one more draw per descriptor, so sequences differ
  /// from `false`.
  bool wide_padding = false;
  std::int64_t wide_padding_extra = 12;
  /// Redraw descriptors whose direct convolution has more multiply-adds (0: no cap).
  double max_macs = 0.0;
  /// Largest h and w: two thirds of the extents are edge sizes (primes, 2^k and 2^k +- 1) up to
  /// this, the others uniform in [1, min(80, max_extent)].
  std::int64_t max_extent = 129;
  /// Largest r and s (a third of the kernels are drawn from 1-3).
  std::int64_t max_kernel = 23;
  /// Largest batch n, channels and filters per group of a dense or grouped descriptor (grouped
  /// ones have 2 or 3 groups), and channels of a depthwise one.
  std::int64_t max_batch = 3;
  std::int64_t max_channels_per_group = 4;
  std::int64_t max_depthwise = 6;
  /// Largest stride and dilation (most axes step by 1).
  std::int64_t max_stride = 3;
  std::int64_t max_dilation = 3;
  /// n = c = k = groups = 1: one plane, for the single-plane emulations.
  bool single_plane = false;
  /// Also descriptors whose output reads padding alone (an all-zero reference, where relative
  /// error means nothing; exact comparisons and the oracles' own identities are fine with it).
  bool padding_only_outputs = false;

  /// Small enough for the exact spatial-domain emulations and the fp64 host oracle to take
  /// milliseconds per case: extents up to 12, kernels up to 5, up to 3 channels and filters per
  /// group, depthwise up to 5; a fifth of the descriptors pad up to 6 beyond the kernel, and
  /// padding-only outputs are kept. Tests widen or narrow single bounds from here.
  static RandomDescOptions small();
};

/// Random valid descriptors for sweeps: primes, 2^k +- 1, rectangular kernels, padding, stride,
/// dilation, groups and depthwise; unless options.padding_only_outputs, never one whose output
/// depends on padding alone (its reference is all zero, where relative error means nothing).
/// The one random-descriptor generator of the tests.
ConvDesc random_desc(std::mt19937_64& gen, const RandomDescOptions& options = {});
/// random_desc with the default options in `dtype`.
ConvDesc random_desc(std::mt19937_64& gen, DType dtype);

/// Nonzero integers in [-1000, -1] and [1, 1000]: every sum of their products is exact in
/// double, so pipelines compare with the oracle exactly, and the range is wide enough that a
/// wrong index does not reproduce the right sum by coincidence.
std::vector<float> nonzero_ints(std::size_t count, std::mt19937_64& gen);

/// H200 ceilings for floors: measured copy bandwidth and fp32 FMA peak.
constexpr double kCopyBytesPerSec = 4.3e12;
constexpr double kFp32FlopsPerSec = 67e12;

/// Lower bound in ms for one pass: its tensors moved once at kCopyBytesPerSec, or the FLOPs of
/// its method (the FFT planes and per-frequency GEMM when `info` is an FFT plan, else the direct
/// convolution) at kFp32FlopsPerSec, whichever is larger.
double floor_ms(const ConvDesc& d, Pass pass, const PlanInfo& info);

/// FLOPs of the direct convolution (2 per multiply-add), the same for every pass.
double direct_flops(const ConvDesc& d);
/// Bytes of the tensors one pass reads and writes, once each.
double pass_bytes(const ConvDesc& d, Pass pass);

/// The median of `values` (the mean of the middle two for an even count; detail::median); throws
/// std::invalid_argument when empty.
double median_of(std::vector<float> values);

/// Median device time in ms of `run(iteration)` over `iters` timed runs after `warmup` runs,
/// each timed with its own detail::GpuTimer on `stream`.
double median_ms(const std::function<void(int)>& run, cudaStream_t stream, int warmup, int iters);

/// CUDA graphs of `run(c)` for each c < copies, each captured once on `stream` (which must not be
/// the legacy default stream) after one direct call of run(0), so first-call set-up (module
/// loading, handles) stays out of the capture.
class GraphSet {
 public:
  GraphSet(const std::function<void(int)>& run, int copies, cudaStream_t stream);
  ~GraphSet();
  GraphSet(const GraphSet&) = delete;
  GraphSet& operator=(const GraphSet&) = delete;
  /// Replays graph i % copies on `stream`.
  void launch(int i, cudaStream_t stream) const;

 private:
  std::vector<cudaGraphExec_t> exec_;
};

/// As median_ms, but timed iteration i replays the GraphSet of `run` (graph i % copies): the
/// device time of the work without the host's launch gaps.
double graph_median_ms(const std::function<void(int)>& run, int copies, cudaStream_t stream,
                       int warmup, int iters);

/// Median device times in ms of several runs timed in turn: iteration i times every run once,
/// starting with run i % runs.size() and going round, each with its own detail::GpuTimer, so
/// that a drift of the device (clocks, caches) and the place in the sequence fall on every run
/// alike. `warmup` untimed rounds first; run v receives its own iteration count.
std::vector<double> interleaved_median_ms(const std::vector<std::function<void(int)>>& runs,
                                          cudaStream_t stream, int warmup, int iters);

/// As interleaved_median_ms, but every timed iteration: times[v][i] is run v's iteration i, in
/// ms. Iteration i of every run falls in the same round, so times[a][i] and times[b][i] pair.
std::vector<std::vector<float>> interleaved_times_ms(
    const std::vector<std::function<void(int)>>& runs, cudaStream_t stream, int warmup, int iters);

/// The order in which round i of interleaved_median_ms times `count` runs.
std::vector<int> interleaved_order(int round, int count);

/// How much slower run `other` is than run `base` when both were timed in turn: the median of
/// the per-round ratios other[i] / base[i], with a distribution-free confidence interval for that
/// median (two order statistics of the ratios, chosen by the binomial distribution; no
/// assumption on the distribution of times). A ratio whose interval lies above 1 is slower
/// beyond what the rounds' spread explains.
struct PairedRatio {
  double median = 0.0;    ///< median of the per-round ratios
  double lo = 0.0;        ///< lower end of the interval
  double hi = 0.0;        ///< upper end of the interval
  double coverage = 0.0;  ///< the interval's exact coverage (below `confidence` for few rounds)
  int rounds = 0;
};
PairedRatio paired_ratio(const std::vector<float>& base, const std::vector<float>& other,
                         double confidence = 0.95);

}  // namespace fftconv::testing
