// Index math shared by the device stages (pad, clip) and the CPU tests that check it.
#pragma once

#include <cstdint>

#include "fftconv/conv_desc.hpp"

#if defined(__CUDACC__)
#define FFTCONV_HD __host__ __device__ __forceinline__
#else
#define FFTCONV_HD inline
#endif
// Full unrolling of a loop over a register array on the device (a runtime index would put the
// array in local memory); host code needs no hint.
#if defined(__CUDA_ARCH__)
#define FFTCONV_UNROLL _Pragma("unroll")
#else
#define FFTCONV_UNROLL
#endif

namespace fftconv::detail {

/// How a source plane of src_h x src_w lands in a zero-filled FFT plane: element (i, j) goes to
/// (off_h + i*step_h, off_w + j*step_w) when that is inside fft_h x fft_w. The input uses the
/// padding as offset and step 1; the filter uses offset 0 and the dilation as step.
struct Placement {
  std::int64_t src_h, src_w;
  std::int64_t off_h, off_w;
  std::int64_t step_h, step_w;
};

/// How destination planes of the pad stage map to source planes and tiles. Destination plane p is
/// ((image * tiles + tile) * inner + channel), tile = tile_h * tiles_w + tile_w; its source plane
/// is (image * inner + channel), placed `step` padded rows/columns further per tile. A segment
/// without tiling (filters, or a full-image input) has one tile and step 0.
struct TileMap {
  std::int64_t inner = 1;
  std::int64_t tiles_h = 1, tiles_w = 1;
  std::int64_t step_h = 0, step_w = 0;
};

struct PlaneSource {
  std::int64_t plane;         ///< source plane index
  std::int64_t off_h, off_w;  ///< placement offsets for this tile (may be negative)
};

/// The index helpers below compute in 64 bits unless a caller names a narrower type, as the
/// device stages do inside one plane (`placed_source<int>(...)`); the type is never deduced.
template <typename T>
struct IndexType {
  using type = T;
};
template <typename I>
using index_t = typename IndexType<I>::type;

/// The value of a divisor: an integer, or (device stages) an IntDivider, whose overload
/// int_divider.h adds.
FFTCONV_HD std::int64_t divisor_value(std::int64_t d) { return d; }

/// Source plane and tile offsets of destination plane dst_plane. The divisors (tiles * inner,
/// inner, tiles_w) come as values the caller divides by: integers, or IntDividers on the device.
template <typename I = std::int64_t, typename Div = index_t<I>>
FFTCONV_HD PlaneSource pad_plane_source(index_t<I> dst_plane, const TileMap& m, std::int64_t off_h,
                                        std::int64_t off_w, const Div& per_image, const Div& inner,
                                        const Div& tiles_w) {
  const I image = dst_plane / per_image, rest = dst_plane % per_image;
  const I tile = rest / inner, channel = rest % inner;
  const I th = tile / tiles_w, tw = tile % tiles_w;
  return PlaneSource{static_cast<std::int64_t>(image) * m.inner + channel, off_h - th * m.step_h,
                     off_w - tw * m.step_w};
}

FFTCONV_HD PlaneSource pad_plane_source(std::int64_t dst_plane, const TileMap& m,
                                        std::int64_t off_h, std::int64_t off_w) {
  return pad_plane_source(dst_plane, m, off_h, off_w, m.tiles_h * m.tiles_w * m.inner, m.inner,
                          m.tiles_w);
}

/// Result plane (of the c2r) holding output plane `out_plane` = n*k + kk at tile (th, tw); k is
/// an integer or an IntDivider.
template <typename I = std::int64_t, typename K = index_t<I>>
FFTCONV_HD std::int64_t clip_plane_source(index_t<I> out_plane, const K& k, std::int64_t tiles,
                                          std::int64_t tile) {
  const I n = out_plane / k, kk = out_plane % k;
  return (static_cast<std::int64_t>(n) * tiles + tile) * divisor_value(k) + kk;
}

/// Source index along one axis for FFT coordinate t, or -1 when (t) holds a zero.
/// step is an integer or (device stages) an IntDivider.
template <typename I = std::int64_t, typename Step = index_t<I>>
FFTCONV_HD I placed_source(index_t<I> t, index_t<I> off, const Step& step, index_t<I> src) {
  const I u = t - off;
  if (u < 0) return -1;
  if (step == 1) return u < src ? u : -1;
  if (u % step != 0) return -1;
  const I i = u / step;
  return i < src ? i : -1;
}

/// FFT coordinate the clip stage reads for output index p: the stride-1 position p*stride taken
/// modulo the period. With a period below the output extent (wide padding around a small
/// kernel), outputs past the period are the circular result at the wrapped position, which the
/// size rule below keeps equal to the linear one.
FFTCONV_HD std::int64_t clip_source(std::int64_t p, std::int64_t stride, std::int64_t period) {
  const std::int64_t t = p * stride;
  return t < period ? t : t % period;
}

/// FFT coordinate a clip stage reads for output index p: off + p*stride, or past the period the
/// wrapped position (wrap, the forward pass: see clip_source) or -1, a zero (backward data).
///
/// Backward data with the forward pass's period F (min_fft_extent): dx_pad = dy_up (*) w_dil, a
/// convolution whose linear support is [0, hi). Reading u = i + pad < F, the circular result
/// adds the linear one at u + F >= pad + F >= hi: zero. Past the period (u >= F) the true value
/// is zero too: F < pad + in there, so F >= hi. The pad stage drops dy rows at t >= F instead of
/// wrapping them; they only reach u >= t >= F. Backward filter reads j = r*dil < eff_k <= F.
template <typename I = std::int64_t>
FFTCONV_HD I clip_read(index_t<I> p, index_t<I> stride, index_t<I> off, index_t<I> period,
                       bool wrap) {
  const I t = off + p * stride;
  if (t < period) return t;
  return wrap ? t % period : -1;
}

/// Smallest circular period that reproduces the linear correlation on every output kept.
///
/// The output reads padded positions [0, hi) with hi = (out-1)*stride + eff_k; data occupies
/// [pad, pad+in). With period F the read at t >= F lands on t-F: it must hit a leading zero
/// (t-F < pad), so F >= hi - pad. Data rows needed (< hi) must not wrap: F >= min(pad+in, hi).
/// The dilated filter must not wrap onto itself: F >= eff_k. This is at most in + 2*pad.
FFTCONV_HD std::int64_t min_fft_extent(std::int64_t in, std::int64_t pad, std::int64_t eff_k,
                                       std::int64_t stride, std::int64_t out) {
  const std::int64_t hi = (out - 1) * stride + eff_k;
  const std::int64_t data_end = (pad + in < hi) ? pad + in : hi;
  std::int64_t f = eff_k;
  if (data_end > f) f = data_end;
  if (hi - pad > f) f = hi - pad;
  return f;
}

// ---- borders (ConvDesc::border) ---------------------------------------------------------------

/// The index into [0, n) whose value position i (any integer) of an axis of extent n holds
/// under border b, or -1 where it holds a zero (Border::kZero outside [0, n)). Reflect mirrors
/// about the edge pixels with period 2(n - 1) (n == 1: 0); replicate clamps; circular wraps.
template <typename I = std::int64_t>
FFTCONV_HD I border_index(index_t<I> i, index_t<I> n, Border b) {
  if (i >= 0 && i < n) return i;
  switch (b) {
    case Border::kReflect: {
      if (n == 1) return 0;
      const I period = 2 * (n - 1);
      I m = i % period;
      if (m < 0) m += period;
      return m < n ? m : period - m;
    }
    case Border::kReplicate:
      return i < 0 ? 0 : n - 1;
    case Border::kCircular: {
      const I m = i % n;
      return m < 0 ? m + n : m;
    }
    default:
      return -1;
  }
}

/// The positions u in [-pad, n + pad) of an axis that border b maps to index i (the adjoint of
/// border_index, which the backward-data pass of a bordered problem sums over): at most two
/// arithmetic progressions, u = first + t * step for t < count, and first2 + t * step for
/// t < count2.
template <typename I = std::int64_t>
struct BorderPreimages {
  I first = 0, step = 1, count = 0, first2 = 0, count2 = 0;
};

namespace border_detail {
/// First u >= lo with u = a (mod m), and how many such u lie below hi.
template <typename I>
FFTCONV_HD void progression(I a, I m, I lo, I hi, I* first, I* count) {
  I r = (a - lo) % m;
  if (r < 0) r += m;
  *first = lo + r;
  *count = *first < hi ? (hi - 1 - *first) / m + 1 : 0;
}
}  // namespace border_detail

template <typename I = std::int64_t>
FFTCONV_HD BorderPreimages<I> border_preimages(index_t<I> i, index_t<I> n, index_t<I> pad,
                                                Border b) {
  BorderPreimages<I> p;
  const I lo = -pad, hi = n + pad;
  if (b == Border::kZero) {
    p.first = i;
    p.count = 1;
  } else if (n == 1) {  // every position holds the one element
    p.first = lo;
    p.count = hi - lo;
  } else if (b == Border::kReplicate) {
    p.first = i == 0 ? lo : i;
    p.count = (i == 0 || i == n - 1) ? pad + 1 : 1;
  } else if (b == Border::kCircular) {
    p.step = n;
    border_detail::progression<I>(i, n, lo, hi, &p.first, &p.count);
  } else {  // reflect: u = i or u = -i modulo 2(n - 1), one progression at the edge pixels
    p.step = 2 * (n - 1);
    border_detail::progression<I>(i, p.step, lo, hi, &p.first, &p.count);
    if (i != 0 && i != n - 1) {
      border_detail::progression<I>(-i, p.step, lo, hi, &p.first2, &p.count2);
    }
  }
  return p;
}

}  // namespace fftconv::detail
