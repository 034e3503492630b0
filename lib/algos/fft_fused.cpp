// The fused FFT entry of the implementation list (Algo::kFftFused): the whole convolution of a
// plane in one kernel, F threads of a block transforming it in registers and shared memory
// (lib/fused/fused_conv.h). Serves the problems the small-plane networks run: one input and one
// output channel per group (depthwise, single-channel heatmaps), FFT planes up to 128x128, the
// forward and backward-data passes.
#include <string>

#include "algos/registry.h"
#include "core/check.h"
#include "core/device_buffer.h"
#include "fused/fused_conv.h"
#include "geometry/fft_geometry.h"
#include "tuning/heuristics.h"

namespace fftconv::detail {

namespace {

std::string size_text(int log_f) {
  const std::string f = std::to_string(std::int64_t{1} << log_f);
  return f + "x" + f;
}

Support fused_can_implement(const ConvDesc& d, const Options& o) {
  if (o.pass == Pass::kBackwardFilter) {
    return Support::no(Status::kNotSupported,
                       "the fused FFT implements the forward and backward-data passes, not wgrad; "
                       "use the full-image FFT (Algo::kFft)");
  }
  if (d.c_per_group() != 1 || d.k_per_group() != 1) {
    return Support::no(Status::kNotSupported,
                       "the fused FFT takes one input and one output channel per group "
                       "(depthwise or single-channel), not " +
                           std::to_string(d.c_per_group()) + " -> " +
                           std::to_string(d.k_per_group()) + " per group of " + d.to_string());
  }
  const int log_f = fused_log_size(d);
  if (log_f < 0) {
    return Support::no(Status::kNotSupported,
                       "the fused FFT covers planes up to " + std::to_string(kMaxFusedExtent) +
                           "x" + std::to_string(kMaxFusedExtent) + "; " + d.to_string() +
                           " needs " + std::to_string(min_fft_h(d)) + "x" +
                           std::to_string(min_fft_w(d)));
  }
  const std::size_t factors = fused_factor_bytes(d.k, log_f);
  if (factors > o.workspace_limit) {
    return Support::no(Status::kOutOfMemory,
                       "the fused FFT " + size_text(log_f) + " needs " + std::to_string(factors) +
                           " bytes of filter factors, over the workspace limit of " +
                           std::to_string(o.workspace_limit) + " bytes");
  }
  // The kernels index one plane and one grid in 32 bits.
  const std::int64_t planes = o.pass == Pass::kForward ? d.n * d.k : d.n * d.c;
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
        log_f_(fused_log_size(d)),
        conv_(fused_conv_args(d, o.pass, log_f_)),
        filter_(fused_filter_args(d, o.pass, log_f_)) {
    prepare_fused_kernels();
    workspace_ = align_up(fused_factor_bytes(d_.k, log_f_));
  }
  ~FusedFftAlgo() override { clear_filter(); }

  std::size_t workspace_size() const override { return workspace_; }

  void run(const RunArgs& a, cudaStream_t stream, StageMarks* marks) override {
    FusedConvArgs c = conv_;
    if (a.w) {
      enqueue_factors(a.w, a.workspace, stream);
      if (marks) marks->mark("filter", stream);
      c.factors = a.workspace;
    } else {
      FFTCONV_ASSERT(kept_, "a pass without a filter and none kept");
      kept_fence_.mark(stream);
      c.factors = kept_.get();
    }
    c.src = pass_ == Pass::kForward ? a.x : a.dy;
    c.bias = pass_ == Pass::kForward ? a.bias : nullptr;
    c.out = a.out;
    launch_fused_conv(c, stream);
    if (marks) marks->mark("fused", stream);
  }

  void fill_info(PlanInfo& info) const override {
    info.algo = Algo::kFftFused;
    info.fft_h = info.fft_w = std::int64_t{1} << log_f_;
    info.workspace_bytes = workspace_;
  }

  void set_filter(const void* w, cudaStream_t stream) override {
    if (!kept_) kept_ = DeviceBuffer(fused_factor_bytes(d_.k, log_f_));
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
  int log_f_;
  FusedConvArgs conv_;
  FusedFilterArgs filter_;
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
    const int log_f = fused_log_size(d);
    if (detail) *detail = size_text(log_f);
    return estimate_fused_us(d, log_f, o.pass);
  }
  std::unique_ptr<ConvAlgo> create(const ConvDesc& d, const Options& o, bool,
                                   std::string* reason) const override {
    const Support s = fused_can_implement(d, o);
    if (!s.ok()) throw Error(s.status, s.reason);
    if (reason) *reason = "fused fft " + size_text(fused_log_size(d));
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
