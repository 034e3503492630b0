// Checks of run-time arguments, done before anything is enqueued (CPU-testable).
#pragma once

#include <cstddef>
#include <string>

#include "fftconv/conv_desc.hpp"

namespace fftconv::detail {

/// Alignment forward() requires of the workspace pointer.
constexpr std::size_t kWorkspaceAlignment = 256;

/// `device` argument of the checks below: pointers are not asked where their memory lives (host
/// plans; callers that checked already).
constexpr int kNoPointerCheck = -1;

/// Why `ptr` is not memory a kernel on `device` may use ("is host memory, not device memory of
/// device 0"), or "" when it is device or managed memory of that device.
std::string pointer_problem(const void* ptr, int device);

/// A filter spectrum in caller memory (Plan::filter_spectrum): `bytes` from `ptr`, which must be
/// aligned to kWorkspaceAlignment.
struct FilterSpectrumArg {
  const void* ptr;
  std::size_t bytes;
};

/// Status::kSuccess, or the first problem with forward()'s pointers and workspace; `message`
/// names the argument. Tensors must be non-null, aligned to their element size and must not
/// overlap y (nor the workspace); the workspace must hold `workspace_needed` bytes.
/// w may be null when `filter_kept`. With `device` >= 0, every pointer must also be device (or
/// managed) memory of that device, asked through cudaPointerGetAttributes: a host buffer given
/// to a GPU plan would otherwise fault on the device and end the process's CUDA context.
/// With `spectrum` (forward_with_spectrum), the filter is that spectrum and w is not looked at.
Status check_forward_args(const ConvDesc& d, const void* x, const void* w, const void* bias,
                          const void* y, const void* workspace, std::size_t workspace_bytes,
                          std::size_t workspace_needed, bool filter_kept, std::string* message,
                          int device = kNoPointerCheck,
                          const FilterSpectrumArg* spectrum = nullptr);

/// Same checks for backward_data(): dy and w (null when `filter_kept`) or `spectrum` in, dx out.
Status check_backward_data_args(const ConvDesc& d, const void* dy, const void* w, const void* dx,
                                const void* workspace, std::size_t workspace_bytes,
                                std::size_t workspace_needed, bool filter_kept,
                                std::string* message, int device = kNoPointerCheck,
                                const FilterSpectrumArg* spectrum = nullptr);

/// Same checks for filter_spectrum(): w in, `spectrum` out.
Status check_filter_spectrum_args(const ConvDesc& d, const void* w,
                                  const FilterSpectrumArg& spectrum, const void* workspace,
                                  std::size_t workspace_bytes, std::size_t workspace_needed,
                                  std::string* message, int device = kNoPointerCheck);

/// Same checks for backward_filter(): x and dy in, dw out (elements of `dw_dtype`); alpha and
/// beta must be finite.
Status check_backward_filter_args(const ConvDesc& d, const void* x, const void* dy, const void* dw,
                                  DType dw_dtype, float alpha, float beta, const void* workspace,
                                  std::size_t workspace_bytes, std::size_t workspace_needed,
                                  std::string* message, int device = kNoPointerCheck);

}  // namespace fftconv::detail
