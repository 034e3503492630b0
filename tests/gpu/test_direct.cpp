// The direct path (Algo::kDirect) on the device against the fp64 oracle: random descriptors of
// every pass in every dtype (the backward filter accumulating, and with fp32 dw for half data),
// kept filters, the landmark rows, a CUDA graph capture; the backward filter's rows layout.
// Its index math runs on the host too (tests/cpu/test_direct_program.cu).
#include <cstdlib>

#include "gpu_test_util.h"

namespace fftconv::gputest {
namespace {

Options direct_options(Pass pass) {
  Options o;
  o.algo = Algo::kDirect;
  return with_pass(o, pass);
}

TEST(Direct, EveryPassAndDtypeMatchesOracle) {
  FFTCONV_REQUIRE_GPU();
  std::mt19937_64 gen(5151);
  int cases = 0;
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    testing::RandomDescOptions ro;
    ro.dtype = dtype;
    ro.max_macs = 5e7;
    const double tol = testing::tolerance(dtype);
    double worst = 0.0;
    for (int i = 0; i < 40; ++i) {
      const ConvDesc d = testing::random_desc(gen, ro);
      const std::uint64_t seed = 5151000 + i;
      SCOPED_TRACE(d.to_string() + " seed " + std::to_string(seed));
      const Problem p(d, seed, i % 2 == 0);
      const RunResult f = run_forward(p, direct_options(Pass::kForward));
      EXPECT_TRUE(f.err.pass(tol)) << "fwd " << f.err.to_string() << "\n" << f.describe;
      EXPECT_EQ(f.info.algo, Algo::kDirect);
      worst = std::max(worst, f.err.rel_l2);
      ++cases;
      const BwdProblem bp(d, seed);
      std::vector<float> dw0;
      if (i % 4 == 0) dw0 = testing::random_values(d.w_elems(), seed + 7, d.dtype);
      Options wo = direct_options(Pass::kBackwardFilter);
      wo.dw_fp32 = i % 2 == 1;  // fp16/bf16 data: dw in fp32 (master gradients)
      const BwdResult dw = dw0.empty() ? run_wgrad(bp, wo) : run_wgrad(bp, wo, 0.5f, 2.0f, &dw0);
      EXPECT_TRUE(dw.err.pass(tol)) << "wgrad " << dw.err.to_string() << "\n" << dw.describe;
      EXPECT_EQ(dw.info.algo, Algo::kDirect);
      worst = std::max(worst, dw.err.rel_l2);
      ++cases;
      if (d.stride_h == 1 && d.stride_w == 1) {
        const BwdResult dx = run_dgrad(bp, direct_options(Pass::kBackwardData), i % 3 == 0);
        EXPECT_TRUE(dx.err.pass(tol)) << "dgrad " << dx.err.to_string() << "\n" << dx.describe;
        worst = std::max(worst, dx.err.rel_l2);
        ++cases;
      }
    }
    std::printf("[ sweep    ] %s direct: worst rel_l2 %.3e\n", dtype_name(dtype), worst);
  }
  EXPECT_GE(cases, 270);
}

// The rows the path is for, a kept filter among them, and a graph capture of one call.
TEST(Direct, LandmarkRowsKeptFilterAndGraph) {
  FFTCONV_REQUIRE_GPU();
  for (const char* s :
       {"n1c1h96w96k1r45s45p22x22u1x1d1x1g1f32", "n1c3h224w224k1r45s45p0x0u1x1d1x1g1f32"}) {
    const ConvDesc d = ConvDesc::parse(s);
    const Problem p(d, 5252, true);
    const RunResult f = run_forward(p, direct_options(Pass::kForward));
    EXPECT_TRUE(f.err.pass(testing::tolerance(d.dtype))) << s << " " << f.err.to_string();
    Plan plan(d, direct_options(Pass::kForward));
    plan.set_filter(p.w.get(), nullptr);
    const std::vector<float> replayed = forward_in_graph(plan, p, nullptr, p.bias.get(), 2);
    EXPECT_TRUE(testing::compare(replayed, p.ref).pass(testing::tolerance(d.dtype))) << s;
  }
}

// The backward filter's rows layout ($FFTCONV_DIRECT_WGRAD=rows at plan time): the landmark
// plane alone and four of them, strided, dilated and grouped filters, a row wider than a tile,
// every dtype (half data with an fp32 dw too), accumulating into dw and not.
TEST(Direct, BackwardFilterRowsLayout) {
  FFTCONV_REQUIRE_GPU();
  struct EnvLayout {
    EnvLayout() { setenv("FFTCONV_DIRECT_WGRAD", "rows", 1); }
    ~EnvLayout() { unsetenv("FFTCONV_DIRECT_WGRAD"); }
  } rows_layout;
  int i = 0;
  for (const char* s :
       {"n1c1h96w96k1r45s45p22x22u1x1d1x1g1f32", "n4c1h96w96k1r45s45p22x22u1x1d1x1g1f32",
        "n2c4h40w300k4r17s33p8x16u2x2d1x1g4f32", "n1c2h40w90k4r21s41p30x60u1x1d3x3g2f32",
        "n2c6h28w28k6r51s51p25x25u1x1d1x1g6f32"}) {
    for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
      ConvDesc d = ConvDesc::parse(s);
      d.dtype = dtype;
      const std::uint64_t seed = 5353000 + i;
      SCOPED_TRACE(d.to_string() + " seed " + std::to_string(seed));
      const BwdProblem bp(d, seed);
      Options wo = direct_options(Pass::kBackwardFilter);
      wo.dw_fp32 = dtype != DType::kF32 && i % 2 == 1;
      std::vector<float> dw0;
      if (i % 3 == 0) dw0 = testing::random_values(d.w_elems(), seed + 7, d.dtype);
      const BwdResult dw = dw0.empty() ? run_wgrad(bp, wo) : run_wgrad(bp, wo, 0.5f, 2.0f, &dw0);
      EXPECT_TRUE(dw.err.pass(testing::tolerance(dtype))) << dw.err.to_string() << "\n"
                                                          << dw.describe;
      EXPECT_NE(dw.describe.find("rows:"), std::string::npos) << dw.describe;
      ++i;
    }
  }
}

}  // namespace
}  // namespace fftconv::gputest
