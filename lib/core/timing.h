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

/// A non-blocking stream of the current device for plan-time work (search buffers, timed
/// candidates). It never synchronises with the legacy default stream, so building a plan neither
/// waits for other threads' work nor breaks a CUDA graph another thread is capturing, as the
/// legacy stream and cudaDeviceSynchronize would. Synchronised and destroyed with the object.
class PlanStream {
 public:
  PlanStream();
  ~PlanStream();
  PlanStream(const PlanStream&) = delete;
  PlanStream& operator=(const PlanStream&) = delete;
  cudaStream_t get() const { return stream_; }
  /// Waits for the work enqueued on the stream.
  void synchronize() const;

 private:
  cudaStream_t stream_ = nullptr;
};

/// The calling thread's PlanStream for the current device, created on first use and kept for the
/// thread's life, so plan-time work (and a library handle pointed at it) does not churn streams.
const PlanStream& thread_plan_stream();

/// Waits for a kept PlanStream on scope exit (errors cleared): declared after the buffers its
/// work uses, it drains the stream before they are freed, whatever the way out.
struct PlanStreamDrain {
  const PlanStream& s;
  ~PlanStreamDrain() {
    if (cudaStreamSynchronize(s.get()) != cudaSuccess) cudaGetLastError();
  }
};

/// The median of `values` (the mean of the middle two for an even count); throws
/// Error(kInvalidArgument) when empty.
double median(std::vector<double> values);

}  // namespace fftconv::detail
