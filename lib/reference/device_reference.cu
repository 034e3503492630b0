#include <stdexcept>
#include <string>

#include "reference/reference.h"

namespace fftconv::reference {

namespace {
constexpr int kThreads = 256;

// One thread per output element, consecutive threads along q: x loads coalesce, w loads broadcast.
__global__ void conv2d_forward_kernel(ConvDesc d, const float* __restrict__ x,
                                      const float* __restrict__ w, const float* __restrict__ bias,
                                      double* __restrict__ y, std::int64_t total, std::int64_t ho,
                                      std::int64_t wo) {
  const std::int64_t cg = d.c / d.groups, kg = d.k / d.groups;
  for (std::int64_t i = std::int64_t(blockIdx.x) * kThreads + threadIdx.x; i < total;
       i += std::int64_t(gridDim.x) * kThreads) {
    const std::int64_t q = i % wo;
    const std::int64_t p = (i / wo) % ho;
    const std::int64_t k = (i / (wo * ho)) % d.k;
    const std::int64_t n = i / (wo * ho * d.k);
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
          acc = fma(double(xp[ih * d.w + iw]), double(wp[r * d.s + s]), acc);
        }
      }
    }
    y[i] = acc;
  }
}
}  // namespace

void conv2d_forward_device(const ConvDesc& d, const float* x, const float* w, const float* bias,
                           double* y, cudaStream_t stream) {
  const std::int64_t total = d.y_elems();
  const std::int64_t blocks64 = (total + kThreads - 1) / kThreads;
  const unsigned blocks = static_cast<unsigned>(blocks64 < 1048576 ? blocks64 : 1048576);
  conv2d_forward_kernel<<<blocks, kThreads, 0, stream>>>(d, x, w, bias, y, total, d.out_h(),
                                                                d.out_w());
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    throw std::runtime_error(std::string("reference kernel launch failed: ") +
                             cudaGetErrorString(err));
  }
}

}  // namespace fftconv::reference
