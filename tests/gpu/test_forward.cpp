// Forward pass against the fp64 device oracle on random descriptors.
#include "gpu_test_util.h"

namespace fftconv::gputest {
namespace {

struct SweepStats {
  int cases = 0, failures = 0;
  double worst = 0.0;
  std::string worst_desc;
};

// Every case prints its descriptor, seed and plan when it fails.
void sweep(DType dtype, Algo algo, int cases, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  Options o;
  o.algo = algo;
  SweepStats s;
  const double tol = testing::tolerance(dtype);
  for (int i = 0; i < cases; ++i) {
    const ConvDesc d = testing::random_desc(gen, dtype);
    const std::uint64_t case_seed = seed * 1000 + i;
    const Problem p(d, case_seed, i % 2 == 0);
    RunResult r;
    try {
      r = run_forward(p, o);
    } catch (const Error& e) {
      ADD_FAILURE() << d.to_string() << " seed " << case_seed << ": " << e.what();
      ++s.failures;
      continue;
    }
    ++s.cases;
    if (r.err.rel_l2 > s.worst) {
      s.worst = r.err.rel_l2;
      s.worst_desc = d.to_string();
    }
    if (!r.err.pass(tol)) {
      ++s.failures;
      ADD_FAILURE() << d.to_string() << " seed " << case_seed << " bias " << p.with_bias << ": "
                    << r.err.to_string() << " (tolerance " << tol << ") plan: " << r.describe;
    }
  }
  std::printf("[ sweep    ] %s %s: %d cases, %d failures, worst rel_l2 %.3e (%s)\n",
              dtype_name(dtype), algo_name(algo), s.cases, s.failures, s.worst,
              s.worst_desc.c_str());
  EXPECT_EQ(s.failures, 0);
}

TEST(ForwardSweep, FftFp32MatchesOracle) {
  FFTCONV_REQUIRE_GPU();
  sweep(DType::kF32, Algo::kFft, 240, 101);
}

TEST(ForwardSweep, AutoFp32MatchesOracle) {
  FFTCONV_REQUIRE_GPU();
  sweep(DType::kF32, Algo::kAuto, 60, 202);
}

TEST(ForwardSweep, CudnnFp32MatchesOracle) {
  FFTCONV_REQUIRE_GPU();
  sweep(DType::kF32, Algo::kCudnn, 60, 303);
}

TEST(ForwardSweep, FftFp16IoMatchesOracle) {
  FFTCONV_REQUIRE_GPU();
  sweep(DType::kF16, Algo::kFft, 60, 404);
}

TEST(ForwardSweep, FftBf16IoMatchesOracle) {
  FFTCONV_REQUIRE_GPU();
  sweep(DType::kBF16, Algo::kFft, 60, 505);
}

// Every tiling of the per-frequency GEMM gives the same answer as the heuristic's choice.
TEST(ForwardSweep, EveryGemmTilingMatchesOracle) {
  FFTCONV_REQUIRE_GPU();
  std::mt19937_64 gen(606);
  for (int i = 0; i < 6; ++i) {
    const ConvDesc d = testing::random_desc(gen, DType::kF32);
    const Problem p(d, 606000 + i, true);
    Options o;
    o.algo = Algo::kFft;
    for (const auto& k : gemm_kernel_names()) {
      o.gemm_kernel = k;
      const RunResult r = run_forward(p, o);
      EXPECT_TRUE(r.err.pass(1e-5)) << d.to_string() << " gemm " << k << ": " << r.err.to_string();
      EXPECT_EQ(r.info.gemm, k);
    }
  }
}

}  // namespace
}  // namespace fftconv::gputest
