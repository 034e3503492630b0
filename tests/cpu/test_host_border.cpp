// Borders other than zeros on the host backend: every pass of random descriptors against the
// fp64 oracles, F.pad's result for a hand-checked case, kept filters (the host's separable path
// included), and what the plan says about the border.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "fftconv/fftconv.hpp"
#include "reference/reference.h"
#include "testing/testing.h"

#include "host_test_util.h"

namespace fftconv {
namespace {

using hosttest::cpu_options;
using hosttest::poisoned;

constexpr Border kBorders[] = {Border::kReflect, Border::kReplicate, Border::kCircular};

// One pass of a CPU plan into a NaN-poisoned output, against the host oracle.
testing::ErrorStats run_pass(const ConvDesc& d, Pass pass, std::uint64_t seed,
                             std::string* describe = nullptr) {
  const auto x = testing::random_values(d.x_elems(), seed, DType::kF32);
  const auto w = testing::random_values(d.w_elems(), seed + 1, DType::kF32);
  const auto dy = testing::random_values(d.y_elems(), seed + 2, DType::kF32);
  Plan plan(d, cpu_options(pass));
  if (describe) *describe = plan.describe();
  const std::int64_t elems = pass == Pass::kForward        ? d.y_elems()
                             : pass == Pass::kBackwardData ? d.x_elems()
                                                           : d.w_elems();
  std::vector<float> out = poisoned(elems);
  std::vector<double> ref(out.size());
  switch (pass) {
    case Pass::kForward:
      plan.forward(x.data(), w.data(), nullptr, out.data(), nullptr, 0, nullptr);
      reference::conv2d_forward_host(d, x.data(), w.data(), nullptr, ref.data());
      break;
    case Pass::kBackwardData:
      plan.backward_data(dy.data(), w.data(), out.data(), nullptr, 0, nullptr);
      reference::conv2d_backward_data_host(d, dy.data(), w.data(), ref.data());
      break;
    case Pass::kBackwardFilter:
      plan.backward_filter(x.data(), dy.data(), out.data(), nullptr, 0, nullptr);
      reference::conv2d_backward_filter_host(d, x.data(), dy.data(), ref.data());
      break;
  }
  return testing::compare(out, ref);
}

// Random descriptors (stride, dilation, groups, padding beyond an extent, where reflect mirrors
// again and circular wraps again) with each border, all three passes.
TEST(HostBorder, RandomSweepMatchesOracle) {
  FFTCONV_REQUIRE_FFTW();
  constexpr int kCases = 240;
  std::mt19937_64 gen(20261205);
  testing::RandomDescOptions ro = testing::RandomDescOptions::small();
  ro.max_extent = 24;
  ro.max_kernel = 9;
  const double tol = testing::tolerance(DType::kF32);
  double worst = 0.0;
  for (int i = 0; i < kCases; ++i) {
    ConvDesc d = testing::random_desc(gen, ro);
    d.border = kBorders[i % 3];
    for (Pass pass : {Pass::kForward, Pass::kBackwardData, Pass::kBackwardFilter}) {
      std::string describe;
      const testing::ErrorStats err = run_pass(d, pass, 100 + i, &describe);
      worst = std::max(worst, err.rel_l2);
      EXPECT_TRUE(err.pass(tol)) << pass_name(pass) << " " << d.to_string() << ": "
                                 << err.to_string() << " " << describe;
    }
  }
  std::printf("[ sweep    ] cpu borders: %d cases x 3 passes, worst rel_l2 %.3e\n", kCases, worst);
}

// F.pad(x, (1, 1, 1, 1), mode) then a 3x3 box sum on a 2x3 plane (numpy.pad's "reflect",
// "edge" and "wrap" are F.pad's reflect, replicate and circular).
TEST(HostBorder, MatchesFPadOnAHandCheckedCase) {
  FFTCONV_REQUIRE_FFTW();
  ConvDesc d;
  d.h = 2; d.w = 3; d.r = 3; d.s = 3; d.pad_h = 1; d.pad_w = 1;
  const std::vector<float> x{1, 2, 3, 4, 5, 6};
  const std::vector<float> w(9, 1.0f);
  struct Case {
    Border border;
    std::vector<float> y;
  };
  const Case cases[] = {
      {Border::kReflect, {33, 36, 39, 24, 27, 30}},
      {Border::kReplicate, {21, 27, 33, 30, 36, 42}},
      {Border::kCircular, {36, 36, 36, 27, 27, 27}},
  };
  for (const Case& c : cases) {
    d.border = c.border;
    Plan plan(d, cpu_options());
    std::vector<float> y = poisoned(d.y_elems());
    plan.forward(x.data(), w.data(), nullptr, y.data(), nullptr, 0, nullptr);
    for (std::size_t i = 0; i < y.size(); ++i) {
      EXPECT_NEAR(y[i], c.y[i], 1e-4) << border_name(c.border) << " element " << i;
    }
  }
}

// A kept Gaussian (rank 1: the host's separable path) and a kept dense filter, with a border,
// give the per-call result; describe() says how the border is applied.
TEST(HostBorder, KeptFiltersAndDescribe) {
  FFTCONV_REQUIRE_FFTW();
  ConvDesc d = ConvDesc::parse("n2c3h40w37k3r15s15p7x7u1x1d1x1g3f32-reflect");
  const auto x = testing::random_values(d.x_elems(), 5, DType::kF32);
  for (bool gaussian : {true, false}) {
    const std::vector<float> w = gaussian ? testing::gaussian_filter(d, 3.0)
                                          : testing::random_values(d.w_elems(), 6, DType::kF32);
    std::vector<double> ref(static_cast<std::size_t>(d.y_elems()));
    reference::conv2d_forward_host(d, x.data(), w.data(), nullptr, ref.data());
    Plan plan(d, cpu_options());
    plan.set_filter(w.data(), nullptr);
    std::vector<float> y = poisoned(d.y_elems());
    plan.forward(x.data(), nullptr, nullptr, y.data(), nullptr, 0, nullptr);
    const testing::ErrorStats err = testing::compare(y, ref);
    EXPECT_TRUE(err.pass(testing::tolerance(DType::kF32))) << err.to_string() << " "
                                                           << plan.describe();
    EXPECT_NE(plan.describe().find("border reflect"), std::string::npos) << plan.describe();
    EXPECT_NE(plan.describe().find("54x51"), std::string::npos) << plan.describe();
  }
}

TEST(HostBorder, ProfileForwardTimesTheBorderStage) {
  FFTCONV_REQUIRE_FFTW();
  const ConvDesc d = ConvDesc::parse("n1c2h30w30k2r9s9p4x4u1x1d1x1g2f32-circular");
  const auto x = testing::random_values(d.x_elems(), 1, DType::kF32);
  const auto w = testing::random_values(d.w_elems(), 2, DType::kF32);
  Plan plan(d, cpu_options());
  std::vector<float> y(static_cast<std::size_t>(d.y_elems()));
  const std::vector<StageTime> stages =
      plan.profile_forward(x.data(), w.data(), nullptr, y.data(), nullptr, 0, nullptr, 3);
  ASSERT_FALSE(stages.empty());
  EXPECT_EQ(stages.front().stage, "border");
  EXPECT_GT(stages.size(), 1u);
}

}  // namespace
}  // namespace fftconv
