// The sum of a pass's partial results (the fused and direct backward filters split a filter's
// reduction over the batch between blocks, each writing an fp32 partial): out = alpha * (the
// parts summed in part order, so the result does not depend on the blocks' timing) + beta * out.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "fftconv/conv_desc.hpp"

namespace fftconv::detail {

/// out[e] = alpha * sum_{j < parts} partial[j * elems + e] + beta * out[e] for e < elems, out in
/// `out_dtype` (beta 0: out is not read). With `dependent`, the kernel is launched as the
/// programmatic dependent of the kernel before it on the stream (sm_90: that kernel allows it)
/// and waits for that grid before it reads.
void launch_partial_sum(const float* partial, int parts, std::int64_t elems, void* out,
                        DType out_dtype, float alpha, float beta, cudaStream_t stream,
                        bool dependent = false);

/// Whether the partial sum may be launched as a programmatic dependent on the current device:
/// the device runs such launches and the sum kernel was compiled with its wait (plan time).
bool partial_sum_can_be_dependent();

}  // namespace fftconv::detail
