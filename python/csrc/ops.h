// Shared by the extension's kernels (ops.cpp) and its autograd and autocast kernels (autograd.cpp).
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>

#include "fftconv/conv_desc.hpp"
#include "fftconv/options.hpp"

namespace fftconv::torch_ext {

/// The non-tensor arguments every fftconv operator takes, as F.conv2d does, and nn.Conv2d's
/// padding_mode (what the padding holds: fftconv::Border).
struct ConvParams {
  at::IntArrayRef stride, padding, dilation;
  int64_t groups = 1;
  Border border = Border::kZero;
};

/// fftconv::conv2d through the dispatcher (autograd, autocast and dispatch modes apply): the one
/// entry of the autograd and autocast kernels and of fftconv._C._conv2d.
at::Tensor call_conv2d(const at::Tensor& x, const at::Tensor& w,
                       const std::optional<at::Tensor>& bias, at::IntArrayRef stride,
                       at::IntArrayRef padding, at::IntArrayRef dilation, int64_t groups,
                       c10::string_view algo, c10::string_view padding_mode);

/// fftconv.backends.strict_fp32: whether Auto checks aten's first fp32 result of a plan under
/// cudnn.benchmark (cuDNN's TF32 off) against float64 and runs the engine where it misses 1e-5
/// (default true).
/// Read when a plan is made: fftconv.backends.plan_cache.clear() applies a change to old plans.
bool strict_fp32();
void set_strict_fp32(bool on);

/// fftconv.backends.cudnn_search: how the engine's own cuDNN path (algo="cudnn", and Auto's
/// fallback where strict_fp32 moves a plan off aten) picks its algorithm: Options::cudnn_search,
/// "auto" by default. Read when a plan is made, as strict_fp32.
CudnnSearch cudnn_search();
void set_cudnn_search(CudnnSearch s);

/// fftconv.backends.own_fft: whether the engine's FFT plans transform their planes with the own
/// one-pass kernels (Options::own_fft) instead of pad + cuFFT + clip (default false). Read when
/// a plan is made, as strict_fp32.
bool own_fft();
void set_own_fft(bool on);

}  // namespace fftconv::torch_ext
