// The fused FFT entry of the implementation list (Algo::kFftFused): the whole convolution of a
// plane in one kernel, F threads of a block transforming it in registers and shared memory
// (lib/fused/fused_conv.h). Serves the problems the small-plane networks run: one input and one
// output channel per group (depthwise, single-channel heatmaps), FFT planes up to 128x128, every
// pass (the backward filter sums each channel's products over the batch in the frequency
// domain, lib/fused/fused_conv.h), at the smallest of the sizes kFusedSizes lists that holds the
// plane's exact period.
#include <algorithm>
#include <iterator>
#include <string>

#include "algos/registry.h"
#include "core/check.h"
#include "core/device_buffer.h"
#include "core/device_info.h"
#include "fused/fused_conv.h"
#include "geometry/fft_geometry.h"
#include "stages/partial_sum.h"
#include "tuning/heuristics.h"

namespace fftconv::detail {

namespace {

std::string size_text(int size) {
  const std::string f = std::to_string(size);
  return f + "x" + f;
}

DType wgrad_out_dtype(const ConvDesc& d, const Options& o) {
  return o.dw_fp32 ? DType::kF32 : d.dtype;
}

// How a pass's planes are transformed: whole, at `size`, or in tiles of size x size.
struct FusedChoice {
  int size = -1;
  bool tiled = false;
  int tiles_h = 1, tiles_w = 1;
};

std::string choice_text(const FusedChoice& c) {
  return size_text(c.size) + (c.tiled ? ", " + std::to_string(c.tiles_h) + "x" +
                                            std::to_string(c.tiles_w) + " tiles a plane"
                                      : std::string());
}

// Tiles of size x size where the pass takes them, else none (size -1).
FusedChoice tiled_choice(const ConvDesc& d, Pass pass, int size) {
  FusedChoice c;
  if (fused_tiles(d, pass, size, &c.tiles_h, &c.tiles_w)) {
    c.size = size;
    c.tiled = true;
  }
  return c;
}

// Auto takes tiles only where consecutive windows move on by at least half the transform's
// extent along both axes (the landmark rows' 52 of 96; outputs times the stride), or an axis
// has one tile: the estimate costs a tile as a plane and its window's reads as the source's,
// which holds where windows overlap little; smaller steps (4x4 outputs of a 48x48 transform)
// redo their windows many times over and are not measured.
bool worth_tiling(const ConvDesc& d, Pass pass, int size) {
  FusedTiling t;
  fused_tiled_conv_args(d, pass, size, &t);
  return (t.tiles_h == 1 || 2 * t.tile_h * t.step_h >= size) &&
         (t.tiles_w == 1 || 2 * t.tile_w * t.step_w >= size);
}

// The backward filter's arguments for a choice (whole planes, or tiles into `tiling`).
FusedWgradArgs wgrad_args(const ConvDesc& d, const Options& o, const FusedChoice& c,
                          FusedTiling* tiling) {
  const DType out = wgrad_out_dtype(d, o);
  const int sms = current_sm_count();
  return c.tiled ? fused_tiled_wgrad_args(d, c.size, out, sms, tiling)
                 : fused_wgrad_args(d, c.size, out, sms);
}

double choice_us(const ConvDesc& d, const Options& o, const FusedChoice& c) {
  if (o.pass == Pass::kBackwardFilter) {
    FusedTiling t;
    const FusedWgradArgs w = wgrad_args(d, o, c, &t);
    return estimate_fused_wgrad_us(d, c.size, w.pairs(), w.per_chunk, w.chunks);
  }
  return estimate_fused_us(d, c.size, o.pass, c.tiles_h * c.tiles_w);
}

// The pass's transform: the whole plane at the smallest of kFusedSizes that holds its period,
// or (forward and backward filter, and backward data at unit stride) tiles of a smaller size
// where the estimate says they pay (planes too few to fill the GPU with one block each); on a
// plan that asks for
// the fused path by name, the size Options force (fft_h = fft_w, one of kFusedSizes: the whole
// plane at or above the period, tiles below it; under Auto a forced size is the full-image
// FFT's, as for the tiled path). Size -1 with `why` set when there is none.
FusedChoice pass_choice(const ConvDesc& d, const Options& o, std::string* why = nullptr) {
  const bool wgrad = o.pass == Pass::kBackwardFilter;
  const int least = wgrad ? fused_wgrad_size(d) : fused_size(d);
  if (least < 0) {
    if (why) {
      *why = "the fused FFT covers planes up to " + std::to_string(kMaxFusedExtent) + "x" +
             std::to_string(kMaxFusedExtent) + "; " + d.to_string() +
             (wgrad ? " (backward filter)" : "") + " needs more than that";
    }
    return {};
  }
  FusedChoice whole;
  whole.size = least;
  if (o.algo != Algo::kFftFused || (o.fft_h == 0 && o.fft_w == 0)) {
    FusedChoice best = whole;
    double best_us = choice_us(d, o, whole);
    // The backward filter's tiles are not Auto's to take: measured on an H100, the 64 heatmaps'
    // 256 pairs of 96x96 took 0.043 ms against 0.038 for their 64 slots of 128x128, where the
    // estimate ranked them first (data/results/h100/2026-12-05-fused, run 5); forced, they run.
    if (wgrad) return best;
    for (const int f : kFusedSizes) {
      if (f >= least) break;
      const FusedChoice c = tiled_choice(d, o.pass, f);
      if (c.size < 0 || !worth_tiling(d, o.pass, f)) continue;
      const double us = choice_us(d, o, c);
      if (us < best_us) best = c, best_us = us;
    }
    return best;
  }
  const bool listed =
      std::find(std::begin(kFusedSizes), std::end(kFusedSizes), o.fft_h) != std::end(kFusedSizes);
  if (o.fft_h == o.fft_w && listed) {
    const int forced = static_cast<int>(o.fft_h);
    if (forced >= least) {
      FusedChoice c;
      c.size = forced;
      return c;
    }
    const FusedChoice c = tiled_choice(d, o.pass, forced);
    if (c.size > 0) return c;
  }
  if (why) {
    std::string sizes;
    for (const int f : kFusedSizes) {
      if (f >= least || tiled_choice(d, o.pass, f).size > 0) {
        sizes += (sizes.empty() ? "" : ", ") + std::to_string(f);
      }
    }
    *why = "the fused FFT takes one size for both axes, one of its sizes at or above the "
           "plane's period, or below it in tiles where the pass takes them (" +
           sizes + " for " + d.to_string() + (wgrad ? ", backward filter" : "") +
           "), not the forced " + std::to_string(o.fft_h) + "x" + std::to_string(o.fft_w);
  }
  return {};
}

std::size_t wgrad_workspace(const ConvDesc& d, const FusedWgradArgs& a) {
  return fused_wgrad_scratch_bytes(a) + fused_wgrad_partial_bytes(d, a);
}

Support fused_can_implement(const ConvDesc& d, const Options& o) {
  const bool wgrad = o.pass == Pass::kBackwardFilter;
  if (d.c_per_group() != 1 || d.k_per_group() != 1) {
    return Support::no(Status::kNotSupported,
                       "the fused FFT takes one input and one output channel per group "
                       "(depthwise or single-channel), not " +
                           std::to_string(d.c_per_group()) + " -> " +
                           std::to_string(d.k_per_group()) + " per group of " + d.to_string());
  }
  std::string why;
  const FusedChoice choice = pass_choice(d, o, &why);
  const int size = choice.size;
  if (size < 0) return Support::no(Status::kNotSupported, why);
  FusedTiling tiling;
  const std::size_t bytes = wgrad ? wgrad_workspace(d, wgrad_args(d, o, choice, &tiling))
                                  : fused_factor_bytes(d.k, size);
  if (bytes > o.workspace_limit) {
    return Support::no(Status::kOutOfMemory,
                       "the fused FFT " + size_text(size) + " needs " + std::to_string(bytes) +
                           (wgrad ? " bytes of scratch spectra" : " bytes of filter factors") +
                           ", over the workspace limit of " + std::to_string(o.workspace_limit) +
                           " bytes");
  }
  // The kernels index one plane and one grid (planes or tiles) in 32 bits.
  const std::int64_t planes = (o.pass == Pass::kForward ? d.n * d.k : d.n * d.c) *
                              std::int64_t(choice.tiles_h) * choice.tiles_w;
  if (planes > (std::int64_t{1} << 31) - 2 || d.h * d.w > (std::int64_t{1} << 30) ||
      d.out_h() * d.out_w() > (std::int64_t{1} << 30)) {
    return Support::no(Status::kNotSupported, "the fused FFT indexes in 32 bits: " + d.to_string());
  }
  return Support::yes();
}

class FusedFftAlgo final : public ConvAlgo {
 public:
  FusedFftAlgo(const ConvDesc& d, const Options& o)
      : d_(d),
        pass_(o.pass),
        choice_(pass_choice(d, o)),
        size_(choice_.size),
        conv_(choice_.tiled && o.pass != Pass::kBackwardFilter
                  ? fused_tiled_conv_args(d, o.pass, size_, &tiling_)
                  : fused_conv_args(d, o.pass, size_)),
        filter_(fused_filter_args(d, o.pass, size_)),
        overlap_filter_(fused_conv_can_overlap_filter(size_)),
        sum_dependent_(partial_sum_can_be_dependent()) {
    prepare_fused_kernels();
    if (pass_ == Pass::kBackwardFilter) {
      wgrad_ = wgrad_args(d, o, choice_, &tiling_);
      workspace_ = wgrad_workspace(d, wgrad_);
    } else {
      workspace_ = align_up(fused_factor_bytes(d_.k, size_));
    }
  }
  ~FusedFftAlgo() override { clear_filter(); }

  std::size_t workspace_size() const override { return workspace_; }

  void run(const RunArgs& a, cudaStream_t stream, StageMarks* marks) override {
    if (pass_ == Pass::kBackwardFilter) {
      FusedWgradArgs w = wgrad_;
      w.x = a.x;
      w.dy = a.dy;
      w.dw = a.out;
      w.scratch = a.workspace;
      w.partial = reinterpret_cast<float*>(static_cast<char*>(a.workspace) +
                                           fused_wgrad_scratch_bytes(wgrad_));
      w.alpha = a.alpha;
      w.beta = a.beta;
      w.sum_after_slots = w.chunks > 1 && sum_dependent_;
      launch_fused_wgrad(w, stream, choice_.tiled ? &tiling_ : nullptr);
      if (marks) marks->mark("fused", stream);
      return;
    }
    FusedConvArgs c = conv_;
    if (a.w) {
      enqueue_factors(a.w, a.workspace, stream);
      if (marks) marks->mark("filter", stream);
      c.factors = a.workspace;
      // The convolution kernel overlaps the filter kernel (programmatic dependent launch) unless
      // a stage mark stands between them.
      c.after_filter = overlap_filter_ && marks == nullptr;
    } else {
      FFTCONV_ASSERT(kept_, "a pass without a filter and none kept");
      kept_fence_.mark(stream);
      c.factors = kept_.get();
    }
    c.src = pass_ == Pass::kForward ? a.x : a.dy;
    c.bias = pass_ == Pass::kForward ? a.bias : nullptr;
    c.out = a.out;
    launch_fused_conv(c, stream, choice_.tiled ? &tiling_ : nullptr);
    if (marks) marks->mark("fused", stream);
  }

  void fill_info(PlanInfo& info) const override {
    info.algo = Algo::kFftFused;
    info.fft_h = info.fft_w = size_;
    info.tiles_h = choice_.tiles_h;
    info.tiles_w = choice_.tiles_w;
    info.workspace_bytes = workspace_;
  }

  void set_filter(const void* w, cudaStream_t stream) override {
    if (!kept_) kept_ = DeviceBuffer(fused_factor_bytes(d_.k, size_));
    enqueue_factors(w, kept_.get(), stream);
    kept_fence_.mark(stream);
  }
  void clear_filter() override {
    kept_fence_.wait();
    kept_.reset();
  }
  bool has_filter() const override { return static_cast<bool>(kept_); }
  std::size_t filter_bytes() const override { return kept_ ? kept_.bytes() : 0; }

 private:
  void enqueue_factors(const void* w, void* factors, cudaStream_t stream) const {
    FusedFilterArgs f = filter_;
    f.w = w;
    f.factors = factors;
    launch_fused_filter_factors(f, stream);
  }

  ConvDesc d_;
  Pass pass_;
  FusedChoice choice_;
  int size_;
  FusedTiling tiling_;  ///< choice_.tiled: the tiles (before conv_, which fills them)
  FusedConvArgs conv_;
  FusedFilterArgs filter_;
  bool overlap_filter_;  ///< per-call filters: the convolution kernel launched as a dependent
  bool sum_dependent_;   ///< the backward filter's slice sum launched as a dependent
  FusedWgradArgs wgrad_;
  std::size_t workspace_ = 0;
  DeviceBuffer kept_;
  KeptFilterFence kept_fence_;
};

class FftFusedFactory final : public AlgoFactory {
 public:
  FftFusedFactory() : AlgoFactory("fft_fused", Algo::kFftFused, Backend::kGpu) {}
  Support can_implement(const ConvDesc& d, const Options& o) const override {
    return fused_can_implement(d, o);
  }
  double estimate_us(const ConvDesc& d, const Options& o, std::string* detail) const override {
    const FusedChoice c = pass_choice(d, o);
    if (detail) *detail = choice_text(c);
    return choice_us(d, o, c);
  }
  std::unique_ptr<ConvAlgo> create(const ConvDesc& d, const Options& o, bool,
                                   std::string* reason) const override {
    const Support s = fused_can_implement(d, o);
    if (!s.ok()) throw Error(s.status, s.reason);
    if (reason) {
      const FusedChoice c = pass_choice(d, o);
      *reason = "fused fft " + choice_text(c);
      if (o.algo == Algo::kFftFused && o.fft_h != 0) *reason += " (forced by options)";
      if (o.pass == Pass::kBackwardFilter) {
        FusedTiling t;
        const FusedWgradArgs w = wgrad_args(d, o, c, &t);
        const std::string unit = c.tiled ? " tile" : " image";
        *reason += ", the batch in " + std::to_string(w.chunks) + " slice" +
                   (w.chunks > 1 ? "s" : "") + " of up to " + std::to_string(w.per_chunk) +
                   unit + (w.per_chunk > 1 ? "s" : "") + " per channel";
      }
    }
    auto algo = std::make_unique<FusedFftAlgo>(d, o);
    check_device_memory(*algo);
    return algo;
  }
};

}  // namespace

const AlgoFactory& fft_fused_factory() {
  static const FftFusedFactory f;
  return f;
}

}  // namespace fftconv::detail
