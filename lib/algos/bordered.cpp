// Borders other than zeros (ConvDesc::border) for the entries that do not apply them as they
// load: the entry runs the bordered problem (bordered_desc: the input continued by the border,
// no padding) behind a stage that writes the bordered input into the workspace (forward,
// backward filter) or folds the bordered input's gradient back into dx (backward data). The
// entry helpers of registry.h route every question the planner asks of an entry through here.
#include <algorithm>
#include <chrono>
#include <vector>

#include "algos/registry.h"
#include "core/check.h"
#include "core/timing.h"
#include "host/host_threads.h"
#include "stages/border.h"
#include "tuning/heuristics.h"

namespace fftconv::detail {

namespace {

bool loads_it(const AlgoFactory& f, const ConvDesc& d, const Options& o) {
  return d.border == Border::kZero || f.loads_border(o.pass);
}

// The bordered planes in the tensors' dtype (GPU: in the workspace, below the inner algorithm's).
std::size_t bordered_bytes(const ConvDesc& d) {
  return static_cast<std::size_t>(bordered_elems(d)) * dtype_size(d.dtype);
}

// The options the bordered problem is asked about and built with: the bordered planes' share
// of the workspace limit set aside (GPU).
Support inner_options(const AlgoFactory& f, const ConvDesc& d, const Options& o, Options* inner) {
  *inner = o;
  // Each extent is below 3 * 2^31 (validate()), so the product is checked in double first.
  const std::int64_t hb = d.h + 2 * d.pad_h, wb = d.w + 2 * d.pad_w;
  if (double(hb) * double(wb) >= double(std::int64_t{1} << 31)) {
    return Support::no(Status::kNotSupported,
                       "a bordered plane of " + std::to_string(hb) + "x" + std::to_string(wb) +
                           " exceeds 32-bit indices");
  }
  // The GPU stages map positions in 32 bits: reflect's period 2 (n - 1) must fit too.
  if (std::max(d.h, d.w) > (std::int64_t{1} << 30)) {
    return Support::no(Status::kNotSupported,
                       "a side of " + std::to_string(std::max(d.h, d.w)) +
                           " exceeds 2^30, the longest axis a border is applied along");
  }
  if (double(d.n) * double(d.c) * double(hb) * double(wb) > 70368744177664.0) {
    return Support::no(Status::kNotSupported, "the bordered input has more than 2^46 elements");
  }
  if (f.backend() == Backend::kGpu && o.workspace_limit != Options::kNoLimit) {
    const std::size_t need = align_up(bordered_bytes(d));
    if (need > o.workspace_limit) {
      return Support::no(Status::kNotSupported,
                         "the bordered input needs " + std::to_string(need) +
                             " bytes of workspace, above the limit of " +
                             std::to_string(o.workspace_limit));
    }
    inner->workspace_limit = o.workspace_limit - need;
  }
  return Support::yes();
}

class BorderedAlgo final : public ConvAlgo {
 public:
  BorderedAlgo(const ConvDesc& d, Pass pass, Backend backend, std::unique_ptr<ConvAlgo> inner)
      : d_(d), pass_(pass), gpu_(backend == Backend::kGpu), inner_(std::move(inner)) {
    if (!gpu_) host_.resize(static_cast<std::size_t>(bordered_elems(d_)));
  }

  std::size_t workspace_size() const override {
    return gpu_ ? align_up(bordered_bytes(d_)) + inner_->workspace_size() : 0;
  }

  void run(const RunArgs& a, cudaStream_t stream, StageMarks* marks) override {
    void* planes = gpu_ ? a.workspace : static_cast<void*>(host_.data());
    RunArgs in = a;
    if (gpu_) in.workspace = static_cast<char*>(a.workspace) + align_up(bordered_bytes(d_));
    if (pass_ == Pass::kBackwardData) {
      in.out = planes;
      inner_->run(in, stream, marks);
      fold(planes, a.out, stream);
      if (marks) marks->mark("border", stream);
      return;
    }
    copy(a.x, planes, stream);
    if (marks) marks->mark("border", stream);
    in.x = planes;
    inner_->run(in, stream, marks);
  }

  void fill_info(PlanInfo& info) const override {
    inner_->fill_info(info);
    info.workspace_bytes = workspace_size();
  }
  void set_filter(const void* w, cudaStream_t stream) override { inner_->set_filter(w, stream); }
  void clear_filter() override { inner_->clear_filter(); }
  bool has_filter() const override { return inner_->has_filter(); }
  std::size_t filter_bytes() const override { return inner_->filter_bytes(); }
  std::size_t filter_spectrum_size() const override { return inner_->filter_spectrum_size(); }
  std::string filter_spectrum_layout() const override { return inner_->filter_spectrum_layout(); }
  void filter_spectrum(const void* w, void* spectrum, void* workspace,
                       cudaStream_t stream) override {
    inner_->filter_spectrum(w, spectrum,
                            gpu_ ? static_cast<char*>(workspace) + align_up(bordered_bytes(d_))
                                 : workspace,
                            stream);
  }
  std::string kept_filter_note() const override { return inner_->kept_filter_note(); }

  std::vector<StageTime> profile_forward(const RunArgs& a, cudaStream_t stream,
                                         int iters) override {
    if (gpu_) return ConvAlgo::profile_forward(a, stream, iters);
    // The host clock: the copy's median, then the inner algorithm's stages on the bordered x.
    std::vector<double> ms;
    for (int i = 0; i <= iters; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      copy(a.x, host_.data(), stream);
      const std::chrono::duration<double, std::milli> e = std::chrono::steady_clock::now() - t0;
      if (i > 0) ms.push_back(e.count());
    }
    RunArgs in = a;
    in.x = host_.data();
    std::vector<StageTime> out{StageTime{"border", median(std::move(ms))}};
    for (const StageTime& s : inner_->profile_forward(in, stream, iters)) out.push_back(s);
    return out;
  }

 private:
  void copy(const void* x, void* planes, cudaStream_t stream) {
    if (gpu_) {
      launch_border_copy(d_, x, planes, stream);
    } else {
      border_copy_host(d_, static_cast<const float*>(x), static_cast<float*>(planes),
                       host_thread_count());
    }
  }
  void fold(const void* planes, void* dx, cudaStream_t stream) {
    if (gpu_) {
      launch_border_fold(d_, planes, dx, stream);
    } else {
      border_fold_host(d_, static_cast<const float*>(planes), static_cast<float*>(dx),
                       host_thread_count());
    }
  }

  ConvDesc d_;
  Pass pass_;
  bool gpu_;
  std::unique_ptr<ConvAlgo> inner_;
  std::vector<float> host_;  // CPU plans: the bordered planes (the host backend has no workspace)
};

std::string border_text(const ConvDesc& d, Pass pass) {
  const ConvDesc b = bordered_desc(d);
  return std::string("border ") + border_name(d.border) + ": " +
         (pass == Pass::kBackwardData ? "the gradient of the bordered input folded back"
                                      : "the input bordered into") +
         " " + std::to_string(b.h) + "x" + std::to_string(b.w) + " planes";
}

}  // namespace

Support entry_support(const AlgoFactory& f, const ConvDesc& d, const Options& o) {
  if (loads_it(f, d, o)) return f.can_implement(d, o);
  Options inner;
  const Support s = inner_options(f, d, o, &inner);
  if (!s.ok()) return s;
  return f.can_implement(bordered_desc(d), inner);
}

double entry_estimate_us(const AlgoFactory& f, const ConvDesc& d, const Options& o,
                         std::string* detail) {
  if (loads_it(f, d, o)) return f.estimate_us(d, o, detail);
  Options inner;
  inner_options(f, d, o, &inner);
  const double us = f.estimate_us(bordered_desc(d), inner, detail);
  // The host backend has a single entry: its estimate only orders nothing.
  return f.backend() == Backend::kGpu ? us + estimate_border_us(d, o.pass) : us;
}

std::unique_ptr<ConvAlgo> create_entry(const AlgoFactory& f, const ConvDesc& d, const Options& o,
                                       bool first, std::string* reason) {
  if (loads_it(f, d, o)) return f.create(d, o, first, reason);
  Options inner;
  const Support s = inner_options(f, d, o, &inner);
  if (!s.ok()) throw Error(s.status, s.reason + " [" + d.to_string() + "]");
  const ConvDesc db = bordered_desc(d);
  std::unique_ptr<ConvAlgo> built = f.create(db, inner, first, reason);
  if (reason) {
    *reason = (reason->empty() ? "" : *reason + "; ") + border_text(d, o.pass);
  }
  // Backward data under Auto: a kept low-rank filter may run the bordered problem as 1-D passes
  // (the separable path loads borders in the forward pass only, where build_algorithm offers it
  // on the descriptor itself).
  if (f.backend() == Backend::kGpu && o.algo == Algo::kAuto && o.pass == Pass::kBackwardData) {
    built = with_kept_separable(db, inner, std::move(built), f.estimate_us(db, inner, nullptr));
  }
  auto algo = std::make_unique<BorderedAlgo>(d, o.pass, f.backend(), std::move(built));
  // The bordered planes' share counts too: a plan that cannot run fails here, not at its call.
  if (f.backend() == Backend::kGpu) check_device_memory(*algo);
  return algo;
}

}  // namespace fftconv::detail
