// Borders other than zeros (ConvDesc::border): the descriptor's text and checks, the engine's
// index math against the oracle's plain definitions, and the host stages that write the
// bordered input and fold its gradient back (an adjoint pair).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "fftconv/fftconv.h"
#include "fftconv/fftconv.hpp"
#include "geometry/index_math.h"
#include "reference/direct_output.h"
#include "stages/border.h"
#include "testing/testing.h"

namespace fftconv {
namespace {

constexpr Border kBorders[] = {Border::kZero, Border::kReflect, Border::kReplicate,
                               Border::kCircular};

TEST(Border, NamesRoundTrip) {
  for (Border b : kBorders) EXPECT_EQ(parse_border(border_name(b)), b);
  EXPECT_EQ(parse_border("zeros"), Border::kZero);     // nn.Conv2d's padding_mode
  EXPECT_EQ(parse_border("constant"), Border::kZero);  // F.pad's mode
  EXPECT_THROW(parse_border("mirror"), Error);
}

TEST(Border, DescriptorTextCarriesIt) {
  ConvDesc d;
  d.n = 2; d.c = 3; d.h = 40; d.w = 30; d.k = 3; d.groups = 3; d.r = 9; d.s = 7;
  d.pad_h = 4; d.pad_w = 3;
  EXPECT_EQ(d.to_string(), "n2c3h40w30k3r9s7p4x3u1x1d1x1g3f32");  // zeros: the text as before
  for (Border b : kBorders) {
    d.border = b;
    const ConvDesc back = ConvDesc::parse(d.to_string());
    EXPECT_EQ(back, d) << d.to_string();
    EXPECT_EQ(back.border, b);
  }
  d.border = Border::kReflect;
  EXPECT_EQ(d.to_string(), "n2c3h40w30k3r9s7p4x3u1x1d1x1g3f32-reflect");
  ConvDesc z = d;
  z.border = Border::kZero;
  EXPECT_NE(z, d);
  EXPECT_THROW(ConvDesc::parse("n2c3h40w30k3r9s7p4x3u1x1d1x1g3f32-zero"), Error);
  EXPECT_THROW(ConvDesc::parse("n2c3h40w30k3r9s7p4x3u1x1d1x1g3f32-mirror"), Error);
  EXPECT_THROW(ConvDesc::parse("n2c3h40w30k3r9s7p4x3u1x1d1x1g3f32-"), Error);
}

TEST(Border, ValidateRejectsAnUnknownValue) {
  ConvDesc d;
  d.border = static_cast<Border>(7);
  std::string why;
  EXPECT_EQ(d.validate(&why), Status::kInvalidArgument);
  EXPECT_NE(why.find("border"), std::string::npos) << why;
  fftconv_conv_desc_t c = fftconv_conv_desc_default();
  EXPECT_EQ(c.border, FFTCONV_BORDER_ZERO);
  c.border = static_cast<fftconv_border_t>(9);
  EXPECT_EQ(fftconv_conv_desc_validate(&c), FFTCONV_STATUS_INVALID_ARGUMENT);
  c.border = FFTCONV_BORDER_CIRCULAR;
  EXPECT_EQ(fftconv_conv_desc_validate(&c), FFTCONV_STATUS_SUCCESS);
}

// F.pad's modes where it takes them (pad below the extent; reflect below extent - 1): numpy's
// "reflect" is F.pad's "reflect", "edge" its "replicate", "wrap" its "circular".
TEST(Border, IndexMatchesFPadOnASmallPlane) {
  const std::int64_t n = 4;
  const std::vector<std::int64_t> reflect{3, 2, 1, 0, 1, 2, 3, 2, 1, 0};    // i = -3 .. 6
  const std::vector<std::int64_t> replicate{0, 0, 0, 0, 1, 2, 3, 3, 3, 3};
  const std::vector<std::int64_t> circular{1, 2, 3, 0, 1, 2, 3, 0, 1, 2};
  for (std::int64_t i = -3; i <= 6; ++i) {
    EXPECT_EQ(detail::border_index(i, n, Border::kReflect), reflect[i + 3]) << i;
    EXPECT_EQ(detail::border_index(i, n, Border::kReplicate), replicate[i + 3]) << i;
    EXPECT_EQ(detail::border_index(i, n, Border::kCircular), circular[i + 3]) << i;
    EXPECT_EQ(detail::border_index(i, n, Border::kZero), i >= 0 && i < n ? i : -1) << i;
  }
}

// The engine's closed forms (index_math.h, 64- and 32-bit) against the oracle's walks, far
// beyond one extent, where reflect mirrors again and circular wraps again.
TEST(Border, IndexMatchesTheOracleEverywhere) {
  for (Border b : kBorders) {
    for (std::int64_t n = 1; n <= 9; ++n) {
      for (std::int64_t i = -40; i < 50; ++i) {
        const std::int64_t want = reference::bordered_source(i, n, b);
        EXPECT_EQ(detail::border_index(i, n, b), want) << border_name(b) << " n " << n << " i " << i;
        EXPECT_EQ(detail::border_index<int>(int(i), int(n), b), want) << border_name(b);
      }
    }
  }
}

// border_preimages lists exactly the positions of [-pad, n + pad) that map to i, once each.
TEST(Border, PreimagesAreExactlyThePositionsMappedToAnIndex) {
  for (Border b : kBorders) {
    for (std::int64_t n = 1; n <= 9; ++n) {
      for (std::int64_t pad = 0; pad <= 21; ++pad) {
        for (std::int64_t i = 0; i < n; ++i) {
          std::vector<std::int64_t> want, got;
          for (std::int64_t u = -pad; u < n + pad; ++u) {
            if (reference::bordered_source(u, n, b) == i) want.push_back(u);
          }
          const detail::BorderPreimages<> p = detail::border_preimages(i, n, pad, b);
          for (std::int64_t t = 0; t < p.count; ++t) got.push_back(p.first + t * p.step);
          for (std::int64_t t = 0; t < p.count2; ++t) got.push_back(p.first2 + t * p.step);
          std::sort(got.begin(), got.end());
          EXPECT_EQ(got, want) << border_name(b) << " n " << n << " pad " << pad << " i " << i;
        }
      }
    }
  }
}

TEST(Border, BorderedDescriptorIsTheValidProblemOfTheContinuedInput) {
  ConvDesc d;
  d.n = 2; d.c = 4; d.h = 33; d.w = 20; d.k = 6; d.groups = 2; d.r = 7; d.s = 5;
  d.pad_h = 5; d.pad_w = 2; d.stride_h = 2; d.dil_w = 2; d.border = Border::kReplicate;
  const ConvDesc b = detail::bordered_desc(d);
  EXPECT_EQ(b.h, 43);
  EXPECT_EQ(b.w, 24);
  EXPECT_EQ(b.pad_h, 0);
  EXPECT_EQ(b.pad_w, 0);
  EXPECT_EQ(b.border, Border::kZero);
  EXPECT_EQ(b.out_h(), d.out_h());
  EXPECT_EQ(b.out_w(), d.out_w());
  EXPECT_EQ(detail::bordered_elems(d), b.x_elems());
}

// The copy writes x continued by the border; the fold is its adjoint:
// <copy(x), g> == <x, fold(g)> for random x and g (exact in the small integers used).
TEST(Border, HostCopyAndFoldAreAnAdjointPair) {
  std::mt19937_64 gen(20261204);
  for (Border b : kBorders) {
    for (int trial = 0; trial < 12; ++trial) {
      ConvDesc d;
      d.n = 1 + trial % 2; d.c = 1 + trial % 3;
      d.h = 1 + gen() % 9; d.w = 1 + gen() % 11;
      d.pad_h = gen() % 14; d.pad_w = gen() % 14;
      d.r = 1; d.s = 1;
      d.border = b;
      const std::int64_t hb = d.h + 2 * d.pad_h, wb = d.w + 2 * d.pad_w;
      std::vector<float> x(static_cast<std::size_t>(d.x_elems()));
      std::vector<float> g(static_cast<std::size_t>(detail::bordered_elems(d)));
      for (float& v : x) v = float(int(gen() % 17) - 8);
      for (float& v : g) v = float(int(gen() % 17) - 8);
      std::vector<float> xb(g.size(), -99.0f), dx(x.size(), -99.0f);
      detail::border_copy_host(d, x.data(), xb.data(), 2);
      detail::border_fold_host(d, g.data(), dx.data(), 2);
      double lhs = 0.0, rhs = 0.0;
      for (std::size_t i = 0; i < g.size(); ++i) lhs += double(xb[i]) * g[i];
      for (std::size_t i = 0; i < x.size(); ++i) rhs += double(x[i]) * dx[i];
      EXPECT_EQ(lhs, rhs) << d.to_string();
      // Every bordered element is the element its position holds.
      for (std::int64_t p = 0; p < d.n * d.c; ++p) {
        for (std::int64_t i = 0; i < hb; ++i) {
          for (std::int64_t j = 0; j < wb; ++j) {
            const std::int64_t si = reference::bordered_source(i - d.pad_h, d.h, b);
            const std::int64_t sj = reference::bordered_source(j - d.pad_w, d.w, b);
            const float want = si < 0 || sj < 0 ? 0.0f : x[(p * d.h + si) * d.w + sj];
            ASSERT_EQ(xb[(p * hb + i) * wb + j], want) << d.to_string() << " " << i << "," << j;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace fftconv
