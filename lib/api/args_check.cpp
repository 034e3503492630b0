#include "api/args_check.h"

#include <cstdint>

namespace fftconv::detail {

namespace {
struct Range {
  const char* name;
  std::uintptr_t begin, end;
  bool overlaps(const Range& o) const { return begin < o.end && o.begin < end; }
};
}  // namespace

Status check_forward_args(const ConvDesc& d, const void* x, const void* w, const void* bias,
                          const void* y, const void* workspace, std::size_t workspace_bytes,
                          std::size_t workspace_needed, bool filter_kept,
                          std::string* message) {
  auto fail = [&](Status st, const std::string& why) {
    if (message) *message = why + " [" + d.to_string() + "]";
    return st;
  };
  if (!x) return fail(Status::kNullPointer, "x is null");
  if (!w && !filter_kept) {
    return fail(Status::kNullPointer, "w is null and the plan keeps no filter (set_filter)");
  }
  if (!y) return fail(Status::kNullPointer, "y is null");
  const std::size_t esize = dtype_size(d.dtype);
  const struct {
    const char* name;
    const void* ptr;
  } tensors[] = {{"x", x}, {"w", w}, {"bias", bias}, {"y", y}};
  for (const auto& t : tensors) {
    if (t.ptr && reinterpret_cast<std::uintptr_t>(t.ptr) % esize != 0) {
      return fail(Status::kMisalignedPointer, std::string(t.name) + " is not aligned to its " +
                                                  std::to_string(esize) + "-byte elements");
    }
  }
  if (workspace_bytes < workspace_needed) {
    return fail(Status::kWorkspaceTooSmall,
                "workspace of " + std::to_string(workspace_bytes) + " bytes, the plan needs " +
                    std::to_string(workspace_needed));
  }
  if (workspace_needed > 0 && !workspace) return fail(Status::kNullPointer, "workspace is null");
  if (workspace && reinterpret_cast<std::uintptr_t>(workspace) % kWorkspaceAlignment != 0) {
    return fail(Status::kMisalignedPointer, "workspace is not aligned to " +
                                                std::to_string(kWorkspaceAlignment) + " bytes");
  }
  auto range = [&](const char* name, const void* p, std::int64_t elems) {
    const auto b = reinterpret_cast<std::uintptr_t>(p);
    return Range{name, b, b + static_cast<std::uintptr_t>(elems) * esize};
  };
  const Range ry = range("y", y, d.y_elems());
  const Range inputs[] = {range("x", x, d.x_elems()), range("w", w, w ? d.w_elems() : 0),
                          range("bias", bias, bias ? d.k : 0)};
  for (const Range& in : inputs) {
    if (in.overlaps(ry)) {
      return fail(Status::kInvalidArgument, std::string(in.name) + " overlaps y");
    }
  }
  if (workspace && workspace_needed > 0) {
    const auto b = reinterpret_cast<std::uintptr_t>(workspace);
    const Range rws{"workspace", b, b + workspace_needed};
    for (const Range& t : {inputs[0], inputs[1], inputs[2], ry}) {
      if (t.overlaps(rws)) {
        return fail(Status::kInvalidArgument, std::string(t.name) + " overlaps the workspace");
      }
    }
  }
  if (message) message->clear();
  return Status::kSuccess;
}

}  // namespace fftconv::detail
