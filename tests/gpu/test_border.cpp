// Borders other than zeros (ConvDesc::border) on the GPU: every algorithm, forced and under
// Auto, every pass it runs, against the fp64 device oracles (whose backward passes
// DeviceReference.BackwardWithBordersMatchesHostOracle checks against the host's); the separable
// path applies the border as it loads (no bordered copy); half precision; graph replay; the
// workspace of the bordered input.
#include <cstdio>

#include "gpu_test_util.h"

namespace fftconv::gputest {
namespace {

constexpr Border kBorders[] = {Border::kReflect, Border::kReplicate, Border::kCircular};

// Shapes with every geometry the entries take: dense with rectangular kernels, depthwise large
// kernels (fused), stride and dilation, padding beyond an extent (reflect mirrors again).
const char* const kShapes[] = {
    "n2c3h37w29k4r15s9p7x4u1x1d1x1g1f32",
    "n2c4h28w28k4r31s31p15x15u1x1d1x1g4f32",
    "n1c2h40w33k3r5s7p6x3u2x1d1x2g1f32",
    "n3c1h9w12k2r11s11p12x12u1x1d1x1g1f32",
};

// Runs one pass of `d` with options `o`; false when the plan cannot be built (kNotSupported).
bool run_pass(const ConvDesc& d, const Options& o, std::uint64_t seed, testing::ErrorStats* err,
              std::string* describe) {
  try {
    if (o.pass == Pass::kForward) {
      const Problem p(d, seed, true);
      const RunResult r = run_forward(p, o);
      *err = r.err;
      *describe = r.describe;
    } else {
      const BwdProblem p(d, seed);
      const BwdResult r = o.pass == Pass::kBackwardData ? run_dgrad(p, o) : run_wgrad(p, o);
      *err = r.err;
      *describe = r.describe;
    }
    return true;
  } catch (const Error& e) {
    if (e.status() != Status::kNotSupported) throw;
    *describe = e.what();
    return false;
  }
}

TEST(Border, EveryAlgorithmEveryPassF32) {
  FFTCONV_REQUIRE_GPU();
  const Algo algos[] = {Algo::kAuto, Algo::kFft, Algo::kFftTiled, Algo::kFftFused, Algo::kCudnn};
  int ran = 0, failures = 0;
  double worst = 0.0;
  std::uint64_t seed = 500;
  for (const char* text : kShapes) {
    for (Border b : kBorders) {
      ConvDesc d = ConvDesc::parse(text);
      d.border = b;
      for (Pass pass : {Pass::kForward, Pass::kBackwardData, Pass::kBackwardFilter}) {
        for (Algo a : algos) {
          Options o;
          o.algo = a;
          o.pass = pass;
          testing::ErrorStats err;
          std::string describe;
          if (!run_pass(d, o, ++seed, &err, &describe)) {
            // Auto and the full-image FFT run every problem; the others where they apply.
            EXPECT_NE(a, Algo::kAuto) << d.to_string() << " " << describe;
            EXPECT_NE(a, Algo::kFft) << d.to_string() << " " << describe;
            continue;
          }
          ++ran;
          worst = std::max(worst, err.rel_l2);
          if (!err.pass(testing::tolerance(DType::kF32))) {
            ++failures;
            ADD_FAILURE() << algo_name(a) << " " << pass_name(pass) << " " << d.to_string()
                          << ": " << err.to_string() << " plan: " << describe;
          }
          EXPECT_NE(describe.find(std::string("border ") + border_name(b)), std::string::npos)
              << describe;
        }
      }
    }
  }
  std::printf("[ sweep    ] borders: %d plans ran, %d failures, worst rel_l2 %.3e\n", ran,
              failures, worst);
}

TEST(Border, HalfPrecisionUnderAuto) {
  FFTCONV_REQUIRE_GPU();
  for (DType t : {DType::kF16, DType::kBF16}) {
    ConvDesc d = ConvDesc::parse(kShapes[1]);
    d.dtype = t;
    d.border = Border::kReflect;
    for (Pass pass : {Pass::kForward, Pass::kBackwardData, Pass::kBackwardFilter}) {
      Options o;
      o.pass = pass;
      testing::ErrorStats err;
      std::string describe;
      ASSERT_TRUE(run_pass(d, o, 77, &err, &describe)) << describe;
      EXPECT_TRUE(err.pass(testing::tolerance(t)))
          << dtype_name(t) << " " << pass_name(pass) << ": " << err.to_string() << " " << describe;
    }
  }
}

// A kept Gaussian under Auto and forced: the separable kernel maps rows and columns outside the
// input through the border as it loads, so no bordered copy and no workspace for one.
TEST(Border, SeparableAppliesTheBorderOnLoad) {
  FFTCONV_REQUIRE_GPU();
  ConvDesc d;
  d.n = 8;
  d.c = d.k = d.groups = 3;
  d.h = 96;
  d.w = 80;
  d.r = d.s = 45;
  d.pad_h = d.pad_w = 22;
  for (Border b : kBorders) {
    d.border = b;
    const Problem p(d, 9, true, testing::gaussian_filter(d, 7.0));
    for (Algo a : {Algo::kAuto, Algo::kSeparable}) {
      Options o;
      o.algo = a;
      Plan plan(d, o);
      plan.set_filter(p.w.get(), nullptr);
      testing::DeviceBuffer y(dtype_size(d.dtype) * d.y_elems());
      y.poison();
      testing::DeviceBuffer ws(plan.workspace_size());
      plan.forward(p.x.get(), nullptr, p.bias.get(), y.get(), ws.get(), ws.bytes(), nullptr);
      testing::cuda_check(cudaDeviceSynchronize(), "forward");
      const testing::ErrorStats err = testing::compare(download(y, d.y_elems(), d.dtype), p.ref);
      const std::string describe = plan.describe();
      EXPECT_LE(err.rel_l2, 1e-5) << border_name(b) << " " << describe;
      EXPECT_NE(describe.find("separable, rank 1"), std::string::npos) << describe;
      EXPECT_NE(describe.find(std::string("border ") + border_name(b) + " on load"),
                std::string::npos)
          << describe;
      if (a == Algo::kSeparable) {
        EXPECT_EQ(plan.workspace_size(), 0u) << describe;
        EXPECT_EQ(describe.find("bordered into"), std::string::npos) << describe;
      }
    }
  }
}

// Backward data of a kept Gaussian with a border: the bordered problem on the separable path
// (its gradient then folded back).
TEST(Border, KeptGaussianBackwardDataRunsSeparable) {
  FFTCONV_REQUIRE_GPU();
  ConvDesc d;
  d.n = 16;
  d.c = d.k = d.groups = 1;
  d.h = d.w = 96;
  d.r = d.s = 45;
  d.pad_h = d.pad_w = 22;
  d.border = Border::kReflect;
  const BwdProblem p(d, 21, testing::gaussian_filter(d, 7.0));
  const BwdResult r = run_dgrad(p, Options{}, /*keep_filter=*/true);
  EXPECT_NE(r.describe.find("kept filter: separable, rank 1"), std::string::npos) << r.describe;
  EXPECT_NE(r.describe.find("folded back"), std::string::npos) << r.describe;
  EXPECT_LE(r.err.rel_l2, 1e-5) << r.describe;
}

// The second call with the same pointers replays a graph of the border stage and the pass.
TEST(Border, GraphReplayGivesTheSameResult) {
  FFTCONV_REQUIRE_GPU();
  ConvDesc d = ConvDesc::parse(kShapes[0]);
  d.border = Border::kCircular;
  const Problem p(d, 3, true);
  Plan plan(d, Options{});
  testing::DeviceBuffer y(dtype_size(d.dtype) * d.y_elems()), ws(plan.workspace_size());
  std::vector<std::vector<float>> outs;
  for (int call = 0; call < 3; ++call) {
    y.poison();
    plan.forward(p.x.get(), p.w.get(), p.bias.get(), y.get(), ws.get(), ws.bytes(), nullptr);
    testing::cuda_check(cudaDeviceSynchronize(), "forward");
    outs.push_back(download(y, d.y_elems(), d.dtype));
  }
  EXPECT_EQ(outs[0], outs[1]);
  EXPECT_EQ(outs[0], outs[2]);
  EXPECT_TRUE(testing::compare(outs[2], p.ref).pass(testing::tolerance(DType::kF32)));
}

TEST(Border, WorkspaceLimitBelowTheBorderedInputIsReported) {
  FFTCONV_REQUIRE_GPU();
  ConvDesc d = ConvDesc::parse(kShapes[0]);
  d.border = Border::kReplicate;
  Options o;
  o.algo = Algo::kFft;
  o.workspace_limit = 256;
  try {
    Plan plan(d, o);
    ADD_FAILURE() << "planned within 256 bytes: " << plan.describe();
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::kNotSupported);
    EXPECT_NE(std::string(e.what()).find("bordered input"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fftconv::gputest
