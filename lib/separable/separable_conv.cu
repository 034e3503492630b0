#include "separable/separable_conv.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdlib>
#include <type_traits>
#include <string>

#include "core/check.h"
#include "stages/dtype_convert.cuh"
#include "tuning/heuristics.h"

namespace fftconv::detail {

using separable::kChunk;
using separable::kMaxTileH;
using separable::kRun;
using separable::kStripRun;
using separable::kStripThreads;
using separable::kStripW;
using separable::kThreads;
using separable::kTileW;
using separable::kWholeThreads;
using separable::strip_taps;

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

int SeparableGeometry::region_rows() const {
  if (whole) return (pass_rows() + kChunk - 1) / kChunk * kChunk;
  return strip() ? kChunk : region_extent(h, tile_h);
}
int SeparableGeometry::pass_rows() const {
  return (h.out + kStripRun - 1) / kStripRun * kStripRun + strip_taps(h.taps);
}
int SeparableGeometry::threads() const {
  return whole ? separable::kWholeThreads : strip() ? kStripThreads : kThreads;
}
int SeparableGeometry::region_cols() const {
  return strip() ? kStripW + strip_taps(w.taps) - 1 : region_extent(w, kTileW);
}
int SeparableGeometry::region_pitch() const {
  return strip() ? kStripW + strip_taps(w.taps) + 4 : region_cols() | 1;
}
int SeparableGeometry::ring_slots() const {
  return (kChunk + strip_taps(h.taps) - 1 + kChunk - 1) / kChunk;
}

std::int64_t SeparableGeometry::blocks_per_plane() const {
  const int across = strip() ? kStripW : kTileW;
  const int down = strip() ? segment_rows() : tile_h;
  return std::int64_t((w.out + across - 1) / across) * ((h.out + down - 1) / down);
}

std::size_t SeparableGeometry::smem_bytes(int rank) const {
  const std::size_t weights =
      std::size_t(rank) * (separable_taps_padded(h.taps) + separable_taps_padded(w.taps));
  if (whole) {
    // Every staged source row, the row-pass results per factor, the weights.
    return (std::size_t(region_rows()) * region_pitch() +
            std::size_t(rank) * pass_rows() * kStripW + weights) *
           sizeof(float);
  }
  if (strip()) {
    // Two step buffers of source rows, the ring of row-pass results per factor, the weights.
    return (2 * std::size_t(kChunk) * region_pitch() +
            std::size_t(rank) * ring_slots() * kChunk * kStripW + weights) *
           sizeof(float);
  }
  return (std::size_t(region_rows()) * (region_pitch() + kTmpPitch) + weights) * sizeof(float);
}

std::string separable_kernel_text(const SeparableGeometry& g) {
  const std::string border = g.h.border == Border::kZero
                                 ? std::string()
                                 : std::string(", border ") + border_name(g.h.border) + " on load";
  if (g.whole) {
    return "whole strips of " + std::to_string(kStripW) + " columns" + border;
  }
  if (g.strip()) {
    return "strips of " + std::to_string(kStripW) + " columns, segments of " +
           std::to_string(g.segment_rows()) + " rows" + border;
  }
  return "tiles of " + std::to_string(g.tile_h) + "x" + std::to_string(kTileW) + border;
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
    s.h.border = s.w.border = d.border;
  }
  // Every coordinate the kernel forms, and the block index, in 32 bits.
  const std::int64_t reach_h = (d.h + d.out_h()) * (d.stride_h + 1) + d.r * d.dil_h + d.pad_h;
  const std::int64_t reach_w = (d.w + d.out_w()) * (d.stride_w + 1) + d.s * d.dil_w + d.pad_w;
  if (reach_h >= (std::int64_t{1} << 30) || reach_w >= (std::int64_t{1} << 30)) {
    if (why) *why = "the separable kernel indexes rows and columns in 32 bits: " + d.to_string();
    return false;
  }
  // The strip kernel where it applies and its buffers fit; else the tile kernel.
  const std::int64_t sources = pass == Pass::kBackwardData ? d.k_per_group() : d.c_per_group();
  const int strip_cols = kStripW + strip_taps(s.w.taps) - 1;
  if (s.h.unit() && s.w.unit() && sources == 1 && strip_cols <= 32 * separable::kStripColGroups) {
    s.seg_chunks = choose_separable_segment(d, pass, s, kMaxSeparableRank);
    const char* form = std::getenv("FFTCONV_SEPARABLE_STRIP");
    const std::string forced = form ? form : "";
    const bool whole = forced == "whole"      ? choose_separable_whole(d, pass, s, kMaxSeparableRank,
                                                                       /*forced=*/true)
                       : forced == "segments" ? false
                                              : choose_separable_whole(d, pass, s, kMaxSeparableRank);
    if (s.strip() && whole) {
      s.whole = true;
      s.seg_chunks = (s.h.out + kChunk - 1) / kChunk;
    }
  }
  if (!s.strip()) s.tile_h = choose_separable_tile_h(d, pass, s, kMaxSeparableRank);
  if (!s.strip() && s.tile_h == 0) {
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
  if (planes * s.blocks_per_plane() >= (std::int64_t{1} << 31)) {
    if (why) *why = "the separable kernel's grid exceeds 2^31 blocks: " + d.to_string();
    return false;
  }
  *g = s;
  return true;
}

namespace {

// The source index of virtual coordinate v, or -1 where the source is zero (padding, the
// stride spread of the backward pass); with a border other than zeros (forward: step 1), the
// index the border maps v to.
__device__ __forceinline__ int source_index(int v, const IntDivider& step, int extent,
                                            Border border) {
  if (border != Border::kZero) return border_index<int>(v, extent, border);
  if (v < 0) return -1;
  if (step.divisor() != 1) {
    int q, r;
    step.divmod(v, q, r);
    if (r != 0) return -1;
    v = q;
  }
  return v < extent ? v : -1;
}

// Copies rows x cols of the source region whose top-left is virtual coordinate (v0, u0) into
// `region` (row pitch a.pitch), zero outside the source, converted to fp32. A warp copies 32
// consecutive columns of a row; the warps of the block take rows in turn. fp32 is copied by
// cp.async (in flight without registers; stage_wait waits for them), fp16 and bf16 through
// registers, a column's kLoadBatch rows in flight at once, done on return.
template <typename T, int kBlock>
__device__ __forceinline__ void stage_source(const SeparableArgs& a, const T* __restrict__ sp,
                                             int v0, int u0, float* region) {
  constexpr int kWarps = kBlock / 32;
  const SeparableGeometry& g = a.g;
  const int rows = a.rows, cols = a.cols, pitch = a.pitch;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int cc = lane; cc < cols; cc += 32) {
    const int sc = source_index(u0 + cc, a.step_w_div, g.w.src, g.w.border);
    for (int r0 = warp; r0 < rows; r0 += kWarps * kLoadBatch) {
#if __CUDA_ARCH__ >= 800
      if constexpr (std::is_same_v<T, float>) {
#pragma unroll
        for (int b = 0; b < kLoadBatch; ++b) {
          const int rr = r0 + b * kWarps;
          if (rr >= rows) break;
          const int sr = source_index(v0 + rr, a.step_h_div, g.h.src, g.h.border);
          const bool inside = sr >= 0 && sc >= 0;
          const float* gp = inside ? sp + std::int64_t(sr) * g.w.src + sc : sp;
          const unsigned dst =
              static_cast<unsigned>(__cvta_generic_to_shared(region + rr * pitch + cc));
          asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(gp),
                       "r"(inside ? 4 : 0));
        }
      } else
#endif
      {
        raw_t<T> v[kLoadBatch];
        bool in[kLoadBatch];
#pragma unroll
        for (int b = 0; b < kLoadBatch; ++b) {
          const int rr = r0 + b * kWarps;
          const int sr = rr < rows ? source_index(v0 + rr, a.step_h_div, g.h.src, g.h.border) : -1;
          in[b] = sr >= 0 && sc >= 0;
          v[b] = in[b] ? load_raw(sp + std::int64_t(sr) * g.w.src + sc) : raw_t<T>(0);
        }
#pragma unroll
        for (int b = 0; b < kLoadBatch; ++b) {
          const int rr = r0 + b * kWarps;
          if (rr < rows) region[rr * pitch + cc] = in[b] ? raw_to_float<T>(v[b]) : 0.0f;
        }
      }
    }
  }
#if __CUDA_ARCH__ >= 800
  if constexpr (std::is_same_v<T, float>) asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

// Waits for this thread's cp.async copies (stage_source of fp32); a barrier makes them visible.
__device__ __forceinline__ void stage_wait() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
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
  const int rows = a.rows, pitch = a.pitch, fac_h = a.fac_h, fac_w = a.fac_w;
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
    stage_source<T, kThreads>(a, src + s * src_plane, v0, u0, region);
    stage_wait();
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


// ---- the strip kernel ------------------------------------------------------------------------

// kStripRun outputs o[j] += sum over taps t < taps of w[t] * in(j + t), sliding over taps in
// blocks of kStripRun: `lo` holds in(t0 .. t0 + 7), `hi` in(t0 + 8 .. t0 + 15); w[t0 .. t0 + 7]
// are read as two float4 (the factors are 16-byte aligned and zero-padded).
__device__ __forceinline__ void strip_block(const float (&lo)[kStripRun],
                                            const float (&hi)[kStripRun], const float* w,
                                            float (&o)[kStripRun]) {
  const float4 w0 = *reinterpret_cast<const float4*>(w);
  const float4 w1 = *reinterpret_cast<const float4*>(w + 4);
  const float wt[kStripRun] = {w0.x, w0.y, w0.z, w0.w, w1.x, w1.y, w1.z, w1.w};
#pragma unroll
  for (int t = 0; t < kStripRun; ++t) {
#pragma unroll
    for (int j = 0; j < kStripRun; ++j) {
      o[j] = fmaf(wt[t], j + t < kStripRun ? lo[j + t] : hi[j + t - kStripRun], o[j]);
    }
  }
}

// A run along a row of shared memory: in(i) = p[i], read as float4 (p 16-byte aligned).
struct RowReader {
  const float* p;
  __device__ __forceinline__ void read(int i, float (&v)[kStripRun]) const {
    const float4 a = *reinterpret_cast<const float4*>(p + i);
    const float4 b = *reinterpret_cast<const float4*>(p + i + 4);
    v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
  }
};

// A run down a column of the ring: in(i) = ring row (first + i) mod rows, at pitch kStripW.
// `first` and i are multiples of kStripRun and rows of kChunk, so a run of kStripRun rows never
// wraps inside.
struct RingReader {
  const float* p;
  int first, rows;
  __device__ __forceinline__ void read(int i, float (&v)[kStripRun]) const {
    int r = first + i;
    if (r >= rows) r -= rows;
#pragma unroll
    for (int j = 0; j < kStripRun; ++j) v[j] = p[(r + j) * kStripW];
  }
};

template <typename Reader>
__device__ __forceinline__ void strip_taps_run(const Reader& in, const float* w, int taps,
                                               float (&o)[kStripRun]) {
  float a[kStripRun], b[kStripRun];
  in.read(0, a);
  for (int t0 = 0;;) {
    in.read(t0 + kStripRun, b);
    strip_block(a, b, w + t0, o);
    t0 += kStripRun;
    if (t0 >= taps) break;
    in.read(t0 + kStripRun, a);
    strip_block(b, a, w + t0, o);
    t0 += kStripRun;
    if (t0 >= taps) break;
  }
}


// Copies the kChunk source rows of one step into a step buffer. A warp copies 32 consecutive
// columns of a row, the block's warps take rows in turn; each thread's columns (and which of
// them are outside the source) are found once per block, each row once per step, so a copied
// element costs an address and a copy. fp32 by cp.async (stage_wait waits for it), fp16 and bf16
// through registers, a column's rows in flight together. kBorder: the descriptor's border maps
// rows and columns outside the source (a kernel of its own: the mapping's code in the zero-border
// kernel took the fp32 kernel from 80 to 95 registers, past the 85 at which six blocks fit).
template <typename T, bool kBorder, int kBlock = kStripThreads>
struct StripStager {
  static constexpr int kWarps = kBlock / 32;
  static constexpr int kRowsPerWarp = kChunk / kWarps;
  int col[separable::kStripColGroups];  // source column of lane + 32 q; -1 zero, -2 not copied
  int cols_groups;

  __device__ __forceinline__ StripStager(const SeparableArgs& a, int u0) {
    const int lane = threadIdx.x % 32;
    cols_groups = (a.cols + 31) / 32;
#pragma unroll
    for (int q = 0; q < separable::kStripColGroups; ++q) {
      const int cc = lane + 32 * q;
      col[q] = cc < a.cols ? source_index(u0 + cc, a.step_w_div, a.g.w.src,
                                          kBorder ? a.g.w.border : Border::kZero)
                           : -2;
    }
  }

  __device__ __forceinline__ void stage(const SeparableArgs& a, const T* __restrict__ sp, int v,
                                        float* buf) const {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const SeparableGeometry& g = a.g;
    std::int64_t row[kRowsPerWarp];  // source offset of the row, or -1 outside the source
#pragma unroll
    for (int b = 0; b < kRowsPerWarp; ++b) {
      const int sr = source_index(v + warp + b * kWarps, a.step_h_div, g.h.src,
                                  kBorder ? g.h.border : Border::kZero);
      row[b] = sr >= 0 ? std::int64_t(sr) * g.w.src : -1;
    }
    float* dst = buf + warp * a.pitch + lane;
    const int row_step = kWarps * a.pitch;
#pragma unroll
    for (int q = 0; q < separable::kStripColGroups; ++q) {
      const int c = col[q];
      if (q >= cols_groups || c == -2) continue;
#if __CUDA_ARCH__ >= 800
      if constexpr (std::is_same_v<T, float>) {
#pragma unroll
        for (int b = 0; b < kRowsPerWarp; ++b) {
          const bool inside = c >= 0 && row[b] >= 0;
          const float* gp = inside ? sp + row[b] + c : sp;
          const unsigned d =
              static_cast<unsigned>(__cvta_generic_to_shared(dst + b * row_step + 32 * q));
          asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(d), "l"(gp),
                       "r"(inside ? 4 : 0));
        }
      } else
#endif
      {
        raw_t<T> val[kRowsPerWarp];
#pragma unroll
        for (int b = 0; b < kRowsPerWarp; ++b) {
          val[b] = c >= 0 && row[b] >= 0 ? load_raw(sp + row[b] + c) : raw_t<T>(0);
        }
#pragma unroll
        for (int b = 0; b < kRowsPerWarp; ++b) {
          dst[b * row_step + 32 * q] = c >= 0 && row[b] >= 0 ? raw_to_float<T>(val[b]) : 0.0f;
        }
      }
    }
#if __CUDA_ARCH__ >= 800
    if constexpr (std::is_same_v<T, float>) asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
  }
};

// Output plane `plane` of a strip kernel's block (both forms): its output channel and the source
// plane it reads; the block's kBlock threads copy its factors into wts.
template <typename T, int kBlock>
struct StripPlane {
  int oc;
  const T* src;
  __device__ StripPlane(const SeparableArgs& a, std::int64_t plane, float* wts, int fac_plane) {
    const SeparableGeometry& g = a.g;
    const int n = static_cast<int>(plane / a.out_channels);
    oc = static_cast<int>(plane - std::int64_t(n) * a.out_channels);
    const int group = oc / a.out_per_group;
    const int fplane = group * a.factor_group_step + (oc % a.out_per_group) * a.factor_out_step;
    src = static_cast<const T*>(a.src) +
          (std::int64_t(n) * a.src_channels + group) * (std::int64_t(g.h.src) * g.w.src);
    const float* f = a.factors + std::int64_t(fplane) * a.rank * fac_plane;
    for (int i = threadIdx.x; i < a.rank * fac_plane; i += kBlock) wts[i] = f[i];
  }
};

// A thread's row-pass run: kStripRun outputs of one source row for each factor r, written at
// dst + r * factor_step (the ring's or the whole strip's row-pass rows).
__device__ __forceinline__ void row_pass_run(const RowReader& src_row, const float* wts, int rank,
                                             int fac_plane, int fac_h, int taps_w, float* dst,
                                             int factor_step) {
  for (int r = 0; r < rank; ++r) {
    float o[kStripRun] = {};
    strip_taps_run(src_row, wts + r * fac_plane + fac_h, taps_w, o);
    float* t = dst + r * factor_step;
    *reinterpret_cast<float4*>(t) = make_float4(o[0], o[1], o[2], o[3]);
    *reinterpret_cast<float4*>(t + 4) = make_float4(o[4], o[5], o[6], o[7]);
  }
}

// A thread's column-pass run: column c of the row-pass rows (each factor's `depth` rows at
// rows + r * factor_step, read from row `first` on, wrapping at depth), kStripRun outputs summed
// over the factors, stored with the bias at output rows oh .. oh + kStripRun - 1 of column ow.
template <typename T>
__device__ __forceinline__ void column_pass_run(const float* rows, int factor_step, int first,
                                                int depth, const float* wts, int rank,
                                                int fac_plane, int taps_h, int c, T* out,
                                                const SeparableGeometry& g, int ow, int oh,
                                                float b) {
  float acc[kStripRun] = {};
  for (int r = 0; r < rank; ++r) {
    const RingReader col{rows + r * factor_step + c, first, depth};
    strip_taps_run(col, wts + r * fac_plane, taps_h, acc);
  }
  if (ow < g.w.out) {
#pragma unroll
    for (int j = 0; j < kStripRun; ++j) {
      if (oh + j < g.h.out) out[std::int64_t(oh + j) * g.w.out + ow] = from_float<T>(acc[j] + b);
    }
  }
}

template <typename T, bool kBorder>
__global__ void __launch_bounds__(kStripThreads) separable_strip_kernel(const SeparableArgs a) {
  extern __shared__ __align__(16) float smem[];
  const SeparableGeometry& g = a.g;
  const int pitch = a.pitch, fac_h = a.fac_h, fac_w = a.fac_w, fac_plane = fac_h + fac_w;
  const int taps_h = strip_taps(g.h.taps), taps_w = strip_taps(g.w.taps);
  const int slots = a.slots, ring_rows = slots * kChunk;
  float* stage = smem;                                 // 2 x kChunk x pitch: source rows
  float* ring = stage + 2 * kChunk * pitch;            // rank x ring_rows x kStripW: row pass
  float* wts = ring + a.rank * ring_rows * kStripW;    // rank x (col, row)

  const int strips = a.tiles_w, tiles = a.tiles;
  const std::int64_t plane = blockIdx.x / tiles;
  const int tile = static_cast<int>(blockIdx.x - plane * tiles);
  const int oh0 = (tile / strips) * g.seg_chunks * kChunk, ow0 = (tile % strips) * kStripW;
  const StripPlane<T, kStripThreads> bp(a, plane, wts, fac_plane);
  const int oc = bp.oc;
  const T* sp = bp.src;
  const int v0 = oh0 + g.h.off, u0 = ow0 + g.w.off;
  // Steps of output rows in this segment, and the steps of row-pass rows they read.
  const int out_steps = min(g.seg_chunks, (g.h.out - oh0 + kChunk - 1) / kChunk);
  const int steps = out_steps + slots - 1;

  const StripStager<T, kBorder> stager(a, u0);
  stager.stage(a, sp, v0, stage);

  // Row pass: row i of the step, outputs rcol .. rcol + 7. Column pass: column c, output rows
  // crow .. crow + 7 of the step.
  const int i = threadIdx.x / (kStripW / kStripRun);
  const int rcol = (threadIdx.x % (kStripW / kStripRun)) * kStripRun;
  const int c = threadIdx.x % kStripW, crow = (threadIdx.x / kStripW) * kStripRun;
  const T* bias = static_cast<const T*>(a.bias);
  const float b = bias ? to_float(bias[oc]) : 0.0f;
  T* out = static_cast<T*>(a.out) + plane * std::int64_t(g.h.out) * g.w.out;

  for (int k = 0; k < steps; ++k) {
    stage_wait();
    // Step k's rows are in; every thread is done with step k - 1 (its buffer and ring slot).
    __syncthreads();
    if (k + 1 < steps) {
      stager.stage(a, sp, v0 + (k + 1) * kChunk, stage + ((k + 1) & 1) * kChunk * pitch);
    }
    const RowReader src_row{stage + (k & 1) * kChunk * pitch + i * pitch + rcol};
    const int slot_row = (k % slots) * kChunk + i;
    row_pass_run(src_row, wts, a.rank, fac_plane, fac_h, taps_w, ring + slot_row * kStripW + rcol,
                 ring_rows * kStripW);
    __syncthreads();
    const int m = k - (slots - 1);  // the output step whose last row-pass rows are in
    if (m < 0) continue;
    column_pass_run(ring, ring_rows * kStripW, (m % slots) * kChunk + crow, ring_rows, wts,
                    a.rank, fac_plane, taps_h, c, out, g, ow0 + c, oh0 + m * kChunk + crow, b);
  }
}

// The whole-strip form: a block of kWholeThreads stages every source row its strip reads, runs
// the row pass over all of them (each thread a run of kStripRun columns of a row, in turns), then
// the column pass (a run of kStripRun rows of a column, in turns), with two barriers.
template <typename T, bool kBorder>
__global__ void __launch_bounds__(kWholeThreads) separable_whole_kernel(const SeparableArgs a) {
  extern __shared__ __align__(16) float smem[];
  const SeparableGeometry& g = a.g;
  const int pitch = a.pitch, fac_h = a.fac_h, fac_w = a.fac_w, fac_plane = fac_h + fac_w;
  const int taps_h = strip_taps(g.h.taps), taps_w = strip_taps(g.w.taps);
  const int pass_rows = a.slots;                        // row-pass rows (SeparableGeometry)
  float* stage = smem;                                  // a.rows x pitch: source rows
  float* rows = stage + a.rows * pitch;                 // rank x pass_rows x kStripW: row pass
  float* wts = rows + a.rank * pass_rows * kStripW;     // rank x (col, row)

  const int strips = a.tiles_w;
  const std::int64_t plane = blockIdx.x / strips;
  const int ow0 = static_cast<int>(blockIdx.x - plane * strips) * kStripW;
  const StripPlane<T, kWholeThreads> bp(a, plane, wts, fac_plane);
  const int oc = bp.oc;
  const T* sp = bp.src;
  {
    const StripStager<T, kBorder, kWholeThreads> stager(a, ow0 + g.w.off);
    for (int v = 0; v < a.rows; v += kChunk) stager.stage(a, sp, g.h.off + v, stage + v * pitch);
  }
  stage_wait();
  __syncthreads();

  constexpr int kRowRuns = kStripW / kStripRun;  // runs of a row
  for (int u = threadIdx.x; u < pass_rows * kRowRuns; u += kWholeThreads) {
    const int i = u / kRowRuns, rcol = (u % kRowRuns) * kStripRun;
    row_pass_run(RowReader{stage + i * pitch + rcol}, wts, a.rank, fac_plane, fac_h, taps_w,
                 rows + i * kStripW + rcol, pass_rows * kStripW);
  }
  __syncthreads();

  const T* bias = static_cast<const T*>(a.bias);
  const float b = bias ? to_float(bias[oc]) : 0.0f;
  T* out = static_cast<T*>(a.out) + plane * std::int64_t(g.h.out) * g.w.out;
  const int out_runs = (g.h.out + kStripRun - 1) / kStripRun * kStripW;
  for (int u = threadIdx.x; u < out_runs; u += kWholeThreads) {
    const int c = u % kStripW, crow = (u / kStripW) * kStripRun;
    // Rows crow .. crow + taps_h + kStripRun - 1, below pass_rows: never wraps.
    column_pass_run(rows, pass_rows * kStripW, crow, pass_rows, wts, a.rank, fac_plane, taps_h, c,
                    out, g, ow0 + c, crow, b);
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
  for (const void* strip : {reinterpret_cast<const void*>(separable_strip_kernel<T, false>),
                            reinterpret_cast<const void*>(separable_strip_kernel<T, true>),
                            reinterpret_cast<const void*>(separable_whole_kernel<T, false>),
                            reinterpret_cast<const void*>(separable_whole_kernel<T, true>)}) {
    FFTCONV_CUDA_CHECK(cudaFuncSetAttribute(strip, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            static_cast<int>(separable::kMaxStripSmemBytes)));
  }
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
  a.tiles_w = (g.w.out + (g.strip() ? kStripW : kTileW) - 1) / (g.strip() ? kStripW : kTileW);
  a.tiles = static_cast<int>(g.blocks_per_plane());
  a.slots = g.whole ? g.pass_rows() : g.strip() ? g.ring_slots() : 0;
  a.step_h_div = IntDivider(static_cast<std::uint32_t>(g.h.step));
  a.step_w_div = IntDivider(static_cast<std::uint32_t>(g.w.step));
  const dim3 grid(static_cast<unsigned>(a.out_planes * a.tiles));
  const std::size_t smem = g.smem_bytes(a.rank);
  const bool uh = g.h.unit(), uw = g.w.unit();
  if (g.whole) {
    if (g.h.border != Border::kZero) {
      separable_whole_kernel<T, true><<<grid, kWholeThreads, smem, stream>>>(a);
    } else {
      separable_whole_kernel<T, false><<<grid, kWholeThreads, smem, stream>>>(a);
    }
  } else if (g.strip()) {
    if (g.h.border != Border::kZero) {
      separable_strip_kernel<T, true><<<grid, kStripThreads, smem, stream>>>(a);
    } else {
      separable_strip_kernel<T, false><<<grid, kStripThreads, smem, stream>>>(a);
    }
  } else if (uh && uw) {
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
