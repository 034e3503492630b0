#include "algos/fft_full.h"

#include <algorithm>
#include <cstdio>
#include <limits>

#include "core/check.h"
#include "stages/fill.h"
#include "tuning/tuning_cache.h"
#include "stages/stages.h"
#include "tuning/gemm_select.h"
#include "tuning/heuristics.h"

namespace fftconv::detail {

namespace {
std::int64_t planes_in(const ConvDesc& d) { return d.n * d.c + d.k * d.c_per_group(); }
std::int64_t planes_out(const ConvDesc& d) { return d.n * d.k; }

std::string mib(std::size_t bytes) { return std::to_string((bytes + (1 << 20) - 1) >> 20) + " MiB"; }
}  // namespace

std::size_t FftFullAlgo::spectrum_bytes(const ConvDesc& d, const FftGeometry& g) {
  const std::size_t plane = static_cast<std::size_t>(g.bins) * 8;
  return align_up(plane * planes_in(d)) + align_up(plane * planes_out(d));
}

Support FftFullAlgo::can_implement(const ConvDesc& d, const Options& o, const FftGeometry& g) {
  const std::size_t need = spectrum_bytes(d, g);
  if (need > o.workspace_limit) {
    return Support::no(Status::kOutOfMemory,
                       "fft " + std::to_string(g.fft_h) + "x" + std::to_string(g.fft_w) +
                           " needs " + std::to_string(need) + " bytes (" + mib(need) +
                           ") of spectra, over the workspace limit of " +
                           std::to_string(o.workspace_limit) + " bytes");
  }
  return Support::yes();
}

FftFullAlgo::FftFullAlgo(const ConvDesc& d, const Options& o, const FftGeometry& g)
    : d_(d), g_(g), gemm_(forward_gemm_problem(d, g)) {
  const GemmChoice choice = select_cgemm(
      gemm_, o,
      "fwd " + d_.to_string() + " fft=" + std::to_string(g_.fft_h) + "x" + std::to_string(g_.fft_w));
  runner_ = make_cgemm_runner(*choice.kernel);
  gemm_reason_ = choice.reason;
  r2c_ = std::make_unique<CufftPlan2d>(FftDirection::kR2C, g_, planes_in(d_));
  c2r_ = std::make_unique<CufftPlan2d>(FftDirection::kC2R, g_, planes_out(d_));
  const std::size_t plane = static_cast<std::size_t>(g_.bins) * 8;
  off_out_ = align_up(plane * planes_in(d_));
  off_work_ = off_out_ + align_up(plane * planes_out(d_));
  off_gemm_ = off_work_ + align_up(std::max(r2c_->work_size(), c2r_->work_size()));
  workspace_ = off_gemm_ + align_up(runner_->workspace_size(gemm_));
  if (workspace_ > o.workspace_limit) {
    throw Error(Status::kOutOfMemory, "fft " + std::to_string(g_.fft_h) + "x" +
                                          std::to_string(g_.fft_w) + " needs a workspace of " +
                                          std::to_string(workspace_) + " bytes (" +
                                          mib(workspace_) + "), over the limit of " +
                                          std::to_string(o.workspace_limit) + " bytes");
  }
}

void FftFullAlgo::forward(const FwdArgs& a, cudaStream_t stream, StageMarks* marks) {
  auto* base = static_cast<unsigned char*>(a.workspace);
  auto* spec_in = reinterpret_cast<float*>(base);
  auto* spec_out = reinterpret_cast<float*>(base + off_out_);
  void* work = base + off_work_;
  const std::int64_t x_planes = d_.n * d_.c;
  const std::int64_t w_planes = d_.k * d_.c_per_group();

  // 1. zero-pad input (offset by the padding) and filter (at the origin, dilated) into one batch.
  const PadSegment segs[2] = {
      {a.x, spec_in, x_planes, Placement{d_.h, d_.w, d_.pad_h, d_.pad_w, 1, 1}},
      {a.w, spec_in + x_planes * g_.real_plane_floats(), w_planes,
       Placement{d_.r, d_.s, 0, 0, d_.dil_h, d_.dil_w}},
  };
  launch_pad(segs, 2, d_.dtype, g_, stream);
  if (marks) marks->mark("pad", stream);
  // 2. one r2c over input and filter planes.
  r2c_->exec(spec_in, work, stream);
  if (marks) marks->mark("r2c", stream);
  // 3. per-frequency GEMM: Y[n,k,f] = sum_c X[n,c,f] * conj(W[k,c,f]), per group.
  CgemmOperands ops;
  ops.a = reinterpret_cast<const float2*>(spec_in);
  ops.b = reinterpret_cast<const float2*>(spec_in) + x_planes * g_.bins;
  ops.c = reinterpret_cast<float2*>(spec_out);
  runner_->run(gemm_, ops, base + off_gemm_, stream);
  if (marks) marks->mark("gemm", stream);
  // 4. c2r in place.
  c2r_->exec(spec_out, work, stream);
  if (marks) marks->mark("c2r", stream);
  // 5. valid window, 1/(Fh*Fw) scale, stride, bias, output dtype.
  ClipArgs clip;
  clip.src = spec_out;
  clip.y = a.y;
  clip.bias = a.bias;
  clip.planes = planes_out(d_);
  clip.k = d_.k;
  clip.out_h = d_.out_h();
  clip.out_w = d_.out_w();
  clip.stride_h = d_.stride_h;
  clip.stride_w = d_.stride_w;
  clip.scale = static_cast<float>(1.0 / (double(g_.fft_h) * double(g_.fft_w)));
  launch_clip(clip, d_.dtype, g_, stream);
  if (marks) marks->mark("clip", stream);
}

namespace {
// Sizes timed by the FFT-size autotune: the cost model's ranking is rarely off by more than this.
constexpr std::size_t kFftSizeCandidates = 3;
constexpr int kFftSizeRuns = 3;

struct Scratch {
  void* ptr = nullptr;
  explicit Scratch(std::size_t bytes) {
    if (bytes) FFTCONV_CUDA_CHECK(cudaMalloc(&ptr, bytes));
  }
  ~Scratch() {
    if (ptr) cudaFree(ptr);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
};

std::string size_name(const FftGeometry& g) {
  return std::to_string(g.fft_h) + "x" + std::to_string(g.fft_w);
}
}  // namespace

FftGeometry FftFullAlgo::tune_geometry(const ConvDesc& d, const Options& o, std::string* reason) {
  const std::string path = o.tuning_cache.empty() ? tuning_cache_path_from_env() : o.tuning_cache;
  const std::string device = tuning_device_name();
  const std::string key = "fwd " + d.to_string() + " fft-size";
  if (!path.empty()) {
    if (auto hit = tuning_cache(path).lookup(device, key)) {
      long long fh = 0, fw = 0;
      if (std::sscanf(hit->choice.c_str(), "%lldx%lld", &fh, &fw) == 2 && fh >= min_fft_h(d) &&
          fw >= min_fft_w(d)) {
        if (reason) *reason = "fft size from tuning cache " + path;
        return make_fft_geometry(d, fh, fw);
      }
      std::fprintf(stderr, "fftconv: warning: tuning cache %s has an unusable FFT size '%s'; retuning\n",
                   path.c_str(), hit->choice.c_str());
    }
  }
  const std::vector<FftGeometry> candidates = ranked_fft_geometries(d, kFftSizeCandidates);
  const std::size_t es = dtype_size(d.dtype);
  Scratch x(es * d.x_elems()), w(es * d.w_elems()), y(es * d.y_elems());
  launch_fill_uniform(x.ptr, d.x_elems(), d.dtype, 21, nullptr);
  launch_fill_uniform(w.ptr, d.w_elems(), d.dtype, 22, nullptr);
  Options heuristic = o;
  heuristic.tuning = Tuning::kHeuristic;
  cudaEvent_t start, stop;
  FFTCONV_CUDA_CHECK(cudaEventCreate(&start));
  FFTCONV_CUDA_CHECK(cudaEventCreate(&stop));
  double best_ms = std::numeric_limits<double>::infinity();
  FftGeometry best = candidates.front();
  std::string timings;
  try {
    for (const FftGeometry& g : candidates) {
      if (!can_implement(d, o, g).ok()) continue;
      FftFullAlgo algo(d, heuristic, g);
      Scratch ws(algo.workspace_size());
      const FwdArgs args{x.ptr, w.ptr, nullptr, y.ptr, ws.ptr};
      algo.forward(args, nullptr, nullptr);  // warm-up
      std::vector<float> ms;
      for (int i = 0; i < kFftSizeRuns; ++i) {
        FFTCONV_CUDA_CHECK(cudaEventRecord(start, nullptr));
        algo.forward(args, nullptr, nullptr);
        FFTCONV_CUDA_CHECK(cudaEventRecord(stop, nullptr));
        FFTCONV_CUDA_CHECK(cudaEventSynchronize(stop));
        float e = 0.0f;
        FFTCONV_CUDA_CHECK(cudaEventElapsedTime(&e, start, stop));
        ms.push_back(e);
      }
      std::sort(ms.begin(), ms.end());
      char buf[64];
      std::snprintf(buf, sizeof(buf), "%s%s %.4f ms", timings.empty() ? "" : ", ",
                    size_name(g).c_str(), ms[ms.size() / 2]);
      timings += buf;
      if (ms[ms.size() / 2] < best_ms) {
        best_ms = ms[ms.size() / 2];
        best = g;
      }
    }
  } catch (...) {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    throw;
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  if (!path.empty() && best_ms < std::numeric_limits<double>::infinity()) {
    tuning_cache(path).store({device, key, size_name(best), best_ms});
  }
  if (reason) *reason = "fft size autotuned [" + timings + "]";
  return best;
}

void FftFullAlgo::fill_info(PlanInfo& info) const {
  info.algo = Algo::kFft;
  info.fft_h = g_.fft_h;
  info.fft_w = g_.fft_w;
  info.gemm = runner_->kernel().name;
  info.gemm_flops = gemm_.flops();
  info.gemm_min_bytes = gemm_.min_bytes();
  info.workspace_bytes = workspace_;
  info.reason = gemm_reason_;
}

}  // namespace fftconv::detail
