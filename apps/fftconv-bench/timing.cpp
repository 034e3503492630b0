// fftconv-bench's timing: input sets, one plan timed on its own, a row's dtypes timed in turn.
#include "timing.h"

#include <cmath>
#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "core/timing.h"

namespace bench {
namespace {

// Inputs smaller than this are rotated among several copies so timings do not measure L2 (50 MB).
constexpr std::size_t kL2Bytes = 50u << 20;
constexpr int kMaxRotations = 32;
// Host time: 20 batches of 50 calls (1000 in all). A batch stays well inside the launch queue
// (a call is at most a handful of launches), so the host never waits for the device in it.
constexpr int kHostBatch = 50;
constexpr int kHostBatches = 20;

// Median time of `runs` calls of `run`, each alone (fftconv::detail::ColdTimer: the L2 flushed,
// the device drained, events around the call, so the host's enqueueing counts).
double cold_ms_per_call(const std::function<void(int)>& run, cudaStream_t stream, int runs) {
  static ft::DeviceBuffer flush(fftconv::detail::kL2FlushBytes);
  fftconv::detail::ColdTimer cold(flush.get(), fftconv::detail::kL2FlushBytes);
  std::vector<float> ms;
  for (int i = 0; i < runs; ++i) ms.push_back(cold.time_ms([&] { run(i); }, stream));
  return ft::median_of(std::move(ms));
}

// Median host time of enqueueing one call of `run`, in microseconds.
double host_us_per_call(const std::function<void(int)>& run, cudaStream_t stream) {
  std::vector<float> us;
  for (int b = 0; b < kHostBatches; ++b) {
    ft::cuda_check(cudaStreamSynchronize(stream), "sync");
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kHostBatch; ++i) run(b * kHostBatch + i);
    const auto t1 = std::chrono::steady_clock::now();
    us.push_back(static_cast<float>(std::chrono::duration<double, std::micro>(t1 - t0).count() /
                                    kHostBatch));
  }
  ft::cuda_check(cudaStreamSynchronize(stream), "sync");
  return ft::median_of(std::move(us));
}

ft::DeviceBuffer upload(const std::vector<unsigned char>& bytes) {
  ft::DeviceBuffer b(bytes.size());
  b.upload(bytes.data(), bytes.size());
  return b;
}

// One pass of `plan` on input copy c into `out` (null: in.out). kept: the plan holds the filter
// (set_filter), so the pass gets w == nullptr (fwd and dgrad).
void run_pass(const Plan& plan, Pass pass, const Inputs& in, const ft::DeviceBuffer& ws, int c,
              bool kept, cudaStream_t stream, const ft::DeviceBuffer* out = nullptr) {
  void* y = (out ? *out : in.out).get();
  const void* w = kept ? nullptr : in.w[static_cast<std::size_t>(c)].get();
  const auto at = [c](const std::vector<ft::DeviceBuffer>& v) {
    return v[static_cast<std::size_t>(c)].get();
  };
  switch (pass) {
    case Pass::kForward:
      plan.forward(at(in.x), w, in.bias.get(), y, ws.get(), ws.bytes(), stream);
      break;
    case Pass::kBackwardData:
      plan.backward_data(at(in.dy), w, y, ws.get(), ws.bytes(), stream);
      break;
    case Pass::kBackwardFilter:
      plan.backward_filter(at(in.x), at(in.dy), y, ws.get(), ws.bytes(), stream);
      break;
  }
}

}  // namespace

std::int64_t out_elems(const ConvDesc& d, Pass pass) {
  return pass == Pass::kForward        ? d.y_elems()
         : pass == Pass::kBackwardData ? d.x_elems()
                                       : d.w_elems();
}

Inputs make_inputs(const ConvDesc& d, Pass pass, std::uint64_t seed, double gaussian_sigma) {
  Inputs in;
  const std::size_t es = fftconv::dtype_size(d.dtype);
  const bool backward = pass != Pass::kForward;
  const std::size_t in_bytes = es * (d.x_elems() + d.w_elems() + (backward ? d.y_elems() : 0));
  in.copies =
      in_bytes < kL2Bytes
          ? static_cast<int>(std::min<std::size_t>(kMaxRotations, 2 * kL2Bytes / in_bytes + 1))
          : 1;
  const auto xv = ft::random_values(d.x_elems(), seed, d.dtype);
  const auto wv = gaussian_sigma > 0 ? ft::gaussian_filter(d, gaussian_sigma)
                                     : ft::random_values(d.w_elems(), seed + 1, d.dtype);
  const auto bv = ft::random_values(d.k, seed + 2, d.dtype);
  const auto dyv =
      backward ? ft::random_values(d.y_elems(), seed + 3, d.dtype) : std::vector<float>();
  const auto xb = ft::encode(xv, d.dtype), wb = ft::encode(wv, d.dtype);
  const auto dyb = ft::encode(dyv, d.dtype);
  for (int i = 0; i < in.copies; ++i) {
    in.x.push_back(upload(xb));
    in.w.push_back(upload(wb));
    if (backward) in.dy.push_back(upload(dyb));
  }
  in.bias = upload(ft::encode(bv, d.dtype));
  in.out = ft::DeviceBuffer(es * out_elems(d, pass));
  in.x32 = upload(ft::encode(xv, DType::kF32));
  in.w32 = upload(ft::encode(wv, DType::kF32));
  in.bias32 = upload(ft::encode(bv, DType::kF32));
  if (backward) in.dy32 = upload(ft::encode(dyv, DType::kF32));
  return in;
}

Timed time_plan(const ConvDesc& d, const Options& o, Inputs& in, const Config& cfg,
                cudaStream_t stream, bool stages, bool kept, bool timed) {
  Timed t;
  const auto t0 = std::chrono::steady_clock::now();
  Plan plan(d, o);
  ft::cuda_check(cudaDeviceSynchronize(), "plan");
  t.plan_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  t.info = plan.info();
  t.describe = plan.describe();
  ft::DeviceBuffer ws(plan.workspace_size());
  if (kept) {
    plan.set_filter(in.w[0].get(), stream);
    t.describe = plan.describe();  // how the kept filter runs
  }
  auto run = [&](int c) { run_pass(plan, o.pass, in, ws, c, kept, stream); };
  if (timed) {
    t.ms = cfg.graph
               ? ft::graph_median_ms(run, in.copies, stream, cfg.warmup, cfg.iters)
               : ft::median_ms([&](int i) { run(i % in.copies); }, stream, cfg.warmup, cfg.iters);
    if (o.backend != fftconv::Backend::kCpu) {
      t.host_us = host_us_per_call([&](int i) { run(i % in.copies); }, stream);
      t.cold_ms = cold_ms_per_call([&](int i) { run(i % in.copies); }, stream, cfg.iters);
    }
  }
  if (stages && o.pass == Pass::kForward) {
    t.stages = plan.profile_forward(in.x[0].get(), kept ? nullptr : in.w[0].get(), in.bias.get(),
                                    in.out.get(), ws.get(), ws.bytes(), stream, cfg.iters);
  }
  // One more run on copy 0 so in.out holds the result for the inputs the oracle sees.
  in.out.poison();
  run(0);
  ft::cuda_check(cudaStreamSynchronize(stream), "run");
  return t;
}

Timed time_shared_spectrum(const ConvDesc& d, const Options& o, Inputs& in, const Config& cfg,
                           cudaStream_t stream) {
  Timed t;
  Options fo = o;
  fo.pass = Pass::kForward;
  Plan fwd(d, fo);
  if (fwd.filter_spectrum_size() == 0 ||
      (o.pass == Pass::kBackwardData && fwd.info().algo != fftconv::Algo::kFft)) {
    t.describe = "no shared spectrum: the forward plan is " + fwd.describe();
    return t;
  }
  std::unique_ptr<Plan> dgrad;
  if (o.pass == Pass::kBackwardData) {
    Options po = o;
    po.algo = fftconv::Algo::kFft;
    po.fft_h = fwd.info().fft_h;
    po.fft_w = fwd.info().fft_w;
    const auto t0 = std::chrono::steady_clock::now();
    try {
      dgrad = std::make_unique<Plan>(d, po);
    } catch (const fftconv::Error& e) {
      t.describe = std::string("no shared spectrum: no backward-data plan at the forward's size: ") +
                   e.what();
      return t;
    }
    t.plan_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (!fwd.shares_filter_spectrum(*dgrad)) {
      t.describe = "no shared spectrum: " + fwd.describe() + " / " + dgrad->describe();
      return t;
    }
  }
  const Plan& plan = dgrad ? *dgrad : fwd;
  t.info = plan.info();
  t.describe = plan.describe();
  ft::DeviceBuffer spec(fwd.filter_spectrum_size()), ws_fwd(fwd.workspace_size()),
      ws(plan.workspace_size());
  fwd.filter_spectrum(in.w[0].get(), spec.get(), ws_fwd.get(), ws_fwd.bytes(), stream);
  const auto run = [&](int c) {
    const auto i = static_cast<std::size_t>(c);
    if (dgrad) {
      dgrad->backward_data_with_spectrum(in.dy[i].get(), spec.get(), in.out.get(), ws.get(),
                                         ws.bytes(), stream);
    } else {
      fwd.filter_spectrum(in.w[i].get(), spec.get(), ws.get(), ws.bytes(), stream);
      fwd.forward_with_spectrum(in.x[i].get(), spec.get(), in.bias.get(), in.out.get(), ws.get(),
                                ws.bytes(), stream);
    }
  };
  const auto rotated = [&](int i) { run(i % in.copies); };
  t.ms = cfg.graph ? ft::graph_median_ms(run, in.copies, stream, cfg.warmup, cfg.iters)
                   : ft::median_ms(rotated, stream, cfg.warmup, cfg.iters);
  t.host_us = host_us_per_call(rotated, stream);
  t.cold_ms = cold_ms_per_call(rotated, stream, cfg.iters);
  in.out.poison();
  run(0);
  ft::cuda_check(cudaStreamSynchronize(stream), "run");
  return t;
}

Interleaved interleaved_times(const std::vector<const ft::ShapeRow*>& group,
                              const std::vector<std::uint64_t>& seeds, Pass pass, const Config& cfg,
                              cudaStream_t stream) {
  // Run c of a variant reads input copy c % in.copies and runs engine instance c % placements
  // (its own plan, workspace and output: two plans of one shape may differ by several percent on
  // a launch-bound row, as cuFFT's tables and our buffers land elsewhere); `rotation` (the input
  // copies rounded up to a multiple of the placements) runs cover every pairing of an instance.
  struct Instance {
    std::unique_ptr<Plan> plan;
    ft::DeviceBuffer ws, out;
  };
  struct Variant {
    Inputs in;
    std::vector<Instance> engines;
    int rotation = 1;
    std::unique_ptr<ft::GraphSet> graphs;
  };
  std::vector<std::unique_ptr<Variant>> variants;  // the runs below point into these
  std::vector<std::function<void(int)>> runs;
  std::vector<std::size_t> slot_of_run;
  const std::size_t slots = group.size() + (cfg.control ? 1 : 0);
  Interleaved result;
  result.times.resize(slots);
  result.errors.resize(slots);
  for (std::size_t slot = 0; slot < slots; ++slot) {
    const std::size_t g = slot < group.size() ? slot : 0;  // the control copies row 0
    if (slot == group.size() && (slot_of_run.empty() || slot_of_run[0] != 0)) break;
    const Options o = engine_options(cfg, pass);
    try {
      auto v = std::make_unique<Variant>();
      Variant* p = v.get();
      p->in = make_inputs(group[g]->desc, pass, seeds[g]);
      const int k = cfg.placements;
      for (int j = 0; j < k; ++j) {
        Instance e;
        e.plan = std::make_unique<Plan>(group[g]->desc, o);
        e.ws = ft::DeviceBuffer(e.plan->workspace_size());
        e.out = ft::DeviceBuffer(p->in.out.bytes());
        p->engines.push_back(std::move(e));
      }
      p->rotation = (p->in.copies + k - 1) / k * k;
      auto direct = [p, pass, stream, k](int c) {
        const Instance& e = p->engines[static_cast<std::size_t>(c % k)];
        run_pass(*e.plan, pass, p->in, e.ws, c % p->in.copies, false, stream, &e.out);
      };
      if (cfg.graph) {
        p->graphs = std::make_unique<ft::GraphSet>(direct, p->rotation, stream);
        runs.emplace_back([p, stream](int i) { p->graphs->launch(i, stream); });
      } else {
        runs.emplace_back([p, direct](int i) { direct(i % p->rotation); });
      }
      slot_of_run.push_back(slot);
      variants.push_back(std::move(v));
    } catch (const std::exception& e) {
      result.errors[slot] = e.what();
    }
  }
  if (runs.empty()) return result;
  auto t = ft::interleaved_times_ms(runs, stream, cfg.warmup, cfg.iters);
  for (std::size_t k = 0; k < t.size(); ++k) result.times[slot_of_run[k]] = std::move(t[k]);
  return result;
}

}  // namespace bench
