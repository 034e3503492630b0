// Filter spectra in caller memory shared between plans (Plan::filter_spectrum and the
// *_with_spectrum calls): forward and backward data read a spectrum one plan wrote, on full-image
// and tiled geometries and in every dtype, against the fp64 device oracle; plans say which of
// them share; wrong arguments are rejected before anything is written.
#include <random>

#include "gpu_test_util.h"

namespace fftconv::gputest {
namespace {

Options fft(Pass pass, std::int64_t fft_h = 0, std::int64_t fft_w = 0) {
  Options o;
  o.algo = Algo::kFft;
  o.pass = pass;
  o.fft_h = fft_h;
  o.fft_w = fft_w;
  return o;
}

// The forward plan writes the spectrum and runs with it; a backward-data plan forced to the same
// FFT size reads it. Both against the oracle, with graph replay on (the default), several calls.
TEST(FilterSpectrum, ForwardWritesItAndBackwardDataReadsIt) {
  FFTCONV_REQUIRE_GPU();
  std::mt19937_64 gen(1301);
  for (int i = 0; i < 24; ++i) {
    const DType dtype = i % 3 == 2 ? DType::kBF16 : i % 3 == 1 ? DType::kF16 : DType::kF32;
    const ConvDesc d = testing::random_desc(gen, dtype);
    const Problem p(d, 1301000 + i, i % 2 == 0);
    const BwdProblem b(d, 1301500 + i);
    Plan fwd(d, fft(Pass::kForward));
    const PlanInfo& fi = fwd.info();
    Plan dgrad(d, fft(Pass::kBackwardData, fi.fft_h, fi.fft_w));
    ASSERT_GT(fwd.filter_spectrum_size(), 0u) << fwd.describe();
    ASSERT_EQ(fwd.filter_spectrum_size(), dgrad.filter_spectrum_size());
    ASSERT_TRUE(fwd.shares_filter_spectrum(dgrad)) << fwd.describe() << " / " << dgrad.describe();
    ASSERT_TRUE(dgrad.shares_filter_spectrum(fwd));
    const std::size_t es = dtype_size(dtype);
    testing::DeviceBuffer spec(fwd.filter_spectrum_size()), wsf(fwd.workspace_size()),
        wsd(dgrad.workspace_size()), y(es * d.y_elems()), dx(es * d.x_elems());
    // The forward problem's filter for forward; the backward problem's for backward data.
    for (int call = 0; call < 3; ++call) {
      fwd.filter_spectrum(p.w.get(), spec.get(), wsf.get(), wsf.bytes(), nullptr);
      y.poison();
      fwd.forward_with_spectrum(p.x.get(), spec.get(), p.with_bias ? p.bias.get() : nullptr,
                                y.get(), wsf.get(), wsf.bytes(), nullptr);
      testing::cuda_check(cudaDeviceSynchronize(), "forward_with_spectrum");
      const testing::ErrorStats fe = testing::compare(download(y, d.y_elems(), dtype), p.ref);
      EXPECT_TRUE(fe.pass(testing::tolerance(dtype)))
          << d.to_string() << " call " << call << ": " << fe.to_string() << " " << fwd.describe();
      fwd.filter_spectrum(b.w.get(), spec.get(), wsf.get(), wsf.bytes(), nullptr);
      dx.poison();
      dgrad.backward_data_with_spectrum(b.dy.get(), spec.get(), dx.get(), wsd.get(), wsd.bytes(),
                                        nullptr);
      testing::cuda_check(cudaDeviceSynchronize(), "backward_data_with_spectrum");
      const testing::ErrorStats de = testing::compare(download(dx, d.x_elems(), dtype), b.ref_dx);
      EXPECT_TRUE(de.pass(testing::tolerance(dtype)))
          << d.to_string() << " call " << call << ": " << de.to_string() << " "
          << dgrad.describe();
    }
  }
}

// The backward-data plan may write the spectrum too, and a tiled forward plan has its own (at
// its tile size), which a full-image plan does not share.
TEST(FilterSpectrum, TiledForwardAndBackwardDataWriters) {
  FFTCONV_REQUIRE_GPU();
  std::mt19937_64 gen(1302);
  for (int i = 0; i < 10; ++i) {
    const ConvDesc d = testing::random_desc(gen, DType::kF32);
    Options to;
    to.algo = Algo::kFftTiled;
    to.fft_h = d.eff_r() + static_cast<std::int64_t>(gen() % 9);
    to.fft_w = d.eff_s() + static_cast<std::int64_t>(gen() % 9);
    const Problem p(d, 1302000 + i, true);
    Plan tiled(d, to);
    Plan full(d, fft(Pass::kForward));
    EXPECT_EQ(tiled.info().algo, Algo::kFftTiled);
    EXPECT_EQ(tiled.shares_filter_spectrum(full),
              tiled.info().fft_h == full.info().fft_h && tiled.info().fft_w == full.info().fft_w);
    testing::DeviceBuffer spec(tiled.filter_spectrum_size()), ws(tiled.workspace_size()),
        y(4 * d.y_elems());
    tiled.filter_spectrum(p.w.get(), spec.get(), ws.get(), ws.bytes(), nullptr);
    y.poison();
    tiled.forward_with_spectrum(p.x.get(), spec.get(), p.bias.get(), y.get(), ws.get(), ws.bytes(),
                                nullptr);
    testing::cuda_check(cudaDeviceSynchronize(), "tiled forward_with_spectrum");
    const testing::ErrorStats e = testing::compare(download(y, d.y_elems(), d.dtype), p.ref);
    EXPECT_TRUE(e.pass(testing::tolerance(d.dtype))) << d.to_string() << ": " << e.to_string();

    // The spectrum written by a backward-data plan serves the forward plan of that size.
    Plan dgrad(d, fft(Pass::kBackwardData, full.info().fft_h, full.info().fft_w));
    ASSERT_TRUE(dgrad.shares_filter_spectrum(full));
    testing::DeviceBuffer spec2(dgrad.filter_spectrum_size()), wsd(dgrad.workspace_size()),
        wsf(full.workspace_size());
    dgrad.filter_spectrum(p.w.get(), spec2.get(), wsd.get(), wsd.bytes(), nullptr);
    y.poison();
    full.forward_with_spectrum(p.x.get(), spec2.get(), p.bias.get(), y.get(), wsf.get(),
                               wsf.bytes(), nullptr);
    testing::cuda_check(cudaDeviceSynchronize(), "forward from a backward-data spectrum");
    const testing::ErrorStats e2 = testing::compare(download(y, d.y_elems(), d.dtype), p.ref);
    EXPECT_TRUE(e2.pass(testing::tolerance(d.dtype))) << d.to_string() << ": " << e2.to_string();
  }
}

// A spectrum given per call wins over the kept filter, which stays kept for calls without one.
TEST(FilterSpectrum, OverridesTheKeptFilterForThatCallOnly) {
  FFTCONV_REQUIRE_GPU();
  const ConvDesc d = small_desc();
  const Problem kept(d, 1303, true);
  const Problem other(d, 1304, true);
  Plan plan(d, fft(Pass::kForward));
  plan.set_filter(kept.w.get(), nullptr);
  testing::DeviceBuffer spec(plan.filter_spectrum_size()), ws(plan.workspace_size()),
      y(4 * d.y_elems());
  plan.filter_spectrum(other.w.get(), spec.get(), ws.get(), ws.bytes(), nullptr);
  for (int round = 0; round < 3; ++round) {
    y.poison();
    plan.forward_with_spectrum(other.x.get(), spec.get(), other.bias.get(), y.get(), ws.get(),
                               ws.bytes(), nullptr);
    testing::cuda_check(cudaDeviceSynchronize(), "with spectrum");
    EXPECT_TRUE(testing::compare(download(y, d.y_elems(), d.dtype), other.ref).pass(1e-5));
    y.poison();
    plan.forward(kept.x.get(), nullptr, kept.bias.get(), y.get(), ws.get(), ws.bytes(), nullptr);
    testing::cuda_check(cudaDeviceSynchronize(), "kept");
    EXPECT_TRUE(testing::compare(download(y, d.y_elems(), d.dtype), kept.ref).pass(1e-5));
  }
}

// Under Auto a plan may also keep a low-rank filter as 1-D factors; a call with a spectrum still
// reads the spectrum, and calls without one the factors. Rows where Auto picks a path without a
// spectrum (fused, cuDNN) must say so by a zero size.
TEST(FilterSpectrum, AutoPlansAndKeptLowRankFilters) {
  FFTCONV_REQUIRE_GPU();
  int with_spectrum = 0;
  for (const char* text : {"n1c3h300w260k3r45s45p22x22u1x1d1x1g3f32",
                           "n2c8h64w64k8r31s31p15x15u1x1d1x1g1f32",
                           "n1c1h96w96k1r45s45p22x22u1x1d1x1g1f32"}) {
    const ConvDesc d = ConvDesc::parse(text);
    std::vector<float> rank1(static_cast<std::size_t>(d.w_elems()));
    for (std::int64_t plane = 0; plane < d.k * d.c_per_group(); ++plane) {
      for (std::int64_t i = 0; i < d.r; ++i) {
        for (std::int64_t j = 0; j < d.s; ++j) {
          rank1[static_cast<std::size_t>((plane * d.r + i) * d.s + j)] =
              (1.0f + 0.125f * float(i % 7)) * (0.5f + 0.0625f * float((j + plane) % 9));
        }
      }
    }
    const Problem kept(d, 1307, true, rank1);
    const Problem other(d, 1308, true);
    Plan plan(d, Options{});
    const std::size_t bytes = plan.filter_spectrum_size();
    const Algo algo = plan.info().algo;
    EXPECT_EQ(bytes > 0, algo == Algo::kFft || algo == Algo::kFftTiled) << plan.describe();
    if (bytes == 0) continue;
    ++with_spectrum;
    plan.set_filter(kept.w.get(), nullptr);
    testing::DeviceBuffer spec(bytes), ws(plan.workspace_size()), y(4 * d.y_elems());
    plan.filter_spectrum(other.w.get(), spec.get(), ws.get(), ws.bytes(), nullptr);
    y.poison();
    plan.forward_with_spectrum(other.x.get(), spec.get(), other.bias.get(), y.get(), ws.get(),
                               ws.bytes(), nullptr);
    testing::cuda_check(cudaDeviceSynchronize(), "auto with spectrum");
    const testing::ErrorStats e = testing::compare(download(y, d.y_elems(), d.dtype), other.ref);
    EXPECT_TRUE(e.pass(1e-5)) << text << ": " << e.to_string() << " " << plan.describe();
    y.poison();
    plan.forward(kept.x.get(), nullptr, kept.bias.get(), y.get(), ws.get(), ws.bytes(), nullptr);
    testing::cuda_check(cudaDeviceSynchronize(), "auto kept");
    const testing::ErrorStats k = testing::compare(download(y, d.y_elems(), d.dtype), kept.ref);
    EXPECT_TRUE(k.pass(1e-5)) << text << ": " << k.to_string() << " " << plan.describe();
  }
  EXPECT_GE(with_spectrum, 1) << "Auto picked no FFT plan for any case: the test checked nothing";
}

TEST(FilterSpectrum, PlansWithoutOneSayWhy) {
  FFTCONV_REQUIRE_GPU();
  const ConvDesc d = small_desc();
  const Problem p(d, 1305, false);
  Options cudnn;
  cudnn.algo = Algo::kCudnn;
  Plan direct(d, cudnn);
  Plan wgrad(d, fft(Pass::kBackwardFilter));
  Plan fwd(d, fft(Pass::kForward));
  EXPECT_EQ(direct.filter_spectrum_size(), 0u);
  EXPECT_EQ(wgrad.filter_spectrum_size(), 0u);
  EXPECT_FALSE(direct.shares_filter_spectrum(fwd));
  EXPECT_FALSE(fwd.shares_filter_spectrum(wgrad));
  testing::DeviceBuffer spec(fwd.filter_spectrum_size()), ws(fwd.workspace_size()),
      y(4 * d.y_elems());
  try {
    direct.filter_spectrum(p.w.get(), spec.get(), ws.get(), ws.bytes(), nullptr);
    ADD_FAILURE() << "cuDNN plan accepted filter_spectrum";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::kNotSupported);
    EXPECT_NE(std::string(e.what()).find("algo=cudnn"), std::string::npos) << e.what();
  }
  // Wrong pass, null and misaligned spectra, host memory: rejected, nothing written.
  y.poison();
  EXPECT_THROW(fwd.backward_data_with_spectrum(p.x.get(), spec.get(), y.get(), ws.get(),
                                               ws.bytes(), nullptr),
               Error);
  try {
    fwd.forward_with_spectrum(p.x.get(), nullptr, nullptr, y.get(), ws.get(), ws.bytes(), nullptr);
    ADD_FAILURE() << "null spectrum accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::kNullPointer);
  }
  try {
    fwd.forward_with_spectrum(p.x.get(), static_cast<char*>(spec.get()) + 64, nullptr, y.get(),
                              ws.get(), ws.bytes(), nullptr);
    ADD_FAILURE() << "misaligned spectrum accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::kMisalignedPointer);
    EXPECT_NE(std::string(e.what()).find("256 bytes"), std::string::npos) << e.what();
  }
  std::vector<float> host_spectrum(fwd.filter_spectrum_size() / 4 + 64);
  void* host_aligned = reinterpret_cast<void*>(
      (reinterpret_cast<std::uintptr_t>(host_spectrum.data()) + 255) / 256 * 256);
  try {
    fwd.forward_with_spectrum(p.x.get(), host_aligned, nullptr, y.get(), ws.get(), ws.bytes(),
                              nullptr);
    ADD_FAILURE() << "host spectrum accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("spectrum is host memory"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(fwd.filter_spectrum(p.w.get(), spec.get(), ws.get(), 0, nullptr), Error);
  testing::cuda_check(cudaDeviceSynchronize(), "rejected calls");
  EXPECT_TRUE(all_poison(y));
}

// The C API's entry points.
TEST(FilterSpectrum, CApi) {
  FFTCONV_REQUIRE_GPU();
  const ConvDesc d = small_desc();
  const BwdProblem b(d, 1306);
  const fftconv_conv_desc_t cd = c_desc(d);
  fftconv_options_t o = fftconv_options_default();
  o.algo = FFTCONV_ALGO_FFT;
  fftconv_plan_t fwd = nullptr, dgrad = nullptr;
  ASSERT_EQ(fftconv_plan_create(&fwd, &cd, &o), FFTCONV_STATUS_SUCCESS);
  // The backward-data plan at the forward plan's FFT size, so that the two share.
  const PlanInfo info = Plan(d, fft(Pass::kForward)).info();
  o.pass = FFTCONV_PASS_BACKWARD_DATA;
  o.fft_h = info.fft_h;
  o.fft_w = info.fft_w;
  ASSERT_EQ(fftconv_plan_create(&dgrad, &cd, &o), FFTCONV_STATUS_SUCCESS);
  std::size_t bytes = 0, ws_f = 0, ws_d = 0;
  int shared = -1;
  ASSERT_EQ(fftconv_plan_filter_spectrum_size(fwd, &bytes), FFTCONV_STATUS_SUCCESS);
  ASSERT_EQ(fftconv_plans_share_filter_spectrum(fwd, dgrad, &shared), FFTCONV_STATUS_SUCCESS);
  ASSERT_EQ(fftconv_plan_workspace_size(fwd, &ws_f), FFTCONV_STATUS_SUCCESS);
  ASSERT_EQ(fftconv_plan_workspace_size(dgrad, &ws_d), FFTCONV_STATUS_SUCCESS);
  EXPECT_GT(bytes, 0u);
  ASSERT_EQ(shared, 1);
  testing::DeviceBuffer spec(bytes), wsf(ws_f), wsd(ws_d), dx(4 * d.x_elems());
  ASSERT_EQ(fftconv_filter_spectrum(fwd, b.w.get(), spec.get(), wsf.get(), ws_f, nullptr),
            FFTCONV_STATUS_SUCCESS);
  dx.poison();
  ASSERT_EQ(fftconv_backward_data_with_spectrum(dgrad, b.dy.get(), spec.get(), dx.get(),
                                                wsd.get(), ws_d, nullptr),
            FFTCONV_STATUS_SUCCESS);
  testing::cuda_check(cudaDeviceSynchronize(), "C backward_data_with_spectrum");
  EXPECT_TRUE(testing::compare(download(dx, d.x_elems(), d.dtype), b.ref_dx).pass(1e-5));
  // Forward from the same spectrum, into a buffer of y's size (the oracle of y is not needed:
  // the call's status is what the C API adds).
  testing::DeviceBuffer y(4 * d.y_elems());
  EXPECT_EQ(fftconv_forward_with_spectrum(fwd, b.x.get(), spec.get(), nullptr, y.get(), wsf.get(),
                                          ws_f, nullptr),
            FFTCONV_STATUS_SUCCESS);
  EXPECT_EQ(fftconv_forward_with_spectrum(fwd, b.x.get(), nullptr, nullptr, dx.get(), wsf.get(),
                                          ws_f, nullptr),
            FFTCONV_STATUS_NULL_POINTER);
  EXPECT_EQ(fftconv_plans_share_filter_spectrum(fwd, nullptr, &shared),
            FFTCONV_STATUS_NULL_POINTER);
  fftconv_plan_destroy(fwd);
  fftconv_plan_destroy(dgrad);
}

}  // namespace
}  // namespace fftconv::gputest
