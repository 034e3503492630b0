#include "fused/fused_conv.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "core/check.h"
#include "fused/smem_fft.cuh"
#include "geometry/index_math.h"
#include "stages/dtype_convert.cuh"

namespace fftconv::detail {

namespace {

using fused::cadd;
using fused::cconj;
using fused::cmul;
using fused::cscale;
using fused::csub;
using fused::kMaxExtent;

// The two spectra held in one transform of a + i b (a, b real): with z = Z[k], zn = conj(Z[-k]),
// A[k] = (z + zn) / 2 and B[k] = -i (z - zn) / 2.
__device__ __forceinline__ float2 first_of_pair(float2 z, float2 zn) {
  return cscale(cadd(z, zn), 0.5f);
}
__device__ __forceinline__ float2 second_of_pair(float2 z, float2 zn) {
  const float2 d = csub(z, zn);
  return make_float2(0.5f * d.y, -0.5f * d.x);
}
// a + i b for complex a, b.
__device__ __forceinline__ float2 plus_i(float2 a, float2 b) {
  return make_float2(a.x - b.y, a.y + b.x);
}

struct PlaneShape {
  int log_h, log_w, pitch;
  __device__ int h() const { return 1 << log_h; }
  __device__ int w() const { return 1 << log_w; }
  __device__ int size() const { return 1 << (log_h + log_w); }
  // Position of bin idx (row-major over h x w) in the pitched buffer, and of its mirror -k.
  __device__ int at(int idx) const { return (idx >> log_w) * pitch + (idx & (w() - 1)); }
  __device__ int mirror(int idx) const {
    const int u = (h() - (idx >> log_w)) & (h() - 1);
    const int v = (w() - (idx & (w() - 1))) & (w() - 1);
    return (u << log_w) | v;
  }
};

__device__ __forceinline__ PlaneShape shape_of(int log_h, int log_w) {
  return PlaneShape{log_h, log_w, (1 << log_w) + 1};
}

// A block's shared memory: the twiddle table (filled here; load_pair's barrier orders it before
// the first use) and the pitched plane.
struct BlockPlane {
  float2* roots;
  float2* buf;
  PlaneShape ps;
};

__device__ __forceinline__ BlockPlane block_plane(int log_h, int log_w) {
  extern __shared__ float2 smem[];
  fused::fill_roots(smem);
  return BlockPlane{smem, smem + kMaxExtent, shape_of(log_h, log_w)};
}

// Loads two real planes (the second may be absent) as one complex plane: element (u, v) of the
// FFT plane is src[placed_source(u)][placed_source(v)], or zero.
template <typename T>
__device__ __forceinline__ void load_pair(float2* buf, const PlaneShape& ps, const T* p1,
                                          const T* p2, int src_h, int src_w, int off_h,
                                          int off_w, int step_h, int step_w) {
  for (int idx = threadIdx.x; idx < ps.size(); idx += blockDim.x) {
    const int u = idx >> ps.log_w, v = idx & (ps.w() - 1);
    const int i = placed_source<int>(u, off_h, step_h, src_h);
    const int j = placed_source<int>(v, off_w, step_w, src_w);
    float2 z = make_float2(0.0f, 0.0f);
    if (i >= 0 && j >= 0) {
      const int e = i * src_w + j;
      z.x = to_float(p1[e]);
      if (p2) z.y = to_float(p2[e]);
    }
    buf[ps.at(idx)] = z;
  }
  __syncthreads();
}

template <typename T>
__global__ void __launch_bounds__(fused::kMaxThreads, 1) fused_filter_kernel(FusedFilterArgs a) {
  const BlockPlane bp = block_plane(a.log_h, a.log_w);
  float2* buf = bp.buf;
  const float2* roots = bp.roots;
  const PlaneShape& ps = bp.ps;
  const int f1 = 2 * blockIdx.x, f2 = f1 + 1;
  const bool two = f2 < a.k;
  const std::int64_t taps = static_cast<std::int64_t>(a.r) * a.s;
  const T* w = static_cast<const T*>(a.w);
  load_pair(buf, ps, w + f1 * taps, two ? w + f2 * taps : nullptr, a.r, a.s, 0, 0, a.dil_h,
            a.dil_w);
  fused::fft2d<false>(buf, roots, ps.log_h, ps.log_w, ps.pitch);
  auto* out = static_cast<float2*>(a.factors);
  float2* g1 = out + static_cast<std::int64_t>(f1) * ps.size();
  float2* g2 = g1 + ps.size();
  for (int idx = threadIdx.x; idx < ps.size(); idx += blockDim.x) {
    const float2 z = buf[ps.at(idx)], zn = cconj(buf[ps.at(ps.mirror(idx))]);
    float2 w1 = cscale(first_of_pair(z, zn), a.scale);
    float2 w2 = cscale(second_of_pair(z, zn), a.scale);
    if (a.conjugate) {
      w1 = cconj(w1);
      w2 = cconj(w2);
    }
    g1[idx] = w1;
    if (two) g2[idx] = w2;
  }
}

template <typename T>
__global__ void __launch_bounds__(fused::kMaxThreads, 1) fused_conv_kernel(FusedConvArgs a) {
  const BlockPlane bp = block_plane(a.log_h, a.log_w);
  float2* buf = bp.buf;
  const float2* roots = bp.roots;
  const PlaneShape& ps = bp.ps;
  const std::int64_t o1 = 2 * static_cast<std::int64_t>(blockIdx.x), o2 = o1 + 1;
  const bool two = o2 < a.planes;
  const std::int64_t src_plane = static_cast<std::int64_t>(a.src_h) * a.src_w;
  const T* src = static_cast<const T*>(a.src);
  load_pair(buf, ps, src + o1 * src_plane, two ? src + o2 * src_plane : nullptr, a.src_h,
            a.src_w, a.off_h, a.off_w, a.step_h, a.step_w);
  const int k1 = static_cast<int>(o1 % a.k), k2 = static_cast<int>(o2 % a.k);
  const auto* factors = static_cast<const float2*>(a.factors);
  const float2* g1 = factors + static_cast<std::int64_t>(k1) * ps.size();
  const float2* g2 = factors + static_cast<std::int64_t>(k2) * ps.size();
  // Round 0: the forward transform, then per bin pair (k, -k): separate the two spectra,
  // multiply each by its filter's factor, and put them back as Y1 + i Y2, whose inverse is
  // y1 + i y2. Round 1: the inverse, as the forward transform of the conjugate, conjugated: the
  // buffer gets conj(Y) and the store reads y2 with its sign flipped. One loop holds one copy of
  // the transform (two inlined copies spilled registers).
#pragma unroll 1
  for (int round = 0; round < 2; ++round) {
    fused::fft2d<false>(buf, roots, ps.log_h, ps.log_w, ps.pitch);
    if (round == 1) break;
    for (int idx = threadIdx.x; idx < ps.size(); idx += blockDim.x) {
      const int nidx = ps.mirror(idx);
      if (nidx < idx) continue;
      const int p = ps.at(idx), pn = ps.at(nidx);
      const float2 z = buf[p], zn = cconj(buf[pn]);
      const float2 x1 = first_of_pair(z, zn), x2 = second_of_pair(z, zn);
      const float2 y = two ? plus_i(cmul(x1, g1[idx]), cmul(x2, g2[idx])) : cmul(x1, g1[idx]);
      if (nidx != idx) {
        const float2 yn = two ? plus_i(cmul(cconj(x1), g1[nidx]), cmul(cconj(x2), g2[nidx]))
                              : cmul(cconj(x1), g1[nidx]);
        buf[pn] = cconj(yn);
      }
      buf[p] = cconj(y);
    }
    __syncthreads();
  }

  const int out_plane = a.out_h * a.out_w;
  T* out = static_cast<T*>(a.out);
  T* y1 = out + o1 * out_plane;
  T* y2 = out + o2 * out_plane;
  const T* bias = static_cast<const T*>(a.bias);
  const float b1 = bias ? to_float(bias[k1]) : 0.0f;
  const float b2 = bias && two ? to_float(bias[k2]) : 0.0f;
  for (int idx = threadIdx.x; idx < out_plane; idx += blockDim.x) {
    const int p = idx / a.out_w, q = idx - p * a.out_w;
    const int t = clip_read<int>(p, a.read_stride_h, a.read_off_h, ps.h(), a.wrap);
    const int u = clip_read<int>(q, a.read_stride_w, a.read_off_w, ps.w(), a.wrap);
    float2 v = make_float2(0.0f, 0.0f);
    if (t >= 0 && u >= 0) v = buf[t * ps.pitch + u];
    y1[idx] = from_float<T>(v.x + b1);
    if (two) y2[idx] = from_float<T>(b2 - v.y);
  }
}

// The largest size any plan uses: the limit is one value per kernel and device, so a plan that
// set its own size would lower it under another thread's plan of a larger one.
template <typename T>
void prepare() {
  const int bytes = static_cast<int>(fused_smem_bytes(fused::kMaxLogExtent, fused::kMaxLogExtent));
  FFTCONV_CUDA_CHECK(cudaFuncSetAttribute(fused_filter_kernel<T>,
                                          cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  FFTCONV_CUDA_CHECK(cudaFuncSetAttribute(fused_conv_kernel<T>,
                                          cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
}

}  // namespace

int fused_threads(int log_h, int log_w) {
  const int t = (1 << (log_h + log_w)) / fused::kPerThread;
  return t < 32 ? 32 : t;
}

std::size_t fused_smem_bytes(int log_h, int log_w) {
  return sizeof(float2) * (kMaxExtent + (std::size_t{1} << log_h) * ((1u << log_w) + 1));
}

void prepare_fused_kernels(DType dtype) {
  switch (dtype) {
    case DType::kF32: prepare<float>(); break;
    case DType::kF16: prepare<__half>(); break;
    case DType::kBF16: prepare<__nv_bfloat16>(); break;
  }
}

namespace {

// Launches kernel<T> for the dtype: one block per pair of planes.
template <template <typename> class Kernel, typename Args>
void launch_pairs(const Args& a, std::int64_t planes, DType dtype, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((planes + 1) / 2));
  const int threads = fused_threads(a.log_h, a.log_w);
  const std::size_t smem = fused_smem_bytes(a.log_h, a.log_w);
  switch (dtype) {
    case DType::kF32: Kernel<float>::get()<<<grid, threads, smem, stream>>>(a); break;
    case DType::kF16: Kernel<__half>::get()<<<grid, threads, smem, stream>>>(a); break;
    case DType::kBF16: Kernel<__nv_bfloat16>::get()<<<grid, threads, smem, stream>>>(a); break;
  }
  FFTCONV_CHECK_LAUNCH();
}

template <typename T>
struct FilterKernel {
  static auto get() { return fused_filter_kernel<T>; }
};
template <typename T>
struct ConvKernel {
  static auto get() { return fused_conv_kernel<T>; }
};

}  // namespace

void launch_fused_filter_factors(const FusedFilterArgs& a, DType dtype, cudaStream_t stream) {
  launch_pairs<FilterKernel>(a, a.k, dtype, stream);
}

void launch_fused_conv(const FusedConvArgs& a, DType dtype, cudaStream_t stream) {
  launch_pairs<ConvKernel>(a, a.planes, dtype, stream);
}

}  // namespace fftconv::detail
