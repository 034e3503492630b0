// fftconv-tune's command line (tune::parse_args) from any argument list, one per input line: it
// returns -1 (go on), 0 (--help) or 2 (bad command line, said on stderr) and throws nothing
// (main() has no handler); a command line it accepts names at least one shape file.
#include <cstddef>
#include <cstdint>

#include "fftconv-tune/args.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::Argv args("fftconv-tune", data, size);
  tune::Args a;
  const int status = tune::parse_args(args.argc(), args.argv(), a);
  FUZZ_CHECK(status == -1 || status == 0 || status == 2, args.text());
  if (status == -1) FUZZ_CHECK(!a.files.empty(), args.text());
  return 0;
}
