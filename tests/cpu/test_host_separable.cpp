// The host backend's separable path: a kept filter whose planes are low rank runs as 1-D passes
// (forward and backward data), matches the fp64 oracle of the dense filter, says so in
// describe(), and every other filter keeps the FFT spectrum. Needs no GPU.
#include <gtest/gtest.h>

#include <cmath>
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

// A K x C/groups x R x S filter whose every plane is a sum of `rank` outer products of random
// vectors, rounded to fp32.
std::vector<float> low_rank_filter(const ConvDesc& d, int rank, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<float> w(static_cast<std::size_t>(d.w_elems()));
  for (std::int64_t p = 0; p < d.k * d.c_per_group(); ++p) {
    std::vector<std::vector<double>> a(rank, std::vector<double>(d.r)),
        b(rank, std::vector<double>(d.s));
    for (int t = 0; t < rank; ++t) {
      for (double& v : a[t]) v = u(gen);
      for (double& v : b[t]) v = u(gen);
    }
    for (std::int64_t i = 0; i < d.r; ++i) {
      for (std::int64_t j = 0; j < d.s; ++j) {
        double v = 0.0;
        for (int t = 0; t < rank; ++t) v += a[t][i] * b[t][j];
        w[p * d.r * d.s + i * d.s + j] = static_cast<float>(v);
      }
    }
  }
  return w;
}

struct KeptRun {
  testing::ErrorStats err;
  std::string describe;
  std::size_t filter_bytes = 0;
};

// Keeps `w` in a plan of `pass`, runs it with w == nullptr and compares with the dense oracle.
KeptRun run_kept(const ConvDesc& d, Pass pass, const std::vector<float>& w, std::uint64_t seed) {
  Plan plan(d, cpu_options(pass));
  plan.set_filter(w.data(), nullptr);
  KeptRun r{{}, plan.describe(), plan.filter_bytes()};
  if (pass == Pass::kForward) {
    const auto x = testing::random_values(d.x_elems(), seed, DType::kF32);
    const auto b = testing::random_values(d.k, seed + 1, DType::kF32);
    std::vector<double> ref(static_cast<std::size_t>(d.y_elems()));
    reference::conv2d_forward_host(d, x.data(), w.data(), b.data(), ref.data());
    std::vector<float> y = poisoned(d.y_elems());
    plan.forward(x.data(), nullptr, b.data(), y.data(), nullptr, 0, nullptr);
    r.err = testing::compare(y, ref);
  } else {
    const auto dy = testing::random_values(d.y_elems(), seed, DType::kF32);
    std::vector<double> ref(static_cast<std::size_t>(d.x_elems()));
    reference::conv2d_backward_data_host(d, dy.data(), w.data(), ref.data());
    std::vector<float> dx = poisoned(d.x_elems());
    plan.backward_data(dy.data(), nullptr, dx.data(), nullptr, 0, nullptr);
    r.err = testing::compare(dx, ref);
  }
  return r;
}

bool is_separable(const std::string& describe) {
  return describe.find("kept filter: separable") != std::string::npos;
}

// Random descriptors (strides, dilations, padding beyond the kernel, groups, depthwise) with
// rank-1 and rank-2 filters, both passes: every result within the fp32 tolerance of the dense
// oracle, and the separable path taken where it pays (on most of these small shapes).
TEST(HostSeparable, LowRankFiltersMatchTheDenseOracle) {
  FFTCONV_REQUIRE_FFTW();
  std::mt19937_64 gen(2024);
  testing::RandomDescOptions shapes;
  shapes.wide_padding = true;
  shapes.max_macs = 2.0e7;
  int separable = 0, cases = 0;
  for (int i = 0; i < 40; ++i) {
    const ConvDesc d = testing::random_desc(gen, shapes);
    if (d.r < 2 || d.s < 2) continue;  // a 1-D filter is its own factor: nothing to show
    for (int rank : {1, 2}) {
      if (rank >= std::min(d.r, d.s)) continue;  // full rank is declined, tested below
      const auto w = low_rank_filter(d, rank, 100 + i);
      for (Pass pass : {Pass::kForward, Pass::kBackwardData}) {
        const KeptRun r = run_kept(d, pass, w, 7 * i + rank);
        ++cases;
        separable += is_separable(r.describe);
        EXPECT_TRUE(r.err.pass(testing::tolerance(DType::kF32)))
            << pass_name(pass) << " rank " << rank << " " << d.to_string() << ": "
            << r.err.to_string() << "; " << r.describe;
        if (is_separable(r.describe)) {
          EXPECT_NE(r.describe.find("rank " + std::to_string(rank)), std::string::npos)
              << r.describe;
        }
      }
    }
  }
  std::printf("[ sweep    ] host separable: %d cases, %d on the separable path\n", cases,
              separable);
  EXPECT_GT(cases, 30);
  EXPECT_GT(separable, cases / 2);
}

// A Gaussian kept in a plan of 8 maps of 96x96, padding 'same': 15x15 takes the 1-D passes (a
// fifth of the FFT's modelled flops); 45x45 is a close call the model gives to the FFT on this
// size. Both are exact against the dense oracle, whichever path runs.
std::vector<float> gaussian_filter(int size, double sigma) {
  std::vector<double> g(size);
  double sum = 0.0;
  for (int i = 0; i < size; ++i) {
    const double t = i - (size - 1) / 2.0;
    sum += g[i] = std::exp(-t * t / (2 * sigma * sigma));
  }
  std::vector<float> w(size * size);
  for (int i = 0; i < size; ++i)
    for (int j = 0; j < size; ++j) w[i * size + j] = static_cast<float>(g[i] * g[j] / (sum * sum));
  return w;
}

TEST(HostSeparable, GaussianBlurIsSeparableAndExact) {
  FFTCONV_REQUIRE_FFTW();
  const ConvDesc d15 = ConvDesc::parse("n8c1h96w96k1r15s15p7x7u1x1d1x1g1f32");
  const ConvDesc d45 = ConvDesc::parse("n8c1h96w96k1r45s45p22x22u1x1d1x1g1f32");
  for (Pass pass : {Pass::kForward, Pass::kBackwardData}) {
    const KeptRun r = run_kept(d15, pass, gaussian_filter(15, 2.5), 5);
    EXPECT_TRUE(is_separable(r.describe)) << r.describe;
    EXPECT_NE(r.describe.find("rank 1"), std::string::npos) << r.describe;
    EXPECT_EQ(r.filter_bytes, (15u + 15u) * sizeof(float)) << r.describe;
    EXPECT_TRUE(r.err.pass(testing::tolerance(DType::kF32))) << r.err.to_string();
    const KeptRun r45 = run_kept(d45, pass, gaussian_filter(45, 7.0), 6);
    EXPECT_NE(r45.describe.find("weighted flops against the fft's"), std::string::npos)
        << r45.describe;
    EXPECT_TRUE(r45.err.pass(testing::tolerance(DType::kF32)))
        << r45.err.to_string() << "; " << r45.describe;
  }
}

TEST(HostSeparable, FullRankFilterKeepsTheSpectrum) {
  FFTCONV_REQUIRE_FFTW();
  const ConvDesc d = ConvDesc::parse("n2c4h33w31k6r13s11p6x5u1x1d1x1g2f32");
  const auto w = testing::random_values(d.w_elems(), 3, DType::kF32);
  const KeptRun r = run_kept(d, Pass::kForward, w, 4);
  EXPECT_FALSE(is_separable(r.describe)) << r.describe;
  EXPECT_NE(r.describe.find("kept filter: fft spectrum (not separable: a plane is not low rank)"),
            std::string::npos)
      << r.describe;
  EXPECT_TRUE(r.err.pass(testing::tolerance(DType::kF32))) << r.err.to_string();
}

TEST(HostSeparable, PerCallFilterAndClearing) {
  FFTCONV_REQUIRE_FFTW();
  const ConvDesc d = ConvDesc::parse("n2c3h40w44k3r15s15p7x7u1x1d1x1g3f32");
  const auto w = low_rank_filter(d, 1, 9);
  const auto x = testing::random_values(d.x_elems(), 10, DType::kF32);
  Plan plan(d, cpu_options());
  plan.set_filter(w.data(), nullptr);
  ASSERT_TRUE(is_separable(plan.describe())) << plan.describe();
  EXPECT_TRUE(plan.has_filter());
  EXPECT_EQ(plan.filter_bytes(), 3u * (15 + 15) * sizeof(float));
  // A per-call filter is used as given (the FFT path), the kept one stays.
  const auto other = testing::random_values(d.w_elems(), 11, DType::kF32);
  std::vector<double> ref_other(static_cast<std::size_t>(d.y_elems())), ref(ref_other.size());
  reference::conv2d_forward_host(d, x.data(), other.data(), nullptr, ref_other.data());
  reference::conv2d_forward_host(d, x.data(), w.data(), nullptr, ref.data());
  std::vector<float> y = poisoned(d.y_elems());
  plan.forward(x.data(), other.data(), nullptr, y.data(), nullptr, 0, nullptr);
  EXPECT_TRUE(testing::compare(y, ref_other).pass(testing::tolerance(DType::kF32)));
  plan.forward(x.data(), nullptr, nullptr, y.data(), nullptr, 0, nullptr);
  EXPECT_TRUE(testing::compare(y, ref).pass(testing::tolerance(DType::kF32)));
  // Replacing the kept filter with a full-rank one goes back to the spectrum.
  plan.set_filter(other.data(), nullptr);
  EXPECT_FALSE(is_separable(plan.describe())) << plan.describe();
  plan.forward(x.data(), nullptr, nullptr, y.data(), nullptr, 0, nullptr);
  EXPECT_TRUE(testing::compare(y, ref_other).pass(testing::tolerance(DType::kF32)));
  plan.clear_filter();
  EXPECT_FALSE(plan.has_filter());
  EXPECT_EQ(plan.filter_bytes(), 0u);
  EXPECT_EQ(plan.describe().find("kept filter"), std::string::npos) << plan.describe();
  EXPECT_THROW(plan.forward(x.data(), nullptr, nullptr, y.data(), nullptr, 0, nullptr), Error);
}

TEST(HostSeparable, NonFiniteFilterRunsDenseAndSaysWhy) {
  FFTCONV_REQUIRE_FFTW();
  const ConvDesc d = ConvDesc::parse("n1c1h24w24k1r5s5p2x2u1x1d1x1g1f32");
  std::vector<float> w(25, 0.04f);
  w[12] = std::numeric_limits<float>::quiet_NaN();
  Plan plan(d, cpu_options());
  plan.set_filter(w.data(), nullptr);
  EXPECT_NE(plan.describe().find("not separable: invalid_argument: low-rank filter: non-finite"),
            std::string::npos)
      << plan.describe();
  const auto x = testing::random_values(d.x_elems(), 1, DType::kF32);
  std::vector<float> y(static_cast<std::size_t>(d.y_elems()), 0.0f);
  plan.forward(x.data(), nullptr, nullptr, y.data(), nullptr, 0, nullptr);
  EXPECT_TRUE(std::isnan(y[12 * 24 + 12]));  // as the dense convolution: NaN where it reaches
}

}  // namespace
}  // namespace fftconv
