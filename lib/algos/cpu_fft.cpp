// The CPU backend as an entry of the implementation list: the host FFT engine (lib/host, FFTW)
// behind the ConvAlgo interface. Tensors are host memory; calls run to completion before they
// return and the stream is ignored.
#include <algorithm>
#include <chrono>

#include "algos/registry.h"
#include "core/timing.h"
#include "filters/low_rank.h"
#include "host/host_conv.h"
#include "host/host_separable.h"
#include "host/host_threads.h"
#include "tuning/host_heuristics.h"

namespace fftconv::detail {

namespace {

class HostAlgo final : public ConvAlgo {
 public:
  HostAlgo(std::unique_ptr<HostConv> host, const ConvDesc& d, Pass pass)
      : host_(std::move(host)), d_(d), pass_(pass) {}

  std::size_t workspace_size() const override { return 0; }

  void run(const RunArgs& a, cudaStream_t, StageMarks*) override {
    // The kept filter runs as r pairs of 1-D passes where set_filter found it low rank.
    if (separable_ && a.w == nullptr && a.w_spectrum == nullptr) {
      if (pass_ == Pass::kForward) {
        separable_->forward(static_cast<const float*>(a.x), static_cast<const float*>(a.bias),
                            static_cast<float*>(a.out));
      } else {
        separable_->backward_data(static_cast<const float*>(a.dy), static_cast<float*>(a.out));
      }
      return;
    }
    switch (pass_) {
      case Pass::kForward:
        host_->forward(fwd_args(a), nullptr);
        break;
      case Pass::kBackwardData:
        host_->backward_data(static_cast<const float*>(a.dy), static_cast<const float*>(a.w),
                             static_cast<const float*>(a.w_spectrum), static_cast<float*>(a.out));
        break;
      case Pass::kBackwardFilter:
        host_->backward_filter(static_cast<const float*>(a.x), static_cast<const float*>(a.dy),
                               static_cast<float*>(a.out), a.alpha, a.beta);
        break;
    }
  }

  void fill_info(PlanInfo& info) const override { host_->fill_info(info); }

  // A low-rank filter whose 1-D passes cost less than the FFT with a kept spectrum is kept as
  // its factors; any other as its spectrum.
  void set_filter(const void* w, cudaStream_t) override {
    const float* wf = static_cast<const float*>(w);
    separable_.reset();
    note_.clear();
    if (pass_ != Pass::kBackwardFilter) {
      std::optional<LowRankFilter> lr;
      try {
        lr = low_rank_filter(wf, d_);
      } catch (const Error& e) {
        note_ = std::string("fft spectrum (not separable: ") + e.what() + ")";
      }
      if (lr) {
        PlanInfo info;
        host_->fill_info(info);
        std::string why;
        if (host_separable_pays(d_, pass_, lr->max_rank, info.fft_h, info.fft_w, &why)) {
          separable_ = std::make_unique<HostSeparable>(d_, std::move(*lr), host_thread_count());
          note_ = separable_->describe() + "; " + why;
          host_->clear_filter();
          return;
        }
        note_ = "fft spectrum (" + why + ")";
      } else if (note_.empty()) {
        note_ = "fft spectrum (not separable: a plane is not low rank)";
      }
    }
    host_->set_filter(wf);
  }
  void clear_filter() override {
    separable_.reset();
    note_.clear();
    host_->clear_filter();
  }
  bool has_filter() const override { return separable_ || host_->has_filter(); }
  std::size_t filter_bytes() const override {
    return separable_ ? separable_->bytes() : host_->filter_bytes();
  }
  std::string kept_filter_note() const override { return note_; }
  std::size_t filter_spectrum_size() const override { return host_->filter_spectrum_size(); }
  std::string filter_spectrum_layout() const override { return host_->filter_spectrum_layout(); }
  void filter_spectrum(const void* w, void* spectrum, void*, cudaStream_t) override {
    host_->filter_spectrum(static_cast<const float*>(w), static_cast<float*>(spectrum));
  }

  // The host clock times the stages: one warm-up, then the median per stage.
  std::vector<StageTime> profile_forward(const RunArgs& a, cudaStream_t, int iters) override {
    const HostFwdArgs args = fwd_args(a);
    host_->forward(args, nullptr);
    std::vector<std::vector<StageTime>> runs(static_cast<std::size_t>(iters));
    for (std::vector<StageTime>& r : runs) host_->forward(args, &r);
    std::vector<StageTime> out;
    for (std::size_t s = 0; s < runs[0].size(); ++s) {
      std::vector<double> ms;
      for (const std::vector<StageTime>& r : runs) ms.push_back(r[s].ms);
      out.push_back(StageTime{runs[0][s].stage, median(std::move(ms))});
    }
    return out;
  }

 private:
  static HostFwdArgs fwd_args(const RunArgs& a) {
    return {static_cast<const float*>(a.x), static_cast<const float*>(a.w),
            static_cast<const float*>(a.bias), static_cast<float*>(a.out),
            static_cast<const float*>(a.w_spectrum)};
  }

  std::unique_ptr<HostConv> host_;
  ConvDesc d_;
  Pass pass_;
  std::unique_ptr<HostSeparable> separable_;  // the kept filter, when low rank and cheaper
  std::string note_;                          // how the kept filter runs
};

class CpuFftFactory final : public AlgoFactory {
 public:
  CpuFftFactory() : AlgoFactory("cpu_fft", Algo::kFft, Backend::kCpu) {}
  Support can_implement(const ConvDesc& d, const Options& o) const override {
    return host_can_implement(d, o);
  }
  // The only host algorithm: there is nothing to rank it against.
  double estimate_us(const ConvDesc&, const Options&, std::string* detail) const override {
    if (detail) *detail = "the only cpu algorithm";
    return 0.0;
  }
  std::unique_ptr<ConvAlgo> create(const ConvDesc& d, const Options& o, bool,
                                   std::string* reason) const override {
    return std::make_unique<HostAlgo>(make_host_conv(d, o, reason), d, o.pass);
  }
};

}  // namespace

const AlgoFactory& cpu_fft_factory() {
  static const CpuFftFactory f;
  return f;
}

}  // namespace fftconv::detail
