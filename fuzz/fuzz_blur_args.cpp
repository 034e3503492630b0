// fftconv-blur's command line (blur::parse_args) from any argument list, one per input line: it
// returns -1 (go on), 0 (--help) or 2 (refused by CLI11, said on stderr), or throws UserError or
// fftconv::Error (which main() reports with exit status 2); nothing else. A command line it
// accepts leaves values the run can use.
#include <cstddef>
#include <cstdint>

#include "fftconv-blur/args.h"
#include "fftconv-blur/blur.h"
#include "fftconv-blur/image_io.h"
#include "fftconv/status.hpp"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::Argv args("fftconv-blur", data, size);
  blur::Args a;
  int status = 0;
  try {
    status = blur::parse_args(args.argc(), args.argv(), a);
  } catch (const blur::UserError&) {
    return 0;
  } catch (const fftconv::Error&) {
    return 0;
  }
  FUZZ_CHECK(status == -1 || status == 0 || status == 2, args.text());
  if (status != -1) return 0;
  FUZZ_CHECK(!a.inputs.empty(), args.text());
  FUZZ_CHECK(a.out_file.empty() || a.out_dir.empty(), args.text());
  FUZZ_CHECK(a.device == "gpu" || a.device == "cpu" || a.device == "auto", args.text());
  FUZZ_CHECK(a.batch >= 0 && a.batch <= 4096 && a.threads >= 0 && a.threads <= 4096, args.text());
  FUZZ_CHECK(a.repeat >= 1 && a.repeat <= 1000, args.text());
  FUZZ_CHECK(!a.has_sigma || a.sigma > 0.0, args.text());
  blur::parse_border(a.border);
  return 0;
}
