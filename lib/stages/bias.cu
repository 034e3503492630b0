#include "stages/bias.h"

#include <algorithm>

#include "core/check.h"
#include "stages/dtype_convert.cuh"

namespace fftconv::detail {

namespace {
constexpr int kThreads = 256;
constexpr int kPerThread = 4;  // elements per thread and chunk: a few loads in flight each
constexpr std::int64_t kChunk = std::int64_t(kThreads) * kPerThread;
constexpr std::int64_t kMaxGridY = 65535;

// Block (x, y): chunk x of row y (row = i * k + j of the n * k planes), both striding on by the
// grid, so a few large planes spread over many blocks as well as many small ones do.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    add_bias_kernel(T* __restrict__ y, const T* __restrict__ bias, std::int64_t rows,
                    std::int64_t k, std::int64_t plane) {
  for (std::int64_t row = blockIdx.y; row < rows; row += gridDim.y) {
    const float b = to_float(bias[row % k]);
    T* p = y + row * plane;
    for (std::int64_t base = std::int64_t(blockIdx.x) * kChunk; base < plane;
         base += std::int64_t(gridDim.x) * kChunk) {
      float v[kPerThread];
#pragma unroll
      for (int u = 0; u < kPerThread; ++u) {
        const std::int64_t e = base + u * kThreads + threadIdx.x;
        v[u] = e < plane ? to_float(p[e]) : 0.0f;
      }
#pragma unroll
      for (int u = 0; u < kPerThread; ++u) {
        const std::int64_t e = base + u * kThreads + threadIdx.x;
        if (e < plane) p[e] = from_float<T>(v[u] + b);
      }
    }
  }
}

template <typename T>
void add_bias(void* y, const void* bias, std::int64_t n, std::int64_t k, std::int64_t plane,
              cudaStream_t stream) {
  const std::int64_t rows = n * k;
  const std::int64_t chunks = (plane + kChunk - 1) / kChunk;
  // About 64K blocks at most: enough to fill the device, few enough to launch cheaply.
  const std::int64_t grid_y = std::min(rows, kMaxGridY);
  const std::int64_t grid_x = std::max<std::int64_t>(1, std::min(chunks, 65536 / grid_y));
  add_bias_kernel<<<dim3(static_cast<unsigned>(grid_x), static_cast<unsigned>(grid_y)), kThreads, 0,
                    stream>>>(static_cast<T*>(y), static_cast<const T*>(bias), rows, k, plane);
}
}  // namespace

void launch_add_bias(void* y, const void* bias, std::int64_t n, std::int64_t k, std::int64_t plane,
                     DType dtype, cudaStream_t stream) {
  if (n <= 0 || k <= 0 || plane <= 0) return;
  switch (dtype) {
    case DType::kF32:
      add_bias<float>(y, bias, n, k, plane, stream);
      break;
    case DType::kF16:
      add_bias<__half>(y, bias, n, k, plane, stream);
      break;
    case DType::kBF16:
      add_bias<__nv_bfloat16>(y, bias, n, k, plane, stream);
      break;
  }
  FFTCONV_CHECK_LAUNCH();
}

}  // namespace fftconv::detail
