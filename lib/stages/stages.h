// Pointwise stages of the FFT path: zero-pad into FFT planes, and clip the valid window out.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "fftconv/conv_desc.hpp"
#include "geometry/fft_geometry.h"
#include "geometry/int_divider.h"

namespace fftconv::detail {

/// One group of source planes to place into consecutive FFT planes.
struct PadSegment {
  const void* src;      ///< planes of src_h x src_w elements of `dtype`, contiguous
  float* dst;           ///< first destination plane (fft_h rows of `pitch` floats)
  std::int64_t planes;  ///< destination planes (tiles included)
  Placement place;      ///< placement of tile 0; later tiles shift by TileMap's steps
  TileMap map;          ///< destination plane -> source plane and tile
};

/// A segment's divisions: destination plane -> image, tile, channel (TileMap) and the steps.
struct SegmentDividers {
  IntDivider per_image, inner, tiles_w;  ///< tiles * inner, inner, tiles_w
  IntDivider step_h, step_w;
};
/// The dividers of a segment whose placement and tiles fit the stages' 32-bit indices inside a
/// plane (asserted).
SegmentDividers segment_dividers(const PadSegment& seg, const FftGeometry& g);

/// Writes every element of every destination plane (zeros outside the placed source), for up to
/// kMaxPadSegments segments in one launch.
constexpr int kMaxPadSegments = 2;
void launch_pad(const PadSegment* segments, int count, DType dtype, const FftGeometry& g,
                cudaStream_t stream);

/// For every output plane o = n*k + kk and output (p, q) in tile (th, tw):
///   y[o][p][q] = scale * src[clip_plane_source(o, k, tiles, tile)]
///                [clip_read(lp, stride_h, off_h, fft_h, wrap)][clip_read(lq, ...)]
///                + bias[kk] + beta * y[o][p][q]
/// with lp, lq the position inside the tile and a read of -1 giving 0; src holds the c2r result
/// planes (FftGeometry's pitch); bias may be null, and must be when beta != 0 (the forward pass
/// adds a bias, the backward-filter pass accumulates); y is read only when beta != 0.
/// Forward: offset 0, output stride, wrap. Backward data: offset = padding, stride 1, no wrap.
/// Backward filter: offset 0, stride = dilation (the taps of the dilated kernel).
struct ClipArgs {
  const float* src;
  void* y;
  const void* bias;
  std::int64_t planes, k;  ///< output planes (n*k) and filters
  std::int64_t out_h, out_w;
  std::int64_t stride_h, stride_w;
  std::int64_t off_h = 0, off_w = 0;
  bool wrap = true;
  float scale;
  float beta = 0.0f;
};
/// Asserts that the window, the tiles and the planes fit the clip's 32-bit indices.
void check_clip_args(const ClipArgs& args, const FftGeometry& g);
/// `dtype` is the type of y (and bias).
void launch_clip(const ClipArgs& args, DType dtype, const FftGeometry& g, cudaStream_t stream);

}  // namespace fftconv::detail
