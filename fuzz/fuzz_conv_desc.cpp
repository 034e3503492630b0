// ConvDesc::parse on any text: it returns a descriptor or throws Error(kInvalidArgument); what it
// returns prints back to a string that parses to the same descriptor, and validate() and check()
// agree on it without crashing.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fftconv/conv_desc.hpp"
#include "fftconv/status.hpp"
#include "fuzz_util.h"

using fftconv::ConvDesc;
using fftconv::Status;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = fuzz::text_of(data, size);
  ConvDesc d;
  try {
    d = ConvDesc::parse(text);
  } catch (const fftconv::Error& e) {
    FUZZ_CHECK(e.status() == Status::kInvalidArgument, e.what());
    return 0;
  }

  // The canonical string is a fixed point: it parses to the same descriptor and prints the same.
  const std::string canonical = d.to_string();
  ConvDesc again;
  try {
    again = ConvDesc::parse(canonical);
  } catch (const fftconv::Error& e) {
    FUZZ_CHECK(false, "the canonical string of '" + text + "' does not parse: " + e.what());
  }
  FUZZ_CHECK(again == d, "'" + text + "' -> '" + canonical + "' -> '" + again.to_string() + "'");
  FUZZ_CHECK(!(again != d), canonical);
  FUZZ_CHECK(again.to_string() == canonical, canonical);

  // validate() and check() on any parsed descriptor; the derived sizes of a valid one.
  std::string why;
  const Status st = d.validate(&why);
  FUZZ_CHECK(d.validate() == st, canonical);
  if (st == Status::kSuccess) {
    FUZZ_CHECK(why.empty(), why);
    d.check();
    FUZZ_CHECK(d.out_h() >= 1 && d.out_w() >= 1, canonical);
    FUZZ_CHECK(d.x_elems() >= 1 && d.w_elems() >= 1 && d.y_elems() >= 1, canonical);
    FUZZ_CHECK(d.c_per_group() * d.groups == d.c && d.k_per_group() * d.groups == d.k, canonical);
    FUZZ_CHECK(d.eff_r() >= d.r && d.eff_s() >= d.s, canonical);
    (void)d.is_depthwise();
  } else {
    FUZZ_CHECK(!why.empty(), canonical);
    try {
      d.check();
      FUZZ_CHECK(false, "check() accepted what validate() refused: " + canonical);
    } catch (const fftconv::Error& e) {
      FUZZ_CHECK(e.status() == st, canonical + ": " + e.what());
    }
  }
  return 0;
}
