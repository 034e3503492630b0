// The separable path (Algo::kSeparable): a kept filter whose planes are low rank
// (lib/filters/low_rank.h), W = sum_i col_i row_i^T, convolved as r pairs of 1-D passes in one
// kernel, of two kinds:
//   - the strip kernel (both axes at read stride and dilation 1, one source plane per output):
//     a block owns kStripW output columns of a segment of a plane's rows and walks down it
//     kChunk rows at a time. Each step copies the next kChunk source rows with their halo into
//     shared memory (cp.async, double-buffered: the copy of step k + 1 runs under the passes of
//     step k), row-convolves them into a ring of row-pass results, and column-convolves the
//     ring into the outputs kChunk rows behind, stored with the bias and the dtype. A source
//     row is row-convolved once per segment, not once per tile: r * (R + S) multiply-adds an
//     output plus the segment's first R - 1 rows. On small planes, whose segments are a few
//     steps, the block's few warps wait on the pipeline's barriers; there the whole-strip form
//     (SeparableGeometry::whole) takes a block of kWholeThreads per strip of a plane, stages every
//     source row it reads at once, row-convolves them all and column-convolves them, in one step
//     with no ring;
//   - the tile kernel (every other geometry): a block owns an output tile of tile_h x 32 of one
//     output plane: it loads the tile's source region with its halo into shared memory, runs
//     the row pass of factor i into a second shared-memory buffer, the column pass into
//     registers, and after every source plane of the group and every factor stores the tile.
// Both apply the padding (zeros, or the descriptor's border in the forward pass), the backward
// pass's stride spread and the dtype conversion on load.
// Forward and backward data; the backward pass is a correlation of the stride-spread dy with
// the flipped factors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <cuda_runtime_api.h>

#include "fftconv/conv_desc.hpp"
#include "fftconv/options.hpp"
#include "geometry/index_math.h"
#include "geometry/int_divider.h"

namespace fftconv::detail {

namespace separable {
/// Output columns of a tile (one warp's width) and outputs per thread along a pass: a run of
/// kRun outputs slides over kRun taps held in registers, 2 * kRun - 1 values and kRun weights
/// loaded from shared memory per kRun * kRun multiply-adds (with 8, the loads bound the passes).
constexpr int kTileW = 32;
constexpr int kRun = 16;
constexpr int kThreads = 256;
/// Largest tile height: the column pass keeps (kMaxTileH / kRun) * kTileW / kThreads runs of
/// kRun outputs per thread in registers.
constexpr int kMaxTileH = 128;
/// Shared memory a block may use (two blocks per SM on sm_90 and sm_80).
constexpr std::size_t kMaxSmemBytes = 100 * 1024;
/// The strip kernel: output columns of a strip, output rows of a step, outputs a thread
/// computes per pass (a run sliding over taps in blocks of kStripRun), threads of a block (one
/// run of each pass per thread and step).
constexpr int kStripW = 32;
constexpr int kChunk = 32;
constexpr int kStripRun = 8;
constexpr int kStripThreads = kStripW * kChunk / kStripRun;
/// Shared memory a strip block may use (sm_80's limit; a strip of 45 taps and rank 1 takes
/// 34 KB, of 101 taps and rank 4 118.5 KB). Devices whose opt-in limit per block is lower
/// (sm_86 and sm_89: 99 KB) fail the plan's set-up; only sm_90 is measured.
constexpr std::size_t kMaxStripSmemBytes = 160 * 1024;
/// Column groups of 32 a strip block copies per source row: at most 256 columns, so filters
/// up to 224 taps wide (wider ones take the tile kernel).
constexpr int kStripColGroups = 8;
/// The whole-strip form: threads of a block (twice the pipelined block's, the runs of a pass
/// shared among them in turns).
constexpr int kWholeThreads = 256;
/// Taps the strip kernel runs: rounded up to kStripRun (the factors' padding is zero).
FFTCONV_HD int strip_taps(int taps) { return (taps + kStripRun - 1) / kStripRun * kStripRun; }
}  // namespace separable

/// Most outer products per plane the separable path keeps (LowRankOptions::max_rank).
constexpr int kMaxSeparableRank = 4;

/// Taps of a factor in memory: R (or S) rounded up to kRun, the padding zero.
inline int separable_taps_padded(std::int64_t taps) {
  return static_cast<int>((taps + separable::kRun - 1) / separable::kRun * separable::kRun);
}

/// Where the output reads the source: output row o reads virtual source rows
/// o * read_stride + off + t * dil, t < taps; virtual row v is source row v / step when v >= 0,
/// v % step == 0 and v / step < src extent, else zero. Forward: step 1, read stride = stride,
/// off = -pad. Backward data: step = stride, read stride 1, off = pad - (R - 1) * dil, the
/// factors flipped. A border other than zeros (forward only) maps virtual rows outside the
/// source to the source rows it continues them with (border_index), as the loads read them.
struct SeparableAxis {
  int src = 0, out = 0, step = 1, read_stride = 1, off = 0, dil = 1, taps = 1;
  Border border = Border::kZero;
  /// The kernel slides kRun outputs over kRun taps in registers (read stride and dilation 1).
  bool unit() const { return read_stride == 1 && dil == 1; }
  /// Taps the kernel runs: padded to kRun on a unit axis, exact otherwise.
  int taps_run() const { return unit() ? separable_taps_padded(taps) : taps; }
};

struct SeparableGeometry {
  SeparableAxis h, w;
  /// The strip kernel's steps (of kChunk output rows) per segment; 0: the tile kernel.
  int seg_chunks = 0;
  /// The strip kernel's whole-strip form: one segment of every output row (seg_chunks covers
  /// them), a block of separable::kWholeThreads, every source row staged at once, no ring.
  bool whole = false;
  int tile_h = 0;  ///< tile kernel: output rows of a tile (multiple of kRun, at most kMaxTileH)
  bool strip() const { return seg_chunks > 0; }
  /// Tile kernel: shared-memory region of a tile, rows and columns of the source (columns
  /// padded odd). Strip kernel: one step's source rows (kChunk; whole strip: every staged row,
  /// pass_rows() rounded up to kChunk), its columns, and the row pitch (4 mod 8 floats: a
  /// quarter warp's float4 loads from two rows fall in distinct banks).
  int region_rows() const;
  int region_cols() const;
  int region_pitch() const;
  /// Strip kernel: steps of kChunk row-pass rows the ring holds (the column pass of a step
  /// reads kChunk + R - 1 of them), and output rows of a segment.
  int ring_slots() const;
  /// Whole strip: row-pass rows the column pass reads (its runs of kStripRun rows read one run
  /// past the padded taps), output rows padded to kStripRun plus the padded taps.
  int pass_rows() const;
  /// Threads of a strip or tile block.
  int threads() const;
  int segment_rows() const { return seg_chunks * separable::kChunk; }
  /// Blocks per output plane.
  std::int64_t blocks_per_plane() const;
  std::size_t smem_bytes(int rank) const;
};

/// The geometry of `pass` on `d` (the strip kernel's segment or the tile kernel's height chosen
/// by the estimate, lib/tuning/heuristics.h); false with `why` set
/// when its tile's region does not fit in shared memory or the kernel's 32-bit indices.
bool separable_geometry(const ConvDesc& d, Pass pass, SeparableGeometry* g, std::string* why);

struct SeparableArgs {
  const void* src = nullptr;      ///< forward x, backward data dy
  const float* factors = nullptr; ///< per plane, per factor: col[taps_h padded], row[taps_w padded]
  const void* bias = nullptr;     ///< [out_channels] or null
  void* out = nullptr;
  std::int64_t out_planes = 0;    ///< images * out_channels
  int out_channels = 1, src_channels = 1;
  int out_per_group = 1;          ///< output channels of a group
  int sources = 1;                ///< source planes summed into each output plane (its group's)
  int factor_stride = 1;          ///< plane index step between the sources of one output
  int factor_group_step = 0;      ///< plane index of output channel o: (o / out_per_group) *
  int factor_out_step = 1;        ///<   factor_group_step + (o % out_per_group) * factor_out_step
  int rank = 1;                   ///< factors per plane (planes of lower rank padded with zeros)
  SeparableGeometry g;
  // Derived from g by launch_separable_conv (the kernel reads them, not g's methods). Strip
  // kernel: tiles_w strips, tiles = strips * segments, slots of the ring (whole strip: its
  // row-pass rows).
  int rows = 0, cols = 0, pitch = 0, fac_h = 0, fac_w = 0, tiles_w = 0, tiles = 0, slots = 0;
  IntDivider step_h_div, step_w_div;
};

/// Floats of the factors of `planes` planes of rank `rank` for axis taps r x s.
inline std::size_t separable_factor_floats(std::int64_t planes, int rank, std::int64_t r,
                                           std::int64_t s) {
  return static_cast<std::size_t>(planes) * rank *
         (separable_taps_padded(r) + separable_taps_padded(s));
}

/// The kernel and its blocks, for describe(): "strips of 32 columns, segments of 96 rows" or
/// "tiles of 64x32", and ", border reflect on load" where it applies one.
std::string separable_kernel_text(const SeparableGeometry& g);

/// Raises the kernels' shared-memory limits (kMaxSmemBytes for the tile kernel,
/// kMaxStripSmemBytes for the strip kernel) on the current device (plan time).
void prepare_separable_kernels(DType dtype);
void launch_separable_conv(const SeparableArgs& a, DType dtype, cudaStream_t stream);

}  // namespace fftconv::detail
