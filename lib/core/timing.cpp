#include "core/timing.h"

#include <algorithm>
#include <memory>

#include "core/check.h"
#include "fftconv/status.hpp"

namespace fftconv::detail {

GpuTimer::GpuTimer() {
  FFTCONV_CUDA_CHECK(cudaEventCreate(&start_));
  const cudaError_t err = cudaEventCreate(&stop_);
  if (err != cudaSuccess) {
    cudaEventDestroy(start_);
    FFTCONV_CUDA_CHECK(err);
  }
}

GpuTimer::~GpuTimer() {
  cudaEventDestroy(start_);
  cudaEventDestroy(stop_);
}

void GpuTimer::start(cudaStream_t stream) { FFTCONV_CUDA_CHECK(cudaEventRecord(start_, stream)); }
void GpuTimer::stop(cudaStream_t stream) { FFTCONV_CUDA_CHECK(cudaEventRecord(stop_, stream)); }

float GpuTimer::elapsed_ms() {
  FFTCONV_CUDA_CHECK(cudaEventSynchronize(stop_));
  float ms = 0.0f;
  FFTCONV_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
  return ms;
}

float ColdTimer::time_ms(const std::function<void()>& call, cudaStream_t stream) {
  FFTCONV_CUDA_CHECK(cudaMemsetAsync(flush_, static_cast<int>(++fills_ & 0xff), bytes_, stream));
  FFTCONV_CUDA_CHECK(cudaStreamSynchronize(stream));
  timer_.start(stream);
  call();
  timer_.stop(stream);
  return timer_.elapsed_ms();
}

PlanStream::PlanStream() {
  FFTCONV_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
}

PlanStream::~PlanStream() {
  // Errors here belong to the work that was enqueued, which its own checks report.
  if (cudaStreamSynchronize(stream_) != cudaSuccess) cudaGetLastError();
  cudaStreamDestroy(stream_);
}

void PlanStream::synchronize() const { FFTCONV_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

const PlanStream& thread_plan_stream() {
  thread_local std::vector<std::unique_ptr<PlanStream>> per_device;
  int dev = 0;
  FFTCONV_CUDA_CHECK(cudaGetDevice(&dev));
  if (per_device.size() <= static_cast<std::size_t>(dev)) per_device.resize(dev + 1);
  if (!per_device[dev]) per_device[dev] = std::make_unique<PlanStream>();
  return *per_device[dev];
}

double median(std::vector<double> values) {
  if (values.empty()) throw Error(Status::kInvalidArgument, "median of no values");
  const std::size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + mid, values.end());
  if (values.size() % 2) return values[mid];
  const double upper = values[mid];
  const double lower = *std::max_element(values.begin(), values.begin() + mid);
  return 0.5 * (lower + upper);
}

}  // namespace fftconv::detail
