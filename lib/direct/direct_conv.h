// The direct path (Algo::kDirect): each output as its sum over the filter's taps, for problems
// too small for the FFT's launches to pay (one or a few planes with a large filter: the 96x96
// landmark heatmap with a 45x45 Gaussian is 18.7 million multiply-adds, about what an H200 does
// in a microsecond, against the five kernels of the staged FFT or one block of the fused one).
// Every pass (backward data with unit stride).
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "core/support.h"
#include "fftconv/conv_desc.hpp"
#include "fftconv/options.hpp"
#include "geometry/index_math.h"

namespace fftconv::detail {

namespace direct {
constexpr int kThreads = 256;  ///< threads of a block
constexpr int kStrip = 4;      ///< adjacent outputs of a row a thread sums (its registers)
/// Shared memory a block may use: the source window of its tile and one filter plane.
constexpr std::size_t kMaxSmemBytes = 96 * 1024;
/// The tile widths a launch may take (8 rows each); the thread count splits the filter's rows
/// between kThreads / (8 * width / kStrip) threads per strip.
constexpr int kTileH = 8;
constexpr int kTileWidths[] = {32, 16, 8};
}  // namespace direct

/// One launch of the direct kernel: outputs of `out_c` channels summed over `group_in` source
/// channels of their group, each tap (r, s) of output (p, q) reading source element
/// (p * stride_h + r * dil_h - off_h, q * stride_w + s * dil_w - off_w) (zero outside).
///   forward:       source x, out y, off = padding, filter w[o][i][r][s];
///   backward data: source dy, out dx, stride 1, off = dilated extent - 1 - padding, filter
///                  w[i][o][R-1-r][S-1-s] (transposed and flipped: the adjoint).
struct DirectGeometry {
  int n = 0;
  int src_c = 0, src_h = 0, src_w = 0;
  int out_c = 0, out_h = 0, out_w = 0;
  int r = 0, s = 0;
  int stride_h = 1, stride_w = 1, dil_h = 1, dil_w = 1;
  int off_h = 0, off_w = 0;
  int group_in = 0, group_out = 0;  ///< source and output channels per group
  int filter_cg = 0;                ///< second extent of the filter tensor (C / groups)
  bool transpose = false;           ///< backward data's filter indexing
  // The tiling: tile_h x tile_w outputs per block, `split` threads per strip of kStrip outputs.
  int tile_h = direct::kTileH, tile_w = 0, split = 0;
  int tiles_h = 0, tiles_w = 0;
  int win_h = 0, win_w = 0;  ///< the source window of a tile

  std::int64_t blocks() const { return std::int64_t(n) * out_c * std::int64_t(tiles_h) * tiles_w; }
  FFTCONV_HD int strips() const { return tile_h * tile_w / direct::kStrip; }
  /// Row pitches in shared memory: odd, so that the rows a warp reads at once (8 output rows,
  /// 4 filter rows) fall into different banks.
  FFTCONV_HD int win_pitch() const { return win_w | 1; }
  FFTCONV_HD int filter_pitch() const { return s | 1; }
  /// Floats of shared memory: the window and a filter plane, or the partial sums if more.
  std::int64_t smem_floats() const {
    const std::int64_t data = std::int64_t(win_h) * win_pitch() + std::int64_t(r) * filter_pitch();
    const std::int64_t red = std::int64_t(direct::kThreads) * direct::kStrip;
    return data > red ? data : red;
  }
  std::size_t smem_bytes() const { return sizeof(float) * static_cast<std::size_t>(smem_floats()); }
  /// True when the tap's source column of strip output j is the previous tap's of output j + 1
  /// (unit stride and dilation along the row): the kernel then slides a window of registers.
  FFTCONV_HD bool slides() const { return stride_w == 1 && dil_w == 1; }
};

/// Whether the direct path serves `pass` on `d`: forward, backward data with unit stride, and
/// backward filter; sizes within 32-bit indices and (forward, backward data) a tile's window and
/// filter plane in shared memory.
Support direct_support(const ConvDesc& d, Pass pass);

/// The geometry of `pass` on `d` with tiles of width `tile_w` (one of direct::kTileWidths).
DirectGeometry direct_geometry(const ConvDesc& d, Pass pass, int tile_w);

/// The backward filter,
///   dw[k][c'][r][s] = alpha * sum_{n,p,q} x[n][g*Cg + c'][p*sh + r*dh - ph][q*sw + s*dw - pw]
///                     * dy[n][k][p][q] + beta * dw[k][c'][r][s],
/// in one of two layouts:
///   taps (rows false): block b computes kWgradTaps adjacent taps (r, s..s+7) of one filter plane
///     (k, c'), each thread summing x * dy over a share of the n * out_h * out_w output
///     positions, then the block adding the threads' sums in a fixed order; every load from
///     global memory (L1), one a multiply-add;
///   rows (rows true, large filters): a block holds rows_b filter rows of one plane, a thread a
///     run of kWgradTaps taps of one of them (threads: rows_b * groups_s), and walks a part of
///     the n * out_h output rows, a row at a time in tiles of tile_q columns: the block stages
///     the x rows its filter rows read and the tile of dy in shared memory, and each thread
///     slides its run along the tile in registers (with unit stride and dilation along rows,
///     24 shared loads per 64 multiply-adds). With several parts, each writes its sums to an
///     fp32 partial and a second kernel adds the parts in order (launch_partial_sum).
struct DirectWgradGeometry {
  int n = 0, c = 0, h = 0, w = 0;
  int k = 0, cg = 0, kg = 0, r = 0, s = 0;
  int out_h = 0, out_w = 0;
  int stride_h = 1, stride_w = 1, dil_h = 1, dil_w = 1, pad_h = 0, pad_w = 0;
  int chunks = 0;  ///< taps: blocks per filter row, ceil(s / kWgradTaps)
  // The rows layout.
  bool rows = false;
  int groups_s = 0;       ///< runs of kWgradTaps taps a filter row: ceil(s / kWgradTaps)
  int rows_b = 0;         ///< filter rows a block holds (the last block of a plane may hold fewer)
  int r_blocks = 0;       ///< blocks along a plane's filter rows: ceil(r / rows_b)
  int threads = 0;        ///< threads of a block: rows_b * groups_s in whole warps
  int tile_q = 0;         ///< output columns a step stages (a multiple of kWgradTaps)
  int q_tiles = 0;        ///< steps along an output row: ceil(out_w / tile_q)
  int pitch = 0;          ///< floats of a staged x row (a multiple of 4)
  int parts = 1;          ///< blocks along the output rows of a plane
  int rows_per_part = 0;  ///< output rows (n * out_h of them in all) a part walks

  FFTCONV_HD std::int64_t blocks() const {
    return rows ? std::int64_t(k) * cg * r_blocks * parts : std::int64_t(k) * cg * r * chunks;
  }
  /// Rows layout: floats of shared memory (the x rows, then the tile of dy).
  FFTCONV_HD int smem_floats() const { return rows_b * pitch + tile_q; }
  /// Rows layout: elements of dw, and of the fp32 partials the parts write (parts > 1).
  FFTCONV_HD std::int64_t w_elems() const { return std::int64_t(k) * cg * r * s; }
  std::size_t partial_bytes() const {
    return rows && parts > 1 ? sizeof(float) * static_cast<std::size_t>(parts * w_elems()) : 0;
  }
};

namespace direct {
constexpr int kWgradTaps = 8;  ///< taps of a filter row a block (taps) or thread (rows) sums
/// The rows layout: output columns a step stages at most; shared memory a block may use (the
/// default limit of dynamic shared memory, so no opt-in is needed); the
/// fewest threads a block may have (smaller filters take the taps layout); blocks an SM is
/// given at least (parts are added until the grid has that many).
constexpr int kRowsMaxTileQ = 128;
constexpr std::size_t kRowsMaxSmemBytes = 48 * 1024;
constexpr int kRowsMinThreads = 64;
constexpr int kRowsBlocksPerSm = 4;
}  // namespace direct

/// The taps layout of d's backward filter.
DirectWgradGeometry direct_wgrad_geometry(const ConvDesc& d);
/// The rows layout of d's backward filter on `sm_count` SMs, or the taps layout where it does
/// not apply (a run of taps too many for a block's threads, fewer than kRowsMinThreads threads,
/// or x rows beyond kRowsMaxSmemBytes).
/// (`min_threads`: the tests' way to take it for small filters too.)
DirectWgradGeometry direct_wgrad_rows_geometry(const ConvDesc& d, int sm_count,
                                               int min_threads = direct::kRowsMinThreads);
/// The layout plans take: rows where it applies and its partials fit `workspace_limit`, unless
/// $FFTCONV_DIRECT_WGRAD is "taps" at plan time; else taps. (H100: the single heatmap's backward
/// filter 14.1 us against 32.6 with taps, odd_rect 0.172 ms against 0.505; design.md.)
DirectWgradGeometry choose_direct_wgrad_geometry(const ConvDesc& d, int sm_count,
                                                 std::size_t workspace_limit);

struct DirectArgs {
  const void* src;   ///< x (forward) or dy (backward data)
  const void* w;     ///< the filter, K x C/groups x R x S
  const void* bias;  ///< forward only; may be null
  void* out;         ///< y (forward) or dx (backward data)
};

/// Sets the kernel's shared-memory limit to direct::kMaxSmemBytes on the current device (plan
/// time).
void prepare_direct(DType dtype);
/// Enqueues the pass: one kernel.
void launch_direct(const DirectGeometry& g, const DirectArgs& a, DType dtype, cudaStream_t stream);

/// Enqueues the backward filter: dw (of `out_dtype`: the data's, or fp32 for master gradients)
/// = alpha * the gradient + beta * dw, reading x and dy; the rows layout's parts write to
/// `partial` (g.partial_bytes(), 16-byte aligned) where there are several, and their sum is
/// launched as the rows kernel's programmatic dependent where `sum_dependent`
/// (partial_sum_can_be_dependent() on the plan's device).
void launch_direct_wgrad(const DirectWgradGeometry& g, const void* x, const void* dy, void* dw,
                         float* partial, float alpha, float beta, DType dtype, DType out_dtype,
                         bool sum_dependent, cudaStream_t stream);

}  // namespace fftconv::detail
