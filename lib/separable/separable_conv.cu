#include "separable/separable_conv.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <type_traits>
#include <string>

#include "core/check.h"
#include "stages/dtype_convert.cuh"
#include "tuning/heuristics.h"

namespace fftconv::detail {

using separable::kMaxTileH;
using separable::kRun;
using separable::kThreads;
using separable::kTileW;

namespace {

constexpr int kTmpPitch = kTileW + 1;  // row pass writes runs of kRun: an odd pitch spreads banks
constexpr int kItems = (kMaxTileH / kRun) * kTileW / kThreads;  // column runs per thread
// fp16/bf16: source elements a thread loads before it converts and stores them, the loads of a
// batch in flight together (one at a time, a tile's load waited out a global-memory latency per
// element; 16 made landmark_dw68 17% slower than 8 on the H200).
constexpr int kLoadBatch = 8;
static_assert(kItems * kThreads * kRun >= kMaxTileH * kTileW, "a tile's outputs fit the threads");

// Rows (or columns) of the source region that `outputs` outputs along `ax` read.
int region_extent(const SeparableAxis& ax, int outputs) {
  return (outputs - 1) * ax.read_stride + (ax.taps_run() - 1) * ax.dil + 1;
}

}  // namespace

int SeparableGeometry::region_rows() const { return region_extent(h, tile_h); }
int SeparableGeometry::region_cols() const { return region_extent(w, kTileW); }

std::size_t SeparableGeometry::smem_bytes(int rank) const {
  const std::size_t floats =
      std::size_t(region_rows()) * (region_pitch() + kTmpPitch) +
      std::size_t(rank) * (separable_taps_padded(h.taps) + separable_taps_padded(w.taps));
  return floats * sizeof(float);
}

bool separable_geometry(const ConvDesc& d, Pass pass, SeparableGeometry* g, std::string* why) {
  SeparableGeometry s;
  const auto i32 = [](std::int64_t v) { return static_cast<int>(v); };
  if (pass == Pass::kBackwardData) {
    s.h = {i32(d.out_h()), i32(d.h), i32(d.stride_h), 1, i32(d.pad_h - (d.r - 1) * d.dil_h),
           i32(d.dil_h), i32(d.r)};
    s.w = {i32(d.out_w()), i32(d.w), i32(d.stride_w), 1, i32(d.pad_w - (d.s - 1) * d.dil_w),
           i32(d.dil_w), i32(d.s)};
  } else {
    s.h = {i32(d.h), i32(d.out_h()), 1, i32(d.stride_h), i32(-d.pad_h), i32(d.dil_h), i32(d.r)};
    s.w = {i32(d.w), i32(d.out_w()), 1, i32(d.stride_w), i32(-d.pad_w), i32(d.dil_w), i32(d.s)};
  }
  // Every coordinate the kernel forms, and the block index, in 32 bits.
  const std::int64_t reach_h = (d.h + d.out_h()) * (d.stride_h + 1) + d.r * d.dil_h + d.pad_h;
  const std::int64_t reach_w = (d.w + d.out_w()) * (d.stride_w + 1) + d.s * d.dil_w + d.pad_w;
  if (reach_h >= (std::int64_t{1} << 30) || reach_w >= (std::int64_t{1} << 30)) {
    if (why) *why = "the separable kernel indexes rows and columns in 32 bits: " + d.to_string();
    return false;
  }
  s.tile_h = choose_separable_tile_h(d, pass, s, kMaxSeparableRank);
  if (s.tile_h == 0) {
    SeparableGeometry smallest = s;
    smallest.tile_h = kRun;
    if (why) {
      *why = "the separable tile's source region (" + std::to_string(smallest.region_rows()) +
             "x" + std::to_string(smallest.region_cols()) + " for " + std::to_string(kRun) + "x" +
             std::to_string(separable::kTileW) + " outputs) needs " +
             std::to_string(smallest.smem_bytes(kMaxSeparableRank)) +
             " bytes of shared memory, over " + std::to_string(separable::kMaxSmemBytes);
    }
    return false;
  }
  const std::int64_t planes = d.n * (pass == Pass::kBackwardData ? d.c : d.k);
  const std::int64_t tiles = ((s.w.out + kTileW - 1) / kTileW) *
                             std::int64_t((s.h.out + s.tile_h - 1) / s.tile_h);
  if (planes * tiles >= (std::int64_t{1} << 31)) {
    if (why) *why = "the separable kernel's grid exceeds 2^31 blocks: " + d.to_string();
    return false;
  }
  *g = s;
  return true;
}

namespace {

// The source index of virtual coordinate v, or -1 where the source is zero (padding, the
// stride spread of the backward pass).
__device__ __forceinline__ int source_index(int v, const IntDivider& step, int extent) {
  if (v < 0) return -1;
  if (step.divisor() != 1) {
    int q, r;
    step.divmod(v, q, r);
    if (r != 0) return -1;
    v = q;
  }
  return v < extent ? v : -1;
}

// out[j] += sum over taps t of w[t] * in[j * stride + t * dil], kRun outputs. On a unit axis the
// kRun outputs slide over runs of kRun taps held in registers (taps padded to kRun with zeros).
template <bool kUnit>
__device__ __forceinline__ void run_taps(const float* __restrict__ in, int elem_pitch,
                                         const float* __restrict__ w, int taps, int stride,
                                         int dil, float (&out)[kRun]) {
  if constexpr (kUnit) {
    for (int t0 = 0; t0 < taps; t0 += kRun) {
      float v[2 * kRun - 1];
#pragma unroll
      for (int t = 0; t < 2 * kRun - 1; ++t) v[t] = in[(t0 + t) * elem_pitch];
#pragma unroll
      for (int t = 0; t < kRun; ++t) {
        const float wt = w[t0 + t];
#pragma unroll
        for (int j = 0; j < kRun; ++j) out[j] = fmaf(wt, v[j + t], out[j]);
      }
    }
  } else {
    for (int t = 0; t < taps; ++t) {
      const float wt = w[t];
#pragma unroll
      for (int j = 0; j < kRun; ++j) out[j] = fmaf(wt, in[(j * stride + t * dil) * elem_pitch], out[j]);
    }
  }
}

template <typename T, bool kUnitH, bool kUnitW>
__global__ void __launch_bounds__(kThreads, 2) separable_conv_kernel(const SeparableArgs a) {
  extern __shared__ float smem[];
  const SeparableGeometry& g = a.g;
  const int rows = a.rows, cols = a.cols, pitch = a.pitch, fac_h = a.fac_h, fac_w = a.fac_w;
  const int fac_plane = fac_h + fac_w;
  const int taps_h = kUnitH ? fac_h : g.h.taps, taps_w = kUnitW ? fac_w : g.w.taps;
  float* region = smem;                     // rows x pitch: the source tile and its halo
  float* tmp = region + rows * pitch;       // rows x kTmpPitch: the row pass
  float* wts = tmp + rows * kTmpPitch;      // rank x (col, row) of the current source plane

  const int tiles_w = a.tiles_w, tiles = a.tiles;
  const std::int64_t plane = blockIdx.x / tiles;
  const int tile = static_cast<int>(blockIdx.x - plane * tiles);
  const int oh0 = (tile / tiles_w) * g.tile_h, ow0 = (tile % tiles_w) * kTileW;
  const int n = static_cast<int>(plane / a.out_channels);
  const int oc = static_cast<int>(plane - std::int64_t(n) * a.out_channels);
  const int group = oc / a.out_per_group;
  const int fplane0 = group * a.factor_group_step + (oc % a.out_per_group) * a.factor_out_step;
  const std::int64_t src_plane = std::int64_t(g.h.src) * g.w.src;
  const T* src = static_cast<const T*>(a.src) +
                 (std::int64_t(n) * a.src_channels + std::int64_t(group) * a.sources) * src_plane;
  const int v0 = oh0 * g.h.read_stride + g.h.off, u0 = ow0 * g.w.read_stride + g.w.off;
  const int col_items = (g.tile_h / kRun) * kTileW;

  float acc[kItems][kRun];
#pragma unroll
  for (int k = 0; k < kItems; ++k)
#pragma unroll
    for (int j = 0; j < kRun; ++j) acc[k][j] = 0.0f;

  for (int s = 0; s < a.sources; ++s) {
    __syncthreads();  // the previous source's passes are done with region, tmp and wts
    const T* sp = src + s * src_plane;
    const int total = rows * cols;
#if __CUDA_ARCH__ >= 800
    if constexpr (std::is_same_v<T, float>) {
      // fp32: every element of the region copied by cp.async (zero-filled outside the source),
      // all of a thread's copies in flight at once, without registers.
      for (int idx = threadIdx.x; idx < total; idx += kThreads) {
        int rr, cc;
        a.cols_div.divmod(idx, rr, cc);
        const int sr = source_index(v0 + rr, a.step_h_div, g.h.src);
        const int sc = source_index(u0 + cc, a.step_w_div, g.w.src);
        const bool inside = sr >= 0 && sc >= 0;
        const float* gp = inside ? sp + std::int64_t(sr) * g.w.src + sc : sp;
        const unsigned dst =
            static_cast<unsigned>(__cvta_generic_to_shared(region + rr * pitch + cc));
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(gp),
                     "r"(inside ? 4 : 0));
      }
      asm volatile("cp.async.wait_all;\n" ::: "memory");
    } else
#endif
    {
    for (int base = 0; base < total; base += kThreads * kLoadBatch) {
      raw_t<T> v[kLoadBatch];
      bool in[kLoadBatch];
#pragma unroll
      for (int b = 0; b < kLoadBatch; ++b) {
        const int idx = base + b * kThreads + static_cast<int>(threadIdx.x);
        int rr = 0, cc = 0;
        if (idx < total) a.cols_div.divmod(idx, rr, cc);
        const int sr = source_index(v0 + rr, a.step_h_div, g.h.src);
        const int sc = source_index(u0 + cc, a.step_w_div, g.w.src);
        in[b] = idx < total && sr >= 0 && sc >= 0;
        v[b] = in[b] ? load_raw(sp + std::int64_t(sr) * g.w.src + sc) : raw_t<T>(0);
      }
#pragma unroll
      for (int b = 0; b < kLoadBatch; ++b) {
        const int idx = base + b * kThreads + static_cast<int>(threadIdx.x);
        if (idx >= total) break;
        int rr, cc;
        a.cols_div.divmod(idx, rr, cc);
        region[rr * pitch + cc] = in[b] ? raw_to_float<T>(v[b]) : 0.0f;
      }
    }
    }
    const float* f = a.factors + std::int64_t(fplane0 + s * a.factor_stride) * a.rank * fac_plane;
    for (int i = threadIdx.x; i < a.rank * fac_plane; i += kThreads) wts[i] = f[i];
    __syncthreads();

    for (int r = 0; r < a.rank; ++r) {
      const float* wc = wts + r * fac_plane;
      const float* wr = wc + fac_h;
      if (r > 0) __syncthreads();  // the previous factor's column pass is done with tmp
      // Row pass: every region row at the tile's kTileW output columns, kRun per thread.
      for (int it = threadIdx.x; it < rows * (kTileW / kRun); it += kThreads) {
        const int grp = it % (kTileW / kRun), rr = it / (kTileW / kRun);
        float o[kRun] = {};
        run_taps<kUnitW>(region + rr * pitch + grp * kRun * g.w.read_stride, 1, wr, taps_w,
                         g.w.read_stride, g.w.dil, o);
#pragma unroll
        for (int j = 0; j < kRun; ++j) tmp[rr * kTmpPitch + grp * kRun + j] = o[j];
      }
      __syncthreads();
      // Column pass: kRun output rows of one column per item, accumulated over factors and
      // sources.
#pragma unroll
      for (int k = 0; k < kItems; ++k) {
        const int it = threadIdx.x + k * kThreads;
        if (it < col_items) {
          const int c = it % kTileW, rg = it / kTileW;
          run_taps<kUnitH>(tmp + rg * kRun * g.h.read_stride * kTmpPitch + c, kTmpPitch, wc,
                           taps_h, g.h.read_stride, g.h.dil, acc[k]);
        }
      }
    }
  }

  const T* bias = static_cast<const T*>(a.bias);
  const float b = bias ? to_float(bias[oc]) : 0.0f;
  T* out = static_cast<T*>(a.out) + plane * std::int64_t(g.h.out) * g.w.out;
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const int it = threadIdx.x + k * kThreads;
    const int c = it % kTileW, rg = it / kTileW;
    const int ow = ow0 + c;
    if (it >= col_items || ow >= g.w.out) continue;
#pragma unroll
    for (int j = 0; j < kRun; ++j) {
      const int oh = oh0 + rg * kRun + j;
      if (oh < g.h.out) out[std::int64_t(oh) * g.w.out + ow] = from_float<T>(acc[k][j] + b);
    }
  }
}

template <typename T, bool kUnitH, bool kUnitW>
void set_limit() {
  FFTCONV_CUDA_CHECK(cudaFuncSetAttribute(separable_conv_kernel<T, kUnitH, kUnitW>,
                                          cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          static_cast<int>(separable::kMaxSmemBytes)));
}

template <typename T>
void prepare() {
  set_limit<T, true, true>();
  set_limit<T, true, false>();
  set_limit<T, false, true>();
  set_limit<T, false, false>();
}

template <typename T>
void launch(SeparableArgs a, cudaStream_t stream) {
  const SeparableGeometry& g = a.g;
  a.rows = g.region_rows();
  a.cols = g.region_cols();
  a.pitch = g.region_pitch();
  a.fac_h = separable_taps_padded(g.h.taps);
  a.fac_w = separable_taps_padded(g.w.taps);
  a.tiles_w = (g.w.out + kTileW - 1) / kTileW;
  a.tiles = a.tiles_w * ((g.h.out + g.tile_h - 1) / g.tile_h);
  a.cols_div = IntDivider(static_cast<std::uint32_t>(a.cols));
  a.step_h_div = IntDivider(static_cast<std::uint32_t>(g.h.step));
  a.step_w_div = IntDivider(static_cast<std::uint32_t>(g.w.step));
  const dim3 grid(static_cast<unsigned>(a.out_planes * a.tiles));
  const std::size_t smem = g.smem_bytes(a.rank);
  const bool uh = g.h.unit(), uw = g.w.unit();
  if (uh && uw) {
    separable_conv_kernel<T, true, true><<<grid, kThreads, smem, stream>>>(a);
  } else if (uh) {
    separable_conv_kernel<T, true, false><<<grid, kThreads, smem, stream>>>(a);
  } else if (uw) {
    separable_conv_kernel<T, false, true><<<grid, kThreads, smem, stream>>>(a);
  } else {
    separable_conv_kernel<T, false, false><<<grid, kThreads, smem, stream>>>(a);
  }
  FFTCONV_CHECK_LAUNCH();
}

}  // namespace

void prepare_separable_kernels(DType dtype) {
  switch (dtype) {
    case DType::kF32: prepare<float>(); break;
    case DType::kF16: prepare<__half>(); break;
    case DType::kBF16: prepare<__nv_bfloat16>(); break;
  }
}

void launch_separable_conv(const SeparableArgs& a, DType dtype, cudaStream_t stream) {
  switch (dtype) {
    case DType::kF32: launch<float>(a, stream); break;
    case DType::kF16: launch<__half>(a, stream); break;
    case DType::kBF16: launch<__nv_bfloat16>(a, stream); break;
  }
}

}  // namespace fftconv::detail
