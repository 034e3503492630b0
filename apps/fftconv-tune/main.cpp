// fftconv-tune: fills a tuning cache for a shape suite, so later plans with Tuning::kAutotune (or
// FFTCONV_TUNING_CACHE set) skip the timing.
//   fftconv-tune --shapes FILE.csv --out CACHE.json [--exhaustive] [--filter TEXT]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli.h"
#include "fftconv/fftconv.hpp"
#include "testing/testing.h"

int main(int argc, char** argv) {
  std::vector<std::string> files;
  std::string out, filter;
  bool exhaustive = false;
  CLI::App app(
      "Fills a tuning cache for shape suites: plans every row as Algo::kAuto would run it and,\n"
      "where that is the FFT path, times the per-frequency GEMM candidates (own tilings; with\n"
      "--exhaustive the cuBLAS paths too) and stores the winner in CACHE.json. Rows already in\n"
      "the cache are reported, not retimed. Later plans with Tuning::kAutotune (or\n"
      "FFTCONV_TUNING_CACHE set) then skip the timing.",
      "fftconv-tune");
  fftconv_apps::configure(app);
  app.footer(
      "Exit status: 0 every row planned, 1 a row failed to plan, 2 bad arguments, an unreadable\n"
      "shape file or no CUDA GPU.");
  fftconv_apps::repeatable(app.add_option("--shapes", files, "shape suite CSV; may repeat"))
      ->type_name("FILE.csv")
      ->required();
  app.add_option("--out", out, "the tuning cache to fill (created if missing)")
      ->type_name("CACHE.json")
      ->required();
  app.add_flag("--exhaustive", exhaustive, "also time the cuBLAS paths (Tuning::kExhaustive)");
  app.add_option("--filter", filter, "only rows whose name contains TEXT")->type_name("TEXT");
  const int status = fftconv_apps::parse(app, argc, argv, "fftconv-tune: ");
  if (status >= 0) return status;
  std::vector<fftconv::testing::ShapeRow> rows;
  try {
    for (const auto& f : files)
      for (auto& r : fftconv::testing::load_shapes(f)) rows.push_back(r);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fftconv-tune: %s\n", e.what());
    return 2;
  }
  std::string why;
  if (!fftconv::testing::has_device(&why)) {
    std::fprintf(stderr, "fftconv-tune: %s; tuning times kernels and needs a CUDA GPU\n",
                 why.c_str());
    return 2;
  }
  int failed = 0;
  for (const auto& row : rows) {
    if (!filter.empty() && row.name.find(filter) == std::string::npos) continue;
    fftconv::Options o;
    o.tuning = exhaustive ? fftconv::Tuning::kExhaustive : fftconv::Tuning::kAutotune;
    o.tuning_cache = out;
    try {
      const auto t0 = std::chrono::steady_clock::now();
      const fftconv::Plan plan(row.desc, o);
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const fftconv::PlanInfo& info = plan.info();
      if (info.algo == fftconv::Algo::kFft) {
        std::printf("%-24s fft %lldx%lld gemm %-16s (%.2f s) %s\n", row.name.c_str(),
                    static_cast<long long>(info.fft_h), static_cast<long long>(info.fft_w),
                    info.gemm.c_str(), s, info.reason.c_str());
      } else {
        std::printf("%-24s %s: nothing to tune\n", row.name.c_str(), fftconv::algo_name(info.algo));
      }
    } catch (const std::exception& e) {
      ++failed;
      std::printf("%-24s error: %s\n", row.name.c_str(), e.what());
    }
  }
  return failed ? 1 : 0;
}
