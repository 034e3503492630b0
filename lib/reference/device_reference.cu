#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "reference/direct_output.h"
#include "reference/reference.h"

namespace fftconv::reference {

namespace {
constexpr int kThreads = 256;

// One thread per output element, consecutive threads along q: x loads coalesce, w loads broadcast.
__global__ void conv2d_forward_kernel(ConvDesc d, const float* __restrict__ x,
                                      const float* __restrict__ w, const float* __restrict__ bias,
                                      double* __restrict__ y, std::int64_t total, std::int64_t ho,
                                      std::int64_t wo) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * kThreads + threadIdx.x; i < total;
       i += std::int64_t(gridDim.x) * kThreads) {
    const std::int64_t q = i % wo;
    const std::int64_t p = (i / wo) % ho;
    const std::int64_t k = (i / (wo * ho)) % d.k;
    const std::int64_t n = i / (wo * ho * d.k);
    y[i] = direct_output(d, x, w, bias, n, k, p, q);
  }
}

// The taps t along one axis that put input position i under the kernel of some output o:
// o*stride + t*dil - pad == i with 0 <= t < taps, 0 <= o < out. They form an arithmetic
// progression: t = first + m*step, o = out_first - m*out_step, m < count.
struct TapRange {
  std::int64_t first = 0, step = 1, count = 0, out_first = 0, out_step = 0;
};

__device__ TapRange taps_hitting(std::int64_t i, std::int64_t out, std::int64_t taps,
                                 std::int64_t pad, std::int64_t stride, std::int64_t dil) {
  TapRange t;
  const std::int64_t num = i + pad;  // o*stride == num - t*dil must lie in [0, (out-1)*stride]
  const std::int64_t lo_num = num - (out - 1) * stride;
  const std::int64_t lo = lo_num <= 0 ? 0 : (lo_num + dil - 1) / dil;
  const std::int64_t hi = min(taps - 1, num / dil);
  // Divisibility by the stride repeats every `stride` taps: if none of those fits, none does.
  std::int64_t first = lo;
  while (first <= hi && first < lo + stride && (num - first * dil) % stride != 0) ++first;
  if (first > hi || (num - first * dil) % stride != 0) return t;
  std::int64_t a = stride, b = dil;  // gcd, for the progression's step
  while (b != 0) {
    const std::int64_t r = a % b;
    a = b;
    b = r;
  }
  t.first = first;
  t.step = stride / a;
  t.count = (hi - first) / t.step + 1;
  t.out_first = (num - first * dil) / stride;
  t.out_step = t.step * dil / stride;  // step*dil = lcm(stride, dil), a multiple of stride
  return t;
}

// One thread per dx element, consecutive threads along the input width; only the (tap, output)
// pairs that reach the element are visited, in the order k, r, s (as the host oracle).
__global__ void conv2d_backward_data_kernel(ConvDesc d, const float* __restrict__ dy,
                                            const float* __restrict__ w, double* __restrict__ dx,
                                            std::int64_t total, std::int64_t ho, std::int64_t wo) {
  const std::int64_t cg = d.c / d.groups, kg = d.k / d.groups;
  for (std::int64_t i = std::int64_t(blockIdx.x) * kThreads + threadIdx.x; i < total;
       i += std::int64_t(gridDim.x) * kThreads) {
    const std::int64_t iw = i % d.w;
    const std::int64_t ih = (i / d.w) % d.h;
    const std::int64_t c = (i / (d.w * d.h)) % d.c;
    const std::int64_t n = i / (d.w * d.h * d.c);
    const std::int64_t g = c / cg, cc = c % cg;
    const TapRange rows = taps_hitting(ih, ho, d.r, d.pad_h, d.stride_h, d.dil_h);
    const TapRange cols = taps_hitting(iw, wo, d.s, d.pad_w, d.stride_w, d.dil_w);
    double acc = 0.0;
    for (std::int64_t kk = 0; kk < kg; ++kk) {
      const std::int64_t k = g * kg + kk;
      const float* dyp = dy + (n * d.k + k) * ho * wo;
      const float* wp = w + (k * cg + cc) * d.r * d.s;
      for (std::int64_t mr = 0; mr < rows.count; ++mr) {
        const std::int64_t r = rows.first + mr * rows.step;
        const std::int64_t p = rows.out_first - mr * rows.out_step;
        for (std::int64_t ms = 0; ms < cols.count; ++ms) {
          const std::int64_t s = cols.first + ms * cols.step;
          const std::int64_t q = cols.out_first - ms * cols.out_step;
          acc = fma(double(dyp[p * wo + q]), double(wp[r * d.s + s]), acc);
        }
      }
    }
    dx[i] = acc;
  }
}

// dw elements summed per block, this many taps (r, s) of one filter at a time.
constexpr int kTapTile = 8;

// A block per kTapTile consecutive taps of one filter (k, c'): each dw element sums n*Ho*Wo terms
// (50k on multichannel_r45, 4M on a 2k photo), far too many for one thread. The threads split the
// (n, p, q) positions, each reuses its dy value for all taps of the tile, then a fixed-order tree
// reduction in shared memory: deterministic, no atomics. Plane indices are `I`: 32-bit where they
// fit (1.6 s instead of 2.3 s on multichannel_r45, H200), 64-bit otherwise.
template <typename I>
__global__ void __launch_bounds__(kThreads)
    conv2d_backward_filter_kernel(ConvDesc d, const float* __restrict__ x,
                                  const float* __restrict__ dy, double* __restrict__ dw,
                                  std::int64_t ho64, std::int64_t wo64,
                                  std::int64_t tiles_per_filter, std::int64_t total_tiles) {
  __shared__ double red[kTapTile][kThreads];
  const std::int64_t cg = d.c / d.groups, kg = d.k / d.groups, taps = d.r * d.s;
  const I h = I(d.h), w = I(d.w), ho = I(ho64), wo = I(wo64);
  const I sh = I(d.stride_h), sw = I(d.stride_w), plane = ho * wo;
  const int t = threadIdx.x;
  // Thread t visits positions t, t + kThreads, ...: (p, q) advance by (dp, dq) with a carry.
  const I p0 = t / wo, q0 = t % wo, dp = kThreads / wo, dq = kThreads % wo;
  for (std::int64_t b = blockIdx.x; b < total_tiles; b += gridDim.x) {
    const std::int64_t filter = b / tiles_per_filter;  // k * cg + c'
    const std::int64_t tap0 = (b % tiles_per_filter) * kTapTile;
    const std::int64_t k = filter / cg, c = (k / kg) * cg + filter % cg;
    I off_h[kTapTile], off_w[kTapTile];
    double acc[kTapTile];
#pragma unroll
    for (int u = 0; u < kTapTile; ++u) {
      const std::int64_t tap = tap0 + u;
      // Taps past the end of the filter get a row offset that no position reaches.
      off_h[u] = tap < taps ? I((tap / d.s) * d.dil_h - d.pad_h) : -(ho * sh) - 1;
      off_w[u] = tap < taps ? I((tap % d.s) * d.dil_w - d.pad_w) : 0;
      acc[u] = 0.0;
    }
    for (std::int64_t n = 0; n < d.n; ++n) {
      const float* xp = x + (n * d.c + c) * d.h * d.w;
      const float* dyp = dy + (n * d.k + k) * ho64 * wo64;
      I p = p0, q = q0;
      for (I i = t; i < plane; i += kThreads) {
        const double g = dyp[i];
        const I bh = p * sh, bw = q * sw;
#pragma unroll
        for (int u = 0; u < kTapTile; ++u) {
          const I ih = bh + off_h[u], iw = bw + off_w[u];
          if (ih >= 0 && ih < h && iw >= 0 && iw < w) {
            acc[u] = fma(double(xp[ih * w + iw]), g, acc[u]);
          }
        }
        p += dp;
        q += dq;
        if (q >= wo) {
          q -= wo;
          ++p;
        }
      }
    }
#pragma unroll
    for (int u = 0; u < kTapTile; ++u) red[u][t] = acc[u];
    __syncthreads();
    for (int half = kThreads / 2; half > 0; half /= 2) {
      if (t < half) {
#pragma unroll
        for (int u = 0; u < kTapTile; ++u) red[u][t] += red[u][t + half];
      }
      __syncthreads();
    }
    if (t < kTapTile && tap0 + t < taps) dw[filter * taps + tap0 + t] = red[t][0];
    __syncthreads();  // red is reused by the block's next tile
  }
}

// True when every index the backward filter kernel forms within one plane fits in 32 bits.
bool plane_indices_fit_int32(const ConvDesc& d) {
  const std::int64_t lim = std::int64_t(1) << 30;
  return d.h * d.w < lim && d.out_h() * d.out_w() + kThreads < lim &&
         d.out_h() * d.stride_h + d.eff_r() + d.pad_h < lim &&
         d.out_w() * d.stride_w + d.eff_s() + d.pad_w < lim;
}

void check_launch() {
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    throw std::runtime_error(std::string("reference kernel launch failed: ") +
                             cudaGetErrorString(err));
  }
}

// ---- borders ------------------------------------------------------------------------------
// With a border other than zeros, the backward oracles run the zero-padded problem of the
// bordered input (its planes continued by bordered_source, walked as the definition says) and,
// for dx, sum the bordered input's gradient back onto the elements that each position holds:
// a gather per axis (rows, then columns), each bordered position visited in order.

// x continued by the border: h + 2 pad_h by w + 2 pad_w planes.
__global__ void bordered_input_kernel(ConvDesc d, const float* __restrict__ x,
                                      float* __restrict__ xb, std::int64_t total) {
  const std::int64_t hb = d.h + 2 * d.pad_h, wb = d.w + 2 * d.pad_w;
  for (std::int64_t i = std::int64_t(blockIdx.x) * kThreads + threadIdx.x; i < total;
       i += std::int64_t(gridDim.x) * kThreads) {
    const std::int64_t j = i % wb, r = (i / wb) % hb, plane = i / (wb * hb);
    const std::int64_t si = bordered_source(r - d.pad_h, d.h, d.border);
    const std::int64_t sj = bordered_source(j - d.pad_w, d.w, d.border);
    xb[i] = x[(plane * d.h + si) * d.w + sj];
  }
}

// One axis of the fold: out (planes x n x inner) = sum over the positions t of the bordered
// axis (nb = n + 2 pad long) whose border maps them to each index, of in (planes x nb x inner).
__global__ void fold_axis_kernel(const double* __restrict__ in, double* __restrict__ out,
                                 std::int64_t n, std::int64_t pad, std::int64_t inner,
                                 Border border, std::int64_t total) {
  const std::int64_t nb = n + 2 * pad;
  for (std::int64_t i = std::int64_t(blockIdx.x) * kThreads + threadIdx.x; i < total;
       i += std::int64_t(gridDim.x) * kThreads) {
    const std::int64_t e = i % inner, idx = (i / inner) % n, plane = i / (inner * n);
    double acc = 0.0;
    for (std::int64_t t = 0; t < nb; ++t) {
      if (bordered_source(t - pad, n, border) == idx) acc += in[(plane * nb + t) * inner + e];
    }
    out[i] = acc;
  }
}

unsigned grid_for(std::int64_t work_items, std::int64_t per_block) {
  const std::int64_t blocks64 = (work_items + per_block - 1) / per_block;
  return static_cast<unsigned>(blocks64 < 1048576 ? blocks64 : 1048576);
}
}  // namespace

void conv2d_forward_device(const ConvDesc& d, const float* x, const float* w, const float* bias,
                           double* y, cudaStream_t stream) {
  const std::int64_t total = d.y_elems();
  conv2d_forward_kernel<<<grid_for(total, kThreads), kThreads, 0, stream>>>(d, x, w, bias, y, total,
                                                                            d.out_h(), d.out_w());
  check_launch();
}

namespace {
// The bordered problem's descriptor, the oracle's own (it uses none of the engine's code).
ConvDesc bordered(const ConvDesc& d) {
  ConvDesc b = d;
  b.h = d.h + 2 * d.pad_h;
  b.w = d.w + 2 * d.pad_w;
  b.pad_h = b.pad_w = 0;
  b.border = Border::kZero;
  return b;
}

// Device memory for an oracle's intermediate, freed after the stream's work (cudaFree waits).
struct Scratch {
  void* p = nullptr;
  explicit Scratch(std::size_t bytes) {
    if (cudaMalloc(&p, bytes) != cudaSuccess) {
      cudaGetLastError();
      throw std::runtime_error("reference: cannot allocate " + std::to_string(bytes) + " bytes");
    }
  }
  ~Scratch() { cudaFree(p); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
};
}  // namespace

void conv2d_backward_data_device(const ConvDesc& d, const float* dy, const float* w, double* dx,
                                 cudaStream_t stream) {
  if (d.border != Border::kZero) {
    const ConvDesc b = bordered(d);
    const std::int64_t planes = d.n * d.c;
    Scratch dxb(sizeof(double) * b.x_elems()), rows(sizeof(double) * planes * d.h * b.w);
    conv2d_backward_data_device(b, dy, w, static_cast<double*>(dxb.p), stream);
    const std::int64_t t1 = planes * d.h * b.w, t2 = d.x_elems();
    fold_axis_kernel<<<grid_for(t1, kThreads), kThreads, 0, stream>>>(
        static_cast<const double*>(dxb.p), static_cast<double*>(rows.p), d.h, d.pad_h, b.w,
        d.border, t1);
    check_launch();
    fold_axis_kernel<<<grid_for(t2, kThreads), kThreads, 0, stream>>>(
        static_cast<const double*>(rows.p), dx, d.w, d.pad_w, 1, d.border, t2);
    check_launch();
    if (cudaStreamSynchronize(stream) != cudaSuccess) check_launch();  // before the frees
    return;
  }
  const std::int64_t total = d.x_elems();
  if (total <= 0) return;
  conv2d_backward_data_kernel<<<grid_for(total, kThreads), kThreads, 0, stream>>>(
      d, dy, w, dx, total, d.out_h(), d.out_w());
  check_launch();
}

void conv2d_backward_filter_device(const ConvDesc& d, const float* x, const float* dy, double* dw,
                                   cudaStream_t stream) {
  if (d.border != Border::kZero) {
    const ConvDesc b = bordered(d);
    Scratch xb(sizeof(float) * b.x_elems());
    const std::int64_t total = b.x_elems();
    bordered_input_kernel<<<grid_for(total, kThreads), kThreads, 0, stream>>>(
        d, x, static_cast<float*>(xb.p), total);
    check_launch();
    conv2d_backward_filter_device(b, static_cast<const float*>(xb.p), dy, dw, stream);
    if (cudaStreamSynchronize(stream) != cudaSuccess) check_launch();  // before the free
    return;
  }
  const std::int64_t filters = d.k * d.c_per_group();
  const std::int64_t tiles_per_filter = (d.r * d.s + kTapTile - 1) / kTapTile;
  const std::int64_t total_tiles = filters * tiles_per_filter;
  if (total_tiles <= 0) return;
  const unsigned blocks = grid_for(total_tiles, 1);
  if (plane_indices_fit_int32(d)) {
    conv2d_backward_filter_kernel<int><<<blocks, kThreads, 0, stream>>>(
        d, x, dy, dw, d.out_h(), d.out_w(), tiles_per_filter, total_tiles);
  } else {
    conv2d_backward_filter_kernel<std::int64_t><<<blocks, kThreads, 0, stream>>>(
        d, x, dy, dw, d.out_h(), d.out_w(), tiles_per_filter, total_tiles);
  }
  check_launch();
}

// ---- comparison -----------------------------------------------------------------------------

namespace {

__device__ __forceinline__ double as_double(float v) { return v; }
__device__ __forceinline__ double as_double(__half v) { return __half2float(v); }
__device__ __forceinline__ double as_double(__nv_bfloat16 v) { return __bfloat162float(v); }

// Sums (diff^2, ref^2) and maxima (|diff|, |ref|) of the finite elements, and the count of the
// others; maxima of non-negative doubles compare as their bit patterns.
struct Norms {
  double diff2, ref2;
  unsigned long long max_diff, max_ref, nonfinite;
};

template <typename T>
__global__ void compare_kernel(const T* __restrict__ y, const double* __restrict__ ref,
                               std::int64_t count, Norms* out) {
  __shared__ double s2[kThreads], r2[kThreads], md[kThreads], mr[kThreads];
  __shared__ unsigned long long bad[kThreads];
  double diff2 = 0.0, ref2 = 0.0, max_diff = 0.0, max_ref = 0.0;
  unsigned long long nonfinite = 0;
  for (std::int64_t i = std::int64_t(blockIdx.x) * kThreads + threadIdx.x; i < count;
       i += std::int64_t(gridDim.x) * kThreads) {
    const double v = as_double(y[i]);
    if (!isfinite(v)) {
      ++nonfinite;
      continue;
    }
    const double d = v - ref[i];
    diff2 += d * d;
    ref2 += ref[i] * ref[i];
    max_diff = fmax(max_diff, fabs(d));
    max_ref = fmax(max_ref, fabs(ref[i]));
  }
  const int t = threadIdx.x;
  s2[t] = diff2;
  r2[t] = ref2;
  md[t] = max_diff;
  mr[t] = max_ref;
  bad[t] = nonfinite;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (t < half) {
      s2[t] += s2[t + half];
      r2[t] += r2[t + half];
      md[t] = fmax(md[t], md[t + half]);
      mr[t] = fmax(mr[t], mr[t + half]);
      bad[t] += bad[t + half];
    }
    __syncthreads();
  }
  if (t == 0) {
    atomicAdd(&out->diff2, s2[0]);
    atomicAdd(&out->ref2, r2[0]);
    atomicMax(&out->max_diff, static_cast<unsigned long long>(__double_as_longlong(md[0])));
    atomicMax(&out->max_ref, static_cast<unsigned long long>(__double_as_longlong(mr[0])));
    atomicAdd(&out->nonfinite, bad[0]);
  }
}

}  // namespace

DeviceErrorNorms compare_device(const void* y, DType dtype, const double* ref, std::int64_t count,
                                cudaStream_t stream) {
  Norms* norms = nullptr;
  if (cudaMalloc(&norms, sizeof(Norms)) != cudaSuccess) check_launch();
  Norms host{};
  cudaError_t err = cudaMemsetAsync(norms, 0, sizeof(Norms), stream);
  if (err == cudaSuccess && count > 0) {
    const unsigned blocks = grid_for(count, kThreads) < 4096 ? grid_for(count, kThreads) : 4096;
    switch (dtype) {
      case DType::kF32:
        compare_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<const float*>(y), ref, count,
                                                        norms);
        break;
      case DType::kF16:
        compare_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<const __half*>(y), ref, count,
                                                        norms);
        break;
      case DType::kBF16:
        compare_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<const __nv_bfloat16*>(y), ref,
                                                        count, norms);
        break;
    }
    err = cudaGetLastError();
  }
  if (err == cudaSuccess) err = cudaMemcpyAsync(&host, norms, sizeof(Norms), cudaMemcpyDeviceToHost, stream);
  if (err == cudaSuccess) err = cudaStreamSynchronize(stream);
  cudaFree(norms);
  if (err != cudaSuccess) {
    throw std::runtime_error(std::string("reference comparison failed: ") + cudaGetErrorString(err));
  }
  auto as_value = [](unsigned long long bits) {
    double v;
    static_assert(sizeof(v) == sizeof(bits), "64-bit doubles");
    std::memcpy(&v, &bits, sizeof(v));
    return v;
  };
  DeviceErrorNorms e;
  const double max_diff = as_value(host.max_diff), max_ref = as_value(host.max_ref);
  e.rel_l2 = host.ref2 > 0 ? std::sqrt(host.diff2 / host.ref2) : (host.diff2 > 0 ? INFINITY : 0.0);
  e.max_err = max_ref > 0 ? max_diff / max_ref : (max_diff > 0 ? INFINITY : 0.0);
  e.nonfinite = static_cast<std::int64_t>(host.nonfinite);
  return e;
}

}  // namespace fftconv::reference
