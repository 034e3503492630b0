// Every pass's FFT pipeline emulated on the host with exact DFTs: the library's own plane layout
// (spectrum_planes), placements, per-frequency GEMM description (gemm_problem, run by the fp64
// reference::cgemm_host), and clip index math, against the fp64 oracles. This checks the strides
// and conjugations of all three contractions, groups and depthwise included, without a GPU; the
// GPU tests check the kernels that run the same description.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <random>
#include <vector>

#include "fftconv/fftconv.hpp"
#include "geometry/fft_geometry.h"
#include "reference/reference.h"
#include "testing/testing.h"
#include "tuning/heuristics.h"

namespace fftconv::detail {
namespace {

using cd = std::complex<double>;

// Real planes of fft_h x fft_w (no pitch: the emulation has its own dense layout).
struct Planes {
  std::int64_t count, h, w;
  std::vector<double> v;
  Planes(std::int64_t n, std::int64_t fh, std::int64_t fw) : count(n), h(fh), w(fw), v(n * fh * fw) {}
  double& at(std::int64_t p, std::int64_t i, std::int64_t j) { return v[(p * h + i) * w + j]; }
};

// The pad stage's rule: destination (i, j) holds the placed source element or zero.
void place(const std::vector<float>& src, const Placement& pl, std::int64_t first,
           std::int64_t planes, Planes* dst) {
  for (std::int64_t p = 0; p < planes; ++p)
    for (std::int64_t i = 0; i < dst->h; ++i)
      for (std::int64_t j = 0; j < dst->w; ++j) {
        const std::int64_t si = placed_source(i, pl.off_h, pl.step_h, pl.src_h);
        const std::int64_t sj = placed_source(j, pl.off_w, pl.step_w, pl.src_w);
        dst->at(first + p, i, j) =
            si >= 0 && sj >= 0 ? src[(p * pl.src_h + si) * pl.src_w + sj] : 0.0;
      }
}

// r2c in the transform's layout: bins (u, v) with v < w/2+1, plane after plane. Separable DFT.
std::vector<std::complex<float>> r2c(Planes& x, const FftGeometry& g) {
  const double two_pi = 2.0 * std::acos(-1.0);
  std::vector<std::complex<float>> out(x.count * g.bins);
  std::vector<cd> rows(g.fft_h * g.half_w);
  for (std::int64_t p = 0; p < x.count; ++p) {
    for (std::int64_t i = 0; i < g.fft_h; ++i)
      for (std::int64_t v = 0; v < g.half_w; ++v) {
        cd acc = 0.0;
        for (std::int64_t j = 0; j < g.fft_w; ++j) {
          acc += x.at(p, i, j) * std::polar(1.0, -two_pi * double(v * j) / double(g.fft_w));
        }
        rows[i * g.half_w + v] = acc;
      }
    for (std::int64_t u = 0; u < g.fft_h; ++u)
      for (std::int64_t v = 0; v < g.half_w; ++v) {
        cd acc = 0.0;
        for (std::int64_t i = 0; i < g.fft_h; ++i) {
          acc += rows[i * g.half_w + v] * std::polar(1.0, -two_pi * double(u * i) / double(g.fft_h));
        }
        out[p * g.bins + u * g.half_w + v] = std::complex<float>(acc);
      }
  }
  return out;
}

// c2r of Hermitian half spectra, unnormalised (as cuFFT and FFTW).
Planes c2r(const std::vector<cd>& spec, std::int64_t count, const FftGeometry& g) {
  const double two_pi = 2.0 * std::acos(-1.0);
  Planes out(count, g.fft_h, g.fft_w);
  std::vector<cd> cols(g.fft_h * g.half_w);
  for (std::int64_t p = 0; p < count; ++p) {
    for (std::int64_t i = 0; i < g.fft_h; ++i)
      for (std::int64_t v = 0; v < g.half_w; ++v) {
        cd acc = 0.0;
        for (std::int64_t u = 0; u < g.fft_h; ++u) {
          acc += spec[p * g.bins + u * g.half_w + v] *
                 std::polar(1.0, two_pi * double(u * i) / double(g.fft_h));
        }
        cols[i * g.half_w + v] = acc;
      }
    for (std::int64_t i = 0; i < g.fft_h; ++i)
      for (std::int64_t j = 0; j < g.fft_w; ++j) {
        double acc = 0.0;
        for (std::int64_t v = 0; v < g.fft_w; ++v) {
          // Columns past the half are the conjugates of their mirror images.
          const cd c = v < g.half_w ? cols[i * g.half_w + v]
                                    : std::conj(cols[i * g.half_w + (g.fft_w - v)]);
          acc += (c * std::polar(1.0, two_pi * double(v * j) / double(g.fft_w))).real();
        }
        out.at(p, i, j) = acc;
      }
  }
  return out;
}

// The pass through the library's description of it; returns what the clip stage writes.
std::vector<double> pipeline(const ConvDesc& d, Pass pass, const FftGeometry& g,
                             const std::vector<float>& x, const std::vector<float>& w,
                             const std::vector<float>& dy) {
  const SpectrumPlanes sp = spectrum_planes(d, g, pass);
  const Placement x_place{d.h, d.w, d.pad_h, d.pad_w, 1, 1};
  const Placement w_place{d.r, d.s, 0, 0, d.dil_h, d.dil_w};
  const Placement dy_place{d.out_h(), d.out_w(), 0, 0, d.stride_h, d.stride_w};
  Planes real(sp.a + sp.b, g.fft_h, g.fft_w);
  if (pass == Pass::kForward) {
    place(x, x_place, 0, sp.a, &real);
    place(w, w_place, sp.a, sp.b, &real);
  } else if (pass == Pass::kBackwardData) {
    place(dy, dy_place, 0, sp.a, &real);
    place(w, w_place, sp.a, sp.b, &real);
  } else {
    place(x, x_place, 0, sp.a, &real);
    place(dy, dy_place, sp.a, sp.b, &real);
  }
  const std::vector<std::complex<float>> spec = r2c(real, g);
  const std::complex<float>* seg_a = spec.data();
  const std::complex<float>* seg_b = spec.data() + sp.a * g.bins;
  // As FftConvAlgo::run: backward filter contracts A = DY (segment b) with B = X (segment a).
  const bool swap = pass == Pass::kBackwardFilter;
  const CgemmProblem prob = gemm_problem(d, g, pass);
  EXPECT_EQ(prob.c_extent(), sp.out * g.bins);
  std::vector<cd> out_spec(sp.out * g.bins, cd(NAN, NAN));
  reference::cgemm_host(prob, swap ? seg_b : seg_a, swap ? seg_a : seg_b, 1.0f, out_spec.data());
  const Planes res = c2r(out_spec, sp.out, g);
  // The clip stage's reads, per pass (ClipArgs in FftConvAlgo::run).
  std::int64_t planes = d.n * d.k, k = d.k, out_h = d.out_h(), out_w = d.out_w();
  std::int64_t sh = d.stride_h, sw = d.stride_w, oh = 0, ow = 0;
  bool wrap = true;
  if (pass == Pass::kBackwardData) {
    planes = d.n * d.c;
    k = d.c;
    out_h = d.h;
    out_w = d.w;
    sh = sw = 1;
    oh = d.pad_h;
    ow = d.pad_w;
    wrap = false;
  } else if (pass == Pass::kBackwardFilter) {
    planes = sp.out;
    out_h = d.r;
    out_w = d.s;
    sh = d.dil_h;
    sw = d.dil_w;
  }
  const double scale = 1.0 / (double(g.fft_h) * double(g.fft_w));
  std::vector<double> out(planes * out_h * out_w);
  for (std::int64_t pl = 0; pl < planes; ++pl)
    for (std::int64_t p = 0; p < out_h; ++p)
      for (std::int64_t q = 0; q < out_w; ++q) {
        const std::int64_t src = clip_plane_source(pl, k, 1, 0);
        const std::int64_t row = clip_read(p, sh, oh, g.fft_h, wrap);
        const std::int64_t col = clip_read(q, sw, ow, g.fft_w, wrap);
        out[(pl * out_h + p) * out_w + q] =
            row >= 0 && col >= 0 ? scale * res.v[(src * g.fft_h + row) * g.fft_w + col] : 0.0;
      }
  return out;
}

TEST(PassPipeline, EveryPassMatchesTheOracleThroughTheLibrarysDescription) {
  // Dense, grouped and depthwise descriptors of sizes 1-9, kernels 1-4, strides 1-3, dilations
  // 1-2, padding up to the kernel (in a fifth of them up to 6 beyond it).
  testing::RandomDescOptions shapes = testing::RandomDescOptions::small();
  shapes.max_extent = 9;
  shapes.max_kernel = 4;
  shapes.max_depthwise = 4;
  shapes.max_dilation = 2;
  std::mt19937_64 gen(20261130);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(gen); };
  int checked = 0, grouped = 0, depthwise = 0, strided = 0, dilated = 0;
  while (checked < 120) {
    const ConvDesc d = testing::random_desc(gen, shapes);
    // Small integers: every product and sum is exact in double; only the DFT rounds.
    std::vector<float> x(d.x_elems()), w(d.w_elems()), dy(d.y_elems());
    for (auto* v : {&x, &w, &dy})
      for (float& e : *v) e = float(pick(-9, 9));
    grouped += d.groups > 1 && d.c > d.groups;
    depthwise += d.groups > 1 && d.c == d.groups && d.k == d.groups;
    strided += d.stride_h > 1 || d.stride_w > 1;
    dilated += d.dil_h > 1 || d.dil_w > 1;
    for (Pass pass : {Pass::kForward, Pass::kBackwardData, Pass::kBackwardFilter}) {
      std::vector<double> ref;
      if (pass == Pass::kForward) {
        ref.resize(d.y_elems());
        reference::conv2d_forward_host(d, x.data(), w.data(), nullptr, ref.data());
      } else if (pass == Pass::kBackwardData) {
        ref.resize(d.x_elems());
        reference::conv2d_backward_data_host(d, dy.data(), w.data(), ref.data());
      } else {
        ref.resize(d.w_elems());
        reference::conv2d_backward_filter_host(d, x.data(), dy.data(), ref.data());
      }
      // The size the planner picks for the pass, and the exact minimum period.
      for (const FftGeometry& g : {choose_fft_geometry(d, pass),
                                   make_fft_geometry(d, min_fft_h(d), min_fft_w(d))}) {
        const std::vector<double> out = pipeline(d, pass, g, x, w, dy);
        ASSERT_EQ(out.size(), ref.size());
        double worst = 0.0;
        for (std::size_t i = 0; i < out.size(); ++i) worst = std::max(worst, std::fabs(out[i] - ref[i]));
        // Integer results: the DFT's rounding stays far below 0.5 at these sizes.
        EXPECT_LT(worst, 1e-3) << pass_name(pass) << " " << d.to_string() << " fft " << g.fft_h
                               << "x" << g.fft_w;
      }
    }
    ++checked;
  }
  EXPECT_GT(grouped, 10);
  EXPECT_GT(depthwise, 10);
  EXPECT_GT(strided, 30);
  EXPECT_GT(dilated, 30);
}

}  // namespace
}  // namespace fftconv::detail
