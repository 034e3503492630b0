// Low-rank factors of filter planes (lib/filters/low_rank.h): separable filters are found with
// their rank and a measured error at fp32 rounding, full-rank ones are declined, bad input is a
// named error.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "filters/low_rank.h"
#include "fftconv/status.hpp"
#include "testing/testing.h"

namespace fftconv::detail {
namespace {

std::vector<double> gaussian(int n, double sigma) {
  std::vector<double> g(n);
  double sum = 0.0;
  for (int i = 0; i < n; ++i) {
    const double t = i - (n - 1) / 2.0;
    g[i] = std::exp(-t * t / (2 * sigma * sigma));
    sum += g[i];
  }
  for (double& v : g) v /= sum;
  return g;
}

// sum_k a_k b_k^T rounded to fp32, row-major r x s.
std::vector<float> outer_sum(const std::vector<std::vector<double>>& a,
                             const std::vector<std::vector<double>>& b) {
  const std::size_t r = a[0].size(), s = b[0].size();
  std::vector<float> w(r * s);
  for (std::size_t i = 0; i < r; ++i) {
    for (std::size_t j = 0; j < s; ++j) {
      double v = 0.0;
      for (std::size_t k = 0; k < a.size(); ++k) v += a[k][i] * b[k][j];
      w[i * s + j] = static_cast<float>(v);
    }
  }
  return w;
}

// ||w - factors|| / ||w|| recomputed here, in fp64.
double reconstruction_error(const std::vector<float>& w, std::int64_t r, std::int64_t s,
                            const LowRankPlane& p) {
  double err = 0.0, norm = 0.0;
  for (std::int64_t i = 0; i < r; ++i) {
    for (std::int64_t j = 0; j < s; ++j) {
      double v = w[i * s + j];
      norm += v * v;
      for (int k = 0; k < p.rank; ++k) v -= double(p.cols[k * r + i]) * p.rows[k * s + j];
      err += v * v;
    }
  }
  return std::sqrt(err / norm);
}

TEST(LowRank, GaussianIsRankOneAtFp32Rounding) {
  for (auto [n, sigma] : {std::pair{45, 7.0}, std::pair{31, 5.0}, std::pair{101, 16.0}}) {
    const auto g = gaussian(n, sigma);
    const auto w = outer_sum({g}, {g});
    const auto p = low_rank_plane(w.data(), n, n);
    ASSERT_TRUE(p) << n;
    EXPECT_EQ(p->rank, 1) << n;
    EXPECT_EQ(p->cols.size(), std::size_t(n));
    EXPECT_EQ(p->rows.size(), std::size_t(n));
    EXPECT_LE(p->rel_error, 0x1p-22) << n;
    EXPECT_NEAR(reconstruction_error(w, n, n, *p), p->rel_error, 1e-12) << n;
  }
}

// A Gaussian rounded to fp16 or bf16 is full rank at fp32's tolerance (its rounding error is
// far above 2^-22 of its norm) and rank 1 at its dtype's (low_rank_tolerance), with factors
// within it: what lets the separable path take half-precision blurs.
TEST(LowRank, HalfPrecisionGaussianIsRankOneAtItsDtypesTolerance) {
  ConvDesc d;
  d.r = d.s = 45;
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16}) {
    d.dtype = t;
    const std::vector<float> w = testing::gaussian_filter(d, 7.0);
    LowRankOptions o;
    o.tolerance = low_rank_tolerance(t);
    const auto p = low_rank_plane(w.data(), d.r, d.s, o);
    ASSERT_TRUE(p) << dtype_name(t);
    EXPECT_EQ(p->rank, 1) << dtype_name(t);
    EXPECT_LE(p->rel_error, low_rank_tolerance(t)) << dtype_name(t);
    if (t != DType::kF32) {
      const auto strict = low_rank_plane(w.data(), d.r, d.s);  // fp32's 2^-22
      EXPECT_TRUE(!strict || strict->rank > 1) << dtype_name(t);
    }
  }
  EXPECT_EQ(low_rank_tolerance(DType::kF32), LowRankOptions{}.tolerance);
}

TEST(LowRank, RectangularAndOneDimensionalPlanes) {
  const auto w1 = outer_sum({gaussian(45, 7.0)}, {gaussian(13, 2.0)});
  const auto p1 = low_rank_plane(w1.data(), 45, 13);
  ASSERT_TRUE(p1);
  EXPECT_EQ(p1->rank, 1);
  EXPECT_LE(p1->rel_error, 0x1p-22);
  const std::vector<float> row = {1, -2, 3, 0.5f, 7};
  for (auto [r, s] : {std::pair{1, 5}, std::pair{5, 1}}) {
    const auto p = low_rank_plane(row.data(), r, s);
    ASSERT_TRUE(p);
    EXPECT_EQ(p->rank, 1);
    EXPECT_LE(reconstruction_error(row, r, s, *p), 0x1p-22);
  }
  const std::vector<float> box(5 * 7, 1.0f / 35);
  const auto pb = low_rank_plane(box.data(), 5, 7);
  ASSERT_TRUE(pb);
  EXPECT_EQ(pb->rank, 1);
}

TEST(LowRank, RankTwoIsFoundAndNotTakenForOne) {
  // A difference of Gaussians: rank 2.
  const auto w = outer_sum({gaussian(31, 3.0), gaussian(31, 8.0)},
                           {gaussian(31, 3.0), gaussian(31, 8.0)});
  std::vector<float> dog = w;
  const auto narrow = outer_sum({gaussian(31, 3.0)}, {gaussian(31, 3.0)});
  for (std::size_t i = 0; i < dog.size(); ++i) dog[i] = 2.0f * narrow[i] - w[i];
  const auto p = low_rank_plane(dog.data(), 31, 31);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->rank, 2);
  EXPECT_LE(p->rel_error, 0x1p-21);
  LowRankOptions one;
  one.max_rank = 1;
  EXPECT_FALSE(low_rank_plane(dog.data(), 31, 31, one));
}

TEST(LowRank, FullRankRandomFilterIsDeclined) {
  std::mt19937_64 gen(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int n : {3, 15, 45}) {
    std::vector<float> w(n * n);
    for (float& v : w) v = u(gen);
    EXPECT_FALSE(low_rank_plane(w.data(), n, n)) << n;
  }
}

TEST(LowRank, ZeroPlaneIsRankZero) {
  const std::vector<float> w(9 * 9, 0.0f);
  const auto p = low_rank_plane(w.data(), 9, 9);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->rank, 0);
  EXPECT_TRUE(p->cols.empty());
  EXPECT_EQ(p->rel_error, 0.0);
}

TEST(LowRank, BadPlanesAreNamedErrors) {
  std::vector<float> w(5 * 5, 1.0f);
  w[7] = std::numeric_limits<float>::quiet_NaN();
  try {
    low_rank_plane(w.data(), 5, 5);
    ADD_FAILURE() << "a NaN was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("non-finite value nan at (1, 2)"), std::string::npos)
        << e.what();
  }
  w[7] = std::numeric_limits<float>::infinity();
  EXPECT_THROW(low_rank_plane(w.data(), 5, 5), Error);
  EXPECT_THROW(low_rank_plane(w.data(), 0, 5), Error);
  EXPECT_THROW(low_rank_plane(w.data(), 5, 0), Error);
  EXPECT_THROW(low_rank_plane(nullptr, 5, 5), Error);
}

TEST(LowRankFilter, EveryPlaneOrNone) {
  ConvDesc d;
  d.c = d.k = d.groups = 3;  // depthwise: 3 planes
  d.r = d.s = 21;
  d.h = d.w = 32;
  std::vector<float> w;
  for (double sigma : {2.0, 4.0, 6.0}) {
    const auto plane = outer_sum({gaussian(21, sigma)}, {gaussian(21, sigma)});
    w.insert(w.end(), plane.begin(), plane.end());
  }
  const auto f = low_rank_filter(w.data(), d);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->planes.size(), 3u);
  EXPECT_EQ(f->max_rank, 1);
  EXPECT_LE(f->worst_rel_error, 0x1p-22);

  std::mt19937_64 gen(3);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int i = 0; i < 21 * 21; ++i) w[2 * 21 * 21 + i] = u(gen);  // the last plane full rank
  EXPECT_FALSE(low_rank_filter(w.data(), d));

  w[21 * 21 + 5] = std::numeric_limits<float>::quiet_NaN();  // plane 1
  try {
    low_rank_filter(w.data(), d);
    ADD_FAILURE() << "a NaN was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("in plane 1 (filter 1, channel 0)"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace fftconv::detail
