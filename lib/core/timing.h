// The one GPU timer and the one median of the code base (plan-time tuning in the library; the
// tests, the driver and the benchmarks through lib/testing).
#pragma once

#include <cstddef>
#include <functional>
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

/// Bytes a cold call's flush writes: 256 MiB, past the H200's 60 MB L2 (and any smaller one).
constexpr std::size_t kL2FlushBytes = std::size_t{256} << 20;

/// Times calls as a network meets a layer, not back to back: before each, the L2 is flushed (a
/// memset of `flush_bytes` at `flush`, device memory the caller owns) and the stream drained;
/// events then bracket the call on the idle stream, so its host enqueueing counts too. The
/// cold time of fftconv-bench and of Auto's timed choice (Tuning::kAutotune).
class ColdTimer {
 public:
  ColdTimer(void* flush, std::size_t flush_bytes) : flush_(flush), bytes_(flush_bytes) {}
  /// Milliseconds of one cold call of `call` (which enqueues on `stream`).
  float time_ms(const std::function<void()>& call, cudaStream_t stream);

 private:
  GpuTimer timer_;
  void* flush_;
  std::size_t bytes_;
  unsigned fills_ = 0;  // the memset's value changes every call
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
