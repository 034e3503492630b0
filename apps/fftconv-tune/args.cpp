// fftconv-tune's command line (CLI11).
#include "args.h"

#include "cli.h"

namespace tune {

int parse_args(int argc, char** argv, Args& a) {
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
  fftconv_apps::repeatable(app.add_option("--shapes", a.files, "shape suite CSV; may repeat"))
      ->type_name("FILE.csv")
      ->required();
  app.add_option("--out", a.out, "the tuning cache to fill (created if missing)")
      ->type_name("CACHE.json")
      ->required();
  app.add_flag("--exhaustive", a.exhaustive, "also time the cuBLAS paths (Tuning::kExhaustive)");
  app.add_option("--filter", a.filter, "only rows whose name contains TEXT")->type_name("TEXT");
  return fftconv_apps::parse(app, argc, argv, "fftconv-tune: ");
}

}  // namespace tune
