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
  int plane = 0, rest = 0, row = 0, col = 0;
  in.plane_floats.divmod(static_cast<int>(offset), plane, rest);
  in.pitch.divmod(rest, row, col);
  const PlaneSource s = pad_plane_source<int>(plane, in.map, in.place.off_h, in.place.off_w,
                                              in.per_image, in.inner, in.tiles_w);
  const int src_h = static_cast<int>(in.place.src_h), src_w = static_cast<int>(in.place.src_w);
  const int i = placed_source<int>(row, static_cast<int>(s.off_h), in.step_h, src_h);
  const int j = placed_source<int>(col, static_cast<int>(s.off_w), in.step_w, src_w);
  if (i < 0 || j < 0) return 0.0f;
  const T* plane_src = static_cast<const T*>(src) + s.plane * src_h * src_w;
  return to_float(plane_src[i * src_w + j]);
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
