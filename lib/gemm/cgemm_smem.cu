// Shared-memory tiled per-frequency complex GEMM, for products with many channels (C, K >= 16).
//
// A block owns 32 consecutive bins and a BlockM x BlockN tile of outputs. Per step it stages a
// KChunk-deep slice of A (BlockM rows) and B (BlockN rows) for its 32 bins in shared memory:
// every global load is a coalesced 256-byte row of the FFT layout, and each staged value is reused
// by BlockN (resp. BlockM) outputs instead of being fetched again by every register tile through
// L2. Each warp takes a TileM x TileN sub-tile; lane i works on bin i, so shared-memory reads are
// consecutive 8-byte words (no bank conflicts).
#include "core/check.h"
#include "gemm/cgemm.h"
#include "gemm/cgemm_tile.cuh"

namespace fftconv::detail {

namespace {

constexpr int kBinsPerBlock = 32;

/// A tiling policy: compile-time constants only.
template <int BlockM, int BlockN, int TileM, int TileN, int KChunk>
struct SmemPolicy {
  static constexpr int kBlockM = BlockM, kBlockN = BlockN;
  static constexpr int kTileM = TileM, kTileN = TileN, kChunk = KChunk;
  static constexpr int kWarpsM = BlockM / TileM, kWarpsN = BlockN / TileN;
  static constexpr int kWarps = kWarpsM * kWarpsN;
  static constexpr int kThreads = 32 * kWarps;
  // Two resident blocks per SM for 256-thread blocks (caps registers at 128 per thread).
  static constexpr int kMinBlocks = kThreads <= 256 ? 2 : 1;
  static_assert(BlockM % TileM == 0 && BlockN % TileN == 0, "tile must divide the block");
  static_assert((KChunk * (BlockM + BlockN)) * kBinsPerBlock * 8 <= 48 * 1024,
                "staging must fit the static shared-memory limit");
};

template <class P>
__global__ void __launch_bounds__(P::kThreads, P::kMinBlocks)
    cgemm_smem_kernel(CgemmProblem p, CgemmOperands op, std::int64_t m_blocks,
                      std::int64_t n_blocks, std::int64_t bin_blocks) {
  constexpr int BM = P::kBlockM, BN = P::kBlockN, TM = P::kTileM, TN = P::kTileN;
  constexpr int KC = P::kChunk;
  __shared__ float2 a_s[KC][BM][kBinsPerBlock];
  __shared__ float2 b_s[KC][BN][kBinsPerBlock];

  std::int64_t block = blockIdx.x;
  const std::int64_t nb = block % n_blocks;
  block /= n_blocks;
  const std::int64_t mb = block % m_blocks;
  block /= m_blocks;
  const std::int64_t bin_block = block % bin_blocks;
  const std::int64_t g = block / bin_blocks;

  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int wm = warp / P::kWarpsN;
  const int wn = warp % P::kWarpsN;
  const std::int64_t f = bin_block * kBinsPerBlock + lane;
  const bool f_ok = f < p.bins;
  const std::int64_t m0 = mb * BM, n0 = nb * BN;
  const float sa = p.conj_a ? -1.0f : 1.0f;
  const float sb = p.conj_b ? -1.0f : 1.0f;
  const float2* a = op.a + g * p.a_g + f;
  const float2* b = op.b + g * p.b_g + f;

  float2 acc[TM][TN];
  zero_tile(acc);

  for (std::int64_t k0 = 0; k0 < p.k; k0 += KC) {
    stage_rows(a_s, a, p.a_m, p.a_k, k0, p.k, m0, p.m, sa, f_ok, warp, P::kWarps, lane);
    stage_rows(b_s, b, p.b_n, p.b_k, k0, p.k, n0, p.n, sb, f_ok, warp, P::kWarps, lane);
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < KC; ++kk) {
      float2 av[TM], bv[TN];
#pragma unroll
      for (int i = 0; i < TM; ++i) av[i] = a_s[kk][wm * TM + i][lane];
#pragma unroll
      for (int j = 0; j < TN; ++j) bv[j] = b_s[kk][wn * TN + j][lane];
      mac_tile(acc, av, bv);
    }
    __syncthreads();
  }

  if (!f_ok) return;
  float2* c = op.c + g * p.c_g + f;
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const std::int64_t m = m0 + wm * TM + i;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const std::int64_t n = n0 + wn * TN + j;
      if (m < p.m && n < p.n) {
        c[m * p.c_m + n * p.c_n] = make_float2(op.alpha * acc[i][j].x, op.alpha * acc[i][j].y);
      }
    }
  }
}

template <class P>
void launch_smem(const CgemmProblem& p, const CgemmOperands& op, cudaStream_t stream) {
  const std::int64_t m_blocks = (p.m + P::kBlockM - 1) / P::kBlockM;
  const std::int64_t n_blocks = (p.n + P::kBlockN - 1) / P::kBlockN;
  const std::int64_t bin_blocks = (p.bins + kBinsPerBlock - 1) / kBinsPerBlock;
  const std::int64_t blocks = m_blocks * n_blocks * bin_blocks * p.groups;
  FFTCONV_ASSERT(blocks >= 1 && blocks <= 0x7fffffff, "cgemm grid out of range");
  cgemm_smem_kernel<P><<<static_cast<unsigned>(blocks), P::kThreads, 0, stream>>>(
      p, op, m_blocks, n_blocks, bin_blocks);
  FFTCONV_CHECK_LAUNCH();
}

template <int BM, int BN, int TM, int TN, int KC>
CgemmKernel smem_entry(const char* name) {
  using P = SmemPolicy<BM, BN, TM, TN, KC>;
  return CgemmKernel{name, CgemmFamily::kSmem, TM, TN, BM, BN, P::kThreads, &launch_smem<P>};
}

}  // namespace

// Block tiles for 8 or 16 warps; per-thread tiles of 32 complex accumulators keep two 256-thread
// blocks (or one 512-thread block) resident per SM.
const std::vector<CgemmKernel>& smem_kernels() {
  static const std::vector<CgemmKernel> kernels = {
      smem_entry<8, 16, 2, 4, 8>("smem_8x16_t2x4"),
      smem_entry<16, 16, 4, 8, 4>("smem_16x16_t4x8"),
      smem_entry<8, 32, 4, 8, 4>("smem_8x32_t4x8"),
      smem_entry<16, 32, 4, 8, 4>("smem_16x32_t4x8"),
      smem_entry<32, 16, 8, 4, 4>("smem_32x16_t8x4"),
  };
  return kernels;
}

}  // namespace fftconv::detail
