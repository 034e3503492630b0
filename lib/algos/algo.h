// Interface every convolution algorithm implements (oneDNN/CUTLASS style: check, size, run).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include <cuda_runtime_api.h>

#include "fftconv/conv_desc.hpp"
#include "fftconv/plan.hpp"

namespace fftconv::detail {

/// Whether an algorithm can implement a descriptor; when not, a status and a reason a user can act on.
struct Support {
  Status status = Status::kSuccess;
  std::string reason;
  bool ok() const { return status == Status::kSuccess; }
  static Support yes() { return {}; }
  static Support no(Status st, std::string why) { return {st, std::move(why)}; }
};

struct FwdArgs {
  const void* x;
  const void* w;
  const void* bias;  // may be null
  void* y;
  void* workspace;   // workspace_size() bytes, 256-byte aligned
};

/// Receives a mark after each stage of a forward pass (profiling only).
class StageMarks {
 public:
  virtual ~StageMarks() = default;
  virtual void mark(const char* stage, cudaStream_t stream) = 0;
};

class ConvAlgo {
 public:
  virtual ~ConvAlgo() = default;
  virtual std::size_t workspace_size() const = 0;
  /// Enqueues the forward pass; never allocates or synchronises. Callers serialise calls.
  /// `marks` (null outside profiling) is told when each stage has been enqueued.
  virtual void forward(const FwdArgs& args, cudaStream_t stream, StageMarks* marks) = 0;
  /// Fills algo, sizes, kernel names and workspace (reason is the planner's).
  virtual void fill_info(PlanInfo& info) const = 0;
  /// Keeps what forward() needs of filter `w` (its spectrum, or a copy) in memory the algorithm
  /// owns, so forward() may be called with w == nullptr. Enqueued on `stream`; may allocate.
  virtual void set_filter(const void* w, cudaStream_t stream) = 0;
  /// Frees the kept filter (waits for the device first).
  virtual void clear_filter() = 0;
  virtual bool has_filter() const = 0;
  virtual std::size_t filter_bytes() const = 0;
};

/// Rounds up to the 256-byte alignment every workspace sub-buffer gets.
constexpr std::size_t align_up(std::size_t bytes, std::size_t alignment = 256) {
  return (bytes + alignment - 1) / alignment * alignment;
}

}  // namespace fftconv::detail
