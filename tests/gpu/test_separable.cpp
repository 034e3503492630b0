// The separable path (Algo::kSeparable) against the fp64 device oracle of the dense filter:
// random descriptors (groups with several channels, padding, stride, dilation, rectangular
// kernels) with filters of rank 1 to 3 in every dtype, forward and backward data, forced and
// through Auto's set_filter; a full-rank filter is never routed to it; graph capture; errors.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "gpu_test_util.h"

namespace fftconv::gputest {
namespace {

// K * C/groups planes, each the sum of `rank` outer products of random vectors, rounded to the
// dtype (so the oracle sees the engine's filter).
std::vector<float> low_rank_filter_values(const ConvDesc& d, int rank, std::uint64_t seed) {
  std::vector<float> w(static_cast<std::size_t>(d.w_elems()), 0.0f);
  const std::int64_t planes = d.k * d.c_per_group();
  const auto cols = testing::random_values(planes * rank * d.r, seed, DType::kF32);
  const auto rows = testing::random_values(planes * rank * d.s, seed + 7, DType::kF32);
  for (std::int64_t p = 0; p < planes; ++p) {
    for (int i = 0; i < rank; ++i) {
      for (std::int64_t a = 0; a < d.r; ++a) {
        for (std::int64_t b = 0; b < d.s; ++b) {
          w[(p * d.r + a) * d.s + b] +=
              cols[(p * rank + i) * d.r + a] * rows[(p * rank + i) * d.s + b];
        }
      }
    }
  }
  return testing::decode(testing::encode(w, d.dtype).data(), d.w_elems(), d.dtype);
}

ConvDesc random_desc(std::mt19937_64& gen, DType dtype) {
  auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return lo + static_cast<std::int64_t>(gen() % static_cast<std::uint64_t>(hi - lo + 1));
  };
  for (;;) {
    ConvDesc d;
    d.dtype = dtype;
    d.n = pick(1, 3);
    d.groups = pick(1, 3);
    d.c = d.groups * (gen() % 3 == 0 ? pick(1, 3) : 1);
    d.k = d.groups * (gen() % 3 == 0 ? pick(1, 3) : 1);
    d.h = pick(1, 150);
    d.w = pick(1, 110);
    d.r = pick(1, 45);
    d.s = gen() % 4 == 0 ? d.r : pick(1, 45);
    d.dil_h = gen() % 5 == 0 ? pick(2, 3) : 1;
    d.dil_w = gen() % 5 == 0 ? pick(2, 3) : 1;
    d.stride_h = gen() % 4 == 0 ? pick(2, 3) : 1;
    d.stride_w = gen() % 4 == 0 ? pick(2, 3) : 1;
    d.pad_h = pick(0, d.eff_r() - 1 + (gen() % 6 == 0 ? 4 : 0));
    d.pad_w = pick(0, d.eff_s() - 1 + (gen() % 6 == 0 ? 4 : 0));
    if (d.h + 2 * d.pad_h < d.eff_r() || d.w + 2 * d.pad_w < d.eff_s()) continue;
    if (!output_reads_data(d)) continue;
    return d;
  }
}

// One forward call with the filter kept by set_filter.
RunResult run_kept_forward(const Problem& p, const Options& o) {
  const ConvDesc& d = p.desc;
  Plan plan(d, o);
  plan.set_filter(p.w.get(), nullptr);
  testing::DeviceBuffer y(dtype_size(d.dtype) * d.y_elems()), ws(plan.workspace_size());
  y.poison();
  plan.forward(p.x.get(), nullptr, p.with_bias ? p.bias.get() : nullptr, y.get(), ws.get(),
               ws.bytes(), nullptr);
  testing::cuda_check(cudaDeviceSynchronize(), "forward");
  RunResult r;
  r.describe = plan.describe();
  r.info = plan.info();
  r.y = download(y, d.y_elems(), d.dtype);
  r.err = testing::compare(r.y, p.ref);
  return r;
}

void sweep(Pass pass, DType dtype, int cases, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  Options o;
  o.algo = Algo::kSeparable;
  o.pass = pass;
  int failures = 0;
  double worst = 0.0;
  for (int i = 0; i < cases; ++i) {
    const ConvDesc d = random_desc(gen, dtype);
    const std::uint64_t case_seed = seed * 1000 + i;
    // Below full rank (min(R, S); any rank of a 1-D filter is 1), which is never kept.
    const std::int64_t full = std::min(d.r, d.s);
    const int rank = full == 1 ? 1 : static_cast<int>(std::min<std::int64_t>(1 + i % 3, full - 1));
    const std::vector<float> wv = low_rank_filter_values(d, rank, case_seed + 1);
    try {
      testing::ErrorStats err;
      std::string plan;
      if (pass == Pass::kForward) {
        const Problem p(d, case_seed, i % 2 == 0, wv);
        const RunResult r = run_kept_forward(p, o);
        err = r.err;
        plan = r.describe;
        EXPECT_EQ(r.info.algo, Algo::kSeparable) << plan;
      } else {
        const BwdProblem p(d, case_seed, wv);
        const BwdResult r = run_dgrad(p, o, /*keep_filter=*/true);
        err = r.err;
        plan = r.describe;
        EXPECT_EQ(r.info.algo, Algo::kSeparable) << plan;
      }
      worst = std::max(worst, err.rel_l2);
      if (!err.pass(testing::tolerance(dtype))) {
        ++failures;
        ADD_FAILURE() << pass_name(pass) << " rank " << rank << " " << d.to_string() << " seed "
                      << case_seed << ": " << err.to_string() << " plan: " << plan;
      }
    } catch (const Error& e) {
      ++failures;
      ADD_FAILURE() << pass_name(pass) << " rank " << rank << " " << d.to_string() << ": "
                    << e.what();
    }
  }
  std::printf("[ sweep    ] %s %s separable: %d cases, %d failures, worst rel_l2 %.3e\n",
              pass_name(pass), dtype_name(dtype), cases, failures, worst);
}

TEST(Separable, ForwardSweepF32) {
  FFTCONV_REQUIRE_GPU();
  sweep(Pass::kForward, DType::kF32, 120, 41);
}
TEST(Separable, BackwardDataSweepF32) {
  FFTCONV_REQUIRE_GPU();
  sweep(Pass::kBackwardData, DType::kF32, 120, 42);
}
TEST(Separable, SweepHalf) {
  FFTCONV_REQUIRE_GPU();
  for (DType t : {DType::kF16, DType::kBF16}) {
    sweep(Pass::kForward, t, 40, 43);
    sweep(Pass::kBackwardData, t, 40, 44);
  }
}

// The landmark smoothing layer: 64 heatmaps of 96x96, a 45x45 Gaussian, padding 22. Auto keeps
// it as 1-D passes, exact to fp32 against the dense oracle; a random filter of the same shape
// stays on the plan's own path.
TEST(Separable, AutoTakesTheGaussianNotARandomFilter) {
  FFTCONV_REQUIRE_GPU();
  ConvDesc d;
  d.n = 64;
  d.c = d.k = 1;
  d.h = d.w = 96;
  d.r = d.s = 45;
  d.pad_h = d.pad_w = 22;
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16}) {
    d.dtype = t;
    const Problem gauss(d, 5, true, testing::gaussian_filter(d, 7.0));
    const RunResult g = run_kept_forward(gauss, Options{});
    EXPECT_NE(g.describe.find("kept filter: separable, rank 1"), std::string::npos) << g.describe;
    EXPECT_TRUE(g.err.pass(testing::tolerance(t))) << g.err.to_string() << " " << g.describe;
    if (t == DType::kF32) EXPECT_LE(g.err.rel_l2, 1e-5) << g.describe;

    const Problem random(d, 6, true);
    const RunResult r = run_kept_forward(random, Options{});
    EXPECT_EQ(r.describe.find("kept filter: separable"), std::string::npos) << r.describe;
    EXPECT_NE(r.describe.find("not separable"), std::string::npos) << r.describe;
    EXPECT_TRUE(r.err.pass(testing::tolerance(t))) << r.err.to_string() << " " << r.describe;
  }
  // Backward data of the same layer.
  d.dtype = DType::kF32;
  const BwdProblem b(d, 8, testing::gaussian_filter(d, 7.0));
  const BwdResult r = run_dgrad(b, Options{}, /*keep_filter=*/true);
  EXPECT_NE(r.describe.find("kept filter: separable, rank 1"), std::string::npos) << r.describe;
  EXPECT_LE(r.err.rel_l2, 1e-5) << r.describe;
}

// A photo-sized depthwise blur (many tiles per plane) and a filter of rank 4 (the most kept).
TEST(Separable, PhotoAndRankFour) {
  FFTCONV_REQUIRE_GPU();
  ConvDesc d;
  d.n = 1;
  d.c = d.k = d.groups = 3;
  d.h = 517;
  d.w = 389;
  d.r = d.s = 45;
  d.pad_h = d.pad_w = 22;
  Options o;
  o.algo = Algo::kSeparable;
  const Problem p(d, 9, true, testing::gaussian_filter(d, 9.0));
  const RunResult r = run_kept_forward(p, o);
  EXPECT_LE(r.err.rel_l2, 1e-5) << r.err.to_string() << " " << r.describe;

  ConvDesc e = d;
  e.r = 31;
  e.s = 17;
  e.pad_h = 15;
  e.pad_w = 8;
  const Problem q(e, 10, false, low_rank_filter_values(e, 4, 11));
  const RunResult s = run_kept_forward(q, o);
  EXPECT_NE(s.describe.find("rank 4"), std::string::npos) << s.describe;
  EXPECT_LE(s.err.rel_l2, 1e-5) << s.err.to_string() << " " << s.describe;
}

// Replays follow the kept filter: a Gaussian runs as one kernel (no graph), a random filter of
// the same shape on the plan's FFT path (replayed), and the Gaussian again as one kernel, each
// exact on the same input and output pointers. Planes of 256x256: too large for the fused FFT,
// and too much work for the direct path.
TEST(Separable, ReplayFollowsTheKeptFilter) {
  FFTCONV_REQUIRE_GPU();
  const ConvDesc d = ConvDesc::parse("n4c1h256w256k1r45s45p22x22u1x1d1x1g1f32");
  const Problem gauss(d, 18, true, testing::gaussian_filter(d, 7.0));
  const Problem random(d, 18, true);  // the same input and bias values
  Plan plan(d, Options{});
  testing::DeviceBuffer y(4 * d.y_elems()), ws(plan.workspace_size());
  std::vector<float> out(d.y_elems());
  auto run = [&](const Problem& filter, std::size_t graphs) {
    plan.set_filter(filter.w.get(), nullptr);
    for (int i = 0; i < 3; ++i) {
      y.poison();
      plan.forward(gauss.x.get(), nullptr, gauss.bias.get(), y.get(), ws.get(), ws.bytes(),
                   nullptr);
    }
    testing::cuda_check(cudaDeviceSynchronize(), "sync");
    y.download(out.data(), 4 * out.size());
    const testing::ErrorStats err = testing::compare(out, filter.ref);
    EXPECT_LE(err.rel_l2, 1e-5) << err.to_string() << " " << plan.describe();
    EXPECT_EQ(plan.replay_graphs(), graphs) << plan.describe();
  };
  run(gauss, 0);
  EXPECT_NE(plan.describe().find("kept filter: separable"), std::string::npos) << plan.describe();
  run(random, 1);
  EXPECT_NE(plan.describe().find("not separable"), std::string::npos) << plan.describe();
  run(gauss, 0);
}

TEST(Separable, GraphCaptureOfAKeptFilter) {
  FFTCONV_REQUIRE_GPU();
  ConvDesc d;
  d.n = 4;
  d.c = d.k = d.groups = 2;
  d.h = d.w = 96;
  d.r = d.s = 45;
  d.pad_h = d.pad_w = 22;
  Options o;
  o.algo = Algo::kSeparable;
  const Problem p(d, 12, true, testing::gaussian_filter(d, 7.0));
  Plan plan(d, o);
  plan.set_filter(p.w.get(), nullptr);
  testing::cuda_check(cudaDeviceSynchronize(), "set_filter");
  const std::vector<float> y = forward_in_graph(plan, p, nullptr, p.bias.get(), 3);
  EXPECT_LE(testing::compare(y, p.ref).rel_l2, 1e-5);
}

TEST(Separable, Errors) {
  FFTCONV_REQUIRE_GPU();
  ConvDesc d;
  d.n = 2;
  d.c = d.k = 1;
  d.h = d.w = 40;
  d.r = d.s = 9;
  d.pad_h = d.pad_w = 4;
  Options o;
  o.algo = Algo::kSeparable;
  const Problem p(d, 13, false);  // a random filter: full rank
  testing::DeviceBuffer y(4 * d.y_elems());
  {
    Plan plan(d, o);
    EXPECT_EQ(plan.info().algo, Algo::kSeparable);
    EXPECT_EQ(plan.workspace_size(), 0u);
    // A per-call filter.
    try {
      plan.forward(p.x.get(), p.w.get(), nullptr, y.get(), nullptr, 0, nullptr);
      ADD_FAILURE() << "a per-call filter ran on the separable path";
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), Status::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("kept filter only"), std::string::npos) << e.what();
    }
    // A full-rank filter.
    try {
      plan.set_filter(p.w.get(), nullptr);
      ADD_FAILURE() << "a full-rank filter was kept by the separable path";
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), Status::kNotSupported);
      EXPECT_NE(std::string(e.what()).find("not of rank 4 or less"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(plan.has_filter());
    // A filter with a NaN.
    std::vector<float> bad = testing::gaussian_filter(d, 2.0);
    bad[17] = std::nanf("");
    const testing::DeviceBuffer wbad = upload(bad, d.dtype);
    try {
      plan.set_filter(wbad.get(), nullptr);
      ADD_FAILURE() << "a filter with a NaN was kept";
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), Status::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("non-finite value"), std::string::npos) << e.what();
    }
    // Auto hands the same filter to its own path (where the direct path is estimated faster
    // than a rank-1 factorization, without looking at the values).
    Plan autoplan(d, Options{});
    autoplan.set_filter(wbad.get(), nullptr);
    EXPECT_EQ(autoplan.describe().find("kept filter: separable"), std::string::npos)
        << autoplan.describe();
    EXPECT_NE(autoplan.describe().find("kept filter: not"), std::string::npos)
        << autoplan.describe();
  }
  // Backward filter has no separable form.
  try {
    Plan plan(d, with_pass(o, Pass::kBackwardFilter));
    ADD_FAILURE() << "a backward-filter plan on the separable path";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::kNotSupported);
  }
  // Options::kept_separable = false keeps the Gaussian as a spectrum.
  Options off;
  off.kept_separable = false;
  const Problem g(d, 14, false, testing::gaussian_filter(d, 2.0));
  const RunResult r = run_kept_forward(g, off);
  EXPECT_EQ(r.describe.find("kept filter: separable"), std::string::npos) << r.describe;
  EXPECT_LE(r.err.rel_l2, 1e-5) << r.describe;
}

}  // namespace
}  // namespace fftconv::gputest
