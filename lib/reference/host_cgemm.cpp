#include "reference/reference.h"

namespace fftconv::reference {

void cgemm_host(const detail::CgemmProblem& p, const std::complex<float>* a,
                const std::complex<float>* b, float alpha, std::complex<double>* c) {
  for (std::int64_t g = 0; g < p.groups; ++g)
    for (std::int64_t m = 0; m < p.m; ++m)
      for (std::int64_t n = 0; n < p.n; ++n)
        for (std::int64_t f = 0; f < p.bins; ++f) {
          std::complex<double> acc = 0.0;
          for (std::int64_t k = 0; k < p.k; ++k) {
            std::complex<double> x = a[g * p.a_g + m * p.a_m + k * p.a_k + f];
            std::complex<double> y = b[g * p.b_g + n * p.b_n + k * p.b_k + f];
            if (p.conj_a) x = std::conj(x);
            if (p.conj_b) y = std::conj(y);
            acc += x * y;
          }
          c[g * p.c_g + m * p.c_m + n * p.c_n + f] = double(alpha) * acc;
        }
}

}  // namespace fftconv::reference
