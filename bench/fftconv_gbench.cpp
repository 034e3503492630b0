// Google Benchmark suite over the shape CSVs: every row, pass and provider, timed with CUDA events.
//
//   fftconv_gbench [--shapes FILE.csv]... [--passes fwd,dgrad,wgrad] [--dtypes f32,f16,bf16]
//                  [--iters N] [--warmup N] [--benchmark_filter=REGEX] [--benchmark_out=F.json
//                  --benchmark_out_format=json]
//
// --dtypes runs every row in each listed dtype (default: the CSV's dtype); a variant in another
// dtype than its row's is named <row>_<dtype> (no suffix for f32), so landmark_batch64 in f16 is
// the suite's landmark_batch64_f16 and runs once.
// Benchmarks are named <case>/<pass>/<provider>; filter by case, pass or provider with
// --benchmark_filter (e.g. '/fwd/(fftconv_auto|cudnn_fp32)$'). Providers:
//   fftconv_auto            the engine as a user gets it (Algo::kAuto, heuristic tuning)
//   fftconv_<tiling>        the full-image FFT path with one own GEMM tiling forced
//   fftconv_cublas*         the same with a cuBLAS comparison path as the GEMM
//   cudnn_fp32, cudnn_tf32  cuDNN's best (cudnnFind*AlgorithmEx), strict fp32 and TF32
//   cudnn_fp32_<ALGO>       one cuDNN algorithm, strict fp32 math
// Each benchmark runs one iteration whose time is the median of --iters CUDA-event-timed runs
// (default 20, after --warmup 5 untimed ones, inputs rotated when they fit in L2); plan creation is
// outside the timing and reported as the counter plan_ms. Counters: tflops (direct-convolution
// FLOPs per second), gbps (the pass's tensors once), floor_pct (the floor of docs/benchmarking.md
// as a percentage of the time). A provider that cannot run a case reports the reason as an error.
#include <benchmark/benchmark.h>

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cli.h"
#include "fftconv/fftconv.hpp"
#include "testing/testing.h"

namespace {

namespace ft = fftconv::testing;
using fftconv::Algo;
using fftconv::ConvDesc;
using fftconv::DType;
using fftconv::Options;
using fftconv::Pass;

constexpr std::size_t kL2Bytes = 50u << 20;
constexpr int kMaxRotations = 16;

int g_iters = 20;
int g_warmup = 5;

struct Provider {
  std::string name;
  Options options;
  bool fp32_only = false;  // TF32 and the strict per-algorithm cuDNN runs mean fp32 data
};

std::vector<Provider> providers(Pass pass) {
  std::vector<Provider> out;
  Options o;
  o.pass = pass;
  out.push_back({"fftconv_auto", o});
  for (const std::string& g : fftconv::gemm_kernel_names()) {
    Options f = o;
    f.algo = Algo::kFft;
    f.gemm_kernel = g;
    out.push_back({"fftconv_" + g, f});
  }
  Options c = o;
  c.algo = Algo::kCudnn;
  out.push_back({"cudnn_fp32", c});
  c.allow_tf32 = true;
  out.push_back({"cudnn_tf32", c, true});
  for (const std::string& a : fftconv::cudnn_algo_names(pass)) {
    Options f = o;
    f.algo = Algo::kCudnn;
    f.cudnn_algo = a;
    out.push_back({"cudnn_fp32_" + a, f, true});
  }
  return out;
}

fftconv::testing::DeviceBuffer upload(const std::vector<unsigned char>& bytes) {
  ft::DeviceBuffer b(bytes.size());
  b.upload(bytes.data(), bytes.size());
  return b;
}

void run_case(benchmark::State& state, const ft::ShapeRow& row, const Provider& prov) {
  const ConvDesc& d = row.desc;
  const Pass pass = prov.options.pass;
  std::unique_ptr<fftconv::Plan> plan;
  const auto t0 = std::chrono::steady_clock::now();
  try {
    plan = std::make_unique<fftconv::Plan>(d, prov.options);
    ft::cuda_check(cudaDeviceSynchronize(), "plan");
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    for (auto _ : state) {
    }
    return;
  }
  const double plan_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const std::size_t es = fftconv::dtype_size(d.dtype);
  const std::size_t in_bytes = es * (d.x_elems() + d.w_elems() + d.y_elems());
  const int copies =
      in_bytes < kL2Bytes
          ? static_cast<int>(std::min<std::size_t>(kMaxRotations, 2 * kL2Bytes / in_bytes + 1))
          : 1;
  const auto xb = ft::encode(ft::random_values(d.x_elems(), 1, d.dtype), d.dtype);
  const auto wb = ft::encode(ft::random_values(d.w_elems(), 2, d.dtype), d.dtype);
  const auto yb = ft::encode(ft::random_values(d.y_elems(), 3, d.dtype), d.dtype);
  std::vector<ft::DeviceBuffer> x, w, y;
  for (int i = 0; i < copies; ++i) {
    x.push_back(upload(xb));
    w.push_back(upload(wb));
    y.push_back(upload(yb));  // forward: output; backward: dy
  }
  const std::int64_t out_elems = pass == Pass::kForward        ? d.y_elems()
                                 : pass == Pass::kBackwardData ? d.x_elems()
                                                               : d.w_elems();
  ft::DeviceBuffer out(es * out_elems), ws(plan->workspace_size());
  cudaStream_t stream;
  ft::cuda_check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  auto run = [&](int i) {
    const int c = i % copies;
    switch (pass) {
      case Pass::kForward:
        plan->forward(x[c].get(), w[c].get(), nullptr, y[c].get(), ws.get(), ws.bytes(), stream);
        break;
      case Pass::kBackwardData:
        plan->backward_data(y[c].get(), w[c].get(), out.get(), ws.get(), ws.bytes(), stream);
        break;
      case Pass::kBackwardFilter:
        plan->backward_filter(x[c].get(), y[c].get(), out.get(), ws.get(), ws.bytes(), stream);
        break;
    }
  };
  double ms = 0.0;
  bool failed = false;
  try {
    for (auto _ : state) {
      ms = ft::median_ms(run, stream, g_warmup, g_iters);
      state.SetIterationTime(ms * 1e-3);
    }
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    failed = true;
  }
  cudaStreamDestroy(stream);
  if (failed || ms <= 0.0) return;
  const fftconv::PlanInfo& info = plan->info();
  state.counters["tflops"] = ft::direct_flops(d) / (ms * 1e-3) * 1e-12;
  state.counters["gbps"] = ft::pass_bytes(d, pass) / (ms * 1e-3) * 1e-9;
  state.counters["floor_pct"] = 100.0 * ft::floor_ms(d, pass, info) / ms;
  state.counters["plan_ms"] = plan_ms;
  state.counters["workspace_mib"] = double(info.workspace_bytes) / (1 << 20);
  std::string label = fftconv::algo_name(info.algo);
  if (info.fft_h) label += " fft=" + std::to_string(info.fft_h) + "x" + std::to_string(info.fft_w);
  if (info.tiles_h * info.tiles_w > 1) {
    label += " tiles=" + std::to_string(info.tiles_h) + "x" + std::to_string(info.tiles_w);
  }
  if (!info.gemm.empty()) label += " gemm=" + info.gemm;
  if (!info.cudnn_algo.empty()) label += " cudnn=" + info.cudnn_algo + "/" + info.cudnn_math;
  state.SetLabel(label + " " + d.to_string());
}

// The items of a comma-separated list of passes; throws on an unknown or empty one.
std::vector<Pass> parse_pass_list(const std::string& list) {
  std::vector<Pass> passes;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) passes.push_back(fftconv::parse_pass(item));
  if (passes.empty()) throw std::invalid_argument("needs at least one of fwd, dgrad, wgrad");
  return passes;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> files;
  std::vector<Pass> passes = {Pass::kForward, Pass::kBackwardData, Pass::kBackwardFilter};
  std::vector<DType> dtypes;
  CLI::App app(
      "Google Benchmark suite over the shape CSVs: every row, pass and provider, timed with CUDA\n"
      "events. Benchmarks are named <case>/<pass>/<provider>; see the top of\n"
      "bench/fftconv_gbench.cpp.",
      "fftconv_gbench");
  app.allow_extras();  // the --benchmark_* flags, for benchmark::Initialize
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.get_formatter()->column_width(26);
  app.footer(
      "Other arguments go to Google Benchmark: --benchmark_filter=REGEX, --benchmark_list_tests,\n"
      "--benchmark_out=F.json --benchmark_out_format=json, ...");
  app.add_option("--shapes", files, "shape suite CSV (default data/shapes/suite.csv); may repeat")
      ->type_name("FILE.csv")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->expected(1)
      ->allow_extra_args(false);
  app.add_option_function<std::string>(
         "--passes", [&](const std::string& v) { passes = parse_pass_list(v); },
         "passes, comma-separated (default fwd,dgrad,wgrad)")
      ->type_name("LIST")
      ->check(fftconv_apps::parsed_by([](const std::string& v) { parse_pass_list(v); }));
  app.add_option_function<std::string>(
         "--dtypes", [&](const std::string& v) { dtypes = ft::parse_dtype_list(v); },
         "run every row in each dtype of LIST (f32,f16,bf16; default the CSV's)")
      ->type_name("LIST")
      ->check(fftconv_apps::parsed_by([](const std::string& v) { ft::parse_dtype_list(v); }));
  app.add_option("--iters", g_iters,
                 "CUDA-event-timed runs per benchmark, >= 1 (median; default 20)")
      ->type_name("N")
      ->check(CLI::Range(1, std::numeric_limits<int>::max()).description(""));
  app.add_option("--warmup", g_warmup, "untimed runs first, >= 0 (default 5)")
      ->type_name("N")
      ->check(CLI::Range(0, std::numeric_limits<int>::max()).description(""));
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "fftconv_gbench: %s (see --help)\n", e.what());
    return 2;
  }
  // Google Benchmark gets the program name and what CLI11 left, in order.
  std::vector<std::string> rest_args = app.remaining();
  rest_args.insert(rest_args.begin(), argv[0]);
  std::vector<char*> rest;
  for (std::string& a : rest_args) rest.push_back(a.data());
  if (files.empty()) files.push_back(std::string(FFTCONV_DATA_DIR) + "/shapes/suite.csv");
  // Listing (--benchmark_list_tests) works without a GPU; running does not.
  bool listing = false;
  for (char* a : rest) listing |= std::strncmp(a, "--benchmark_list_tests", 22) == 0;
  int rest_argc = static_cast<int>(rest.size());
  benchmark::Initialize(&rest_argc, rest.data());
  if (benchmark::ReportUnrecognizedArguments(rest_argc, rest.data())) return 2;
  static std::vector<ft::ShapeRow> rows;
  try {
    for (const auto& f : files) {
      for (auto& r : ft::load_shapes(f)) rows.push_back(r);
    }
    if (!dtypes.empty()) rows = ft::with_dtypes(rows, dtypes);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fftconv_gbench: %s\n", e.what());
    return 2;
  }
  static std::vector<std::vector<Provider>> provs;
  for (Pass pass : passes) provs.push_back(providers(pass));
  for (const auto& row : rows) {
    for (std::size_t p = 0; p < passes.size(); ++p) {
      for (const Provider& prov : provs[p]) {
        if (prov.fp32_only && row.desc.dtype != DType::kF32) continue;
        const std::string name = row.name + "/" + fftconv::pass_name(passes[p]) + "/" + prov.name;
        benchmark::RegisterBenchmark(name.c_str(),
                                     [&row, &prov](benchmark::State& s) { run_case(s, row, prov); })
            ->UseManualTime()
            ->Unit(benchmark::kMillisecond)
            ->Iterations(1);
      }
    }
  }
  std::string why;
  if (!listing && !ft::has_device(&why)) {
    std::fprintf(stderr, "fftconv_gbench: %s; the benchmarks need a CUDA GPU\n", why.c_str());
    return 2;
  }
  benchmark::AddCustomContext("timing", "median of --iters CUDA-event-timed runs per benchmark");
  benchmark::AddCustomContext("iters", std::to_string(g_iters));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
