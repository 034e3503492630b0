// In-register DFTs of a compile-time length for the fused path (lib/fused/fused_program.cuh).
//
// A thread holds a whole line of N complex points in a float2 array and transforms it: a power of
// two (4 to 64) by decimation in frequency (radix-4 stages, a radix-2 one for odd log2 N),
// natural order in, bit-reversed order out (`brev`), so no data moves for the permutation; any
// other smooth length (and the Stockham passes' radices, lib/fft/plane_program.cuh) by mixed-radix
// decimation in time, natural order in and out (`smooth_dft`); `line_dft` and `line_slot` pick.
// Every index and every twiddle factor is a compile-time constant: the twiddles come from
// constexpr trigonometry evaluated by the compiler and enter the arithmetic as immediates, the
// trivial ones (1, -i) cost no multiply, and the arrays stay in registers. The same code runs on
// the host, where the CPU tests emulate the kernels with it (tests/cpu/test_fused_program.cu).
#pragma once

#include <type_traits>
#include <utility>

#include <cuda_runtime.h>  // float2, make_float2 (host and device)

#if defined(__CUDACC__)
#define FFTCONV_DFT_HD __host__ __device__ __forceinline__
#else
#define FFTCONV_DFT_HD inline
#endif
// Loops over register arrays unroll fully on the device (a runtime index would put the array in
// local memory); the host emulation needs no hint.
#if defined(__CUDA_ARCH__)
#define FFTCONV_DFT_UNROLL _Pragma("unroll")
#else
#define FFTCONV_DFT_UNROLL
#endif

namespace fftconv::detail::fused {

// ---- constexpr trigonometry ---------------------------------------------------------------------

struct SinCos {
  double s, c;
};

/// sin and cos of x in [0, pi/4] by their Taylor series (terms far below double rounding there).
FFTCONV_DFT_HD constexpr SinCos taylor_sincos(double x) {
  double s = 0.0, c = 0.0, term_s = x, term_c = 1.0;
  const double x2 = x * x;
  for (int k = 0; k < 12; ++k) {
    s += term_s;
    c += term_c;
    term_s *= -x2 / double((2 * k + 2) * (2 * k + 3));
    term_c *= -x2 / double((2 * k + 1) * (2 * k + 2));
  }
  return SinCos{s, c};
}

/// sin and cos of 2 pi t for t in [0, 1), reduced to the first octant by exact symmetries (so
/// quarter and half turns give exact zeros and ones).
FFTCONV_DFT_HD constexpr SinCos sincos_turn(double t) {
  double s_sign = 1.0, c_sign = 1.0;
  if (t >= 0.5) {  // theta - pi
    t -= 0.5;
    s_sign = -s_sign;
    c_sign = -c_sign;
  }
  if (t > 0.25) {  // pi - theta
    t = 0.5 - t;
    c_sign = -c_sign;
  }
  bool swap = false;
  if (t > 0.125) {  // pi/2 - theta
    t = 0.25 - t;
    swap = true;
  }
  const SinCos r = taylor_sincos(6.283185307179586476925286766559 * t);
  return swap ? SinCos{s_sign * r.c, c_sign * r.s} : SinCos{s_sign * r.s, c_sign * r.c};
}

/// Calls fn(std::integral_constant<int, I>) for I in [Begin, End): indices that templates (the
/// twiddle factors) can take.
// Host-device code that calls the caller's callables (device lambdas in the kernels, host
// ones in the emulation).
#pragma nv_exec_check_disable
template <int Begin, int End, class Fn>
FFTCONV_DFT_HD void static_for(Fn&& fn) {
  if constexpr (Begin < End) {
    fn(std::integral_constant<int, Begin>{});
    static_for<Begin + 1, End>(fn);
  }
}

// ---- complex helpers ----------------------------------------------------------------------------

FFTCONV_DFT_HD float2 cadd(float2 a, float2 b) { return make_float2(a.x + b.x, a.y + b.y); }
FFTCONV_DFT_HD float2 csub(float2 a, float2 b) { return make_float2(a.x - b.x, a.y - b.y); }
FFTCONV_DFT_HD float2 cmul(float2 a, float2 b) {
  return make_float2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}
FFTCONV_DFT_HD float2 cconj(float2 a) { return make_float2(a.x, -a.y); }
FFTCONV_DFT_HD float2 cscale(float2 a, float s) { return make_float2(a.x * s, a.y * s); }
/// i * a
FFTCONV_DFT_HD float2 times_i(float2 a) { return make_float2(-a.y, a.x); }
/// -i * a
FFTCONV_DFT_HD float2 times_minus_i(float2 a) { return make_float2(a.y, -a.x); }

/// a * w^J with w = exp(-2 pi i / N) (forward) or its conjugate (inverse), J a constant: no
/// multiply for J = 0 and J = N/4, constant factors otherwise.
template <int N, int J, bool kInverse>
FFTCONV_DFT_HD float2 twiddle(float2 a) {
  constexpr int j = ((J % N) + N) % N;
  if constexpr (j == 0) {
    return a;
  } else if constexpr (4 * j == N) {
    return kInverse ? times_i(a) : times_minus_i(a);
  } else if constexpr (2 * j == N) {
    return make_float2(-a.x, -a.y);
  } else if constexpr (4 * j == 3 * N) {
    return kInverse ? times_minus_i(a) : times_i(a);
  } else {
    constexpr SinCos sc = sincos_turn(double(j) / double(N));
    constexpr float c = static_cast<float>(sc.c);
    constexpr float s = kInverse ? static_cast<float>(sc.s) : -static_cast<float>(sc.s);
    return make_float2(a.x * c - a.y * s, a.x * s + a.y * c);
  }
}

// ---- the DFT -------------------------------------------------------------------------------------

FFTCONV_DFT_HD constexpr int ilog2(int n) { return n <= 1 ? 0 : 1 + ilog2(n / 2); }

/// Bit reversal of i over log2(N) bits: after dft<N>, X[k] is in v[brev<N>(k)].
template <int N>
FFTCONV_DFT_HD constexpr int brev(int i) {
  int r = 0;
  for (int b = 0; b < ilog2(N); ++b) r |= ((i >> b) & 1) << (ilog2(N) - 1 - b);
  return r;
}

/// The butterflies of offset J in every block of span 2H: (a, b) -> (a + b, (a - b) w_{2H}^J).
template <int N, int H, int J, bool kInverse>
FFTCONV_DFT_HD void dif_butterflies(float2 (&v)[N]) {
FFTCONV_DFT_UNROLL
  for (int b = 0; b < N; b += 2 * H) {
    const float2 a = v[b + J], d = v[b + J + H];
    v[b + J] = cadd(a, d);
    v[b + J + H] = twiddle<2 * H, J, kInverse>(csub(a, d));
  }
}

template <int N, int H, bool kInverse, int... J>
FFTCONV_DFT_HD void dif_stage(float2 (&v)[N], std::integer_sequence<int, J...>) {
  (dif_butterflies<N, H, J, kInverse>(v), ...);
}

/// Two radix-2 stages (spans 4Q and 2Q) at once at offset J of every block of span 4Q: one
/// multiply by -i (free) and three twiddles where the two stages take four. The outputs land
/// where the two stages would put them, so the order is still bit-reversed at the end.
template <int N, int Q, int J, bool kInverse>
FFTCONV_DFT_HD void dif4_butterflies(float2 (&v)[N]) {
  FFTCONV_DFT_UNROLL
  for (int b = 0; b < N; b += 4 * Q) {
    const float2 a0 = v[b + J], a1 = v[b + J + Q], a2 = v[b + J + 2 * Q], a3 = v[b + J + 3 * Q];
    const float2 b0 = cadd(a0, a2), b1 = csub(a0, a2), b2 = cadd(a1, a3);
    const float2 b3 = kInverse ? times_i(csub(a1, a3)) : times_minus_i(csub(a1, a3));
    v[b + J] = cadd(b0, b2);
    v[b + J + Q] = twiddle<4 * Q, 2 * J, kInverse>(csub(b0, b2));
    v[b + J + 2 * Q] = twiddle<4 * Q, J, kInverse>(cadd(b1, b3));
    v[b + J + 3 * Q] = twiddle<4 * Q, 3 * J, kInverse>(csub(b1, b3));
  }
}

template <int N, int Q, bool kInverse, int... J>
FFTCONV_DFT_HD void dif4_stage(float2 (&v)[N], std::integer_sequence<int, J...>) {
  (dif4_butterflies<N, Q, J, kInverse>(v), ...);
}

/// The stages from span 2H down: radix-4 pairs of stages, a last radix-2 one for odd log2 N.
template <int N, int H, bool kInverse>
FFTCONV_DFT_HD void dif_stages(float2 (&v)[N]) {
  if constexpr (H >= 2) {
    dif4_stage<N, H / 2, kInverse>(v, std::make_integer_sequence<int, H / 2>{});
    dif_stages<N, H / 4, kInverse>(v);
  } else if constexpr (H == 1) {
    dif_stage<N, 1, kInverse>(v, std::make_integer_sequence<int, 1>{});
  }
}

/// Unnormalised DFT of N points in place: X[k] = sum_n v[n] w^(nk), w = exp(-2 pi i / N) forward,
/// exp(+2 pi i / N) inverse; natural order in, X[k] left in v[brev<N>(k)].
template <int N, bool kInverse>
FFTCONV_DFT_HD void dft(float2 (&v)[N]) {
  static_assert(N >= 2 && (N & (N - 1)) == 0, "a power of two");
  dif_stages<N, N / 2, kInverse>(v);
}

// ---- any small smooth length, natural order -----------------------------------------------

FFTCONV_DFT_HD constexpr bool is_pow2(int n) { return n >= 1 && (n & (n - 1)) == 0; }

FFTCONV_DFT_HD constexpr bool is_prime(int n) {
  if (n < 2) return false;
  for (int d = 2; d * d <= n; ++d) {
    if (n % d == 0) return false;
  }
  return true;
}

/// How smooth_dft splits a composite R: by 4 where it can (its butterfly needs no multiply),
/// else by the smallest prime factor.
FFTCONV_DFT_HD constexpr int first_split(int r) {
  if (r % 4 == 0 && r > 4) return 4;
  for (int d = 2; d <= r; ++d) {
    if (r % d == 0) return d;
  }
  return r;
}

/// Unnormalised DFT of R points in place, natural order in and out: X[k] = sum_n v[n] w^(nk),
/// w = exp(-2 pi i / R) forward, exp(+2 pi i / R) inverse, for any R whose prime factors are
/// small (the code grows with each prime's square). Twiddles are compile-time constants.
template <int R, bool kInverse>
FFTCONV_DFT_HD void smooth_dft(float2 (&v)[R]) {
  if constexpr (R == 2) {
    const float2 a = v[0];
    v[0] = cadd(a, v[1]);
    v[1] = csub(a, v[1]);
  } else if constexpr (R == 3) {
    // v1 w + v2 w^2 = -(v1 + v2)/2 -+ i sqrt(3)/2 (v1 - v2) for w = exp(-+2 pi i / 3).
    constexpr float kS = 0.86602540378443864676f;
    const float2 t = cadd(v[1], v[2]);
    const float2 d = csub(v[1], v[2]);
    const float2 m = make_float2(v[0].x - 0.5f * t.x, v[0].y - 0.5f * t.y);
    const float2 s = make_float2(kS * d.x, kS * d.y);
    v[0] = cadd(v[0], t);
    v[1] = kInverse ? cadd(m, times_i(s)) : cadd(m, times_minus_i(s));
    v[2] = kInverse ? cadd(m, times_minus_i(s)) : cadd(m, times_i(s));
  } else if constexpr (R == 4) {
    const float2 b0 = cadd(v[0], v[2]), b1 = csub(v[0], v[2]), b2 = cadd(v[1], v[3]);
    const float2 b3 = kInverse ? times_i(csub(v[1], v[3])) : times_minus_i(csub(v[1], v[3]));
    v[0] = cadd(b0, b2);
    v[1] = cadd(b1, b3);
    v[2] = csub(b0, b2);
    v[3] = csub(b1, b3);
  } else if constexpr (is_prime(R)) {
    // Odd prime: with s_j = v_j + v_(R-j) and d_j = v_j - v_(R-j) (j = 1 .. H),
    // X[k], X[R-k] = a_k -+ i b_k (forward; +- inverse), a_k = v_0 + sum_j cos(2 pi jk/R) s_j,
    // b_k = sum_j sin(2 pi jk/R) d_j: half the multiplies of the plain sum.
    constexpr int H = (R - 1) / 2;
    float2 s[H + 1], d[H + 1];
    float2 x0 = v[0];
    static_for<1, H + 1>([&](auto jc) {
      constexpr int j = decltype(jc)::value;
      s[j] = cadd(v[j], v[R - j]);
      d[j] = csub(v[j], v[R - j]);
      x0 = cadd(x0, s[j]);
    });
    static_for<1, H + 1>([&](auto kc) {
      constexpr int k = decltype(kc)::value;
      float2 a = v[0], b = make_float2(0.0f, 0.0f);
      static_for<1, H + 1>([&](auto jc) {
        constexpr int j = decltype(jc)::value;
        constexpr SinCos sc = sincos_turn(double((j * k) % R) / double(R));
        constexpr float c = static_cast<float>(sc.c), sn = static_cast<float>(sc.s);
        a = make_float2(a.x + c * s[j].x, a.y + c * s[j].y);
        b = make_float2(b.x + sn * d[j].x, b.y + sn * d[j].y);
      });
      // v[k] and v[R - k] are read only through s and d, which every k has by now.
      v[k] = kInverse ? cadd(a, times_i(b)) : cadd(a, times_minus_i(b));
      v[R - k] = kInverse ? cadd(a, times_minus_i(b)) : cadd(a, times_i(b));
    });
    v[0] = x0;
  } else {
    // Decimation in time: P interleaved subsequences of Q points, their DFTs, then per output
    // column k2 a twiddled P-point DFT: X[k2 + Q k1] = sum_n1 w_P^(n1 k1) w_R^(n1 k2) U_n1[k2].
    constexpr int P = first_split(R), Q = R / P;
    float2 u[P][Q];
    FFTCONV_DFT_UNROLL
    for (int n1 = 0; n1 < P; ++n1) {
      FFTCONV_DFT_UNROLL
      for (int n2 = 0; n2 < Q; ++n2) u[n1][n2] = v[P * n2 + n1];
      smooth_dft<Q, kInverse>(u[n1]);
    }
    static_for<0, Q>([&](auto k2c) {
      constexpr int k2 = decltype(k2c)::value;
      float2 t[P];
      static_for<0, P>([&](auto n1c) {
        constexpr int n1 = decltype(n1c)::value;
        t[n1] = twiddle<R, n1 * k2, kInverse>(u[n1][k2]);
      });
      smooth_dft<P, kInverse>(t);
      FFTCONV_DFT_UNROLL
      for (int k1 = 0; k1 < P; ++k1) v[k2 + Q * k1] = t[k1];
    });
  }
}

// ---- a line ------------------------------------------------------------------------------------

/// The DFT of a line of N points (forward or inverse, unnormalised): a power of two by the
/// radix-4 stages above (X[k] left in v[brev<N>(k)]), any other smooth N by smooth_dft (natural
/// order). line_slot<N>(k) is where X[k] is left either way.
template <int N, bool kInverse>
FFTCONV_DFT_HD void line_dft(float2 (&v)[N]) {
  if constexpr (is_pow2(N)) {
    dft<N, kInverse>(v);
  } else {
    smooth_dft<N, kInverse>(v);
  }
}

template <int N>
FFTCONV_DFT_HD constexpr int line_slot(int k) {
  if constexpr (is_pow2(N)) {
    return brev<N>(k);
  } else {
    return k;
  }
}

}  // namespace fftconv::detail::fused
