// Overlap-save tiling on the CPU: tile geometry, and the whole tiled pipeline emulated in the
// spatial domain with the index functions the pad and clip kernels use (circular correlation per
// tile is what the FFTs compute exactly).
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "fftconv/fftconv.hpp"
#include "geometry/fft_geometry.h"
#include "reference/reference.h"
#include "testing/testing.h"
#include "tuning/heuristics.h"

namespace fftconv::detail {
namespace {

// Emulates pad -> per-tile circular correlation -> clip for groups = 1.
std::vector<double> tiled_pipeline(const ConvDesc& d, const FftGeometry& g,
                                   const std::vector<float>& x, const std::vector<float>& w) {
  const std::int64_t th = g.fft_h, tw = g.fft_w, tiles = g.tiles();
  const TileMap map{d.c, g.tiles_h, g.tiles_w, g.tile_out_h * d.stride_h, g.tile_out_w * d.stride_w};
  // Input planes ((n * tiles + tile) * c + channel), as the pad stage writes them.
  const std::int64_t x_planes = d.n * tiles * d.c;
  std::vector<double> xp(x_planes * th * tw, 0.0);
  for (std::int64_t p = 0; p < x_planes; ++p) {
    const PlaneSource ps = pad_plane_source(p, map, d.pad_h, d.pad_w);
    for (std::int64_t i = 0; i < th; ++i)
      for (std::int64_t j = 0; j < tw; ++j) {
        const std::int64_t si = placed_source(i, ps.off_h, 1, d.h);
        const std::int64_t sj = placed_source(j, ps.off_w, 1, d.w);
        if (si >= 0 && sj >= 0) xp[(p * th + i) * tw + j] = x[(ps.plane * d.h + si) * d.w + sj];
      }
  }
  std::vector<double> wp(d.k * d.c * th * tw, 0.0);
  for (std::int64_t p = 0; p < d.k * d.c; ++p)
    for (std::int64_t i = 0; i < th; ++i)
      for (std::int64_t j = 0; j < tw; ++j) {
        const std::int64_t ri = placed_source(i, 0, d.dil_h, d.r);
        const std::int64_t rj = placed_source(j, 0, d.dil_w, d.s);
        if (ri >= 0 && rj >= 0) wp[(p * th + i) * tw + j] = w[(p * d.r + ri) * d.s + rj];
      }
  // Result planes ((n * tiles + tile) * k + kk): circular correlation summed over channels.
  std::vector<double> res(d.n * tiles * d.k * th * tw, 0.0);
  for (std::int64_t m = 0; m < d.n * tiles; ++m)
    for (std::int64_t kk = 0; kk < d.k; ++kk)
      for (std::int64_t a = 0; a < th; ++a)
        for (std::int64_t b = 0; b < tw; ++b) {
          double acc = 0.0;
          for (std::int64_t c = 0; c < d.c; ++c)
            for (std::int64_t i = 0; i < th; ++i)
              for (std::int64_t j = 0; j < tw; ++j)
                acc += xp[((m * d.c + c) * th + (a + i) % th) * tw + (b + j) % tw] *
                       wp[((kk * d.c + c) * th + i) * tw + j];
          res[((m * d.k + kk) * th + a) * tw + b] = acc;
        }
  // Clip: every output element from its tile's result plane.
  std::vector<double> y(d.y_elems());
  for (std::int64_t o = 0; o < d.n * d.k; ++o)
    for (std::int64_t p = 0; p < d.out_h(); ++p)
      for (std::int64_t q = 0; q < d.out_w(); ++q) {
        const std::int64_t ti = p / g.tile_out_h, tj = q / g.tile_out_w;
        const std::int64_t src = clip_plane_source(o, d.k, tiles, ti * g.tiles_w + tj);
        const std::int64_t row = clip_source(p - ti * g.tile_out_h, d.stride_h, th);
        const std::int64_t col = clip_source(q - tj * g.tile_out_w, d.stride_w, tw);
        y[(o * d.out_h() + p) * d.out_w() + q] = res[(src * th + row) * tw + col];
      }
  return y;
}

TEST(Tiling, GeometryCoversTheOutput) {
  for (int h = 1; h <= 40; ++h)
    for (int r = 1; r <= 9; r += 2)
      for (int pad = 0; pad <= 4; ++pad)
        for (int st = 1; st <= 3; ++st)
          for (int t : {8, 9, 12, 16, 20}) {
            ConvDesc d;
            d.h = h; d.w = 5; d.r = r; d.pad_h = pad; d.stride_h = st;
            if (d.validate() != Status::kSuccess || t < d.eff_r()) continue;
            const FftGeometry g = make_tiled_geometry(d, t, 8);
            EXPECT_GE(g.tile_out_h, 1);
            // every output covered, no tile beyond the output, each tile's reads inside its window
            EXPECT_GE(g.tiles_h * g.tile_out_h, d.out_h());
            EXPECT_LT((g.tiles_h - 1) * g.tile_out_h, d.out_h());
            EXPECT_LE((g.tile_out_h - 1) * st + d.eff_r(), t);
          }
}

TEST(Tiling, RejectsTilesSmallerThanTheKernel) {
  ConvDesc d;
  d.h = d.w = 64; d.r = d.s = 15; d.dil_h = 2;  // effective 29 x 15
  EXPECT_THROW(make_tiled_geometry(d, 28, 32), Error);
  EXPECT_NO_THROW(make_tiled_geometry(d, 29, 15));
  EXPECT_EQ(make_tiled_geometry(d, 29, 15).tile_out_h, 1);
}

TEST(Tiling, EmulatedPipelineIsExactOnSmallShapes) {
  std::mt19937_64 gen(4);
  int checked = 0, partial = 0, narrow = 0;
  for (int h = 3; h <= 13; h += 2)
    for (int r = 1; r <= 5; r += 2)
      for (int pad = 0; pad <= r; pad += 2)
        for (int st = 1; st <= 2; ++st)
          for (int dil = 1; dil <= 2; ++dil)
            for (int extra = 0; extra <= 3; extra += 3) {
              ConvDesc d;
              d.n = 2; d.c = 2; d.k = 2;
              d.h = h; d.w = h - 1; d.r = r; d.s = r == 1 ? 1 : r - 1;
              d.pad_h = pad; d.pad_w = pad / 2;
              d.stride_h = st; d.stride_w = 1;
              d.dil_h = dil; d.dil_w = dil;
              if (d.validate() != Status::kSuccess) continue;
              // tiles exactly as large as the kernel (one output each), or a few outputs larger
              const FftGeometry g = make_tiled_geometry(d, d.eff_r() + extra, d.eff_s() + extra);
              const auto x = testing::nonzero_ints(d.x_elems(), gen);
              const auto w = testing::nonzero_ints(d.w_elems(), gen);
              std::vector<double> ref(d.y_elems());
              reference::conv2d_forward_host(d, x.data(), w.data(), nullptr, ref.data());
              EXPECT_EQ(tiled_pipeline(d, g, x, w), ref) << d.to_string() << " tile " << g.fft_h
                                                          << "x" << g.fft_w;
              ++checked;
              partial += d.out_h() % g.tile_out_h != 0;
              narrow += g.tile_out_h == 1;
            }
  EXPECT_GT(checked, 200);
  EXPECT_GT(partial, 20);  // tiles that do not divide the output
  EXPECT_GT(narrow, 20);   // kernels as wide as the tile
}

TEST(Tiling, FullImageIsTheOneTileCase) {
  std::mt19937_64 gen(5);
  ConvDesc d;
  d.n = 2; d.c = 2; d.k = 2; d.h = 11; d.w = 9; d.r = 3; d.s = 5; d.pad_h = 1; d.pad_w = 2;
  const FftGeometry g = make_fft_geometry(d, min_fft_h(d), min_fft_w(d));
  EXPECT_EQ(g.tiles(), 1);
  EXPECT_EQ(g.tile_out_h, d.out_h());
  const auto x = testing::nonzero_ints(d.x_elems(), gen);
  const auto w = testing::nonzero_ints(d.w_elems(), gen);
  std::vector<double> ref(d.y_elems());
  reference::conv2d_forward_host(d, x.data(), w.data(), nullptr, ref.data());
  EXPECT_EQ(tiled_pipeline(d, g, x, w), ref);
}

TEST(Tiling, CostModelTilesLargeMultichannelImagesOnly) {
  ConvDesc wide;  // 2x64x512x512, 64 filters 45x45: full-image filter spectra would be ~5 GB
  wide.n = 2; wide.c = 64; wide.h = wide.w = 512; wide.k = 64; wide.r = wide.s = 45;
  wide.pad_h = wide.pad_w = 22;
  FftGeometry t;
  ASSERT_TRUE(choose_tiled_geometry(wide, &t));
  EXPECT_GT(t.tiles(), 1);
  EXPECT_LT(estimate_fft_us(wide, t), estimate_fft_us(wide, choose_fft_geometry(wide)));
  ConvDesc landmark;  // small planes: one FFT per image is cheaper
  landmark.n = 64; landmark.h = landmark.w = 96; landmark.r = landmark.s = 45;
  landmark.pad_h = landmark.pad_w = 22;
  ASSERT_TRUE(choose_tiled_geometry(landmark, &t));
  EXPECT_GT(estimate_fft_us(landmark, t), estimate_fft_us(landmark, choose_fft_geometry(landmark)));
}

}  // namespace
}  // namespace fftconv::detail
