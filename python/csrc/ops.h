// Shared by the extension's kernels (ops.cpp) and its autograd and autocast kernels (autograd.cpp).
#pragma once

#include <ATen/core/Tensor.h>

namespace fftconv::torch_ext {

/// The non-tensor arguments every fftconv operator takes, as F.conv2d does.
struct ConvParams {
  at::IntArrayRef stride, padding, dilation;
  int64_t groups = 1;
};

}  // namespace fftconv::torch_ext
