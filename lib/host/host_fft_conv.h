// The host FFT convolution on FFTW3 single precision: the GPU path's pipeline (zero-pad, r2c,
// per-frequency complex GEMM, c2r, clip) with the same geometry, plane layout and GEMM
// description for each pass, run by host threads.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

#include <fftw3.h>

#include "geometry/fft_geometry.h"
#include "host/host_conv.h"
#include "tuning/heuristics.h"

namespace fftconv::detail {

/// Called after each stage with its name (profiling; may be empty).
using StageClockHook = const std::function<void(const char*)>&;

/// One in-place batched transform (r2c or c2r) over `planes` planes of a FftGeometry. Planes
/// under 1024x1024, or at least four large ones per thread, are split among the threads, each
/// running a single-threaded FFTW plan over its slice; otherwise FFTW's own threads split each
/// transform.
/// (FFTW's threads on many small planes: at 24 threads a 32x68-map 120x120 landmark forward took
/// 20 s instead of 0.26 s at 16, on 2 cores; 8.6 s on a 32-core GPU host next to busy processes.)
class BatchedFft {
 public:
  /// Plans over `data` (which FFTW_MEASURE overwrites). ok() is false where FFTW could not plan.
  BatchedFft(const FftGeometry& g, std::int64_t planes, float* data, bool forward, int threads,
             bool measure);
  ~BatchedFft();
  BatchedFft(const BatchedFft&) = delete;
  BatchedFft& operator=(const BatchedFft&) = delete;
  bool ok() const { return lo_ != nullptr && (hi_ != nullptr || lo_planes_ * parts_ == planes_); }
  /// Transforms the planes of `data`: the planned buffer, or one from fftwf_malloc of that size.
  void run(float* data) const;

 private:
  std::int64_t planes_ = 0, parts_ = 1, lo_planes_ = 0, plane_floats_ = 0;
  bool forward_ = true;
  fftwf_plan lo_ = nullptr, hi_ = nullptr;  // slices of lo_planes_ and lo_planes_ + 1 planes
};

/// Full-image FFT on the host, one pass (forward, backward data or backward filter). Spectra are
/// kept plane after plane in FFTW's in-place layout (rows of fft_w/2+1 complex values, real rows
/// padded to FftGeometry::pitch floats), the layout of the GPU path, so the index math of
/// lib/geometry and the pass descriptions of lib/tuning (spectrum_planes, gemm_problem) serve
/// both.
class HostFftConv final : public HostConv {
 public:
  /// Allocates the spectra and builds the FFTW plans for `threads` threads; `measure` plans with
  /// FFTW_MEASURE (FFTW times candidate algorithms: slower to build, sometimes faster to run)
  /// instead of FFTW_ESTIMATE. Throws Error(kOutOfMemory) when the buffers cannot be had.
  /// `wisdom` (measured plans only; may be empty): a file of FFTW wisdom read before planning
  /// and rewritten after, so a later process plans the same transforms at once.
  HostFftConv(const ConvDesc& d, const FftGeometry& g, Pass pass, int threads, bool measure,
              const std::string& wisdom = "");
  ~HostFftConv() override;
  HostFftConv(const HostFftConv&) = delete;
  HostFftConv& operator=(const HostFftConv&) = delete;

  void forward(const HostFwdArgs& args, std::vector<StageTime>* stage_times) override;
  void backward_data(const float* dy, const float* w, const float* w_spectrum,
                     float* dx) override;
  void backward_filter(const float* x, const float* dy, float* dw, float alpha,
                       float beta) override;
  void fill_info(PlanInfo& info) const override;
  void set_filter(const float* w) override;
  void clear_filter() override;
  bool has_filter() const override { return kept_ != nullptr; }
  std::size_t filter_bytes() const override;
  std::size_t filter_spectrum_size() const override;
  std::string filter_spectrum_layout() const override;
  void filter_spectrum(const float* w, float* spectrum) const override;

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

  // The window a pass's clip reads (ClipArgs of the GPU path, without tiles).
  struct Window {
    std::int64_t planes, k, out_h, out_w, stride_h, stride_w, off_h = 0, off_w = 0;
    bool wrap = true;
  };
  // Pads both segments, transforms, contracts, transforms back; segment b's spectrum is
  // `spec_b` instead where that is not null (a kept or shared filter spectrum).
  void transform_and_contract(const float* src_a, const float* src_b, const float* spec_b,
                              StageClockHook clock);
  void pad_filter(const float* w, float* dst) const;
  void multiply_forward(const float* spec_w);
  void clip(const Window& win, const float* bias, float scale, float beta, float* out) const;

  ConvDesc d_;
  FftGeometry g_;
  Pass pass_;
  int threads_ = 1;
  bool measure_ = false;
  SpectrumPlanes planes_;
  CgemmProblem gemm_;
  Buffer a_, b_, out_, kept_;
  std::unique_ptr<BatchedFft> r2c_a_, r2c_b_, c2r_out_;
};

}  // namespace fftconv::detail
