// fftconv-bench: runs the engine on shape suites (or one shape), times it against cuDNN, verifies
// it against the fp64 device oracle, and writes an aligned table and JSON.
//
// args.* the command line, run.* a row in one pass and the groups of a run, timing.* input sets
// and timed plans, output.* the table and the JSON.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "args.h"
#include "output.h"
#include "run.h"
#include "testing/testing.h"

namespace ft = fftconv::testing;

int main(int argc, char** argv) {
  bench::Config cfg;
  const int status = bench::parse_args(argc, argv, cfg);
  if (status >= 0) return status;
  std::vector<ft::ShapeRow> rows = cfg.single;
  for (const std::string& f : cfg.shape_files) {
    try {
      for (auto& r : ft::load_shapes(f)) rows.push_back(r);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "fftconv-bench: %s\n", e.what());
      return 2;
    }
  }
  if (!cfg.dtypes.empty()) rows = ft::with_dtypes(rows, cfg.dtypes);
  if (!cfg.filter.empty()) {
    rows.erase(std::remove_if(rows.begin(), rows.end(),
                              [&](const ft::ShapeRow& r) {
                                return r.name.find(cfg.filter) == std::string::npos;
                              }),
               rows.end());
  }
  bench::Resumed resumed;
  if (cfg.resume) {
    try {
      resumed = bench::read_resumed(cfg.json_path, cfg);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "fftconv-bench: --resume: %s\n", e.what());
      return 2;
    }
    cfg.skip = resumed.done;
    std::size_t to_run = 0;
    for (const ft::ShapeRow& r : rows) {
      for (fftconv::Pass p : cfg.passes) {
        to_run += cfg.skip.count({r.desc.to_string(), fftconv::pass_name(p)}) ? 0 : 1;
      }
    }
    std::printf("resuming %s: %zu row-pass(es) kept, %zu to run", cfg.json_path.c_str(),
                resumed.rows.size(), to_run);
    if (resumed.dropped > 0) std::printf(" (%d unmeasured row(s) dropped)", resumed.dropped);
    std::printf("\n");
    if (to_run == 0 && resumed.dropped == 0) return resumed.out_of_tolerance && cfg.verify ? 1 : 0;
  }
  std::string why;
  if (!ft::has_device(&why)) {
    std::fprintf(stderr,
                 "fftconv-bench: %s.\nThis driver times and verifies the GPU engine and needs a "
                 "CUDA GPU; %zu row(s) were loaded and none was run.\n",
                 why.c_str(), rows.size());
    return 2;
  }
  cudaDeviceProp prop{};
  int dev = 0;
  cudaGetDevice(&dev);
  cudaGetDeviceProperties(&prop, dev);
  if (!resumed.device.empty() && resumed.device != prop.name) {
    std::fprintf(stderr, "fftconv-bench: --resume: %s was measured on %s, this is %s\n",
                 cfg.json_path.c_str(), resumed.device.c_str(), prop.name);
    return 2;
  }
  std::printf(
      "device: %s (%d SMs), %zu row(s), %d timed runs after %d warm-up%s, engine algo %s%s\n",
      prop.name, prop.multiProcessorCount, rows.size(), cfg.iters, cfg.warmup,
      cfg.graph ? " (CUDA-graph replays)" : "", fftconv::algo_name(cfg.algo),
      cfg.verify ? ", verified against the fp64 oracle" : "");
  cudaStream_t stream;
  ft::cuda_check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  bench::print_header();
  std::vector<bench::Row> results;
  int failed = 0;
  // Prints each row as it comes and keeps it; the JSON is rewritten after every row.
  bench::run_rows(rows, cfg, stream, [&](const bench::Row& r) {
    if (r.verified && !r.ok) ++failed;
    bench::print_row(r);
    results.push_back(r);
    if (!cfg.json_path.empty())
      bench::write_json(cfg.json_path, cfg, results, prop.name, false, resumed);
  });
  cudaStreamDestroy(stream);
  if (!cfg.json_path.empty())
    bench::write_json(cfg.json_path, cfg, results, prop.name, true, resumed);
  if (cfg.verify) {
    // The kept rows count where this run verifies too (the file was verified then: same
    // settings).
    std::printf("%d of %zu row(s) out of tolerance\n", failed + resumed.out_of_tolerance,
                results.size() + resumed.rows.size());
    return failed + resumed.out_of_tolerance ? 1 : 0;
  }
  return 0;
}
