#include "tuning/gemm_select.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "core/check.h"
#include "core/device_buffer.h"
#include "core/device_info.h"
#include "core/timing.h"
#include "stages/fill.h"
#include "tuning/heuristics.h"
#include "tuning/tuning_cache.h"

namespace fftconv::detail {

namespace {

constexpr int kAutotuneRuns = 5;
// A candidate slower than this multiple of the best after one run is not timed further.
constexpr double kEarlyStopRatio = 2.0;

/// Shared memory a block may use where the device runs TF32 MMA (sm_80 on); 0 where it does not.
std::size_t current_tc_smem() {
  int dev = 0, major = 0, smem = 0;
  FFTCONV_CUDA_CHECK(cudaGetDevice(&dev));
  FFTCONV_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  if (major < 8) return 0;
  FFTCONV_CUDA_CHECK(cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  return static_cast<std::size_t>(smem);
}

std::string fmt_ms(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.4f ms", ms);
  return buf;
}

}  // namespace

std::vector<GemmTiming> time_cgemm_candidates(const CgemmProblem& p,
                                              const std::vector<const CgemmKernel*>& candidates,
                                              int runs) {
  DeviceBuffer a(8 * static_cast<std::size_t>(p.a_extent()));
  DeviceBuffer b(8 * static_cast<std::size_t>(p.b_extent()));
  DeviceBuffer c(8 * static_cast<std::size_t>(p.c_extent()));
  // Random operands: timing on zeros can flatter kernels.
  const PlanStream stream;
  const cudaStream_t st = stream.get();
  launch_fill_uniform(a.get(), 2 * p.a_extent(), DType::kF32, 11, st);
  launch_fill_uniform(b.get(), 2 * p.b_extent(), DType::kF32, 12, st);
  const CgemmOperands ops{a.as<const float2>(), b.as<const float2>(), c.as<float2>(), 1.0f};
  GpuTimer timer;
  std::vector<GemmTiming> out;
  double best = std::numeric_limits<double>::infinity();
  for (const CgemmKernel* k : candidates) {
    GemmTiming t{k, std::numeric_limits<double>::infinity()};
    try {
      auto runner = make_cgemm_runner(*k);
      DeviceBuffer ws(runner->workspace_size(p));
      runner->run(p, ops, ws.get(), st);  // warm-up
      std::vector<double> ms;
      for (int i = 0; i < runs; ++i) {
        timer.start(st);
        runner->run(p, ops, ws.get(), st);
        timer.stop(st);
        ms.push_back(timer.elapsed_ms());
        if (i == 0 && ms.back() > kEarlyStopRatio * best) break;
      }
      stream.synchronize();  // before ws is freed
      t.ms = median(std::move(ms));
      best = std::min(best, t.ms);
    } catch (const Error& e) {
      if (e.status() != Status::kOutOfMemory && e.status() != Status::kNotSupported) throw;
      cudaGetLastError();  // a candidate that cannot run here is skipped
    }
    out.push_back(t);
  }
  return out;
}

GemmChoice select_cgemm(const CgemmProblem& p, const Options& o, const std::string& key) {
  if (!o.gemm_kernel.empty()) return {&cgemm_kernel(o.gemm_kernel), "gemm forced by options"};
  if (o.tuning == Tuning::kHeuristic) {
    return {&choose_cgemm(p, current_sm_count(), current_tc_smem()), "gemm by heuristic"};
  }
  const TunedChoice cached(o, key + (o.tuning == Tuning::kExhaustive ? " exhaustive" : ""));
  const auto known = [](const std::string& name) {
    for (const CgemmKernel& k : cgemm_kernels()) {
      if (name == k.name) return true;
    }
    return false;
  };
  if (auto hit = cached.find(known, "GEMM")) {
    return {&cgemm_kernel(hit->choice),
            "gemm from tuning cache " + cached.path() + " (" + fmt_ms(hit->ms) + ")"};
  }
  std::vector<const CgemmKernel*> candidates;
  for (const CgemmKernel& k : cgemm_kernels()) {
    if (k.own() || o.tuning == Tuning::kExhaustive) candidates.push_back(&k);
  }
  const std::vector<GemmTiming> times = time_cgemm_candidates(p, candidates, kAutotuneRuns);
  const auto best =
      std::min_element(times.begin(), times.end(),
                       [](const GemmTiming& x, const GemmTiming& y) { return x.ms < y.ms; });
  FFTCONV_ASSERT(best != times.end() && std::isfinite(best->ms), "no GEMM candidate could run");
  cached.store(best->kernel->name, best->ms);
  return {best->kernel, std::string("gemm autotuned over ") + std::to_string(times.size()) +
                            " candidates (" + fmt_ms(best->ms) + ")" +
                            (cached.path().empty() ? "" : ", stored in " + cached.path())};
}

}  // namespace fftconv::detail
