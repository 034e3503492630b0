// Filter spectra shared between plans (Plan::filter_spectrum, forward_with_spectrum,
// backward_data_with_spectrum) on the host backend, against the fp64 host oracle: the training
// step's order (forward writes, backward data reads), which plans share, a kept filter beside a
// given spectrum, a kept low-rank filter, the C API and the rejections. Needs no GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "fftconv/fftconv.h"
#include "fftconv/fftconv.hpp"
#include "reference/reference.h"
#include "testing/testing.h"

#include "host_test_util.h"

namespace fftconv {
namespace {

using hosttest::cpu_options;
using hosttest::poisoned;

// Host memory of `bytes`, 256-byte aligned as the spectrum calls require.
class AlignedBuffer {
 public:
  explicit AlignedBuffer(std::size_t bytes) : storage_(bytes / sizeof(float) + 64) {}
  void* get() {
    const auto p = reinterpret_cast<std::uintptr_t>(storage_.data());
    return reinterpret_cast<void*>((p + 255) / 256 * 256);
  }

 private:
  std::vector<float> storage_;
};

Options with_fft(Options o, const PlanInfo& info) {
  o.fft_h = info.fft_h;
  o.fft_w = info.fft_w;
  return o;
}

struct Step {
  ConvDesc d;
  std::vector<float> x, w, bias, dy;
  std::vector<double> ref_y, ref_dx;

  Step(const ConvDesc& desc, std::uint64_t seed) : d(desc) {
    x = testing::random_values(d.x_elems(), seed, DType::kF32);
    w = testing::random_values(d.w_elems(), seed + 1, DType::kF32);
    bias = testing::random_values(d.k, seed + 2, DType::kF32);
    dy = testing::random_values(d.y_elems(), seed + 3, DType::kF32);
    ref_y.resize(static_cast<std::size_t>(d.y_elems()));
    ref_dx.resize(static_cast<std::size_t>(d.x_elems()));
    reference::conv2d_forward_host(d, x.data(), w.data(), bias.data(), ref_y.data());
    reference::conv2d_backward_data_host(d, dy.data(), w.data(), ref_dx.data());
  }
};

// One spectrum per step, written by the forward plan and read by both passes.
TEST(HostFilterSpectrum, ForwardWritesItBackwardDataReadsIt) {
  FFTCONV_REQUIRE_FFTW();
  std::mt19937_64 gen(1401);
  testing::RandomDescOptions small;
  small.max_batch = 2;
  small.max_extent = 40;
  for (int i = 0; i < 40; ++i) {
    const ConvDesc d = testing::random_desc(gen, small);
    const Step s(d, 1401000 + 10 * i);
    Plan fwd(d, cpu_options(Pass::kForward));
    Plan dgrad(d, with_fft(cpu_options(Pass::kBackwardData), fwd.info()));
    ASSERT_GT(fwd.filter_spectrum_size(), 0u);
    ASSERT_TRUE(fwd.shares_filter_spectrum(dgrad)) << d.to_string();
    AlignedBuffer spec(fwd.filter_spectrum_size());
    fwd.filter_spectrum(s.w.data(), spec.get(), nullptr, 0, nullptr);
    std::vector<float> y = poisoned(d.y_elems()), dx = poisoned(d.x_elems());
    fwd.forward_with_spectrum(s.x.data(), spec.get(), s.bias.data(), y.data(), nullptr, 0,
                              nullptr);
    dgrad.backward_data_with_spectrum(s.dy.data(), spec.get(), dx.data(), nullptr, 0, nullptr);
    const testing::ErrorStats ey = testing::compare(y, s.ref_y);
    const testing::ErrorStats edx = testing::compare(dx, s.ref_dx);
    EXPECT_TRUE(ey.pass(1e-5)) << d.to_string() << ": " << ey.to_string();
    EXPECT_TRUE(edx.pass(1e-5)) << d.to_string() << ": " << edx.to_string();
  }
}

// Which plans share: same filter, backend and FFT size; not backward filter, not another size,
// not another filter shape.
TEST(HostFilterSpectrum, SharingFollowsTheFftSizeAndFilterShape) {
  FFTCONV_REQUIRE_FFTW();
  const ConvDesc d = ConvDesc::parse("n2c4h21w17k6r5s7p2x3u1x1d1x1g2f32");
  Plan fwd(d, cpu_options(Pass::kForward));
  const PlanInfo& info = fwd.info();
  Plan same(d, with_fft(cpu_options(Pass::kBackwardData), info));
  Options bigger = cpu_options(Pass::kBackwardData);
  bigger.fft_h = info.fft_h + 4;
  bigger.fft_w = info.fft_w;
  Plan other_size(d, bigger);
  Plan wgrad(d, cpu_options(Pass::kBackwardFilter));
  ConvDesc d2 = d;
  d2.s = 5;
  Plan other_filter(d2, with_fft(cpu_options(Pass::kForward), info));
  EXPECT_TRUE(fwd.shares_filter_spectrum(fwd));
  EXPECT_TRUE(fwd.shares_filter_spectrum(same));
  EXPECT_FALSE(fwd.shares_filter_spectrum(other_size));
  EXPECT_FALSE(fwd.shares_filter_spectrum(wgrad));
  EXPECT_FALSE(wgrad.shares_filter_spectrum(wgrad));
  EXPECT_FALSE(fwd.shares_filter_spectrum(other_filter));
  EXPECT_EQ(wgrad.filter_spectrum_size(), 0u);
  EXPECT_GT(other_size.filter_spectrum_size(), fwd.filter_spectrum_size());
}

// A given spectrum serves its call only: the kept filter (an FFT spectrum, or the factors of a
// low-rank one) still serves calls without one.
TEST(HostFilterSpectrum, KeptFiltersStayForCallsWithoutOne) {
  FFTCONV_REQUIRE_FFTW();
  const ConvDesc d = ConvDesc::parse("n1c1h48w40k1r15s15p7x7u1x1d1x1g1f32");
  const Step a(d, 1402);
  const Step b(d, 1403);
  // A rank-1 kept filter (the host keeps it as 1-D factors where that pays).
  std::vector<float> u(15), v(15), rank1(d.w_elems());
  for (int i = 0; i < 15; ++i) {
    u[i] = 1.0f + 0.1f * i;
    v[i] = 2.0f - 0.05f * i;
  }
  for (int i = 0; i < 15; ++i) {
    for (int j = 0; j < 15; ++j) rank1[i * 15 + j] = u[i] * v[j];
  }
  std::vector<double> ref_rank1(d.y_elems());
  reference::conv2d_forward_host(d, a.x.data(), rank1.data(), a.bias.data(), ref_rank1.data());
  for (const std::vector<float>* kept : {&a.w, static_cast<const std::vector<float>*>(&rank1)}) {
    Plan plan(d, cpu_options(Pass::kForward));
    plan.set_filter(kept->data(), nullptr);
    AlignedBuffer spec(plan.filter_spectrum_size());
    plan.filter_spectrum(b.w.data(), spec.get(), nullptr, 0, nullptr);
    for (int round = 0; round < 2; ++round) {
      std::vector<float> y = poisoned(d.y_elems());
      plan.forward_with_spectrum(a.x.data(), spec.get(), a.bias.data(), y.data(), nullptr, 0,
                                 nullptr);
      std::vector<double> ref(d.y_elems());
      reference::conv2d_forward_host(d, a.x.data(), b.w.data(), a.bias.data(), ref.data());
      EXPECT_TRUE(testing::compare(y, ref).pass(1e-5)) << plan.describe();
      y = poisoned(d.y_elems());
      plan.forward(a.x.data(), nullptr, a.bias.data(), y.data(), nullptr, 0, nullptr);
      const std::vector<double>& want = kept == &a.w ? a.ref_y : ref_rank1;
      EXPECT_TRUE(testing::compare(y, want).pass(1e-5)) << plan.describe();
    }
  }
}

TEST(HostFilterSpectrum, RejectsBadArgumentsAndWritesNothing) {
  FFTCONV_REQUIRE_FFTW();
  const ConvDesc d = ConvDesc::parse("n2c3h20w18k4r5s5p2x2u1x1d1x1g1f32");
  const Step s(d, 1404);
  Plan fwd(d, cpu_options(Pass::kForward));
  Plan dgrad(d, with_fft(cpu_options(Pass::kBackwardData), fwd.info()));
  Plan wgrad(d, cpu_options(Pass::kBackwardFilter));
  AlignedBuffer spec(fwd.filter_spectrum_size());
  fwd.filter_spectrum(s.w.data(), spec.get(), nullptr, 0, nullptr);
  std::vector<float> y = poisoned(d.y_elems());
  const auto status_of = [](auto&& call) {
    try {
      call();
    } catch (const Error& e) {
      return e.status();
    }
    return Status::kSuccess;
  };
  auto* misaligned = static_cast<char*>(spec.get()) + 16;
  EXPECT_EQ(status_of([&] {
              fwd.forward_with_spectrum(s.x.data(), nullptr, nullptr, y.data(), nullptr, 0,
                                        nullptr);
            }),
            Status::kNullPointer);
  EXPECT_EQ(status_of([&] {
              fwd.forward_with_spectrum(s.x.data(), misaligned, nullptr, y.data(), nullptr, 0,
                                        nullptr);
            }),
            Status::kMisalignedPointer);
  EXPECT_EQ(status_of([&] {
              fwd.forward_with_spectrum(nullptr, spec.get(), nullptr, y.data(), nullptr, 0,
                                        nullptr);
            }),
            Status::kNullPointer);
  // The spectrum must not overlap the output.
  EXPECT_EQ(status_of([&] {
              fwd.forward_with_spectrum(s.x.data(), spec.get(), nullptr,
                                        static_cast<float*>(spec.get()), nullptr, 0, nullptr);
            }),
            Status::kInvalidArgument);
  // The wrong pass for the call, and a pass without a spectrum.
  EXPECT_EQ(status_of([&] {
              fwd.backward_data_with_spectrum(s.dy.data(), spec.get(), y.data(), nullptr, 0,
                                              nullptr);
            }),
            Status::kInvalidArgument);
  EXPECT_EQ(status_of([&] {
              dgrad.forward_with_spectrum(s.x.data(), spec.get(), nullptr, y.data(), nullptr, 0,
                                          nullptr);
            }),
            Status::kInvalidArgument);
  EXPECT_EQ(status_of([&] { wgrad.filter_spectrum(s.w.data(), spec.get(), nullptr, 0, nullptr); }),
            Status::kNotSupported);
  EXPECT_EQ(status_of([&] { fwd.filter_spectrum(nullptr, spec.get(), nullptr, 0, nullptr); }),
            Status::kNullPointer);
  EXPECT_EQ(status_of([&] { fwd.filter_spectrum(s.w.data(), misaligned, nullptr, 0, nullptr); }),
            Status::kMisalignedPointer);
  for (float v : y) ASSERT_TRUE(std::isnan(v)) << "a rejected call wrote y";
  try {
    wgrad.filter_spectrum(s.w.data(), spec.get(), nullptr, 0, nullptr);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("pass=wgrad"), std::string::npos) << e.what();
  }
}

TEST(HostFilterSpectrum, CApi) {
  FFTCONV_REQUIRE_FFTW();
  const ConvDesc d = ConvDesc::parse("n2c3h20w18k4r5s5p2x2u1x1d1x1g1f32");
  const Step s(d, 1405);
  const fftconv_conv_desc_t cd = testing::c_desc(d);
  fftconv_options_t o = fftconv_options_default();
  o.backend = FFTCONV_BACKEND_CPU;
  fftconv_plan_t fwd = nullptr, dgrad = nullptr;
  ASSERT_EQ(fftconv_plan_create(&fwd, &cd, &o), FFTCONV_STATUS_SUCCESS)
      << fftconv_last_error_message();
  o.pass = FFTCONV_PASS_BACKWARD_DATA;
  ASSERT_EQ(fftconv_plan_create(&dgrad, &cd, &o), FFTCONV_STATUS_SUCCESS);
  std::size_t bytes = 0;
  int shared = -1;
  ASSERT_EQ(fftconv_plan_filter_spectrum_size(fwd, &bytes), FFTCONV_STATUS_SUCCESS);
  ASSERT_EQ(fftconv_plans_share_filter_spectrum(fwd, dgrad, &shared), FFTCONV_STATUS_SUCCESS);
  ASSERT_GT(bytes, 0u);
  ASSERT_EQ(shared, 1) << fftconv_plan_describe(fwd) << " / " << fftconv_plan_describe(dgrad);
  AlignedBuffer spec(bytes);
  ASSERT_EQ(fftconv_filter_spectrum(fwd, s.w.data(), spec.get(), nullptr, 0, nullptr),
            FFTCONV_STATUS_SUCCESS);
  std::vector<float> y = poisoned(d.y_elems()), dx = poisoned(d.x_elems());
  ASSERT_EQ(fftconv_forward_with_spectrum(fwd, s.x.data(), spec.get(), s.bias.data(), y.data(),
                                          nullptr, 0, nullptr),
            FFTCONV_STATUS_SUCCESS);
  ASSERT_EQ(fftconv_backward_data_with_spectrum(dgrad, s.dy.data(), spec.get(), dx.data(),
                                                nullptr, 0, nullptr),
            FFTCONV_STATUS_SUCCESS);
  EXPECT_TRUE(testing::compare(y, s.ref_y).pass(1e-5));
  EXPECT_TRUE(testing::compare(dx, s.ref_dx).pass(1e-5));
  EXPECT_EQ(fftconv_plan_filter_spectrum_size(nullptr, &bytes), FFTCONV_STATUS_NULL_POINTER);
  EXPECT_EQ(fftconv_plans_share_filter_spectrum(fwd, dgrad, nullptr), FFTCONV_STATUS_NULL_POINTER);
  EXPECT_EQ(fftconv_forward_with_spectrum(fwd, s.x.data(), nullptr, nullptr, y.data(), nullptr, 0,
                                          nullptr),
            FFTCONV_STATUS_NULL_POINTER);
  EXPECT_NE(std::string(fftconv_last_error_message()).find("spectrum is null"), std::string::npos)
      << fftconv_last_error_message();
  fftconv_plan_destroy(fwd);
  fftconv_plan_destroy(dgrad);
}

}  // namespace
}  // namespace fftconv
