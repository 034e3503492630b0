#include "api/args_check.h"

#include <cmath>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace fftconv::detail {

namespace {

struct Range {
  const char* name;
  std::uintptr_t begin, end;
  bool overlaps(const Range& o) const { return begin < o.end && o.begin < end; }
};

// One tensor argument: may be null only when optional (then it is simply absent).
struct TensorArg {
  const char* name;
  const void* ptr;
  std::int64_t elems;
  std::size_t esize;
  std::size_t align = 0;  // alignment the pointer needs; 0: its element size
  Range range() const {
    const auto b = reinterpret_cast<std::uintptr_t>(ptr);
    return Range{name, b, ptr ? b + static_cast<std::uintptr_t>(elems) * esize : b};
  }
};

}  // namespace

std::string pointer_problem(const void* ptr, int device) {
  cudaPointerAttributes a{};
  const cudaError_t err = cudaPointerGetAttributes(&a, ptr);
  if (err != cudaSuccess) {
    cudaGetLastError();  // not sticky: the query failed, the context is fine
    return std::string("cannot be queried (") + cudaGetErrorString(err) + ")";
  }
  switch (a.type) {
    case cudaMemoryTypeDevice:
      if (a.device == device) return "";
      return "is memory of device " + std::to_string(a.device) + ", the plan runs on device " +
             std::to_string(device);
    case cudaMemoryTypeManaged:
      return "";
    case cudaMemoryTypeHost:
      return "is pinned host memory, not device memory of device " + std::to_string(device);
    default:
      return "is host memory, not device memory of device " + std::to_string(device);
  }
}

namespace {

// Checks shared by every pass, after the null checks: alignment, workspace, overlaps, and (with
// a device) where each pointer's memory lives.
Status check_tensors(const ConvDesc& d, const TensorArg* inputs, int count, const TensorArg& out,
                     const void* workspace, std::size_t workspace_bytes,
                     std::size_t workspace_needed, std::string* message, int device) {
  auto fail = [&](Status st, const std::string& why) {
    if (message) *message = why + " [" + d.to_string() + "]";
    return st;
  };
  for (int i = 0; i <= count; ++i) {
    const TensorArg& t = i < count ? inputs[i] : out;
    const std::size_t align = t.align ? t.align : t.esize;
    if (t.ptr && reinterpret_cast<std::uintptr_t>(t.ptr) % align != 0) {
      return fail(Status::kMisalignedPointer,
                  std::string(t.name) + " is not aligned to " +
                      (t.align ? std::to_string(align) + " bytes"
                               : "its " + std::to_string(align) + "-byte elements"));
    }
  }
  if (workspace_bytes < workspace_needed) {
    return fail(Status::kWorkspaceTooSmall, "workspace of " + std::to_string(workspace_bytes) +
                                                " bytes, the plan needs " +
                                                std::to_string(workspace_needed));
  }
  if (workspace_needed > 0 && !workspace) return fail(Status::kNullPointer, "workspace is null");
  if (workspace && reinterpret_cast<std::uintptr_t>(workspace) % kWorkspaceAlignment != 0) {
    return fail(Status::kMisalignedPointer,
                "workspace is not aligned to " + std::to_string(kWorkspaceAlignment) + " bytes");
  }
  const Range ro = out.range();
  for (int i = 0; i < count; ++i) {
    if (inputs[i].range().overlaps(ro)) {
      return fail(Status::kInvalidArgument, std::string(inputs[i].name) + " overlaps " + out.name);
    }
  }
  if (workspace && workspace_needed > 0) {
    const auto b = reinterpret_cast<std::uintptr_t>(workspace);
    const Range rws{"workspace", b, b + workspace_needed};
    for (int i = 0; i <= count; ++i) {
      const Range t = (i < count ? inputs[i] : out).range();
      if (t.overlaps(rws)) {
        return fail(Status::kInvalidArgument, std::string(t.name) + " overlaps the workspace");
      }
    }
  }
  if (device != kNoPointerCheck) {
    for (int i = 0; i <= count; ++i) {
      const TensorArg& t = i < count ? inputs[i] : out;
      if (!t.ptr) continue;
      const std::string why = pointer_problem(t.ptr, device);
      if (!why.empty()) return fail(Status::kInvalidArgument, std::string(t.name) + " " + why);
    }
    if (workspace) {
      const std::string why = pointer_problem(workspace, device);
      if (!why.empty()) return fail(Status::kInvalidArgument, "workspace " + why);
    }
  }
  if (message) message->clear();
  return Status::kSuccess;
}

Status fail_null(const ConvDesc& d, const std::string& why, std::string* message) {
  if (message) *message = why + " [" + d.to_string() + "]";
  return Status::kNullPointer;
}

// The filter argument of forward and backward data: the tensor w, or its spectrum.
TensorArg filter_arg(const ConvDesc& d, const void* w, const FilterSpectrumArg* spectrum) {
  if (spectrum) {
    return {"spectrum", spectrum->ptr, static_cast<std::int64_t>(spectrum->bytes), 1,
            kWorkspaceAlignment};
  }
  return {"w", w, d.w_elems(), dtype_size(d.dtype)};
}

}  // namespace

Status check_forward_args(const ConvDesc& d, const void* x, const void* w, const void* bias,
                          const void* y, const void* workspace, std::size_t workspace_bytes,
                          std::size_t workspace_needed, bool filter_kept, std::string* message,
                          int device, const FilterSpectrumArg* spectrum) {
  if (!x) return fail_null(d, "x is null", message);
  if (spectrum && !spectrum->ptr) return fail_null(d, "spectrum is null", message);
  if (!spectrum && !w && !filter_kept) {
    return fail_null(d, "w is null and the plan keeps no filter (set_filter)", message);
  }
  if (!y) return fail_null(d, "y is null", message);
  const std::size_t es = dtype_size(d.dtype);
  const TensorArg in[] = {
      {"x", x, d.x_elems(), es}, filter_arg(d, w, spectrum), {"bias", bias, d.k, es}};
  return check_tensors(d, in, 3, TensorArg{"y", y, d.y_elems(), es}, workspace, workspace_bytes,
                       workspace_needed, message, device);
}

Status check_backward_data_args(const ConvDesc& d, const void* dy, const void* w, const void* dx,
                                const void* workspace, std::size_t workspace_bytes,
                                std::size_t workspace_needed, bool filter_kept,
                                std::string* message, int device,
                                const FilterSpectrumArg* spectrum) {
  if (!dy) return fail_null(d, "dy is null", message);
  if (spectrum && !spectrum->ptr) return fail_null(d, "spectrum is null", message);
  if (!spectrum && !w && !filter_kept) {
    return fail_null(d, "w is null and the plan keeps no filter (set_filter)", message);
  }
  if (!dx) return fail_null(d, "dx is null", message);
  const std::size_t es = dtype_size(d.dtype);
  const TensorArg in[] = {{"dy", dy, d.y_elems(), es}, filter_arg(d, w, spectrum)};
  return check_tensors(d, in, 2, TensorArg{"dx", dx, d.x_elems(), es}, workspace, workspace_bytes,
                       workspace_needed, message, device);
}

Status check_backward_filter_args(const ConvDesc& d, const void* x, const void* dy, const void* dw,
                                  DType dw_dtype, float alpha, float beta, const void* workspace,
                                  std::size_t workspace_bytes, std::size_t workspace_needed,
                                  std::string* message, int device) {
  if (!x) return fail_null(d, "x is null", message);
  if (!dy) return fail_null(d, "dy is null", message);
  if (!dw) return fail_null(d, "dw is null", message);
  if (!std::isfinite(alpha) || !std::isfinite(beta)) {
    if (message) *message = "alpha and beta must be finite [" + d.to_string() + "]";
    return Status::kInvalidArgument;
  }
  const std::size_t es = dtype_size(d.dtype);
  const TensorArg in[] = {{"x", x, d.x_elems(), es}, {"dy", dy, d.y_elems(), es}};
  return check_tensors(d, in, 2, TensorArg{"dw", dw, d.w_elems(), dtype_size(dw_dtype)}, workspace,
                       workspace_bytes, workspace_needed, message, device);
}

Status check_filter_spectrum_args(const ConvDesc& d, const void* w,
                                  const FilterSpectrumArg& spectrum, const void* workspace,
                                  std::size_t workspace_bytes, std::size_t workspace_needed,
                                  std::string* message, int device) {
  if (!w) return fail_null(d, "w is null", message);
  if (!spectrum.ptr) return fail_null(d, "spectrum is null", message);
  const TensorArg in[] = {{"w", w, d.w_elems(), dtype_size(d.dtype)}};
  return check_tensors(d, in, 1, filter_arg(d, nullptr, &spectrum), workspace, workspace_bytes,
                       workspace_needed, message, device);
}

}  // namespace fftconv::detail
