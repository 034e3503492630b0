#include "fftconv/plan.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <mutex>

#include "algos/cudnn/cudnn_conv.h"
#include "algos/registry.h"
#include "api/args_check.h"
#include "api/graph_replay.h"
#include "core/check.h"
#include "gemm/cgemm.h"

namespace fftconv {

std::vector<std::string> cudnn_algo_names(Pass pass) { return detail::cudnn_algos(pass); }

std::vector<std::string> gemm_kernel_names() {
  std::vector<std::string> names;
  for (const detail::CgemmKernel& k : detail::cgemm_kernels()) names.emplace_back(k.name);
  return names;
}

struct Plan::Impl {
  ConvDesc desc;
  Options options;
  PlanInfo info;
  std::unique_ptr<detail::ConvAlgo> algo;
  // After algo: destroyed first, waiting for the replays that read its kept filter.
  std::unique_ptr<detail::GraphReplay> replay;
  // The device whose memory every pointer argument must be (kNoPointerCheck: not asked).
  int pointer_device = detail::kNoPointerCheck;
  std::mutex enqueue_mutex;
};

namespace {

// Options fields are plain enums a caller (the C API, a cast) can set to anything.
template <typename E>
void check_enum(E value, E first, E last, const char* field) {
  const int v = static_cast<int>(value);
  if (v < static_cast<int>(first) || v > static_cast<int>(last)) {
    throw Error(Status::kInvalidArgument,
                std::string(field) + " has the invalid value " + std::to_string(v));
  }
}

void check_options(const Options& o) {
  check_enum(o.algo, Algo::kAuto, Algo::kImplicitGemm, "Options::algo");
  check_enum(o.cudnn_search, CudnnSearch::kFind, CudnnSearch::kAuto, "Options::cudnn_search");
  check_enum(o.tuning, Tuning::kHeuristic, Tuning::kExhaustive, "Options::tuning");
  check_enum(o.pass, Pass::kForward, Pass::kBackwardFilter, "Options::pass");
  check_enum(o.backend, Backend::kGpu, Backend::kAuto, "Options::backend");
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

}  // namespace

Plan::Plan(const ConvDesc& desc, const Options& options) : impl_(std::make_unique<Impl>()) {
  desc.check();
  check_options(options);
  if (!options.gemm_kernel.empty()) detail::cgemm_kernel(options.gemm_kernel);  // known name?
  impl_->desc = desc;
  impl_->options = options;
  impl_->algo = detail::build_algorithm(desc, options, &impl_->info);
  // Not cuDNN's calls: a graph captured from one would use the capturing thread's handle
  // (cudnn_algo.cpp keeps one per thread) after that thread may have ended.
  impl_->replay = std::make_unique<detail::GraphReplay>(options.graph_replay &&
                                                        impl_->info.backend == Backend::kGpu &&
                                                        impl_->info.algo != Algo::kCudnn);
  if (impl_->info.backend == Backend::kGpu && options.check_pointers) {
    FFTCONV_CUDA_CHECK(cudaGetDevice(&impl_->pointer_device));
  }
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
  std::string s = impl_->desc.to_string() + (i.backend == Backend::kCpu ? " backend=cpu" : "") +
                  " pass=" + pass_name(i.pass) + " algo=" + algo_name(i.algo);
  if (i.algo == Algo::kFft) {
    s += " fft=" + size_text(i.fft_h, i.fft_w) + " gemm=" + i.gemm;
  } else if (i.algo == Algo::kFftTiled) {
    s += " tile=" + size_text(i.fft_h, i.fft_w) + " tiles=" + size_text(i.tiles_h, i.tiles_w) +
         " gemm=" + i.gemm;
  } else if (i.algo == Algo::kFftFused) {
    s += " fft=" + size_text(i.fft_h, i.fft_w) + " fused";
    if (i.tiles_h * i.tiles_w > 1) s += " tiles=" + size_text(i.tiles_h, i.tiles_w);
  } else if (i.algo == Algo::kSeparable) {
    s += " 1-D passes";
  } else if (i.algo == Algo::kDirect) {
    s += " direct";
  } else if (i.algo == Algo::kImplicitGemm) {
    s += " implicit gemm";
  } else {
    s += " cudnn=" + i.cudnn_algo + "/" + i.cudnn_math;
  }
  char ws[48];
  std::snprintf(ws, sizeof(ws), " ws=%.1fMiB", double(i.workspace_bytes) / (1 << 20));
  const std::string kept = impl_->algo->kept_filter_note();
  return s + ws + " (" + i.reason + (kept.empty() ? "" : "; kept filter: " + kept) + ")";
}

namespace {

// Checks a call's arguments with `check` under the plan's lock (the check may read whether a
// filter is kept), then enqueues it, as a graph replay where it can; when they are wrong
// nothing is enqueued.
template <typename Check>
void run_checked(std::mutex& mu, detail::ConvAlgo& algo, detail::GraphReplay& replay,
                 const detail::RunArgs& args, cudaStream_t stream, Check&& check) {
  std::lock_guard<std::mutex> lock(mu);
  std::string why;
  const Status st = check(algo, &why);
  if (st != Status::kSuccess) throw Error(st, why);
  // A launch reads the kept filter only where the call passes none (w == nullptr).
  const bool kept = algo.has_filter() && args.w == nullptr && args.w_spectrum == nullptr;
  if (!replay.run(algo, args, stream, kept)) algo.run(args, stream, nullptr);
}

}  // namespace

void Plan::forward(const void* x, const void* w, const void* bias, void* y, void* workspace,
                   std::size_t workspace_bytes, cudaStream_t stream) const {
  require_pass(impl_->desc, impl_->options.pass, Pass::kForward, "forward");
  const ConvDesc& d = impl_->desc;
  const int dev = impl_->pointer_device;
  run_checked(impl_->enqueue_mutex, *impl_->algo, *impl_->replay,
              {x, w, nullptr, bias, y, workspace}, stream,
              [&](const detail::ConvAlgo& a, std::string* why) {
                return detail::check_forward_args(d, x, w, bias, y, workspace, workspace_bytes,
                                                  a.workspace_size(), a.has_filter(), why, dev);
              });
}

void Plan::backward_data(const void* dy, const void* w, void* dx, void* workspace,
                         std::size_t workspace_bytes, cudaStream_t stream) const {
  require_pass(impl_->desc, impl_->options.pass, Pass::kBackwardData, "backward_data");
  const ConvDesc& d = impl_->desc;
  run_checked(impl_->enqueue_mutex, *impl_->algo, *impl_->replay,
              {nullptr, w, dy, nullptr, dx, workspace}, stream,
              [&](const detail::ConvAlgo& a, std::string* why) {
                return detail::check_backward_data_args(d, dy, w, dx, workspace, workspace_bytes,
                                                        a.workspace_size(), a.has_filter(), why,
                                                        impl_->pointer_device);
              });
}

void Plan::backward_filter(const void* x, const void* dy, void* dw, void* workspace,
                           std::size_t workspace_bytes, cudaStream_t stream, float alpha,
                           float beta) const {
  require_pass(impl_->desc, impl_->options.pass, Pass::kBackwardFilter, "backward_filter");
  const ConvDesc& d = impl_->desc;
  const DType dw_dtype = impl_->options.dw_fp32 ? DType::kF32 : d.dtype;
  run_checked(impl_->enqueue_mutex, *impl_->algo, *impl_->replay,
              {x, nullptr, dy, nullptr, dw, workspace, alpha, beta}, stream,
              [&](const detail::ConvAlgo& a, std::string* why) {
                return detail::check_backward_filter_args(
                    d, x, dy, dw, dw_dtype, alpha, beta, workspace, workspace_bytes,
                    a.workspace_size(), why, impl_->pointer_device);
              });
}

namespace {

// The spectrum calls need a plan whose algorithm has one.
std::size_t require_spectrum(const Plan& plan, const detail::ConvAlgo& algo, const char* method) {
  const std::size_t bytes = algo.filter_spectrum_size();
  if (bytes == 0) {
    throw Error(Status::kNotSupported,
                std::string(method) + ": a plan of algo=" + algo_name(plan.info().algo) +
                    " pass=" + pass_name(plan.info().pass) +
                    " has no filter spectrum to share (the FFT path's forward and backward-data "
                    "plans have) [" +
                    plan.desc().to_string() + "]");
  }
  return bytes;
}

}  // namespace

std::size_t Plan::filter_spectrum_size() const { return impl_->algo->filter_spectrum_size(); }

bool Plan::shares_filter_spectrum(const Plan& other) const {
  const std::string mine = impl_->algo->filter_spectrum_layout();
  return !mine.empty() && mine == other.impl_->algo->filter_spectrum_layout();
}

void Plan::filter_spectrum(const void* w, void* spectrum, void* workspace,
                           std::size_t workspace_bytes, cudaStream_t stream) const {
  const std::size_t bytes = require_spectrum(*this, *impl_->algo, "filter_spectrum");
  std::lock_guard<std::mutex> lock(impl_->enqueue_mutex);
  std::string why;
  const Status st = detail::check_filter_spectrum_args(
      impl_->desc, w, {spectrum, bytes}, workspace, workspace_bytes,
      impl_->algo->workspace_size(), &why, impl_->pointer_device);
  if (st != Status::kSuccess) throw Error(st, "filter_spectrum: " + why);
  impl_->algo->filter_spectrum(w, spectrum, workspace, stream);
}

void Plan::forward_with_spectrum(const void* x, const void* spectrum, const void* bias, void* y,
                                 void* workspace, std::size_t workspace_bytes,
                                 cudaStream_t stream) const {
  require_pass(impl_->desc, impl_->options.pass, Pass::kForward, "forward_with_spectrum");
  const std::size_t bytes = require_spectrum(*this, *impl_->algo, "forward_with_spectrum");
  const ConvDesc& d = impl_->desc;
  const detail::FilterSpectrumArg spec{spectrum, bytes};
  detail::RunArgs args{x, nullptr, nullptr, bias, y, workspace};
  args.w_spectrum = spectrum;
  run_checked(impl_->enqueue_mutex, *impl_->algo, *impl_->replay, args, stream,
              [&](const detail::ConvAlgo& a, std::string* why) {
                return detail::check_forward_args(d, x, nullptr, bias, y, workspace,
                                                  workspace_bytes, a.workspace_size(), false,
                                                  why, impl_->pointer_device, &spec);
              });
}

void Plan::backward_data_with_spectrum(const void* dy, const void* spectrum, void* dx,
                                       void* workspace, std::size_t workspace_bytes,
                                       cudaStream_t stream) const {
  require_pass(impl_->desc, impl_->options.pass, Pass::kBackwardData,
               "backward_data_with_spectrum");
  const std::size_t bytes = require_spectrum(*this, *impl_->algo, "backward_data_with_spectrum");
  const ConvDesc& d = impl_->desc;
  const detail::FilterSpectrumArg spec{spectrum, bytes};
  detail::RunArgs args{nullptr, nullptr, dy, nullptr, dx, workspace};
  args.w_spectrum = spectrum;
  run_checked(impl_->enqueue_mutex, *impl_->algo, *impl_->replay, args, stream,
              [&](const detail::ConvAlgo& a, std::string* why) {
                return detail::check_backward_data_args(d, dy, nullptr, dx, workspace,
                                                        workspace_bytes, a.workspace_size(),
                                                        false, why, impl_->pointer_device, &spec);
              });
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
  if (impl_->pointer_device != detail::kNoPointerCheck) {
    const std::string why = detail::pointer_problem(w, impl_->pointer_device);
    if (!why.empty()) {
      throw Error(Status::kInvalidArgument,
                  "set_filter: w " + why + " [" + impl_->desc.to_string() + "]");
    }
  }
  std::lock_guard<std::mutex> lock(impl_->enqueue_mutex);
  impl_->replay->reset();
  impl_->algo->set_filter(w, stream);
}

void Plan::clear_filter() {
  std::lock_guard<std::mutex> lock(impl_->enqueue_mutex);
  impl_->replay->reset();
  impl_->algo->clear_filter();
}

bool Plan::has_filter() const {
  std::lock_guard<std::mutex> lock(impl_->enqueue_mutex);
  return impl_->algo->has_filter();
}

std::size_t Plan::filter_bytes() const {
  std::lock_guard<std::mutex> lock(impl_->enqueue_mutex);
  return impl_->algo->filter_bytes();
}

std::size_t Plan::replay_graphs() const {
  std::lock_guard<std::mutex> lock(impl_->enqueue_mutex);
  return impl_->replay->graphs();
}

std::vector<StageTime> Plan::profile_forward(const void* x, const void* w, const void* bias,
                                             void* y, void* workspace, std::size_t workspace_bytes,
                                             cudaStream_t stream, int iters) const {
  require_pass(impl_->desc, impl_->options.pass, Pass::kForward, "profile_forward");
  if (iters < 1) throw Error(Status::kInvalidArgument, "profile_forward: iters must be >= 1");
  std::lock_guard<std::mutex> lock(impl_->enqueue_mutex);
  std::string why;
  const detail::ConvAlgo& a = *impl_->algo;
  const Status st =
      detail::check_forward_args(impl_->desc, x, w, bias, y, workspace, workspace_bytes,
                                 a.workspace_size(), a.has_filter(), &why, impl_->pointer_device);
  if (st != Status::kSuccess) throw Error(st, why);
  return impl_->algo->profile_forward({x, w, nullptr, bias, y, workspace}, stream, iters);
}

}  // namespace fftconv
