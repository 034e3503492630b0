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

/// y[n, k, p, q] = bias[k] + sum over c of the group, r, s of x[n, c, ih, iw] * w[k, c', r, s],
/// with ih = p*sh + r*dh - ph and iw = q*sw + s*dw - pw inside the input (zero padding outside).
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
      const std::int64_t ih = p * d.stride_h + r * d.dil_h - d.pad_h;
      if (ih < 0 || ih >= d.h) continue;
      for (std::int64_t s = 0; s < d.s; ++s) {
        const std::int64_t iw = q * d.stride_w + s * d.dil_w - d.pad_w;
        if (iw < 0 || iw >= d.w) continue;
        acc += double(xp[ih * d.w + iw]) * double(wp[r * d.s + s]);
      }
    }
  }
  return acc;
}

}  // namespace fftconv::reference
