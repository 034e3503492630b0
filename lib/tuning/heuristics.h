// Every threshold and cost constant the planner uses lives here and in heuristics.cpp, each with
// the measurement behind it. Kernels never hold tuning numbers.
#pragma once

#include <string>
#include <vector>

#include "direct/direct_conv.h"
#include "fftconv/conv_desc.hpp"
#include "fftconv/options.hpp"
#include "gemm/cgemm.h"
#include "geometry/fft_geometry.h"
#include "igemm/igemm_wgrad.h"
#include "separable/separable_conv.h"

namespace fftconv::detail {

/// Estimated device time, in microseconds, of the FFT path of `pass` at this geometry, with every
/// operand transformed on every call.
double estimate_fft_us(const ConvDesc& d, const FftGeometry& g, Pass pass = Pass::kForward);

/// Estimated device time, in microseconds, of the fused path (Algo::kFftFused) at FFT size
/// size x size, `tiles` transforms a plane (FusedTiling): its kernel bound by the instructions of
/// its in-register DFTs, and with a per-call filter the kernel that transforms the filters.
double estimate_fused_us(const ConvDesc& d, int size, Pass pass = Pass::kForward, int tiles = 1);
/// The fused path's backward filter: d.c x chunks slots of F threads (a channel and a slice of
/// up to `per_chunk` of its `pairs` pairs each: two forward transforms and a product a pair,
/// one inverse at the end), and with chunks > 1 the kernel that sums the slices' windows.
double estimate_fused_wgrad_us(const ConvDesc& d, int size, std::int64_t pairs, int per_chunk,
                               int chunks);
/// Estimated device time, in microseconds, of the separable path (Algo::kSeparable) on geometry
/// `g` (lib/separable/separable_conv.h) with planes of rank `rank`: its one kernel bound by the
/// multiply-adds of the row and column passes per wave of blocks, or by the stream of its
/// tensors.
double estimate_separable_us(const ConvDesc& d, Pass pass, const SeparableGeometry& g, int rank);
/// The tile height (a multiple of separable::kRun up to kMaxTileH) with the lowest estimate whose
/// region fits in shared memory with factors of rank up to `max_rank`; 0 when none fits. `g`'s
/// axes are set, its tile_h is ignored.
int choose_separable_tile_h(const ConvDesc& d, Pass pass, SeparableGeometry g, int max_rank);
/// The strip kernel's steps per segment (g.seg_chunks) with the lowest estimate whose buffers
/// fit in shared memory with factors of rank up to `max_rank`; 0 when none fits. `g`'s axes are
/// set (both unit: read stride and dilation 1), its seg_chunks and tile_h are ignored.
int choose_separable_segment(const ConvDesc& d, Pass pass, SeparableGeometry g, int max_rank);
/// Whether the strip kernel's whole-strip form (SeparableGeometry::whole: every output row in
/// one step) is estimated faster than `g`, the segments choose_separable_segment chose, and
/// fits in shared memory with factors of rank up to `max_rank`: only where those segments are
/// shorter than the plane and the whole form's blocks are at least the SMs. `forced`: whether
/// it fits.
bool choose_separable_whole(const ConvDesc& d, Pass pass, SeparableGeometry g, int max_rank,
                            bool forced = false);
/// Estimated device time, in microseconds, of the direct path (Algo::kDirect) on geometry `g`
/// (lib/direct/direct_conv.h): its one kernel bound by the multiply-adds of its blocks per wave,
/// or by the stream of its tensors.
double estimate_direct_kernel_us(const ConvDesc& d, const DirectGeometry& g, int sm_count);
/// The direct path's backward filter: blocks of direct::kWgradTaps taps, each summing over every
/// output position.
double estimate_direct_wgrad_us(const ConvDesc& d, const DirectWgradGeometry& g, int sm_count);
/// The tile width (one of direct::kTileWidths) with the lowest estimate whose window fits
/// shared memory (ties: the wider); direct_support must hold.
DirectGeometry choose_direct_geometry(const ConvDesc& d, Pass pass, int sm_count);
/// Estimated device time of the implicit-GEMM backward filter (Algo::kImplicitGemm) on `g`.
double estimate_igemm_wgrad_us(const IgemmWgradGeometry& g, int sm_count);
/// Estimated device time of a direct (cuDNN) convolution of `pass`, in microseconds.
double estimate_direct_us(const ConvDesc& d, Pass pass = Pass::kForward);

/// Device time of the bordered-input stage of a problem with a border other than zeros
/// (lib/stages/border.h): the copy into the bordered planes (forward, backward filter) or the
/// fold of their gradient (backward data), one kernel streaming both.
double estimate_border_us(const ConvDesc& d, Pass pass);

/// The FFT size with the lowest estimate among fft_size_candidates() on each axis.
FftGeometry choose_fft_geometry(const ConvDesc& d, Pass pass = Pass::kForward);
/// The `count` FFT sizes with the lowest estimates, best first.
std::vector<FftGeometry> ranked_fft_geometries(const ConvDesc& d, std::size_t count,
                                               Pass pass = Pass::kForward);

/// Tiling re-reads input halos and its estimate does not see that: Auto tiles only when the
/// estimate wins by more than this factor (seed3_cntk_valid, estimates tied: tiled 2x1 ran
/// 0.044 ms against 0.039 full-image; photo_blur_rgb_2k, 8% estimated gain: 0.415 against 0.527;
/// data/results/h200/suite-forward.json and suite-fft-sizes.json).
constexpr double kTiledOverheadFactor = 1.05;

/// Overlap-save: the tile FFT size (smooth, kMinTile..kMaxTile per axis, more than one tile)
/// with the lowest estimate; false when no tile fits the dilated kernel.
bool choose_tiled_geometry(const ConvDesc& d, FftGeometry* out);

/// The per-frequency GEMM of the forward pass for this descriptor and geometry (tiles of an
/// image are extra rows: m = n * tiles).
CgemmProblem forward_gemm_problem(const ConvDesc& d, const FftGeometry& g);

/// The per-frequency GEMM of any pass (docs/design.md, "The method"), on the planes
/// SpectrumPlanes lays out:
///   fwd:   Y[n][k]   = sum_c X[n][c] * conj(W[k][c])    (contraction over input channels)
///   dgrad: DX[n][c]  = sum_k DY[n][k] * W[k][c]          (over filters; convolution, no conj)
///   wgrad: DW[k][c]  = sum_n conj(DY[n][k]) * X[n][c]    (over images; crop R x S afterwards)
/// per group. Backward passes run on full-image geometries only.
CgemmProblem gemm_problem(const ConvDesc& d, const FftGeometry& g, Pass pass);

/// Planes of each pass: the two padded operand segments (transformed in one r2c batch, segment a
/// first) and the result planes of the c2r.
///   fwd:   a = x (n*tiles*c), b = w (k*c/g), out = y (n*tiles*k)
///   dgrad: a = dy (n*k),      b = w (k*c/g), out = dx (n*c)
///   wgrad: a = x (n*c),       b = dy (n*k),  out = dw (k*c/g)
struct SpectrumPlanes {
  std::int64_t a = 0, b = 0, out = 0;
};
SpectrumPlanes spectrum_planes(const ConvDesc& d, const FftGeometry& g, Pass pass);

/// The tiling the heuristic picks for a problem on a device with `sm_count` multiprocessors;
/// `tc_smem`: the shared memory a block may use on a device with TF32 MMA (compute capability
/// 8.0 or later), 0 without: tensor-core tilings that need more are not considered.
const CgemmKernel& choose_cgemm(const CgemmProblem& p, int sm_count, std::size_t tc_smem);

/// Auto's decision between the FFT path and cuDNN, with the estimates that made it.
struct AlgoEstimate {
  bool prefer_fft = true;
  double fft_us = 0.0;
  double direct_us = 0.0;
  std::string reason;
};
AlgoEstimate compare_fft_direct(const ConvDesc& d, const FftGeometry& g);

}  // namespace fftconv::detail
