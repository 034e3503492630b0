// FFT convolution, full image or overlap-save tiles: pad, r2c, per-frequency GEMM, c2r, clip.
#pragma once

#include <memory>
#include <string>

#include "algos/algo.h"
#include "fft/cufft_plan.h"
#include "gemm/cgemm.h"
#include "geometry/fft_geometry.h"

namespace fftconv::detail {

/// Runs either geometry: a full-image FFT (one tile per image, the period may wrap) or
/// overlap-save tiles (FftGeometry::tiled). Tiles of an image are extra rows of the GEMM, so both
/// share every stage. A kept filter spectrum (set_filter) replaces the filter's pad and r2c.
class FftConvAlgo final : public ConvAlgo {
 public:
  /// Whether the spectra fit the workspace limit; cuFFT's scratch is checked once plans exist.
  static Support can_implement(const ConvDesc& d, const Options& o, const FftGeometry& g);

  /// Tuning::kAutotune / kExhaustive: times the forward pass at the cost model's best few
  /// full-image FFT sizes (heuristic GEMM, random data) and returns the fastest, through the
  /// tuning cache. Allocates and synchronises: plan time only. `reason` says how it was chosen.
  static FftGeometry tune_geometry(const ConvDesc& d, const Options& o, std::string* reason);

  /// Chooses the GEMM (per Options: forced, heuristic or autotuned) and builds the cuFFT plans.
  FftConvAlgo(const ConvDesc& d, const Options& o, const FftGeometry& g);
  ~FftConvAlgo() override;

  std::size_t workspace_size() const override { return workspace_; }
  void forward(const FwdArgs& args, cudaStream_t stream, StageMarks* marks) override;
  void fill_info(PlanInfo& info) const override;
  void set_filter(const void* w, cudaStream_t stream) override;
  void clear_filter() override;
  bool has_filter() const override { return kept_ != nullptr; }
  std::size_t filter_bytes() const override;

  /// Bytes of the two spectrum buffers (input+filter planes, output planes).
  static std::size_t spectrum_bytes(const ConvDesc& d, const FftGeometry& g);

 private:
  ConvDesc d_;
  FftGeometry g_;
  CgemmProblem gemm_;
  std::unique_ptr<CgemmRunner> runner_;
  std::string gemm_reason_;
  // r2c over input and filter planes (per-call filter), over input planes only (kept filter),
  // over filter planes only (set_filter), and the c2r of the result planes.
  std::unique_ptr<CufftPlan2d> r2c_all_, r2c_x_, r2c_w_, c2r_;
  std::size_t off_out_ = 0, off_work_ = 0, off_gemm_ = 0, workspace_ = 0;
  // Kept filter spectrum and the cuFFT scratch its transform uses; owned, allocated by set_filter.
  float* kept_ = nullptr;
  void* kept_work_ = nullptr;
};

}  // namespace fftconv::detail
