// fftconv-bench's cases: a row in one pass (engine, kept filter, sweeps, cuDNN baselines, the
// oracle), and the rows of a run in groups.
#include "run.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <memory>

#include "output.h"
#include "reference/reference.h"
#include "timing.h"

namespace bench {
namespace {

using fftconv::Algo;

// The time of a side measurement, or NaN (shown as "-") when that configuration cannot run;
// the reason goes to the row's notes.
double side_time(Row& r, const std::string& what, const std::function<double()>& time) {
  try {
    return time();
  } catch (const std::exception& e) {
    r.notes.push_back(what + ": " + e.what());
    return NAN;
  }
}

Row run_row(const ft::ShapeRow& shape, Pass pass, std::uint64_t seed, const Config& cfg,
            cudaStream_t stream) {
  Row r;
  const ConvDesc& d = shape.desc;
  r.name = shape.name;
  r.pass = fftconv::pass_name(pass);
  r.desc = d.to_string();
  r.dtype = fftconv::dtype_name(d.dtype);
  std::string why;
  if (d.validate(&why) != fftconv::Status::kSuccess) {
    r.status = "error: " + why;
    r.ok = false;
    return r;
  }
  Inputs in = make_inputs(d, pass, seed, cfg.gaussian_sigma);
  const std::int64_t n_out = out_elems(d, pass);
  std::vector<double> ref_host;  // the oracle's output, computed on first use
  auto check_output = [&]() {
    if (ref_host.empty()) {
      ft::DeviceBuffer ref(sizeof(double) * n_out);
      namespace ref_ns = fftconv::reference;
      switch (pass) {
        case Pass::kForward:
          ref_ns::conv2d_forward_device(d, in.x32.as<float>(), in.w32.as<float>(),
                                        in.bias32.as<float>(), ref.as<double>(), stream);
          break;
        case Pass::kBackwardData:
          ref_ns::conv2d_backward_data_device(d, in.dy32.as<float>(), in.w32.as<float>(),
                                              ref.as<double>(), stream);
          break;
        case Pass::kBackwardFilter:
          ref_ns::conv2d_backward_filter_device(d, in.x32.as<float>(), in.dy32.as<float>(),
                                                ref.as<double>(), stream);
          break;
      }
      ft::cuda_check(cudaStreamSynchronize(stream), "oracle");
      ref_host.resize(n_out);
      ref.download(ref_host.data(), ref_host.size() * sizeof(double));
    }
    std::vector<unsigned char> out_host(in.out.bytes());
    in.out.download(out_host.data(), out_host.size());
    return ft::compare(ft::decode(out_host.data(), n_out, d.dtype), ref_host);
  };

  // Wall-clock seconds of each part of the row (plans, searches and oracles included), so that a
  // row that takes minutes says where they went.
  auto lap_start = std::chrono::steady_clock::now();
  const auto lap = [&](const char* part) {
    const auto now = std::chrono::steady_clock::now();
    r.wall_s.emplace_back(part, std::chrono::duration<double>(now - lap_start).count());
    lap_start = now;
    if (cfg.progress) {
      std::fprintf(stderr, "fftconv-bench: %s %s: %s took %.1f s\n", r.name.c_str(), r.pass.c_str(),
                   part, r.wall_s.back().second);
    }
  };
  if (cfg.progress) std::fprintf(stderr, "fftconv-bench: %s %s\n", r.name.c_str(), r.pass.c_str());
  const Options engine = engine_options(cfg, pass);
  try {
    // The separable path runs kept filters only: forced, its every call keeps the filter.
    const bool kept_only = engine.algo == Algo::kSeparable;
    const Timed t =
        time_plan(d, engine, in, cfg, stream, cfg.stages, kept_only, !cfg.interleave);
    if (kept_only) r.kept_note = t.describe;
    r.stages = t.stages;
    r.gemm_flops = t.info.gemm_flops;
    r.gemm_min_bytes = t.info.gemm_min_bytes;
    r.engine_ms = t.ms;
    r.plan_ms = t.plan_ms;
    r.host_us = t.host_us;
    r.cold_ms = t.cold_ms;
    r.algo = fftconv::algo_name(t.info.algo);
    r.fft_h = t.info.fft_h;
    r.fft_w = t.info.fft_w;
    r.gemm = t.info.gemm;
    r.workspace_bytes = t.info.workspace_bytes;
    r.reason = t.info.reason;
    r.floor_ms = ft::floor_ms(d, pass, t.info);
    r.tiles_h = t.info.tiles_h;
    r.tiles_w = t.info.tiles_w;
    if (t.info.algo == Algo::kFft) r.fft_ms = t.ms;
    if (cfg.verify) {
      const ft::ErrorStats e = check_output();
      r.verified = true;
      r.rel_err = e.rel_l2;
      r.max_err = e.max_err;
      r.ok = e.pass(ft::tolerance(d.dtype));
      if (!r.ok) {
        r.status = "FAIL " + e.to_string() + " (tolerance " + fmt(ft::tolerance(d.dtype), "%.0e") +
                   "); repro: fftconv-bench --desc " + r.desc + " --pass " + r.pass + " --verify";
      }
    }
    // The same plan with the filter kept (its spectrum, or under Auto its 1-D factors where it is
    // low rank): the filter's pad and transform leave the pass.
    if (!kept_only && t.info.algo != Algo::kCudnn && pass != Pass::kBackwardFilter) {
      const Timed k = time_plan(d, engine, in, cfg, stream, false, true);
      r.kept_ms = k.ms;
      r.kept_cold_ms = k.cold_ms;
      r.kept_host_us = k.host_us;
      r.kept_note = k.describe;
      if (cfg.verify) {
        const ft::ErrorStats e = check_output();
        r.kept_rel_err = e.rel_l2;
        if (!e.pass(ft::tolerance(d.dtype))) {
          r.ok = false;
          r.status = "FAIL with kept filter " + e.to_string() + "; repro: fftconv-bench --desc " +
                     r.desc + " --pass " + r.pass + " --verify";
        }
      }
    }
    if (cfg.shared_spectrum && pass != Pass::kBackwardFilter &&
        engine.backend != fftconv::Backend::kCpu) {
      const Timed s = time_shared_spectrum(d, engine, in, cfg, stream);
      r.shared_ms = s.ms;
      r.shared_cold_ms = s.cold_ms;
      r.shared_host_us = s.host_us;
      r.shared_note = s.describe;
      if (cfg.verify && !std::isnan(s.ms)) {
        const ft::ErrorStats e = check_output();
        r.shared_rel_err = e.rel_l2;
        if (!e.pass(ft::tolerance(d.dtype))) {
          r.ok = false;
          r.status = "FAIL with shared spectrum " + e.to_string() +
                     "; repro: fftconv-bench --desc " + r.desc + " --pass " + r.pass +
                     " --shared-spectrum --verify";
        }
      }
    }
  } catch (const std::exception& e) {
    r.status = std::string("error: ") + e.what();
  }
  lap("engine");
  // The FFT path of these options (default GEMM choice and size), and with a forced GEMM or size.
  const auto fft_options = [&](const std::string& gemm, std::int64_t fft_h, std::int64_t fft_w) {
    Options o;
    o.pass = pass;
    o.algo = Algo::kFft;
    o.gemm_kernel = gemm;
    o.fft_h = fft_h;
    o.fft_w = fft_w;
    return o;
  };
  // The FFT path's own time where Auto chose something else (the heuristic's regret shows here).
  const bool swept = (cfg.algo == Algo::kAuto && r.algo != "fft") ||
                     (r.algo == "fft" && (cfg.fft_all || cfg.gemm == "all"));
  if (cfg.algo == Algo::kAuto && r.algo != "fft") {
    r.fft_ms = side_time(r, "fft path",
                         [&] { return time_plan(d, fft_options("", 0, 0), in, cfg, stream).ms; });
  }
  if (cfg.fft_all && r.algo == "fft") {
    // The first candidate sizes on each axis, with the heuristic's GEMM for each.
    for (const auto& [fh, fw] : fft_sweep_sizes(d)) {
      const std::string size = std::to_string(fh) + "x" + std::to_string(fw);
      const double ms = side_time(r, "fft " + size, [&] {
        return time_plan(d, fft_options("", fh, fw), in, cfg, stream).ms;
      });
      r.fft_sizes_ms.emplace_back(size, ms);
    }
  }
  if (cfg.gemm == "all" && r.algo == "fft") {
    // Every path at the same FFT size, on rows where the engine runs the FFT path; the regret is
    // over our own tilings, the heuristic's pick against the fastest of them.
    double chosen = NAN;
    std::string heuristic = r.gemm;
    try {
      heuristic = Plan(d, fft_options("", 0, 0)).info().gemm;
    } catch (const std::exception& e) {
      r.notes.push_back(std::string("the heuristic's gemm, taken as ") + r.gemm + ": " + e.what());
    }
    for (const std::string& name : fftconv::gemm_kernel_names()) {
      const double ms = side_time(r, "gemm " + name, [&] {
        return time_plan(d, fft_options(name, 0, 0), in, cfg, stream).ms;
      });
      r.gemm_ms.emplace_back(name, ms);
      const bool cublas = name.rfind("cublas", 0) == 0;
      std::string& best_name = cublas ? r.cublas_best : r.gemm_best;
      double& best_ms = cublas ? r.cublas_best_ms : r.gemm_best_ms;
      if (!std::isnan(ms) && (std::isnan(best_ms) || ms < best_ms)) {
        best_ms = ms;
        best_name = name;
      }
      if (name == heuristic) chosen = ms;
    }
    r.regret = chosen / r.gemm_best_ms;
  }
  if (swept) lap("sweeps");
  if (cfg.cudnn) {
    Options o;
    o.pass = pass;
    o.algo = Algo::kCudnn;
    o.cudnn_search = cfg.cudnn_search;
    r.cudnn_search = fftconv::cudnn_search_name(cfg.cudnn_search);
    try {
      const Timed t = time_plan(d, o, in, cfg, stream);
      r.cudnn_ms = t.ms;
      r.cudnn_algo = t.info.cudnn_algo + "/" + t.info.cudnn_math;
    } catch (const std::exception& e) {
      r.cudnn_algo = "error";
      if (r.status == "ok") r.status = std::string("cudnn: ") + e.what();
    }
    lap("cudnn");
    if (d.dtype == DType::kF32) {
      o.allow_tf32 = true;
      try {
        const Timed t = time_plan(d, o, in, cfg, stream);
        r.cudnn_tf32_ms = t.ms;
        r.cudnn_tf32_algo = t.info.cudnn_algo + "/" + t.info.cudnn_math;
      } catch (const std::exception& e) {
        r.notes.push_back(std::string("cudnn tf32: ") + e.what());
      }
      lap("cudnn_tf32");
    }
    r.speedup = r.cudnn_ms / r.engine_ms;
  }
  return r;
}

// Whether two descriptors are the same shape in any dtype.
bool same_shape(ConvDesc a, ConvDesc b) {
  a.dtype = b.dtype = DType::kF32;
  return a.to_string() == b.to_string();
}

}  // namespace

std::vector<std::pair<std::int64_t, std::int64_t>> fft_sweep_sizes(const ConvDesc& d) {
  constexpr std::size_t kSizesPerAxis = 4;
  auto hs = ft::fft_sweep_sizes_along(d, /*height=*/true);
  auto ws = ft::fft_sweep_sizes_along(d, /*height=*/false);
  hs.resize(std::min(hs.size(), kSizesPerAxis));
  ws.resize(std::min(ws.size(), kSizesPerAxis));
  const bool square = d.h == d.w && d.pad_h == d.pad_w && d.r == d.s;
  std::vector<std::pair<std::int64_t, std::int64_t>> sizes;
  for (std::int64_t fh : hs) {
    for (std::int64_t fw : ws) {
      if (!square || fh == fw) sizes.emplace_back(fh, fw);  // square: the diagonal
    }
  }
  return sizes;
}

void run_rows(const std::vector<ft::ShapeRow>& rows, const Config& cfg, cudaStream_t stream,
              const std::function<void(const Row&)>& report) {
  // Rows run in groups, pass by pass: one row each, or with --interleave a shape's dtypes
  // (consecutive after --dtypes), whose engine times are then taken in turn.
  std::vector<Row> group_rows;
  for (std::size_t first = 0; first < rows.size();) {
    std::size_t last = first + 1;
    while (cfg.interleave && last < rows.size() && same_shape(rows[first].desc, rows[last].desc))
      ++last;
    for (Pass pass : cfg.passes) {
      group_rows.clear();
      std::vector<const ft::ShapeRow*> group;
      std::vector<std::uint64_t> seeds;
      if (cfg.skip.count({rows[first].desc.to_string(), fftconv::pass_name(pass)})) {
        continue;  // --resume: measured by an earlier run (groups are single rows then)
      }
      for (std::size_t row = first; row < last; ++row) {
        group.push_back(&rows[row]);
        seeds.push_back(1000 + 17 * row);
        group_rows.push_back(run_row(rows[row], pass, seeds.back(), cfg, stream));
      }
      if (cfg.interleave) {
        const Interleaved timed = interleaved_times(group, seeds, pass, cfg, stream);
        const auto& times = timed.times;
        const std::vector<float>& base = times[0];
        for (std::size_t g = 0; g < group_rows.size(); ++g) {
          Row& r = group_rows[g];
          if (!timed.errors[g].empty() && r.status == "ok") {
            r.status = "error: --interleave: " + timed.errors[g];
          }
          r.engine_ms = times[g].empty() ? NAN : ft::median_of(times[g]);
          if (r.algo == "fft") r.fft_ms = r.engine_ms;
          r.speedup = r.cudnn_ms / r.engine_ms;
          if (g > 0 && !base.empty() && !times[g].empty()) {
            r.paired = ft::paired_ratio(base, times[g]);
            r.has_paired = true;
            r.paired_base = group_rows[0].dtype;
          }
        }
        if (cfg.control && !timed.errors.back().empty()) {
          group_rows[0].notes.push_back("--control copy: " + timed.errors.back());
        }
        if (cfg.control && !base.empty() && !times.back().empty()) {
          group_rows[0].control = ft::paired_ratio(base, times.back());
          group_rows[0].has_control = true;
        }
      }
      for (const Row& r : group_rows) report(r);
    }
    first = last;
  }
}

}  // namespace bench
