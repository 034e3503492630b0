// Overlap-save tiling, kept filter spectra and memory-aware planning on the device.
#include <cstring>

#include "fftconv/fftconv.h"
#include "gpu_test_util.h"

namespace fftconv::gputest {
namespace {

// Tiles just above the kernel: many tiles, partial last tiles, and tiles of a single output.
TEST(Tiled, SmallTilesMatchOracle) {
  FFTCONV_REQUIRE_GPU();
  std::mt19937_64 gen(808);
  int failures = 0, cases = 0, single = 0;
  for (int i = 0; i < 120; ++i) {
    const ConvDesc d = testing::random_desc(gen, DType::kF32);
    Options o;
    o.algo = Algo::kFftTiled;
    o.fft_h = d.eff_r() + static_cast<std::int64_t>(gen() % 9);
    o.fft_w = d.eff_s() + static_cast<std::int64_t>(gen() % 9);
    const Problem p(d, 808000 + i, i % 2 == 0);
    try {
      const RunResult r = run_forward(p, o);
      ++cases;
      single += o.fft_h == d.eff_r();
      EXPECT_EQ(r.info.algo, Algo::kFftTiled);
      if (!r.err.pass(1e-5)) {
        ++failures;
        ADD_FAILURE() << d.to_string() << " tile " << o.fft_h << "x" << o.fft_w << ": "
                      << r.err.to_string() << " " << r.describe;
      }
    } catch (const Error& e) {
      ++failures;
      ADD_FAILURE() << d.to_string() << " tile " << o.fft_h << "x" << o.fft_w << ": " << e.what();
    }
  }
  std::printf("[ sweep    ] f32 fft_tiled (forced small tiles): %d cases, %d failures, %d with "
              "one-output tiles\n", cases, failures, single);
  EXPECT_GT(single, 5);
}

TEST(Tiled, ChosenTilesMatchOracleInEveryDtype) {
  FFTCONV_REQUIRE_GPU();
  std::mt19937_64 gen(909);
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16}) {
    for (int i = 0; i < 20; ++i) {
      ConvDesc d = testing::random_desc(gen, t);
      d.h += 40;  // large enough to have several tiles of the chosen size
      d.w += 30;
      Options o;
      o.algo = Algo::kFftTiled;
      const Problem p(d, 909000 + i, true);
      const RunResult r = run_forward(p, o);
      EXPECT_TRUE(r.err.pass(testing::tolerance(t))) << d.to_string() << ": " << r.err.to_string()
                                                     << " " << r.describe;
    }
  }
}

TEST(Tiled, TiledAndFullAgree) {
  FFTCONV_REQUIRE_GPU();
  ConvDesc d;
  d.n = 2; d.c = 3; d.h = 97; d.w = 83; d.k = 4; d.r = 17; d.s = 11; d.pad_h = 8; d.pad_w = 5;
  d.stride_h = 2; d.dil_w = 2;
  const Problem p(d, 41, true);
  Options full, tiled;
  full.algo = Algo::kFft;
  tiled.algo = Algo::kFftTiled;
  tiled.fft_h = 40;  // 97 rows -> several tiles of (40-17)/2+1 = 12 outputs
  tiled.fft_w = 36;
  const RunResult a = run_forward(p, full), b = run_forward(p, tiled);
  EXPECT_TRUE(a.err.pass(1e-5)) << a.err.to_string();
  EXPECT_TRUE(b.err.pass(1e-5)) << b.err.to_string();
  EXPECT_GT(b.info.tiles_h * b.info.tiles_w, 4) << b.describe;
  EXPECT_NE(b.describe.find("tiles="), std::string::npos) << b.describe;
}

class KeptFilter : public ::testing::TestWithParam<Algo> {};

TEST_P(KeptFilter, MatchesPerCallAndCanBeReplaced) {
  FFTCONV_REQUIRE_GPU();
  ConvDesc d;
  d.n = 3; d.c = 4; d.h = 45; d.w = 52; d.k = 6; d.r = 13; d.s = 15; d.pad_h = 6; d.pad_w = 7;
  d.groups = 2;
  const Problem p1(d, 51, true), p2(d, 52, true);  // same shapes, other x, w, bias
  Options o;
  o.algo = GetParam();
  Plan plan(d, o);
  EXPECT_FALSE(plan.has_filter());
  EXPECT_EQ(plan.filter_bytes(), 0u);
  testing::DeviceBuffer y(4 * d.y_elems()), ws(plan.workspace_size());
  auto run = [&](const Problem& p, const void* w) {
    y.poison();
    plan.forward(p.x.get(), w, p.bias.get(), y.get(), ws.get(), ws.bytes(), nullptr);
    testing::cuda_check(cudaDeviceSynchronize(), "forward");
    std::vector<float> out(d.y_elems());
    y.download(out.data(), 4 * out.size());
    return out;
  };
  // Without a kept filter, w == nullptr is an error and writes nothing.
  y.poison();
  try {
    plan.forward(p1.x.get(), nullptr, nullptr, y.get(), ws.get(), ws.bytes(), nullptr);
    ADD_FAILURE() << "accepted a null filter";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::kNullPointer) << e.what();
  }
  EXPECT_TRUE(all_poison(y));
  plan.set_filter(p1.w.get(), nullptr);
  EXPECT_TRUE(plan.has_filter());
  EXPECT_GT(plan.filter_bytes(), 0u);
  EXPECT_TRUE(testing::compare(run(p1, nullptr), p1.ref).pass(1e-5));
  // A per-call filter still wins, for that call only.
  EXPECT_TRUE(testing::compare(run(p2, p2.w.get()), p2.ref).pass(1e-5));
  EXPECT_TRUE(testing::compare(run(p1, nullptr), p1.ref).pass(1e-5));
  // Replacing the kept filter.
  plan.set_filter(p2.w.get(), nullptr);
  EXPECT_TRUE(testing::compare(run(p2, nullptr), p2.ref).pass(1e-5));
  plan.clear_filter();
  EXPECT_FALSE(plan.has_filter());
  EXPECT_THROW(run(p2, nullptr), Error);
}

TEST_P(KeptFilter, CapturesInACudaGraph) {
  FFTCONV_REQUIRE_GPU();
  ConvDesc d;
  d.n = 2; d.c = 2; d.h = 40; d.w = 40; d.k = 2; d.r = 21; d.s = 21; d.pad_h = 10; d.pad_w = 10;
  const Problem p(d, 53, false);
  Options o;
  o.algo = GetParam();
  Plan plan(d, o);
  cudaStream_t s;
  testing::cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
  plan.set_filter(p.w.get(), s);
  const auto out = forward_in_graph(plan, p, nullptr, nullptr, /*replays=*/1, s);
  EXPECT_TRUE(testing::compare(out, p.ref).pass(1e-5));
  cudaStreamDestroy(s);
}

INSTANTIATE_TEST_SUITE_P(Algos, KeptFilter,
                         ::testing::Values(Algo::kFft, Algo::kFftTiled, Algo::kCudnn),
                         [](const ::testing::TestParamInfo<Algo>& info) {
                           return std::string(algo_name(info.param));
                         });

TEST(Memory, WorkspaceLimitSteersAutoAwayFromTheFullImage) {
  FFTCONV_REQUIRE_GPU();
  ConvDesc d;
  d.n = 1; d.c = 16; d.h = 256; d.w = 256; d.k = 16; d.r = 31; d.s = 31; d.pad_h = 15; d.pad_w = 15;
  Options o;
  o.algo = Algo::kFft;
  const std::size_t full = Plan(d, o).workspace_size();
  o.algo = Algo::kAuto;
  o.workspace_limit = full / 2;
  const Problem p(d, 61, true);
  const RunResult r = run_forward(p, o);
  EXPECT_NE(r.info.algo, Algo::kFft) << r.describe;
  EXPECT_LE(r.info.workspace_bytes, o.workspace_limit);
  EXPECT_TRUE(r.err.pass(1e-5)) << r.err.to_string();
}

TEST(Memory, MoreThanTheDeviceHasFailsAtPlanTime) {
  FFTCONV_REQUIRE_GPU();
  ConvDesc d;  // full-image spectra of about 1.1 TB
  d.c = 1024; d.h = 512; d.w = 512; d.k = 1024; d.r = 5; d.s = 5; d.pad_h = 2; d.pad_w = 2;
  Options o;
  o.algo = Algo::kFft;
  try {
    Plan plan(d, o);
    FAIL() << "planned " << plan.describe();
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::kOutOfMemory) << e.what();
    EXPECT_NE(std::string(e.what()).find("bytes free"), std::string::npos) << e.what();
  }
}

TEST(Memory, CApiKeepsAFilter) {
  FFTCONV_REQUIRE_GPU();
  ConvDesc d;
  d.n = 2; d.c = 1; d.h = 64; d.w = 64; d.k = 1; d.r = 45; d.s = 45; d.pad_h = 22; d.pad_w = 22;
  const Problem p(d, 71, false);
  fftconv_conv_desc_t cd = fftconv_conv_desc_default();
  cd.n = d.n; cd.h = d.h; cd.w = d.w; cd.r = d.r; cd.s = d.s; cd.pad_h = d.pad_h; cd.pad_w = d.pad_w;
  fftconv_plan_t plan = nullptr;
  ASSERT_EQ(fftconv_plan_create(&plan, &cd, nullptr), FFTCONV_STATUS_SUCCESS);
  size_t bytes = 0;
  fftconv_plan_workspace_size(plan, &bytes);
  testing::DeviceBuffer y(4 * d.y_elems()), ws(bytes);
  EXPECT_EQ(fftconv_forward(plan, p.x.get(), nullptr, nullptr, y.get(), ws.get(), bytes, nullptr),
            FFTCONV_STATUS_NULL_POINTER);
  EXPECT_EQ(fftconv_plan_set_filter(plan, nullptr, nullptr), FFTCONV_STATUS_NULL_POINTER);
  ASSERT_EQ(fftconv_plan_set_filter(plan, p.w.get(), nullptr), FFTCONV_STATUS_SUCCESS);
  ASSERT_EQ(fftconv_forward(plan, p.x.get(), nullptr, nullptr, y.get(), ws.get(), bytes, nullptr),
            FFTCONV_STATUS_SUCCESS)
      << fftconv_last_error_message();
  testing::cuda_check(cudaDeviceSynchronize(), "sync");
  std::vector<float> out(d.y_elems());
  y.download(out.data(), 4 * out.size());
  EXPECT_TRUE(testing::compare(out, p.ref).pass(1e-5));
  EXPECT_EQ(fftconv_plan_clear_filter(plan), FFTCONV_STATUS_SUCCESS);
  EXPECT_EQ(fftconv_plan_destroy(plan), FFTCONV_STATUS_SUCCESS);
}

}  // namespace
}  // namespace fftconv::gputest
