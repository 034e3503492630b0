// One output element of the direct convolution in fp64: the definition both oracles (host and
// device) evaluate, written plainly from the formula of F.conv2d, independent of the FFT code.
#pragma once

#include <cstdint>

#include "fftconv/conv_desc.hpp"

#if defined(__CUDACC__)
#define FFTCONV_REF_HD __host__ __device__
#else
#define FFTCONV_REF_HD
#endif

namespace fftconv::reference {

/// The input index position i of an axis of extent n holds under border b, or -1 for a zero:
/// the definitions of ConvDesc::border as walks back into the plane, written apart from the
/// engine's closed forms (lib/geometry/index_math.h).
FFTCONV_REF_HD inline std::int64_t bordered_source(std::int64_t i, std::int64_t n, Border b) {
  if (i >= 0 && i < n) return i;
  switch (b) {
    case Border::kReplicate:
      return i < 0 ? 0 : n - 1;
    case Border::kCircular:
      while (i < 0) i += n;
      while (i >= n) i -= n;
      return i;
    case Border::kReflect:
      if (n == 1) return 0;
      while (i < 0 || i >= n) i = i < 0 ? -i : 2 * (n - 1) - i;  // mirror about the edge pixel
      return i;
    default:
      return -1;
  }
}

/// y[n, k, p, q] = bias[k] + sum over c of the group, r, s of x[n, c, ih, iw] * w[k, c', r, s],
/// with ih = p*sh + r*dh - ph and iw = q*sw + s*dw - pw inside the input (outside: zero padding,
/// or the input continued by d.border).
FFTCONV_REF_HD inline double direct_output(const ConvDesc& d, const float* x, const float* w,
                                           const float* bias, std::int64_t n, std::int64_t k,
                                           std::int64_t p, std::int64_t q) {
  const std::int64_t cg = d.c / d.groups, kg = d.k / d.groups;
  const std::int64_t g = k / kg;
  double acc = bias ? double(bias[k]) : 0.0;
  for (std::int64_t cc = 0; cc < cg; ++cc) {
    const float* xp = x + (n * d.c + g * cg + cc) * d.h * d.w;
    const float* wp = w + (k * cg + cc) * d.r * d.s;
    for (std::int64_t r = 0; r < d.r; ++r) {
      const std::int64_t ih = bordered_source(p * d.stride_h + r * d.dil_h - d.pad_h, d.h, d.border);
      if (ih < 0) continue;
      for (std::int64_t s = 0; s < d.s; ++s) {
        const std::int64_t iw =
            bordered_source(q * d.stride_w + s * d.dil_w - d.pad_w, d.w, d.border);
        if (iw < 0) continue;
        acc += double(xp[ih * d.w + iw]) * double(wp[r * d.s + s]);
      }
    }
  }
  return acc;
}

}  // namespace fftconv::reference
