// Tensor elements on the host as fp32: the one decoding of fp16 and bf16 bits that the library
// (a kept filter read back for its factors) and the test oracles share.
#pragma once

#include <cstddef>

#include "fftconv/conv_desc.hpp"

namespace fftconv::detail {

/// `count` elements of `dtype` at `data` (host memory) as fp32 into `out`; fp16 and bf16 convert
/// exactly.
void decode_to_float(const void* data, std::size_t count, DType dtype, float* out);

}  // namespace fftconv::detail
