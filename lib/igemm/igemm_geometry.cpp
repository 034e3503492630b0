// The implicit-GEMM backward filter's geometry and description (no CUTLASS here: the planner and
// the CPU tests use it in every build).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "igemm/igemm_wgrad.h"

namespace fftconv::detail {

namespace {

std::int64_t round4(std::int64_t v) { return (v + 3) / 4 * 4; }
std::size_t align256(std::size_t v) { return (v + 255) / 256 * 256; }

}  // namespace

std::size_t IgemmWgradGeometry::workspace_bytes() const {
  return align256(sizeof(float) * std::size_t(x_floats())) +
         align256(sizeof(float) * std::size_t(dy_floats())) +
         align256(sizeof(float) * std::size_t(dw_floats())) + align256(semaphore_bytes());
}

Support igemm_wgrad_support(const ConvDesc& d) {
  if (d.dtype != DType::kF32) {
    return Support::no(Status::kUnsupportedDtype,
                       "the implicit-GEMM backward filter takes fp32 data (3xTF32 on the tensor "
                       "cores), not " +
                           std::string(dtype_name(d.dtype)));
  }
  // CUTLASS indexes each group's channels-last tensors in 32 bits (its can_implement).
  const std::int64_t cg4 = round4(d.c_per_group()), kg4 = round4(d.k_per_group());
  const std::int64_t limit = (std::int64_t{1} << 31) / std::int64_t(sizeof(float));
  const std::int64_t x = d.n * d.h * d.w * cg4, dy = d.n * d.out_h() * d.out_w() * kg4,
                     dw = kg4 * d.r * d.s * cg4;
  if (x >= limit || dy >= limit || dw >= limit) {
    return Support::no(Status::kNotSupported,
                       "the implicit-GEMM backward filter indexes a group's x, dy and dw in 32 "
                       "bits (CUTLASS): " +
                           d.to_string());
  }
  // Its grid: output tiles along y, split-K slices along z (at most 65535 each).
  if ((d.r * d.s * cg4 + igemm::tile_n(igemm::Tile::kNarrow) - 1) /
          igemm::tile_n(igemm::Tile::kNarrow) >
      65535) {
    return Support::no(Status::kNotSupported,
                       "the implicit-GEMM backward filter's tiles along R S c/groups exceed "
                       "CUTLASS's grid: " +
                           d.to_string());
  }
  return Support::yes();
}

IgemmWgradGeometry igemm_wgrad_geometry(const ConvDesc& d, int sm_count) {
  IgemmWgradGeometry g;
  const auto i32 = [](std::int64_t v) { return static_cast<int>(v); };
  g.groups = i32(d.groups);
  g.n = i32(d.n);
  g.h = i32(d.h);
  g.w = i32(d.w);
  g.out_h = i32(d.out_h());
  g.out_w = i32(d.out_w());
  g.r = i32(d.r);
  g.s = i32(d.s);
  g.pad_h = i32(d.pad_h);
  g.pad_w = i32(d.pad_w);
  g.stride_h = i32(d.stride_h);
  g.stride_w = i32(d.stride_w);
  g.dil_h = i32(d.dil_h);
  g.dil_w = i32(d.dil_w);
  g.cg = i32(d.c_per_group());
  g.kg = i32(d.k_per_group());
  g.cg4 = i32(round4(g.cg));
  g.kg4 = i32(round4(g.kg));
  g.tile = g.kg4 >= igemm::tile_m(igemm::Tile::kWide) ? igemm::Tile::kWide : igemm::Tile::kNarrow;
  // $FFTCONV_IGEMM_TILE (wide, narrow) at plan time forces a tile (for timing them).
  if (const char* t = std::getenv("FFTCONV_IGEMM_TILE")) {
    if (std::strcmp(t, "wide") == 0) g.tile = igemm::Tile::kWide;
    if (std::strcmp(t, "narrow") == 0) g.tile = igemm::Tile::kNarrow;
  }
  // Slices while a group's launch stays within one wave of two blocks an SM, each slice
  // kMinSlicePositions deep at least.
  const std::int64_t tiles = g.tiles_m() * g.tiles_n();
  const std::int64_t want = 2 * std::int64_t(std::max(1, sm_count)) / tiles;
  const std::int64_t most = std::max<std::int64_t>(1, g.positions() / igemm::kMinSlicePositions);
  std::int64_t cap = 65535;
  // $FFTCONV_IGEMM_MAX_SLICES at plan time caps the slices (for timing them: caps of 8 and 16
  // ran the narrow tiles' rows slower, the wide ones within 2%; H100, run 9).
  if (const char* m = std::getenv("FFTCONV_IGEMM_MAX_SLICES")) cap = std::max(1, std::atoi(m));
  g.split_k = i32(std::clamp<std::int64_t>(want, 1, std::min(most, cap)));
  return g;
}

std::string igemm_wgrad_text(const IgemmWgradGeometry& g) {
  char buf[200];
  std::snprintf(buf, sizeof(buf),
                "CUTLASS Conv2dWgrad, 3xTF32 on the tensor cores, tiles of %dx%dx%d, %d split-K "
                "slice%s, channels-last copies of %.1f MB",
                igemm::tile_m(g.tile), igemm::tile_n(g.tile), igemm::kTileK, g.split_k,
                g.split_k > 1 ? "s" : "", double(g.workspace_bytes()) / 1e6);
  return buf;
}

}  // namespace fftconv::detail
