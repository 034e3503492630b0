#include "tuning/gemm_select.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "core/check.h"
#include "stages/fill.h"
#include "tuning/heuristics.h"
#include "tuning/tuning_cache.h"

namespace fftconv::detail {

namespace {

constexpr int kAutotuneRuns = 5;
// A candidate slower than this multiple of the best after one run is not timed further.
constexpr double kEarlyStopRatio = 2.0;

int current_sm_count() {
  int dev = 0, sms = 0;
  FFTCONV_CUDA_CHECK(cudaGetDevice(&dev));
  FFTCONV_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  return sms;
}

struct DeviceScratch {
  void* ptr = nullptr;
  explicit DeviceScratch(std::size_t bytes) {
    if (bytes) FFTCONV_CUDA_CHECK(cudaMalloc(&ptr, bytes));
  }
  ~DeviceScratch() {
    if (ptr) cudaFree(ptr);
  }
  DeviceScratch(const DeviceScratch&) = delete;
  DeviceScratch& operator=(const DeviceScratch&) = delete;
};

struct Events {
  cudaEvent_t start = nullptr, stop = nullptr;
  Events() {
    FFTCONV_CUDA_CHECK(cudaEventCreate(&start));
    FFTCONV_CUDA_CHECK(cudaEventCreate(&stop));
  }
  ~Events() {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
};

std::string fmt_ms(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.4f ms", ms);
  return buf;
}

}  // namespace

std::string tuning_device_name() {
  int dev = 0;
  FFTCONV_CUDA_CHECK(cudaGetDevice(&dev));
  cudaDeviceProp prop{};
  FFTCONV_CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
  return std::string(prop.name) + " sm_" + std::to_string(prop.major) + std::to_string(prop.minor) +
         " " + std::to_string(prop.multiProcessorCount) + "SM";
}

std::vector<GemmTiming> time_cgemm_candidates(const CgemmProblem& p,
                                              const std::vector<const CgemmKernel*>& candidates,
                                              int runs) {
  DeviceScratch a(8 * static_cast<std::size_t>(p.a_extent()));
  DeviceScratch b(8 * static_cast<std::size_t>(p.b_extent()));
  DeviceScratch c(8 * static_cast<std::size_t>(p.c_extent()));
  // Random operands: timing on zeros can flatter kernels.
  launch_fill_uniform(a.ptr, 2 * p.a_extent(), DType::kF32, 11, nullptr);
  launch_fill_uniform(b.ptr, 2 * p.b_extent(), DType::kF32, 12, nullptr);
  FFTCONV_CUDA_CHECK(cudaDeviceSynchronize());
  const CgemmOperands ops{static_cast<const float2*>(a.ptr), static_cast<const float2*>(b.ptr),
                          static_cast<float2*>(c.ptr), 1.0f};
  Events ev;
  std::vector<GemmTiming> out;
  double best = std::numeric_limits<double>::infinity();
  for (const CgemmKernel* k : candidates) {
    GemmTiming t{k, std::numeric_limits<double>::infinity()};
    try {
      auto runner = make_cgemm_runner(*k);
      DeviceScratch ws(runner->workspace_size(p));
      runner->run(p, ops, ws.ptr, nullptr);  // warm-up
      std::vector<float> ms;
      for (int i = 0; i < runs; ++i) {
        FFTCONV_CUDA_CHECK(cudaEventRecord(ev.start, nullptr));
        runner->run(p, ops, ws.ptr, nullptr);
        FFTCONV_CUDA_CHECK(cudaEventRecord(ev.stop, nullptr));
        FFTCONV_CUDA_CHECK(cudaEventSynchronize(ev.stop));
        float e = 0.0f;
        FFTCONV_CUDA_CHECK(cudaEventElapsedTime(&e, ev.start, ev.stop));
        ms.push_back(e);
        if (i == 0 && e > kEarlyStopRatio * best) break;
      }
      std::sort(ms.begin(), ms.end());
      t.ms = ms[ms.size() / 2];
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
    return {&choose_cgemm(p, current_sm_count()), "gemm by heuristic"};
  }
  const std::string path = o.tuning_cache.empty() ? tuning_cache_path_from_env() : o.tuning_cache;
  const std::string device = tuning_device_name();
  const std::string cache_key = key + (o.tuning == Tuning::kExhaustive ? " exhaustive" : "");
  if (!path.empty()) {
    if (auto hit = tuning_cache(path).lookup(device, cache_key)) {
      for (const CgemmKernel& k : cgemm_kernels()) {
        if (hit->choice == k.name) {
          return {&k, "gemm from tuning cache " + path + " (" + fmt_ms(hit->ms) + ")"};
        }
      }
      std::fprintf(stderr, "fftconv: warning: tuning cache %s names unknown GEMM '%s'; retuning\n",
                   path.c_str(), hit->choice.c_str());
    }
  }
  std::vector<const CgemmKernel*> candidates;
  for (const CgemmKernel& k : cgemm_kernels()) {
    if (k.own() || o.tuning == Tuning::kExhaustive) candidates.push_back(&k);
  }
  const std::vector<GemmTiming> times = time_cgemm_candidates(p, candidates, kAutotuneRuns);
  const auto best = std::min_element(times.begin(), times.end(),
                                     [](const GemmTiming& x, const GemmTiming& y) { return x.ms < y.ms; });
  FFTCONV_ASSERT(best != times.end() && std::isfinite(best->ms), "no GEMM candidate could run");
  if (!path.empty()) tuning_cache(path).store({device, cache_key, best->kernel->name, best->ms});
  return {best->kernel, std::string("gemm autotuned over ") + std::to_string(times.size()) +
                            " candidates (" + fmt_ms(best->ms) + ")" +
                            (path.empty() ? "" : ", stored in " + path)};
}

}  // namespace fftconv::detail
