// What one plane's threads do in the fused FFT convolution (Algo::kFftFused), written once for the
// device kernels (lib/fused/fused_conv.cu) and for the host emulation that the CPU tests run
// (tests/cpu/test_fused_program.cu).
//
// A plane of F x F (F one of the sizes of lib/geometry/fft_geometry.h, kFusedSizes: powers of two
// from 8 to 128 and 3-, 5- and 7-smooth multiples of 8 between them) is transformed by F threads
// through one shared buffer of F rows of F/2 + 1 complex values (the last one a pad against bank
// conflicts):
//   stage     the source plane (or filter) is copied into the buffer as floats, coalesced;
//   rows      thread u transforms row u (the source row placed there, or zeros) as a real FFT:
//             F reals as F/2 complex points, one in-register DFT (lib/fused/line_dft.cuh: radix 4
//             and 2 for powers of two, mixed radices 2 to 7 otherwise), then
//             the half spectrum H[0..F/2]; slot 0 packs the two real bins, H[0] + i H[F/2];
//   columns   thread (c, h) transforms the half h (rows 2m + h) of column slot c: two DFTs of
//             F/2 points per column, whose last radix-2 step is done in the product phase;
//   product   per bin, the column spectrum is completed, multiplied by the filter's spectrum
//             (slot 0 separated into its two real columns first) and the first radix-2 step of
//             the inverse is taken, in place;
//   inverse   the column halves are inverted, then thread u turns row u back into F reals (only
//             the rows the output reads), and the block stores the output window, coalesced.
// Between phases the block synchronises; a phase that reads and writes different places of the
// buffer keeps its line in registers across a synchronisation (the `_read` / `_write` pairs).
//
// The filter's spectrum (fused_filter_program) is the forward half of this, stored as
// [F][F/2 + 1] complex values per filter, conjugated for the forward pass's correlation and scaled
// by 1 / F^2.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "fused/fused_conv.h"
#include "fused/line_dft.cuh"
#include "geometry/index_math.h"

namespace fftconv::detail::fused {

using PlaneGeometry = FusedGeometry;

template <int F>
struct Layout {
  // Columns split in halves of F/2 rows, each half's bins in two quarters: F a multiple of 4.
  static_assert(F >= 8 && F <= 128 && F % 4 == 0, "F is a multiple of 4 from 8 to 128");
  static constexpr int N = F / 2;           ///< complex points of a line, column slots of a row
  static constexpr int kPitch = N + 1;      ///< complex values per buffer row
  static constexpr int kFloats = 2 * F * kPitch;  ///< floats of a plane's buffer
  static constexpr int kOutPitch = F + 1;   ///< floats per row of the real result
  static constexpr int kSpecRow = N + 1;    ///< complex values per row of a filter spectrum
  static constexpr int kSpecSize = F * kSpecRow;  ///< complex values of a filter spectrum
};

/// A thread's line, held in registers across a synchronisation.
template <int N>
struct Line {
  float2 v[N];
};

// ---- stage ---------------------------------------------------------------------------------------

/// Source rows the FFT plane can hold: a placement puts row i at or below row i of the plane.
FFTCONV_DFT_HD int staged_rows(const PlaneGeometry& g, int f) { return g.src_h < f ? g.src_h : f; }

/// Source column of FFT column v, or -1 (padding, the stride spread, past the source).
FFTCONV_DFT_HD int placed_col(int v, const PlaneGeometry& g) {
  if (g.step_w == 1) {
    const int j = v - g.off_w;
    return j >= 0 && j < g.src_w ? j : -1;
  }
  return placed_source<int>(v, g.off_w, g.step_w, g.src_w);
}

/// Stages the source rows into buf as F columns each (pitch F + 1, odd against bank conflicts):
/// column v of staged row r is source element (r, placed_col(v)), or zero. Thread t fills column
/// t: copy.column(dst, pitch, rows, j) writes source column j (or zeros for j < 0) of rows
/// [0, rows) to dst[r * pitch], coalesced across the threads.
#pragma nv_exec_check_disable
template <int F, class Copy>
FFTCONV_DFT_HD void stage_source(int t, float* buf, const PlaneGeometry& g, Copy&& copy) {
  copy.column(buf + t, F + 1, staged_rows(g, F), placed_col(t, g));
}

// ---- rows, forward -------------------------------------------------------------------------------

/// Row t's F reals (the staged source row i placed there) as F/2 complex points; rows without
/// one are zeros, which step_transform makes without a DFT.
template <int F>
FFTCONV_DFT_HD void rows_forward_load(int i, const float* buf, Line<F / 2>& l) {
  const float* row = buf + i * (F + 1);
  FFTCONV_DFT_UNROLL
  for (int m = 0; m < F / 2; ++m) l.v[m] = make_float2(row[2 * m], row[2 * m + 1]);
}

/// After the DFT (Z[v] in l.v[line_slot(v)]): row t's half spectrum to its slots (slot 0 =
/// H[0] + i H[F/2]). The even samples' spectrum is (Z[v] + conj Z[-v])/2, the odd samples'
/// -i (Z[v] - conj Z[-v])/2, and H[v] = even + w_F^v odd.
template <int F>
FFTCONV_DFT_HD void rows_forward_store(int t, float2* spec, const Line<F / 2>& z) {
  constexpr int N = F / 2;
  float2* row = spec + t * Layout<F>::kPitch;
  {
    const float2 z0 = z.v[0];
    row[0] = make_float2(z0.x + z0.y, z0.x - z0.y);
  }
  static_for<1, N / 2 + 1>([&](auto vc) {
    constexpr int v = decltype(vc)::value, v2 = N - v;
    const float2 zv = z.v[line_slot<N>(v)], zm = z.v[line_slot<N>(v2)];
    const float2 e = cscale(cadd(zv, cconj(zm)), 0.5f);
    const float2 o = times_minus_i(cscale(csub(zv, cconj(zm)), 0.5f));
    row[v] = cadd(e, twiddle<F, v, false>(o));
    if constexpr (v2 != v) row[v2] = cadd(cconj(e), twiddle<F, v2, false>(cconj(o)));
  });
}

// ---- columns -------------------------------------------------------------------------------------

/// Thread t's column slot and half.
template <int F>
FFTCONV_DFT_HD int slot_of(int t) { return t % (F / 2); }
template <int F>
FFTCONV_DFT_HD int half_of(int t) { return t / (F / 2); }

/// Column slot c, half h: the rows 2m + h (interleaved, the halves' inputs) or the rows
/// h * F/2 + k (split, the halves' spectra), as a line.
template <int F>
FFTCONV_DFT_HD void cols_load(int t, const float2* spec, bool split, Line<F / 2>& l) {
  constexpr int N = F / 2, P = Layout<F>::kPitch;
  const int c = slot_of<F>(t), h = half_of<F>(t);
  const float2* p = spec + (split ? h * N : h) * P + c;
  const int step = (split ? 1 : 2) * P;
  FFTCONV_DFT_UNROLL
  for (int m = 0; m < N; ++m) l.v[m] = p[m * step];
}

/// After the DFT (X[k] in l.v[line_slot(k)]): the line to the rows of column slot c, half h, in
/// natural order, split (h * F/2 + k: E to the top half, O to the bottom) or interleaved (2m + h).
template <int F>
FFTCONV_DFT_HD void cols_store(int t, float2* spec, bool split, const Line<F / 2>& l) {
  constexpr int N = F / 2, P = Layout<F>::kPitch;
  const int c = slot_of<F>(t), h = half_of<F>(t);
  float2* p = spec + (split ? h * N : h) * P + c;
  const int step = (split ? 1 : 2) * P;
  FFTCONV_DFT_UNROLL
  for (int k = 0; k < N; ++k) p[k * step] = l.v[line_slot<N>(k)];
}

/// Column bins k and k + F/2 of slot c from its halves' spectra: E[k] +- w_F^k O[k]; k = h * F/4
/// + kk, and w_F^(F/4) = -i.
template <int F, int kk>
FFTCONV_DFT_HD void column_bins(float2 e, float2 o, int h, float2& x0, float2& x1) {
  float2 wo = twiddle<F, kk, false>(o);
  if (h) wo = times_minus_i(wo);
  x0 = cadd(e, wo);
  x1 = csub(e, wo);
}

/// For thread t of a slot c > 0: fn(k, kk, x0, x1) for each of its bins k = h * F/4 + kk (kk an
/// integral constant) with the column's bins k (x0) and k + F/2 (x1); nothing for slot 0.
#pragma nv_exec_check_disable
template <int F, class Fn>
FFTCONV_DFT_HD void each_column_bin(int t, const float2* spec, Fn&& fn) {
  constexpr int N = F / 2, P = Layout<F>::kPitch;
  const int c = slot_of<F>(t), h = half_of<F>(t);
  if (c == 0) return;
  static_for<0, N / 2>([&](auto kc) {
    constexpr int kk = decltype(kc)::value;
    const int k = h * (N / 2) + kk;
    float2 x0, x1;
    column_bins<F, kk>(spec[k * P + c], spec[(N + k) * P + c], h, x0, x1);
    fn(k, kc, x0, x1);
  });
}

/// The two real columns packed in slot 0 at a bin p and its mirror q = -p: their spectra
/// dc = (P[p] + conj P[q]) / 2 and nq = -i (P[p] - conj P[q]) / 2 at p (at q: the conjugates).
FFTCONV_DFT_HD void unpack_pair(float2 pp, float2 pq, float2& dc, float2& nq) {
  dc = cscale(cadd(pp, cconj(pq)), 0.5f);
  nq = times_minus_i(cscale(csub(pp, cconj(pq)), 0.5f));
}

/// w_F^j = exp(-2 pi i j / F) computed at run time (the slot-0 groups' twiddles, one group a
/// thread).
FFTCONV_DFT_HD float2 unit_root(int j, int f) {
#if defined(__CUDA_ARCH__)
  float sn, cs;
  sincospif(2.0f * static_cast<float>(j) / static_cast<float>(f), &sn, &cs);
  return make_float2(cs, -sn);
#else
  const double a = 6.283185307179586476925286766559 * j / f;
  return make_float2(static_cast<float>(std::cos(a)), static_cast<float>(-std::sin(a)));
#endif
}

/// Slot 0 at the bins of group k (k in [0, F/4]): k, k + F/2, F/2 - k, F - k (two bins for k = 0
/// and k = F/4), from E and O at k and F/2 - k; fn(bin, mirror_bin, P[bin], P[mirror]) for each
/// mirror pair.
#pragma nv_exec_check_disable
template <int F, class Fn>
FFTCONV_DFT_HD void slot0_pairs(int k, const float2* spec, Fn&& fn) {
  constexpr int N = F / 2, P = Layout<F>::kPitch;
  if (k == 0) {
    const float2 e = spec[0], o = spec[N * P];
    const float2 p0 = cadd(e, o), pn = csub(e, o);
    fn(0, 0, p0, p0);
    fn(N, N, pn, pn);
    return;
  }
  const float2 w = unit_root(k, F);  // w_F^k; w_F^(N-k) = -conj(w_F^k)
  const float2 ea = spec[k * P], wo = cmul(spec[(N + k) * P], w);
  if (2 * k == N) {
    fn(k, k + N, cadd(ea, wo), csub(ea, wo));
    return;
  }
  const int k2 = N - k;
  const float2 eb = spec[k2 * P], wob = cmul(spec[(N + k2) * P], make_float2(-w.x, w.y));
  // bin k mirrors F - k = k2 + N; bin k + N mirrors N - k = k2.
  fn(k, k2 + N, cadd(ea, wo), csub(eb, wob));
  fn(k + N, k2, csub(ea, wo), cadd(eb, wob));
}

/// Slot 0 after the product at bin p, whose mirror is q, from P[p] and P[q]: the two real
/// columns separated, each multiplied by its own filter column (0 and F/2), packed again; *yq
/// gets the same at q.
template <int F>
FFTCONV_DFT_HD float2 slot0_times_filter(float2 pp, float2 pq, const float2* g, int p, int q,
                                         float2* yq) {
  constexpr int N = F / 2, G = Layout<F>::kSpecRow;
  float2 dc, nq;
  unpack_pair(pp, pq, dc, nq);
  *yq = cadd(cmul(cconj(dc), g[q * G]), times_i(cmul(cconj(nq), g[q * G + N])));
  return cadd(cmul(dc, g[p * G]), times_i(cmul(nq, g[p * G + N])));
}

/// The slot-0 part of the product for group k (slot0_pairs' bins), split for the inverse.
template <int F>
FFTCONV_DFT_HD void slot0_product(int k, float2* spec, const float2* g) {
  constexpr int N = F / 2, P = Layout<F>::kPitch;
  float2 unused;
  if (k == 0) {
    const float2 e = spec[0], o = spec[N * P];
    const float2 y0 = slot0_times_filter<F>(cadd(e, o), cadd(e, o), g, 0, 0, &unused);
    const float2 yn = slot0_times_filter<F>(csub(e, o), csub(e, o), g, N, N, &unused);
    spec[0] = cadd(y0, yn);
    spec[N * P] = csub(y0, yn);
    return;
  }
  const float2 w = unit_root(k, F);  // w_F^k; w_F^(N-k) = -conj(w_F^k), w_F^-(N-k) = -w_F^k
  const float2 ea = spec[k * P], wo = cmul(spec[(N + k) * P], w);
  if (2 * k == N) {
    float2 ykn;
    const float2 yk = slot0_times_filter<F>(cadd(ea, wo), csub(ea, wo), g, k, k + N, &ykn);
    spec[k * P] = cadd(yk, ykn);
    spec[(N + k) * P] = cmul(csub(yk, ykn), cconj(w));
    return;
  }
  const int k2 = N - k;
  const float2 eb = spec[k2 * P], wob = cmul(spec[(N + k2) * P], make_float2(-w.x, w.y));
  // bin k mirrors F - k = k2 + N; bin k + N mirrors N - k = k2.
  float2 yk2n, yk2;
  const float2 yk = slot0_times_filter<F>(cadd(ea, wo), csub(eb, wob), g, k, k2 + N, &yk2n);
  const float2 ykn = slot0_times_filter<F>(csub(ea, wo), cadd(eb, wob), g, k + N, k2, &yk2);
  spec[k * P] = cadd(yk, ykn);
  spec[(N + k) * P] = cmul(csub(yk, ykn), cconj(w));
  spec[k2 * P] = cadd(yk2, yk2n);
  spec[(N + k2) * P] = cmul(csub(yk2, yk2n), make_float2(-w.x, -w.y));
}

/// The first radix-2 step of the inverse column transform at k: (Y[k] + Y[k+F/2]) to row k,
/// (Y[k] - Y[k+F/2]) w_F^-k to row k + F/2 (k = h * F/4 + kk).
template <int F, int kk>
FFTCONV_DFT_HD void inverse_split(float2* spec, int k, int c, int h, float2 y0, float2 y1) {
  constexpr int N = F / 2, P = Layout<F>::kPitch;
  float2 b = twiddle<F, kk, true>(csub(y0, y1));
  if (h) b = times_i(b);
  spec[k * P + c] = cadd(y0, y1);
  spec[(N + k) * P + c] = b;
}

/// Per bin: the column spectrum completed, multiplied by the filter's spectrum g ([F][F/2 + 1]),
/// and split for the inverse, in place. Thread (c, h) of slot c > 0 takes bins h * F/4 + kk;
/// slot 0 holds two real columns (bins 0 and F/2 of every row), whose groups of mirrored bins
/// threads 0 to F/4 take, one each.
template <int F>
FFTCONV_DFT_HD void cols_product(int t, float2* spec, const float2* g) {
  constexpr int N = F / 2, G = Layout<F>::kSpecRow;
  const int c = slot_of<F>(t), h = half_of<F>(t);
  each_column_bin<F>(t, spec, [&](int k, auto kc, float2 x0, float2 x1) {
    inverse_split<F, decltype(kc)::value>(spec, k, c, h, cmul(x0, g[k * G + c]),
                                          cmul(x1, g[(k + N) * G + c]));
  });
  if (t <= N / 2) slot0_product<F>(t, spec, g);
}

// ---- rows, inverse -------------------------------------------------------------------------------

/// Whether the output reads row t of the F x F result (columns: the same rule along w).
FFTCONV_DFT_HD bool read_by_output(int t, int f, int out, int off, int stride, bool wrap) {
  if (wrap && off + (out - 1) * stride >= f) return true;  // wrapping reads: any row may serve
  if (t < off) return false;
  const int d = t - off;
  return d % stride == 0 && d / stride < out;
}

/// Row t of the result as the F/2 complex points whose inverse DFT is its F reals
/// (x[2m] + i x[2m+1]): Z[v] = (H[v] + conj H[N-v]) + i (H[v] - conj H[N-v]) w_F^-v.
template <int F>
FFTCONV_DFT_HD void rows_inverse_load(int t, const float2* spec, Line<F / 2>& l) {
  constexpr int N = F / 2;
  const float2* row = spec + t * Layout<F>::kPitch;
  {
    const float2 s0 = row[0];  // H[0] + i H[F/2], both real
    l.v[0] = make_float2(s0.x + s0.y, s0.x - s0.y);
  }
  static_for<1, N / 2 + 1>([&](auto vc) {
    constexpr int v = decltype(vc)::value, v2 = N - v;
    const float2 hv = row[v], hm = row[v2];
    l.v[v] = cadd(cadd(hv, cconj(hm)), times_i(twiddle<F, v, true>(csub(hv, cconj(hm)))));
    if constexpr (v2 != v) {
      l.v[v2] = cadd(cadd(hm, cconj(hv)), times_i(twiddle<F, v2, true>(csub(hm, cconj(hv)))));
    }
  });
}

/// After the inverse DFT (X[m] in l.v[line_slot(m)]): the F reals of row t to row t of the output
/// staging (floats, pitch F + 1).
template <int F>
FFTCONV_DFT_HD void rows_inverse_store(int t, float* buf, const Line<F / 2>& l) {
  constexpr int N = F / 2;
  float* row = buf + t * Layout<F>::kOutPitch;
  FFTCONV_DFT_UNROLL
  for (int m = 0; m < N; ++m) {
    const float2 z = l.v[line_slot<N>(m)];
    row[2 * m] = z.x;
    row[2 * m + 1] = z.y;
  }
}

/// The output window from the staged result: thread t writes output columns q = t, t + F, ...
/// of every row, store(p, q, value) writing output element (p, q) of the window (coalesced
/// across the threads).
#pragma nv_exec_check_disable
template <int F, class Store>
FFTCONV_DFT_HD void store_output(int t, const float* buf, const PlaneGeometry& g, Store&& store) {
  for (int q = t; q < g.out_w; q += F) {
    const int c = clip_read<int>(q, g.read_stride_w, g.read_off_w, F, g.wrap);
    for (int p = 0; p < g.out_h; ++p) {
      const int r = clip_read<int>(p, g.read_stride_h, g.read_off_h, F, g.wrap);
      store(p, q, r >= 0 && c >= 0 ? buf[r * Layout<F>::kOutPitch + c] : 0.0f);
    }
  }
}

// ---- the filter's spectrum ------------------------------------------------------------------------

/// After the forward column halves: the filter's spectrum G[F][F/2 + 1] (bins 0 and F/2 of the
/// rows as their own columns), times `scale`, conjugated if asked.
template <int F>
FFTCONV_DFT_HD void filter_spectrum_out(int t, const float2* spec, float2* g, bool conjugate,
                                        float scale) {
  constexpr int N = F / 2, G = Layout<F>::kSpecRow;
  const int c = slot_of<F>(t);
  auto post = [&](float2 x) { return cscale(conjugate ? cconj(x) : x, scale); };
  each_column_bin<F>(t, spec, [&](int k, auto, float2 x0, float2 x1) {
    g[k * G + c] = post(x0);
    g[(k + N) * G + c] = post(x1);
  });
  if (t <= N / 2) {
    slot0_pairs<F>(t, spec, [&](int p, int q, float2 pp, float2 pq) {
      float2 dc, nq;
      unpack_pair(pp, pq, dc, nq);
      g[p * G] = post(dc);
      g[p * G + N] = post(nq);
      g[q * G] = post(cconj(dc));
      g[q * G + N] = post(cconj(nq));
    });
  }
}

// ---- programs ------------------------------------------------------------------------------------

/// Imaginary parts times `sign` (+1 or -1): arithmetic rather than a branch, so that the
/// compiler keeps one copy of the DFT for both directions.
template <int N>
FFTCONV_DFT_HD void scale_imag(Line<N>& l, float sign) {
  FFTCONV_DFT_UNROLL
  for (int m = 0; m < N; ++m) l.v[m].y *= sign;
}

/// The steps of a plane's transforms, each one DFT of a line per thread between a load and a
/// store (the inverse ones as conjugated forward DFTs): one copy of the DFT's code serves all
/// four, which keeps the kernels within the instruction cache.
enum Step : int { kRowsForward = 0, kColsForward = 1, kColsInverse = 2, kRowsInverse = 3 };

/// Loads thread t's line for `step` and transforms it (inverse steps conjugate in and out).
template <int F>
FFTCONV_DFT_HD void step_transform(int step, int t, const float* buf, const PlaneGeometry& geo,
                                   Line<F / 2>& l) {
  const float2* spec = reinterpret_cast<const float2*>(buf);
  // Rows without source data transform to zeros, rows the output does not read are not made:
  // no DFT for them (a warp whose rows all are such skips it).
  if (step == kRowsForward && placed_source<int>(t, geo.off_h, geo.step_h, geo.src_h) < 0) {
    FFTCONV_DFT_UNROLL
    for (int m = 0; m < F / 2; ++m) l.v[m] = make_float2(0.0f, 0.0f);
    return;
  }
  if (step == kRowsInverse &&
      !read_by_output(t, F, geo.out_h, geo.read_off_h, geo.read_stride_h, geo.wrap)) {
    // Not stored; defined all the same, so that no line outlives its step (a line that might
    // flow into a later step stays live, in registers or spilled, across every phase between).
    FFTCONV_DFT_UNROLL
    for (int m = 0; m < F / 2; ++m) l.v[m] = make_float2(0.0f, 0.0f);
    return;
  }
  switch (step) {
    case kRowsForward:
      rows_forward_load<F>(placed_source<int>(t, geo.off_h, geo.step_h, geo.src_h), buf, l);
      break;
    case kColsForward: cols_load<F>(t, spec, false, l); break;
    case kColsInverse: cols_load<F>(t, spec, true, l); break;
    default: rows_inverse_load<F>(t, spec, l); break;
  }
  const float sign = step >= kColsInverse ? -1.0f : 1.0f;  // inverse: conj(DFT(conj(x)))
  scale_imag(l, sign);
  line_dft<F / 2, false>(l.v);
  scale_imag(l, sign);
}

/// Stores thread t's transformed line of `step` (after the block synchronised: stores overwrite
/// what other threads loaded).
template <int F>
FFTCONV_DFT_HD void step_store(int step, int t, float* buf, const PlaneGeometry& geo,
                               const Line<F / 2>& l) {
  float2* spec = reinterpret_cast<float2*>(buf);
  switch (step) {
    case kRowsForward: rows_forward_store<F>(t, spec, l); break;
    case kColsForward: cols_store<F>(t, spec, true, l); break;
    case kColsInverse: cols_store<F>(t, spec, false, l); break;
    default:
      if (read_by_output(t, F, geo.out_h, geo.read_off_h, geo.read_stride_h, geo.wrap)) {
        rows_inverse_store<F>(t, buf, l);
      }
      break;
  }
}

// Exec: each(fn) calls fn(t, line) for the plane's threads (a device thread: itself; the host
// emulation: every t in turn, each with its own line) and sync() separates phases.

/// Stages the plane's source and runs the transform steps up to `last`, then_each(step) after
/// each one (the product, between the columns' forward and inverse steps). One loop: one copy
/// of the DFT's code in a kernel.
#pragma nv_exec_check_disable
template <int F, class Exec, class Copy, class After>
FFTCONV_DFT_HD void stage_and_transform(Exec& ex, float* buf, const PlaneGeometry& geo,
                                        bool active, Copy&& copy, int last, After&& after) {
  using L = Line<F / 2>;
  ex.each([&](int t, L&) {
    if (active) stage_source<F>(t, buf, geo, copy);
  });
  ex.sync();
#if defined(__CUDA_ARCH__)
#pragma unroll 1
#endif
  for (int step = kRowsForward; step <= last; ++step) {
    ex.each([&](int t, L& l) { step_transform<F>(step, t, buf, geo, l); });
    ex.sync();
    ex.each([&](int t, L& l) { step_store<F>(step, t, buf, geo, l); });
    ex.sync();
    after(step);
  }
}

/// The convolution of one plane: source (copy) to output (store) through the filter spectrum g,
/// which is read first by the product, after the columns' forward step: before_product() runs
/// there, once per thread (the kernel waits there for the filter kernel it overlaps).
#pragma nv_exec_check_disable
template <int F, class Exec, class Copy, class Store, class BeforeProduct>
FFTCONV_DFT_HD void fused_conv_program(Exec& ex, float* buf, const PlaneGeometry& geo,
                                       const float2* g, bool active, Copy&& copy, Store&& store,
                                       BeforeProduct&& before_product) {
  using L = Line<F / 2>;
  stage_and_transform<F>(ex, buf, geo, active, copy, kRowsInverse, [&](int step) {
    if (step == kColsForward) {
      ex.each([&](int t, L&) {
        before_product();
        cols_product<F>(t, reinterpret_cast<float2*>(buf), g);
      });
      ex.sync();
    }
  });
  ex.each([&](int t, L&) {
    if (active) store_output<F>(t, buf, geo, store);
  });
}

/// The spectrum of one filter plane (copy: its taps) into g.
#pragma nv_exec_check_disable
template <int F, class Exec, class Copy>
FFTCONV_DFT_HD void fused_filter_program(Exec& ex, float* buf, const PlaneGeometry& geo, float2* g,
                                         bool active, bool conjugate, float scale, Copy&& copy) {
  using L = Line<F / 2>;
  stage_and_transform<F>(ex, buf, geo, active, copy, kColsForward, [](int) {});
  ex.each([&](int t, L&) {
    if (active) filter_spectrum_out<F>(t, reinterpret_cast<const float2*>(buf), g, conjugate, scale);
  });
}

// ---- the backward filter -----------------------------------------------------------------------

/// Thread t's places e = t + j F of a spectrum (Layout<F>::kSpecSize of them, F/2 + 1 a thread):
/// dst[e] = src[e] (+ dst[e] when `add`), the loads of kBatch places issued before their stores
/// (one pointer may be global memory: a load after a store it might alias would wait out the
/// store's latency).
template <int F>
FFTCONV_DFT_HD void move_spectrum(int t, const float2* src, float2* dst, bool add) {
  constexpr int kSpec = Layout<F>::kSpecSize, kBatch = 8;
  for (int e0 = t; e0 < kSpec; e0 += kBatch * F) {
    float2 v[kBatch], d[kBatch];
    FFTCONV_DFT_UNROLL
    for (int j = 0; j < kBatch; ++j) {
      const int e = e0 + j * F;
      v[j] = e < kSpec ? src[e] : make_float2(0.0f, 0.0f);
      d[j] = e < kSpec && add ? dst[e] : make_float2(0.0f, 0.0f);
    }
    FFTCONV_DFT_UNROLL
    for (int j = 0; j < kBatch; ++j) {
      const int e = e0 + j * F;
      if (e < kSpec) dst[e] = cadd(v[j], d[j]);
    }
  }
}

/// Thread t's share of the rows the output window reads (lags: out_h rows from read_off_h at
/// read_stride_h, which do not wrap), between the plane's buffer (spec, each row at its place)
/// and a compact sum (rows, out_h rows of Layout<F>::kPitch values): into the sum (`add`: onto
/// it) or, `back`, from it to their places. The loads of kBatch places go before their stores
/// (rows may be global memory), as move_spectrum's.
template <int F>
FFTCONV_DFT_HD void move_read_rows(int t, float2* spec, float2* rows, const PlaneGeometry& lags,
                                   bool back, bool add) {
  constexpr int P = Layout<F>::kPitch, kBatch = 8;
  const int total = lags.out_h * P;
  for (int e0 = t; e0 < total; e0 += kBatch * F) {
    float2 v[kBatch], d[kBatch];
    int at[kBatch];
    FFTCONV_DFT_UNROLL
    for (int j = 0; j < kBatch; ++j) {
      const int e = e0 + j * F;
      const int r = e / P;
      at[j] = (lags.read_off_h + r * lags.read_stride_h) * P + (e - r * P);
      v[j] = e < total ? (back ? rows[e] : spec[at[j]]) : make_float2(0.0f, 0.0f);
      d[j] = e < total && add && !back ? rows[e] : make_float2(0.0f, 0.0f);
    }
    FFTCONV_DFT_UNROLL
    for (int j = 0; j < kBatch; ++j) {
      const int e = e0 + j * F;
      if (e >= total) continue;
      if (back) {
        spec[at[j]] = v[j];
      } else {
        rows[e] = cadd(v[j], d[j]);
      }
    }
  }
}

/// The geometries of the backward filter's pairs over whole planes: x at the padding with the
/// kernel's lags as its output window, dy spread by the stride at the origin, the same for every
/// image (fused_wgrad_program's Geos; a tiled pass has its own, one pair per tile).
struct WholeWgradGeos {
  const PlaneGeometry& xg;
  const PlaneGeometry& dyg;
  FFTCONV_DFT_HD PlaneGeometry x(int) const { return xg; }
  FFTCONV_DFT_HD PlaneGeometry dy(int) const { return dyg; }
};

/// The backward filter of one channel over `count` pairs of an x plane and a dy plane
/// (fused_wgrad_kernel's slot: images, or tiles of images): per pair i, dy's spectrum (staged by
/// copy_dy(i) as geos.dy(i) places it, as a filter: conjugated, times `scale`) into g, then x's
/// (copy_x(i), geos.x(i)) multiplied by it bin by bin and split for the inverse, in place, and
/// added to acc (the first pair writes it); last, acc transformed back and the window `lags`
/// stored (store); a slot of one pair (jobs_images 1) transforms its product back where it
/// stands, without acc. With `sum_rows` (lags not wrapping) each product's columns are
/// transformed back at once and only the rows the window reads are added, to acc as lags.out_h
/// compact rows, and the last job transforms those rows alone: a column transform more an image
/// for acc's round trips of lags.out_h rows instead of F. g and acc are the slot's own. Jobs of
/// pairs at or past `count` (a shorter slice than its block's others) do no work but keep the
/// block's synchronisations. One loop over the jobs, one transform step a turn: one copy of the
/// DFT's code.
#pragma nv_exec_check_disable
template <int F, class Exec, class Geos, class CopyX, class CopyDy, class Store>
FFTCONV_DFT_HD void fused_wgrad_program(Exec& ex, float* buf, const Geos& geos,
                                        const PlaneGeometry& lags, float2* g, float2* acc,
                                        int jobs_images, int count, bool active, float scale,
                                        bool sum_rows, CopyX&& copy_x, CopyDy&& copy_dy,
                                        Store&& store) {
  using L = Line<F / 2>;
  float2* spec = reinterpret_cast<float2*>(buf);
#if defined(__CUDA_ARCH__)
#pragma unroll 1
#endif
  for (int job = 0; job <= 2 * jobs_images; ++job) {
    const bool inverse = job == 2 * jobs_images;
    const bool dy_job = !inverse && job % 2 == 0;
    const int image = job / 2;
    const bool on = active && (inverse ? count > 0 : image < count);
    // The transforms' geometry as step_transform reads it: the rows' placement (x's, or dy's
    // for its forward rows) and the output window's rows (the lags); built by value field by
    // field (a reference chosen at run time would copy the kernel's parameters to local memory).
    auto job_geometry = [&] {
      PlaneGeometry geo = lags;
      if (!inverse) {  // (the inverse job's pair index is past the slot's pairs)
        const PlaneGeometry xs = geos.x(image), ds = geos.dy(image);
        geo.src_h = dy_job ? ds.src_h : xs.src_h;
        geo.off_h = dy_job ? ds.off_h : xs.off_h;
        geo.step_h = dy_job ? ds.step_h : xs.step_h;
      }
      return geo;
    };
    // A slot of one pair inverts its product where it stands: no sum to keep in acc.
    const bool one_pair = jobs_images == 1;
    const bool rows = sum_rows && !one_pair;  // the products' kept rows summed
    ex.each([&](int t, L&) {
      if (!on) return;
      if (inverse) {
        if (rows) {
          move_read_rows<F>(t, spec, acc, lags, true, false);
        } else if (!one_pair) {
          move_spectrum<F>(t, acc, spec, false);
        }
      } else if (dy_job) {
        stage_source<F>(t, buf, geos.dy(image), copy_dy(image));
      } else {
        stage_source<F>(t, buf, geos.x(image), copy_x(image));
      }
    });
    ex.sync();
    const int first = inverse ? (rows ? kRowsInverse : kColsInverse) : kRowsForward;
    const int last = inverse || (rows && !dy_job) ? (inverse ? kRowsInverse : kColsInverse)
                                                  : kColsForward;
#if defined(__CUDA_ARCH__)
#pragma unroll 1
#endif
    for (int step = first; step <= last; ++step) {
      ex.each([&](int t, L& l) { step_transform<F>(step, t, buf, job_geometry(), l); });
      ex.sync();
      ex.each([&](int t, L& l) { step_store<F>(step, t, buf, job_geometry(), l); });
      ex.sync();
      if (!inverse && !dy_job && step == kColsForward) {
        ex.each([&](int t, L&) {
          if (on) cols_product<F>(t, spec, g);
        });
        ex.sync();
      }
    }
    if (!inverse && !dy_job && one_pair) continue;  // its product waits for the inverse job
    ex.each([&](int t, L&) {
      if (!on) return;
      if (inverse) {
        store_output<F>(t, buf, lags, store);
      } else if (dy_job) {
        filter_spectrum_out<F>(t, spec, g, true, scale);
      } else if (rows) {
        move_read_rows<F>(t, spec, acc, lags, false, image > 0);
      } else {
        move_spectrum<F>(t, spec, acc, image > 0);
      }
    });
    ex.sync();
  }
}

}  // namespace fftconv::detail::fused
