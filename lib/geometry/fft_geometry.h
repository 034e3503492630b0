// FFT sizes and buffer geometry of the full-image FFT path.
#pragma once

#include <cstdint>
#include <vector>

#include "fftconv/conv_desc.hpp"
#include "geometry/index_math.h"

namespace fftconv::detail {

/// True when n >= 1 has no prime factor other than 2, 3, 5, 7 (sizes cuFFT handles fastest).
bool is_smooth(std::int64_t n);
/// Smallest 2-3-5-7-smooth size >= n (n >= 1).
std::int64_t next_smooth(std::int64_t n);
/// Smooth sizes in [lo, hi], ascending.
std::vector<std::int64_t> smooth_sizes(std::int64_t lo, std::int64_t hi);

/// Buffer geometry for one FFT size. Real planes are stored with a row pitch of 2*(fft_w/2+1)
/// floats so that the r2c and c2r transforms run in place.
///
/// Full image: one tile per image, the period may be below the padded extent (min_fft_extent).
/// Overlap-save: the output is cut into tiles_h x tiles_w tiles of tile_out_h x tile_out_w outputs
/// (the last ones may be partial); each tile reads an fft_h x fft_w window of the padded input
/// starting tile_step_h = tile_out_h*stride_h rows further, and its circular correlation has no
/// wrap-around at all (fft_h >= (tile_out_h-1)*stride_h + eff_r).
struct FftGeometry {
  std::int64_t fft_h = 0, fft_w = 0;
  std::int64_t half_w = 0;   ///< fft_w/2 + 1 complex columns
  std::int64_t pitch = 0;    ///< 2*half_w floats per real row
  std::int64_t bins = 0;     ///< fft_h * half_w frequency bins per plane
  std::int64_t min_h = 0, min_w = 0;  ///< smallest exact periods of the full image
  bool tiled = false;
  std::int64_t tiles_h = 1, tiles_w = 1;
  std::int64_t tile_out_h = 0, tile_out_w = 0;  ///< outputs per tile (full image: all of them)

  std::int64_t real_plane_floats() const { return fft_h * pitch; }
  std::int64_t tiles() const { return tiles_h * tiles_w; }
};

/// Full-image geometry; fft_h x fft_w must be at least the exact minimum.
FftGeometry make_fft_geometry(const ConvDesc& d, std::int64_t fft_h, std::int64_t fft_w);
/// Full-image geometry of an FFT size a user forced (Options::fft_h x fft_w): throws
/// Error(kInvalidArgument) naming both sizes when it is below the exact minimum.
FftGeometry forced_fft_geometry(const ConvDesc& d, std::int64_t fft_h, std::int64_t fft_w);
/// Overlap-save geometry with tiles of fft_h x fft_w; each must be at least the dilated kernel.
FftGeometry make_tiled_geometry(const ConvDesc& d, std::int64_t fft_h, std::int64_t fft_w);

/// Smallest and largest tile FFT size tried by the planner.
constexpr std::int64_t kMinTile = 16;
constexpr std::int64_t kMaxTile = 512;

/// Outputs one tile of FFT size `fft` produces along an axis: (fft - eff_k)/stride + 1, capped at
/// the output extent; 0 when the kernel does not fit.
std::int64_t tile_out_extent(std::int64_t fft, std::int64_t eff_k, std::int64_t stride,
                             std::int64_t out);

/// Smallest exact periods of a descriptor along h and w.
std::int64_t min_fft_h(const ConvDesc& d);
std::int64_t min_fft_w(const ConvDesc& d);

/// The fused path's FFT sizes (Algo::kFftFused), one size F for both axes of a plane: the powers
/// of two from kMinFusedExtent to kMaxFusedExtent and, between them, 3-, 5- and 7-smooth
/// multiples of 8 up to 96 (the programs need F a multiple of 4: lib/fused/fused_program.cuh),
/// so that a plane costs about what its exact period needs rather than up to four times that
/// (72x72 for a period of 71, not 128x128). Each size is a kernel of its own; the list stays
/// short for the build's sake (docs/design.md, "The fused path", says why 56, 112 and 120 are
/// not in it).
inline constexpr int kFusedSizes[] = {8, 16, 24, 32, 40, 48, 64, 72, 80, 96, 128};
constexpr std::int64_t kMinFusedExtent = 8;
constexpr std::int64_t kMaxFusedExtent = 128;
/// The fused FFT size along an axis whose exact minimum is `min_extent`: the smallest of
/// kFusedSizes at or above it; -1 above kMaxFusedExtent.
int fused_extent(std::int64_t min_extent);

/// Candidate sizes along one axis: smooth sizes from `min` up to kCandidateSlack * min (at most
/// kMaxCandidates of them, always including next_smooth(min)).
std::vector<std::int64_t> fft_size_candidates(std::int64_t min);

}  // namespace fftconv::detail
