// The host oracle on cases small enough to check by hand.
#include <gtest/gtest.h>

#include <vector>

#include "reference/reference.h"

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

}  // namespace
}  // namespace fftconv::reference
