// The implicit-GEMM backward filter (Algo::kImplicitGemm: CUTLASS's Conv2dWgrad, 3xTF32) on the
// device against the fp64 oracle: random descriptors (stride, dilation, padding, groups and
// channel counts that are not a multiple of 4), both tile shapes, split-K slices, accumulation
// into dw, the dense 3x3 and 5x5 backward filters it is for, a CUDA graph capture, and the
// calls it refuses. Skipped with the reason in a build without CUTLASS.
#include <string>

#include "gpu_test_util.h"

namespace fftconv::gputest {
namespace {

Options igemm_options() {
  Options o;
  o.algo = Algo::kImplicitGemm;
  o.pass = Pass::kBackwardFilter;
  return o;
}

// Empty where the path is built; else why not (the plan's own error).
std::string igemm_missing() {
  try {
    Plan p(ConvDesc::parse("n1c4h8w8k4r3s3p1x1u1x1d1x1g1f32"), igemm_options());
    return {};
  } catch (const Error& e) {
    if (e.status() == Status::kNotSupported) return e.what();
    throw;
  }
}

#define FFTCONV_REQUIRE_IGEMM()                                      \
  do {                                                               \
    FFTCONV_REQUIRE_GPU();                                           \
    const std::string fftconv_missing_ = igemm_missing();            \
    if (!fftconv_missing_.empty()) GTEST_SKIP() << fftconv_missing_; \
  } while (0)

void expect_igemm(const ConvDesc& d, std::uint64_t seed, float alpha, float beta) {
  SCOPED_TRACE(d.to_string() + " seed " + std::to_string(seed));
  const BwdProblem p(d, seed);
  std::vector<float> dw0;
  if (beta != 0.0f) dw0 = testing::random_values(d.w_elems(), seed + 9, DType::kF32);
  const BwdResult r = run_wgrad(p, igemm_options(), alpha, beta, &dw0);
  EXPECT_TRUE(r.err.pass(testing::tolerance(DType::kF32))) << r.err.to_string() << "\n"
                                                           << r.describe;
  EXPECT_EQ(r.info.algo, Algo::kImplicitGemm);
  EXPECT_NE(r.describe.find("3xTF32"), std::string::npos) << r.describe;
}

TEST(ImplicitGemm, RandomDescriptorsMatchOracle) {
  FFTCONV_REQUIRE_IGEMM();
  std::mt19937_64 gen(7171);
  testing::RandomDescOptions ro;
  ro.max_macs = 5e7;
  ro.max_channels_per_group = 12;
  double worst = 0.0;
  for (int i = 0; i < 40; ++i) {
    const ConvDesc d = testing::random_desc(gen, ro);
    const std::uint64_t seed = 7171000 + i;
    SCOPED_TRACE(d.to_string() + " seed " + std::to_string(seed));
    const BwdProblem p(d, seed);
    std::vector<float> dw0;
    const float beta = i % 3 == 0 ? 0.25f : 0.0f;
    if (beta != 0.0f) dw0 = testing::random_values(d.w_elems(), seed + 9, DType::kF32);
    const BwdResult r = run_wgrad(p, igemm_options(), i % 2 ? 0.5f : 1.0f, beta, &dw0);
    EXPECT_TRUE(r.err.pass(testing::tolerance(DType::kF32))) << r.err.to_string() << "\n"
                                                             << r.describe;
    EXPECT_EQ(r.info.algo, Algo::kImplicitGemm);
    worst = std::max(worst, r.err.rel_l2);
  }
  std::printf("[ sweep    ] f32 implicit_gemm wgrad: worst rel_l2 %.3e\n", worst);
}

// Wide tiles (128 output channels a group and more), narrow ones, channels padded to 4, split-K
// slices over long reductions, groups, strides and dilations; the dense backward filters of the
// parity set (bench/parity_small.csv) it is for.
TEST(ImplicitGemm, DenseFiltersMatchOracle) {
  FFTCONV_REQUIRE_IGEMM();
  const char* rows[] = {
      "n8c64h56w56k64r5s5p2x2u1x1d1x1g1f32",      // small5x5_c64_56
      "n8c128h112w112k128r3s3p1x1u1x1d1x1g4f32",  // small3x3_c128_112_g4: 32 a group
      "n4c256h28w28k256r3s3p1x1u1x1d1x1g1f32",    // wide tiles, two along M
      "n2c130h17w19k131r3s5p1x2u2x1d1x2g1f32",    // 130 and 131: padded to 132
      "n3c42h33w31k66r7s7p3x3u1x1d2x2g2f32",      // groups of 21 and 33, dilated
      "n1c16h300w300k16r3s3p1x1u1x1d1x1g1f32",    // 90000 positions: many slices
  };
  std::uint64_t seed = 7272;
  for (const char* s : rows) {
    const ConvDesc d = ConvDesc::parse(s);
    expect_igemm(d, seed++, 1.0f, 0.0f);
  }
  // Accumulating into dw (alpha and beta through dw's copy back).
  expect_igemm(ConvDesc::parse(rows[3]), seed++, 0.5f, 2.0f);
}

TEST(ImplicitGemm, GraphCapture) {
  FFTCONV_REQUIRE_IGEMM();
  const ConvDesc d = ConvDesc::parse("n2c64h30w30k96r3s3p1x1u1x1d1x1g1f32");
  const BwdProblem p(d, 7373);
  Plan plan(d, igemm_options());
  testing::DeviceBuffer dw(sizeof(float) * d.w_elems()), ws(plan.workspace_size());
  dw.poison();
  cudaStream_t s = nullptr;
  testing::cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  testing::cuda_check(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), "capture");
  plan.backward_filter(p.x.get(), p.dy.get(), dw.get(), ws.get(), ws.bytes(), s);
  testing::cuda_check(cudaStreamEndCapture(s, &graph), "end capture");
  testing::cuda_check(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
  for (int i = 0; i < 2; ++i) testing::cuda_check(cudaGraphLaunch(exec, s), "launch");
  testing::cuda_check(cudaStreamSynchronize(s), "replay");
  const testing::ErrorStats err =
      testing::compare(download(dw, d.w_elems(), DType::kF32), p.ref_dw);
  EXPECT_TRUE(err.pass(testing::tolerance(DType::kF32))) << err.to_string();
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(s);
}

TEST(ImplicitGemm, RefusesWhatItDoesNotRun) {
  FFTCONV_REQUIRE_IGEMM();
  const ConvDesc d = ConvDesc::parse("n2c64h30w30k96r3s3p1x1u1x1d1x1g1f32");
  const auto status_of = [](const ConvDesc& desc, const Options& o) {
    try {
      Plan plan(desc, o);
      return Status::kSuccess;
    } catch (const Error& e) {
      return e.status();
    }
  };
  Options fwd = igemm_options();
  fwd.pass = Pass::kForward;
  EXPECT_EQ(status_of(d, fwd), Status::kNotSupported);
  ConvDesc half = d;
  half.dtype = DType::kF16;
  EXPECT_EQ(status_of(half, igemm_options()), Status::kUnsupportedDtype);
  Options small = igemm_options();
  small.workspace_limit = 1024;
  EXPECT_EQ(status_of(d, small), Status::kOutOfMemory);
}

}  // namespace
}  // namespace fftconv::gputest
