// cuFFT LTO load callbacks that pad as the r2c reads (see pad_load.h). This file is compiled on
// its own to LTO-IR (nvcc -dlto -fatbin), embedded in the library, and linked into cuFFT's
// kernels at plan time by cufftXtSetJITCallback; it is not part of the library's own objects.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cufft.h>

#include "fft/pad_load.h"
#include "stages/dtype_convert.cuh"

namespace fftconv::detail {
namespace {

// The plan checks that every offset of its input layout, and every source index, fits in 32
// bits (FftConvAlgo: callbacks are used only then).
template <typename T>
__device__ __forceinline__ float pad_load(const void* src, unsigned long long offset,
                                          const PadLoadInfo& in) {
  const std::int64_t at = pad_load_source(offset, in);
  return at < 0 ? 0.0f : to_float(static_cast<const T*>(src)[at]);
}

}  // namespace
}  // namespace fftconv::detail

// The callbacks cuFFT links by name: unmangled, with cuFFT's load-callback signature.
extern "C" __device__ cufftReal fftconv_pad_load_f32(void* data_in, unsigned long long offset,
                                                     void* caller_info, void*) {
  return fftconv::detail::pad_load<float>(
      data_in, offset, *static_cast<const fftconv::detail::PadLoadInfo*>(caller_info));
}
extern "C" __device__ cufftReal fftconv_pad_load_f16(void* data_in, unsigned long long offset,
                                                     void* caller_info, void*) {
  return fftconv::detail::pad_load<__half>(
      data_in, offset, *static_cast<const fftconv::detail::PadLoadInfo*>(caller_info));
}
extern "C" __device__ cufftReal fftconv_pad_load_bf16(void* data_in, unsigned long long offset,
                                                      void* caller_info, void*) {
  return fftconv::detail::pad_load<__nv_bfloat16>(
      data_in, offset, *static_cast<const fftconv::detail::PadLoadInfo*>(caller_info));
}
