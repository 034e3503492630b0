#include "stages/border.h"

#include <algorithm>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "core/check.h"
#include "geometry/index_math.h"
#include "stages/dtype_convert.cuh"

namespace fftconv::detail {

namespace {

constexpr int kThreads = 256;
constexpr std::int64_t kMaxGridYz = 65535;

// Grid: x over a row's columns, y over rows, z over planes (y and z walk on by their grid
// sizes). Within a plane, 32-bit indices (bordered_desc's planes fit: Plan checks them).
dim3 plane_grid(std::int64_t planes, std::int64_t rows, std::int64_t cols) {
  return dim3(static_cast<unsigned>((cols + kThreads - 1) / kThreads),
              static_cast<unsigned>(std::min(rows, kMaxGridYz)),
              static_cast<unsigned>(std::min(planes, kMaxGridYz)));
}

struct BorderParams {
  std::int64_t planes;
  int h, w, pad_h, pad_w, hb, wb;
  Border border;
};

// Elements are moved as their bits: 4 or 2 bytes.
template <typename E>
__global__ void __launch_bounds__(kThreads)
    border_copy_kernel(const E* __restrict__ x, E* __restrict__ xb, BorderParams p) {
  const int j = blockIdx.x * kThreads + threadIdx.x;
  if (j >= p.wb) return;
  const int sj = border_index<int>(j - p.pad_w, p.w, p.border);
  for (std::int64_t plane = blockIdx.z; plane < p.planes; plane += gridDim.z) {
    const E* src = x + plane * p.h * p.w;
    E* dst = xb + plane * p.hb * p.wb;
    for (int i = blockIdx.y; i < p.hb; i += gridDim.y) {
      const int si = border_index<int>(i - p.pad_h, p.h, p.border);
      dst[i * p.wb + j] = si < 0 || sj < 0 ? E(0) : src[si * p.w + sj];  // -1: zero border
    }
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    border_fold_kernel(const T* __restrict__ dxb, T* __restrict__ dx, BorderParams p) {
  const int j = blockIdx.x * kThreads + threadIdx.x;
  if (j >= p.w) return;
  const BorderPreimages<int> cols = border_preimages<int>(j, p.w, p.pad_w, p.border);
  for (std::int64_t plane = blockIdx.z; plane < p.planes; plane += gridDim.z) {
    const T* src = dxb + plane * p.hb * p.wb;
    for (int i = blockIdx.y; i < p.h; i += gridDim.y) {
      const BorderPreimages<int> rows = border_preimages<int>(i, p.h, p.pad_h, p.border);
      float acc = 0.0f;
      for (int a = 0; a < 2; ++a) {
        const int r0 = a == 0 ? rows.first : rows.first2, rn = a == 0 ? rows.count : rows.count2;
        for (int t = 0; t < rn; ++t) {
          const T* row = src + (r0 + t * rows.step + p.pad_h) * p.wb + p.pad_w;
          for (int b = 0; b < 2; ++b) {
            const int c0 = b == 0 ? cols.first : cols.first2;
            const int cn = b == 0 ? cols.count : cols.count2;
            for (int u = 0; u < cn; ++u) acc += to_float(row[c0 + u * cols.step]);
          }
        }
      }
      dx[plane * p.h * p.w + i * p.w + j] = from_float<T>(acc);
    }
  }
}

BorderParams params_of(const ConvDesc& d) {
  const auto i32 = [](std::int64_t v) { return static_cast<int>(v); };
  return BorderParams{d.n * d.c,        i32(d.h),
                      i32(d.w),         i32(d.pad_h),
                      i32(d.pad_w),     i32(d.h + 2 * d.pad_h),
                      i32(d.w + 2 * d.pad_w), d.border};
}

}  // namespace

void launch_border_copy(const ConvDesc& d, const void* x, void* xb, cudaStream_t stream) {
  const BorderParams p = params_of(d);
  const dim3 grid = plane_grid(p.planes, p.hb, p.wb);
  if (dtype_size(d.dtype) == 4) {
    border_copy_kernel<<<grid, kThreads, 0, stream>>>(static_cast<const unsigned*>(x),
                                                      static_cast<unsigned*>(xb), p);
  } else {
    border_copy_kernel<<<grid, kThreads, 0, stream>>>(static_cast<const unsigned short*>(x),
                                                      static_cast<unsigned short*>(xb), p);
  }
  FFTCONV_CHECK_LAUNCH();
}

void launch_border_fold(const ConvDesc& d, const void* dxb, void* dx, cudaStream_t stream) {
  const BorderParams p = params_of(d);
  const dim3 grid = plane_grid(p.planes, p.h, p.w);
  switch (d.dtype) {
    case DType::kF32:
      border_fold_kernel<<<grid, kThreads, 0, stream>>>(static_cast<const float*>(dxb),
                                                        static_cast<float*>(dx), p);
      break;
    case DType::kF16:
      border_fold_kernel<<<grid, kThreads, 0, stream>>>(static_cast<const __half*>(dxb),
                                                        static_cast<__half*>(dx), p);
      break;
    case DType::kBF16:
      border_fold_kernel<<<grid, kThreads, 0, stream>>>(
          static_cast<const __nv_bfloat16*>(dxb), static_cast<__nv_bfloat16*>(dx), p);
      break;
  }
  FFTCONV_CHECK_LAUNCH();
}

}  // namespace fftconv::detail
