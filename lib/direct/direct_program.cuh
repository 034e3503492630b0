// What a block of the direct kernel does (Algo::kDirect), written once for the device kernel
// (lib/direct/direct_conv.cu) and for the host emulation the CPU tests run
// (tests/cpu/test_direct_program.cu).
//
// A block computes a tile of tile_h x tile_w outputs of one output plane with kThreads threads:
// thread t holds a strip of kStrip adjacent outputs of a tile row and sums the filter rows
// r = part, part + split, ... of every source channel of the group into registers. Per source
// channel:
//   load      the tile's source window (zeros outside the source) and the channel's filter
//             plane (flipped for backward data) into shared memory;
//   compute   each thread's taps; with unit stride and dilation along rows, a window of
//             kStrip + 1 registers slides along the filter row (one shared load per tap and
//             strip, besides the filter tap).
// Then the threads write their partial sums over the window (write_partials) and each output
// is summed over the parts in a fixed order and stored with the bias (store).
// Thread t's tile row is t % tile_h and its part varies next, so a warp's 32 threads read 8 rows
// by 4 filter rows of one column: with odd row pitches, different banks.
#pragma once

#include <cstdint>

#include "direct/direct_conv.h"

namespace fftconv::detail::direct {

/// What block b of the grid computes: the output plane (image n, channel o, group g) and the
/// tile's first output row and column.
struct Block {
  int n, o, g, p0, q0;
};

FFTCONV_HD Block block_of(const DirectGeometry& geo, std::int64_t b) {
  Block k;
  k.q0 = static_cast<int>(b % geo.tiles_w) * geo.tile_w;
  b /= geo.tiles_w;
  k.p0 = static_cast<int>(b % geo.tiles_h) * geo.tile_h;
  b /= geo.tiles_h;
  k.o = static_cast<int>(b % geo.out_c);
  k.n = static_cast<int>(b / geo.out_c);
  k.g = k.o / geo.group_out;
  return k;
}

/// A thread's place: its tile row, its filter-row part and its strip's first column.
struct Lane {
  int row, part, col;
};

FFTCONV_HD Lane lane_of(const DirectGeometry& geo, int tid) {
  const int rest = tid / geo.tile_h;
  return Lane{tid % geo.tile_h, rest % geo.split, (rest / geo.split) * kStrip};
}

/// Loads a thread issues before it stores them (staging): one at a time, each waited out a
/// global-memory latency (a 96x96 plane's tile took 26 in a row, its window and filter rows).
constexpr int kLoadBatch = 8;

/// Copies rows x cols values into dst (row pitch `pitch`): value (i, j) is read(i, j). Rows by
/// warp, columns by lane (coalesced, no division per element); each thread issues up to
/// kLoadBatch reads before it stores them.
#pragma nv_exec_check_disable
template <class Read>
FFTCONV_HD void stage_rows(int rows, int cols, int pitch, int tid, float* dst, const Read& read) {
  constexpr int kWarps = kThreads / 32;
  const int warp = tid / 32, lane = tid % 32;
  const int groups = (cols + 31) / 32;  // column groups of 32 a row
  const int items = (rows > warp ? (rows - warp + kWarps - 1) / kWarps : 0) * groups;
  int i = warp, g = 0;  // the next item's row and column group
  for (int first = 0; first < items; first += kLoadBatch) {
    float v[kLoadBatch];
    int at[kLoadBatch];
    FFTCONV_UNROLL
    for (int u = 0; u < kLoadBatch; ++u) {
      const int j = lane + 32 * g;
      const bool ok = first + u < items && j < cols;
      at[u] = ok ? i * pitch + j : -1;
      v[u] = ok ? read(i, j) : 0.0f;
      if (++g == groups) {
        g = 0;
        i += kWarps;
      }
    }
    FFTCONV_UNROLL
    for (int u = 0; u < kLoadBatch; ++u) {
      if (at[u] >= 0) dst[at[u]] = v[u];
    }
  }
}

/// Stages source channel `ci` of the block's group (the window, zeros outside the source) and
/// its filter plane. src(e) and w(e) read element e of the source and filter tensors as float.
#pragma nv_exec_check_disable
template <class Src, class Filter>
FFTCONV_HD void load(const DirectGeometry& geo, const Block& k, int ci, int tid, float* smem,
                     const Src& src, const Filter& w) {
  const int pitch = geo.win_pitch();
  const std::int64_t plane = std::int64_t(k.n) * geo.src_c + std::int64_t(k.g) * geo.group_in + ci;
  const std::int64_t base = plane * geo.src_h * geo.src_w;
  const int row0 = k.p0 * geo.stride_h - geo.off_h, col0 = k.q0 * geo.stride_w - geo.off_w;
  stage_rows(geo.win_h, geo.win_w, pitch, tid, smem, [&](int i, int j) {
    const int si = row0 + i, sj = col0 + j;
    return si >= 0 && si < geo.src_h && sj >= 0 && sj < geo.src_w
               ? src(base + std::int64_t(si) * geo.src_w + sj)
               : 0.0f;
  });
  // The filter plane: forward w[o][ci][r][s]; backward data w[g * group_in + ci][o'][R-1-r][S-1-s]
  // with o' the output channel's index in its group.
  const std::int64_t taps = std::int64_t(geo.r) * geo.s;
  const std::int64_t fplane =
      geo.transpose
          ? (std::int64_t(k.g) * geo.group_in + ci) * geo.filter_cg + (k.o - k.g * geo.group_out)
          : std::int64_t(k.o) * geo.filter_cg + ci;
  stage_rows(geo.r, geo.s, geo.filter_pitch(), tid, smem + geo.win_h * pitch, [&](int r, int s) {
    const int fr = geo.transpose ? geo.r - 1 - r : r;
    const int fs = geo.transpose ? geo.s - 1 - s : s;
    return w(fplane * taps + std::int64_t(fr) * geo.s + fs);
  });
}

/// Adds the thread's taps of the staged channel to acc.
FFTCONV_HD void compute(const DirectGeometry& geo, int tid, const float* smem, float acc[kStrip]) {
  const Lane l = lane_of(geo, tid);
  const int pitch = geo.win_pitch(), fpitch = geo.filter_pitch();
  const float* filt = smem + geo.win_h * pitch;
  for (int r = l.part; r < geo.r; r += geo.split) {
    const float* x = smem + (l.row * geo.stride_h + r * geo.dil_h) * pitch + l.col * geo.stride_w;
    const float* wr = filt + r * fpitch;
    if (geo.slides()) {
      float x0 = x[0], x1 = x[1], x2 = x[2];
      for (int s = 0; s < geo.s; ++s) {
        const float x3 = x[s + 3], wv = wr[s];
        acc[0] += x0 * wv;
        acc[1] += x1 * wv;
        acc[2] += x2 * wv;
        acc[3] += x3 * wv;
        x0 = x1;
        x1 = x2;
        x2 = x3;
      }
    } else {
      for (int s = 0; s < geo.s; ++s) {
        const float wv = wr[s];
        const float* xs = x + s * geo.dil_w;
        for (int j = 0; j < kStrip; ++j) acc[j] += xs[j * geo.stride_w] * wv;
      }
    }
  }
}

/// Writes the thread's partial sums where store() reads them (over the window: after the last
/// channel's compute and a synchronisation).
FFTCONV_HD void write_partials(const DirectGeometry& geo, int tid, float* smem,
                               const float acc[kStrip]) {
  const Lane l = lane_of(geo, tid);
  const int strip = l.row * (geo.tile_w / kStrip) + l.col / kStrip;
  float* dst = smem + (std::int64_t(l.part) * geo.strips() + strip) * kStrip;
  for (int j = 0; j < kStrip; ++j) dst[j] = acc[j];
}

/// Sums each output of the tile over the parts (in order) and stores it: sink(index, o, v)
/// writes v (plus the bias of channel o) at element `index` of the output tensor.
#pragma nv_exec_check_disable
template <class Sink>
FFTCONV_HD void store(const DirectGeometry& geo, const Block& k, int tid, const float* smem,
                      const Sink& sink) {
  const int outputs = geo.tile_h * geo.tile_w;
  for (int e = tid; e < outputs; e += kThreads) {
    const int pr = e / geo.tile_w, qc = e - (e / geo.tile_w) * geo.tile_w;
    const int p = k.p0 + pr, q = k.q0 + qc;
    if (p >= geo.out_h || q >= geo.out_w) continue;
    const int strip = pr * (geo.tile_w / kStrip) + qc / kStrip;
    float v = 0.0f;
    for (int part = 0; part < geo.split; ++part) {
      v += smem[(std::int64_t(part) * geo.strips() + strip) * kStrip + qc % kStrip];
    }
    const std::int64_t plane = std::int64_t(k.n) * geo.out_c + k.o;
    sink((plane * geo.out_h + p) * geo.out_w + q, k.o, v);
  }
}

// ---- backward filter ----------------------------------------------------------------------------
// Block b: filter plane (k, c') = b / (r * chunks), row r, taps s0 .. s0 + kWgradTaps - 1.
//   accumulate      thread t sums x * dy over its share of the output positions (rows by
//                   warp, columns by lane) into kWgradTaps registers;
//   write_partials  the sums go to shared memory, [tap][thread];
//   fold            thread t (tap t / 32, lane t % 32) adds the 8 threads' sums lane, lane + 32,
//                   ... of its tap into mid[tap][lane];
//   store_wgrad     thread t < kWgradTaps adds its tap's 32 lanes, in order, and stores
//                   alpha * sum + beta * dw.

struct WgradBlock {
  int k, ci, g, r, s0;
};

FFTCONV_HD WgradBlock wgrad_block_of(const DirectWgradGeometry& geo, std::int64_t b) {
  WgradBlock w;
  w.s0 = static_cast<int>(b % geo.chunks) * kWgradTaps;
  b /= geo.chunks;
  w.r = static_cast<int>(b % geo.r);
  b /= geo.r;
  w.ci = static_cast<int>(b % geo.cg);
  w.k = static_cast<int>(b / geo.cg);
  w.g = w.k / geo.kg;
  return w;
}

/// Adds the thread's positions' products to acc: output rows (image, p) by warp, columns q by
/// lane (coalesced, one division per row). x(e) and dy(e) read elements as float.
#pragma nv_exec_check_disable
template <class X, class Dy>
FFTCONV_HD void accumulate_wgrad(const DirectWgradGeometry& geo, const WgradBlock& b, int tid,
                                 const X& x, const Dy& dy, float acc[kWgradTaps]) {
  constexpr int kWarps = kThreads / 32;
  const int warp = tid / 32, lane = tid % 32;
  const std::int64_t rows = std::int64_t(geo.n) * geo.out_h;
  for (std::int64_t rid = warp; rid < rows; rid += kWarps) {
    const int n = static_cast<int>(rid / geo.out_h);
    const int p = static_cast<int>(rid - std::int64_t(n) * geo.out_h);
    const int row = p * geo.stride_h + b.r * geo.dil_h - geo.pad_h;
    if (row < 0 || row >= geo.h) continue;
    const std::int64_t dyrow = ((std::int64_t(n) * geo.k + b.k) * geo.out_h + p) * geo.out_w;
    const std::int64_t xrow =
        ((std::int64_t(n) * geo.c + std::int64_t(b.g) * geo.cg + b.ci) * geo.h + row) * geo.w;
    for (int q = lane; q < geo.out_w; q += 32) {
      const float g = dy(dyrow + q);
      const int col0 = q * geo.stride_w + b.s0 * geo.dil_w - geo.pad_w;
      for (int j = 0; j < kWgradTaps; ++j) {
        if (b.s0 + j >= geo.s) break;  // the row's last chunk
        const int col = col0 + j * geo.dil_w;
        if (col >= 0 && col < geo.w) acc[j] += x(xrow + col) * g;
      }
    }
  }
}

FFTCONV_HD void write_wgrad_partials(int tid, float* smem, const float acc[kWgradTaps]) {
  for (int j = 0; j < kWgradTaps; ++j) smem[j * kThreads + tid] = acc[j];
}

/// mid (after the partials, kWgradTaps x 32 floats): each tap's 256 sums folded into 32.
FFTCONV_HD void fold_wgrad(int tid, float* smem) {
  const int tap = tid / 32, lane = tid % 32;
  const float* src = smem + tap * kThreads;
  float v = 0.0f;
  for (int i = lane; i < kThreads; i += 32) v += src[i];
  smem[kWgradTaps * kThreads + tap * 32 + lane] = v;
}

/// sink(index, v) stores alpha * v + beta * dw at element `index` of dw.
#pragma nv_exec_check_disable
template <class Sink>
FFTCONV_HD void store_wgrad(const DirectWgradGeometry& geo, const WgradBlock& b, int tid,
                            const float* smem, const Sink& sink) {
  if (tid >= kWgradTaps || b.s0 + tid >= geo.s) return;
  const float* mid = smem + kWgradTaps * kThreads + tid * 32;
  float v = 0.0f;
  for (int i = 0; i < 32; ++i) v += mid[i];
  const std::int64_t plane = std::int64_t(b.k) * geo.cg + b.ci;
  sink((plane * geo.r + b.r) * geo.s + b.s0 + tid, v);
}

// ---- backward filter, rows layout (DirectWgradGeometry::rows) -----------------------------------
// Block b: filter plane (k, c') = b / (r_blocks * parts), filter rows r0 .. r0 + rows - 1
// (r0 = b / parts % r_blocks * rows_b), output rows [part * rows_per_part, ...) of the
// n * out_h rows. Thread t < rows * groups_s sums filter row r0 + t / groups_s, taps
// s0 .. s0 + kWgradTaps - 1 (s0 = t % groups_s * kWgradTaps), over every step of its block:
//   stage_step       output row (n, p), columns q0 .. q0 + tile_q - 1: x row
//                    p * sh + (r0 + i) * dh - ph of each filter row i, columns q0 * sw - pw + c
//                    for c < pitch, to xs[i][c] (zero outside the image), and dy's tile to
//                    ds[0 .. tile_q) (zero past out_w);
//   accumulate_rows  row[j] += xs[i][(q - q0) * sw + (s0 + j) * dw] * ds[q - q0] over the tile;
// after an output row's tiles, add_row adds its sums to the thread's totals; and last
// store_rows: its taps (those below s) to dw, or to its part's partial.

struct RowsBlock {
  int k, ci, g, r0, rows, part;
  std::int64_t row_begin, row_end;
};

FFTCONV_HD RowsBlock rows_block_of(const DirectWgradGeometry& geo, std::int64_t b) {
  RowsBlock w;
  w.part = static_cast<int>(b % geo.parts);
  b /= geo.parts;
  w.r0 = static_cast<int>(b % geo.r_blocks) * geo.rows_b;
  b /= geo.r_blocks;
  w.ci = static_cast<int>(b % geo.cg);
  w.k = static_cast<int>(b / geo.cg);
  w.g = w.k / geo.kg;
  w.rows = geo.r - w.r0 < geo.rows_b ? geo.r - w.r0 : geo.rows_b;
  const std::int64_t total = std::int64_t(geo.n) * geo.out_h;
  w.row_begin = std::int64_t(w.part) * geo.rows_per_part;
  w.row_end = w.row_begin + geo.rows_per_part < total ? w.row_begin + geo.rows_per_part : total;
  return w;
}

/// Thread tid's share of the copies of step (output row rid, first column q0), `threads`
/// threads a block: x rows by warp, columns by lane, each row's place and bounds found once and
/// kLoadBatch loads a lane in flight (a generic per-element copy, stage_rows, took about 43
/// instructions an element, as many as the multiply-adds of the landmark row's step; sm_90
/// SASS). x(e), dy(e) read elements as float.
#pragma nv_exec_check_disable
template <class X, class Dy>
FFTCONV_HD void stage_step(const DirectWgradGeometry& geo, const RowsBlock& b, std::int64_t rid,
                           int q0, int tid, int threads, float* smem, const X& x, const Dy& dy) {
  const int n = static_cast<int>(rid / geo.out_h);
  const int p = static_cast<int>(rid - std::int64_t(n) * geo.out_h);
  const std::int64_t xplane =
      (std::int64_t(n) * geo.c + std::int64_t(b.g) * geo.cg + b.ci) * std::int64_t(geo.h);
  const int row0 = p * geo.stride_h + b.r0 * geo.dil_h - geo.pad_h;
  const int col0 = q0 * geo.stride_w - geo.pad_w;
  const int warps = threads / 32, warp = tid / 32, lane = tid % 32;
  for (int i = warp; i < b.rows; i += warps) {
    const int row = row0 + i * geo.dil_h;
    const bool inside = row >= 0 && row < geo.h;
    const std::int64_t base = (xplane + (inside ? row : 0)) * geo.w;
    float* dst = smem + i * geo.pitch;
    for (int c0 = lane; c0 < geo.pitch; c0 += 32 * kLoadBatch) {
      float v[kLoadBatch];
      FFTCONV_UNROLL
      for (int u = 0; u < kLoadBatch; ++u) {
        const int c = c0 + 32 * u, col = col0 + c;
        v[u] = inside && c < geo.pitch && col >= 0 && col < geo.w ? x(base + col) : 0.0f;
      }
      FFTCONV_UNROLL
      for (int u = 0; u < kLoadBatch; ++u) {
        if (c0 + 32 * u < geo.pitch) dst[c0 + 32 * u] = v[u];
      }
    }
  }
  float* ds = smem + geo.rows_b * geo.pitch;
  const std::int64_t dyrow = ((std::int64_t(n) * geo.k + b.k) * geo.out_h + p) * geo.out_w;
  for (int t = tid; t < geo.tile_q; t += threads) {
    ds[t] = q0 + t < geo.out_w ? dy(dyrow + q0 + t) : 0.0f;
  }
}

/// Four adjacent floats of shared memory at a 16-byte aligned address.
FFTCONV_HD void load4(const float* p, float* v) {
#if defined(__CUDA_ARCH__)
  const float4 f = *reinterpret_cast<const float4*>(p);
  v[0] = f.x;
  v[1] = f.y;
  v[2] = f.z;
  v[3] = f.w;
#else
  for (int i = 0; i < 4; ++i) v[i] = p[i];
#endif
}

/// Adds thread tid's products over the staged tile to acc.
FFTCONV_HD void accumulate_rows(const DirectWgradGeometry& geo, const RowsBlock& b, int tid,
                                       const float* smem, float acc[kWgradTaps]) {
  const int rl = tid / geo.groups_s, sg = tid - rl * geo.groups_s;
  if (rl >= b.rows) return;
  const float* ds = smem + geo.rows_b * geo.pitch;
  if (geo.stride_w == 1 && geo.dil_w == 1) {
    // The run's x values for 8 columns are 15 adjacent floats: loaded as four aligned quads
    // (pitch, s0 and q multiples of 4), with the tile's 8 dy values as two.
    const float* xr = smem + rl * geo.pitch + sg * kWgradTaps;
    for (int q = 0; q < geo.tile_q; q += kWgradTaps) {
      float xv[2 * kWgradTaps], dv[kWgradTaps];
      for (int u = 0; u < 2 * kWgradTaps; u += 4) load4(xr + q + u, xv + u);
      for (int u = 0; u < kWgradTaps; u += 4) load4(ds + q + u, dv + u);
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
      for (int u = 0; u < kWgradTaps; ++u) {
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
        for (int j = 0; j < kWgradTaps; ++j) acc[j] += xv[u + j] * dv[u];
      }
    }
    return;
  }
  const float* xr = smem + rl * geo.pitch + sg * kWgradTaps * geo.dil_w;
  for (int q = 0; q < geo.tile_q; ++q) {
    const float d = ds[q];
    const float* xq = xr + q * geo.stride_w;
    for (int j = 0; j < kWgradTaps; ++j) acc[j] += xq[j * geo.dil_w] * d;
  }
}

/// A thread sums each output row's products apart and adds the row's sums to its totals: a
/// serial fp32 sum of n * out_h * out_w terms would lose about sqrt(terms) roundings (1e-5
/// relative at 100000 terms), one of tile_q-sized rows far fewer.
FFTCONV_HD void add_row(float acc[kWgradTaps], const float row[kWgradTaps]) {
  for (int j = 0; j < kWgradTaps; ++j) acc[j] += row[j];
}

/// sink(part, index, v): v, thread tid's sum for tap `index` of dw (its taps below s).
#pragma nv_exec_check_disable
template <class Sink>
FFTCONV_HD void store_rows(const DirectWgradGeometry& geo, const RowsBlock& b, int tid,
                           const float acc[kWgradTaps], const Sink& sink) {
  const int rl = tid / geo.groups_s, sg = tid - rl * geo.groups_s;
  if (rl >= b.rows) return;
  const std::int64_t plane = std::int64_t(b.k) * geo.cg + b.ci;
  const std::int64_t base = (plane * geo.r + b.r0 + rl) * geo.s;
  for (int j = 0; j < kWgradTaps; ++j) {
    const int s = sg * kWgradTaps + j;
    if (s < geo.s) sink(b.part, base + s, acc[j]);
  }
}

}  // namespace fftconv::detail::direct
