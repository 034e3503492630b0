#include "stages/bias.h"

#include <algorithm>

#include "core/check.h"
#include "stages/dtype_convert.cuh"

namespace fftconv::detail {

namespace {
constexpr int kThreads = 256;
constexpr std::int64_t kMaxRows = 65535;

// Block (row, z): row = i * k + j of the n * k planes, z strides through further rows; the
// threads stride along the plane.
template <typename T>
__global__ void add_bias_kernel(T* __restrict__ y, const T* __restrict__ bias, std::int64_t rows,
                                std::int64_t k, std::int64_t plane) {
  for (std::int64_t row = blockIdx.x + std::int64_t(blockIdx.y) * gridDim.x; row < rows;
       row += std::int64_t(gridDim.x) * gridDim.y) {
    const float b = to_float(bias[row % k]);
    T* p = y + row * plane;
    for (std::int64_t e = threadIdx.x; e < plane; e += kThreads) {
      p[e] = from_float<T>(to_float(p[e]) + b);
    }
  }
}

template <typename T>
void add_bias(void* y, const void* bias, std::int64_t n, std::int64_t k, std::int64_t plane,
              cudaStream_t stream) {
  const std::int64_t rows = n * k;
  const dim3 grid(static_cast<unsigned>(std::min(rows, kMaxRows)),
                  static_cast<unsigned>(std::min<std::int64_t>(64, (rows + kMaxRows - 1) / kMaxRows)));
  add_bias_kernel<<<grid, kThreads, 0, stream>>>(static_cast<T*>(y), static_cast<const T*>(bias),
                                                 rows, k, plane);
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
