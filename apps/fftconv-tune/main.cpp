// fftconv-tune: fills a tuning cache for a shape suite, so later plans with Tuning::kAutotune (or
// FFTCONV_TUNING_CACHE set) skip the timing.
//   fftconv-tune --shapes FILE.csv --out CACHE.json [--exhaustive] [--filter TEXT]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "args.h"
#include "fftconv/fftconv.hpp"
#include "testing/testing.h"

int main(int argc, char** argv) {
  tune::Args args;
  const int status = tune::parse_args(argc, argv, args);
  if (status >= 0) return status;
  const std::vector<std::string>& files = args.files;
  const std::string& out = args.out;
  const std::string& filter = args.filter;
  const bool exhaustive = args.exhaustive;
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
