// The one GPU timer and the one median of the code base (plan-time tuning in the library; the
// tests, the driver and the benchmarks through lib/testing).
#pragma once

#include <vector>

#include <cuda_runtime_api.h>

namespace fftconv::detail {

/// A pair of CUDA events around work on one stream.
class GpuTimer {
 public:
  GpuTimer();
  ~GpuTimer();
  GpuTimer(const GpuTimer&) = delete;
  GpuTimer& operator=(const GpuTimer&) = delete;

  void start(cudaStream_t stream);
  void stop(cudaStream_t stream);
  /// Waits for the stop event; the milliseconds between start and stop.
  float elapsed_ms();

 private:
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

/// The median of `values` (the mean of the middle two for an even count); throws
/// Error(kInvalidArgument) when empty.
double median(std::vector<double> values);

}  // namespace fftconv::detail
