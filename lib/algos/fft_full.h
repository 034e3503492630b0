// Full-image FFT convolution: pad, r2c, per-frequency complex GEMM, c2r, clip.
#pragma once

#include <memory>

#include "algos/algo.h"
#include "fft/cufft_plan.h"
#include "gemm/cgemm.h"
#include "geometry/fft_geometry.h"

namespace fftconv::detail {

class FftFullAlgo final : public ConvAlgo {
 public:
  /// Spectrum buffers and workspace limit (cuFFT's scratch is checked once the plans exist).
  static Support can_implement(const ConvDesc& d, const Options& o, const FftGeometry& g);

  /// Chooses the GEMM (per Options: forced, heuristic or autotuned) and builds the cuFFT plans.
  FftFullAlgo(const ConvDesc& d, const Options& o, const FftGeometry& g);

  std::size_t workspace_size() const override { return workspace_; }
  void forward(const FwdArgs& args, cudaStream_t stream, StageMarks* marks) override;
  void fill_info(PlanInfo& info) const override;

  /// Tuning::kAutotune / kExhaustive: times the forward pass at the cost model's best few FFT
  /// sizes (heuristic GEMM, random data) and returns the fastest, through the tuning cache.
  /// Allocates and synchronises: plan time only. `reason` says how the size was chosen.
  static FftGeometry tune_geometry(const ConvDesc& d, const Options& o, std::string* reason);

  /// Bytes of the two spectrum buffers (input+filter planes, output planes).
  static std::size_t spectrum_bytes(const ConvDesc& d, const FftGeometry& g);

 private:
  ConvDesc d_;
  FftGeometry g_;
  CgemmProblem gemm_;
  std::unique_ptr<CgemmRunner> runner_;
  std::string gemm_reason_;
  std::unique_ptr<CufftPlan2d> r2c_, c2r_;
  std::size_t off_out_ = 0, off_work_ = 0, off_gemm_ = 0, workspace_ = 0;
};

}  // namespace fftconv::detail
