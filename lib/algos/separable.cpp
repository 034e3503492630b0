// The separable entry of the implementation list (Algo::kSeparable): a kept filter whose planes
// are low rank runs as r pairs of 1-D passes in one kernel (lib/separable/separable_conv.h).
// The rank is a property of the filter's values, known only when set_filter keeps one, so:
//   - forced (Options::algo = kSeparable), the plan runs kept low-rank filters only: set_filter
//     with a filter that is not low rank, or a call with a per-call filter, is an error;
//   - under Auto, GPU forward and backward-data plans wrap the algorithm Auto built: set_filter
//     factors the filter on the host and keeps its factors where the separable estimate beats
//     the built algorithm's, else hands the filter to it; per-call filters always go to it.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <optional>

#include "algos/registry.h"
#include "core/check.h"
#include "core/device_buffer.h"
#include "core/host_values.h"
#include "filters/low_rank.h"
#include "separable/separable_conv.h"
#include "tuning/heuristics.h"

namespace fftconv::detail {

namespace {

Support separable_support(const ConvDesc& d, const Options& o, SeparableGeometry* g) {
  if (o.pass == Pass::kBackwardFilter) {
    return Support::no(Status::kNotSupported,
                       "the separable path implements the forward and backward-data passes; "
                       "backward filter needs the full gradient (Algo::kFft)");
  }
  if (d.border != Border::kZero && o.pass != Pass::kForward) {
    return Support::no(Status::kNotSupported,
                       std::string("the separable path applies a ") + border_name(d.border) +
                           " border in the forward pass only");
  }
  std::string why;
  SeparableGeometry local;
  if (!separable_geometry(d, o.pass, g ? g : &local, &why)) {
    return Support::no(Status::kNotSupported, why);
  }
  return Support::yes();
}

// The filter in fp32 on the host (set-up time: waits for `stream`).
std::vector<float> filter_on_host(const void* w, const ConvDesc& d, cudaStream_t stream) {
  const std::size_t elems = static_cast<std::size_t>(d.w_elems());
  const std::size_t esize = dtype_size(d.dtype);
  std::vector<unsigned char> raw(elems * esize);
  FFTCONV_CUDA_CHECK(cudaMemcpyAsync(raw.data(), w, raw.size(), cudaMemcpyDeviceToHost, stream));
  FFTCONV_CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<float> out(elems);
  decode_to_float(raw.data(), elems, d.dtype, out.data());
  return out;
}

class SeparableAlgo final : public ConvAlgo {
 public:
  /// `inner`: the algorithm Auto built (per-call filters, and kept filters the separable path
  /// does not take), with its estimate; null when the separable path was forced.
  SeparableAlgo(const ConvDesc& d, const Options& o, const SeparableGeometry& g,
                std::unique_ptr<ConvAlgo> inner, double inner_us)
      : d_(d), pass_(o.pass), g_(g), inner_(std::move(inner)), inner_us_(inner_us) {
    prepare_separable_kernels(d_.dtype);
    const bool fwd = pass_ == Pass::kForward;
    const auto i32 = [](std::int64_t v) { return static_cast<int>(v); };
    args_.g = g_;
    args_.out_planes = d_.n * (fwd ? d_.k : d_.c);
    args_.out_channels = i32(fwd ? d_.k : d_.c);
    args_.src_channels = i32(fwd ? d_.c : d_.k);
    args_.out_per_group = i32(fwd ? d_.k_per_group() : d_.c_per_group());
    args_.sources = i32(fwd ? d_.c_per_group() : d_.k_per_group());
    args_.factor_group_step = i32(d_.k_per_group() * d_.c_per_group());
    args_.factor_out_step = fwd ? i32(d_.c_per_group()) : 1;
    args_.factor_stride = fwd ? 1 : i32(d_.c_per_group());
  }
  ~SeparableAlgo() override { clear_filter(); }

  std::size_t workspace_size() const override { return inner_ ? inner_->workspace_size() : 0; }

  void run(const RunArgs& a, cudaStream_t stream, StageMarks* marks) override {
    // The kept factors serve calls that pass no filter at all (neither w nor its spectrum).
    if (factors_ && a.w == nullptr && a.w_spectrum == nullptr) {
      SeparableArgs s = args_;
      s.src = pass_ == Pass::kForward ? a.x : a.dy;
      s.bias = pass_ == Pass::kForward ? a.bias : nullptr;
      s.out = a.out;
      s.factors = static_cast<const float*>(factors_.get());
      s.rank = rank_;
      launch_separable_conv(s, d_.dtype, stream);
      fence_.mark(stream);
      if (marks) marks->mark("separable", stream);
      return;
    }
    if (!inner_) {
      throw Error(Status::kInvalidArgument,
                  "the separable path (Algo::kSeparable) runs a kept filter only: call "
                  "set_filter with a low-rank filter and pass w = nullptr [" + d_.to_string() +
                      "]");
    }
    inner_->run(a, stream, marks);
  }

  void fill_info(PlanInfo& info) const override {
    if (inner_) {
      inner_->fill_info(info);
      return;
    }
    info.algo = Algo::kSeparable;
    info.workspace_bytes = 0;
  }

  void set_filter(const void* w, cudaStream_t stream) override {
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    FFTCONV_CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
    if (capture != cudaStreamCaptureStatusNone) {
      if (!inner_) {
        throw Error(Status::kInvalidArgument,
                    "set_filter on a separable plan factors the filter on the host, which a "
                    "stream being captured cannot wait for: keep the filter before the capture [" +
                        d_.to_string() + "]");
      }
      hand_to_inner(w, stream, "not factored: set while its stream was being captured");
      return;
    }
    // Where even rank 1 is estimated slower than the built algorithm, the filter is not read
    // back and factored: set_filter stays asynchronous, as the built algorithm's is.
    if (inner_) {
      const double best_us = estimate_separable_us(d_, pass_, g_, 1);
      if (best_us >= inner_us_) {
        hand_to_inner(w, stream, "not factored: rank 1 estimated at " + us_text(best_us) +
                                     " against " + us_text(inner_us_));
        return;
      }
    }
    const std::vector<float> host = filter_on_host(w, d_, stream);
    std::optional<LowRankFilter> lr;
    std::string why;
    try {
      LowRankOptions lo;
      lo.max_rank = kMaxSeparableRank;
      lo.tolerance = low_rank_tolerance(d_.dtype);
      lr = low_rank_filter(host.data(), d_, lo);
    } catch (const Error& e) {
      if (!inner_) throw;
      why = e.what();
    }
    if (lr) {
      const double us = estimate_separable_us(d_, pass_, g_, std::max(lr->max_rank, 1));
      if (!inner_ || us < inner_us_) {
        keep_factors(*lr, stream);
        note_ = "separable, rank " + std::to_string(lr->max_rank) + ", factors' rel error " +
                error_text(lr->worst_rel_error) + ", " + separable_kernel_text(g_) + " (" + us_text(us) +
                (inner_ ? " estimated against " + us_text(inner_us_) + " with the filter per call"
                        : std::string(" estimated")) +
                ")";
        if (inner_) inner_->clear_filter();
        return;
      }
      why = "rank " + std::to_string(lr->max_rank) + " estimated at " + us_text(us) +
            " against " + us_text(inner_us_);
    } else if (why.empty()) {
      why = "a plane is not of rank " + std::to_string(kMaxSeparableRank) + " or less";
    }
    if (!inner_) {
      throw Error(Status::kNotSupported,
                  "the separable path (Algo::kSeparable) needs a filter whose every plane is of "
                  "rank " + std::to_string(kMaxSeparableRank) + " or less (within " +
                      error_text(low_rank_tolerance(d_.dtype)) + " of its norm): " + why +
                      " [" + d_.to_string() + "]");
    }
    hand_to_inner(w, stream, "not separable: " + why);
  }

  void clear_filter() override {
    drop_factors();
    note_.clear();
    if (inner_) inner_->clear_filter();
  }
  bool has_filter() const override {
    return static_cast<bool>(factors_) || (inner_ && inner_->has_filter());
  }
  std::size_t filter_bytes() const override {
    return factors_ ? factors_.bytes() : inner_ ? inner_->filter_bytes() : 0;
  }
  // A shared filter spectrum is the built algorithm's (the FFT path's); the 1-D passes have none.
  std::size_t filter_spectrum_size() const override {
    return inner_ ? inner_->filter_spectrum_size() : 0;
  }
  std::string filter_spectrum_layout() const override {
    return inner_ ? inner_->filter_spectrum_layout() : std::string();
  }
  void filter_spectrum(const void* w, void* spectrum, void* workspace,
                       cudaStream_t stream) override {
    FFTCONV_ASSERT(inner_, "filter_spectrum on a forced separable plan");
    inner_->filter_spectrum(w, spectrum, workspace, stream);
  }
  std::string kept_filter_note() const override {
    if (factors_ || !inner_) return note_;
    const std::string inner = inner_->kept_filter_note();
    return note_.empty() ? inner : (inner.empty() ? "" : inner + "; ") + note_;
  }

 private:
  static std::string error_text(double e) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.1e", e);
    return buf;
  }

  void hand_to_inner(const void* w, cudaStream_t stream, std::string why) {
    drop_factors();
    inner_->set_filter(w, stream);
    note_ = std::move(why);
  }

  void drop_factors() {
    fence_.wait();
    factors_.reset();
    rank_ = 0;
  }

  // The factors of every plane, padded to the kernel's runs, ranks below the largest padded with
  // zero factors; flipped for the backward pass (a correlation with the flipped filter).
  void keep_factors(const LowRankFilter& lr, cudaStream_t stream) {
    const int rank = std::max(lr.max_rank, 1);
    const int fh = separable_taps_padded(d_.r), fw = separable_taps_padded(d_.s);
    const bool flip = pass_ == Pass::kBackwardData;
    std::vector<float> host(separable_factor_floats(
        static_cast<std::int64_t>(lr.planes.size()), rank, d_.r, d_.s), 0.0f);
    for (std::size_t p = 0; p < lr.planes.size(); ++p) {
      const LowRankPlane& pl = lr.planes[p];
      for (int i = 0; i < pl.rank; ++i) {
        float* col = host.data() + (p * rank + i) * std::size_t(fh + fw);
        float* row = col + fh;
        for (std::int64_t t = 0; t < d_.r; ++t) {
          col[t] = pl.cols[i * d_.r + (flip ? d_.r - 1 - t : t)];
        }
        for (std::int64_t t = 0; t < d_.s; ++t) {
          row[t] = pl.rows[i * d_.s + (flip ? d_.s - 1 - t : t)];
        }
      }
    }
    drop_factors();
    factors_ = DeviceBuffer(host.size() * sizeof(float));
    FFTCONV_CUDA_CHECK(cudaMemcpyAsync(factors_.get(), host.data(), factors_.bytes(),
                                       cudaMemcpyHostToDevice, stream));
    FFTCONV_CUDA_CHECK(cudaStreamSynchronize(stream));  // `host` goes out of scope
    rank_ = rank;
  }

  ConvDesc d_;
  Pass pass_;
  SeparableGeometry g_;
  std::unique_ptr<ConvAlgo> inner_;
  double inner_us_ = 0.0;
  SeparableArgs args_;
  DeviceBuffer factors_;  // kept factors (null: none kept, or the filter went to inner_)
  int rank_ = 0;
  KeptFilterFence fence_;
  std::string note_;  // how the kept filter runs
};

class SeparableFactory final : public AlgoFactory {
 public:
  SeparableFactory() : AlgoFactory("separable", Algo::kSeparable, Backend::kGpu) {}
  Support can_implement(const ConvDesc& d, const Options& o) const override {
    if (o.algo != Algo::kSeparable) {
      return Support::no(Status::kNotSupported,
                         "runs kept low-rank filters only; Auto weighs it when set_filter keeps "
                         "one");
    }
    return separable_support(d, o, nullptr);
  }
  // Its loads map rows and columns outside the input through the border (forward).
  bool loads_border(Pass pass) const override { return pass == Pass::kForward; }
  double estimate_us(const ConvDesc& d, const Options& o, std::string* detail) const override {
    SeparableGeometry g;
    if (!separable_geometry(d, o.pass, &g, nullptr)) return 1e30;
    if (detail) *detail = "rank 1";
    return estimate_separable_us(d, o.pass, g, 1);
  }
  std::unique_ptr<ConvAlgo> create(const ConvDesc& d, const Options& o, bool,
                                   std::string* reason) const override {
    SeparableGeometry g;
    const Support s = separable_support(d, o, &g);
    if (!s.ok()) throw Error(s.status, s.reason);
    if (reason) *reason = "separable, " + separable_kernel_text(g);
    return std::make_unique<SeparableAlgo>(d, o, g, nullptr, 0.0);
  }
};

}  // namespace

const AlgoFactory& separable_factory() {
  static const SeparableFactory f;
  return f;
}

std::unique_ptr<ConvAlgo> with_kept_separable(const ConvDesc& d, const Options& o,
                                              std::unique_ptr<ConvAlgo> built, double built_us) {
  SeparableGeometry g;
  if (!o.kept_separable || !separable_support(d, o, &g).ok()) return built;
  return std::make_unique<SeparableAlgo>(d, o, g, std::move(built), built_us);
}

}  // namespace fftconv::detail
