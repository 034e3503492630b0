// Every row of the shipped shape suites against the fp64 device oracle: the FFT path, Auto, and
// (fp32) the cuDNN path.
#include <algorithm>
#include <cmath>
#include <filesystem>

#include "gpu_test_util.h"

namespace fftconv::gputest {
namespace {

TEST(SuiteFiles, Load) {
  const std::filesystem::path dir = std::filesystem::path(FFTCONV_TEST_DATA_DIR) / "shapes";
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".csv") continue;
    ++files;
    EXPECT_NO_THROW(testing::load_shapes(entry.path().string())) << entry.path();
  }
  EXPECT_GE(files, 1);
}

class SuiteRow : public ::testing::TestWithParam<testing::ShapeRow> {};

// The cuDNN path sums C/groups*R*S products per output in fp32 (no FFT): its error grows like
// sqrt(length) * eps. wide_c64_512_r45 (129600 terms) measured max_err 1.6e-5 on the H200. Our
// own paths keep the fp32 tolerance of 1e-5 whatever the length.
double cudnn_tolerance(const ConvDesc& d) {
  const double length = double(d.c_per_group()) * d.r * d.s;
  return std::max(testing::tolerance(d.dtype), 4.0 * std::sqrt(length) * 0x1p-24);
}

void expect_matches(const Problem& p, const Options& o, const char* what) {
  RunResult r;
  try {
    r = run_forward(p, o);
  } catch (const Error& e) {
    ADD_FAILURE() << what << " " << p.desc.to_string() << ": " << e.what();
    return;
  }
  const double tol = o.algo == Algo::kCudnn ? cudnn_tolerance(p.desc) : testing::tolerance(p.desc.dtype);
  std::printf("[ row      ] %-8s %s %s\n", what, r.err.to_string().c_str(), r.describe.c_str());
  EXPECT_TRUE(r.err.pass(tol)) << what << " " << p.desc.to_string() << " seed " << p.seed << ": "
                               << r.err.to_string() << " (tolerance " << tol << ") "
                               << r.describe;
}

TEST_P(SuiteRow, MatchesOracle) {
  FFTCONV_REQUIRE_GPU();
  const testing::ShapeRow& row = GetParam();
  const Problem p(row.desc, 777, true);
  Options o;
  o.algo = Algo::kFft;
  expect_matches(p, o, "fft");
  o.algo = Algo::kFftTiled;
  expect_matches(p, o, "tiled");
  o.algo = Algo::kAuto;
  expect_matches(p, o, "auto");
  if (row.desc.dtype == DType::kF32) {
    o.algo = Algo::kCudnn;
    expect_matches(p, o, "cudnn");
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, SuiteRow, ::testing::ValuesIn(suite_rows()),
                         [](const ::testing::TestParamInfo<testing::ShapeRow>& info) {
                           return info.param.name;
                         });

}  // namespace
}  // namespace fftconv::gputest
