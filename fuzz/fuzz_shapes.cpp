// The shape-suite CSV reader (testing::load_shapes) on any text: it returns rows or throws
// std::runtime_error naming the line; every row it returns validates without crashing, a valid
// row's descriptor survives its canonical string, and the dtype variants of the rows build.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "fftconv/conv_desc.hpp"
#include "fuzz_util.h"
#include "testing/testing.h"

namespace ft = fftconv::testing;
using fftconv::ConvDesc;
using fftconv::DType;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::istringstream in(fuzz::text_of(data, size));
  std::vector<ft::ShapeRow> rows;
  try {
    rows = ft::load_shapes(in, "fuzz.csv");
  } catch (const std::runtime_error& e) {
    FUZZ_CHECK(std::string(e.what()).find("fuzz.csv") != std::string::npos, e.what());
    return 0;
  }
  for (const ft::ShapeRow& row : rows) {
    std::ostringstream printed;
    ft::PrintTo(row, &printed);
    if (row.desc.validate() != fftconv::Status::kSuccess) continue;
    const std::string canonical = row.desc.to_string();
    FUZZ_CHECK(ConvDesc::parse(canonical) == row.desc, canonical);
  }
  const std::vector<ft::ShapeRow> variants =
      ft::with_dtypes(rows, {DType::kF32, DType::kF16, DType::kBF16});
  FUZZ_CHECK(variants.size() <= 3 * rows.size(), "too many variants");
  return 0;
}
