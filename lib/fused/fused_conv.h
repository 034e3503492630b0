// The fused FFT convolution (Algo::kFftFused): one kernel per pass for planes whose FFT fits in
// shared memory. A block takes two planes at once as the real and imaginary parts of one complex
// plane (x1 + i x2), transforms it in shared memory (lib/fused/smem_fft.cuh), separates the two
// spectra by their Hermitian symmetry, multiplies each by its filter's factor, and transforms
// back: the real part of the result is the first output plane, the imaginary part the second.
// The filter factors (the spectrum of each dilated filter, conjugated for the forward pass's
// correlation, scaled by 1/(fft_h*fft_w)) come from a second kernel of the same kind, run per
// call into the workspace or once by set_filter into memory the plan keeps.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "fftconv/conv_desc.hpp"

namespace fftconv::detail {

/// Where one source plane (x forward, dy backward data) lands in the FFT plane and which window
/// of the result is the output (lib/geometry/index_math.h: placed_source, clip_read).
struct FusedConvArgs {
  const void* src = nullptr;     ///< source planes, planes x src_h x src_w
  const void* factors = nullptr; ///< float2 [k][fft_h][fft_w] (fused_filter_factors)
  const void* bias = nullptr;    ///< [k] or null (forward)
  void* out = nullptr;           ///< planes x out_h x out_w
  std::int64_t planes = 0;       ///< source planes = output planes (one channel per group)
  int k = 1;                     ///< filters; plane p uses filter p % k
  int src_h = 0, src_w = 0, off_h = 0, off_w = 0, step_h = 1, step_w = 1;
  int out_h = 0, out_w = 0, read_off_h = 0, read_off_w = 0, read_stride_h = 1, read_stride_w = 1;
  bool wrap = true;
  int log_h = 0, log_w = 0;  ///< FFT size 2^log_h x 2^log_w
};

struct FusedFilterArgs {
  const void* w = nullptr;  ///< filters, k x r x s
  void* factors = nullptr;  ///< float2 [k][fft_h][fft_w]
  int k = 1, r = 1, s = 1, dil_h = 1, dil_w = 1;
  bool conjugate = true;  ///< forward (correlation): conj(W); backward data: W
  float scale = 1.0f;
  int log_h = 0, log_w = 0;
};

/// Bytes of the factors of k filters at this FFT size.
inline std::size_t fused_factor_bytes(std::int64_t k, int log_h, int log_w) {
  return static_cast<std::size_t>(k) * (std::size_t{8} << (log_h + log_w));
}

/// Threads per block and dynamic shared memory of both kernels at this FFT size.
int fused_threads(int log_h, int log_w);
std::size_t fused_smem_bytes(int log_h, int log_w);

/// Raises the kernels' shared-memory limit on the current device to what the largest FFT size
/// needs (plan time; the same value from every plan, so concurrent plans cannot undo it).
void prepare_fused_kernels(DType dtype);

void launch_fused_filter_factors(const FusedFilterArgs& a, DType dtype, cudaStream_t stream);
void launch_fused_conv(const FusedConvArgs& a, DType dtype, cudaStream_t stream);

}  // namespace fftconv::detail
