// Choosing the algorithm of a plan from the implementation list: the forced entry, or Auto's
// ranking by estimate with the cheapest entry that can be built.
#include <algorithm>
#include <cstdio>

#include "algos/registry.h"
#include "core/check.h"
#include "core/device_buffer.h"
#include "core/log.h"
#include "core/timing.h"
#include "fftconv/device.hpp"
#include "stages/fill.h"
#include "tuning/tuning_cache.h"

namespace fftconv::detail {

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

// A forced Algo: the entry of the backend that implements it, or a message naming what does.
const AlgoFactory& forced_entry(const ConvDesc& d, Algo algo, Backend backend) {
  std::string here;
  for (const AlgoFactory* f : algorithm_list()) {
    if (f->backend() != backend) continue;
    if (f->algo() == algo) return *f;
    here += std::string(here.empty() ? "" : ", ") + f->name() + " (Algo::kAuto or " +
            (f->algo() == Algo::kFft ? "Algo::kFft" : algo_name(f->algo())) + ")";
  }
  const char* where = backend == Backend::kGpu ? "CPU" : "GPU";
  throw Error(Status::kNotSupported, std::string("algorithm ") + algo_name(algo) + " runs on the " +
                                         where + " only; the " + backend_name(backend) +
                                         " backend runs " + here + " [" + d.to_string() + "]");
}

std::unique_ptr<ConvAlgo> build_forced(const ConvDesc& d, const Options& o, Backend backend,
                                       PlanInfo* info, std::string* reason) {
  const AlgoFactory& f = forced_entry(d, o.algo, backend);
  std::string size_reason;
  auto algo = create_entry(f, d, o, /*first=*/true, &size_reason);
  AlgoCandidate c{f.name(), f.algo(), -1.0, true, "forced by Options::algo"};
  info->candidates.push_back(c);
  *reason = backend == Backend::kCpu
                ? size_reason
                : "requested" + (size_reason.empty() ? "" : "; " + size_reason);
  return algo;
}

struct Ranked {
  const AlgoFactory* factory;
  double us;
  std::string detail;
  std::unique_ptr<ConvAlgo> built;  // built while timing
  std::string built_reason;         // what its create() said then
  double timed_us = -1.0;           // median time where timed
};

// ---- measured choice (Tuning::kAutotune, kExhaustive) ------------------------------------------
// Under a tuning option Auto times, on the plan's own shapes, the GPU entries whose estimates
// are within kTimeWithin of the best one (kMaxTimed at most), built as they would run, and
// keeps the fastest: the estimates are 10-20% off on some rows (landmark_batch64's backward
// filter: 43.7 us estimated staged against 46.1 fused, 50 and 38 us measured), more than the
// gap between the two. Each call is timed cold (ColdTimer: the L2 flushed, the host's enqueueing
// included), as a network meets a layer: timed back to back, interleaved with the other
// candidates, seed3_landmark_same's forward pass took the fused path (32.4 us against 42.0
// staged), which takes 0.040 ms cold against the staged path's 0.022
// (data/results/h200/2026-12-04-wgrad, run 6). The winner is stored in the tuning cache under
// the key below.
constexpr double kTimeWithin = 4.0;
constexpr std::size_t kMaxTimed = 4;
constexpr int kTimedRounds = 5;
// The tensors a timing reads and writes; above, the estimate decides.
constexpr std::size_t kMaxTimingBytes = std::size_t{4} << 30;

std::string algorithm_cache_key(const ConvDesc& d, const Options& o) {
  return std::string(pass_name(o.pass)) + " " + d.to_string() + " algorithm cold" +
         (o.allow_tf32 ? " tf32" : "") + (o.dw_fp32 ? " dw-fp32" : "") +
         " ws<=" + std::to_string(o.workspace_limit) +
         (o.tuning == Tuning::kExhaustive ? " exhaustive" : "");
}

// The tensors a pass reads and writes, random, and the run arguments over them.
struct TimingBuffers {
  DeviceBuffer x, w, dy, out;
  RunArgs args;
  TimingBuffers(const ConvDesc& d, const Options& o, cudaStream_t st) {
    const std::size_t es = dtype_size(d.dtype);
    const DType out_dtype =
        o.pass == Pass::kBackwardFilter && o.dw_fp32 ? DType::kF32 : d.dtype;
    const std::int64_t out_elems = o.pass == Pass::kForward          ? d.y_elems()
                                   : o.pass == Pass::kBackwardData ? d.x_elems()
                                                                   : d.w_elems();
    if (o.pass != Pass::kBackwardData) x = DeviceBuffer(es * d.x_elems());
    if (o.pass != Pass::kBackwardFilter) w = DeviceBuffer(es * d.w_elems());
    if (o.pass != Pass::kForward) dy = DeviceBuffer(es * d.y_elems());
    out = DeviceBuffer(dtype_size(out_dtype) * out_elems);
    if (x) launch_fill_uniform(x.get(), d.x_elems(), d.dtype, 31, st);
    if (w) launch_fill_uniform(w.get(), d.w_elems(), d.dtype, 32, st);
    if (dy) launch_fill_uniform(dy.get(), d.y_elems(), d.dtype, 33, st);
    args.x = x.get();
    args.w = w.get();
    args.dy = dy.get();
    args.out = out.get();
  }
  static std::size_t bytes(const ConvDesc& d) {
    const std::size_t es = dtype_size(d.dtype);
    return es * std::size_t(d.x_elems() + d.w_elems() + d.y_elems()) +
           4 * std::size_t(std::max({d.x_elems(), d.w_elems(), d.y_elems()}));
  }
};

// Builds and times ranked[0 .. count) on the plan's shapes (interleaved rounds, medians);
// candidates that cannot be built or run here are left untimed. Returns the fastest's index, or
// -1 when fewer than two could be timed or the buffers would not fit; *text says what was timed.
int time_candidates(const ConvDesc& d, const Options& o, std::vector<Ranked>& ranked,
                    std::size_t count, std::string* text) {
  std::size_t free_bytes = 0, total_bytes = 0;
  FFTCONV_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  const std::size_t need = TimingBuffers::bytes(d);
  if (need > kMaxTimingBytes || need + kL2FlushBytes > free_bytes / 2) {
    *text = "not timed: its tensors (" + std::to_string(need) + " bytes) are too large to copy";
    return -1;
  }
  const PlanStream stream;
  const cudaStream_t st = stream.get();
  TimingBuffers buffers(d, o, st);
  const DeviceBuffer flush(kL2FlushBytes);
  ColdTimer cold(flush.get(), kL2FlushBytes);
  std::vector<DeviceBuffer> workspaces(count);
  std::vector<std::size_t> live;
  for (std::size_t i = 0; i < count; ++i) {
    try {
      ranked[i].built =
          create_entry(*ranked[i].factory, d, o, /*first=*/true, &ranked[i].built_reason);
      workspaces[i] = DeviceBuffer(ranked[i].built->workspace_size());
      RunArgs a = buffers.args;
      a.workspace = workspaces[i].get();
      ranked[i].built->run(a, st, nullptr);  // warm-up
      stream.synchronize();
      live.push_back(i);
    } catch (const Error& e) {
      if (e.status() != Status::kNotSupported && e.status() != Status::kOutOfMemory) throw;
      cudaGetLastError();
      ranked[i].built.reset();
      workspaces[i] = DeviceBuffer();
    }
  }
  if (live.size() < 2) {
    *text = "not timed: fewer than two candidates could run";
    return -1;
  }
  std::vector<std::vector<double>> ms(count);
  for (int round = 0; round < kTimedRounds; ++round) {
    for (std::size_t k = 0; k < live.size(); ++k) {
      const std::size_t i = live[round % 2 == 0 ? k : live.size() - 1 - k];
      RunArgs a = buffers.args;
      a.workspace = workspaces[i].get();
      ms[i].push_back(cold.time_ms([&] { ranked[i].built->run(a, st, nullptr); }, st));
    }
  }
  stream.synchronize();
  int best = -1;
  *text = "timed cold (median of " + std::to_string(kTimedRounds) + "):";
  for (std::size_t i : live) {
    ranked[i].timed_us = 1000.0 * median(ms[i]);
    *text += std::string(text->back() == ':' ? " " : ", ") + ranked[i].factory->name() + " " +
             us_text(ranked[i].timed_us);
    if (best < 0 || ranked[i].timed_us < ranked[std::size_t(best)].timed_us) best = int(i);
  }
  return best;
}

// Under a tuning option: puts the measured (or cached) winner first in `ranked`, built where it
// was timed; *text gains what decided.
void measured_order(const ConvDesc& d, const Options& o, std::vector<Ranked>& ranked,
                    std::string* text) {
  const TunedChoice cached(o, algorithm_cache_key(d, o));
  auto index_of = [&](const std::string& name) {
    for (std::size_t i = 0; i < ranked.size(); ++i) {
      if (name == ranked[i].factory->name()) return int(i);
    }
    return -1;
  };
  int winner = -1;
  if (auto hit = cached.find([&](const std::string& c) { return index_of(c) >= 0; },
                             "algorithm")) {
    winner = index_of(hit->choice);
    *text += "; algorithm from tuning cache " + cached.path();
  } else {
    std::size_t count = 0;
    while (count < ranked.size() && count < kMaxTimed &&
           ranked[count].us <= kTimeWithin * ranked[0].us) {
      ++count;
    }
    if (count < 2) return;
    std::string timed;
    winner = time_candidates(d, o, ranked, count, &timed);
    *text += "; " + timed;
    if (winner >= 0) cached.store(ranked[std::size_t(winner)].factory->name(),
                                  ranked[std::size_t(winner)].timed_us / 1000.0);
  }
  if (winner > 0) std::rotate(ranked.begin(), ranked.begin() + winner, ranked.begin() + winner + 1);
  // The losers' plans are not kept.
  for (std::size_t i = 1; i < ranked.size(); ++i) ranked[i].built.reset();
}

std::unique_ptr<ConvAlgo> build_auto(const ConvDesc& d, const Options& o, Backend backend,
                                     PlanInfo* info, std::string* reason) {
  std::vector<Ranked> ranked;
  std::vector<AlgoCandidate> rejected;
  for (const AlgoFactory* f : algorithm_list()) {
    if (f->backend() != backend) continue;
    const Support s = entry_support(*f, d, o);
    if (!s.ok()) {
      rejected.push_back({f->name(), f->algo(), -1.0, false, "not possible: " + s.reason});
      continue;
    }
    std::string detail;
    const double us = entry_estimate_us(*f, d, o, &detail);
    ranked.push_back({f, us, detail, nullptr, std::string(), -1.0});
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const Ranked& a, const Ranked& b) { return a.us < b.us; });
  std::string text = "auto:";
  if (ranked.size() == 1 && rejected.empty()) {
    // Nothing to rank it against: no estimate to show.
    text += std::string(" ") + ranked[0].factory->name() + " (the only " + backend_name(backend) +
            " algorithm)";
  } else {
    for (const Ranked& r : ranked) {
      text += std::string(text.size() > 5 ? ", " : " ") + r.factory->name() + " " + r.detail + " " +
              us_text(r.us);
    }
  }
  for (const AlgoCandidate& c : rejected) text += "; " + c.name + " " + c.note;
  if (backend == Backend::kGpu && o.tuning != Tuning::kHeuristic && ranked.size() > 1) {
    measured_order(d, o, ranked, &text);
  }

  std::unique_ptr<ConvAlgo> algo;
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    const AlgoFactory& f = *ranked[i].factory;
    AlgoCandidate c{f.name(), f.algo(), ranked[i].us, false, ranked[i].detail};
    const std::string timed =
        ranked[i].timed_us >= 0 ? "; timed " + us_text(ranked[i].timed_us) : std::string();
    if (algo) {
      c.note = (ranked[i].timed_us >= 0 ? "not tried: a faster algorithm was built"
                                         : "not tried: a higher-ranked algorithm was built") +
               timed;
      info->candidates.push_back(c);
      continue;
    }
    try {
      std::string size_reason = ranked[i].built_reason;
      algo = ranked[i].built ? std::move(ranked[i].built)
                             : create_entry(f, d, o, /*first=*/i == 0, &size_reason);
      c.chosen = true;
      text += std::string("; chose ") + f.name() + (size_reason.empty() ? "" : "; " + size_reason);
    } catch (const Error& e) {
      if (e.status() != Status::kNotSupported && e.status() != Status::kOutOfMemory) throw;
      c.note = std::string("not possible: ") + e.what();
      text += std::string("; ") + f.name() + " " + c.note;
    }
    c.note += timed;
    info->candidates.push_back(c);
  }
  info->candidates.insert(info->candidates.end(), rejected.begin(), rejected.end());
  if (!algo) {
    throw Error(Status::kNotSupported, "no algorithm can run " + d.to_string() + " (" + text + ")");
  }
  *reason = text;
  return algo;
}

}  // namespace

std::string us_text(double us) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f us", us);
  return buf;
}

Backend resolve_backend(Backend requested) {
  switch (requested) {
    case Backend::kGpu:
    case Backend::kCpu:
      return requested;
    case Backend::kAuto:
      return device_count() > 0 ? Backend::kGpu : Backend::kCpu;
  }
  throw Error(Status::kInvalidArgument, "Options::backend has the invalid value " +
                                            std::to_string(static_cast<int>(requested)));
}

std::vector<RankedAlgo> auto_ranking(const ConvDesc& d, const Options& o) {
  const Backend backend = resolve_backend(o.backend);
  std::vector<RankedAlgo> ranked;
  for (const AlgoFactory* f : algorithm_list()) {
    if (f->backend() != backend || !entry_support(*f, d, o).ok()) continue;
    ranked.push_back({f->algo(), entry_estimate_us(*f, d, o, nullptr)});
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const RankedAlgo& a, const RankedAlgo& b) { return a.us < b.us; });
  return ranked;
}

Algo auto_first_choice(const ConvDesc& d, const Options& o) {
  const std::vector<RankedAlgo> ranked = auto_ranking(d, o);
  return ranked.empty() ? Algo::kAuto : ranked.front().algo;
}

std::unique_ptr<ConvAlgo> build_algorithm(const ConvDesc& d, const Options& o, PlanInfo* info) {
  const Backend backend = resolve_backend(o.backend);
  if (backend == Backend::kGpu) require_device();
  std::string reason;
  std::unique_ptr<ConvAlgo> algo = o.algo == Algo::kAuto
                                       ? build_auto(d, o, backend, info, &reason)
                                       : build_forced(d, o, backend, info, &reason);
  if (backend == Backend::kGpu && o.algo == Algo::kAuto) {
    double built_us = 0.0;
    for (const AlgoCandidate& c : info->candidates) {
      if (c.chosen) built_us = c.estimate_us;
    }
    algo = with_kept_separable(d, o, std::move(algo), built_us);
  }
  algo->fill_info(*info);
  info->pass = o.pass;
  info->backend = backend;
  info->reason = info->reason.empty() ? reason
                 : reason.empty()     ? info->reason
                                      : reason + "; " + info->reason;
  log(LogLevel::kInfo, d.to_string() + " " + pass_name(o.pass) + ": " + info->reason);
  return algo;
}

}  // namespace fftconv::detail
