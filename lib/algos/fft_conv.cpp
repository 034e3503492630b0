#include "algos/fft_conv.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <limits>

#include "core/check.h"
#include "core/device_buffer.h"
#include "core/timing.h"
#include "fft/pad_load.h"
#include "stages/fill.h"
#include "stages/stages.h"
#include "tuning/gemm_select.h"
#include "tuning/heuristics.h"
#include "tuning/tuning_cache.h"

namespace fftconv::detail {

namespace {

// The filter segment of the passes that read one (forward: b, backward data: b).
bool has_filter_input(Pass pass) { return pass != Pass::kBackwardFilter; }

std::string mib(std::size_t bytes) {
  return std::to_string((bytes + (1 << 20) - 1) >> 20) + " MiB";
}

std::string size_text(const FftGeometry& g) {
  return std::to_string(g.fft_h) + "x" + std::to_string(g.fft_w);
}

std::string what(const FftGeometry& g) { return (g.tiled ? "tiled fft " : "fft ") + size_text(g); }

std::string key_prefix(Pass pass) { return std::string(pass_name(pass)) + " "; }

// Sizes timed by the FFT-size autotune: the cost model's ranking is rarely off by more than this.
constexpr std::size_t kFftSizeCandidates = 3;
constexpr int kFftSizeRuns = 3;

}  // namespace

std::size_t FftConvAlgo::spectrum_bytes(const ConvDesc& d, const FftGeometry& g, Pass pass) {
  const std::size_t plane = static_cast<std::size_t>(g.bins) * 8;
  const SpectrumPlanes p = spectrum_planes(d, g, pass);
  return align_up(plane * (p.a + p.b)) + align_up(plane * p.out);
}

Support FftConvAlgo::can_implement(const ConvDesc& d, const Options& o, const FftGeometry& g) {
  if (g.tiled && o.pass != Pass::kForward) {
    return Support::no(Status::kNotSupported,
                       std::string("overlap-save tiling implements the forward pass only, not ") +
                           pass_name(o.pass) + "; use the full-image FFT (Algo::kFft)");
  }
  const std::size_t need = spectrum_bytes(d, g, o.pass);
  if (need > o.workspace_limit) {
    return Support::no(Status::kOutOfMemory, what(g) + " needs " + std::to_string(need) +
                                                 " bytes (" + mib(need) +
                                                 ") of spectra, over the workspace limit of " +
                                                 std::to_string(o.workspace_limit) + " bytes");
  }
  return Support::yes();
}

FftConvAlgo::FftConvAlgo(const ConvDesc& d, const Options& o, const FftGeometry& g)
    : d_(d),
      pass_(o.pass),
      out_dtype_(o.pass == Pass::kBackwardFilter && o.dw_fp32 ? DType::kF32 : d.dtype),
      g_(g),
      planes_(spectrum_planes(d, g, o.pass)),
      gemm_(gemm_problem(d, g, o.pass)) {
  const GemmChoice choice = select_cgemm(
      gemm_, o,
      key_prefix(pass_) + d_.to_string() + (g_.tiled ? " tile=" : " fft=") + size_text(g_));
  runner_ = make_cgemm_runner(*choice.kernel);
  gemm_reason_ = choice.reason;
  FFTCONV_CUDA_CHECK(cudaGetDevice(&device_));
  if (o.own_fft) {
    std::string why;
    plane_fft_ = PlaneFft::make(g_, &why);
    plane_reason_ =
        plane_fft_ ? plane_fft_->describe() : "cuFFT, not the own plane kernels: " + why;
  }
  if (!plane_fft_) {
    if (o.fft_callbacks) pad_reason_ = make_pad_callbacks();
    // Without callbacks, and for calls whose tensors the callback plans cannot take.
    r2c_all_ = std::make_unique<CufftPlan2d>(FftDirection::kR2C, g_, planes_.a + planes_.b);
    if (has_filter_input(pass_)) {
      r2c_a_ = std::make_unique<CufftPlan2d>(FftDirection::kR2C, g_, planes_.a);
      r2c_w_ = std::make_unique<CufftPlan2d>(FftDirection::kR2C, g_, planes_.b);
    }
    c2r_ = std::make_unique<CufftPlan2d>(FftDirection::kC2R, g_, planes_.out);
  }
  const std::size_t plane = static_cast<std::size_t>(g_.bins) * 8;
  off_out_ = align_up(plane * (planes_.a + planes_.b));
  off_work_ = off_out_ + align_up(plane * planes_.out);
  const auto work = [](const std::unique_ptr<CufftPlan2d>& plan) {
    return plan ? plan->work_size() : std::size_t{0};
  };
  off_gemm_ = off_work_ + align_up(std::max({work(r2c_all_), work(r2c_a_), work(r2c_w_),
                                             work(r2c_cb_a_), work(r2c_cb_b_), work(c2r_)}));
  workspace_ = off_gemm_ + align_up(runner_->workspace_size(gemm_));
  if (workspace_ > o.workspace_limit) {
    throw Error(Status::kOutOfMemory, what(g_) + " needs a workspace of " +
                                          std::to_string(workspace_) + " bytes (" +
                                          mib(workspace_) + "), over the limit of " +
                                          std::to_string(o.workspace_limit) + " bytes");
  }
}

FftConvAlgo::~FftConvAlgo() { clear_filter(); }

void FftConvAlgo::pad_segments(const RunArgs& a, float* spec_in, PadSegment (&segs)[2]) const {
  // Input x: offset by the padding, one plane per tile. Filter w: at the origin, dilated.
  // Output gradient dy: at the origin, spread by the stride (the stride-1 outputs it stands for).
  const Placement x_place{d_.h, d_.w, d_.pad_h, d_.pad_w, 1, 1};
  const Placement w_place{d_.r, d_.s, 0, 0, d_.dil_h, d_.dil_w};
  const Placement dy_place{d_.out_h(), d_.out_w(), 0, 0, d_.stride_h, d_.stride_w};
  float* spec_b = spec_in ? spec_in + planes_.a * g_.real_plane_floats() : nullptr;
  switch (pass_) {
    case Pass::kForward: {
      const TileMap x_map{d_.c, g_.tiles_h, g_.tiles_w, g_.tile_out_h * d_.stride_h,
                          g_.tile_out_w * d_.stride_w};
      segs[0] = {a.x, spec_in, planes_.a, x_place, x_map};
      segs[1] = {a.w, spec_b, planes_.b, w_place, TileMap{}};
      break;
    }
    case Pass::kBackwardData:
      segs[0] = {a.dy, spec_in, planes_.a, dy_place, TileMap{}};
      segs[1] = {a.w, spec_b, planes_.b, w_place, TileMap{}};
      break;
    case Pass::kBackwardFilter:
      segs[0] = {a.x, spec_in, planes_.a, x_place, TileMap{}};
      segs[1] = {a.dy, spec_b, planes_.b, dy_place, TileMap{}};
      break;
  }
}

std::string FftConvAlgo::make_pad_callbacks() {
  PadSegment segs[2];
  pad_segments(RunArgs{}, nullptr, segs);
  PadLoadInfo infos[2];
  for (int i = 0; i < 2; ++i) {
    const Placement& pl = segs[i].place;
    const TileMap& m = segs[i].map;
    if (pl.step_h < 1 || pl.step_w < 1 || m.inner < 1 || m.tiles_h < 1 || m.tiles_w < 1) {
      return "pad kernel: a placement the load callback does not take";
    }
    // 32-bit indices: every offset of the segment's r2c input, every source element.
    const std::int64_t offsets = segs[i].planes * g_.real_plane_floats();
    const std::int64_t sources = (segs[i].planes / (m.tiles_h * m.tiles_w)) * pl.src_h * pl.src_w;
    const std::int64_t low_h = pl.off_h - (m.tiles_h - 1) * m.step_h;
    const std::int64_t low_w = pl.off_w - (m.tiles_w - 1) * m.step_w;
    constexpr std::int64_t kMax = std::int64_t{1} << 31;
    if (offsets >= kMax || sources >= kMax || g_.fft_h - low_h >= kMax ||
        g_.fft_w - low_w >= kMax || pl.step_h >= kMax || pl.step_w >= kMax ||
        m.tiles_h * m.tiles_w * m.inner >= kMax) {
      return "pad kernel: the planes exceed the load callback's 32-bit indices";
    }
    infos[i] = pad_load_info(pl, m, g_);
  }
  try {
    DeviceBuffer info(sizeof(infos));
    FFTCONV_CUDA_CHECK(cudaMemcpy(info.get(), infos, sizeof(infos), cudaMemcpyHostToDevice));
    const auto* dev = info.as<const PadLoadInfo>();
    auto a = std::make_unique<CufftPlan2d>(g_, planes_.a, PadLoadCallback{d_.dtype, dev});
    auto b = std::make_unique<CufftPlan2d>(g_, planes_.b, PadLoadCallback{d_.dtype, dev + 1});
    pad_info_ = std::move(info);
    r2c_cb_a_ = std::move(a);
    r2c_cb_b_ = std::move(b);
  } catch (const Error& e) {
    if (e.status() != Status::kNotSupported) throw;
    return std::string("pad kernel: ") + e.what();
  }
  return "pad in the r2c's load callback";
}

void FftConvAlgo::run(const RunArgs& a, cudaStream_t stream, StageMarks* marks) {
  auto* base = static_cast<unsigned char*>(a.workspace);
  auto* spec_in = reinterpret_cast<float*>(base);
  auto* spec_out = reinterpret_cast<float*>(base + off_out_);
  void* work = base + off_work_;
  // The filter: its spectrum in caller memory (filter_spectrum), the tensor w (padded and
  // transformed here), or the kept spectrum (set_filter).
  const bool shared_spectrum = has_filter_input(pass_) && a.w_spectrum != nullptr;
  const bool per_call_filter = !has_filter_input(pass_) || (a.w != nullptr && !shared_spectrum);
  FFTCONV_ASSERT(per_call_filter || shared_spectrum || kept_,
                 "a pass without a filter and none kept");
  if (!per_call_filter && !shared_spectrum) kept_fence_.mark(stream);

  // 1. zero-pad both operand segments into one batch of FFT planes, unless the filter spectrum
  //    is kept (pad_segments), and 2. one r2c over every plane padded. With the pad load
  //    callback, each segment's r2c reads its tensor directly instead.
  PadSegment segs[2];
  pad_segments(a, spec_in, segs);
  const auto aligned = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };
  if (plane_fft_) {
    plane_fft_->forward(segs, per_call_filter ? 2 : 1, d_.dtype, g_, stream);
    if (marks) marks->mark("pad+r2c", stream);
  } else if (r2c_cb_a_ && aligned(segs[0].src) && (!per_call_filter || aligned(segs[1].src))) {
    if (marks) marks->mark("pad", stream);
    r2c_cb_a_->exec_from(segs[0].src, segs[0].dst, work, stream);
    if (per_call_filter) r2c_cb_b_->exec_from(segs[1].src, segs[1].dst, work, stream);
  } else {
    launch_pad(segs, per_call_filter ? 2 : 1, d_.dtype, g_, stream);
    if (marks) marks->mark("pad", stream);
    (per_call_filter ? r2c_all_ : r2c_a_)->exec(spec_in, work, stream);
  }
  if (marks && !plane_fft_) marks->mark("r2c", stream);
  // 3. per-frequency GEMM of the pass (gemm_problem); m = image*tile in the forward pass.
  CgemmOperands ops;
  const auto* spec_a = reinterpret_cast<const float2*>(spec_in);
  const auto* spec_bc = per_call_filter   ? spec_a + planes_.a * g_.bins
                        : shared_spectrum ? static_cast<const float2*>(a.w_spectrum)
                                          : kept_.as<const float2>();
  // wgrad contracts A = DY (segment b) with B = X (segment a); the others A = segment a.
  ops.a = pass_ == Pass::kBackwardFilter ? spec_bc : spec_a;
  ops.b = pass_ == Pass::kBackwardFilter ? spec_a : spec_bc;
  ops.c = reinterpret_cast<float2*>(spec_out);
  runner_->run(gemm_, ops, base + off_gemm_, stream);
  if (marks) marks->mark("gemm", stream);
  // 4. c2r in place (below, or with the clip in the own plane kernel) and 5. the window of the
  //    pass, 1/(Fh*Fw) scale, output dtype; forward: stride and bias;
  //    backward data: the input window (offset by the padding); backward filter: the taps of
  //    the dilated kernel, alpha and beta.
  ClipArgs clip;
  clip.src = spec_out;
  clip.y = a.out;
  clip.bias = nullptr;
  const float scale = static_cast<float>(1.0 / (double(g_.fft_h) * double(g_.fft_w)));
  clip.scale = scale;
  FftGeometry clip_geometry = g_;
  switch (pass_) {
    case Pass::kForward:
      clip.bias = a.bias;
      clip.planes = d_.n * d_.k;
      clip.k = d_.k;
      clip.out_h = d_.out_h();
      clip.out_w = d_.out_w();
      clip.stride_h = d_.stride_h;
      clip.stride_w = d_.stride_w;
      break;
    case Pass::kBackwardData:
      clip.planes = d_.n * d_.c;
      clip.k = d_.c;
      clip.out_h = d_.h;
      clip.out_w = d_.w;
      clip.stride_h = clip.stride_w = 1;
      clip.off_h = d_.pad_h;
      clip.off_w = d_.pad_w;
      clip.wrap = false;
      break;
    case Pass::kBackwardFilter:
      clip.planes = planes_.out;
      clip.k = d_.k;
      clip.out_h = d_.r;
      clip.out_w = d_.s;
      clip.stride_h = d_.dil_h;
      clip.stride_w = d_.dil_w;
      clip.scale = a.alpha * scale;
      clip.beta = a.beta;
      break;
  }
  if (pass_ != Pass::kForward) {
    // One window per plane: the result planes are the output planes.
    clip_geometry.tile_out_h = clip.out_h;
    clip_geometry.tile_out_w = clip.out_w;
  }
  if (plane_fft_) {
    plane_fft_->inverse(clip, out_dtype_, clip_geometry, stream);
    if (marks) marks->mark("c2r+clip", stream);
    return;
  }
  c2r_->exec(spec_out, work, stream);
  if (marks) marks->mark("c2r", stream);
  launch_clip(clip, out_dtype_, clip_geometry, stream);
  if (marks) marks->mark("clip", stream);
}

std::size_t FftConvAlgo::filter_bytes() const {
  return kept_ ? static_cast<std::size_t>(planes_.b) * g_.bins * 8 : 0;
}

std::size_t FftConvAlgo::filter_spectrum_size() const {
  return has_filter_input(pass_) ? static_cast<std::size_t>(planes_.b) * g_.bins * 8 : 0;
}

std::string FftConvAlgo::filter_spectrum_layout() const {
  if (!has_filter_input(pass_)) return {};
  // The device too: plans on two GPUs never read each other's memory.
  return "gpu" + std::to_string(device_) + " " + dtype_name(d_.dtype) + " k" +
         std::to_string(d_.k) + " c" + std::to_string(d_.c_per_group()) + " r" +
         std::to_string(d_.r) + "s" + std::to_string(d_.s) + " d" + std::to_string(d_.dil_h) + "x" +
         std::to_string(d_.dil_w) + " fft " + size_text(g_);
}

void FftConvAlgo::transform_filter(const void* w, float* spectrum, void* work,
                                   cudaStream_t stream) const {
  const PadSegment seg{w, spectrum, planes_.b, Placement{d_.r, d_.s, 0, 0, d_.dil_h, d_.dil_w},
                       TileMap{}};
  if (plane_fft_) {
    plane_fft_->forward(&seg, 1, d_.dtype, g_, stream);
    return;
  }
  launch_pad(&seg, 1, d_.dtype, g_, stream);
  r2c_w_->exec(spectrum, work, stream);
}

void FftConvAlgo::filter_spectrum(const void* w, void* spectrum, void* workspace,
                                  cudaStream_t stream) {
  FFTCONV_ASSERT(has_filter_input(pass_), "filter_spectrum on a backward-filter plan");
  transform_filter(w, static_cast<float*>(spectrum),
                   static_cast<unsigned char*>(workspace) + off_work_, stream);
}

void FftConvAlgo::set_filter(const void* w, cudaStream_t stream) {
  if (!has_filter_input(pass_)) {
    throw Error(Status::kInvalidArgument,
                "set_filter: a backward-filter plan has no filter input [" + d_.to_string() + "]");
  }
  if (!kept_) {
    const std::size_t bytes = static_cast<std::size_t>(planes_.b) * g_.bins * 8;
    const std::size_t work_bytes = r2c_w_ ? r2c_w_->work_size() : 0;
    try {
      DeviceBuffer kept(bytes);
      DeviceBuffer work(work_bytes);
      kept_ = std::move(kept);
      kept_work_ = std::move(work);
    } catch (const Error& e) {
      throw Error(e.status(), "set_filter: keeping the filter spectrum needs " +
                                  std::to_string(bytes) + " bytes (" + mib(bytes) + ") and " +
                                  std::to_string(work_bytes) +
                                  " bytes of cuFFT scratch: " + e.what());
    }
  }
  transform_filter(w, kept_.as<float>(), kept_work_.get(), stream);
  kept_fence_.mark(stream);
}

void FftConvAlgo::clear_filter() {
  // Free only once the work already enqueued that reads the spectrum has finished.
  kept_fence_.wait();
  kept_.reset();
  kept_work_.reset();
}

FftGeometry FftConvAlgo::tune_geometry(const ConvDesc& d, const Options& o, std::string* reason) {
  // The own plane kernels and cuFFT time differently: each keeps its own choice.
  const TunedChoice cached(o, "fwd " + d.to_string() + " fft-size" + (o.own_fft ? " own" : ""));
  long long fh = 0, fw = 0;
  const auto usable = [&](const std::string& choice) {
    return std::sscanf(choice.c_str(), "%lldx%lld", &fh, &fw) == 2 && fh >= min_fft_h(d) &&
           fw >= min_fft_w(d);
  };
  if (cached.find(usable, "FFT size")) {
    if (reason) *reason = "fft size from tuning cache " + cached.path();
    return make_fft_geometry(d, fh, fw);
  }
  const std::vector<FftGeometry> candidates = ranked_fft_geometries(d, kFftSizeCandidates);
  const std::size_t es = dtype_size(d.dtype);
  const PlanStream stream;
  const cudaStream_t st = stream.get();
  DeviceBuffer x(es * d.x_elems()), w(es * d.w_elems()), y(es * d.y_elems());
  launch_fill_uniform(x.get(), d.x_elems(), d.dtype, 21, st);
  launch_fill_uniform(w.get(), d.w_elems(), d.dtype, 22, st);
  Options heuristic = o;
  heuristic.tuning = Tuning::kHeuristic;
  GpuTimer timer;
  double best_ms = std::numeric_limits<double>::infinity();
  FftGeometry best = candidates.front();
  std::string timings;
  for (const FftGeometry& g : candidates) {
    if (!can_implement(d, o, g).ok()) continue;
    FftConvAlgo algo(d, heuristic, g);
    DeviceBuffer ws(algo.workspace_size());
    RunArgs args;
    args.x = x.get();
    args.w = w.get();
    args.out = y.get();
    args.workspace = ws.get();
    algo.run(args, st, nullptr);  // warm-up
    std::vector<double> ms;
    for (int i = 0; i < kFftSizeRuns; ++i) {
      timer.start(st);
      algo.run(args, st, nullptr);
      timer.stop(st);
      ms.push_back(timer.elapsed_ms());
    }
    stream.synchronize();  // before ws is freed
    const double med = median(std::move(ms));
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%s%s %.4f ms", timings.empty() ? "" : ", ",
                  size_text(g).c_str(), med);
    timings += buf;
    if (med < best_ms) {
      best_ms = med;
      best = g;
    }
  }
  if (best_ms < std::numeric_limits<double>::infinity()) cached.store(size_text(best), best_ms);
  if (reason) *reason = "fft size autotuned [" + timings + "]";
  return best;
}

void FftConvAlgo::fill_info(PlanInfo& info) const {
  info.algo = g_.tiled ? Algo::kFftTiled : Algo::kFft;
  info.fft_h = g_.fft_h;
  info.fft_w = g_.fft_w;
  info.tiles_h = g_.tiles_h;
  info.tiles_w = g_.tiles_w;
  info.gemm = runner_->kernel().name;
  info.gemm_flops = gemm_.flops();
  info.gemm_min_bytes = gemm_.min_bytes();
  info.workspace_bytes = workspace_;
  info.reason = gemm_reason_ + (pad_reason_.empty() ? "" : "; " + pad_reason_) +
                (plane_reason_.empty() ? "" : "; " + plane_reason_);
}

}  // namespace fftconv::detail
