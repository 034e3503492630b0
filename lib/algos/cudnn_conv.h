// cuDNN forward convolution: the fallback for small kernels and the baseline we compare against.
#pragma once

#include <memory>

#include "algos/algo.h"

namespace fftconv::detail {

/// True when the library was built with FFTCONV_WITH_CUDNN.
bool cudnn_available();

/// Checks that cuDNN's 32-bit descriptors can hold the sizes, without touching the GPU.
Support cudnn_can_implement(const ConvDesc& d);

/// Builds the cuDNN path: descriptors, a handle, and the algorithm (timed with
/// cudnnFindConvolutionForwardAlgorithmEx or taken from the v7 heuristics, per Options).
/// Strict fp32 (CUDNN_FMA_MATH) unless options.allow_tf32 or the data is fp16/bf16.
std::unique_ptr<ConvAlgo> make_cudnn_forward(const ConvDesc& d, const Options& o);

}  // namespace fftconv::detail
