// The backward passes reuse the forward pass's exact circular period (min_fft_extent) and the
// pad stage's placement; these tests emulate their FFT pipelines in the spatial domain (circular
// convolution / correlation, which the FFT computes exactly) with the same index helpers as the
// device stages, and compare with the fp64 oracle, exhaustively over small 1D problems and on
// random 2D descriptors.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "fftconv/fftconv.hpp"
#include "geometry/fft_geometry.h"
#include "reference/reference.h"
#include "testing/testing.h"
#include "tuning/heuristics.h"
#include "exact_inputs.h"

namespace fftconv::detail {
namespace {

struct Periodic {
  std::int64_t fh, fw;
  std::vector<double> v;
  explicit Periodic(std::int64_t h, std::int64_t w) : fh(h), fw(w), v(h * w, 0.0) {}
  double at(std::int64_t i, std::int64_t j) const {
    return v[(((i % fh) + fh) % fh) * fw + ((j % fw) + fw) % fw];
  }
};

// Places a plane the way the pad stage does: destination positions without a source stay zero,
// sources past the period are dropped (never wrapped).
Periodic place(const std::vector<float>& src, const Placement& pl, std::int64_t fh,
               std::int64_t fw) {
  Periodic p(fh, fw);
  for (std::int64_t i = 0; i < fh; ++i)
    for (std::int64_t j = 0; j < fw; ++j) {
      const std::int64_t si = placed_source(i, pl.off_h, pl.step_h, pl.src_h);
      const std::int64_t sj = placed_source(j, pl.off_w, pl.step_w, pl.src_w);
      if (si >= 0 && sj >= 0) p.v[i * fw + j] = src[si * pl.src_w + sj];
    }
  return p;
}

Placement x_place(const ConvDesc& d) { return {d.h, d.w, d.pad_h, d.pad_w, 1, 1}; }
Placement w_place(const ConvDesc& d) { return {d.r, d.s, 0, 0, d.dil_h, d.dil_w}; }
Placement dy_place(const ConvDesc& d) { return {d.out_h(), d.out_w(), 0, 0, d.stride_h, d.stride_w}; }

// dx through the backward-data pipeline: DX = DY * W (circular convolution), then the clip reads
// the input window at offset pad without wrapping.
std::vector<double> dgrad_pipeline(const ConvDesc& d, const std::vector<float>& dy,
                                   const std::vector<float>& w, std::int64_t fh, std::int64_t fw) {
  const Periodic dyp = place(dy, dy_place(d), fh, fw), wp = place(w, w_place(d), fh, fw);
  std::vector<double> dx(d.h * d.w);
  for (std::int64_t i = 0; i < d.h; ++i)
    for (std::int64_t j = 0; j < d.w; ++j) {
      const std::int64_t u = clip_read(i, 1, d.pad_h, fh, false);
      const std::int64_t v = clip_read(j, 1, d.pad_w, fw, false);
      double acc = 0.0;
      if (u >= 0 && v >= 0) {
        for (std::int64_t a = 0; a < fh; ++a)
          for (std::int64_t b = 0; b < fw; ++b) acc += dyp.at(u - a, v - b) * wp.v[a * fw + b];
      }
      dx[i * d.w + j] = acc;
    }
  return dx;
}

// dw through the backward-filter pipeline: DW = X * conj(DY) (circular correlation of x with
// dy), then the clip reads the taps of the dilated kernel.
std::vector<double> wgrad_pipeline(const ConvDesc& d, const std::vector<float>& x,
                                   const std::vector<float>& dy, std::int64_t fh, std::int64_t fw) {
  const Periodic xp = place(x, x_place(d), fh, fw), dyp = place(dy, dy_place(d), fh, fw);
  std::vector<double> dw(d.r * d.s);
  for (std::int64_t r = 0; r < d.r; ++r)
    for (std::int64_t s = 0; s < d.s; ++s) {
      const std::int64_t a = clip_read(r, d.dil_h, 0, fh, true);
      const std::int64_t b = clip_read(s, d.dil_w, 0, fw, true);
      EXPECT_EQ(a, r * d.dil_h);  // the dilated kernel never exceeds the period
      EXPECT_EQ(b, s * d.dil_w);
      double acc = 0.0;
      for (std::int64_t t = 0; t < fh; ++t)
        for (std::int64_t u = 0; u < fw; ++u) acc += xp.at(t + a, u + b) * dyp.v[t * fw + u];
      dw[r * d.s + s] = acc;
    }
  return dw;
}

struct Refs {
  std::vector<double> dx, dw;
};

Refs oracle(const ConvDesc& d, const std::vector<float>& x, const std::vector<float>& w,
            const std::vector<float>& dy) {
  Refs r{std::vector<double>(d.x_elems()), std::vector<double>(d.w_elems())};
  reference::conv2d_backward_data_host(d, dy.data(), w.data(), r.dx.data());
  reference::conv2d_backward_filter_host(d, x.data(), dy.data(), r.dw.data());
  return r;
}

TEST(BackwardFftSizeRule, ExactAtTheForwardMinimumAndAbove) {
  std::mt19937_64 gen(20261201);
  int checked = 0;
  for (int h = 1; h <= 11; ++h)
    for (int r = 1; r <= 5; ++r)
      for (int pad = 0; pad <= 5; ++pad)
        for (int st = 1; st <= 3; ++st)
          for (int dil = 1; dil <= 3; ++dil) {
            ConvDesc d;
            d.h = h; d.r = r; d.pad_h = pad; d.stride_h = st; d.dil_h = dil;
            if (d.validate() != Status::kSuccess) continue;
            const auto x = testing::nonzero_ints(d.x_elems(), gen);
            const auto w = testing::nonzero_ints(d.w_elems(), gen);
            const auto dy = testing::nonzero_ints(d.y_elems(), gen);
            const Refs ref = oracle(d, x, w, dy);
            const std::int64_t fmin = min_fft_h(d);
            for (std::int64_t f = fmin; f <= fmin + 3; ++f) {
              EXPECT_EQ(dgrad_pipeline(d, dy, w, f, 1), ref.dx) << d.to_string() << " F=" << f;
              EXPECT_EQ(wgrad_pipeline(d, x, dy, f, 1), ref.dw) << d.to_string() << " F=" << f;
              ++checked;
            }
          }
  EXPECT_GT(checked, 3000);
}

TEST(BackwardFftSizeRule, TwoDimensionalRandomDescriptors) {
  std::mt19937_64 gen(11);
  const testing::RandomDescOptions shapes = one_plane_shapes();
  int checked = 0;
  while (checked < 200) {
    const ConvDesc d = testing::random_desc(gen, shapes);
    const auto x = testing::nonzero_ints(d.x_elems(), gen);
    const auto w = testing::nonzero_ints(d.w_elems(), gen);
    const auto dy = testing::nonzero_ints(d.y_elems(), gen);
    const Refs ref = oracle(d, x, w, dy);
    const FftGeometry gd = choose_fft_geometry(d, Pass::kBackwardData);
    const FftGeometry gw = choose_fft_geometry(d, Pass::kBackwardFilter);
    EXPECT_EQ(dgrad_pipeline(d, dy, w, gd.fft_h, gd.fft_w), ref.dx) << d.to_string();
    EXPECT_EQ(dgrad_pipeline(d, dy, w, gd.min_h, gd.min_w), ref.dx) << d.to_string();
    EXPECT_EQ(wgrad_pipeline(d, x, dy, gw.fft_h, gw.fft_w), ref.dw) << d.to_string();
    EXPECT_EQ(wgrad_pipeline(d, x, dy, gw.min_h, gw.min_w), ref.dw) << d.to_string();
    ++checked;
  }
}

// The GEMM of each pass contracts over the documented dimension with the documented strides.
TEST(BackwardGemmProblem, ShapesAndStrides) {
  ConvDesc d;
  d.n = 3; d.c = 8; d.h = 20; d.w = 20; d.k = 6; d.r = 5; d.s = 5; d.groups = 2;
  const FftGeometry g = make_fft_geometry(d, 24, 24);
  const CgemmProblem f = gemm_problem(d, g, Pass::kForward);
  EXPECT_EQ(f.m, 3); EXPECT_EQ(f.n, 3); EXPECT_EQ(f.k, 4); EXPECT_TRUE(f.conj_b);
  const CgemmProblem dg = gemm_problem(d, g, Pass::kBackwardData);
  EXPECT_EQ(dg.m, 3); EXPECT_EQ(dg.n, 4); EXPECT_EQ(dg.k, 3);
  EXPECT_FALSE(dg.conj_a || dg.conj_b);
  EXPECT_EQ(dg.c_extent(), d.n * d.c * g.bins);
  const SpectrumPlanes pd = spectrum_planes(d, g, Pass::kBackwardData);
  EXPECT_EQ(dg.a_extent(), pd.a * g.bins);
  EXPECT_EQ(dg.b_extent(), pd.b * g.bins);
  const CgemmProblem wg = gemm_problem(d, g, Pass::kBackwardFilter);
  EXPECT_EQ(wg.m, 3); EXPECT_EQ(wg.n, 4); EXPECT_EQ(wg.k, 3);
  EXPECT_TRUE(wg.conj_a);
  EXPECT_FALSE(wg.conj_b);
  const SpectrumPlanes pw = spectrum_planes(d, g, Pass::kBackwardFilter);
  EXPECT_EQ(wg.c_extent(), pw.out * g.bins);
  EXPECT_EQ(wg.a_extent(), pw.b * g.bins);  // A = DY, the second segment
  EXPECT_EQ(wg.b_extent(), pw.a * g.bins);  // B = X, the first
  EXPECT_EQ(f.flops(), dg.flops());
  EXPECT_EQ(f.flops(), wg.flops());
}

}  // namespace
}  // namespace fftconv::detail
