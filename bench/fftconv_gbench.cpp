// Google Benchmark suite over the shape CSVs: fftconv (Auto, FFT) and cuDNN per row, timed with
// CUDA events (manual time). Select rows and providers with --benchmark_filter.
//   fftconv_gbench [--shapes FILE.csv] [--benchmark_* flags]
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "fftconv/fftconv.hpp"
#include "testing/testing.h"

namespace {

namespace ft = fftconv::testing;

struct Provider {
  const char* name;
  fftconv::Options options;
};

std::vector<Provider> providers() {
  std::vector<Provider> p;
  fftconv::Options o;
  o.algo = fftconv::Algo::kAuto;
  p.push_back({"fftconv_auto", o});
  o.algo = fftconv::Algo::kFft;
  p.push_back({"fftconv_fft", o});
  o.algo = fftconv::Algo::kCudnn;
  p.push_back({"cudnn_fp32", o});
  o.allow_tf32 = true;
  p.push_back({"cudnn_tf32", o});
  return p;
}

void run_case(benchmark::State& state, const ft::ShapeRow& row, const Provider& prov) {
  const fftconv::ConvDesc& d = row.desc;
  std::unique_ptr<fftconv::Plan> plan;
  try {
    plan = std::make_unique<fftconv::Plan>(d, prov.options);
  } catch (const fftconv::Error& e) {
    state.SkipWithError(e.what());
    return;
  }
  const std::size_t es = fftconv::dtype_size(d.dtype);
  ft::DeviceBuffer x(es * d.x_elems()), w(es * d.w_elems()), y(es * d.y_elems()),
      ws(plan->workspace_size());
  const auto xv = ft::encode(ft::random_values(d.x_elems(), 1, d.dtype), d.dtype);
  const auto wv = ft::encode(ft::random_values(d.w_elems(), 2, d.dtype), d.dtype);
  x.upload(xv.data(), xv.size());
  w.upload(wv.data(), wv.size());
  cudaStream_t stream;
  ft::cuda_check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  auto run = [&] { plan->forward(x.get(), w.get(), nullptr, y.get(), ws.get(), ws.bytes(), stream); };
  for (int i = 0; i < 3; ++i) run();
  for (auto _ : state) {
    cudaEventRecord(start, stream);
    run();
    cudaEventRecord(stop, stream);
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    state.SetIterationTime(ms * 1e-3);
  }
  const double direct_flops = 2.0 * double(d.y_elems()) * d.c_per_group() * d.r * d.s;
  const double bytes = double(es) * (d.x_elems() + d.w_elems() + d.y_elems());
  state.counters["TFLOPs"] = benchmark::Counter(direct_flops * 1e-12, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GBs"] = benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(plan->describe());
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaStreamDestroy(stream);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> files;
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--shapes") == 0 && i + 1 < argc) {
      files.push_back(argv[++i]);
    } else {
      rest.push_back(argv[i]);
    }
  }
  if (files.empty()) files.push_back(std::string(FFTCONV_DATA_DIR) + "/shapes/suite.csv");
  int rest_argc = static_cast<int>(rest.size());
  benchmark::Initialize(&rest_argc, rest.data());
  std::string why;
  if (!ft::has_device(&why)) {
    std::fprintf(stderr, "fftconv_gbench: %s; the benchmarks need a CUDA GPU\n", why.c_str());
    return 2;
  }
  static std::vector<ft::ShapeRow> rows;
  for (const auto& f : files) {
    for (auto& r : ft::load_shapes(f)) rows.push_back(r);
  }
  static const std::vector<Provider> provs = providers();
  for (const auto& row : rows) {
    for (const auto& p : provs) {
      if (std::string(p.name) == "cudnn_tf32" && row.desc.dtype != fftconv::DType::kF32) continue;
      benchmark::RegisterBenchmark((row.name + "/" + p.name).c_str(),
                                   [&row, &p](benchmark::State& s) { run_case(s, row, p); })
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond)
          ->MinTime(0.2);
    }
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
