// The fused path's size rule and kernel arguments per pass (host side of lib/fused).
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "fused/fused_conv.h"
#include "geometry/fft_geometry.h"
#include "geometry/index_math.h"

namespace fftconv::detail {

namespace {
int i32(std::int64_t v) { return static_cast<int>(v); }

// The two placements of a plane: x at the padding (forward, backward filter), dy spread by the
// stride at the origin (backward data, backward filter); no output window yet.
FusedGeometry x_at_padding(const ConvDesc& d) {
  FusedGeometry g;
  g.src_h = i32(d.h);
  g.src_w = i32(d.w);
  g.off_h = i32(d.pad_h);
  g.off_w = i32(d.pad_w);
  return g;
}

FusedGeometry dy_spread(const ConvDesc& d) {
  FusedGeometry g;
  g.src_h = i32(d.out_h());
  g.src_w = i32(d.out_w());
  g.step_h = i32(d.stride_h);
  g.step_w = i32(d.stride_w);
  return g;
}

// The output window: out_h x out_w read at off + p * stride, wrapping past the period or not.
FusedGeometry with_window(FusedGeometry g, std::int64_t out_h, std::int64_t out_w,
                          std::int64_t off_h, std::int64_t off_w, std::int64_t stride_h,
                          std::int64_t stride_w, bool wrap) {
  g.out_h = i32(out_h);
  g.out_w = i32(out_w);
  g.read_off_h = i32(off_h);
  g.read_off_w = i32(off_w);
  g.read_stride_h = i32(stride_h);
  g.read_stride_w = i32(stride_w);
  g.wrap = wrap;
  return g;
}

// The exact period of the backward filter's correlation along an axis: the forward pass's rule
// (the same reads of the padded input: dy's support spread by the stride plus the lags), and dy,
// placed as the filter, must not wrap onto itself.
std::int64_t wgrad_min_extent(std::int64_t in, std::int64_t pad, std::int64_t eff_k,
                              std::int64_t stride, std::int64_t out) {
  return std::max(min_fft_extent(in, pad, eff_k, stride, out), (out - 1) * stride + 1);
}

std::size_t aligned(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

// Slices of a channel's pairs (images, or their tiles): as many as keep every channel's slots
// within one round of the SMs (fused_wgrad_blocks_per_sm blocks each). More slots, in a second
// round that starts as the short last slices end, were slower where the scratch spectra live in
// the workspace: landmark_heatmaps_dw68's six slices of 6 against five of 7 took 0.323 ms
// against 0.315 (H100, data/results/h100/2026-12-05-wgrad/RUNS.md, run 2), their 55 MB of
// scratch against 46 MB in an L2 of 50.
void slice_pairs(FusedWgradArgs& a, int sms) {
  const std::int64_t capacity = std::int64_t(std::max(sms, 1)) * fused_wgrad_blocks_per_sm(a.size) *
                                fused_planes_per_block(a.size);
  const std::int64_t pairs = std::max<std::int64_t>(a.pairs(), 1);
  const std::int64_t want = std::clamp<std::int64_t>(capacity / std::max(a.c, 1), 1, pairs);
  a.per_chunk = i32((pairs + want - 1) / want);
  a.chunks = i32((pairs + a.per_chunk - 1) / a.per_chunk);
}

float inverse_square(int size) { return static_cast<float>(1.0 / (double(size) * size)); }
}  // namespace

int fused_size(const ConvDesc& d) {
  const int fh = fused_extent(min_fft_h(d)), fw = fused_extent(min_fft_w(d));
  return fh < 0 || fw < 0 ? -1 : std::max(fh, fw);
}

FusedConvArgs fused_conv_args(const ConvDesc& d, Pass pass, int size) {
  FusedConvArgs a;
  a.planes = d.n * d.k;
  a.k = i32(d.k);
  a.dtype = d.dtype;
  a.size = size;
  // Forward: the correlation read with the stride, wrapping past the period; backward data:
  // the convolution read at the padding.
  a.geo =
      pass == Pass::kForward
          ? with_window(x_at_padding(d), d.out_h(), d.out_w(), 0, 0, d.stride_h, d.stride_w, true)
          : with_window(dy_spread(d), d.h, d.w, d.pad_h, d.pad_w, 1, 1, false);
  return a;
}

namespace {
// A tile's outputs along an axis at FFT size f: its window, (tile - 1) step + eff, within f.
int tile_outputs(int f, std::int64_t eff, std::int64_t step) {
  return f < eff ? 0 : static_cast<int>((f - eff) / step + 1);
}
}  // namespace

bool fused_tiles(const ConvDesc& d, Pass pass, int size, int* tiles_h, int* tiles_w) {
  // The backward filter's tiles are the forward pass's: tiles of dy, each with its x window.
  const bool fwd = pass != Pass::kBackwardData;
  if (!fwd && (d.stride_h != 1 || d.stride_w != 1)) return false;
  const int th = tile_outputs(size, d.eff_r(), fwd ? d.stride_h : 1);
  const int tw = tile_outputs(size, d.eff_s(), fwd ? d.stride_w : 1);
  if (th < 1 || tw < 1) return false;
  const std::int64_t out_h = fwd ? d.out_h() : d.h, out_w = fwd ? d.out_w() : d.w;
  *tiles_h = i32((out_h + th - 1) / th);
  *tiles_w = i32((out_w + tw - 1) / tw);
  return true;
}

FusedConvArgs fused_tiled_conv_args(const ConvDesc& d, Pass pass, int size, FusedTiling* tiling) {
  // The backward filter's tiles are the forward pass's (fused_tiles).
  if (pass == Pass::kBackwardFilter) pass = Pass::kForward;
  FusedConvArgs a = fused_conv_args(d, pass, size);
  FusedTiling& t = *tiling;
  t = FusedTiling{};
  t.src_h = a.geo.src_h;
  t.src_w = a.geo.src_w;
  t.out_h = a.geo.out_h;
  t.out_w = a.geo.out_w;
  const bool fwd = pass == Pass::kForward;
  const std::int64_t sh = fwd ? d.stride_h : 1, sw = fwd ? d.stride_w : 1;
  t.tile_h = tile_outputs(size, d.eff_r(), sh);
  t.tile_w = tile_outputs(size, d.eff_s(), sw);
  t.tiles_h = i32((t.out_h + t.tile_h - 1) / t.tile_h);
  t.tiles_w = i32((t.out_w + t.tile_w - 1) / t.tile_w);
  t.window_h = i32((t.tile_h - 1) * sh + d.eff_r());
  t.window_w = i32((t.tile_w - 1) * sw + d.eff_s());
  t.step_h = i32(sh);
  t.step_w = i32(sw);
  // A window's origin and where its output is read: the forward correlation from the window's
  // start with the stride; backward data (unit stride), the convolution of dy with the filter,
  // from eff - 1 in a window that starts eff - 1 - pad rows before the output's row.
  t.off_h = fwd ? -i32(d.pad_h) : i32(d.pad_h - (d.eff_r() - 1));
  t.off_w = fwd ? -i32(d.pad_w) : i32(d.pad_w - (d.eff_s() - 1));
  a.geo.read_off_h = fwd ? 0 : i32(d.eff_r() - 1);
  a.geo.read_off_w = fwd ? 0 : i32(d.eff_s() - 1);
  a.geo.wrap = false;
  return a;
}

int fused_wgrad_size(const ConvDesc& d) {
  const int fh = fused_extent(wgrad_min_extent(d.h, d.pad_h, d.eff_r(), d.stride_h, d.out_h()));
  const int fw = fused_extent(wgrad_min_extent(d.w, d.pad_w, d.eff_s(), d.stride_w, d.out_w()));
  return fh < 0 || fw < 0 ? -1 : std::max(fh, fw);
}

FusedWgradArgs fused_wgrad_args(const ConvDesc& d, int size, DType out_dtype, int sms) {
  FusedWgradArgs a;
  a.n = i32(d.n);
  a.c = i32(d.c);
  a.dtype = d.dtype;
  a.out_dtype = out_dtype;
  a.size = size;
  a.scale = inverse_square(size);
  // The correlation of x with dy at the kernel's lags, read at the dilation.
  a.x_geo = with_window(x_at_padding(d), d.r, d.s, 0, 0, d.dil_h, d.dil_w, false);
  a.dy_geo = dy_spread(d);
  slice_pairs(a, sms);
  // The window's rows summed where they are half the plane or less: the sum's round trip of R
  // rows instead of F pays for a column transform more an image there. H100, in turns, two
  // each (data/results/h100/2026-12-07b/RUNS.md, run 8): landmark_heatmaps_dw68 0.282 against
  // 0.314 ms (45 of 128 rows), replknet_dw31_56 0.196 against 0.240 (31 of 72); where the window
  // is most of the plane it loses: slak_dw51_28 0.177 against 0.166 (51 of 64),
  // replknet_dw31_14 0.096 against 0.086 (31 of 32). $FFTCONV_FUSED_WGRAD_SUM at plan time
  // forces it: "rows" or "spectrum".
  const char* sum = std::getenv("FFTCONV_FUSED_WGRAD_SUM");
  a.sum_rows = sum != nullptr ? std::strcmp(sum, "rows") == 0 : 2 * a.x_geo.out_h <= size;
  return a;
}

FusedWgradArgs fused_tiled_wgrad_args(const ConvDesc& d, int size, DType out_dtype, int sms,
                                      FusedTiling* tiling) {
  FusedWgradArgs a = fused_wgrad_args(d, size, out_dtype, sms);
  // The forward pass's tiles: a tile of the output (dy) reads its window of x, which the
  // correlation at the lags reads without wrapping ((tile - 1) stride + (R - 1) dil < F).
  fused_tiled_conv_args(d, Pass::kBackwardFilter, size, tiling);
  a.tiles = tiling->count();
  slice_pairs(a, sms);
  return a;
}

std::size_t fused_wgrad_scratch_bytes(const FusedWgradArgs& a) {
  const int in_workspace = 2 - fused_wgrad_smem_spectra(a.size);
  if (in_workspace == 0) return 0;
  return aligned(static_cast<std::size_t>(a.slots()) * in_workspace *
                 fused_factor_bytes(1, a.size));
}

std::size_t fused_wgrad_partial_bytes(const ConvDesc& d, const FusedWgradArgs& a) {
  if (a.chunks <= 1) return 0;
  return aligned(static_cast<std::size_t>(a.chunks) * d.c * d.r * d.s * sizeof(float));
}

FusedFilterArgs fused_filter_args(const ConvDesc& d, Pass pass, int size) {
  FusedFilterArgs f;
  f.k = static_cast<int>(d.k);
  f.r = static_cast<int>(d.r);
  f.s = static_cast<int>(d.s);
  f.dil_h = static_cast<int>(d.dil_h);
  f.dil_w = static_cast<int>(d.dil_w);
  f.conjugate = pass == Pass::kForward;
  f.scale = inverse_square(size);
  f.dtype = d.dtype;
  f.size = size;
  return f;
}

}  // namespace fftconv::detail
