// A 2D complex FFT of one plane held in shared memory, for the fused path (lib/fused/fused_conv.cu).
//
// Each axis is a sequence of Stockham radix-R passes (R = 16, 8 or 4), every line of the plane at
// once: a thread loads kPerThread / R groups of R elements into registers, the block synchronises,
// and each thread twiddles, transforms its groups in registers and stores them to their
// self-sorted places (Stockham needs no bit reversal). The plane is extents_h x extents_w, powers
// of two from 8 to kMaxExtent, stored with a pitch of extent_w + 1 elements so that the lines of
// both axes are read without shared-memory bank conflicts.
#pragma once

#include <utility>

#include <cuda_runtime.h>

namespace fftconv::detail::fused {

constexpr int kMaxLogExtent = 7;
constexpr int kMaxExtent = 1 << kMaxLogExtent;  ///< largest FFT size per axis
constexpr int kPerThread = 32;                  ///< complex elements a thread holds per pass
constexpr int kMaxThreads = (kMaxExtent * kMaxExtent) / kPerThread;  ///< 512: 128 registers each

__device__ __forceinline__ float2 cadd(float2 a, float2 b) { return {a.x + b.x, a.y + b.y}; }
__device__ __forceinline__ float2 csub(float2 a, float2 b) { return {a.x - b.x, a.y - b.y}; }
__device__ __forceinline__ float2 cmul(float2 a, float2 b) {
  return {a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x};
}
__device__ __forceinline__ float2 cconj(float2 a) { return {a.x, -a.y}; }
__device__ __forceinline__ float2 cscale(float2 a, float s) { return {a.x * s, a.y * s}; }

/// exp(-2 pi i m / 16) (forward) or its conjugate (inverse); m is a constant after unrolling, so
/// the switch folds away.
template <bool kInverse>
__device__ __forceinline__ float2 root16(int m) {
  constexpr float c1 = 0.92387953251128674f, s1 = 0.38268343236508978f;
  constexpr float h = 0.70710678118654752f;
  float c = 1.0f, s = 0.0f;  // cos and sin of 2 pi m / 16
  switch (m & 15) {
    case 0: c = 1.0f; s = 0.0f; break;
    case 1: c = c1; s = s1; break;
    case 2: c = h; s = h; break;
    case 3: c = s1; s = c1; break;
    case 4: c = 0.0f; s = 1.0f; break;
    case 5: c = -s1; s = c1; break;
    case 6: c = -h; s = h; break;
    case 7: c = -c1; s = s1; break;
    case 8: c = -1.0f; s = 0.0f; break;
    case 9: c = -c1; s = -s1; break;
    case 10: c = -h; s = -h; break;
    case 11: c = -s1; s = -c1; break;
    case 12: c = 0.0f; s = -1.0f; break;
    case 13: c = s1; s = -c1; break;
    case 14: c = h; s = -h; break;
    default: c = c1; s = -s1; break;
  }
  return kInverse ? make_float2(c, s) : make_float2(c, -s);
}

__host__ __device__ constexpr int bit_reverse(int i, int log_n) {
  int r = 0;
  for (int b = 0; b < log_n; ++b) r |= ((i >> b) & 1) << (log_n - 1 - b);
  return r;
}

__host__ __device__ constexpr int log2_of(int r) { return r <= 1 ? 0 : 1 + log2_of(r / 2); }

template <int R, int... I>
__device__ __forceinline__ void bit_reverse_permute(float2 (&v)[R],
                                                    std::integer_sequence<int, I...>) {
  const float2 t[R] = {v[bit_reverse(I, log2_of(R))]...};
  ((v[I] = t[I]), ...);
}

/// The butterflies of span kLen (and, recursively, every longer span up to R) of an in-register
/// radix-2 decimation-in-time DFT. Spans are template arguments so that every loop has constant
/// bounds: a runtime span loop left R = 16 arrays in local memory.
template <int R, int kLen, bool kInverse>
__device__ __forceinline__ void dft_stages(float2 (&v)[R]) {
  if constexpr (kLen <= R) {
#pragma unroll
    for (int i = 0; i < R; i += kLen) {
#pragma unroll
      for (int j = 0; j < kLen / 2; ++j) {
        const float2 a = v[i + j];
        const float2 b = j == 0 ? v[i + j + kLen / 2]
                                : cmul(v[i + j + kLen / 2], root16<kInverse>(j * (16 / kLen)));
        v[i + j] = cadd(a, b);
        v[i + j + kLen / 2] = csub(a, b);
      }
    }
    dft_stages<R, 2 * kLen, kInverse>(v);
  }
}

/// In-register DFT of R points, natural order in and out.
template <int R, bool kInverse>
__device__ __forceinline__ void dft(float2 (&v)[R]) {
  bit_reverse_permute(v, std::make_integer_sequence<int, R>{});
  dft_stages<R, 2, kInverse>(v);
}

/// roots[m] = exp(-2 pi i m / kMaxExtent), filled by the whole block (synchronise before use).
__device__ __forceinline__ void fill_roots(float2* roots) {
  for (int m = threadIdx.x; m < kMaxExtent; m += blockDim.x) {
    float s, c;
    sincospif(static_cast<float>(m) / (kMaxExtent / 2), &s, &c);
    roots[m] = make_float2(c, -s);
  }
}

/// One radix-R Stockham pass over every line of one axis: element t of line l is at
/// buf[l * line_step + t * elem_step]; the lines are 2^log_n long, 2^log_lines of them, and the
/// sub-transforms done so far are 2^log_ns long. Needs blockDim.x * kPerThread >= lines * n.
template <int R, bool kInverse>
__device__ __forceinline__ void stockham_pass(float2* buf, const float2* roots, int log_n,
                                              int log_ns, int log_lines, int line_step,
                                              int elem_step) {
  constexpr int kLogR = log2_of(R);
  constexpr int kItems = kPerThread / R;
  const int quarter = 1 << (log_n - kLogR);  // n / R
  const int items = quarter << log_lines;
  const int lines_mask = (1 << log_lines) - 1;
  float2 v[kItems][R];
#pragma unroll
  for (int it = 0; it < kItems; ++it) {
    const int id = threadIdx.x + it * blockDim.x;
    if (id < items) {
      const int l = id & lines_mask, j = id >> log_lines;
      const float2* line = buf + l * line_step;
#pragma unroll
      for (int r = 0; r < R; ++r) v[it][r] = line[(j + r * quarter) * elem_step];
    }
  }
  __syncthreads();
#pragma unroll
  for (int it = 0; it < kItems; ++it) {
    const int id = threadIdx.x + it * blockDim.x;
    if (id < items) {
      const int l = id & lines_mask, j = id >> log_lines;
      const int k = j & ((1 << log_ns) - 1);
      if (log_ns > 0) {
        const int shift = kMaxLogExtent - log_ns - kLogR;
#pragma unroll
        for (int r = 1; r < R; ++r) {
          const float2 w = roots[(r * k) << shift];
          v[it][r] = cmul(v[it][r], kInverse ? cconj(w) : w);
        }
      }
      dft<R, kInverse>(v[it]);
      const int dst = ((j >> log_ns) << (log_ns + kLogR)) + k;
      float2* line = buf + l * line_step;
#pragma unroll
      for (int r = 0; r < R; ++r) line[(dst + (r << log_ns)) * elem_step] = v[it][r];
    }
  }
  __syncthreads();
}

/// log2 of the radix of pass `p` (0 or 1) of a transform of 2^log_n points: 8 (8), 16 (16),
/// 32 (8, 4), 64 (8, 8), 128 (16, 8); 0 when the transform has no such pass.
__device__ __forceinline__ int pass_log_radix(int log_n, int p) {
  if (log_n <= 4) return p == 0 ? log_n : 0;
  if (p == 0) return log_n == 7 ? 4 : 3;
  return log_n - (log_n == 7 ? 4 : 3);
}

/// 2D transform of the plane in place (rows, then columns); unnormalised. Starts and ends with
/// the block synchronised. One loop over (axis, pass) holds one copy of each radix's pass.
template <bool kInverse>
__device__ __forceinline__ void fft2d(float2* buf, const float2* roots, int log_h, int log_w,
                                      int pitch) {
#pragma unroll 1
  for (int step = 0; step < 4; ++step) {
    const bool rows = step < 2;  // rows: the h lines of w elements; then the w columns
    const int log_n = rows ? log_w : log_h, log_lines = rows ? log_h : log_w;
    const int line_step = rows ? pitch : 1, elem_step = rows ? 1 : pitch;
    const int p = step & 1;
    const int log_r = pass_log_radix(log_n, p);
    const int log_ns = p == 0 ? 0 : pass_log_radix(log_n, 0);
    if (log_r == 4) {
      stockham_pass<16, kInverse>(buf, roots, log_n, log_ns, log_lines, line_step, elem_step);
    } else if (log_r == 3) {
      stockham_pass<8, kInverse>(buf, roots, log_n, log_ns, log_lines, line_step, elem_step);
    } else if (log_r == 2) {
      stockham_pass<4, kInverse>(buf, roots, log_n, log_ns, log_lines, line_step, elem_step);
    }
  }
}

}  // namespace fftconv::detail::fused
