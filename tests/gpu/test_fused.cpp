// The fused FFT path (Algo::kFftFused) against the fp64 device oracle: random depthwise and
// single-channel descriptors in every dtype for the forward and backward-data passes (padding,
// stride, dilation, rectangular kernels, odd plane counts), every covered FFT size, kept filters
// and CUDA graph capture.
#include <algorithm>
#include <cstdio>

#include "geometry/fft_geometry.h"
#include "gpu_test_util.h"

namespace fftconv::gputest {
namespace {

// A random descriptor with one channel per group whose fused FFT fits (up to 128 per axis).
ConvDesc random_fused_desc(std::mt19937_64& gen, DType dtype) {
  auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return lo + static_cast<std::int64_t>(gen() % static_cast<std::uint64_t>(hi - lo + 1));
  };
  for (;;) {
    ConvDesc d;
    d.dtype = dtype;
    d.n = pick(1, 3);
    d.c = d.k = d.groups = pick(1, 5);
    d.h = pick(1, 90);
    d.w = pick(1, 90);
    d.r = pick(1, 31);
    d.s = gen() % 4 == 0 ? d.r : pick(1, 31);
    d.dil_h = gen() % 5 == 0 ? pick(2, 3) : 1;
    d.dil_w = gen() % 5 == 0 ? pick(2, 3) : 1;
    d.stride_h = gen() % 4 == 0 ? pick(2, 3) : 1;
    d.stride_w = gen() % 4 == 0 ? pick(2, 3) : 1;
    d.pad_h = pick(0, d.eff_r() - 1 + (gen() % 6 == 0 ? 4 : 0));
    d.pad_w = pick(0, d.eff_s() - 1 + (gen() % 6 == 0 ? 4 : 0));
    if (d.h + 2 * d.pad_h < d.eff_r() || d.w + 2 * d.pad_w < d.eff_s()) continue;
    if (!output_reads_data(d)) continue;
    if (detail::min_fft_h(d) > 128 || detail::min_fft_w(d) > 128) continue;
    return d;
  }
}

void sweep(Pass pass, DType dtype, int cases, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  Options o;
  o.algo = Algo::kFftFused;
  o.pass = pass;
  int failures = 0;
  double worst = 0.0;
  for (int i = 0; i < cases; ++i) {
    const ConvDesc d = random_fused_desc(gen, dtype);
    const std::uint64_t case_seed = seed * 1000 + i;
    const bool keep = i % 3 == 0;
    try {
      testing::ErrorStats err;
      std::string plan;
      if (pass == Pass::kForward) {
        const Problem p(d, case_seed, i % 2 == 0);
        const RunResult r = run_forward(p, o);
        err = r.err;
        plan = r.describe;
        EXPECT_EQ(r.info.algo, Algo::kFftFused) << plan;
      } else {
        const BwdProblem p(d, case_seed);
        const BwdResult r = run_dgrad(p, o, keep);
        err = r.err;
        plan = r.describe;
        EXPECT_EQ(r.info.algo, Algo::kFftFused) << plan;
      }
      worst = std::max(worst, err.rel_l2);
      if (!err.pass(testing::tolerance(dtype))) {
        ++failures;
        ADD_FAILURE() << pass_name(pass) << " " << d.to_string() << " seed " << case_seed << ": "
                      << err.to_string() << " plan: " << plan;
      }
    } catch (const Error& e) {
      ++failures;
      ADD_FAILURE() << pass_name(pass) << " " << d.to_string() << ": " << e.what();
    }
  }
  std::printf("[ sweep    ] %s %s fft_fused: %d cases, %d failures, worst rel_l2 %.3e\n",
              pass_name(pass), dtype_name(dtype), cases, failures, worst);
  EXPECT_EQ(failures, 0);
}

TEST(FusedSweep, ForwardFp32) {
  FFTCONV_REQUIRE_GPU();
  sweep(Pass::kForward, DType::kF32, 150, 71);
}
TEST(FusedSweep, ForwardFp16) {
  FFTCONV_REQUIRE_GPU();
  sweep(Pass::kForward, DType::kF16, 50, 72);
}
TEST(FusedSweep, ForwardBf16) {
  FFTCONV_REQUIRE_GPU();
  sweep(Pass::kForward, DType::kBF16, 50, 73);
}
TEST(FusedSweep, BackwardDataFp32) {
  FFTCONV_REQUIRE_GPU();
  sweep(Pass::kBackwardData, DType::kF32, 150, 74);
}
TEST(FusedSweep, BackwardDataFp16) {
  FFTCONV_REQUIRE_GPU();
  sweep(Pass::kBackwardData, DType::kF16, 50, 75);
}
TEST(FusedSweep, BackwardDataBf16) {
  FFTCONV_REQUIRE_GPU();
  sweep(Pass::kBackwardData, DType::kBF16, 50, 76);
}

// Every FFT size the fused path covers: an unpadded input of 2^a x 2^b with a small kernel has
// exactly that minimum period on each axis, and the plan takes the larger for both.
TEST(Fused, EveryCoveredSize) {
  FFTCONV_REQUIRE_GPU();
  for (int a = 3; a <= 7; ++a) {
    for (int b = 3; b <= 7; ++b) {
      ConvDesc d;
      d.n = 1;
      d.c = d.k = d.groups = 3;  // an odd plane count: the last block has one plane
      d.h = std::int64_t{1} << a;
      d.w = std::int64_t{1} << b;
      d.r = 5;
      d.s = 3;
      Options o;
      o.algo = Algo::kFftFused;
      const Problem p(d, 500 + 10 * a + b, true);
      const RunResult r = run_forward(p, o);
      // One size for both axes: the larger one.
      EXPECT_EQ(r.info.fft_h, std::max(d.h, d.w)) << r.describe;
      EXPECT_EQ(r.info.fft_w, std::max(d.h, d.w)) << r.describe;
      EXPECT_TRUE(r.err.pass(1e-5)) << d.to_string() << ": " << r.err.to_string();
    }
  }
}

// The landmark shapes: a 45x45 kernel, same padding, on 96x96 planes (128x128 FFT).
TEST(Fused, LandmarkShapes) {
  FFTCONV_REQUIRE_GPU();
  for (std::int64_t planes : {1, 64}) {
    ConvDesc d;
    d.n = planes;
    d.h = d.w = 96;
    d.r = d.s = 45;
    d.pad_h = d.pad_w = 22;
    Options o;
    o.algo = Algo::kFftFused;
    const Problem p(d, 900 + planes, true);
    const RunResult r = run_forward(p, o);
    EXPECT_EQ(r.info.fft_h, 128) << r.describe;
    EXPECT_TRUE(r.err.pass(1e-5)) << d.to_string() << ": " << r.err.to_string();
    const BwdProblem q(d, 950 + planes);
    const BwdResult b = run_dgrad(q, o);
    EXPECT_TRUE(b.err.pass(1e-5)) << d.to_string() << " dgrad: " << b.err.to_string();
  }
}

TEST(Fused, KeptFilterMatchesPerCall) {
  FFTCONV_REQUIRE_GPU();
  ConvDesc d;
  d.n = 2;
  d.c = d.k = d.groups = 7;
  d.h = 28;
  d.w = 31;
  d.r = d.s = 13;
  d.pad_h = d.pad_w = 6;
  const Problem p(d, 31, true);
  Options o;
  o.algo = Algo::kFftFused;
  Plan plan(d, o);
  testing::DeviceBuffer y(4 * d.y_elems()), ws(plan.workspace_size());
  plan.set_filter(p.w.get(), nullptr);
  y.poison();
  plan.forward(p.x.get(), nullptr, p.bias.get(), y.get(), ws.get(), ws.bytes(), nullptr);
  testing::cuda_check(cudaDeviceSynchronize(), "kept forward");
  std::vector<float> out(d.y_elems());
  y.download(out.data(), 4 * out.size());
  EXPECT_TRUE(testing::compare(out, p.ref).pass(1e-5));
  EXPECT_GT(plan.filter_bytes(), 0u);
}

TEST(Fused, CapturesInACudaGraph) {
  FFTCONV_REQUIRE_GPU();
  ConvDesc d;
  d.n = 3;
  d.c = d.k = d.groups = 4;
  d.h = d.w = 14;
  d.r = d.s = 31;
  d.pad_h = d.pad_w = 15;
  const Problem p(d, 15, true);
  Options o;
  o.algo = Algo::kFftFused;
  const Plan plan(d, o);
  const auto out = forward_in_graph(plan, p, p.w.get(), p.bias.get(), /*replays=*/3);
  EXPECT_TRUE(testing::compare(out, p.ref).pass(1e-5));
}

TEST(Fused, RejectsWhatItDoesNotServe) {
  FFTCONV_REQUIRE_GPU();
  ConvDesc dense;
  dense.c = 2;
  dense.h = dense.w = 20;
  dense.r = dense.s = 5;
  Options o;
  o.algo = Algo::kFftFused;
  EXPECT_THROW(Plan(dense, o), Error);
  ConvDesc big;
  big.h = big.w = 200;
  big.r = big.s = 9;
  EXPECT_THROW(Plan(big, o), Error);
  ConvDesc one;
  one.h = one.w = 20;
  one.r = one.s = 5;
  o.pass = Pass::kBackwardFilter;
  EXPECT_THROW(Plan(one, o), Error);
}

}  // namespace
}  // namespace fftconv::gputest
