// Per-channel bias of NCHW tensors, for paths whose library computes the convolution without it
// (cuDNN's).
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "fftconv/conv_desc.hpp"

namespace fftconv::detail {

/// y[i, j, p] += bias[j] for i < n, j < k, p < plane; y and bias of `dtype` (fp32 math, one
/// rounding to the dtype per element).
void launch_add_bias(void* y, const void* bias, std::int64_t n, std::int64_t k, std::int64_t plane,
                     DType dtype, cudaStream_t stream);

}  // namespace fftconv::detail
