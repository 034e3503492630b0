#include "stages/partial_sum.h"

#include <algorithm>

#include "core/check.h"
#include "core/launch.cuh"
#include "stages/dtype_convert.cuh"

namespace fftconv::detail {

namespace {

// (plain loads of the partials, not the read-only path: as a dependent the kernel starts while
// the kernel that writes them may still run, and reads them only after its wait.)
__global__ void partial_sum_kernel(const float* partial, int parts, std::int64_t elems,
                                   void* out, DType out_dtype, float alpha, float beta) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");  // returns at once without a primary
#endif
  for (std::int64_t e = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; e < elems;
       e += std::int64_t(gridDim.x) * blockDim.x) {
    float sum = 0.0f;
    for (int j = 0; j < parts; ++j) sum += partial[j * elems + e];
    float r = alpha * sum;
    if (beta != 0.0f) r += beta * load_element(out, out_dtype, e);
    store_element(out, out_dtype, e, r);
  }
}

}  // namespace

void launch_partial_sum(const float* partial, int parts, std::int64_t elems, void* out,
                        DType out_dtype, float alpha, float beta, cudaStream_t stream,
                        bool dependent) {
  if (elems <= 0) return;
  constexpr int kThreads = 256;
  const auto blocks =
      static_cast<unsigned>(std::min<std::int64_t>((elems + kThreads - 1) / kThreads, 4096));
  launch_kernel(dependent, dim3(blocks), dim3(kThreads), 0, stream, partial_sum_kernel, partial,
                parts, elems, out, out_dtype, alpha, beta);
  FFTCONV_CHECK_LAUNCH();
}

bool partial_sum_can_be_dependent() {
  return can_launch_dependent(reinterpret_cast<const void*>(partial_sum_kernel));
}

}  // namespace fftconv::detail
