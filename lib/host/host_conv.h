// The host backend behind Plan (Backend::kCpu): its interface and the checks made before one is
// built. The engine itself (FFTW) is in host_fft_conv.{h,cpp}, compiled with FFTCONV_WITH_FFTW.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/support.h"

#include "fftconv/options.hpp"

namespace fftconv::detail {

/// Pointers of one host forward pass, all host memory of fp32: x (n*c*h*w), w (k*c/g*r*s, null:
/// the kept filter), bias (k, may be null), y (n*k*out_h*out_w); w_spectrum (may be null): the
/// filter's spectrum as filter_spectrum() wrote it, used instead of w and the kept filter.
struct HostFwdArgs {
  const float* x;
  const float* w;
  const float* bias;
  float* y;
  const float* w_spectrum = nullptr;
};

/// A convolution pass computed on the host. Owns every buffer it needs; calls run to completion
/// on the calling thread (and the threads it starts). Callers serialise calls on one object.
/// Each object computes the pass of the Options it was made with.
class HostConv {
 public:
  virtual ~HostConv() = default;
  /// y = conv(x, w) + bias. `stage_times` (may be null) receives the milliseconds of each stage.
  virtual void forward(const HostFwdArgs& args, std::vector<StageTime>* stage_times) = 0;
  /// dx = dL/dx for output gradient dy and filter w (null: the kept filter), or the filter's
  /// spectrum `w_spectrum` where that is not null; host fp32.
  virtual void backward_data(const float* dy, const float* w, const float* w_spectrum,
                             float* dx) = 0;
  /// dw = alpha * dL/dw + beta * dw for input x and output gradient dy (dw not read when beta
  /// is 0); host fp32.
  virtual void backward_filter(const float* x, const float* dy, float* dw, float alpha,
                               float beta) = 0;
  /// Fills backend, algo, sizes and kernel names (the reason is set by make_host_conv).
  virtual void fill_info(PlanInfo& info) const = 0;
  /// Keeps the spectrum of filter `w` (host memory) so forward() accepts w == nullptr.
  virtual void set_filter(const float* w) = 0;
  virtual void clear_filter() = 0;
  virtual bool has_filter() const = 0;
  /// Host bytes the kept filter holds (0 when none).
  virtual std::size_t filter_bytes() const = 0;
  /// The shared filter spectrum (ConvAlgo::filter_spectrum_size and _layout; forward and backward
  /// data): its bytes, what it holds, and writing it for filter `w` to `spectrum` (256-byte
  /// aligned host memory).
  virtual std::size_t filter_spectrum_size() const = 0;
  virtual std::string filter_spectrum_layout() const = 0;
  virtual void filter_spectrum(const float* w, float* spectrum) const = 0;
};

/// Whether the host engine can run the pass of `o` on `d`: fp32 data, no GPU GEMM kernel forced,
/// and a build with FFTW; otherwise kNotSupported and what to do instead.
Support host_can_implement(const ConvDesc& d, const Options& o);

/// Builds the host engine for Options::pass, or throws Error: kNotSupported for what
/// host_can_implement rejects, kInvalidArgument for a forced FFT size below the exact minimum or a
/// bad $FFTCONV_CPU_THREADS, kOutOfMemory when its buffers cannot be allocated. `reason` receives
/// what was chosen and why.
std::unique_ptr<HostConv> make_host_conv(const ConvDesc& d, const Options& o, std::string* reason);

}  // namespace fftconv::detail
