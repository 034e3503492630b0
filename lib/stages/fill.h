// Deterministic pseudo-random fill on the device (search buffers, poison-free timing inputs).
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "fftconv/conv_desc.hpp"

namespace fftconv::detail {

/// Fills `count` elements of `dtype` with values uniform in [-1, 1) derived from (seed, index).
void launch_fill_uniform(void* dst, std::int64_t count, DType dtype, std::uint64_t seed,
                         cudaStream_t stream);

}  // namespace fftconv::detail
