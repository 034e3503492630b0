// One FFT plane's 2-D real transform in one thread block, for the FFT path's own plane kernels
// (Options::own_fft, lib/fft/plane_fft.cu): the zero-pad and the r2c in one pass over memory,
// and the c2r and the clip in another. Written once for the device kernels and for the host
// emulation that the CPU tests run (tests/cpu/test_plane_program.cu).
//
// A plane of fh x fw reals has cw = fw/2 + 1 complex columns (cuFFT's half spectrum, in cuFFT's
// layout and unnormalised, so the GEMM and the kept spectra are the same either way). Both
// directions keep one plane in a shared buffer of float2 and transform it by lines:
//   forward   the band of rows that can hold data (the rest are zeros and skip their
//             transform) is copied in from the source tensor two rows per complex line (even
//             row real, odd row imaginary); the row passes; the column passes, whose first
//             separates each line's two real spectra as it reads them; the spectrum copied out.
//   inverse   the spectrum copied in; the column passes; the passes of the rows the output
//             window reads, two per complex line (Hermitian completion as the first reads them),
//             whose real results stay in the buffer for the window's gather.
// Every line is transformed by Stockham passes of runtime radix (2 to 16, smooth), a butterfly
// per work item: its R points are read, multiplied by twiddles from a table and transformed in
// registers (smooth_dft<R>), the block synchronises, and the points are written to their
// self-sorted places (output in natural order, no bit reversal). All reads of a pass complete
// before any write, so one buffer serves every pass in place. Consecutive threads take
// consecutive points of a row (skewed against bank conflicts: row_slot), or consecutive columns;
// the copies between global and shared memory are coalesced, four reads in flight per thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "fused/line_dft.cuh"
#include "geometry/index_math.h"
#include "geometry/int_divider.h"

namespace fftconv::detail::planefft {

using fused::cadd;
using fused::cconj;
using fused::cmul;
using fused::csub;
using fused::smooth_dft;
using fused::static_for;
using fused::times_i;
using fused::times_minus_i;

constexpr int kMaxPasses = 6;
/// Butterflies a thread holds per pass: up to 4, and up to `points` points (16 or 32, the
/// kernels' two register budgets). A block has enough threads for every butterfly of every pass.
FFTCONV_DFT_HD constexpr int items_of(int points, int radix) {
  return points / radix < 4 ? (points / radix > 1 ? points / radix : 1) : 4;
}
/// The register budgets: 16 points where the plane's passes then fit kMaxThreads threads (the
/// kernel capped at 80 registers), else 32 (128 registers).
constexpr int kSmallPoints = 16, kLargePoints = 32;
constexpr int kMaxThreads = 512;  // the kernels' launch bound: 128 registers a thread
/// Shared memory of a block at most (the buffer and the two twiddle tables): two blocks per SM.
constexpr std::size_t kMaxSmemBytes = 100 * 1024;
/// Radices of the passes, tried largest first when a line length is split.
constexpr int kRadices[] = {16, 9, 8, 7, 6, 5, 4, 3, 2};

// ---- a line's passes, and a plane's plan --------------------------------------------------------

/// One Stockham pass over lines of n points: butterfly j (of n / radix) reads points
/// j + m n/radix, multiplies them by w_(ns radix)^(k m) (k = j mod ns), transforms them and
/// writes them to (j - k) radix + k + m ns.
struct PassInfo {
  int radix = 1;
  int ns = 1;       ///< points of the sub-transforms done before (the earlier radices' product)
  int tw_step = 1;  ///< n / (ns radix): the stride in the table of w_n^t
  IntDivider nr;    ///< n / radix, the butterflies of a line
  IntDivider ns_div;
};

struct LinePasses {
  int n = 0, count = 0;
  PassInfo pass[kMaxPasses];
};

/// Splits n >= 2 into passes (largest radix first); false when n has a prime factor above 7 or
/// needs more than kMaxPasses passes.
inline bool make_line_passes(int n, LinePasses* lp) {
  if (n < 2) return false;
  *lp = LinePasses{};
  lp->n = n;
  int rest = n, ns = 1;
  while (rest > 1) {
    int radix = 0;
    for (int r : kRadices) {
      if (rest % r == 0) {
        radix = r;
        break;
      }
    }
    if (radix == 0 || lp->count == kMaxPasses) return false;
    PassInfo& p = lp->pass[lp->count++];
    p.radix = radix;
    p.ns = ns;
    p.tw_step = n / (ns * radix);
    p.nr = IntDivider(static_cast<std::uint32_t>(n / radix));
    p.ns_div = IntDivider(static_cast<std::uint32_t>(ns));
    ns *= radix;
    rest /= radix;
  }
  return true;
}

/// What a block needs to transform one fh x fw plane.
struct PlaneFftPlan {
  int fh = 0, fw = 0, cw = 0;  ///< FFT size; complex columns fw/2 + 1
  LinePasses rows, cols;       ///< along a row (n = fw) and along a column (n = fh)
  IntDivider cw_div;           ///< the column passes' lines
  IntDivider fw_div;           ///< a row line's points (the forward program's staging)
  int row_pitch = 0;           ///< complex values a row line takes (skewed: row_slot)
  int points = 0;              ///< points a thread holds per pass (kSmallPoints or kLargePoints)
  int threads = 0;             ///< of a block
  int buffer = 0;              ///< complex values of the plane's buffer
  /// The buffer, then the twiddle tables of the columns (fh) and of the rows (fw).
  std::size_t smem_bytes() const {
    return sizeof(float2) * static_cast<std::size_t>(buffer + fh + fw);
  }
};

/// Threads a block needs for the passes of a line plan over `lines` lines, `points` points a
/// thread.
inline std::int64_t threads_for(const LinePasses& lp, std::int64_t lines, int points) {
  std::int64_t most = 0;
  for (int i = 0; i < lp.count; ++i) {
    const int items = items_of(points, lp.pass[i].radix);
    const std::int64_t threads = (lines * (lp.n / lp.pass[i].radix) + items - 1) / items;
    if (threads > most) most = threads;
  }
  return most;
}

/// The plan of an fh x fw plane; false (and why) when the size is not one the kernels take.
inline bool make_plane_fft_plan(std::int64_t fh, std::int64_t fw, PlaneFftPlan* plan,
                                std::string* why) {
  const auto no = [&](const std::string& reason) {
    if (why) *why = reason;
    return false;
  };
  const std::string size = std::to_string(fh) + "x" + std::to_string(fw);
  if (fh < 2 || fw < 2 || fh > 4096 || fw > 4096) return no("FFT size " + size + " out of range");
  PlaneFftPlan p;
  p.fh = static_cast<int>(fh);
  p.fw = static_cast<int>(fw);
  p.cw = p.fw / 2 + 1;
  if (!make_line_passes(p.fw, &p.rows) || !make_line_passes(p.fh, &p.cols)) {
    return no("FFT size " + size + " does not split into passes of radix 2 to 16");
  }
  p.cw_div = IntDivider(static_cast<std::uint32_t>(p.cw));
  p.fw_div = IntDivider(static_cast<std::uint32_t>(p.fw));
  p.row_pitch = p.fw + p.fw / 16;
  const std::int64_t lines = (fh + 1) / 2;  // complex row lines of a whole plane
  const std::int64_t by_rows = lines * p.row_pitch, by_cols = fh * p.cw;
  p.buffer = static_cast<int>(by_rows > by_cols ? by_rows : by_cols);
  const auto threads_of = [&](int points) {
    const std::int64_t by_row_passes = threads_for(p.rows, lines, points);
    const std::int64_t by_col_passes = threads_for(p.cols, p.cw, points);
    return ((by_row_passes > by_col_passes ? by_row_passes : by_col_passes) + 31) / 32 * 32;
  };
  p.points = threads_of(kSmallPoints) <= kMaxThreads ? kSmallPoints : kLargePoints;
  const std::int64_t threads = threads_of(p.points);
  if (p.smem_bytes() > kMaxSmemBytes) {
    return no("a plane of " + size + " needs " + std::to_string(p.smem_bytes()) +
              " bytes of shared memory, over " + std::to_string(kMaxSmemBytes));
  }
  if (threads > kMaxThreads) {
    return no("a plane of " + size + " needs " + std::to_string(threads) + " threads, over " +
              std::to_string(kMaxThreads) + " (passes of small radices)");
  }
  p.threads = static_cast<int>(threads < 64 ? 64 : threads);
  *plan = p;
  return true;
}

// ---- the programs
// ----------------------------------------------------------------------------------

/// w_n^t = exp(-2 pi i t / n), from double-precision trigonometry (exact at quarter turns).
FFTCONV_DFT_HD float2 root(int t, int n) {
  const fused::SinCos sc = fused::sincos_turn(double(t) / double(n));
  return make_float2(static_cast<float>(sc.c), -static_cast<float>(sc.s));
}

/// The twiddle tables of a plan, as the kernels keep them after the buffer: w_fh^t for t < fh,
/// then w_fw^t for t < fw. Built once on the host; each block copies them.
template <class Vec>
void fill_twiddle_table(const PlaneFftPlan& pl, Vec& table) {
  table.resize(static_cast<std::size_t>(pl.fh + pl.fw));
  for (int t = 0; t < pl.fh; ++t) table[t] = root(t, pl.fh);
  for (int t = 0; t < pl.fw; ++t) table[pl.fh + t] = root(t, pl.fw);
}

/// Slot of point e of a row line: one complex value of padding after every 16, so that a pass
/// whose butterflies write R apart (the first, at stride R = 4, 8 or 16) spreads over the banks.
FFTCONV_DFT_HD int row_slot(int e) { return e + (e >> 4); }

/// A thread's butterflies of one pass: up to kPoints points (items_of(kPoints, R) butterflies of
/// R points, butterfly `it` at v[it * R]), each butterfly's line and first output. One type for
/// every radix, so the registers live across a pass's synchronisation are the same whatever the
/// radix (per-radix states were merged at the barrier and spilled).
constexpr int kMaxItems = 4;
template <int kPoints>
struct PassRegs {
  float2 v[kPoints];
  int line[kMaxItems];
  int dst[kMaxItems];
};

/// The read half of a pass of radix R: thread t of `threads` takes butterflies t, t + threads,
/// ...; load(line, point) gives a point. line_fast: consecutive butterflies are consecutive
/// lines (lines_div divides by the line count), else consecutive butterflies of one line.
#pragma nv_exec_check_disable
template <int R, bool kInverse, int kPoints, class Load>
FFTCONV_DFT_HD void pass_read(int t, int threads, const PassInfo& p, int lines, bool line_fast,
                              const IntDivider& lines_div, const float2* tw, Load&& load,
                              PassRegs<kPoints>& s) {
  constexpr int kItems = items_of(kPoints, R);
  static_assert(kItems * R <= kPoints && kItems <= kMaxItems, "a pass's registers");
  const int nr = static_cast<int>(p.nr.divisor());
  const int total = lines * nr;
  FFTCONV_DFT_UNROLL
  for (int it = 0; it < kItems; ++it) {
    const int item = t + it * threads;
    s.line[it] = -1;
    if (item < total) {
      int l = 0, j = 0, q = 0, k = 0;
      if (line_fast) {
        lines_div.divmod(item, j, l);
      } else {
        p.nr.divmod(item, l, j);
      }
      p.ns_div.divmod(j, q, k);
      s.line[it] = l;
      s.dst[it] = q * p.ns * R + k;
      float2 v[R];
      FFTCONV_DFT_UNROLL
      for (int m = 0; m < R; ++m) v[m] = load(l, j + m * nr);
      if (k != 0) {
        FFTCONV_DFT_UNROLL
        for (int m = 1; m < R; ++m) {
          const float2 w = tw[k * m * p.tw_step];
          v[m] = cmul(v[m], kInverse ? cconj(w) : w);
        }
      }
      smooth_dft<R, kInverse>(v);
      FFTCONV_DFT_UNROLL
      for (int m = 0; m < R; ++m) s.v[it * R + m] = v[m];
    }
  }
}

/// The write half: store(line, point, value) for each point of each butterfly held.
#pragma nv_exec_check_disable
template <int R, int kPoints, class Store>
FFTCONV_DFT_HD void pass_write(const PassInfo& p, Store&& store, const PassRegs<kPoints>& s) {
  FFTCONV_DFT_UNROLL
  for (int it = 0; it < items_of(kPoints, R); ++it) {
    if (s.line[it] < 0) continue;
    FFTCONV_DFT_UNROLL
    for (int m = 0; m < R; ++m) store(s.line[it], s.dst[it] + m * p.ns, s.v[it * R + m]);
  }
}

/// Calls fn(std::integral_constant<int, R>) for the pass's radix (uniform over the block).
#pragma nv_exec_check_disable
template <class Fn>
FFTCONV_DFT_HD void with_radix(int radix, Fn&& fn) {
  switch (radix) {
    case 2:
      fn(std::integral_constant<int, 2>{});
      break;
    case 3:
      fn(std::integral_constant<int, 3>{});
      break;
    case 4:
      fn(std::integral_constant<int, 4>{});
      break;
    case 5:
      fn(std::integral_constant<int, 5>{});
      break;
    case 6:
      fn(std::integral_constant<int, 6>{});
      break;
    case 7:
      fn(std::integral_constant<int, 7>{});
      break;
    case 8:
      fn(std::integral_constant<int, 8>{});
      break;
    case 9:
      fn(std::integral_constant<int, 9>{});
      break;
    default:
      fn(std::integral_constant<int, 16>{});
      break;  // make_line_passes: no other radix
  }
}

/// One pass as the two halves of a step, for Exec::step (members, not lambdas, so that they
/// inline and the butterflies stay in registers).
template <bool kInverse, int kPoints, class Load, class Store>
struct PassBody {
  using State = PassRegs<kPoints>;
  const PassInfo& p;
  int lines;
  bool line_fast;
  const IntDivider& lines_div;
  const float2* tw;
  Load& load;
  Store& store;
#pragma nv_exec_check_disable
  FFTCONV_DFT_HD void read(int t, int threads, State& s) const {
    with_radix(p.radix, [&](auto rc) {
      pass_read<decltype(rc)::value, kInverse, kPoints>(t, threads, p, lines, line_fast, lines_div,
                                                        tw, load, s);
    });
  }
#pragma nv_exec_check_disable
  FFTCONV_DFT_HD void write(int, int, const State& s) const {
    with_radix(p.radix, [&](auto rc) { pass_write<decltype(rc)::value, kPoints>(p, store, s); });
  }
};

/// One pass over every line, its radix dispatched to smooth_dft<R>. ex.step(body) runs
/// body.read(t, threads, state) on every thread, synchronises, then body.write(t, threads,
/// state), and synchronises again.
#pragma nv_exec_check_disable
template <bool kInverse, int kPoints, class Exec, class Load, class Store>
FFTCONV_DFT_HD void run_pass(Exec& ex, const PassInfo& p, int lines, bool line_fast,
                             const IntDivider& lines_div, const float2* tw, Load& load,
                             Store& store) {
  ex.step(
      PassBody<kInverse, kPoints, Load, Store>{p, lines, line_fast, lines_div, tw, load, store});
}

/// Copies the twiddle tables (fill_twiddle_table's fh + fw values) to tw and synchronises.
#pragma nv_exec_check_disable
template <class Exec>
FFTCONV_DFT_HD void load_twiddles(Exec& ex, const PlaneFftPlan& pl, const float2* table,
                                  float2* tw) {
  ex.each([&](int t, int threads) {
    for (int i = t; i < pl.fh + pl.fw; i += threads) tw[i] = table[i];
  });
}

/// Elements a thread moves per round between global and shared memory: every read of a round is
/// issued before its first write, so their latencies overlap.
constexpr int kCopyRound = 4;

/// put(i, get(i)) for i in [0, total), thread t taking t, t + threads, ..., in rounds.
#pragma nv_exec_check_disable
template <class Get, class Put>
FFTCONV_DFT_HD void copy_rounds(int t, int threads, int total, Get&& get, Put&& put) {
  for (int base = t; base < total; base += kCopyRound * threads) {
    float2 v[kCopyRound];
    FFTCONV_DFT_UNROLL
    for (int u = 0; u < kCopyRound; ++u) {
      const int i = base + u * threads;
      if (i < total) v[u] = get(i);
    }
    FFTCONV_DFT_UNROLL
    for (int u = 0; u < kCopyRound; ++u) {
      const int i = base + u * threads;
      if (i < total) put(i, v[u]);
    }
  }
}

/// The rows [band0, band0 + rows) of an FFT plane of extent f that a source of `src` rows
/// placed at `off` with `step` can reach (placed_source); every other row holds zeros.
FFTCONV_DFT_HD void placed_band(std::int64_t off, std::int64_t src, std::int64_t step, int f,
                                int& band0, int& rows) {
  const std::int64_t last = off + (src - 1) * step;
  const std::int64_t lo = off > 0 ? off : 0;
  const std::int64_t hi = last < f - 1 ? last : f - 1;
  band0 = static_cast<int>(lo < f ? lo : f);
  rows = hi >= lo ? static_cast<int>(hi - lo + 1) : 0;
}

/// The rows [band0, band0 + rows) of a result plane of extent f that a window of `tile`
/// outputs reads (clip_read): [off, off + (tile - 1) stride] inside the period; the whole period
/// when the reads wrap past it; up to its end when they read zeros past it.
FFTCONV_DFT_HD void window_band(std::int64_t off, std::int64_t stride, std::int64_t tile, int f,
                                bool wrap, int& band0, int& rows) {
  const std::int64_t last = off + (tile - 1) * stride;
  if (last < f) {
    band0 = static_cast<int>(off);
    rows = static_cast<int>(last - off + 1);
  } else if (wrap) {
    band0 = 0;
    rows = f;
  } else {
    band0 = static_cast<int>(off < f ? off : f);
    rows = f - band0;
  }
}

/// Zero-pad and r2c of one plane. src(row, col) is the padded plane's value at (row, col) for
/// rows in [band0, band0 + band_rows) (every other row is zero and not asked for), read once
/// each, consecutive threads at consecutive columns; out(i, value) takes bin i of the fh x cw
/// spectrum (row-major), once each, consecutive threads at consecutive bins. tw_h and tw_w
/// hold the twiddles.
#pragma nv_exec_check_disable
template <int kPoints, class Exec, class Src, class Out>
FFTCONV_DFT_HD void forward_program(Exec& ex, const PlaneFftPlan& pl, float2* buf,
                                    const float2* tw_h, const float2* tw_w, int band0,
                                    int band_rows, Src&& src, Out&& out) {
  const int fw = pl.fw, cw = pl.cw, rp = pl.row_pitch;
  const int lines = (band_rows + 1) / 2;
  // The band's rows, two to a complex line: line l is rows band0 + 2l (real) and + 1 (imaginary).
  ex.each([&](int t, int threads) {
    copy_rounds(
        t, threads, lines * fw,
        [&](int i) {
          int l = 0, x = 0;
          pl.fw_div.divmod(i, l, x);
          const int r = band0 + 2 * l;
          return make_float2(src(r, x), 2 * l + 1 < band_rows ? src(r + 1, x) : 0.0f);
        },
        [&](int i, float2 v) {
          int l = 0, x = 0;
          pl.fw_div.divmod(i, l, x);
          buf[l * rp + row_slot(x)] = v;
        });
  });
  bool first = true;
  const auto row_load = [&](int l, int e) { return buf[l * rp + row_slot(e)]; };
  const auto row_store = [&](int l, int e, float2 v) { buf[l * rp + row_slot(e)] = v; };
  for (int i = 0; i < pl.rows.count; ++i) {
    run_pass<false, kPoints>(ex, pl.rows.pass[i], lines, false, pl.cw_div, tw_w, row_load,
                             row_store);
  }
  // Row u of the band is line u/2's real (even u) or imaginary (odd u) part: with Z that line's
  // spectrum and Zm = Z[-c], its spectrum is (Z + conj Zm)/2 or -i (Z - conj Zm)/2. The first
  // column pass reads them so (a branch uniform over the block).
  const auto col_load = [&](int c, int e) {
    if (!first) return buf[e * cw + c];
    const int u = e - band0;
    if (u < 0 || u >= band_rows) return make_float2(0.0f, 0.0f);
    const float2* line = buf + (u >> 1) * rp;
    const float2 z = line[row_slot(c)], zm = line[row_slot(c == 0 ? 0 : fw - c)];
    return (u & 1) == 0 ? make_float2(0.5f * (z.x + zm.x), 0.5f * (z.y - zm.y))
                        : make_float2(0.5f * (z.y + zm.y), 0.5f * (zm.x - z.x));
  };
  const auto col_store = [&](int c, int e, float2 v) { buf[e * cw + c] = v; };
  for (int i = 0; i < pl.cols.count; ++i) {
    first = i == 0;
    run_pass<false, kPoints>(ex, pl.cols.pass[i], cw, true, pl.cw_div, tw_h, col_load, col_store);
  }
  ex.each([&](int t, int threads) {
    copy_rounds(
        t, threads, pl.fh * cw, [&](int i) { return buf[i]; }, [&](int i, float2 v) { out(i, v); });
  });
}

/// The output window of one result plane: outputs (p, q), p < out_h, q < out_w (the tile's
/// extent; items run over tile_h x tile_w, the full tile, divided by tile_w_div), read the real
/// result at (clip_read(p, stride_h, off_h, fh, wrap), clip_read(q, ...)), a -1 reading zero.
struct PlaneWindow {
  int out_h = 0, out_w = 0;
  int tile_h = 0;
  IntDivider tile_w_div;
  int stride_h = 1, stride_w = 1, off_h = 0, off_w = 0;
  bool wrap = true;
};

/// Where result plane rp of the c2r goes: result plane (n * tiles + tile) * k + kk holds tile
/// `tile` (tile_h * tiles_w + tile_w) of output plane n * k + kk (clip_plane_source). The tile's
/// outputs start at (oh0, ow0); the last tiles of a row or column may be partial.
struct ResultTile {
  std::int64_t out_plane;
  int filter;  ///< kk: the bias's index
  int oh0, ow0;
  int out_h, out_w;  ///< the tile's outputs, at most tile_out_h x tile_out_w
};

FFTCONV_DFT_HD ResultTile result_tile(int rp, const IntDivider& k, const IntDivider& tiles,
                                      const IntDivider& tiles_w, int tile_out_h, int tile_out_w,
                                      int out_h, int out_w) {
  int rest = 0, kk = 0, n = 0, tile = 0, th = 0, tw = 0;
  k.divmod(rp, rest, kk);
  tiles.divmod(rest, n, tile);
  tiles_w.divmod(tile, th, tw);
  ResultTile r;
  r.out_plane = static_cast<std::int64_t>(n) * static_cast<int>(k.divisor()) + kk;
  r.filter = kk;
  r.oh0 = th * tile_out_h;
  r.ow0 = tw * tile_out_w;
  r.out_h = tile_out_h < out_h - r.oh0 ? tile_out_h : out_h - r.oh0;
  r.out_w = tile_out_w < out_w - r.ow0 ? tile_out_w : out_w - r.ow0;
  return r;
}

/// c2r of one spectrum plane, then its window. spec(i) gives bin i of the fh x cw spectrum
/// (row-major), read once each, consecutive threads at consecutive bins; the rows [band0,
/// band0 + band_rows) of the real result must hold every row the window reads. emit(p, q,
/// value) takes each output of the window once, unscaled, consecutive threads at consecutive q.
#pragma nv_exec_check_disable
template <int kPoints, class Exec, class Spec, class Emit>
FFTCONV_DFT_HD void inverse_program(Exec& ex, const PlaneFftPlan& pl, float2* buf,
                                    const float2* tw_h, const float2* tw_w, int band0,
                                    int band_rows, const PlaneWindow& win, Spec&& spec,
                                    Emit&& emit) {
  const int fw = pl.fw, cw = pl.cw, rp = pl.row_pitch;
  ex.each([&](int t, int threads) {
    copy_rounds(
        t, threads, pl.fh * cw, [&](int i) { return spec(i); },
        [&](int i, float2 v) { buf[i] = v; });
  });
  bool first = true, last = false;
  const auto col_load = [&](int c, int e) { return buf[e * cw + c]; };
  const auto col_store = [&](int c, int e, float2 v) { buf[e * cw + c] = v; };
  for (int i = 0; i < pl.cols.count; ++i) {
    run_pass<true, kPoints>(ex, pl.cols.pass[i], cw, true, pl.cw_div, tw_h, col_load, col_store);
  }
  // Line l pairs rows band0 + 2l and band0 + 2l + 1 as Y1 + i Y2 over all fw columns, the
  // columns past cw completed by Hermitian symmetry (Y[-c] = conj Y[c]); the imaginary parts
  // of the columns that are their own mirror (0 and fw/2) are rounding and dropped, as a c2r does.
  const int lines = (band_rows + 1) / 2;
  const auto row_load = [&](int l, int e) {
    if (!first) return buf[l * rp + row_slot(e)];
    const int r = band0 + 2 * l;
    const bool second = 2 * l + 1 < band_rows;
    const bool mirrored = e > fw / 2;
    const int c = mirrored ? fw - e : e;
    float2 y1 = buf[r * cw + c];
    float2 y2 = second ? buf[(r + 1) * cw + c] : make_float2(0.0f, 0.0f);
    if (mirrored) {
      y1 = cconj(y1);
      y2 = cconj(y2);
    } else if (c == 0 || 2 * c == fw) {
      y1.y = 0.0f;
      y2.y = 0.0f;
    }
    return make_float2(y1.x - y2.y, y1.y + y2.x);
  };
  // The last pass leaves the real rows, band row u at u * fw floats.
  float* real = reinterpret_cast<float*>(buf);
  const auto row_store = [&](int l, int e, float2 v) {
    if (!last) {
      buf[l * rp + row_slot(e)] = v;
      return;
    }
    real[2 * l * fw + e] = v.x;
    if (2 * l + 1 < band_rows) real[(2 * l + 1) * fw + e] = v.y;
  };
  for (int i = 0; i < pl.rows.count; ++i) {
    first = i == 0;
    last = i == pl.rows.count - 1;
    run_pass<true, kPoints>(ex, pl.rows.pass[i], lines, false, pl.cw_div, tw_w, row_load,
                            row_store);
  }
  ex.each([&](int t, int threads) {
    const int items = win.tile_h * static_cast<int>(win.tile_w_div.divisor());
    for (int item = t; item < items; item += threads) {
      int p = 0, q = 0;
      win.tile_w_div.divmod(item, p, q);
      if (p >= win.out_h || q >= win.out_w) continue;
      const int row = clip_read<int>(p, win.stride_h, win.off_h, pl.fh, win.wrap);
      const int col = clip_read<int>(q, win.stride_w, win.off_w, pl.fw, win.wrap);
      emit(p, q, row >= 0 && col >= 0 ? real[(row - band0) * fw + col] : 0.0f);
    }
  });
}

}  // namespace fftconv::detail::planefft
