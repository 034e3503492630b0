// The fused FFT entry of the implementation list (Algo::kFftFused): the whole convolution of a
// pair of planes in one block, its FFTs in shared memory (lib/fused/fused_conv.h). Serves the
// problems the small-plane networks run: one input and one output channel per group (depthwise,
// single-channel heatmaps), FFT planes up to 128x128, the forward and backward-data passes.
#include <string>

#include "algos/registry.h"
#include "core/check.h"
#include "core/device_buffer.h"
#include "fused/fused_conv.h"
#include "geometry/fft_geometry.h"
#include "tuning/heuristics.h"

namespace fftconv::detail {

namespace {

struct FusedSize {
  int log_h = -1, log_w = -1;
  std::int64_t h() const { return std::int64_t{1} << log_h; }
  std::int64_t w() const { return std::int64_t{1} << log_w; }
};

FusedSize fused_size(const ConvDesc& d) {
  return FusedSize{fused_log_extent(min_fft_h(d)), fused_log_extent(min_fft_w(d))};
}

std::string size_text(const FusedSize& f) {
  return std::to_string(f.h()) + "x" + std::to_string(f.w());
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
  const FusedSize f = fused_size(d);
  if (f.log_h < 0 || f.log_w < 0) {
    return Support::no(Status::kNotSupported,
                       "the fused FFT covers planes up to " + std::to_string(kMaxFusedExtent) +
                           "x" + std::to_string(kMaxFusedExtent) + "; " + d.to_string() +
                           " needs " + std::to_string(min_fft_h(d)) + "x" +
                           std::to_string(min_fft_w(d)));
  }
  const std::size_t factors = fused_factor_bytes(d.k, f.log_h, f.log_w);
  if (factors > o.workspace_limit) {
    return Support::no(Status::kOutOfMemory,
                       "the fused FFT " + size_text(f) + " needs " + std::to_string(factors) +
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
  FusedFftAlgo(const ConvDesc& d, const Options& o) : d_(d), pass_(o.pass), size_(fused_size(d)) {
    prepare_fused_kernels(d_.dtype);
    workspace_ = align_up(fused_factor_bytes(d_.k, size_.log_h, size_.log_w));
    conv_.planes = d_.n * d_.k;
    conv_.k = static_cast<int>(d_.k);
    conv_.log_h = size_.log_h;
    conv_.log_w = size_.log_w;
    if (pass_ == Pass::kForward) {
      // x offset by the padding; the output reads the correlation with the stride, wrapping.
      conv_.src_h = static_cast<int>(d_.h);
      conv_.src_w = static_cast<int>(d_.w);
      conv_.off_h = static_cast<int>(d_.pad_h);
      conv_.off_w = static_cast<int>(d_.pad_w);
      conv_.out_h = static_cast<int>(d_.out_h());
      conv_.out_w = static_cast<int>(d_.out_w());
      conv_.read_stride_h = static_cast<int>(d_.stride_h);
      conv_.read_stride_w = static_cast<int>(d_.stride_w);
      conv_.wrap = true;
    } else {
      // dy spread by the stride at the origin; dx is the convolution read at the padding.
      conv_.src_h = static_cast<int>(d_.out_h());
      conv_.src_w = static_cast<int>(d_.out_w());
      conv_.step_h = static_cast<int>(d_.stride_h);
      conv_.step_w = static_cast<int>(d_.stride_w);
      conv_.out_h = static_cast<int>(d_.h);
      conv_.out_w = static_cast<int>(d_.w);
      conv_.read_off_h = static_cast<int>(d_.pad_h);
      conv_.read_off_w = static_cast<int>(d_.pad_w);
      conv_.wrap = false;
    }
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
    launch_fused_conv(c, d_.dtype, stream);
    if (marks) marks->mark("fused", stream);
  }

  void fill_info(PlanInfo& info) const override {
    info.algo = Algo::kFftFused;
    info.fft_h = size_.h();
    info.fft_w = size_.w();
    info.workspace_bytes = workspace_;
  }

  void set_filter(const void* w, cudaStream_t stream) override {
    if (!kept_) kept_ = DeviceBuffer(fused_factor_bytes(d_.k, size_.log_h, size_.log_w));
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
    FusedFilterArgs f;
    f.w = w;
    f.factors = factors;
    f.k = static_cast<int>(d_.k);
    f.r = static_cast<int>(d_.r);
    f.s = static_cast<int>(d_.s);
    f.dil_h = static_cast<int>(d_.dil_h);
    f.dil_w = static_cast<int>(d_.dil_w);
    f.conjugate = pass_ == Pass::kForward;
    f.scale = static_cast<float>(1.0 / double(size_.h() * size_.w()));
    f.log_h = size_.log_h;
    f.log_w = size_.log_w;
    launch_fused_filter_factors(f, d_.dtype, stream);
  }

  ConvDesc d_;
  Pass pass_;
  FusedSize size_;
  FusedConvArgs conv_;
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
    const FusedSize f = fused_size(d);
    if (detail) *detail = size_text(f);
    return estimate_fused_us(d, f.log_h, f.log_w, o.pass);
  }
  std::unique_ptr<ConvAlgo> create(const ConvDesc& d, const Options& o, bool,
                                   std::string* reason) const override {
    const Support s = fused_can_implement(d, o);
    if (!s.ok()) throw Error(s.status, s.reason);
    if (reason) *reason = "fused fft " + size_text(fused_size(d));
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
