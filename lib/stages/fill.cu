#include "stages/fill.h"

#include <algorithm>

#include "core/check.h"
#include "stages/dtype_convert.cuh"

namespace fftconv::detail {

namespace {
constexpr int kThreads = 256;
constexpr std::int64_t kMaxBlocks = 8192;

__device__ __forceinline__ std::uint64_t splitmix64(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

template <typename T>
__global__ void fill_uniform_kernel(T* dst, std::int64_t count, std::uint64_t seed) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * kThreads + threadIdx.x; i < count;
       i += std::int64_t(gridDim.x) * kThreads) {
    const std::uint64_t bits = splitmix64(seed ^ splitmix64(static_cast<std::uint64_t>(i)));
    const float u = static_cast<float>(bits >> 40) * (1.0f / 16777216.0f);  // [0, 1)
    dst[i] = from_float<T>(2.0f * u - 1.0f);
  }
}
}  // namespace

void launch_fill_uniform(void* dst, std::int64_t count, DType dtype, std::uint64_t seed,
                         cudaStream_t stream) {
  if (count <= 0) return;
  const auto blocks =
      static_cast<unsigned>(std::min<std::int64_t>(kMaxBlocks, (count + kThreads - 1) / kThreads));
  switch (dtype) {
    case DType::kF32:
      fill_uniform_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<float*>(dst), count, seed);
      break;
    case DType::kF16:
      fill_uniform_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<__half*>(dst), count, seed);
      break;
    case DType::kBF16:
      fill_uniform_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<__nv_bfloat16*>(dst), count,
                                                           seed);
      break;
  }
  FFTCONV_CHECK_LAUNCH();
}

}  // namespace fftconv::detail
