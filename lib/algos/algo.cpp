#include "algos/algo.h"

#include <utility>

#include "core/check.h"
#include "core/timing.h"

namespace fftconv::detail {

namespace {

// Records an event after each stage; one set per profiled run.
class EventMarks final : public StageMarks {
 public:
  std::vector<std::pair<std::string, cudaEvent_t>> marks;
  ~EventMarks() override {
    for (auto& m : marks) cudaEventDestroy(m.second);
  }
  void mark(const char* stage, cudaStream_t stream) override {
    cudaEvent_t e;
    FFTCONV_CUDA_CHECK(cudaEventCreate(&e));
    marks.emplace_back(stage, e);
    FFTCONV_CUDA_CHECK(cudaEventRecord(e, stream));
  }
};

}  // namespace

void ConvAlgo::filter_spectrum(const void*, void*, void*, cudaStream_t) {
  // Plan checks filter_spectrum_size() first; reaching this is a bug.
  throw Error(Status::kInternal, "filter_spectrum on an algorithm without a shared spectrum");
}

std::vector<StageTime> ConvAlgo::profile_forward(const RunArgs& args, cudaStream_t stream,
                                                 int iters) {
  run(args, stream, nullptr);  // warm-up
  std::vector<EventMarks> runs(static_cast<std::size_t>(iters));
  for (EventMarks& r : runs) {
    r.mark("start", stream);
    run(args, stream, &r);
  }
  FFTCONV_CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<StageTime> out;
  const std::size_t stages = runs[0].marks.size();
  for (std::size_t s = 1; s < stages; ++s) {
    std::vector<double> ms;
    for (const EventMarks& r : runs) {
      float e = 0.0f;
      FFTCONV_CUDA_CHECK(cudaEventElapsedTime(&e, r.marks[s - 1].second, r.marks[s].second));
      ms.push_back(e);
    }
    out.push_back(StageTime{runs[0].marks[s].first, median(std::move(ms))});
  }
  return out;
}

KeptFilterFence::~KeptFilterFence() {
  for (const Mark& m : marks_) cudaEventDestroy(m.event);
}

void KeptFilterFence::mark(cudaStream_t stream) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  FFTCONV_CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
  if (capture != cudaStreamCaptureStatusNone) return;
  for (const Mark& m : marks_) {
    if (m.stream == stream) {
      FFTCONV_CUDA_CHECK(cudaEventRecord(m.event, stream));
      return;
    }
  }
  cudaEvent_t event = nullptr;
  FFTCONV_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  marks_.push_back(Mark{stream, event});
  FFTCONV_CUDA_CHECK(cudaEventRecord(event, stream));
}

void KeptFilterFence::wait() noexcept {
  for (const Mark& m : marks_) {
    // A failed wait means the context is already broken; freeing then is what remains to do.
    if (cudaEventSynchronize(m.event) != cudaSuccess) cudaGetLastError();
    cudaEventDestroy(m.event);
  }
  marks_.clear();
}

void KeptFilterCopy::set(const ConvDesc& d, Pass pass, const void* w, cudaStream_t stream) {
  if (pass == Pass::kBackwardFilter) {
    throw Error(Status::kInvalidArgument,
                "set_filter: a backward-filter plan has no filter input [" + d.to_string() + "]");
  }
  const std::size_t bytes = dtype_size(d.dtype) * static_cast<std::size_t>(d.w_elems());
  if (!buf_) {
    try {
      buf_ = DeviceBuffer(bytes);
    } catch (const Error& e) {
      throw Error(e.status(), "set_filter: keeping the filter needs " + std::to_string(bytes) +
                                  " bytes of device memory: " + e.what());
    }
  }
  FFTCONV_CUDA_CHECK(cudaMemcpyAsync(buf_.get(), w, bytes, cudaMemcpyDeviceToDevice, stream));
  fence_.mark(stream);
}

void KeptFilterCopy::clear() noexcept {
  fence_.wait();
  buf_.reset();
}

const void* KeptFilterCopy::use(cudaStream_t stream) {
  fence_.mark(stream);
  return buf_.get();
}

void check_device_memory(const ConvAlgo& algo) {
  std::size_t free_bytes = 0, total_bytes = 0;
  FFTCONV_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  if (algo.workspace_size() > free_bytes) {
    throw Error(Status::kOutOfMemory, "the plan needs a workspace of " +
                                          std::to_string(algo.workspace_size()) +
                                          " bytes; the device has " + std::to_string(free_bytes) +
                                          " bytes free of " + std::to_string(total_bytes));
  }
}

}  // namespace fftconv::detail
