// fftconv-bench's command line (bench::parse_args) from any argument list, one per input line:
// it returns -1 (go on), 0 (--help) or 2 (bad command line, said on stderr) and throws nothing
// (main() has no handler); a command line it accepts leaves a configuration the driver can run.
#include <cstddef>
#include <cstdint>

#include "fftconv-bench/args.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::Argv args("fftconv-bench", data, size);
  bench::Config cfg;
  const int status = bench::parse_args(args.argc(), args.argv(), cfg);
  FUZZ_CHECK(status == -1 || status == 0 || status == 2, args.text());
  if (status != -1) return 0;
  FUZZ_CHECK(!cfg.shape_files.empty() || !cfg.single.empty(), args.text());
  FUZZ_CHECK(!cfg.passes.empty(), args.text());
  FUZZ_CHECK(cfg.iters >= 1 && cfg.warmup >= 0, args.text());
  FUZZ_CHECK(cfg.placements >= 1 && cfg.placements <= 64, args.text());
  FUZZ_CHECK(!cfg.control || cfg.interleave, args.text());
  FUZZ_CHECK(!cfg.interleave || cfg.dtypes.size() >= 2, args.text());
  FUZZ_CHECK(cfg.fft_all ? cfg.fft_h == 0 && cfg.fft_w == 0
                         : (cfg.fft_h == 0) == (cfg.fft_w == 0) && cfg.fft_h >= 0,
             args.text());
  for (fftconv::Pass p : cfg.passes) FUZZ_CHECK(bench::engine_options(cfg, p).pass == p, "");
  return 0;
}
