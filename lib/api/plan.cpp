#include "fftconv/plan.hpp"

#include <algorithm>
#include <cstdio>
#include <mutex>

#include "algos/cudnn_fwd.h"
#include "algos/fft_full.h"
#include "api/args_check.h"
#include "core/check.h"
#include "tuning/heuristics.h"

namespace fftconv {

const char* algo_name(Algo a) noexcept {
  switch (a) {
    case Algo::kAuto: return "auto";
    case Algo::kFft: return "fft";
    case Algo::kCudnn: return "cudnn";
  }
  return "unknown_algo";
}

Algo parse_algo(const std::string& name) {
  if (name == "auto") return Algo::kAuto;
  if (name == "fft") return Algo::kFft;
  if (name == "cudnn") return Algo::kCudnn;
  throw Error(Status::kInvalidArgument,
              "unknown algorithm '" + name + "' (expected auto, fft or cudnn)");
}

std::vector<std::string> gemm_kernel_names() {
  std::vector<std::string> names;
  for (const detail::CgemmKernel& k : detail::cgemm_kernels()) names.emplace_back(k.name);
  return names;
}

const char* tuning_name(Tuning t) noexcept {
  switch (t) {
    case Tuning::kHeuristic: return "heuristic";
    case Tuning::kAutotune: return "autotune";
    case Tuning::kExhaustive: return "exhaustive";
  }
  return "unknown_tuning";
}

Tuning parse_tuning(const std::string& name) {
  if (name == "heuristic") return Tuning::kHeuristic;
  if (name == "autotune") return Tuning::kAutotune;
  if (name == "exhaustive") return Tuning::kExhaustive;
  throw Error(Status::kInvalidArgument,
              "unknown tuning mode '" + name + "' (expected heuristic, autotune or exhaustive)");
}

int device_count() noexcept {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the error so later calls are not affected
    return 0;
  }
  return count;
}

struct Plan::Impl {
  ConvDesc desc;
  Options options;
  PlanInfo info;
  std::unique_ptr<detail::ConvAlgo> algo;
  std::mutex enqueue_mutex;
};

namespace {

void require_device() {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    cudaGetLastError();
    throw Error(Status::kNoDevice,
                std::string("no CUDA device available (cudaGetDeviceCount: ") +
                    (err != cudaSuccess ? cudaGetErrorString(err) : "0 devices") + ")");
  }
}

void check_options(const Options& o) {
  const int a = static_cast<int>(o.algo);
  if (a < static_cast<int>(Algo::kAuto) || a > static_cast<int>(Algo::kCudnn)) {
    throw Error(Status::kInvalidArgument, "Options::algo has the invalid value " + std::to_string(a));
  }
  const int s = static_cast<int>(o.cudnn_search);
  if (s != static_cast<int>(CudnnSearch::kFind) && s != static_cast<int>(CudnnSearch::kHeuristic)) {
    throw Error(Status::kInvalidArgument,
                "Options::cudnn_search has the invalid value " + std::to_string(s));
  }
  const int t = static_cast<int>(o.tuning);
  if (t < static_cast<int>(Tuning::kHeuristic) || t > static_cast<int>(Tuning::kExhaustive)) {
    throw Error(Status::kInvalidArgument, "Options::tuning has the invalid value " + std::to_string(t));
  }
}

detail::FftGeometry fft_geometry(const ConvDesc& d, const Options& o, std::string* reason) {
  if (o.fft_h == 0 && o.fft_w == 0) {
    if (o.tuning != Tuning::kHeuristic) return detail::FftFullAlgo::tune_geometry(d, o, reason);
    return detail::choose_fft_geometry(d);
  }
  if (reason) *reason = "fft size forced by options";
  const std::int64_t min_h = detail::min_fft_h(d), min_w = detail::min_fft_w(d);
  if (o.fft_h < min_h || o.fft_w < min_w) {
    throw Error(Status::kInvalidArgument,
                "Options FFT size " + std::to_string(o.fft_h) + "x" + std::to_string(o.fft_w) +
                    " is below the exact minimum " + std::to_string(min_h) + "x" +
                    std::to_string(min_w) + " of " + d.to_string());
  }
  return detail::make_fft_geometry(d, o.fft_h, o.fft_w);
}

std::unique_ptr<detail::ConvAlgo> build_fft(const ConvDesc& d, const Options& o,
                                            const detail::FftGeometry& g) {
  const detail::Support s = detail::FftFullAlgo::can_implement(d, o, g);
  if (!s.ok()) throw Error(s.status, s.reason);
  return std::make_unique<detail::FftFullAlgo>(d, o, g);
}

}  // namespace

Plan::Plan(const ConvDesc& desc, const Options& options) : impl_(std::make_unique<Impl>()) {
  desc.check();
  check_options(options);
  if (!options.gemm_kernel.empty()) detail::cgemm_kernel(options.gemm_kernel);  // known name?
  require_device();
  impl_->desc = desc;
  impl_->options = options;
  Impl& p = *impl_;
  std::string reason;

  switch (options.algo) {
    case Algo::kFft: {
      std::string size_reason;
      p.algo = build_fft(desc, options, fft_geometry(desc, options, &size_reason));
      reason = "requested" + (size_reason.empty() ? "" : "; " + size_reason);
      break;
    }
    case Algo::kCudnn:
      p.algo = detail::make_cudnn_forward(desc, options);
      reason = "requested";
      break;
    case Algo::kAuto: {
      // The estimate decides between FFT and cuDNN first, so a row that runs on cuDNN is never
      // FFT-size tuned.
      const detail::FftGeometry model = detail::choose_fft_geometry(desc);
      const detail::AlgoEstimate est = detail::compare_fft_direct(desc, model);
      std::string size_reason;
      const bool tune_size = options.tuning != Tuning::kHeuristic || options.fft_h || options.fft_w;
      const detail::FftGeometry g =
          est.prefer_fft && tune_size ? fft_geometry(desc, options, &size_reason) : model;
      const detail::Support fft_ok = detail::FftFullAlgo::can_implement(desc, options, g);
      const detail::Support dnn_ok = detail::cudnn_can_implement(desc);
      const bool want_fft = fft_ok.ok() && (est.prefer_fft || !dnn_ok.ok());
      reason = "auto: " + est.reason + (size_reason.empty() ? "" : "; " + size_reason);
      // Try the preferred algorithm, fall back to the other when it cannot be built.
      for (int attempt = 0; attempt < 2 && !p.algo; ++attempt) {
        const bool fft = (attempt == 0) == want_fft;
        if (fft && !fft_ok.ok()) {
          reason += "; fft not possible: " + fft_ok.reason;
          continue;
        }
        if (!fft && !dnn_ok.ok()) {
          reason += "; cudnn not possible: " + dnn_ok.reason;
          continue;
        }
        try {
          p.algo = fft ? build_fft(desc, options, g) : detail::make_cudnn_forward(desc, options);
        } catch (const Error& e) {
          if (e.status() != Status::kNotSupported && e.status() != Status::kOutOfMemory) throw;
          reason += std::string("; ") + (fft ? "fft" : "cudnn") + " failed: " + e.what();
        }
      }
      if (!p.algo) throw Error(Status::kNotSupported, "no algorithm can run " + desc.to_string() + " (" + reason + ")");
      break;
    }
  }
  p.algo->fill_info(p.info);
  p.info.reason = p.info.reason.empty() ? reason : reason + "; " + p.info.reason;
}

Plan::~Plan() = default;
Plan::Plan(Plan&&) noexcept = default;
Plan& Plan::operator=(Plan&&) noexcept = default;

const ConvDesc& Plan::desc() const { return impl_->desc; }
const Options& Plan::options() const { return impl_->options; }
const PlanInfo& Plan::info() const { return impl_->info; }
std::size_t Plan::workspace_size() const { return impl_->algo->workspace_size(); }

std::string Plan::describe() const {
  const PlanInfo& i = impl_->info;
  std::string s = impl_->desc.to_string() + " algo=" + algo_name(i.algo);
  if (i.algo == Algo::kFft) {
    s += " fft=" + std::to_string(i.fft_h) + "x" + std::to_string(i.fft_w) + " gemm=" + i.gemm;
  } else {
    s += " cudnn=" + i.cudnn_algo + "/" + i.cudnn_math;
  }
  char ws[48];
  std::snprintf(ws, sizeof(ws), " ws=%.1fMiB", double(i.workspace_bytes) / (1 << 20));
  return s + ws + " (" + i.reason + ")";
}

void Plan::forward(const void* x, const void* w, const void* bias, void* y, void* workspace,
                   std::size_t workspace_bytes, cudaStream_t stream) const {
  std::string why;
  const Status st = detail::check_forward_args(impl_->desc, x, w, bias, y, workspace,
                                               workspace_bytes, workspace_size(), &why);
  if (st != Status::kSuccess) throw Error(st, why);
  std::lock_guard<std::mutex> lock(impl_->enqueue_mutex);
  impl_->algo->forward(detail::FwdArgs{x, w, bias, y, workspace}, stream, nullptr);
}

namespace {
// Records an event after each stage; one set per profiled run.
class EventMarks final : public detail::StageMarks {
 public:
  std::vector<std::pair<std::string, cudaEvent_t>> marks;
  ~EventMarks() override {
    for (auto& m : marks) cudaEventDestroy(m.second);
  }
  void mark(const char* stage, cudaStream_t stream) override {
    cudaEvent_t e;
    FFTCONV_CUDA_CHECK(cudaEventCreate(&e));
    marks.emplace_back(stage, e);
    FFTCONV_CUDA_CHECK(cudaEventRecord(e, stream));
  }
};
}  // namespace

std::vector<StageTime> Plan::profile_forward(const void* x, const void* w, const void* bias,
                                             void* y, void* workspace, std::size_t workspace_bytes,
                                             cudaStream_t stream, int iters) const {
  if (iters < 1) throw Error(Status::kInvalidArgument, "profile_forward: iters must be >= 1");
  std::string why;
  const Status st = detail::check_forward_args(impl_->desc, x, w, bias, y, workspace,
                                               workspace_bytes, workspace_size(), &why);
  if (st != Status::kSuccess) throw Error(st, why);
  std::lock_guard<std::mutex> lock(impl_->enqueue_mutex);
  const detail::FwdArgs args{x, w, bias, y, workspace};
  impl_->algo->forward(args, stream, nullptr);  // warm-up
  std::vector<EventMarks> runs(static_cast<std::size_t>(iters));
  for (EventMarks& run : runs) {
    run.mark("start", stream);
    impl_->algo->forward(args, stream, &run);
  }
  FFTCONV_CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<StageTime> out;
  const std::size_t stages = runs[0].marks.size();
  for (std::size_t s = 1; s < stages; ++s) {
    std::vector<float> ms;
    for (const EventMarks& run : runs) {
      float e = 0.0f;
      FFTCONV_CUDA_CHECK(cudaEventElapsedTime(&e, run.marks[s - 1].second, run.marks[s].second));
      ms.push_back(e);
    }
    std::sort(ms.begin(), ms.end());
    out.push_back(StageTime{runs[0].marks[s].first, ms[ms.size() / 2]});
  }
  return out;
}

}  // namespace fftconv
