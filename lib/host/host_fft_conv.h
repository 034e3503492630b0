// The host FFT convolution on FFTW3 single precision: the GPU path's pipeline (zero-pad, r2c,
// per-frequency complex GEMM, c2r, clip) with the same geometry, run by host threads.
#pragma once

#include <cstddef>
#include <memory>

#include <fftw3.h>

#include "geometry/fft_geometry.h"
#include "host/host_conv.h"

namespace fftconv::detail {

/// Full-image FFT on the host. Spectra are kept plane after plane in FFTW's in-place layout (rows
/// of fft_w/2+1 complex values, real rows padded to FftGeometry::pitch floats), the layout of the
/// GPU path, so the index math of lib/geometry serves both.
class HostFftConv final : public HostConv {
 public:
  /// Allocates the spectra and builds the FFTW plans for `threads` threads; `measure` plans with
  /// FFTW_MEASURE (FFTW times candidate algorithms: slower to build, sometimes faster to run)
  /// instead of FFTW_ESTIMATE. Throws Error(kOutOfMemory) when the buffers cannot be had.
  HostFftConv(const ConvDesc& d, const FftGeometry& g, int threads, bool measure);
  ~HostFftConv() override;
  HostFftConv(const HostFftConv&) = delete;
  HostFftConv& operator=(const HostFftConv&) = delete;

  void forward(const HostFwdArgs& args, std::vector<StageTime>* stage_times) override;
  void fill_info(PlanInfo& info) const override;
  void set_filter(const float* w) override;
  void clear_filter() override;
  bool has_filter() const override { return kept_ != nullptr; }
  std::size_t filter_bytes() const override;

  /// Bytes of the buffers the plan owns (spectra of input, filter and output planes).
  std::size_t buffer_bytes() const;
  int threads() const { return threads_; }
  /// Bytes those buffers would take for `d` at geometry `g` (no allocation).
  static std::size_t buffer_bytes(const ConvDesc& d, const FftGeometry& g);

 private:
  struct FftwFree {
    void operator()(float* p) const { fftwf_free(p); }
  };
  using Buffer = std::unique_ptr<float, FftwFree>;

  void pad_input(const float* x);
  void pad_filter(const float* w, float* dst) const;
  void multiply(const float* spec_w);
  void clip(const float* bias, float* y) const;

  ConvDesc d_;
  FftGeometry g_;
  int threads_ = 1;
  bool measure_ = false;
  std::int64_t planes_x_ = 0, planes_w_ = 0, planes_y_ = 0;
  Buffer x_, w_, y_, kept_;
  fftwf_plan r2c_x_ = nullptr, r2c_w_ = nullptr, c2r_y_ = nullptr;
};

}  // namespace fftconv::detail
