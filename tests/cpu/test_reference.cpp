// The host oracle on cases small enough to check by hand; its backward passes also against finite
// differences of the forward pass and by the adjoint identity on random descriptors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

#include "reference/reference.h"
#include "testing/testing.h"

namespace fftconv::reference {
namespace {

std::vector<double> run(const ConvDesc& d, const std::vector<float>& x, const std::vector<float>& w,
                        const std::vector<float>& bias = {}) {
  EXPECT_EQ(d.validate(), Status::kSuccess);
  EXPECT_EQ(static_cast<std::int64_t>(x.size()), d.x_elems());
  EXPECT_EQ(static_cast<std::int64_t>(w.size()), d.w_elems());
  std::vector<double> y(d.y_elems(), -12345.0);
  conv2d_forward_host(d, x.data(), w.data(), bias.empty() ? nullptr : bias.data(), y.data());
  return y;
}

TEST(HostReference, CrossCorrelationNotConvolution) {
  ConvDesc d;
  d.w = 3; d.s = 2;
  EXPECT_EQ(run(d, {1, 2, 3}, {1, 10}), (std::vector<double>{21, 32}));
}

TEST(HostReference, ValidTwoByTwo) {
  ConvDesc d;
  d.h = d.w = 3; d.r = d.s = 2;
  EXPECT_EQ(run(d, {1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 0, 0, -1}),
            (std::vector<double>{-4, -4, -4, -4}));
}

TEST(HostReference, ZeroPadding) {
  ConvDesc d;
  d.h = d.w = 2; d.pad_h = 1; d.pad_w = 0; d.r = 2; d.s = 1;
  // rows of the padded input: [0 0], [1 2], [3 4], [0 0]; kernel column (1, 10)
  EXPECT_EQ(run(d, {1, 2, 3, 4}, {1, 10}), (std::vector<double>{10, 20, 31, 42, 3, 4}));
}

TEST(HostReference, Stride) {
  ConvDesc d;
  d.h = d.w = 4; d.stride_h = d.stride_w = 2;
  std::vector<float> x(16);
  for (int i = 0; i < 16; ++i) x[i] = float(i);
  EXPECT_EQ(run(d, x, {1}), (std::vector<double>{0, 2, 8, 10}));
}

TEST(HostReference, Dilation) {
  ConvDesc d;
  d.h = d.w = 3; d.r = d.s = 2; d.dil_h = d.dil_w = 2;
  EXPECT_EQ(run(d, {1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 1, 1, 1}), (std::vector<double>{20}));
}

TEST(HostReference, GroupsKeepChannelsApart) {
  ConvDesc d;
  d.c = 2; d.k = 2; d.groups = 2;
  EXPECT_EQ(run(d, {2, 3}, {10, 100}), (std::vector<double>{20, 300}));
  d.groups = 1;  // now each filter sees both channels: w is k x c = [[10, 100], [1, -1]]
  EXPECT_EQ(run(d, {2, 3}, {10, 100, 1, -1}), (std::vector<double>{320, -1}));
}

TEST(HostReference, GroupsWithSeveralFiltersPerGroup) {
  ConvDesc d;
  d.c = 4; d.k = 4; d.groups = 2;  // filters 0,1 see channels 0,1; filters 2,3 see 2,3
  const std::vector<float> x = {1, 2, 3, 4};
  const std::vector<float> w = {1, 0, 0, 1, 1, 1, 1, -1};
  EXPECT_EQ(run(d, x, w), (std::vector<double>{1, 2, 7, -1}));
}

TEST(HostReference, BiasAndBatch) {
  ConvDesc d;
  d.n = 2; d.c = 2; d.k = 1; d.h = 1; d.w = 2;
  // y[n][0][0][q] = x[n][0][q] + 2*x[n][1][q] + 0.5
  const std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_EQ(run(d, x, {1, 2}, {0.5f}), (std::vector<double>{7.5, 10.5, 19.5, 22.5}));
}

// ---- backward passes ----------------------------------------------------------------------------

// Outputs start as NaN: an element the oracle forgets to write fails the finite check.
std::vector<double> run_backward_data(const ConvDesc& d, const std::vector<float>& dy,
                                      const std::vector<float>& w) {
  EXPECT_EQ(d.validate(), Status::kSuccess);
  EXPECT_EQ(static_cast<std::int64_t>(dy.size()), d.y_elems());
  EXPECT_EQ(static_cast<std::int64_t>(w.size()), d.w_elems());
  std::vector<double> dx(d.x_elems(), std::numeric_limits<double>::quiet_NaN());
  conv2d_backward_data_host(d, dy.data(), w.data(), dx.data());
  for (double v : dx) EXPECT_TRUE(std::isfinite(v)) << d.to_string();
  return dx;
}

std::vector<double> run_backward_filter(const ConvDesc& d, const std::vector<float>& x,
                                        const std::vector<float>& dy) {
  EXPECT_EQ(d.validate(), Status::kSuccess);
  EXPECT_EQ(static_cast<std::int64_t>(x.size()), d.x_elems());
  EXPECT_EQ(static_cast<std::int64_t>(dy.size()), d.y_elems());
  std::vector<double> dw(d.w_elems(), std::numeric_limits<double>::quiet_NaN());
  conv2d_backward_filter_host(d, x.data(), dy.data(), dw.data());
  for (double v : dw) EXPECT_TRUE(std::isfinite(v)) << d.to_string();
  return dw;
}

TEST(HostReferenceBackward, CrossCorrelationAdjoint) {
  ConvDesc d;
  d.w = 3; d.s = 2;  // y[q] = x[q]*w[0] + x[q+1]*w[1], q = 0, 1
  // dx[0] = dy0*w0 = 2, dx[1] = dy0*w1 + dy1*w0 = 20 + 3, dx[2] = dy1*w1 = 30
  EXPECT_EQ(run_backward_data(d, {2, 3}, {1, 10}), (std::vector<double>{2, 23, 30}));
  // dw[0] = x0*dy0 + x1*dy1 = 2 + 6, dw[1] = x1*dy0 + x2*dy1 = 4 + 9
  EXPECT_EQ(run_backward_filter(d, {1, 2, 3}, {2, 3}), (std::vector<double>{8, 13}));
}

TEST(HostReferenceBackward, StrideAndPadding) {
  ConvDesc d;
  d.w = 5; d.s = 3; d.pad_w = 1; d.stride_w = 2;  // Wo = 3, y[q] reads x[2q-1 .. 2q+1]
  // dx[j] sums dy[q]*w[s] over 2q + s - 1 == j:
  //   j=0: (q0,s1) 10;  j=1: (q0,s2) 100 + (q1,s0) 2;  j=2: (q1,s1) 20;
  //   j=3: (q1,s2) 200 + (q2,s0) 3;  j=4: (q2,s1) 30
  EXPECT_EQ(run_backward_data(d, {1, 2, 3}, {1, 10, 100}),
            (std::vector<double>{10, 102, 20, 203, 30}));
  // dw[s] = sum_q x[2q+s-1]*dy[q] (x[-1] and x[5] are padding):
  //   s0: 0*1 + 2*2 + 4*3 = 16;  s1: 1*1 + 3*2 + 5*3 = 22;  s2: 2*1 + 4*2 + 0*3 = 10
  EXPECT_EQ(run_backward_filter(d, {1, 2, 3, 4, 5}, {1, 2, 3}), (std::vector<double>{16, 22, 10}));
}

TEST(HostReferenceBackward, InputsNoOutputReadsGetZero) {
  ConvDesc d;
  d.w = 4; d.stride_w = 2;  // 1x1 kernel: y[q] = 5*x[2q], x[1] and x[3] are skipped
  EXPECT_EQ(run_backward_data(d, {1, 2}, {5}), (std::vector<double>{5, 0, 10, 0}));
  EXPECT_EQ(run_backward_filter(d, {1, 2, 3, 4}, {1, 2}), (std::vector<double>{1 + 6}));
}

TEST(HostReferenceBackward, Dilation) {
  ConvDesc d;
  d.h = d.w = 3; d.r = d.s = 2; d.dil_h = d.dil_w = 2;
  // The one output reads the corners: y = x00*w00 + x02*w01 + x20*w10 + x22*w11.
  EXPECT_EQ(run_backward_data(d, {2}, {1, 2, 3, 4}),
            (std::vector<double>{2, 0, 4, 0, 0, 0, 6, 0, 8}));
  EXPECT_EQ(run_backward_filter(d, {1, 2, 3, 4, 5, 6, 7, 8, 9}, {2}),
            (std::vector<double>{2, 6, 14, 18}));
}

TEST(HostReferenceBackward, GroupsKeepChannelsApart) {
  ConvDesc d;
  d.c = 4; d.k = 4; d.groups = 2;  // filters 0,1 see channels 0,1; filters 2,3 see 2,3
  const std::vector<float> w = {1, 2, 3, 4, 5, 6, 7, 8};  // w[k][c'] = w[2k + c']
  // dx[c] = sum_{k in group} dy[k] * w[k][c']:
  //   1*1 + 10*3, 1*2 + 10*4, 100*5 + 1000*7, 100*6 + 1000*8
  EXPECT_EQ(run_backward_data(d, {1, 10, 100, 1000}, w), (std::vector<double>{31, 42, 7500, 8600}));
  // dw[k][c'] = dy[k] * x[group(k)*2 + c']
  EXPECT_EQ(run_backward_filter(d, {1, 2, 3, 4}, {1, 10, 100, 1000}),
            (std::vector<double>{1, 2, 10, 20, 300, 400, 3000, 4000}));
}

TEST(HostReferenceBackward, FilterSumsOverBatch) {
  ConvDesc d;
  d.n = 2; d.h = 1; d.w = 2;  // 1x1 kernel, two images of two pixels
  EXPECT_EQ(run_backward_data(d, {1, 10, 100, 1000}, {2}), (std::vector<double>{2, 20, 200, 2000}));
  // 1*1 + 2*10 + 3*100 + 4*1000
  EXPECT_EQ(run_backward_filter(d, {1, 2, 3, 4}, {1, 10, 100, 1000}), (std::vector<double>{4321}));
}

// L = sum(y * g), y = conv(x, w) + bias by the forward oracle.
double loss(const ConvDesc& d, const std::vector<float>& x, const std::vector<float>& w,
            const std::vector<float>& bias, const std::vector<float>& g) {
  std::vector<double> y(d.y_elems());
  conv2d_forward_host(d, x.data(), w.data(), bias.empty() ? nullptr : bias.data(), y.data());
  return testing::dot(y, g);
}

// dL/dv[i] for every i by differences. L is affine in each of x and w, so
// L(v_i = 1) - L(v_i = 0) is the derivative exactly, up to the rounding of the fp64 sums.
std::vector<double> finite_differences(const ConvDesc& d, const std::vector<float>& x,
                                       const std::vector<float>& w, const std::vector<float>& bias,
                                       const std::vector<float>& g, bool wrt_x) {
  std::vector<float> xs = x, ws = w;
  std::vector<float>& v = wrt_x ? xs : ws;
  std::vector<double> grad(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    const float keep = v[i];
    v[i] = 1.0f;
    const double up = loss(d, xs, ws, bias, g);
    v[i] = 0.0f;
    const double down = loss(d, xs, ws, bias, g);
    v[i] = keep;
    grad[i] = up - down;
  }
  return grad;
}

// Element-wise, relative to the largest gradient entry: entries of an unreached input are exact
// zeros, where a per-element relative error would mean nothing.
void expect_close(const std::vector<double>& got, const std::vector<double>& want, double tol,
                  const char* what) {
  ASSERT_EQ(got.size(), want.size());
  double scale = 0.0;
  for (double v : want) scale = std::max(scale, std::abs(v));
  ASSERT_GT(scale, 0.0) << what;
  double worst = 0.0;
  std::size_t at = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double e = std::abs(got[i] - want[i]) / scale;
    if (std::isnan(e) || e > worst) {
      worst = e;
      at = i;
      if (std::isnan(e)) break;
    }
  }
  EXPECT_LE(worst, tol) << what << ": element " << at << " is " << got[at] << ", expected "
                        << want[at] << " (scale " << scale << ")";
}

ConvDesc make_desc(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w, std::int64_t k,
                   std::int64_t r, std::int64_t s, std::int64_t pad_h, std::int64_t pad_w,
                   std::int64_t stride_h, std::int64_t stride_w, std::int64_t dil_h,
                   std::int64_t dil_w, std::int64_t groups) {
  ConvDesc d;
  d.n = n; d.c = c; d.h = h; d.w = w; d.k = k; d.r = r; d.s = s;
  d.pad_h = pad_h; d.pad_w = pad_w; d.stride_h = stride_h; d.stride_w = stride_w;
  d.dil_h = dil_h; d.dil_w = dil_w; d.groups = groups;
  return d;
}

struct Inputs {
  std::vector<float> x, w, g;
};

Inputs random_inputs(const ConvDesc& d, std::uint64_t seed) {
  return {testing::random_values(d.x_elems(), seed, DType::kF32),
          testing::random_values(d.w_elems(), seed + 1, DType::kF32),
          testing::random_values(d.y_elems(), seed + 2, DType::kF32)};
}

TEST(HostReferenceBackward, MatchesFiniteDifferences) {
  const ConvDesc cases[] = {
      //        n  c  h  w  k  r  s  ph pw sh sw dh dw g
      make_desc(2, 3, 6, 5, 2, 3, 2, 1, 1, 1, 1, 1, 1, 1),  // padding, rectangular
      make_desc(1, 2, 7, 8, 3, 3, 3, 1, 2, 2, 2, 1, 1, 1),  // stride 2
      make_desc(1, 2, 7, 7, 2, 2, 3, 2, 1, 1, 1, 2, 2, 1),  // dilation 2
      make_desc(2, 4, 5, 6, 6, 2, 3, 1, 0, 2, 1, 1, 2, 2),  // groups 2, mixed stride/dilation
      make_desc(1, 3, 6, 6, 3, 3, 3, 3, 4, 3, 3, 2, 2, 3),  // depthwise, padding > kernel
      make_desc(1, 1, 5, 4, 1, 2, 2, 3, 3, 3, 2, 2, 1, 1),  // stride 3, outputs of padding only
  };
  std::uint64_t seed = 7100;
  for (const ConvDesc& d : cases) {
    seed += 10;
    SCOPED_TRACE(d.to_string() + " seed " + std::to_string(seed));
    ASSERT_EQ(d.validate(), Status::kSuccess);
    const Inputs in = random_inputs(d, seed);
    expect_close(run_backward_data(d, in.g, in.w),
                 finite_differences(d, in.x, in.w, {}, in.g, true), 1e-9, "dL/dx");
    expect_close(run_backward_filter(d, in.x, in.g),
                 finite_differences(d, in.x, in.w, {}, in.g, false), 1e-9, "dL/dw");
  }
}

TEST(HostReferenceBackward, ConvThenSumChainHasMatchingGradients) {
  // L = sum(conv(x, w) + bias): dL/dy is all ones, so dL/dx = backward_data(ones, w) and
  // dL/dw = backward_filter(x, ones); the bias shifts L but not its gradients.
  const ConvDesc d = make_desc(2, 4, 5, 6, 4, 3, 2, 1, 1, 2, 1, 1, 2, 2);
  const std::uint64_t seed = 7300;
  SCOPED_TRACE(d.to_string() + " seed " + std::to_string(seed));
  ASSERT_EQ(d.validate(), Status::kSuccess);
  const Inputs in = random_inputs(d, seed);
  const std::vector<float> bias = testing::random_values(d.k, seed + 3, DType::kF32);
  const std::vector<float> ones(d.y_elems(), 1.0f);
  expect_close(run_backward_data(d, ones, in.w),
               finite_differences(d, in.x, in.w, bias, ones, true), 1e-9, "dL/dx");
  expect_close(run_backward_filter(d, in.x, ones),
               finite_differences(d, in.x, in.w, bias, ones, false), 1e-9, "dL/dw");
}

std::vector<float> abs_values(std::vector<float> v) {
  for (float& e : v) e = std::abs(e);
  return v;
}

TEST(HostReferenceBackward, AdjointIdentityOnRandomDescriptors) {
  // <conv(x, w), g> == <x, backward_data(g, w)> == <w, backward_filter(x, g)>: the three are the
  // same sum of x*w*g products in other orders. Relative to their value, or where that cancels
  // almost to zero, to a millionth of the sum of |x*w*g|.
  // Small random descriptors: dense, grouped and depthwise; stride, dilation, padding up to
  // beyond the kernel, rectangular kernels, outputs that read padding alone.
  const std::uint64_t gen_seed = 7400;
  const testing::RandomDescOptions shapes = testing::RandomDescOptions::small();
  std::mt19937_64 gen(gen_seed);
  int grouped = 0, depthwise = 0, strided = 0, dilated = 0, wide_pad = 0, rectangular = 0;
  double worst = 0.0;
  for (int i = 0; i < 30; ++i) {
    const ConvDesc d = testing::random_desc(gen, shapes);
    const std::uint64_t seed = gen_seed * 100 + i;
    SCOPED_TRACE(d.to_string() + " case " + std::to_string(i) + " of generator seed " +
                 std::to_string(gen_seed) + ", data seed " + std::to_string(seed));
    grouped += d.groups > 1 && !d.is_depthwise();
    depthwise += d.groups > 1 && d.is_depthwise();
    strided += d.stride_h > 1 || d.stride_w > 1;
    dilated += d.dil_h > 1 || d.dil_w > 1;
    wide_pad += d.pad_h > d.r || d.pad_w > d.s;
    rectangular += d.r != d.s;
    const Inputs in = random_inputs(d, seed);
    const double via_y = loss(d, in.x, in.w, {}, in.g);
    const double via_dx = testing::dot(run_backward_data(d, in.g, in.w), in.x);
    const double via_dw = testing::dot(run_backward_filter(d, in.x, in.g), in.w);
    const double bound = loss(d, abs_values(in.x), abs_values(in.w), {}, abs_values(in.g));
    if (bound == 0.0) {  // every output reads padding only
      EXPECT_EQ(via_dx, 0.0);
      EXPECT_EQ(via_dw, 0.0);
      continue;
    }
    const double scale = std::max(std::abs(via_y), 1e-6 * bound);
    const double err_dx = std::abs(via_dx - via_y) / scale;
    const double err_dw = std::abs(via_dw - via_y) / scale;
    EXPECT_LE(err_dx, 1e-10) << "<x, dx> = " << via_dx << ", <y, g> = " << via_y;
    EXPECT_LE(err_dw, 1e-10) << "<w, dw> = " << via_dw << ", <y, g> = " << via_y;
    worst = std::max({worst, err_dx, err_dw});
  }
  std::printf("[ adjoint  ] 30 cases: %d grouped, %d depthwise, %d strided, %d dilated, "
              "%d padding > kernel, %d rectangular; worst relative difference %.2e\n",
              grouped, depthwise, strided, dilated, wide_pad, rectangular, worst);
  // The fixed generator seed must keep covering every feature.
  EXPECT_GT(grouped, 0);
  EXPECT_GT(depthwise, 0);
  EXPECT_GT(strided, 0);
  EXPECT_GT(dilated, 0);
  EXPECT_GT(wide_pad, 0);
  EXPECT_GT(rectangular, 0);
}

}  // namespace
}  // namespace fftconv::reference
