// The fused FFT convolution (Algo::kFftFused): one kernel per pass for planes whose F x F FFT
// (F one of kFusedSizes, lib/geometry/fft_geometry.h: 8 to 128) fits in shared memory. F threads
// take one plane: they load it, transform it as a real 2D FFT in shared memory and registers,
// multiply it by the filter's spectrum, transform it back and store the output window, with the
// padding, stride, bias and dtype conversion on the way in and out (lib/fused/fused_program.cuh
// says how). A block holds fused_planes_per_block(F) planes. The filter spectra (each dilated
// filter's, conjugated for the forward pass's correlation, scaled by 1/F^2, as [F][F/2 + 1]
// complex values) come from a second kernel of the same kind, run per call into the workspace or
// once by set_filter into memory the plan keeps.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "fftconv/conv_desc.hpp"
#include "fftconv/options.hpp"

namespace fftconv::detail {

/// Where a source plane lands in the F x F plane and which window of the result is the output
/// (lib/geometry/index_math.h: placed_source, clip_read).
struct FusedGeometry {
  int src_h = 0, src_w = 0;    ///< source plane
  int off_h = 0, off_w = 0;    ///< placement offset of source element (0, 0)
  int step_h = 1, step_w = 1;  ///< placement step (the backward pass's stride spread, dilation)
  int out_h = 0, out_w = 0;    ///< output window
  int read_off_h = 0, read_off_w = 0, read_stride_h = 1, read_stride_w = 1;
  bool wrap = true;  ///< output reads past the period wrap (forward) or read zeros
};

#if defined(__CUDACC__)
#define FFTCONV_FUSED_HD __host__ __device__
#else
#define FFTCONV_FUSED_HD
#endif

/// Overlap-save tiles of the fused path: a plane's output in tiles of tile_h x tile_w, each the
/// F x F transform of the source window it reads, for planes whose whole period needs a larger
/// F than their count of blocks can use (a few 96x96 heatmaps: four 96x96 transforms each rather
/// than one of 128x128, four times the blocks). The window of the tile whose first output is
/// (p0, q0) starts at source (p0 step_h + off_h, q0 step_w + off_w) and spans window_h x
/// window_w (at most F: no read wraps). Even one tile (1 x 1) is such a window, not the whole
/// plane's placement (backward data with padding beyond the kernel takes one at a smaller F).
struct FusedTiling {
  int tiles_h = 1, tiles_w = 1;    ///< tiles a plane
  int tile_h = 0, tile_w = 0;      ///< output rows and columns of a tile
  int window_h = 0, window_w = 0;  ///< source rows and columns a tile reads
  int step_h = 1, step_w = 1, off_h = 0, off_w = 0;
  int src_h = 0, src_w = 0, out_h = 0, out_w = 0;  ///< the whole source and output planes
  FFTCONV_FUSED_HD int count() const { return tiles_h * tiles_w; }
};

/// One tile: its geometry (the placement of the window's part inside the source, the output
/// window) and where its source and output start in their planes.
struct FusedTile {
  FusedGeometry geo;
  std::int64_t src_offset = 0, out_offset = 0;
};

/// Tile `tile` (row-major over tiles_h x tiles_w) of a plane whose tiles read as `whole` does
/// (read offset and stride, placement step) but each within its own window, without wrapping.
FFTCONV_FUSED_HD inline FusedTile fused_tile(const FusedGeometry& whole, const FusedTiling& t,
                                             int tile) {
  FusedTile r;
  r.geo = whole;
  r.geo.wrap = false;
  const int p0 = (tile / t.tiles_w) * t.tile_h, q0 = (tile % t.tiles_w) * t.tile_w;
  const int r0 = p0 * t.step_h + t.off_h, c0 = q0 * t.step_w + t.off_w;  // window origin
  const int ra = r0 > 0 ? r0 : 0, ca = c0 > 0 ? c0 : 0;  // first source row and column
  const int rb = r0 + t.window_h < t.src_h ? r0 + t.window_h : t.src_h;
  const int cb = c0 + t.window_w < t.src_w ? c0 + t.window_w : t.src_w;
  const bool empty = rb <= ra || cb <= ca;  // a window wholly outside the source: zeros
  r.geo.src_h = empty ? 0 : rb - ra;
  r.geo.src_w = empty ? 0 : cb - ca;
  r.geo.off_h = empty ? 0 : ra - r0;
  r.geo.off_w = empty ? 0 : ca - c0;
  r.geo.out_h = t.out_h - p0 < t.tile_h ? t.out_h - p0 : t.tile_h;
  r.geo.out_w = t.out_w - q0 < t.tile_w ? t.out_w - q0 : t.tile_w;
  r.src_offset = empty ? 0 : std::int64_t(ra) * t.src_w + ca;  // inside the plane either way
  r.out_offset = std::int64_t(p0) * t.out_w + q0;
  return r;
}

struct FusedConvArgs {
  const void* src = nullptr;      ///< source planes, planes x src_h x src_w
  const void* factors = nullptr;  ///< float2 [k][F][F/2 + 1] (fused_filter_factors)
  const void* bias = nullptr;     ///< [k] or null (forward)
  void* out = nullptr;            ///< planes x out_h x out_w
  std::int64_t planes = 0;        ///< source planes = output planes (one channel per group)
  int k = 1;                      ///< filters; plane p uses filter p % k
  FusedGeometry geo;              ///< the whole plane's, or its tiles' reads (FusedTiling)
  DType dtype = DType::kF32;
  int size = 8;  ///< FFT size F along both axes (one of kFusedSizes)
  /// The factors come from the filter kernel enqueued just before on the same stream: launch as
  /// its programmatic dependent (sm_90), overlapping its run with the planes' forward transforms.
  bool after_filter = false;
};

struct FusedFilterArgs {
  const void* w = nullptr;  ///< filters, k x r x s
  void* factors = nullptr;  ///< float2 [k][F][F/2 + 1]
  int k = 1, r = 1, s = 1, dil_h = 1, dil_w = 1;
  bool conjugate = true;  ///< forward (correlation): conj(W); backward data: W
  float scale = 1.0f;
  DType dtype = DType::kF32;
  int size = 8;
};

/// The backward-filter pass (dw = alpha * dL/dw + beta * dw) of the fused path: a slot of F
/// threads owns one channel and a slice of the batch; per image it transforms dy (placed as a
/// filter: spread by the stride at the origin) and x (placed at the padding), sums the products'
/// spectra, and after its slice transforms the sum back and reads the R x S window at the
/// dilation. With one slice per channel the slot writes dw; with several, fp32 partial windows
/// that a second kernel sums in slice order (deterministic) into dw. In tiles (`tiles` > 1,
/// fused_tiled_wgrad_args): the pairs are the tiles of the images, a tile of dy's plane with the
/// window of x it reads (the forward pass's tiles, fused_wgrad_pair), each correlated without
/// wrapping at an F below the whole plane's period: more slots where the channels are few.
struct FusedWgradArgs {
  const void* x = nullptr;   ///< n x c x h x w
  const void* dy = nullptr;  ///< n x c x out_h x out_w
  void* dw = nullptr;        ///< c x r x s in out_dtype
  void* scratch = nullptr;   ///< per slot two spectra (g, acc), float2 [F][F/2 + 1] each
  float* partial = nullptr;  ///< chunks x c x r x s (chunks > 1)
  int n = 1, c = 1;
  int tiles = 1;                  ///< pairs an image makes (tiled: its tiles)
  int chunks = 1, per_chunk = 1;  ///< slices of a channel's pairs, and pairs of a slice
  FusedGeometry x_geo;   ///< x at the padding; the output window r x s read at the dilation
  FusedGeometry dy_geo;  ///< dy spread by the stride at the origin
  DType dtype = DType::kF32, out_dtype = DType::kF32;
  float alpha = 1.0f, beta = 0.0f;
  float scale = 1.0f;  ///< 1 / F^2
  int size = 8;
  /// With chunks > 1: the sum kernel launched as the slots kernel's programmatic dependent
  /// (partial_sum_can_be_dependent), so that its launch overlaps the slots' tail.
  bool sum_after_slots = false;
  /// Slots of several pairs add each product's rows that the window reads (x_geo.out_h rows,
  /// after the product's column transform) instead of its spectrum (fused_wgrad_program);
  /// fused_wgrad_args sets it where those rows are half of F or fewer ($FFTCONV_FUSED_WGRAD_SUM
  /// "rows" or "spectrum" at plan time forces it either way).
  bool sum_rows = false;
#if defined(__CUDACC__)
  __host__ __device__
#endif
  std::int64_t slots() const { return std::int64_t(c) * chunks; }
#if defined(__CUDACC__)
  __host__ __device__
#endif
  std::int64_t pairs() const { return std::int64_t(n) * tiles; }  ///< a channel's pairs
};

/// Pair `tile` of an image in the tiled backward filter (t: the forward pass's tiles): the x
/// window it reads, placed in the F x F plane (with the kernel's lags as its output window), the
/// tile of dy, spread by the stride at the origin, and where both start in their image's planes.
struct FusedWgradPair {
  FusedGeometry x, dy;
  std::int64_t x_offset = 0, dy_offset = 0;
};
FFTCONV_FUSED_HD inline FusedWgradPair fused_wgrad_pair(const FusedWgradArgs& a,
                                                         const FusedTiling& t, int tile) {
  const FusedTile ft = fused_tile(a.x_geo, t, tile);
  FusedWgradPair p;
  p.x = ft.geo;
  p.x.out_h = a.x_geo.out_h;
  p.x.out_w = a.x_geo.out_w;
  p.dy = a.dy_geo;
  p.dy.src_h = ft.geo.out_h;
  p.dy.src_w = ft.geo.out_w;
  p.x_offset = ft.src_offset;
  p.dy_offset = ft.out_offset;
  return p;
}

/// The fused path's FFT size for d: the smallest of kFusedSizes at or above both axes' exact
/// period (lib/geometry/fft_geometry.h), one size for both axes; -1 when that exceeds 128.
int fused_size(const ConvDesc& d);

/// The arguments of `pass` on d at FFT size `size` (forward or backward data), pointers left
/// null: the forward pass places x at the padding and reads the correlation with the stride
/// (wrapping past the period); backward data spreads dy by the stride at the origin and reads
/// the convolution at the padding.
FusedConvArgs fused_conv_args(const ConvDesc& d, Pass pass, int size);

/// Tiles of size x size for `pass` on d, where they apply (forward and backward filter: tiles of
/// the output, each reading its window of x; backward data with unit stride) and a tile holds at
/// least one output: tiles x tiles (>= 1 each); false otherwise.
bool fused_tiles(const ConvDesc& d, Pass pass, int size, int* tiles_h, int* tiles_w);
/// The arguments of `pass` on d in tiles of size x size (fused_tiles true), and the tiles (the
/// backward filter: the forward pass's arguments and tiles). (The
/// tiling is a parameter of its own of the tiled kernel: in FusedConvArgs, the whole-plane
/// 128x128 kernel, which never reads it, spilled.)
FusedConvArgs fused_tiled_conv_args(const ConvDesc& d, Pass pass, int size, FusedTiling* tiling);
FusedFilterArgs fused_filter_args(const ConvDesc& d, Pass pass, int size);

/// The fused backward-filter pass's FFT size for d (the smallest of kFusedSizes at or above both
/// axes' exact period of the correlation of x with the stride-spread dy at the kernel's lags),
/// -1 above 128.
int fused_wgrad_size(const ConvDesc& d);

/// The backward-filter arguments of d at FFT size `size`, pointers and alpha, beta left unset:
/// the batch sliced so that the slots (c x chunks) about fill `sms` SMs once.
FusedWgradArgs fused_wgrad_args(const ConvDesc& d, int size, DType out_dtype, int sms);
/// The same in tiles of size x size (fused_tiles(d, kBackwardFilter, size) true: the forward
/// pass's tiles), and the tiles.
FusedWgradArgs fused_tiled_wgrad_args(const ConvDesc& d, int size, DType out_dtype, int sms,
                                      FusedTiling* tiling);

/// Where the backward filter's slots keep their two scratch spectra, dy's (g) and the sum (acc).
/// Up to FFT size FFTCONV_FUSED_WGRAD_SMEM_MAX_F (32) both sit in shared memory beside the
/// block's planes. Above that and up to FFTCONV_FUSED_WGRAD_G_SMEM_MAX_F (64), g alone does and
/// acc lives in the workspace: one spectrum's round trip through L2 an image, for more blocks an
/// SM (at 64 three instead of two, at 40 and 48 four). slak_dw51_28's backward filter (FFT 64)
/// ran 0.164 ms with g alone in shared memory against 0.177 with both, in two turns of the same
/// process pair (H100, data/results/h100/2026-12-07-verify/RUNS.md, run 1), and 0.200 with both
/// in the workspace (h100/2026-12-05-wgrad, run 3). A build may move either bound (both in
/// CMAKE_CXX_FLAGS and CMAKE_CUDA_FLAGS, e.g. -DFFTCONV_FUSED_WGRAD_SMEM_MAX_F=64 for both
/// spectra in shared memory up to 64; scripts/gpu_check.sh's step `ab` times such builds
/// against the default).
#ifndef FFTCONV_FUSED_WGRAD_SMEM_MAX_F
#define FFTCONV_FUSED_WGRAD_SMEM_MAX_F 32
#endif
#ifndef FFTCONV_FUSED_WGRAD_G_SMEM_MAX_F
#define FFTCONV_FUSED_WGRAD_G_SMEM_MAX_F 64
#endif
constexpr int kFusedWgradSmemMaxF = FFTCONV_FUSED_WGRAD_SMEM_MAX_F;
constexpr int kFusedWgradGSmemMaxF = FFTCONV_FUSED_WGRAD_G_SMEM_MAX_F;
static_assert(kFusedWgradSmemMaxF <= 64, "three spectra a plane of 72 and up exceed an SM");
static_assert(kFusedWgradGSmemMaxF >= kFusedWgradSmemMaxF && kFusedWgradGSmemMaxF <= 64,
              "g alone in shared memory from where both spectra are not, up to 64");
/// Scratch spectra a slot keeps in shared memory at FFT size F: 2 (g and acc), 1 (g) or 0.
constexpr int fused_wgrad_smem_spectra(int size) {
  return size <= kFusedWgradSmemMaxF ? 2 : size <= kFusedWgradGSmemMaxF ? 1 : 0;
}

/// Workspace bytes of a backward-filter pass (scratch spectra, then the partial windows), each
/// part 256-byte aligned.
std::size_t fused_wgrad_scratch_bytes(const FusedWgradArgs& a);
std::size_t fused_wgrad_partial_bytes(const ConvDesc& d, const FusedWgradArgs& a);

#if defined(__CUDACC__)
__host__ __device__
#endif
/// Where a filter's taps land: at the origin, spread by the dilation.
inline FusedGeometry filter_geometry(const FusedFilterArgs& a) {
  FusedGeometry g;
  g.src_h = a.r;
  g.src_w = a.s;
  g.step_h = a.dil_h;
  g.step_w = a.dil_w;
  return g;
}

/// Planes a block of the fused kernels holds at FFT size F (F threads a plane): 128 threads for
/// a power of two; otherwise the fewest planes that fill whole warps, where that keeps a block
/// within 320 threads (F = 24: 4 planes, 96 threads; 72: 4, 288; 96: 1, 96), else one plane.
#if defined(__CUDACC__)
__host__ __device__
#endif
constexpr int fused_planes_per_block(int size) {
  if (128 % size == 0) return 128 / size;
  int planes = 1;
  while (planes * size % 32 != 0) ++planes;
  return planes * size <= 320 ? planes : 1;
}
#if defined(__CUDACC__)
__host__ __device__
#endif
constexpr int fused_block_threads(int size) { return fused_planes_per_block(size) * size; }

/// Blocks an SM holds at FFT size F, which the kernels' launch bounds ask for (so capping a
/// thread's registers near 65536 / (blocks x whole warps)): three of 128 threads and 66.5 KB at
/// 128, two of 288 threads and 85 KB at 72, three at 80 (four spilled the convolution kernel's
/// line), four otherwise (128 registers at 128 threads). ptxas (sm_90): the convolution kernels
/// take 56 to 168 registers without spills; the filter and backward-filter kernels of 72 and 80
/// spill up to 150 bytes (fewer blocks would avoid that at the convolution kernel's expense).
#if defined(__CUDACC__)
__host__ __device__
#endif
constexpr int fused_min_blocks(int size) {
  switch (size) {
    case 72: return 2;
    case 80:
    case 128: return 3;
    default: return 4;
  }
}

/// Shared memory of a backward-filter block at FFT size F: each plane's buffer (F rows of
/// F/2 + 1 complex values) and the scratch spectra kept there (fused_wgrad_smem_spectra).
constexpr std::size_t fused_wgrad_block_smem(int size) {
  const std::size_t spectrum = std::size_t(size) * (size / 2 + 1) * 8;
  return std::size_t(fused_planes_per_block(size)) *
         (spectrum + std::size_t(fused_wgrad_smem_spectra(size)) * spectrum);
}

/// Backward-filter blocks an SM holds: the kernels' launch bound (fused_min_blocks), fewer where
/// their shared memory does not fit that many in an sm_90 SM (228 KB, 1 KB of it reserved per
/// block): two at 64 with the scratch spectra there.
constexpr int fused_wgrad_blocks_per_sm(int size) {
  constexpr std::size_t kSmemPerSm = 228 * 1024, kReservedPerBlock = 1024;
  const std::size_t fit = kSmemPerSm / (fused_wgrad_block_smem(size) + kReservedPerBlock);
  return fit < std::size_t(fused_min_blocks(size)) ? static_cast<int>(fit) : fused_min_blocks(size);
}

/// Bytes of the factors of k filters at FFT size F.
inline std::size_t fused_factor_bytes(std::int64_t k, int size) {
  const std::size_t f = static_cast<std::size_t>(size);
  return static_cast<std::size_t>(k) * f * (f / 2 + 1) * 8;
}

/// Dynamic shared memory of a block of the convolution and filter kernels at FFT size F.
std::size_t fused_smem_bytes(int size);

/// Raises the kernels' shared-memory limits on the current device (plan time; each kernel's
/// own fixed need, so concurrent plans cannot undo one another).
void prepare_fused_kernels();

/// Whether the convolution kernel of FFT size `size` may overlap the filter kernel before it on
/// the current device (FusedConvArgs::after_filter): the device runs programmatic dependent
/// launches (sm_90 and up) and the kernel's code was compiled for them (PTX of compute_90 or
/// later, which has its wait for the filter grid; a build for older architectures JIT-compiled
/// on the device has not). Plan time.
bool fused_conv_can_overlap_filter(int size);

void launch_fused_filter_factors(const FusedFilterArgs& a, cudaStream_t stream);
/// The convolution kernel over whole planes, or over the tiles of `tiling` where it is not null
/// (one tile too: backward data's tiles are windows of their own even when one covers the plane).
void launch_fused_conv(const FusedConvArgs& a, cudaStream_t stream,
                       const FusedTiling* tiling = nullptr);
/// The backward-filter pass: the slots' kernel (over the tiles of `tiling` where it is not
/// null), and with chunks > 1 the sum of the partials. r x s (the window) comes from a.x_geo.
void launch_fused_wgrad(const FusedWgradArgs& a, cudaStream_t stream,
                        const FusedTiling* tiling = nullptr);

}  // namespace fftconv::detail
