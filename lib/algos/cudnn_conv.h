// cuDNN convolution, every pass: the fallback for small kernels and the baseline we compare
// against.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "algos/algo.h"

namespace fftconv::detail {

/// True when the library was built with FFTCONV_WITH_CUDNN.
bool cudnn_available();

/// Checks, without touching the GPU, that cuDNN's 32-bit descriptors hold the sizes and that the
/// options are something cuDNN computes (no fp32 dw for half data).
Support cudnn_can_implement(const ConvDesc& d, const Options& o);

/// Builds the cuDNN path of Options::pass: descriptors, a handle, and the algorithm (forced by
/// Options::cudnn_algo, timed with cudnnFindConvolution*AlgorithmEx or taken from the v7
/// heuristics, per Options). Strict fp32 (CUDNN_FMA_MATH) unless options.allow_tf32 or the data
/// is fp16/bf16.
std::unique_ptr<ConvAlgo> make_cudnn(const ConvDesc& d, const Options& o);

/// cuDNN's algorithm names for a pass (e.g. "IMPLICIT_PRECOMP_GEMM", "FFT_TILING"); empty
/// without cuDNN.
std::vector<std::string> cudnn_algos(Pass pass);

}  // namespace fftconv::detail
