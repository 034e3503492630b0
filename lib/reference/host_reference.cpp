#include "reference/reference.h"

namespace fftconv::reference {

void conv2d_forward_host(const ConvDesc& d, const float* x, const float* w, const float* bias,
                         double* y) {
  const std::int64_t ho = d.out_h(), wo = d.out_w(), cg = d.c_per_group(), kg = d.k_per_group();
  for (std::int64_t n = 0; n < d.n; ++n) {
    for (std::int64_t k = 0; k < d.k; ++k) {
      const std::int64_t g = k / kg;
      for (std::int64_t p = 0; p < ho; ++p) {
        for (std::int64_t q = 0; q < wo; ++q) {
          double acc = bias ? double(bias[k]) : 0.0;
          for (std::int64_t cc = 0; cc < cg; ++cc) {
            const std::int64_t c = g * cg + cc;
            for (std::int64_t r = 0; r < d.r; ++r) {
              const std::int64_t ih = p * d.stride_h + r * d.dil_h - d.pad_h;
              if (ih < 0 || ih >= d.h) continue;
              for (std::int64_t s = 0; s < d.s; ++s) {
                const std::int64_t iw = q * d.stride_w + s * d.dil_w - d.pad_w;
                if (iw < 0 || iw >= d.w) continue;
                acc += double(x[((n * d.c + c) * d.h + ih) * d.w + iw]) *
                       double(w[((k * cg + cc) * d.r + r) * d.s + s]);
              }
            }
          }
          y[((n * d.k + k) * ho + p) * wo + q] = acc;
        }
      }
    }
  }
}

}  // namespace fftconv::reference
