// The pad stage's cuFFT load callback (Options::fft_callbacks) reads, for each real element the
// r2c loads, the source element pad_load_source() names. Checked here against a direct statement
// of the placement, on random descriptors, both geometries and every pass's segments.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "fft/pad_load.h"
#include "testing/testing.h"
#include "tuning/heuristics.h"

namespace fftconv::detail {
namespace {

// Element (row, col) of destination plane p: the source index, or -1 for a zero.
std::int64_t expected_source(std::int64_t p, std::int64_t row, std::int64_t col,
                             const Placement& pl, const TileMap& m) {
  const std::int64_t tiles = m.tiles_h * m.tiles_w;
  const std::int64_t image = p / (tiles * m.inner), rest = p % (tiles * m.inner);
  const std::int64_t tile = rest / m.inner, channel = rest % m.inner;
  const std::int64_t oh = pl.off_h - (tile / m.tiles_w) * m.step_h;
  const std::int64_t ow = pl.off_w - (tile % m.tiles_w) * m.step_w;
  const std::int64_t u = row - oh, v = col - ow;
  if (u < 0 || v < 0 || u % pl.step_h != 0 || v % pl.step_w != 0) return -1;
  const std::int64_t i = u / pl.step_h, j = v / pl.step_w;
  if (i >= pl.src_h || j >= pl.src_w) return -1;
  return ((image * m.inner + channel) * pl.src_h + i) * pl.src_w + j;
}

struct Segment {
  const char* what;
  Placement place;
  TileMap map;
  std::int64_t planes;
};

// The segments each pass pads (lib/algos/fft_conv.cpp): x at the padding (one plane per tile),
// w at the origin dilated, dy at the origin spread by the stride.
std::vector<Segment> segments(const ConvDesc& d, const FftGeometry& g) {
  const Placement x{d.h, d.w, d.pad_h, d.pad_w, 1, 1};
  const Placement w{d.r, d.s, 0, 0, d.dil_h, d.dil_w};
  const Placement dy{d.out_h(), d.out_w(), 0, 0, d.stride_h, d.stride_w};
  const TileMap x_map{d.c, g.tiles_h, g.tiles_w, g.tile_out_h * d.stride_h,
                      g.tile_out_w * d.stride_w};
  std::vector<Segment> s = {{"x", x, x_map, d.n * g.tiles() * d.c},
                            {"w", w, TileMap{}, d.k * d.c_per_group()}};
  if (!g.tiled) s.push_back({"dy", dy, TileMap{d.k}, d.n * d.k});
  return s;
}

int check(const ConvDesc& d, const FftGeometry& g) {
  int checked = 0;
  for (const Segment& seg : segments(d, g)) {
    const PadLoadInfo info = pad_load_info(seg.place, seg.map, g);
    // The first and last planes of the segment, every element the r2c loads (columns < fft_w).
    std::vector<std::int64_t> planes;
    for (std::int64_t p = 0; p < std::min<std::int64_t>(seg.planes, 3); ++p) planes.push_back(p);
    for (std::int64_t p = std::max<std::int64_t>(3, seg.planes - 3); p < seg.planes; ++p)
      planes.push_back(p);
    for (const std::int64_t p : planes)
      for (std::int64_t row = 0; row < g.fft_h; ++row)
        for (std::int64_t col = 0; col < g.fft_w; ++col) {
          const auto offset =
              static_cast<unsigned long long>(p * g.real_plane_floats() + row * g.pitch + col);
          const std::int64_t want = expected_source(p, row, col, seg.place, seg.map);
          const std::int64_t got = pad_load_source(offset, info);
          if (got != want) {
            ADD_FAILURE() << d.to_string() << " fft " << g.fft_h << "x" << g.fft_w << " tiles "
                          << g.tiles_h << "x" << g.tiles_w << " segment " << seg.what
                          << " plane " << p << " (" << row << ", " << col << "): got " << got
                          << ", want " << want;
            return checked;
          }
          ++checked;
        }
  }
  return checked;
}

TEST(PadLoad, CallbackReadsWhatThePadStagePlaces) {
  std::mt19937_64 gen(1207);
  std::int64_t checked = 0;
  int tiled = 0;
  for (int i = 0; i < 150; ++i) {
    const ConvDesc d = testing::random_desc(gen, DType::kF32);
    checked += check(d, choose_fft_geometry(d));
    // Tiles just above the kernel, as the tiled tests force them.
    const std::int64_t th = d.eff_r() + static_cast<std::int64_t>(gen() % 9);
    const std::int64_t tw = d.eff_s() + static_cast<std::int64_t>(gen() % 9);
    const FftGeometry t = make_tiled_geometry(d, th, tw);
    if (t.tiles() > 1) {
      checked += check(d, t);
      ++tiled;
    }
  }
  EXPECT_GT(tiled, 20);
  EXPECT_GT(checked, 1000000);
}

}  // namespace
}  // namespace fftconv::detail
