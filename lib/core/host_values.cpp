#include "core/host_values.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstring>

namespace fftconv::detail {

void decode_to_float(const void* data, std::size_t count, DType dtype, float* out) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  switch (dtype) {
    case DType::kF32:
      std::memcpy(out, bytes, count * sizeof(float));
      return;
    case DType::kF16:
      for (std::size_t i = 0; i < count; ++i) {
        __half h;
        std::memcpy(&h, bytes + i * 2, 2);
        out[i] = __half2float(h);
      }
      return;
    case DType::kBF16:
      for (std::size_t i = 0; i < count; ++i) {
        __nv_bfloat16 b;
        std::memcpy(&b, bytes + i * 2, 2);
        out[i] = __bfloat162float(b);
      }
      return;
  }
}

}  // namespace fftconv::detail
