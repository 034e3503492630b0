// The direct entry of the implementation list (Algo::kDirect): every output as the sum over its
// taps, one kernel (lib/direct/direct_conv.h). For problems so small that the FFT's launches and
// passes cost more than the multiply-adds: one or a few planes under a large filter (the
// landmark heatmap's 45x45 Gaussian on a 96x96 plane). Forward and backward data (unit stride).
#include <cstdio>
#include <string>

#include "algos/registry.h"
#include "core/check.h"
#include "core/device_info.h"
#include "direct/direct_conv.h"
#include "stages/partial_sum.h"
#include "tuning/heuristics.h"

namespace fftconv::detail {

namespace {

constexpr std::int64_t kAutoMinTaps = 49;  // 7x7

std::string geometry_text(const DirectGeometry& g) {
  char buf[96];
  std::snprintf(buf, sizeof(buf), "tiles of %dx%d outputs, %d threads a strip of %d", g.tile_h,
                g.tile_w, g.split, direct::kStrip);
  return buf;
}

std::string wgrad_text(const DirectWgradGeometry& g) {
  if (g.rows) {
    char buf[160];
    std::snprintf(buf, sizeof(buf),
                  "rows: blocks of %d filter rows x %d runs of %d taps, tiles of %d columns, "
                  "%d part%s of %d output rows",
                  g.rows_b, g.groups_s, direct::kWgradTaps, g.tile_q, g.parts,
                  g.parts > 1 ? "s" : "", g.rows_per_part);
    return buf;
  }
  return "blocks of " + std::to_string(direct::kWgradTaps) + " taps, " +
         std::to_string(direct::kThreads) + " threads summing over " +
         std::to_string(std::int64_t(g.n) * g.out_h * g.out_w) + " positions";
}

class DirectAlgo final : public ConvAlgo {
 public:
  // Forward and backward data.
  DirectAlgo(const ConvDesc& d, Pass pass, const DirectGeometry& g) : d_(d), pass_(pass), g_(g) {
    prepare_direct(d.dtype);
  }
  // Backward filter, dw in `out_dtype`.
  DirectAlgo(const ConvDesc& d, const DirectWgradGeometry& g, DType out_dtype)
      : d_(d),
        pass_(Pass::kBackwardFilter),
        wg_(g),
        out_dtype_(out_dtype),
        sum_dependent_(g.rows && g.parts > 1 && partial_sum_can_be_dependent()) {
    if (wg_.rows) prepare_direct_wgrad();
  }

  std::size_t workspace_size() const override {
    return pass_ == Pass::kBackwardFilter ? wg_.partial_bytes() : 0;
  }

  void run(const RunArgs& a, cudaStream_t stream, StageMarks* marks) override {
    if (pass_ == Pass::kBackwardFilter) {
      launch_direct_wgrad(wg_, a.x, a.dy, a.out, static_cast<float*>(a.workspace), a.alpha, a.beta,
                          d_.dtype, out_dtype_, sum_dependent_, stream);
    } else {
      DirectArgs args;
      args.w = a.w ? a.w : kept_.use(stream);
      args.src = pass_ == Pass::kForward ? a.x : a.dy;
      args.bias = pass_ == Pass::kForward ? a.bias : nullptr;
      args.out = a.out;
      launch_direct(g_, args, d_.dtype, stream);
    }
    if (marks) marks->mark("direct", stream);
  }

  void fill_info(PlanInfo& info) const override {
    info.algo = Algo::kDirect;
    info.workspace_bytes = workspace_size();
    info.reason = pass_ == Pass::kBackwardFilter ? wgrad_text(wg_) : geometry_text(g_);
  }

  void set_filter(const void* w, cudaStream_t stream) override {
    kept_.set(d_, pass_, w, stream);
  }
  void clear_filter() override { kept_.clear(); }
  bool has_filter() const override { return kept_.has(); }
  std::size_t filter_bytes() const override { return kept_.bytes(); }

 private:
  ConvDesc d_;
  Pass pass_;
  DirectGeometry g_;
  DirectWgradGeometry wg_;
  DType out_dtype_ = DType::kF32;
  bool sum_dependent_ = false;  ///< rows layout: the partial sum as the kernel's dependent
  KeptFilterCopy kept_;
};

class DirectFactory final : public AlgoFactory {
 public:
  DirectFactory() : AlgoFactory("direct", Algo::kDirect, Backend::kGpu) {}
  Support can_implement(const ConvDesc& d, const Options& o) const override {
    // Small filters are cuDNN's (implicit GEMM, Winograd): under Auto this path takes filters of
    // kAutoMinTaps taps and more, where the FFT's fixed costs are what it saves.
    if (o.algo == Algo::kAuto && d.r * d.s < kAutoMinTaps) {
      return Support::no(Status::kNotSupported,
                         "not tried: filters under " + std::to_string(kAutoMinTaps) +
                             " taps are left to the FFT and cuDNN under Auto");
    }
    return direct_support(d, o.pass);
  }
  double estimate_us(const ConvDesc& d, const Options& o, std::string* detail) const override {
    if (o.pass == Pass::kBackwardFilter) {
      const DirectWgradGeometry g =
          choose_direct_wgrad_geometry(d, current_sm_count(), o.workspace_limit);
      if (detail) *detail = g.rows ? "filter rows" : "filter taps";
      return estimate_direct_wgrad_us(d, g, current_sm_count());
    }
    const DirectGeometry g = choose_direct_geometry(d, o.pass, current_sm_count());
    if (detail) *detail = std::to_string(g.tile_h) + "x" + std::to_string(g.tile_w) + " tiles";
    return estimate_direct_kernel_us(d, g, current_sm_count());
  }
  std::unique_ptr<ConvAlgo> create(const ConvDesc& d, const Options& o, bool,
                                   std::string* reason) const override {
    if (o.pass == Pass::kBackwardFilter) {
      const DirectWgradGeometry g =
          choose_direct_wgrad_geometry(d, current_sm_count(), o.workspace_limit);
      if (reason) *reason = wgrad_text(g);
      return std::make_unique<DirectAlgo>(d, g, o.dw_fp32 ? DType::kF32 : d.dtype);
    }
    const DirectGeometry g = choose_direct_geometry(d, o.pass, current_sm_count());
    if (reason) *reason = geometry_text(g);
    return std::make_unique<DirectAlgo>(d, o.pass, g);
  }
};

}  // namespace

const AlgoFactory& direct_factory() {
  static const DirectFactory f;
  return f;
}

}  // namespace fftconv::detail
