#include "reference/reference.h"

#include "reference/direct_output.h"

#include <algorithm>
#include <vector>

namespace fftconv::reference {

void conv2d_forward_host(const ConvDesc& d, const float* x, const float* w, const float* bias,
                         double* y) {
  const std::int64_t ho = d.out_h(), wo = d.out_w();
  for (std::int64_t n = 0; n < d.n; ++n) {
    for (std::int64_t k = 0; k < d.k; ++k) {
      for (std::int64_t p = 0; p < ho; ++p) {
        for (std::int64_t q = 0; q < wo; ++q) {
          y[((n * d.k + k) * ho + p) * wo + q] = direct_output(d, x, w, bias, n, k, p, q);
        }
      }
    }
  }
}

namespace {
// A kernel tap and the output position whose window puts that tap on a given input position.
struct Tap {
  std::int64_t k;    // r (or s)
  std::int64_t out;  // p (or q)
};

// For every input position i along one axis, the (tap, output) pairs with
// out*stride + tap*dil - pad == i: only those contribute to dx at i.
std::vector<std::vector<Tap>> taps_per_input(std::int64_t in, std::int64_t out, std::int64_t taps,
                                             std::int64_t pad, std::int64_t stride,
                                             std::int64_t dil) {
  std::vector<std::vector<Tap>> t(static_cast<std::size_t>(in));
  for (std::int64_t i = 0; i < in; ++i) {
    for (std::int64_t k = 0; k < taps; ++k) {
      const std::int64_t num = i + pad - k * dil;
      if (num < 0 || num % stride != 0 || num / stride >= out) continue;
      t[i].push_back({k, num / stride});
    }
  }
  return t;
}
}  // namespace

namespace {
// dx with a border other than zeros: every (output, tap) pair adds dy * w to the input element
// its position holds (bordered_source), a scatter in the order n, k, p, q, c, r, s.
void backward_data_bordered(const ConvDesc& d, const float* dy, const float* w, double* dx) {
  const std::int64_t ho = d.out_h(), wo = d.out_w(), cg = d.c_per_group(), kg = d.k_per_group();
  std::fill(dx, dx + d.x_elems(), 0.0);
  for (std::int64_t n = 0; n < d.n; ++n) {
    for (std::int64_t k = 0; k < d.k; ++k) {
      const std::int64_t g = k / kg;
      for (std::int64_t p = 0; p < ho; ++p) {
        for (std::int64_t q = 0; q < wo; ++q) {
          const double g_out = dy[((n * d.k + k) * ho + p) * wo + q];
          for (std::int64_t cc = 0; cc < cg; ++cc) {
            double* dxp = dx + (n * d.c + g * cg + cc) * d.h * d.w;
            const float* wp = w + (k * cg + cc) * d.r * d.s;
            for (std::int64_t r = 0; r < d.r; ++r) {
              const std::int64_t ih =
                  bordered_source(p * d.stride_h + r * d.dil_h - d.pad_h, d.h, d.border);
              for (std::int64_t s = 0; s < d.s; ++s) {
                const std::int64_t iw =
                    bordered_source(q * d.stride_w + s * d.dil_w - d.pad_w, d.w, d.border);
                dxp[ih * d.w + iw] += g_out * double(wp[r * d.s + s]);
              }
            }
          }
        }
      }
    }
  }
}
}  // namespace

void conv2d_backward_data_host(const ConvDesc& d, const float* dy, const float* w, double* dx) {
  if (d.border != Border::kZero) {
    backward_data_bordered(d, dy, w, dx);
    return;
  }
  const std::int64_t ho = d.out_h(), wo = d.out_w(), cg = d.c_per_group(), kg = d.k_per_group();
  const auto rows = taps_per_input(d.h, ho, d.r, d.pad_h, d.stride_h, d.dil_h);
  const auto cols = taps_per_input(d.w, wo, d.s, d.pad_w, d.stride_w, d.dil_w);
  for (std::int64_t n = 0; n < d.n; ++n) {
    for (std::int64_t c = 0; c < d.c; ++c) {
      const std::int64_t g = c / cg, cc = c % cg;
      for (std::int64_t i = 0; i < d.h; ++i) {
        for (std::int64_t j = 0; j < d.w; ++j) {
          double acc = 0.0;
          for (std::int64_t kk = 0; kk < kg; ++kk) {
            const std::int64_t k = g * kg + kk;
            const float* dyp = dy + (n * d.k + k) * ho * wo;
            const float* wp = w + (k * cg + cc) * d.r * d.s;
            for (const Tap& rp : rows[i]) {
              for (const Tap& sq : cols[j]) {
                acc += double(dyp[rp.out * wo + sq.out]) * double(wp[rp.k * d.s + sq.k]);
              }
            }
          }
          dx[((n * d.c + c) * d.h + i) * d.w + j] = acc;
        }
      }
    }
  }
}

void conv2d_backward_filter_host(const ConvDesc& d, const float* x, const float* dy, double* dw) {
  const std::int64_t ho = d.out_h(), wo = d.out_w(), cg = d.c_per_group(), kg = d.k_per_group();
  for (std::int64_t k = 0; k < d.k; ++k) {
    const std::int64_t g = k / kg;
    for (std::int64_t cc = 0; cc < cg; ++cc) {
      const std::int64_t c = g * cg + cc;
      for (std::int64_t r = 0; r < d.r; ++r) {
        for (std::int64_t s = 0; s < d.s; ++s) {
          double acc = 0.0;
          for (std::int64_t n = 0; n < d.n; ++n) {
            const float* xp = x + (n * d.c + c) * d.h * d.w;
            const float* dyp = dy + (n * d.k + k) * ho * wo;
            for (std::int64_t p = 0; p < ho; ++p) {
              const std::int64_t ih =
                  bordered_source(p * d.stride_h + r * d.dil_h - d.pad_h, d.h, d.border);
              if (ih < 0) continue;
              for (std::int64_t q = 0; q < wo; ++q) {
                const std::int64_t iw =
                    bordered_source(q * d.stride_w + s * d.dil_w - d.pad_w, d.w, d.border);
                if (iw < 0) continue;
                acc += double(xp[ih * d.w + iw]) * double(dyp[p * wo + q]);
              }
            }
          }
          dw[((k * cg + cc) * d.r + r) * d.s + s] = acc;
        }
      }
    }
  }
}

}  // namespace fftconv::reference
