// The per-thread complex tile both own GEMM families accumulate into: zeroing and the TM x TN
// complex multiply-add of one contraction step, inlined into each kernel.
#pragma once

#include <cuda_runtime.h>

namespace fftconv::detail {

template <int TM, int TN>
__device__ __forceinline__ void zero_tile(float2 (&acc)[TM][TN]) {
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = make_float2(0.0f, 0.0f);
}

/// acc[i][j] += av[i] * bv[j] (complex), two fused multiply-adds per real part.
template <int TM, int TN>
__device__ __forceinline__ void mac_tile(float2 (&acc)[TM][TN], const float2 (&av)[TM],
                                         const float2 (&bv)[TN]) {
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      acc[i][j].x = fmaf(av[i].x, bv[j].x, fmaf(-av[i].y, bv[j].y, acc[i][j].x));
      acc[i][j].y = fmaf(av[i].x, bv[j].y, fmaf(av[i].y, bv[j].x, acc[i][j].y));
    }
}

/// Stages rows [k0, k0 + KC) x [r0, r0 + R) of one operand into shared memory, s[kk][rr][lane]:
/// warp w loads rows w, w + warps, ...; lane = bin, so each row is one 256-byte load. Rows past
/// k_end or r_end, and bins past the last (bin_ok false), are zeros; `sign` conjugates.
template <int KC, int R, int kBins>
__device__ __forceinline__ void stage_rows(float2 (&s)[KC][R][kBins], const float2* x,
                                           std::int64_t stride_r, std::int64_t stride_k,
                                           std::int64_t k0, std::int64_t k_end, std::int64_t r0,
                                           std::int64_t r_end, float sign, bool bin_ok, int warp,
                                           int warps, int lane) {
  // Partly unrolled: enough loads in flight without pushing the accumulators out of registers.
#pragma unroll 2
  for (int row = warp; row < KC * R; row += warps) {
    const int kk = row / R, rr = row % R;
    float2 v = make_float2(0.0f, 0.0f);
    if (bin_ok && k0 + kk < k_end && r0 + rr < r_end) {
      v = __ldg(x + (r0 + rr) * stride_r + (k0 + kk) * stride_k);
    }
    v.y *= sign;
    s[kk][rr][lane] = v;
  }
}

}  // namespace fftconv::detail
