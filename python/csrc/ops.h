// Shared by the extension's kernels (ops.cpp) and its autograd and autocast kernels (autograd.cpp).
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>

namespace fftconv::torch_ext {

/// The non-tensor arguments every fftconv operator takes, as F.conv2d does.
struct ConvParams {
  at::IntArrayRef stride, padding, dilation;
  int64_t groups = 1;
};

/// fftconv::conv2d through the dispatcher (autograd, autocast and dispatch modes apply): the one
/// entry of the autograd and autocast kernels and of fftconv._C._conv2d.
at::Tensor call_conv2d(const at::Tensor& x, const at::Tensor& w,
                       const std::optional<at::Tensor>& bias, at::IntArrayRef stride,
                       at::IntArrayRef padding, at::IntArrayRef dilation, int64_t groups,
                       c10::string_view algo);

}  // namespace fftconv::torch_ext
