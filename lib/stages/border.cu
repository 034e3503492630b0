#include "stages/border.h"

#include <algorithm>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "core/check.h"
#include "geometry/index_math.h"
#include "geometry/int_divider.h"
#include "stages/dtype_convert.cuh"

namespace fftconv::detail {

namespace {

constexpr int kThreads = 256;
constexpr std::int64_t kMaxGridY = 65535;
constexpr std::int64_t kMaxBlocksX = 1 << 20;

// Grid: x over the elements of a plane (rows * cols, flat, so narrow planes keep every thread
// busy), y over planes; both walk on by their grid sizes. 32-bit indices inside a plane
// (entry_support keeps bordered planes below 2^31 elements).
dim3 plane_grid(std::int64_t planes, std::int64_t plane_elems) {
  return dim3(static_cast<unsigned>(std::min(kMaxBlocksX, (plane_elems + kThreads - 1) / kThreads)),
              static_cast<unsigned>(std::min(planes, kMaxGridY)));
}

struct BorderParams {
  std::int64_t planes;
  int h, w, pad_h, pad_w, hb, wb;
  IntDivider cols;  // of the plane a thread walks: wb (copy) or w (fold)
  Border border;
};

// Elements are moved as their bits: 4 or 2 bytes.
template <typename E>
__global__ void __launch_bounds__(kThreads)
    border_copy_kernel(const E* __restrict__ x, E* __restrict__ xb, BorderParams p) {
  const int elems = p.hb * p.wb;
  for (std::int64_t plane = blockIdx.y; plane < p.planes; plane += gridDim.y) {
    const E* src = x + plane * p.h * p.w;
    E* dst = xb + plane * elems;
    // 64-bit steps: e + the grid's stride must not wrap for planes near 2^31 elements.
    for (std::int64_t e = std::int64_t(blockIdx.x) * kThreads + threadIdx.x; e < elems;
         e += std::int64_t(gridDim.x) * kThreads) {
      int i, j;
      p.cols.divmod(static_cast<int>(e), i, j);
      const int si = border_index<int>(i - p.pad_h, p.h, p.border);
      const int sj = border_index<int>(j - p.pad_w, p.w, p.border);
      dst[e] = si < 0 || sj < 0 ? E(0) : src[si * p.w + sj];  // -1: zero border
    }
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    border_fold_kernel(const T* __restrict__ dxb, T* __restrict__ dx, BorderParams p) {
  const int elems = p.h * p.w;
  for (std::int64_t plane = blockIdx.y; plane < p.planes; plane += gridDim.y) {
    const T* src = dxb + plane * p.hb * p.wb;
    for (std::int64_t e = std::int64_t(blockIdx.x) * kThreads + threadIdx.x; e < elems;
         e += std::int64_t(gridDim.x) * kThreads) {
      int i, j;
      p.cols.divmod(static_cast<int>(e), i, j);
      const BorderPreimages<int> rows = border_preimages<int>(i, p.h, p.pad_h, p.border);
      const BorderPreimages<int> cols = border_preimages<int>(j, p.w, p.pad_w, p.border);
      float acc = 0.0f;  // in the order of the host's fold
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
      dx[plane * elems + e] = from_float<T>(acc);
    }
  }
}

BorderParams params_of(const ConvDesc& d, std::int64_t cols) {
  const auto i32 = [](std::int64_t v) { return static_cast<int>(v); };
  BorderParams p;
  p.planes = d.n * d.c;
  p.h = i32(d.h);
  p.w = i32(d.w);
  p.pad_h = i32(d.pad_h);
  p.pad_w = i32(d.pad_w);
  p.hb = i32(d.h + 2 * d.pad_h);
  p.wb = i32(d.w + 2 * d.pad_w);
  p.cols = IntDivider(static_cast<std::uint32_t>(cols));
  p.border = d.border;
  return p;
}

}  // namespace

void launch_border_copy(const ConvDesc& d, const void* x, void* xb, cudaStream_t stream) {
  const BorderParams p = params_of(d, d.w + 2 * d.pad_w);
  const dim3 grid = plane_grid(p.planes, std::int64_t(p.hb) * p.wb);
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
  const BorderParams p = params_of(d, d.w);
  const dim3 grid = plane_grid(p.planes, std::int64_t(p.h) * p.w);
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
