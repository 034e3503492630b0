// The implicit-GEMM entry of the implementation list (Algo::kImplicitGemm): the backward filter
// of dense channels under small and mid-size filters as one tensor-core GEMM per group, in the
// 3xTF32 split that keeps fp32's accuracy (lib/igemm/igemm_wgrad.h; CUTLASS's Conv2dWgrad). The
// other passes are left to the other entries.
#include <string>

#include "algos/registry.h"
#include "core/device_info.h"
#include "fftconv/status.hpp"
#include "igemm/igemm_wgrad.h"
#include "tuning/heuristics.h"

namespace fftconv::detail {

namespace {

#if FFTCONV_WITH_CUTLASS
class ImplicitGemmWgrad final : public ConvAlgo {
 public:
  explicit ImplicitGemmWgrad(const IgemmWgradGeometry& g) : g_(g) { prepare_igemm_wgrad(g_); }

  std::size_t workspace_size() const override { return g_.workspace_bytes(); }

  void run(const RunArgs& a, cudaStream_t stream, StageMarks* marks) override {
    launch_igemm_wgrad(g_, static_cast<const float*>(a.x), static_cast<const float*>(a.dy),
                       static_cast<float*>(a.out), a.workspace, a.alpha, a.beta, stream);
    if (marks) marks->mark("implicit_gemm", stream);
  }

  void fill_info(PlanInfo& info) const override {
    info.algo = Algo::kImplicitGemm;
    info.workspace_bytes = workspace_size();
    info.reason = igemm_wgrad_text(g_);
  }

  // A backward-filter plan has no filter input (Plan::set_filter refuses it before this).
  void set_filter(const void*, cudaStream_t) override {
    throw Error(Status::kInvalidArgument, "a backward-filter plan has no filter input");
  }
  void clear_filter() override {}
  bool has_filter() const override { return false; }
  std::size_t filter_bytes() const override { return 0; }

 private:
  IgemmWgradGeometry g_;
};
#endif

class ImplicitGemmFactory final : public AlgoFactory {
 public:
  ImplicitGemmFactory() : AlgoFactory("implicit_gemm", Algo::kImplicitGemm, Backend::kGpu) {}

  Support can_implement(const ConvDesc& d, const Options& o) const override {
#if !FFTCONV_WITH_CUTLASS
    (void)d;
    (void)o;
    return Support::no(Status::kNotSupported,
                       "the implicit-GEMM path was not built: this build found no CUTLASS headers "
                       "(pip install nvidia-cutlass, or set CUTLASS_ROOT, and configure again)");
#else
    if (o.pass != Pass::kBackwardFilter) {
      return Support::no(Status::kNotSupported,
                         std::string("the implicit-GEMM path implements the backward filter only, "
                                     "not ") +
                             pass_name(o.pass));
    }
    const Support s = igemm_wgrad_support(d);
    if (!s.ok()) return s;
    // Under Auto, wide tiles only: with 64 x 64 tiles (below 128 filters a group) it ran slower
    // than the engine's other choices on every such row measured (H100,
    // data/results/h100/2026-12-07b/RUNS.md, run 7: small3x3_c128_112_g4 0.795 ms against
    // cuDNN's 0.423, small7x7_c128_112_g4 1.993 against the FFT's 0.919, small3x3_c32_224 0.316
    // against 0.242).
    const IgemmWgradGeometry g = igemm_wgrad_geometry(d, current_sm_count());
    if (o.algo == Algo::kAuto && g.tile == igemm::Tile::kNarrow) {
      return Support::no(Status::kNotSupported,
                         "not tried: under Auto the implicit-GEMM backward filter takes 128 "
                         "filters a group or more (its wide tiles)");
    }
    const std::size_t need = g.workspace_bytes();
    if (need > o.workspace_limit) {
      return Support::no(Status::kOutOfMemory,
                         "the implicit-GEMM backward filter's channels-last copies need " +
                             std::to_string(need) + " bytes, over the workspace limit of " +
                             std::to_string(o.workspace_limit) + " bytes");
    }
    return Support::yes();
#endif
  }

  double estimate_us(const ConvDesc& d, const Options&, std::string* detail) const override {
    const IgemmWgradGeometry g = igemm_wgrad_geometry(d, current_sm_count());
    if (detail) {
      *detail = std::to_string(igemm::tile_m(g.tile)) + "x" +
                std::to_string(igemm::tile_n(g.tile)) + " tiles";
    }
    return estimate_igemm_wgrad_us(g, current_sm_count());
  }

  std::unique_ptr<ConvAlgo> create(const ConvDesc& d, const Options& o, bool,
                                   std::string* reason) const override {
    // A forced plan comes here without can_implement: what it refuses is an error here.
    const Support s = can_implement(d, o);
    if (!s.ok()) throw Error(s.status, s.reason + " [" + d.to_string() + "]");
#if FFTCONV_WITH_CUTLASS
    const IgemmWgradGeometry g = igemm_wgrad_geometry(d, current_sm_count());
    if (reason) *reason = igemm_wgrad_text(g);
    auto algo = std::make_unique<ImplicitGemmWgrad>(g);
    check_device_memory(*algo);
    return algo;
#else
    (void)reason;
    return nullptr;  // (can_implement refused above)
#endif
  }
};

}  // namespace

const AlgoFactory& implicit_gemm_factory() {
  static const ImplicitGemmFactory f;
  return f;
}

}  // namespace fftconv::detail
