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

/// cuDNN's numbers for the algorithms below (checked against cudnn.h where cuDNN is built in).
constexpr int kCudnnBwdDataAlgo1 = 1;
constexpr int kCudnnBwdFilterAlgo1 = 1;

/// True for an algorithm every search leaves out (it stays available by name): backward data
/// ALGO_1 on planes of 1024x1024 and more with filters of 32x32 and more. A single run of it did
/// not finish within 25 s on photo_blur_rgb_2k (2048x2048, 45x45 filters, 3 groups; ALGO_0 takes
/// 24 ms) nor on large_4k_r63 (H200, cuDNN 9.14), and with it cudnnFind*AlgorithmEx and the
/// heuristic pick hung for minutes. `algo` is cuDNN's number for the pass.
bool cudnn_algo_known_slow(const ConvDesc& d, Pass pass, int algo);

/// True where the graph API's search is left out (CudnnSearch::kAuto and kGraph then plan with
/// the legacy API alone, and describe() says so): the shapes of cudnn_algo_known_slow, backward
/// data on planes of 1024x1024 and more with filters of 32x32 and more. On photo_blur_rgb_2k the
/// graph API's first engine configuration (heuristics mode A's first, eng2 k2=1 k3=0) ran about
/// 147 s in one run without returning (H100, cuDNN 9.14), which the search's budget, checked
/// between runs, cannot stop.
bool cudnn_graph_known_slow(const ConvDesc& d, Pass pass);

/// True for an algorithm Auto leaves out in strict fp32 (it holds the fp32 bound; the explicit
/// cuDNN path, the baseline, keeps it): backward filter ALGO_1 where a weight sums 16384 terms or
/// more (n * out_h * out_w). It sums in an order that loses accuracy on long reductions: max error
/// 1.2e-5 of max|dw| on seed1_grouped3x3_f32, 65536 terms per weight (ALGO_0 and ALGO_3: 5.0e-7;
/// H200).
bool cudnn_algo_inaccurate_fp32(const ConvDesc& d, Pass pass, int algo);

/// Builds the cuDNN path of Options::pass: descriptors, a handle, and the algorithm (forced by
/// Options::cudnn_algo, timed with cudnnFindConvolution*AlgorithmEx or taken from the v7
/// heuristics, per Options). Strict fp32 (CUDNN_FMA_MATH) unless options.allow_tf32 or the data
/// is fp16/bf16.
std::unique_ptr<ConvAlgo> make_cudnn(const ConvDesc& d, const Options& o);

/// cuDNN's algorithm names for a pass (e.g. "IMPLICIT_PRECOMP_GEMM", "FFT_TILING"); empty
/// without cuDNN.
std::vector<std::string> cudnn_algos(Pass pass);

}  // namespace fftconv::detail
