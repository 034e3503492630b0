// The implicit-GEMM backward filter (Algo::kImplicitGemm) on tensor cores, for dense channels
// under small and mid-size filters, where the FFT's spectra are too many and cuDNN's exact fp32
// algorithms run on the CUDA cores. Per group, dw is one GEMM: M = k/groups output channels,
// N = R S c/groups taps, contracted over the n out_h out_w output positions (dw[k][c,r,s] =
// sum_pos dy[k][pos] x[c][pos shifted by r, s]). It runs as CUTLASS's implicit-GEMM Conv2dWgrad
// (a dependency, header-only) in the 3xTF32 split (OpMultiplyAddFastF32: each fp32 operand as a
// big and a small TF32 part, the small x small product dropped, fp32 accumulation), which keeps
// fp32's accuracy at tensor-core speed. CUTLASS gathers its operands from channels-last tensors:
// x and dy are copied to them group by group (channels padded with zeros to a multiple of 4, its
// 16-byte accesses), and dw comes back from channels-last with alpha, beta and the layout of the
// filter. fp32 data; the reduction's positions split between thread blocks (CUTLASS's serial
// split-K, in a fixed order) where the GEMM's tiles alone would not fill the GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <cuda_runtime_api.h>

#include "core/support.h"
#include "fftconv/conv_desc.hpp"

namespace fftconv::detail {

namespace igemm {
/// Thread-block tiles (M x N, 16 positions deep): kWide (128 x 64) for 128 output channels a
/// group or more, kNarrow (64 x 64) below ($FFTCONV_IGEMM_TILE=wide or narrow at plan time
/// forces one). 128 x 128 tiles (warps of 64 x 64) ran 2.5-4x slower on every row timed (H100,
/// data/results/h100/2026-12-07b/RUNS.md, run 9).
enum class Tile : int { kWide = 0, kNarrow = 1 };
constexpr int tile_m(Tile t) { return t == Tile::kWide ? 128 : 64; }
constexpr int tile_n(Tile) { return 64; }
constexpr int kTileK = 16;
/// Each split-K slice walks at least this many positions (a slice's fixed costs: its tile's
/// prologue and the serial fix-up of the partial tile).
constexpr std::int64_t kMinSlicePositions = 512;
}  // namespace igemm

struct IgemmWgradGeometry {
  int groups = 1, n = 0, h = 0, w = 0, out_h = 0, out_w = 0, r = 0, s = 0;
  int pad_h = 0, pad_w = 0, stride_h = 1, stride_w = 1, dil_h = 1, dil_w = 1;
  int cg = 0, kg = 0;    ///< channels per group
  int cg4 = 0, kg4 = 0;  ///< padded to a multiple of 4 with zero channels
  igemm::Tile tile = igemm::Tile::kWide;
  int split_k = 1;  ///< serial split-K slices

  std::int64_t positions() const { return std::int64_t(n) * out_h * out_w; }
  std::int64_t tiles_m() const { return (kg4 + igemm::tile_m(tile) - 1) / igemm::tile_m(tile); }
  std::int64_t tiles_n() const {
    return (std::int64_t(r) * s * cg4 + igemm::tile_n(tile) - 1) / igemm::tile_n(tile);
  }
  /// Floats of the channels-last copies: x, dy and dw of every group.
  std::int64_t x_floats() const { return std::int64_t(groups) * n * h * w * cg4; }
  std::int64_t dy_floats() const { return std::int64_t(groups) * n * out_h * out_w * kg4; }
  std::int64_t dw_floats() const { return std::int64_t(groups) * kg4 * r * s * cg4; }
  /// Bytes of the split-K slices' semaphores (one int per output tile of a group's GEMM).
  std::size_t semaphore_bytes() const {
    return split_k > 1 ? sizeof(int) * std::size_t(tiles_m() * tiles_n()) : 0;
  }
  std::size_t workspace_bytes() const;
  /// Multiply-adds the tensor cores run (tiles padded), each as three TF32 MMAs.
  double padded_macs() const {
    return double(groups) * double(tiles_m() * igemm::tile_m(tile)) *
           double(tiles_n() * igemm::tile_n(tile)) * double(positions());
  }
};

/// Whether the implicit-GEMM backward filter applies to `d` (fp32 data, every coordinate and the
/// copies within CUTLASS's 32-bit indexing); the geometry for a GPU of `sm_count` SMs, else a
/// status and reason.
Support igemm_wgrad_support(const ConvDesc& d);
IgemmWgradGeometry igemm_wgrad_geometry(const ConvDesc& d, int sm_count);
/// "CUTLASS Conv2dWgrad, 3xTF32, tiles of 128x64x16, 4 split-K slices, channels-last copies of
/// 12.3 MB".
std::string igemm_wgrad_text(const IgemmWgradGeometry& g);

/// Refuses devices without TF32 MMA (compute capability 8.0) and raises the GEMM kernels'
/// shared-memory limit where they need it (plan time, on the plan's device); throws Error.
void prepare_igemm_wgrad(const IgemmWgradGeometry& g);
/// dw = alpha * (the correlation of x and dy) + beta * dw (beta 0: dw not read), fp32, with
/// `workspace` of g.workspace_bytes() (256-byte aligned).
void launch_igemm_wgrad(const IgemmWgradGeometry& g, const float* x, const float* dy, float* dw,
                        void* workspace, float alpha, float beta, cudaStream_t stream);

}  // namespace fftconv::detail
