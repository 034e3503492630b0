// Element conversions used where the stages read and write user tensors (fp32 math inside).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "fftconv/conv_desc.hpp"  // DType

namespace fftconv::detail {

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) { return v; }
template <>
__device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

/// The stored bits of an element. The stages load these and convert only once every load of a
/// round is issued: a conversion next to its load, inside the load's condition, made each later
/// load of the round wait for that one (the fp16/bf16 pad stage ran up to 15% slower than fp32's).
/// A 2-byte element's bits are held zero-extended in 32 bits: as a 16-bit value, each zeroed or
/// predicated load cost the fp16 pad an extra byte-permute instruction (6% more instructions
/// than fp32's, on a stage bound by issued instructions for small planes).
template <typename T>
struct RawOf {
  using type = T;    ///< in registers
  using stored = T;  ///< in memory
};
template <>
struct RawOf<__half> {
  using type = unsigned;
  using stored = unsigned short;
};
template <>
struct RawOf<__nv_bfloat16> {
  using type = unsigned;
  using stored = unsigned short;
};
template <typename T>
using raw_t = typename RawOf<T>::type;

template <typename T>
__device__ __forceinline__ raw_t<T> load_raw(const T* p) {
  return static_cast<raw_t<T>>(*reinterpret_cast<const typename RawOf<T>::stored*>(p));
}

template <typename T>
__device__ __forceinline__ float raw_to_float(raw_t<T> v);
template <>
__device__ __forceinline__ float raw_to_float<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ float raw_to_float<__half>(unsigned v) {
  return __half2float(__ushort_as_half(static_cast<unsigned short>(v)));
}
template <>
__device__ __forceinline__ float raw_to_float<__nv_bfloat16>(unsigned v) {
  return __uint_as_float(v << 16);  // bf16 is fp32's upper half
}

// Element i of a tensor of this dtype, as a float (the dtype is uniform: the branch is too).
__device__ __forceinline__ float load_element(const void* p, DType dtype, std::int64_t i) {
  switch (dtype) {
    case DType::kF16: return to_float(static_cast<const __half*>(p)[i]);
    case DType::kBF16: return to_float(static_cast<const __nv_bfloat16*>(p)[i]);
    default: return static_cast<const float*>(p)[i];
  }
}

__device__ __forceinline__ void store_element(void* p, DType dtype, std::int64_t i, float v) {
  switch (dtype) {
    case DType::kF16: static_cast<__half*>(p)[i] = from_float<__half>(v); break;
    case DType::kBF16: static_cast<__nv_bfloat16*>(p)[i] = from_float<__nv_bfloat16>(v); break;
    default: static_cast<float*>(p)[i] = v; break;
  }
}

}  // namespace fftconv::detail
