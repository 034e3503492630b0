// Register-tiled per-frequency complex GEMM: one thread per bin and per tile of outputs.
//
// Threads of a warp take consecutive bins, so every operand load is a coalesced 256-byte row of
// the FFT's own layout (no transpose). Each thread keeps a TileM x TileN block of complex
// accumulators in registers and streams the contraction: per step it loads TileM + TileN values
// for TileM * TileN complex multiply-adds. Blocks that share bins run back to back (tile index
// fastest in the grid), so operands re-read by other tiles come from L2.
#include <algorithm>

#include "core/check.h"
#include "gemm/cgemm.h"
#include "gemm/cgemm_tile.cuh"

namespace fftconv::detail {

namespace {

/// A tiling policy: compile-time constants only (CUB / CUTLASS style).
template <int TileM, int TileN, int Threads>
struct RegTilePolicy {
  static constexpr int kTileM = TileM;
  static constexpr int kTileN = TileN;
  static constexpr int kThreads = Threads;
};

template <class Policy>
__global__ void __launch_bounds__(Policy::kThreads)
    cgemm_regtile_kernel(CgemmProblem p, CgemmOperands op, std::int64_t tiles_m,
                         std::int64_t tiles_n, std::int64_t bin_blocks) {
  constexpr int TM = Policy::kTileM;
  constexpr int TN = Policy::kTileN;
  std::int64_t block = blockIdx.x;
  const std::int64_t tiles = tiles_m * tiles_n;
  const std::int64_t tile = block % tiles;
  block /= tiles;
  const std::int64_t bin_block = block % bin_blocks;
  const std::int64_t g = block / bin_blocks;
  const std::int64_t f = bin_block * Policy::kThreads + threadIdx.x;
  if (f >= p.bins) return;
  const std::int64_t m0 = (tile / tiles_n) * TM;
  const std::int64_t n0 = (tile % tiles_n) * TN;
  const int mv = static_cast<int>(p.m - m0 < TM ? p.m - m0 : TM);
  const int nv = static_cast<int>(p.n - n0 < TN ? p.n - n0 : TN);

  const float2* a = op.a + g * p.a_g + m0 * p.a_m + f;
  const float2* b = op.b + g * p.b_g + n0 * p.b_n + f;
  const float sa = p.conj_a ? -1.0f : 1.0f;
  const float sb = p.conj_b ? -1.0f : 1.0f;

  float2 acc[TM][TN];
  zero_tile(acc);

#pragma unroll 2
  for (std::int64_t kk = 0; kk < p.k; ++kk) {
    float2 av[TM], bv[TN];
#pragma unroll
    for (int i = 0; i < TM; ++i) {
      av[i] = i < mv ? __ldg(a + i * p.a_m) : make_float2(0.0f, 0.0f);
      av[i].y *= sa;
    }
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      bv[j] = j < nv ? __ldg(b + j * p.b_n) : make_float2(0.0f, 0.0f);
      bv[j].y *= sb;
    }
    mac_tile(acc, av, bv);
    a += p.a_k;
    b += p.b_k;
  }

  float2* c = op.c + g * p.c_g + m0 * p.c_m + n0 * p.c_n + f;
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j)
      if (i < mv && j < nv) {
        c[i * p.c_m + j * p.c_n] = make_float2(op.alpha * acc[i][j].x, op.alpha * acc[i][j].y);
      }
}

template <class Policy>
void launch_regtile(const CgemmProblem& p, const CgemmOperands& op, cudaStream_t stream) {
  const std::int64_t tiles_m = (p.m + Policy::kTileM - 1) / Policy::kTileM;
  const std::int64_t tiles_n = (p.n + Policy::kTileN - 1) / Policy::kTileN;
  const std::int64_t bin_blocks = (p.bins + Policy::kThreads - 1) / Policy::kThreads;
  const std::int64_t blocks = tiles_m * tiles_n * bin_blocks * p.groups;
  FFTCONV_ASSERT(blocks >= 1 && blocks <= 0x7fffffff, "cgemm grid out of range");
  cgemm_regtile_kernel<Policy><<<static_cast<unsigned>(blocks), Policy::kThreads, 0, stream>>>(
      p, op, tiles_m, tiles_n, bin_blocks);
  FFTCONV_CHECK_LAUNCH();
}

constexpr int kRegTileThreads = 128;

template <int TM, int TN>
CgemmKernel regtile_entry(const char* name) {
  using P = RegTilePolicy<TM, TN, kRegTileThreads>;
  return CgemmKernel{
      name, CgemmFamily::kRegTile, TM, TN, TM, TN, kRegTileThreads, &launch_regtile<P>};
}

}  // namespace

// The instantiated register tilings (joined with the other families in cgemm_catalog.cpp).
const std::vector<CgemmKernel>& regtile_kernels() {
  static const std::vector<CgemmKernel> kernels = {
      regtile_entry<1, 1>("regtile_1x1"),
      regtile_entry<2, 1>("regtile_2x1"),
      regtile_entry<4, 1>("regtile_4x1"),
      regtile_entry<8, 1>("regtile_8x1"),
      regtile_entry<1, 2>("regtile_1x2"),
      regtile_entry<2, 2>("regtile_2x2"),
      regtile_entry<4, 2>("regtile_4x2"),
      regtile_entry<8, 2>("regtile_8x2"),
      regtile_entry<1, 4>("regtile_1x4"),
      regtile_entry<2, 4>("regtile_2x4"),
      regtile_entry<4, 4>("regtile_4x4"),
      regtile_entry<8, 4>("regtile_8x4"),
      regtile_entry<1, 8>("regtile_1x8"),
      regtile_entry<2, 8>("regtile_2x8"),
      regtile_entry<4, 8>("regtile_4x8"),
      regtile_entry<8, 8>("regtile_8x8"),
      // A whole 16-image batch per thread: the filter spectra are read once.
      regtile_entry<16, 1>("regtile_16x1"),
      regtile_entry<16, 2>("regtile_16x2"),
  };
  return kernels;
}

}  // namespace fftconv::detail
