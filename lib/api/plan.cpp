#include "fftconv/plan.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <mutex>

#include "algos/cudnn_conv.h"
#include "algos/fft_conv.h"
#include "api/args_check.h"
#include "core/check.h"
#include "host/host_conv.h"
#include "tuning/heuristics.h"

namespace fftconv {

namespace {

// Each enum's names, in one table that both directions read.
template <typename E>
struct Named {
  E value;
  const char* name;
};

template <typename E, std::size_t N>
const char* name_of(const Named<E> (&table)[N], E v, const char* unknown) noexcept {
  for (const Named<E>& n : table) {
    if (n.value == v) return n.name;
  }
  return unknown;
}

// Throws Error(kInvalidArgument) naming every accepted spelling.
template <typename E, std::size_t N>
E parse_named(const Named<E> (&table)[N], const std::string& name, const char* what) {
  std::string expected;
  for (std::size_t i = 0; i < N; ++i) {
    if (name == table[i].name) return table[i].value;
    expected += (i == 0 ? "" : i + 1 == N ? " or " : ", ") + std::string(table[i].name);
  }
  throw Error(Status::kInvalidArgument,
              "unknown " + std::string(what) + " '" + name + "' (expected " + expected + ")");
}

constexpr Named<Algo> kAlgoNames[] = {{Algo::kAuto, "auto"},
                                      {Algo::kFft, "fft"},
                                      {Algo::kFftTiled, "fft_tiled"},
                                      {Algo::kCudnn, "cudnn"}};
constexpr Named<Pass> kPassNames[] = {
    {Pass::kForward, "fwd"}, {Pass::kBackwardData, "dgrad"}, {Pass::kBackwardFilter, "wgrad"}};
constexpr Named<Backend> kBackendNames[] = {
    {Backend::kGpu, "gpu"}, {Backend::kCpu, "cpu"}, {Backend::kAuto, "auto"}};
constexpr Named<Tuning> kTuningNames[] = {{Tuning::kHeuristic, "heuristic"},
                                          {Tuning::kAutotune, "autotune"},
                                          {Tuning::kExhaustive, "exhaustive"}};

}  // namespace

const char* algo_name(Algo a) noexcept { return name_of(kAlgoNames, a, "unknown_algo"); }
Algo parse_algo(const std::string& name) { return parse_named(kAlgoNames, name, "algorithm"); }

const char* pass_name(Pass p) noexcept { return name_of(kPassNames, p, "unknown_pass"); }
Pass parse_pass(const std::string& name) { return parse_named(kPassNames, name, "pass"); }

const char* backend_name(Backend b) noexcept {
  return name_of(kBackendNames, b, "unknown_backend");
}
Backend parse_backend(const std::string& name) {
  return parse_named(kBackendNames, name, "backend");
}

const char* tuning_name(Tuning t) noexcept { return name_of(kTuningNames, t, "unknown_tuning"); }
Tuning parse_tuning(const std::string& name) {
  return parse_named(kTuningNames, name, "tuning mode");
}

std::vector<std::string> cudnn_algo_names(Pass pass) { return detail::cudnn_algos(pass); }

std::vector<std::string> gemm_kernel_names() {
  std::vector<std::string> names;
  for (const detail::CgemmKernel& k : detail::cgemm_kernels()) names.emplace_back(k.name);
  return names;
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
  std::unique_ptr<detail::HostConv> host;  // Backend::kCpu plans: the host engine (algo is null)
  std::mutex enqueue_mutex;

  bool has_filter() const { return host ? host->has_filter() : algo->has_filter(); }
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
  if (a < static_cast<int>(Algo::kAuto) || a > static_cast<int>(Algo::kFftTiled)) {
    throw Error(Status::kInvalidArgument,
                "Options::algo has the invalid value " + std::to_string(a));
  }
  const int s = static_cast<int>(o.cudnn_search);
  if (s != static_cast<int>(CudnnSearch::kFind) && s != static_cast<int>(CudnnSearch::kHeuristic)) {
    throw Error(Status::kInvalidArgument,
                "Options::cudnn_search has the invalid value " + std::to_string(s));
  }
  const int t = static_cast<int>(o.tuning);
  if (t < static_cast<int>(Tuning::kHeuristic) || t > static_cast<int>(Tuning::kExhaustive)) {
    throw Error(Status::kInvalidArgument,
                "Options::tuning has the invalid value " + std::to_string(t));
  }
  const int p = static_cast<int>(o.pass);
  if (p < static_cast<int>(Pass::kForward) || p > static_cast<int>(Pass::kBackwardFilter)) {
    throw Error(Status::kInvalidArgument,
                "Options::pass has the invalid value " + std::to_string(p));
  }
  const int b = static_cast<int>(o.backend);
  if (b < static_cast<int>(Backend::kGpu) || b > static_cast<int>(Backend::kAuto)) {
    throw Error(Status::kInvalidArgument,
                "Options::backend has the invalid value " + std::to_string(b));
  }
}

// The plan's pass must be the one called.
void require_pass(const ConvDesc& d, Pass built, Pass called, const char* method) {
  if (built != called) {
    throw Error(Status::kInvalidArgument,
                std::string(method) + " on a plan built for pass " + pass_name(built) +
                    "; build a plan with Options::pass = " + pass_name(called) + " [" +
                    d.to_string() + "]");
  }
}

std::string size_text(std::int64_t h, std::int64_t w) {
  return std::to_string(h) + "x" + std::to_string(w);
}

// Full-image geometry: forced by Options, autotuned (forward), or the cost model's.
detail::FftGeometry full_geometry(const ConvDesc& d, const Options& o, std::string* reason) {
  if (o.fft_h == 0 && o.fft_w == 0) {
    if (o.tuning != Tuning::kHeuristic && o.pass == Pass::kForward) {
      return detail::FftConvAlgo::tune_geometry(d, o, reason);
    }
    return detail::choose_fft_geometry(d, o.pass);
  }
  if (reason) *reason = "fft size forced by options";
  const std::int64_t min_h = detail::min_fft_h(d), min_w = detail::min_fft_w(d);
  if (o.fft_h < min_h || o.fft_w < min_w) {
    throw Error(Status::kInvalidArgument, "Options FFT size " + size_text(o.fft_h, o.fft_w) +
                                              " is below the exact minimum " +
                                              size_text(min_h, min_w) + " of " + d.to_string());
  }
  return detail::make_fft_geometry(d, o.fft_h, o.fft_w);
}

// Overlap-save geometry: tile size forced by Options or the cost model's.
detail::FftGeometry tiled_geometry(const ConvDesc& d, const Options& o, std::string* reason) {
  if (o.fft_h == 0 && o.fft_w == 0) {
    detail::FftGeometry g;
    if (!detail::choose_tiled_geometry(d, &g)) {
      throw Error(Status::kNotSupported, "no tile size from " + std::to_string(detail::kMinTile) +
                                             " to " + std::to_string(detail::kMaxTile) +
                                             " fits the dilated kernel of " + d.to_string());
    }
    return g;
  }
  if (reason) *reason = "tile size forced by options";
  return detail::make_tiled_geometry(d, o.fft_h, o.fft_w);
}

// Fails at plan time, naming the bytes, when the workspace cannot exist on this device.
void check_device_memory(const detail::ConvAlgo& algo) {
  std::size_t free_bytes = 0, total_bytes = 0;
  FFTCONV_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  if (algo.workspace_size() > free_bytes) {
    throw Error(Status::kOutOfMemory, "the plan needs a workspace of " +
                                          std::to_string(algo.workspace_size()) +
                                          " bytes; the device has " + std::to_string(free_bytes) +
                                          " bytes free of " + std::to_string(total_bytes));
  }
}

std::unique_ptr<detail::ConvAlgo> build_fft(const ConvDesc& d, const Options& o,
                                            const detail::FftGeometry& g) {
  const detail::Support s = detail::FftConvAlgo::can_implement(d, o, g);
  if (!s.ok()) throw Error(s.status, s.reason);
  // Spectra alone over the free memory: fail before building cuFFT plans for them.
  std::size_t free_bytes = 0, total_bytes = 0;
  FFTCONV_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  const std::size_t spectra = detail::FftConvAlgo::spectrum_bytes(d, g, o.pass);
  if (spectra > free_bytes) {
    throw Error(Status::kOutOfMemory,
                std::string(g.tiled ? "tiled fft " : "fft ") + size_text(g.fft_h, g.fft_w) +
                    " needs " + std::to_string(spectra) + " bytes of spectra; the device has " +
                    std::to_string(free_bytes) + " bytes free of " + std::to_string(total_bytes));
  }
  auto algo = std::make_unique<detail::FftConvAlgo>(d, o, g);
  check_device_memory(*algo);
  return algo;
}

std::unique_ptr<detail::ConvAlgo> build_cudnn(const ConvDesc& d, const Options& o) {
  auto algo = detail::make_cudnn(d, o);
  check_device_memory(*algo);
  return algo;
}

detail::HostFwdArgs host_args(const void* x, const void* w, const void* bias, void* y) {
  return {static_cast<const float*>(x), static_cast<const float*>(w),
          static_cast<const float*>(bias), static_cast<float*>(y)};
}

// Host plans time their stages with the host clock: one warm-up, then the median per stage.
std::vector<StageTime> profile_host(detail::HostConv& host, const detail::HostFwdArgs& args,
                                    int iters) {
  host.forward(args, nullptr);
  std::vector<std::vector<StageTime>> runs(static_cast<std::size_t>(iters));
  for (std::vector<StageTime>& run : runs) host.forward(args, &run);
  std::vector<StageTime> out;
  for (std::size_t s = 0; s < runs[0].size(); ++s) {
    std::vector<double> ms;
    for (const std::vector<StageTime>& run : runs) ms.push_back(run[s].ms);
    std::sort(ms.begin(), ms.end());
    out.push_back(StageTime{runs[0][s].stage, ms[ms.size() / 2]});
  }
  return out;
}

std::string estimate_text(double us) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f us", us);
  return buf;
}

}  // namespace

Plan::Plan(const ConvDesc& desc, const Options& options) : impl_(std::make_unique<Impl>()) {
  desc.check();
  check_options(options);
  if (!options.gemm_kernel.empty()) detail::cgemm_kernel(options.gemm_kernel);  // known name?
  if (detail::resolve_backend(options.backend) == Backend::kCpu) {
    impl_->desc = desc;
    impl_->options = options;
    impl_->host = detail::make_host_conv(desc, options, &impl_->info);
    impl_->info.pass = options.pass;
    return;
  }
  require_device();
  impl_->desc = desc;
  impl_->options = options;
  Impl& p = *impl_;
  std::string reason;

  switch (options.algo) {
    case Algo::kFft:
    case Algo::kFftTiled: {
      std::string size_reason;
      const detail::FftGeometry g = options.algo == Algo::kFft
                                        ? full_geometry(desc, options, &size_reason)
                                        : tiled_geometry(desc, options, &size_reason);
      p.algo = build_fft(desc, options, g);
      reason = "requested" + (size_reason.empty() ? "" : "; " + size_reason);
      break;
    }
    case Algo::kCudnn:
      p.algo = build_cudnn(desc, options);
      reason = "requested";
      break;
    case Algo::kAuto: {
      // Estimates rank full image, overlap-save tiles and cuDNN; the cheapest that can be built
      // within the workspace limit and the device's memory runs. Only an FFT path that ranks first
      // is size-tuned, so rows that run on cuDNN cost no tuning.
      struct Candidate {
        Algo algo;
        double us;
      };
      // Backward passes run the full-image FFT or cuDNN (no overlap-save tiling).
      const Pass pass = options.pass;
      const detail::FftGeometry full = detail::choose_fft_geometry(desc, pass);
      detail::FftGeometry tiled;
      const bool has_tiled = pass == Pass::kForward && detail::choose_tiled_geometry(desc, &tiled);
      std::vector<Candidate> order = {{Algo::kFft, detail::estimate_fft_us(desc, full, pass)},
                                      {Algo::kCudnn, detail::estimate_direct_us(desc, pass)}};
      if (has_tiled) {
        order.push_back(
            {Algo::kFftTiled, detail::estimate_fft_us(desc, tiled) * detail::kTiledOverheadFactor});
      }
      std::stable_sort(order.begin(), order.end(),
                       [](const Candidate& a, const Candidate& b) { return a.us < b.us; });
      reason = "auto: estimated fft " + size_text(full.fft_h, full.fft_w) + " " +
               estimate_text(order[0].algo == Algo::kFft   ? order[0].us
                             : order[1].algo == Algo::kFft ? order[1].us
                                                           : order.back().us);
      for (const Candidate& c : order) {
        if (c.algo == Algo::kFftTiled) {
          reason += ", tiled " + size_text(tiled.fft_h, tiled.fft_w) + " (" +
                    size_text(tiled.tiles_h, tiled.tiles_w) + " tiles) " + estimate_text(c.us);
        }
        if (c.algo == Algo::kCudnn) reason += ", direct " + estimate_text(c.us);
      }
      for (std::size_t i = 0; i < order.size() && !p.algo; ++i) {
        const Algo a = order[i].algo;
        try {
          if (a == Algo::kCudnn) {
            const detail::Support s = detail::cudnn_can_implement(desc, options);
            if (!s.ok()) throw Error(s.status, s.reason);
            p.algo = build_cudnn(desc, options);
          } else {
            std::string size_reason;
            const bool tune =
                i == 0 && (options.tuning != Tuning::kHeuristic || options.fft_h || options.fft_w);
            detail::FftGeometry g = a == Algo::kFft ? full : tiled;
            if (tune && a == Algo::kFft) g = full_geometry(desc, options, &size_reason);
            p.algo = build_fft(desc, options, g);
            if (!size_reason.empty()) reason += "; " + size_reason;
          }
          reason += std::string("; chose ") + algo_name(a);
        } catch (const Error& e) {
          if (e.status() != Status::kNotSupported && e.status() != Status::kOutOfMemory) throw;
          reason += std::string("; ") + algo_name(a) + " not possible: " + e.what();
        }
      }
      if (!p.algo) {
        throw Error(Status::kNotSupported,
                    "no algorithm can run " + desc.to_string() + " (" + reason + ")");
      }
      break;
    }
  }
  p.algo->fill_info(p.info);
  p.info.pass = options.pass;
  p.info.backend = Backend::kGpu;
  p.info.reason = p.info.reason.empty() ? reason : reason + "; " + p.info.reason;
}

Plan::~Plan() = default;
Plan::Plan(Plan&&) noexcept = default;
Plan& Plan::operator=(Plan&&) noexcept = default;

const ConvDesc& Plan::desc() const { return impl_->desc; }
const Options& Plan::options() const { return impl_->options; }
const PlanInfo& Plan::info() const { return impl_->info; }
std::size_t Plan::workspace_size() const { return impl_->host ? 0 : impl_->algo->workspace_size(); }

std::string Plan::describe() const {
  const PlanInfo& i = impl_->info;
  std::string s = impl_->desc.to_string() + (impl_->host ? " backend=cpu" : "") +
                  " pass=" + pass_name(i.pass) + " algo=" + algo_name(i.algo);
  if (i.algo == Algo::kFft) {
    s += " fft=" + size_text(i.fft_h, i.fft_w) + " gemm=" + i.gemm;
  } else if (i.algo == Algo::kFftTiled) {
    s += " tile=" + size_text(i.fft_h, i.fft_w) + " tiles=" + size_text(i.tiles_h, i.tiles_w) +
         " gemm=" + i.gemm;
  } else {
    s += " cudnn=" + i.cudnn_algo + "/" + i.cudnn_math;
  }
  char ws[48];
  std::snprintf(ws, sizeof(ws), " ws=%.1fMiB", double(i.workspace_bytes) / (1 << 20));
  return s + ws + " (" + i.reason + ")";
}

void Plan::forward(const void* x, const void* w, const void* bias, void* y, void* workspace,
                   std::size_t workspace_bytes, cudaStream_t stream) const {
  require_pass(impl_->desc, impl_->options.pass, Pass::kForward, "forward");
  std::string why;
  std::lock_guard<std::mutex> lock(impl_->enqueue_mutex);
  const Status st =
      detail::check_forward_args(impl_->desc, x, w, bias, y, workspace, workspace_bytes,
                                 workspace_size(), impl_->has_filter(), &why);
  if (st != Status::kSuccess) throw Error(st, why);
  if (impl_->host) {
    impl_->host->forward(host_args(x, w, bias, y), nullptr);
    return;
  }
  detail::RunArgs args;
  args.x = x;
  args.w = w;
  args.bias = bias;
  args.out = y;
  args.workspace = workspace;
  impl_->algo->run(args, stream, nullptr);
}

void Plan::backward_data(const void* dy, const void* w, void* dx, void* workspace,
                         std::size_t workspace_bytes, cudaStream_t stream) const {
  require_pass(impl_->desc, impl_->options.pass, Pass::kBackwardData, "backward_data");
  std::string why;
  std::lock_guard<std::mutex> lock(impl_->enqueue_mutex);
  const Status st =
      detail::check_backward_data_args(impl_->desc, dy, w, dx, workspace, workspace_bytes,
                                       workspace_size(), impl_->has_filter(), &why);
  if (st != Status::kSuccess) throw Error(st, why);
  if (impl_->host) {
    impl_->host->backward_data(static_cast<const float*>(dy), static_cast<const float*>(w),
                               static_cast<float*>(dx));
    return;
  }
  detail::RunArgs args;
  args.dy = dy;
  args.w = w;
  args.out = dx;
  args.workspace = workspace;
  impl_->algo->run(args, stream, nullptr);
}

void Plan::backward_filter(const void* x, const void* dy, void* dw, void* workspace,
                           std::size_t workspace_bytes, cudaStream_t stream, float alpha,
                           float beta) const {
  require_pass(impl_->desc, impl_->options.pass, Pass::kBackwardFilter, "backward_filter");
  const DType dw_dtype = impl_->options.dw_fp32 ? DType::kF32 : impl_->desc.dtype;
  std::string why;
  std::lock_guard<std::mutex> lock(impl_->enqueue_mutex);
  const Status st =
      detail::check_backward_filter_args(impl_->desc, x, dy, dw, dw_dtype, alpha, beta, workspace,
                                         workspace_bytes, workspace_size(), &why);
  if (st != Status::kSuccess) throw Error(st, why);
  if (impl_->host) {
    impl_->host->backward_filter(static_cast<const float*>(x), static_cast<const float*>(dy),
                                 static_cast<float*>(dw), alpha, beta);
    return;
  }
  detail::RunArgs args;
  args.x = x;
  args.dy = dy;
  args.out = dw;
  args.workspace = workspace;
  args.alpha = alpha;
  args.beta = beta;
  impl_->algo->run(args, stream, nullptr);
}

void Plan::set_filter(const void* w, cudaStream_t stream) {
  if (!w)
    throw Error(Status::kNullPointer, "set_filter: w is null [" + impl_->desc.to_string() + "]");
  if (reinterpret_cast<std::uintptr_t>(w) % dtype_size(impl_->desc.dtype) != 0) {
    throw Error(Status::kMisalignedPointer, "set_filter: w is not aligned to its elements");
  }
  if (impl_->options.pass == Pass::kBackwardFilter) {
    throw Error(
        Status::kInvalidArgument,
        "set_filter: a backward-filter plan has no filter input [" + impl_->desc.to_string() + "]");
  }
  std::lock_guard<std::mutex> lock(impl_->enqueue_mutex);
  if (impl_->host) {
    impl_->host->set_filter(static_cast<const float*>(w));
    return;
  }
  impl_->algo->set_filter(w, stream);
}

void Plan::clear_filter() {
  std::lock_guard<std::mutex> lock(impl_->enqueue_mutex);
  if (impl_->host) {
    impl_->host->clear_filter();
    return;
  }
  impl_->algo->clear_filter();
}

bool Plan::has_filter() const {
  std::lock_guard<std::mutex> lock(impl_->enqueue_mutex);
  return impl_->has_filter();
}

std::size_t Plan::filter_bytes() const {
  std::lock_guard<std::mutex> lock(impl_->enqueue_mutex);
  return impl_->host ? impl_->host->filter_bytes() : impl_->algo->filter_bytes();
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
  require_pass(impl_->desc, impl_->options.pass, Pass::kForward, "profile_forward");
  if (iters < 1) throw Error(Status::kInvalidArgument, "profile_forward: iters must be >= 1");
  std::string why;
  std::lock_guard<std::mutex> lock(impl_->enqueue_mutex);
  const Status st =
      detail::check_forward_args(impl_->desc, x, w, bias, y, workspace, workspace_bytes,
                                 workspace_size(), impl_->has_filter(), &why);
  if (st != Status::kSuccess) throw Error(st, why);
  if (impl_->host) return profile_host(*impl_->host, host_args(x, w, bias, y), iters);
  detail::RunArgs args;
  args.x = x;
  args.w = w;
  args.bias = bias;
  args.out = y;
  args.workspace = workspace;
  impl_->algo->run(args, stream, nullptr);  // warm-up
  std::vector<EventMarks> runs(static_cast<std::size_t>(iters));
  for (EventMarks& run : runs) {
    run.mark("start", stream);
    impl_->algo->run(args, stream, &run);
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
