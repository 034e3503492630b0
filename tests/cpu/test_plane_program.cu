// The FFT path's own plane transforms (lib/fft/plane_program.cuh) emulated on the host: each pass
// runs every thread's read half, then every thread's write half, as the kernels do between their
// synchronisations, on the same code. Checked against 2-D DFTs in double precision: the
// in-register DFTs of every radix, the forward program (zero rows outside a band, rows paired
// into complex lines, the spectra separated) and the inverse program with its window (offsets,
// strides, wrap, partial tiles), on FFT sizes of one to four passes, odd and even. The buffer
// starts as NaN: a pass that read what no pass wrote would poison the result.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "fft/plane_program.cuh"

namespace fftconv {
namespace {

namespace pf = detail::planefft;
using cd = std::complex<double>;

// Every thread's half of a step in turn; the members are host-device only so that the
// programs' host-device lambdas may call them (they run on the host alone).
struct HostExec {
  int threads;
#pragma nv_exec_check_disable
  template <class Body>
  __host__ __device__ void step(const Body& body) {
    std::vector<typename Body::State> s(static_cast<std::size_t>(threads));
    for (int t = 0; t < threads; ++t) body.read(t, threads, s[t]);
    for (int t = 0; t < threads; ++t) body.write(t, threads, s[t]);
  }
#pragma nv_exec_check_disable
  template <class Fn>
  __host__ __device__ void each(Fn&& fn) {
    for (int t = 0; t < threads; ++t) fn(t, threads);
  }
};

// A host callable the programs' host-device code may call.
template <class Fn>
struct HostFn {
  Fn fn;
#pragma nv_exec_check_disable
  template <class... A>
  __host__ __device__ auto operator()(A... a) const {
    return fn(a...);
  }
};
template <class Fn>
HostFn<Fn> host_fn(Fn fn) {
  return HostFn<Fn>{fn};
}

// The register budgets a plan can run with: its own, and the larger one (whose passes need no
// more threads), so that the emulation covers both kernels' programs.
std::vector<int> budgets(const detail::planefft::PlaneFftPlan& pl) {
  if (pl.points == detail::planefft::kSmallPoints) {
    return {detail::planefft::kSmallPoints, detail::planefft::kLargePoints};
  }
  return {pl.points};
}

template <class Fn>
void with_points(int points, Fn&& fn) {
  if (points == detail::planefft::kSmallPoints) {
    fn(std::integral_constant<int, detail::planefft::kSmallPoints>{});
  } else {
    fn(std::integral_constant<int, detail::planefft::kLargePoints>{});
  }
}

const double kPi = std::acos(-1.0);

cd unit(double turns) { return std::polar(1.0, -2.0 * kPi * turns); }

// X[k] = sum_n v[n] exp(-+2 pi i n k / n_points), in double.
std::vector<cd> dft_ref(const std::vector<cd>& v, bool inverse) {
  const std::size_t n = v.size();
  std::vector<cd> x(n);
  for (std::size_t k = 0; k < n; ++k) {
    cd acc = 0;
    for (std::size_t j = 0; j < n; ++j) {
      const cd w = unit(double((j * k) % n) / double(n));
      acc += v[j] * (inverse ? std::conj(w) : w);
    }
    x[k] = acc;
  }
  return x;
}

double rel_l2(const std::vector<cd>& got, const std::vector<cd>& want) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    num += std::norm(got[i] - want[i]);
    den += std::norm(want[i]);
  }
  return std::sqrt(num / (den > 0 ? den : 1.0));
}

template <int R, bool kInverse>
void check_dft(std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  float2 v[R];
  std::vector<cd> ref(R);
  for (int i = 0; i < R; ++i) {
    v[i] = make_float2(u(rng), u(rng));
    ref[i] = cd(v[i].x, v[i].y);
  }
  pf::smooth_dft<R, kInverse>(v);
  const std::vector<cd> want = dft_ref(ref, kInverse);
  std::vector<cd> got(R);
  for (int i = 0; i < R; ++i) got[i] = cd(v[i].x, v[i].y);
  EXPECT_LT(rel_l2(got, want), 3e-7) << "R=" << R << " inverse=" << kInverse;
}

TEST(PlaneProgram, RegisterDftOfEveryRadix) {
  std::mt19937 rng(5);
  pf::static_for<0, 2>([&](auto ic) {
    constexpr bool kInv = decltype(ic)::value == 1;
    check_dft<2, kInv>(rng);
    check_dft<3, kInv>(rng);
    check_dft<4, kInv>(rng);
    check_dft<5, kInv>(rng);
    check_dft<6, kInv>(rng);
    check_dft<7, kInv>(rng);
    check_dft<8, kInv>(rng);
    check_dft<9, kInv>(rng);
    check_dft<10, kInv>(rng);
    check_dft<12, kInv>(rng);
    check_dft<15, kInv>(rng);
    check_dft<11, kInv>(rng);
    check_dft<13, kInv>(rng);
    check_dft<14, kInv>(rng);
    check_dft<16, kInv>(rng);
  });
}

TEST(PlaneProgram, PlansSplitSmoothSizesOnly) {
  pf::PlaneFftPlan p;
  std::string why;
  ASSERT_TRUE(pf::make_plane_fft_plan(81, 81, &p, &why)) << why;
  EXPECT_EQ(p.rows.count, 2);
  EXPECT_EQ(p.rows.pass[0].radix, 9);
  EXPECT_EQ(p.cw, 41);
  EXPECT_EQ(p.points, pf::kSmallPoints);  // 41 lines x 9 butterflies: 384 threads of one each
  EXPECT_LE(p.smem_bytes(), pf::kMaxSmemBytes);
  ASSERT_TRUE(pf::make_plane_fft_plan(128, 96, &p, &why)) << why;
  EXPECT_EQ(p.cols.count, 2);  // 16 x 8
  EXPECT_EQ(p.rows.count, 2);  // 16 x 6
  EXPECT_LE(p.threads, pf::kMaxThreads);
  ASSERT_TRUE(pf::make_plane_fft_plan(128, 128, &p, &why)) << why;
  EXPECT_EQ(p.points, pf::kLargePoints);  // 16 points a thread would need 544 threads
  EXPECT_FALSE(pf::make_plane_fft_plan(88, 81, &p, &why));  // 11
  EXPECT_FALSE(pf::make_plane_fft_plan(81, 26, &p, &why));  // 13
  EXPECT_NE(why.find("radix"), std::string::npos) << why;
  EXPECT_FALSE(pf::make_plane_fft_plan(1, 81, &p, &why));
  EXPECT_FALSE(pf::make_plane_fft_plan(160, 160, &p, &why));  // over the shared memory
  EXPECT_NE(why.find("shared memory"), std::string::npos) << why;
  EXPECT_FALSE(pf::make_plane_fft_plan(98, 98, &p, &why));  // a radix-2 pass: too many threads
  EXPECT_NE(why.find("threads"), std::string::npos) << why;
  // Every pass's butterflies fit the block's threads.
  for (int n : {2, 9, 16, 27, 49, 64, 81, 96, 100, 112, 128}) {
    ASSERT_TRUE(pf::make_plane_fft_plan(n, n, &p, &why)) << n << ": " << why;
    EXPECT_GE(p.threads, pf::threads_for(p.rows, (n + 1) / 2, p.points)) << n;
    EXPECT_GE(p.threads, pf::threads_for(p.cols, p.cw, p.points)) << n;
    EXPECT_LE(p.threads, pf::kMaxThreads) << n;
    int prod = 1;
    for (int i = 0; i < p.rows.count; ++i) prod *= p.rows.pass[i].radix;
    EXPECT_EQ(prod, n);
  }
}

// 2-D DFT of a real fh x fw plane, bins (u, c) for c < fw/2 + 1, in double.
std::vector<cd> spectrum_ref(const std::vector<double>& a, int fh, int fw, bool inverse = false) {
  const int cw = fw / 2 + 1;
  std::vector<cd> rows(static_cast<std::size_t>(fh) * cw);
  for (int r = 0; r < fh; ++r) {
    for (int c = 0; c < cw; ++c) {
      cd acc = 0;
      for (int x = 0; x < fw; ++x) {
        const cd w = unit(double((std::int64_t(x) * c) % fw) / fw);
        acc += a[std::size_t(r) * fw + x] * (inverse ? std::conj(w) : w);
      }
      rows[std::size_t(r) * cw + c] = acc;
    }
  }
  std::vector<cd> out(rows.size());
  for (int u = 0; u < fh; ++u) {
    for (int c = 0; c < cw; ++c) {
      cd acc = 0;
      for (int r = 0; r < fh; ++r) {
        const cd w = unit(double((std::int64_t(r) * u) % fh) / fh);
        acc += rows[std::size_t(r) * cw + c] * (inverse ? std::conj(w) : w);
      }
      out[std::size_t(u) * cw + c] = acc;
    }
  }
  return out;
}

const int kSizes[] = {2,  3,  5,  8,  9,  12, 16, 18,  25,  27, 32,
                      45, 49, 54, 64, 81, 96, 98, 100, 112, 128};

// The bands hold every row a placement can reach and every row a window reads, inside the
// plane (the programs are only asked for, and only keep, the band's rows).
TEST(PlaneProgram, BandsCoverEveryPlacedAndReadRow) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> extent(1, 40), offset(-50, 50), step(1, 4), fft(2, 60);
  for (int trial = 0; trial < 4000; ++trial) {
    const int f = fft(rng), src = extent(rng), off = offset(rng), st = step(rng);
    int band0 = 0, rows = 0;
    pf::placed_band(off, src, st, f, band0, rows);
    ASSERT_TRUE(band0 >= 0 && rows >= 0 && band0 + rows <= f) << f << " " << band0 << " " << rows;
    for (int t = 0; t < f; ++t) {
      if (detail::placed_source<std::int64_t>(t, off, st, src) >= 0) {
        ASSERT_TRUE(t >= band0 && t < band0 + rows)
            << "row " << t << " of " << f << " placed at " << off << " step " << st << " src "
            << src << ": band " << band0 << "+" << rows;
      }
    }
    const bool wrap = trial % 2 == 0;
    const int woff = wrap ? 0 : std::abs(off) % (f + 3), tile = extent(rng);
    pf::window_band(woff, st, tile, f, wrap, band0, rows);
    ASSERT_TRUE(band0 >= 0 && rows >= 0 && band0 + rows <= f);
    for (int p = 0; p < tile; ++p) {
      const std::int64_t t = detail::clip_read<std::int64_t>(p, st, woff, f, wrap);
      if (t >= 0) {
        ASSERT_TRUE(t >= band0 && t < band0 + rows)
            << "read " << t << " of " << f << " off " << woff << " stride " << st << " tile "
            << tile << ": band " << band0 << "+" << rows;
      }
    }
  }
}

// Every output of a clip, tiled or not, is written once from the result plane, row and column
// that the clip kernel reads it from (clip_plane_source, clip_read), and every row read lies in
// the window's band.
TEST(PlaneProgram, ResultTilesCoverTheClipsOutputs) {
  std::mt19937 rng(9);
  using Spot = std::array<std::int64_t, 3>;  // result plane, row, column; -1s: a zero
  for (int trial = 0; trial < 1500; ++trial) {
    const int fh = 4 + rng() % 40, fw = 4 + rng() % 40, n = 1 + rng() % 3, k = 1 + rng() % 3;
    const int out_h = 1 + rng() % 30, out_w = 1 + rng() % 30;
    const int stride_h = 1 + rng() % 3, stride_w = 1 + rng() % 3;
    const bool tiled = rng() % 2, wrap = rng() % 2;
    const int off_h = wrap ? 0 : rng() % (fh + 3), off_w = wrap ? 0 : rng() % (fw + 3);
    const int toh = tiled ? 1 + rng() % out_h : out_h, tow = tiled ? 1 + rng() % out_w : out_w;
    const int tiles_h = (out_h + toh - 1) / toh, tiles_w = (out_w + tow - 1) / tow;
    const int tiles = tiles_h * tiles_w;
    const std::size_t outs = std::size_t(n) * k * out_h * out_w;
    std::vector<Spot> want(outs), got(outs, Spot{-9, -9, -9});
    std::vector<int> writes(outs, 0);
    for (int o = 0; o < n * k; ++o) {
      for (int i = 0; i < out_h * out_w; ++i) {
        int lp = i / out_w, lq = i % out_w;
        std::int64_t rp = detail::clip_plane_source<std::int64_t>(o, k, tiles, 0);
        if (tiled) {
          rp += std::int64_t((lp / toh) * tiles_w + lq / tow) * k;
          lp %= toh;
          lq %= tow;
        }
        const auto r = detail::clip_read<std::int64_t>(lp, stride_h, off_h, fh, wrap);
        const auto c = detail::clip_read<std::int64_t>(lq, stride_w, off_w, fw, wrap);
        want[std::size_t(o) * out_h * out_w + i] =
            r >= 0 && c >= 0 ? Spot{rp, r, c} : Spot{-1, -1, -1};
      }
    }
    int band0 = 0, band_rows = 0;
    pf::window_band(off_h, stride_h, toh, fh, wrap, band0, band_rows);
    const detail::IntDivider kd(k), td(tiles), twd(tiles_w), towd(tow);
    for (int rp = 0; rp < n * k * tiles; ++rp) {
      const pf::ResultTile rt = pf::result_tile(rp, kd, td, twd, toh, tow, out_h, out_w);
      ASSERT_EQ(rt.filter, rp % k);
      for (int item = 0; item < toh * tow; ++item) {
        int p = 0, q = 0;
        towd.divmod(item, p, q);
        if (p >= rt.out_h || q >= rt.out_w) continue;
        const int row = detail::clip_read<int>(p, stride_h, off_h, fh, wrap);
        const int col = detail::clip_read<int>(q, stride_w, off_w, fw, wrap);
        if (row >= 0 && col >= 0) ASSERT_TRUE(row >= band0 && row < band0 + band_rows);
        const std::int64_t i =
            rt.out_plane * out_h * out_w + std::int64_t(rt.oh0 + p) * out_w + rt.ow0 + q;
        got[i] = row >= 0 && col >= 0 ? Spot{rp, row, col} : Spot{-1, -1, -1};
        ++writes[i];
      }
    }
    for (std::size_t i = 0; i < outs; ++i) {
      ASSERT_EQ(writes[i], 1) << "output " << i << " trial " << trial;
      ASSERT_EQ(got[i], want[i]) << "output " << i << " trial " << trial;
    }
  }
}

// fn(plan, trial) for planes of each size of kSizes by a random one, three trials each, where
// the kernels take the size.
template <class Fn>
void for_each_plan(std::mt19937& rng, Fn&& fn) {
  for (int fh : kSizes) {
    for (int trial = 0; trial < 3; ++trial) {
      const int fw = kSizes[std::uniform_int_distribution<int>(0, std::size(kSizes) - 1)(rng)];
      pf::PlaneFftPlan pl;
      if (pf::make_plane_fft_plan(fh, fw, &pl, nullptr)) fn(pl, trial);
    }
  }
}

TEST(PlaneProgram, ForwardMatchesTheDftOfTheBand) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> val(-1.0, 1.0);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  int cases = 0;
  for_each_plan(rng, [&](const pf::PlaneFftPlan& pl, int trial) {
    const int fh = pl.fh, fw = pl.fw, cw = pl.cw;
    // A band of rows that hold data (trial 2: the whole plane; an empty band too).
    int band0 = std::uniform_int_distribution<int>(0, fh - 1)(rng);
    int band_rows = std::uniform_int_distribution<int>(0, fh - band0)(rng);
    if (trial == 2) band0 = 0, band_rows = fh;
    std::vector<double> a(std::size_t(fh) * fw, 0.0);
    for (int r = band0; r < band0 + band_rows; ++r) {
      for (int x = 0; x < fw; ++x) a[std::size_t(r) * fw + x] = val(rng);
    }
    std::vector<float2> tw;
    pf::fill_twiddle_table(pl, tw);
    std::vector<double> af(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) af[i] = static_cast<float>(a[i]);
    const std::vector<cd> want = spectrum_ref(af, fh, fw);
    for (const int points : budgets(pl))
      with_points(points, [&](auto pc) {
        std::vector<float2> buf(std::size_t(pl.buffer), make_float2(nan, nan));
        HostExec ex{pl.threads};
        std::vector<cd> got(std::size_t(fh) * cw, cd(nan, nan));
        std::vector<int> writes(got.size(), 0);
        pf::forward_program<decltype(pc)::value>(
            ex, pl, buf.data(), tw.data(), tw.data() + fh, band0, band_rows,
            host_fn([&](int r, int x) {
              EXPECT_TRUE(r >= band0 && r < band0 + band_rows && x >= 0 && x < fw);
              return static_cast<float>(a[std::size_t(r) * fw + x]);
            }),
            host_fn([&](int i, float2 v) {
              EXPECT_TRUE(i >= 0 && i < fh * cw);
              got[std::size_t(i)] = cd(v.x, v.y);
              ++writes[std::size_t(i)];
            }));
        for (int w : writes) ASSERT_EQ(w, 1) << fh << "x" << fw;
        EXPECT_LT(rel_l2(got, want), 1e-6)
            << fh << "x" << fw << " band " << band0 << "+" << band_rows << " points " << points;
        ++cases;
      });
  });
  EXPECT_GE(cases, 60);
}

TEST(PlaneProgram, InverseWindowMatchesTheRealResult) {
  std::mt19937 rng(23);
  std::uniform_real_distribution<double> val(-1.0, 1.0);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  int cases = 0;
  for_each_plan(rng, [&](const pf::PlaneFftPlan& pl, int trial) {
    const int fh = pl.fh, fw = pl.fw, cw = pl.cw;
    std::vector<double> a(std::size_t(fh) * fw);
    for (double& x : a) x = val(rng);
    const std::vector<cd> spec = spectrum_ref(a, fh, fw);
    // A window as the clip stages use them: forward (offset 0, stride, wrap), backward data
    // (an offset, stride 1, no wrap), and partial tiles.
    pf::PlaneWindow win;
    std::uniform_int_distribution<int> small(1, 3);
    win.wrap = trial != 1;
    win.stride_h = win.wrap ? small(rng) : 1;
    win.stride_w = win.wrap ? small(rng) : 1;
    win.off_h = win.wrap ? 0 : std::uniform_int_distribution<int>(0, fh - 1)(rng);
    win.off_w = win.wrap ? 0 : std::uniform_int_distribution<int>(0, fw - 1)(rng);
    win.tile_h = std::uniform_int_distribution<int>(1, fh + 3)(rng);
    const int tile_w = std::uniform_int_distribution<int>(1, fw + 3)(rng);
    win.tile_w_div = detail::IntDivider(static_cast<std::uint32_t>(tile_w));
    win.out_h = trial == 2 ? std::uniform_int_distribution<int>(1, win.tile_h)(rng) : win.tile_h;
    win.out_w = trial == 2 ? std::uniform_int_distribution<int>(1, tile_w)(rng) : tile_w;
    // The band of rows read, as the launcher computes it.
    int band0 = 0, band_rows = 0;
    pf::window_band(win.off_h, win.stride_h, win.tile_h, fh, win.wrap, band0, band_rows);
    std::vector<float2> tw;
    pf::fill_twiddle_table(pl, tw);
    for (const int points : budgets(pl))
      with_points(points, [&](auto pc) {
        std::vector<float2> buf(std::size_t(pl.buffer), make_float2(nan, nan));
        HostExec ex{pl.threads};
        std::vector<cd> got(std::size_t(win.out_h) * win.out_w, cd(nan, 0));
        std::vector<int> writes(got.size(), 0);
        pf::inverse_program<decltype(pc)::value>(
            ex, pl, buf.data(), tw.data(), tw.data() + fh, band0, band_rows, win,
            host_fn([&](int i) {
              EXPECT_TRUE(i >= 0 && i < fh * cw);
              const cd s = spec[std::size_t(i)];
              return make_float2(static_cast<float>(s.real()), static_cast<float>(s.imag()));
            }),
            host_fn([&](int p, int q, float v) {
              EXPECT_TRUE(p >= 0 && p < win.out_h && q >= 0 && q < win.out_w);
              got[std::size_t(p) * win.out_w + q] = cd(v, 0);
              ++writes[std::size_t(p) * win.out_w + q];
            }));
        std::vector<cd> want(got.size());
        for (int p = 0; p < win.out_h; ++p) {
          for (int q = 0; q < win.out_w; ++q) {
            const std::int64_t r =
                detail::clip_read<std::int64_t>(p, win.stride_h, win.off_h, fh, win.wrap);
            const std::int64_t x =
                detail::clip_read<std::int64_t>(q, win.stride_w, win.off_w, fw, win.wrap);
            want[std::size_t(p) * win.out_w + q] =
                r >= 0 && x >= 0 ? a[std::size_t(r) * fw + x] * double(fh) * double(fw) : 0.0;
          }
        }
        for (int w : writes) ASSERT_EQ(w, 1) << fh << "x" << fw;
        // The error relative to the result plane's scale (its rms, fh fw rms(a)): a window of a
        // few small values has no scale of its own for rounding to be relative to.
        double err = 0, plane = 0;
        for (std::size_t i = 0; i < got.size(); ++i) err += std::norm(got[i] - want[i]);
        for (double v : a) plane += v * v;
        const double rms_err = std::sqrt(err / double(got.size()));
        const double rms_plane = double(fh) * fw * std::sqrt(plane / double(a.size()));
        EXPECT_LT(rms_err / rms_plane, 1e-6)
            << fh << "x" << fw << " trial " << trial << " points " << points;
        ++cases;
      });
  });
  EXPECT_GE(cases, 40);
}

}  // namespace
}  // namespace fftconv
