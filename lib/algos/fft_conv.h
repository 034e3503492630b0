// FFT convolution, every pass, full image or (forward) overlap-save tiles: pad, r2c,
// per-frequency GEMM, c2r, clip.
#pragma once

#include <memory>
#include <string>

#include "algos/algo.h"
#include "core/device_buffer.h"
#include "fft/cufft_plan.h"
#include "fft/plane_fft.h"
#include "gemm/cgemm.h"
#include "geometry/fft_geometry.h"
#include "stages/stages.h"
#include "tuning/heuristics.h"

namespace fftconv::detail {

/// Runs one pass (Options::pass) on either geometry: a full-image FFT (one tile per image, the
/// period may wrap) or, forward only, overlap-save tiles (FftGeometry::tiled). Tiles of an image
/// are extra rows of the GEMM, so both share every stage. The three passes differ only in which
/// planes are padded, the GEMM's strides and conjugation (gemm_problem) and what the clip reads.
/// A kept filter spectrum (set_filter; forward and backward data) replaces the filter's pad and
/// r2c.
class FftConvAlgo final : public ConvAlgo {
 public:
  /// Whether the pass and geometry go together and the spectra fit the workspace limit; cuFFT's
  /// scratch is checked once plans exist.
  static Support can_implement(const ConvDesc& d, const Options& o, const FftGeometry& g);

  /// Tuning::kAutotune / kExhaustive: times the forward pass at the cost model's best few
  /// full-image FFT sizes (heuristic GEMM, random data) and returns the fastest, through the
  /// tuning cache. Allocates and synchronises: plan time only. `reason` says how it was chosen.
  static FftGeometry tune_geometry(const ConvDesc& d, const Options& o, std::string* reason);

  /// Chooses the GEMM (per Options: forced, heuristic or autotuned) and builds the cuFFT plans.
  FftConvAlgo(const ConvDesc& d, const Options& o, const FftGeometry& g);
  ~FftConvAlgo() override;

  std::size_t workspace_size() const override { return workspace_; }
  void run(const RunArgs& args, cudaStream_t stream, StageMarks* marks) override;
  void fill_info(PlanInfo& info) const override;
  void set_filter(const void* w, cudaStream_t stream) override;
  void clear_filter() override;
  bool has_filter() const override { return static_cast<bool>(kept_); }
  std::size_t filter_bytes() const override;
  std::size_t filter_spectrum_size() const override;
  std::string filter_spectrum_layout() const override;
  void filter_spectrum(const void* w, void* spectrum, void* workspace,
                       cudaStream_t stream) override;

  /// Bytes of the two spectrum buffers (operand planes, result planes) of Options::pass.
  static std::size_t spectrum_bytes(const ConvDesc& d, const FftGeometry& g, Pass pass);

 private:
  /// The two operand segments of the pass as the pad stage places them (sources from `a`, the
  /// first destination plane at spec_in); segment b is the filter (dy for backward filter).
  void pad_segments(const RunArgs& a, float* spec_in, PadSegment (&segs)[2]) const;
  /// Pads filter w into `spectrum` and transforms it in place (r2c_w_, scratch `work`).
  void transform_filter(const void* w, float* spectrum, void* work, cudaStream_t stream) const;
  /// Builds the load-callback r2c plans; returns how the plan pads (the reason when it cannot).
  std::string make_pad_callbacks();

  ConvDesc d_;
  int device_ = -1;  // the device the plan was built on
  Pass pass_;
  DType out_dtype_;  // dw may be fp32 for half data (Options::dw_fp32)
  FftGeometry g_;
  SpectrumPlanes planes_;
  CgemmProblem gemm_;
  std::unique_ptr<CgemmRunner> runner_;
  std::string gemm_reason_;
  // r2c over both operand segments (per-call filter), over segment a only (kept or shared
  // filter spectrum), over the filter planes only (set_filter, filter_spectrum), and the c2r of
  // the result planes.
  // None with the own plane kernels (Options::own_fft), which replace pad, r2c, c2r and clip.
  std::unique_ptr<CufftPlan2d> r2c_all_, r2c_a_, r2c_w_, c2r_;
  std::unique_ptr<PlaneFft> plane_fft_;
  std::string plane_reason_;  // how the planes are transformed, for describe()
  // Options::fft_callbacks: the callbacks' parameters (two PadLoadInfo; declared first, so that
  // they outlive the plans), an r2c per operand segment that pads as it reads (null without),
  // and how this plan pads, for describe(). Calls whose tensors are not 16-byte aligned (cuFFT
  // wants its input pointer aligned) pad with the kernel and run the plain r2c.
  DeviceBuffer pad_info_;
  std::unique_ptr<CufftPlan2d> r2c_cb_a_, r2c_cb_b_;
  std::string pad_reason_;
  std::size_t off_out_ = 0, off_work_ = 0, off_gemm_ = 0, workspace_ = 0;
  // Kept filter spectrum and the cuFFT scratch its transform uses; allocated by set_filter.
  DeviceBuffer kept_, kept_work_;
  KeptFilterFence kept_fence_;
};

}  // namespace fftconv::detail
