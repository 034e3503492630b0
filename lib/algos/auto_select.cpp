// Choosing the algorithm of a plan from the implementation list: the forced entry, or Auto's
// ranking by estimate with the cheapest entry that can be built.
#include <algorithm>
#include <cstdio>

#include "algos/registry.h"
#include "core/log.h"
#include "fftconv/device.hpp"

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
  auto algo = f.create(d, o, /*first=*/true, &size_reason);
  AlgoCandidate c{f.name(), f.algo(), -1.0, true, "forced by Options::algo"};
  info->candidates.push_back(c);
  *reason = backend == Backend::kCpu
                ? size_reason
                : "requested" + (size_reason.empty() ? "" : "; " + size_reason);
  return algo;
}

std::unique_ptr<ConvAlgo> build_auto(const ConvDesc& d, const Options& o, Backend backend,
                                     PlanInfo* info, std::string* reason) {
  struct Ranked {
    const AlgoFactory* factory;
    double us;
    std::string detail;
  };
  std::vector<Ranked> ranked;
  std::vector<AlgoCandidate> rejected;
  for (const AlgoFactory* f : algorithm_list()) {
    if (f->backend() != backend) continue;
    const Support s = f->can_implement(d, o);
    if (!s.ok()) {
      rejected.push_back({f->name(), f->algo(), -1.0, false, "not possible: " + s.reason});
      continue;
    }
    std::string detail;
    const double us = f->estimate_us(d, o, &detail);
    ranked.push_back({f, us, detail});
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

  std::unique_ptr<ConvAlgo> algo;
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    const AlgoFactory& f = *ranked[i].factory;
    AlgoCandidate c{f.name(), f.algo(), ranked[i].us, false, ranked[i].detail};
    if (algo) {
      c.note = "not tried: a higher-ranked algorithm was built";
      info->candidates.push_back(c);
      continue;
    }
    try {
      std::string size_reason;
      algo = f.create(d, o, /*first=*/i == 0, &size_reason);
      c.chosen = true;
      text += std::string("; chose ") + f.name() + (size_reason.empty() ? "" : "; " + size_reason);
    } catch (const Error& e) {
      if (e.status() != Status::kNotSupported && e.status() != Status::kOutOfMemory) throw;
      c.note = std::string("not possible: ") + e.what();
      text += std::string("; ") + f.name() + " " + c.note;
    }
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
    if (f->backend() != backend || !f->can_implement(d, o).ok()) continue;
    ranked.push_back({f->algo(), f->estimate_us(d, o, nullptr)});
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
