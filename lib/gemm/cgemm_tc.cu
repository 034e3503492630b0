// Per-frequency complex GEMM on TF32 tensor cores in the 3xTF32 split, for dense channels.
//
// Every fp32 operand x is split into a TF32 "big" part b = tf32(x) and a "small" part
// s = x - b (exact, up to 12 significant bits, of which the MMA reads 11); a product x * y is
// taken as b_x b_y + b_x s_y + s_x b_y on the tensor cores (mma.sync m16n8k8, fp32
// accumulators), the s_x s_y term dropped: about 2^-21 of the product at most, 2^-24 typically.
// That keeps fp32 accuracy (the GEMM tests hold these tilings to the same 1e-5 rel-L2 as the
// CUDA-core ones) at a third of the tensor cores' TF32 rate, still several times the CUDA cores'.
// A complex product is four real ones: Cr += Ar Br - Ai Bi, Ci += Ar Bi + Ai Br.
//
// Layout. Bins are contiguous in all three operands, so a block owns kBins consecutive bins and
// a BlockM x BlockN tile of outputs, with one warp per bin. Each pipeline stage copies a
// KChunk-deep slice of A (BlockM rows) and B (BlockN rows) for its bins with cp.async: the
// copies read rows of kBins consecutive bins (64 coalesced bytes) and scatter them into per-bin
// k-major matrices in shared memory, padded so that every fragment load (a 64-bit load of one
// complex value: its real part feeds the real fragment, its imaginary part the imaginary one) is
// free of bank conflicts. The epilogue goes back through shared memory so that C is written as
// rows of consecutive bins too.
//
// `Transposed` tilings compute C^T = B A^T: their block rows run along the problem's n, for
// problems whose m is below the 16 rows of an MMA (8 images against 64 filters).
#include <algorithm>
#include <cstdint>
#include <string>

#include "core/check.h"
#include "gemm/cgemm.h"

namespace fftconv::detail {

namespace {

/// A tiling policy: compile-time constants only. Pitches are in complex (8-byte) elements.
template <int BlockM, int BlockN, int KChunk, int Bins, int Stages, bool Transposed>
struct TcPolicy {
  static constexpr int kBlockM = BlockM, kBlockN = BlockN, kChunk = KChunk;
  static constexpr int kBins = Bins, kStages = Stages;
  static constexpr bool kTransposed = Transposed;
  static constexpr int kWarps = Bins;  // one warp per bin
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int kTilesM = BlockM / 16, kTilesN = BlockN / 8;
  // A fragment load reads k = t, t + 4 and rows g, g + 8 (t = lane % 4, g = lane / 4); with a
  // pitch of +-4 (mod 16) the 16 lanes of each half-warp hit 16 different 8-byte bank pairs.
  static constexpr int kPitchA = BlockM + 4;
  static constexpr int kPitchB = BlockN + 4;
  // 16-byte epilogue stores (a quarter-warp: rows g, g + 1, column pairs t) are conflict-free
  // with a pitch of 8 (mod 16).
  static constexpr int kPitchC = BlockN % 16 == 0 ? BlockN + 8 : BlockN;
  // Per-bin strides of 2 (mod 16): the eight bins a row copy scatters to land in different banks.
  static constexpr int pad_to_2_mod_16(int x) { return x + ((2 - x % 16) + 16) % 16; }
  static constexpr int kBinStride = pad_to_2_mod_16(KChunk * (kPitchA + kPitchB));
  static constexpr int kOutBinStride = pad_to_2_mod_16(BlockM * kPitchC);
  static constexpr int kStageElems = Bins * kBinStride;
  static constexpr std::size_t kSmemBytes =
      8 * std::size_t(Stages * kStageElems > Bins * kOutBinStride ? Stages * kStageElems
                                                                  : Bins * kOutBinStride);
  // Two resident blocks per SM cap registers at 128 per thread: enough for 16 complex (32 fp32)
  // accumulators per thread, not for 32 (those spill there and run one block per SM instead).
  static constexpr int kMinBlocks =
      kThreads <= 256 && kTilesM * kTilesN <= 4 && 2 * kSmemBytes <= 220 * 1024 ? 2 : 1;
  static_assert(BlockM % 16 == 0 && BlockN % 8 == 0, "block must be whole MMA tiles");
  static_assert(KChunk % 8 == 0, "the chunk must be whole k8 steps");
  static_assert(Stages >= 2, "cp.async pipeline needs two stages at least");
  static_assert(kSmemBytes <= 227 * 1024, "stages must fit the shared memory of an SM");
};

__device__ __forceinline__ void cp_async_8(unsigned dst, const float2* src, bool ok) {
  const int bytes = ok ? 8 : 0;  // 0: zero-fill
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(dst), "l"(src), "r"(bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

/// x = big + small, big TF32 (round to nearest) and small exact; the MMA reads the top 19 bits
/// of small's word (11 significant bits), a truncation of at most 2^-11 of small.
__device__ __forceinline__ void split_tf32(float x, unsigned& big, unsigned& small) {
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(big) : "f"(x));
  small = __float_as_uint(x - __uint_as_float(big));
}
/// x with its sign bit xor-ed with `sign` (0 or 0x80000000): conjugation and negation, exactly.
__device__ __forceinline__ float flip(float x, unsigned sign) {
  return __uint_as_float(__float_as_uint(x) ^ sign);
}

__device__ __forceinline__ void mma_tf32(float (&d)[4], const unsigned (&a)[4],
                                         const unsigned (&b)[2]) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

/// The problem a tiling computes: C^T = B A^T for transposed tilings.
CgemmProblem oriented(const CgemmProblem& p, bool transposed) {
  if (!transposed) return p;
  CgemmProblem t = p;
  t.m = p.n;
  t.n = p.m;
  t.a_m = p.b_n; t.a_k = p.b_k; t.a_g = p.b_g;
  t.b_n = p.a_m; t.b_k = p.a_k; t.b_g = p.a_g;
  t.c_m = p.c_n; t.c_n = p.c_m;
  t.conj_a = p.conj_b;
  t.conj_b = p.conj_a;
  return t;
}

/// The copies one thread makes of one operand (Rows rows of the block, all its bins, a chunk of
/// KChunk contraction entries) into a stage, fixed for the whole contraction: the thread owns
/// bin `bin` of rows r0 + j * kRowStep and chunk entries ksub + s * kKSplit. Each copy then costs
/// a pointer offset, a predicate and the cp.async itself.
template <class P, int Rows, int Pitch, int RegionOffset>
struct OperandCopies {
  static constexpr int kPairs = Rows * P::kBins;  // (row, bin) pairs per chunk entry
  static_assert(P::kThreads % kPairs == 0 || kPairs % P::kThreads == 0,
                "threads and (row, bin) pairs must divide one another");
  static constexpr int kKSplit = P::kThreads >= kPairs ? P::kThreads / kPairs : 1;
  static constexpr int kRowsPerThread = P::kThreads >= kPairs ? 1 : kPairs / P::kThreads;
  static constexpr int kRowStep = P::kThreads / P::kBins;
  static constexpr int kSteps = P::kChunk / kKSplit;
  static_assert(P::kChunk % kKSplit == 0, "the chunk must split evenly over the threads");

  const float2* src;      ///< (r0, ksub) of the next chunk to stage
  std::int64_t row_step;  ///< kRowStep rows
  std::int64_t k_step;    ///< kKSplit entries
  std::int64_t chunk_step;
  unsigned dst;           ///< shared byte address of (bin, ksub, r0) in stage 0
  unsigned row_ok;        ///< bit j: row r0 + j * kRowStep and the bin exist
  int ksub;

  __device__ __forceinline__ OperandCopies(const float2* x, std::int64_t stride_r,
                                           std::int64_t stride_k, std::int64_t row0,
                                           std::int64_t rows, std::int64_t f0, std::int64_t bins,
                                           unsigned smem) {
    const int tid = threadIdx.x;
    const int pair = tid % kPairs;
    ksub = P::kThreads >= kPairs ? tid / kPairs : 0;
    const int bin = pair % P::kBins, r0 = pair / P::kBins;
    src = x + (row0 + r0) * stride_r + ksub * stride_k + f0 + bin;
    row_step = kRowStep * stride_r;
    k_step = kKSplit * stride_k;
    chunk_step = P::kChunk * stride_k;
    dst = smem + 8u * unsigned(bin * P::kBinStride + RegionOffset + ksub * Pitch + r0);
    row_ok = 0;
    const bool bin_ok = f0 + bin < bins;
#pragma unroll
    for (int j = 0; j < kRowsPerThread; ++j)
      row_ok |= unsigned(bin_ok && row0 + r0 + j * kRowStep < rows) << j;
  }

  /// Stages the next chunk (k_left entries of the contraction remain) into the stage at `base`.
  __device__ __forceinline__ void copy(unsigned base, std::int64_t k_left) {
#pragma unroll
    for (int j = 0; j < kRowsPerThread; ++j)
#pragma unroll
      for (int s = 0; s < kSteps; ++s) {
        const bool ok = (row_ok >> j & 1u) && ksub + s * kKSplit < k_left;
        cp_async_8(base + dst + 8u * unsigned(j * kRowStep + s * kKSplit * Pitch),
                   src + j * row_step + s * k_step, ok);
      }
    src += chunk_step;
  }
};

template <class P>
__global__ void __launch_bounds__(P::kThreads, P::kMinBlocks)
    cgemm_tc_kernel(CgemmProblem p, CgemmOperands op, std::int64_t m_blocks,
                    std::int64_t n_blocks, std::int64_t bin_blocks) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  __trap();  // TF32 MMA needs sm_80; the launcher refuses older devices
#else
  constexpr int BM = P::kBlockM, BN = P::kBlockN, KC = P::kChunk, NB = P::kBins;
  constexpr int TM = P::kTilesM, TN = P::kTilesN, S = P::kStages;
  constexpr unsigned kStageBytes = 8u * P::kStageElems;
  extern __shared__ float4 smem_raw[];  // float4: 16-byte aligned for the epilogue's stores
  float2* smem = reinterpret_cast<float2*>(smem_raw);
  const unsigned smem_addr = static_cast<unsigned>(__cvta_generic_to_shared(smem));

  std::int64_t block = blockIdx.x;
  const std::int64_t nb = block % n_blocks;
  block /= n_blocks;
  const std::int64_t mb = block % m_blocks;
  block /= m_blocks;
  const std::int64_t bin_block = block % bin_blocks;
  const std::int64_t grp = block / bin_blocks;
  const std::int64_t m0 = mb * BM, n0 = nb * BN, f0 = bin_block * NB;

  OperandCopies<P, BM, P::kPitchA, 0> copy_a(op.a + grp * p.a_g, p.a_m, p.a_k, m0, p.m, f0,
                                             p.bins, smem_addr);
  OperandCopies<P, BN, P::kPitchB, KC * P::kPitchA> copy_b(op.b + grp * p.b_g, p.b_n, p.b_k, n0,
                                                           p.n, f0, p.bins, smem_addr);

  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const unsigned sa = p.conj_a ? 0x80000000u : 0u;
  const unsigned sb = p.conj_b ? 0x80000000u : 0u;

  float cr[TM][TN][4], ci[TM][TN][4];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j)
#pragma unroll
      for (int q = 0; q < 4; ++q) cr[i][j][q] = ci[i][j][q] = 0.0f;

  const std::int64_t chunks = (p.k + KC - 1) / KC;
#pragma unroll
  for (int s = 0; s < S - 1; ++s) {
    if (s < chunks) {
      copy_a.copy(s * kStageBytes, p.k - s * KC);
      copy_b.copy(s * kStageBytes, p.k - s * KC);
    }
    cp_async_commit();
  }

  for (std::int64_t chunk = 0; chunk < chunks; ++chunk) {
    cp_async_wait<S - 2>();
    __syncthreads();  // this chunk landed for every thread; the oldest stage is free again
    const std::int64_t next = chunk + S - 1;
    if (next < chunks) {
      const unsigned base = static_cast<unsigned>(next % S) * kStageBytes;
      copy_a.copy(base, p.k - next * KC);
      copy_b.copy(base, p.k - next * KC);
    }
    cp_async_commit();

    const float2* sA = smem + (chunk % S) * P::kStageElems + warp * P::kBinStride;
    const float2* sB = sA + KC * P::kPitchA;
#pragma unroll
    for (int k8 = 0; k8 < KC; k8 += 8) {
      // B fragments of every column tile, split once: b0 = (k t, col g), b1 = (k t + 4, col g).
      unsigned brb[TN][2], brs[TN][2], bib[TN][2], bis[TN][2];
#pragma unroll
      for (int j = 0; j < TN; ++j)
#pragma unroll
        for (int q = 0; q < 2; ++q) {
          const float2 y = sB[(k8 + t + 4 * q) * P::kPitchB + 8 * j + g];
          split_tf32(y.x, brb[j][q], brs[j][q]);
          split_tf32(flip(y.y, sb), bib[j][q], bis[j][q]);
        }
#pragma unroll
      for (int i = 0; i < TM; ++i) {
        // a0: (row g, k t), a1: (g + 8, t), a2: (g, t + 4), a3: (g + 8, t + 4)
        unsigned arb[4], ars[4], aib[4], ais[4], naib[4], nais[4];
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          const float2 x = sA[(k8 + t + 4 * (q >> 1)) * P::kPitchA + 16 * i + g + 8 * (q & 1)];
          split_tf32(x.x, arb[q], ars[q]);
          split_tf32(flip(x.y, sa), aib[q], ais[q]);
          naib[q] = aib[q] ^ 0x80000000u;  // -Ai, exactly
          nais[q] = ais[q] ^ 0x80000000u;
        }
        // Cr += Ar Br - Ai Bi, Ci += Ar Bi + Ai Br, each product as three TF32 MMAs (the two
        // cross terms first); column tiles innermost so that, with two or more of them,
        // consecutive MMAs are independent.
#pragma unroll
        for (int j = 0; j < TN; ++j) mma_tf32(cr[i][j], ars, brb[j]);
#pragma unroll
        for (int j = 0; j < TN; ++j) mma_tf32(ci[i][j], ars, bib[j]);
#pragma unroll
        for (int j = 0; j < TN; ++j) mma_tf32(cr[i][j], arb, brs[j]);
#pragma unroll
        for (int j = 0; j < TN; ++j) mma_tf32(ci[i][j], arb, bis[j]);
#pragma unroll
        for (int j = 0; j < TN; ++j) mma_tf32(cr[i][j], nais, bib[j]);
#pragma unroll
        for (int j = 0; j < TN; ++j) mma_tf32(ci[i][j], ais, brb[j]);
#pragma unroll
        for (int j = 0; j < TN; ++j) mma_tf32(cr[i][j], naib, bis[j]);
#pragma unroll
        for (int j = 0; j < TN; ++j) mma_tf32(ci[i][j], aib, brs[j]);
#pragma unroll
        for (int j = 0; j < TN; ++j) mma_tf32(cr[i][j], arb, brb[j]);
#pragma unroll
        for (int j = 0; j < TN; ++j) mma_tf32(ci[i][j], arb, bib[j]);
#pragma unroll
        for (int j = 0; j < TN; ++j) mma_tf32(cr[i][j], naib, bib[j]);
#pragma unroll
        for (int j = 0; j < TN; ++j) mma_tf32(ci[i][j], aib, brb[j]);
      }
    }
  }
  cp_async_wait<0>();
  __syncthreads();  // every warp is done with the stages: the epilogue reuses their memory

  // c0: (row g, col 2t), c1: (g, 2t + 1), c2: (g + 8, 2t), c3: (g + 8, 2t + 1); one 16-byte
  // store per row writes the pair of columns.
  float2* out = smem + warp * P::kOutBinStride;
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = 16 * i + g + 8 * h, c = 8 * j + 2 * t;
        *reinterpret_cast<float4*>(out + r * P::kPitchC + c) =
            make_float4(cr[i][j][2 * h], ci[i][j][2 * h], cr[i][j][2 * h + 1], ci[i][j][2 * h + 1]);
      }
  __syncthreads();

  float2* cbase = op.c + grp * p.c_g;
  for (int e = threadIdx.x; e < BM * BN * NB; e += P::kThreads) {
    const int bin = e % NB, rc = e / NB, c = rc % BN, r = rc / BN;
    if (f0 + bin < p.bins && m0 + r < p.m && n0 + c < p.n) {
      const float2 v = smem[bin * P::kOutBinStride + r * P::kPitchC + c];
      cbase[(m0 + r) * p.c_m + (n0 + c) * p.c_n + f0 + bin] =
          make_float2(op.alpha * v.x, op.alpha * v.y);
    }
  }
#endif
}

/// Refuses devices without TF32 MMA and raises the kernel's dynamic shared-memory limit; runs at
/// plan time, on the plan's device (a function attribute holds per device).
template <class P>
void prepare_tc() {
  int dev = 0, major = 0;
  FFTCONV_CUDA_CHECK(cudaGetDevice(&dev));
  FFTCONV_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  if (major < 8) {
    throw Error(Status::kNotSupported,
                "the tensor-core GEMM tilings need compute capability 8.0 (TF32 MMA)");
  }
  int smem_limit = 0;
  FFTCONV_CUDA_CHECK(
      cudaDeviceGetAttribute(&smem_limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  if (P::kSmemBytes > static_cast<std::size_t>(smem_limit)) {
    throw Error(Status::kNotSupported,
                "this tensor-core GEMM tiling needs " + std::to_string(P::kSmemBytes) +
                    " bytes of shared memory per block; the device allows " +
                    std::to_string(smem_limit));
  }
  FFTCONV_CUDA_CHECK(cudaFuncSetAttribute(cgemm_tc_kernel<P>,
                                          cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          static_cast<int>(P::kSmemBytes)));
}

template <class P>
void launch_tc(const CgemmProblem& problem, const CgemmOperands& ops, cudaStream_t stream) {
  const CgemmProblem p = oriented(problem, P::kTransposed);
  CgemmOperands op = ops;
  if (P::kTransposed) std::swap(op.a, op.b);
  const std::int64_t m_blocks = (p.m + P::kBlockM - 1) / P::kBlockM;
  const std::int64_t n_blocks = (p.n + P::kBlockN - 1) / P::kBlockN;
  const std::int64_t bin_blocks = (p.bins + P::kBins - 1) / P::kBins;
  const std::int64_t blocks = m_blocks * n_blocks * bin_blocks * p.groups;
  FFTCONV_ASSERT(blocks >= 1 && blocks <= 0x7fffffff, "cgemm grid out of range");
  cgemm_tc_kernel<P><<<static_cast<unsigned>(blocks), P::kThreads, P::kSmemBytes, stream>>>(
      p, op, m_blocks, n_blocks, bin_blocks);
  FFTCONV_CHECK_LAUNCH();
}

constexpr int kTcChunk = 8;

template <int BM, int BN, int Stages, int Bins = 8, bool Transposed = false>
CgemmKernel tc_entry(const char* name) {
  using P = TcPolicy<BM, BN, kTcChunk, Bins, Stages, Transposed>;
  // tile_m x tile_n: one MMA tile; block_m x block_n: the outputs of a bin (along the problem's
  // m and n, so transposed tilings list them swapped).
  return CgemmKernel{name,
                     CgemmFamily::kTensorCore,
                     Transposed ? 8 : 16,
                     Transposed ? 16 : 8,
                     Transposed ? BN : BM,
                     Transposed ? BM : BN,
                     P::kThreads,
                     &launch_tc<P>,
                     &prepare_tc<P>,
                     P::kSmemBytes,
                     P::kMinBlocks};
}

}  // namespace

// Block tiles of 8 to 32 complex accumulators per thread.
const std::vector<CgemmKernel>& tc_kernels() {
  static const std::vector<CgemmKernel> kernels = {
      tc_entry<16, 64, 3>("tc3_16x64"),
      tc_entry<32, 32, 3>("tc3_32x32"),
      tc_entry<64, 16, 3>("tc3_64x16"),
      tc_entry<16, 32, 3>("tc3_16x32"),
      tc_entry<32, 16, 3>("tc3_32x16"),
      tc_entry<16, 16, 3>("tc3_16x16"),
      // rows along n: for m of 8 or fewer against many columns
      tc_entry<64, 8, 3, 8, true>("tc3_t64x8"),
      tc_entry<32, 8, 3, 8, true>("tc3_t32x8"),
      // Not listed, measured on multichannel_r45 (data/results/h200/2026-12-03-tc/RUNS.md): four
      // stages of tc3_16x64 (1.154 ms against 1.105 for the forward pass) and blocks of 16 bins
      // (16x32: 1.106 against 1.096).
  };
  return kernels;
}

}  // namespace fftconv::detail
