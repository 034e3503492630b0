// Interface every convolution algorithm implements (oneDNN/CUTLASS style: check, size, run).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "fftconv/conv_desc.hpp"
#include "core/device_buffer.h"
#include "core/support.h"
#include "fftconv/options.hpp"

namespace fftconv::detail {


/// Tensors of one pass (device pointers). forward: x, w (null: kept), bias (may be null) -> out =
/// y. backward data: dy, w (null: kept) -> out = dx. backward filter: x, dy -> out = dw, scaled as
/// out = alpha * dw + beta * out.
struct RunArgs {
  const void* x = nullptr;
  const void* w = nullptr;
  const void* dy = nullptr;
  const void* bias = nullptr;
  void* out = nullptr;
  void* workspace = nullptr;  // workspace_size() bytes, 256-byte aligned
  float alpha = 1.0f, beta = 0.0f;
  /// Forward and backward data: the filter's spectrum in caller memory, as filter_spectrum()
  /// wrote it (by this algorithm or one of the same filter_spectrum_layout()); when set, w is
  /// not read and the kept filter not used.
  const void* w_spectrum = nullptr;
};

/// Receives a mark after each stage of a pass (profiling only).
class StageMarks {
 public:
  virtual ~StageMarks() = default;
  virtual void mark(const char* stage, cudaStream_t stream) = 0;
};

class ConvAlgo {
 public:
  virtual ~ConvAlgo() = default;
  virtual std::size_t workspace_size() const = 0;
  /// Enqueues the pass the algorithm was built for; never allocates or synchronises. Callers
  /// serialise calls. `marks` (null outside profiling) is told when each stage has been enqueued.
  virtual void run(const RunArgs& args, cudaStream_t stream, StageMarks* marks) = 0;
  /// Fills algo, sizes, kernel names and workspace (reason is the planner's).
  virtual void fill_info(PlanInfo& info) const = 0;
  /// Keeps what run() needs of filter `w` (its spectrum, or a copy) in memory the algorithm
  /// owns, so run() may be called with w == nullptr (forward and backward data). Enqueued on
  /// `stream`; may allocate.
  virtual void set_filter(const void* w, cudaStream_t stream) = 0;
  /// Frees the kept filter once the work already enqueued that reads it has finished (only that
  /// work: see KeptFilterFence).
  virtual void clear_filter() = 0;
  virtual bool has_filter() const = 0;
  virtual std::size_t filter_bytes() const = 0;
  /// Bytes of the filter spectrum filter_spectrum() writes and run() reads from
  /// RunArgs::w_spectrum; 0 where the algorithm has none to share (then filter_spectrum() must
  /// not be called).
  virtual std::size_t filter_spectrum_size() const { return 0; }
  /// What a shared spectrum holds (backend, dtype, filter shape, FFT size): two algorithms with
  /// equal non-empty layouts read each other's spectra.
  virtual std::string filter_spectrum_layout() const { return {}; }
  /// Writes the spectrum of filter `w` to `spectrum` (filter_spectrum_size() bytes, 256-byte
  /// aligned), using the workspace for scratch. Enqueued on `stream`; never allocates.
  virtual void filter_spectrum(const void* w, void* spectrum, void* workspace,
                               cudaStream_t stream);
  /// How the kept filter runs, where that was decided at set_filter (e.g. the host's separable
  /// path); empty otherwise. Plan::describe() appends it.
  virtual std::string kept_filter_note() const { return {}; }
  /// Runs the forward pass `iters` times after one warm-up and returns the median time of each
  /// stage. This default times the stages run() marks with CUDA events on `stream`; an
  /// algorithm that runs elsewhere (the host) overrides it.
  virtual std::vector<StageTime> profile_forward(const RunArgs& args, cudaStream_t stream,
                                                 int iters);
};

/// Orders the release of a kept filter after the calls that read it: each such call marks its
/// stream, and wait() blocks until the last mark of every stream has passed, not the whole
/// device. Calls captured
/// into a CUDA graph are not marked (an event cannot be waited for across a capture): the caller
/// keeps graph replays finished before clearing the filter.
class KeptFilterFence {
 public:
  KeptFilterFence() = default;
  ~KeptFilterFence();
  KeptFilterFence(const KeptFilterFence&) = delete;
  KeptFilterFence& operator=(const KeptFilterFence&) = delete;
  /// Marks `stream` after work that reads the kept filter (not while it is being captured).
  void mark(cudaStream_t stream);
  /// Waits for the last mark on each stream (no-op when none).
  void wait() noexcept;

 private:
  struct Mark {
    cudaStream_t stream;
    cudaEvent_t event;
  };
  std::vector<Mark> marks_;  // one event per stream that read the filter
};

/// The copy of a filter that set_filter keeps for the algorithms that read the filter as it is
/// (cuDNN, direct): allocated at the first set, reused after; released once the calls that read
/// it have finished.
class KeptFilterCopy {
 public:
  /// Copies the w_elems() elements of `d`'s filter from `w` on `stream`; throws
  /// Error(kInvalidArgument) for a backward-filter plan (it has no filter input) and
  /// Error(kOutOfMemory) naming the bytes when it cannot allocate them.
  void set(const ConvDesc& d, Pass pass, const void* w, cudaStream_t stream);
  void clear() noexcept;
  bool has() const { return static_cast<bool>(buf_); }
  std::size_t bytes() const { return buf_ ? buf_.bytes() : 0; }
  /// The copy, for a call enqueued on `stream` (which is marked after it).
  const void* use(cudaStream_t stream);

 private:
  DeviceBuffer buf_;
  KeptFilterFence fence_;
};

/// Throws Error(kOutOfMemory), naming the bytes, when the algorithm's workspace exceeds the free
/// memory of the current device: a plan that cannot run fails at plan time, not at run time.
void check_device_memory(const ConvAlgo& algo);

/// Rounds up to the 256-byte alignment every workspace sub-buffer gets.
constexpr std::size_t align_up(std::size_t bytes, std::size_t alignment = 256) {
  return (bytes + alignment - 1) / alignment * alignment;
}

}  // namespace fftconv::detail
