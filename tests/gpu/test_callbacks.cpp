// Options::fft_callbacks: the pad stage as a cuFFT load callback of the r2c, in every pass,
// dtype and geometry, against the fp64 device oracle. Every case also checks that the plan did
// pad in the callback (describe()), so that a silent fall-back to the pad kernel fails here.
#include <random>

#include "fft/cufft_plan.h"
#include "gpu_test_util.h"

namespace fftconv::gputest {
namespace {

constexpr const char* kCallbackPad = "pad in the r2c's load callback";

Options callbacks(Algo algo) {
  Options o;
  o.algo = algo;
  o.fft_callbacks = true;
  return o;
}

bool pads_in_callback(const std::string& describe) {
  return describe.find(kCallbackPad) != std::string::npos;
}

// The callback tests skip, saying why, where cuFFT makes no plan with any LTO callback (not even
// the library's trivial probe): the machine, not the pad callback. Where it links the probe, a
// plan that does not pad in the callback fails the test.
#define FFTCONV_REQUIRE_LTO_CALLBACKS()                                             \
  do {                                                                              \
    FFTCONV_REQUIRE_GPU();                                                          \
    const std::string probe = Plan(small_desc(), callbacks(Algo::kFft)).describe(); \
    if (probe.find(detail::kNoLtoCallbacks) != std::string::npos)                   \
      GTEST_SKIP() << "cuFFT links no LTO callback on this machine: " << probe;     \
  } while (0)

TEST(Callbacks, ForwardMatchesOracleInEveryDtype) {
  FFTCONV_REQUIRE_LTO_CALLBACKS();
  std::mt19937_64 gen(1201);
  int cases = 0;
  for (const DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    const int count = dtype == DType::kF32 ? 30 : 10;
    for (int i = 0; i < count; ++i) {
      const ConvDesc d = testing::random_desc(gen, dtype);
      const Problem p(d, 1201000 + cases, i % 2 == 0);
      const RunResult r = run_forward(p, callbacks(Algo::kFft));
      EXPECT_TRUE(pads_in_callback(r.describe)) << d.to_string() << ": " << r.describe;
      EXPECT_TRUE(r.err.pass(testing::tolerance(dtype)))
          << d.to_string() << ": " << r.err.to_string() << " plan: " << r.describe;
      ++cases;
    }
  }
  EXPECT_EQ(cases, 50);
}

// Tiles just above the kernel: the callback maps every tile's plane to its image and offset.
TEST(Callbacks, TiledForwardMatchesOracle) {
  FFTCONV_REQUIRE_LTO_CALLBACKS();
  std::mt19937_64 gen(1202);
  for (int i = 0; i < 20; ++i) {
    const DType dtype = i % 4 == 3 ? DType::kBF16 : i % 4 == 2 ? DType::kF16 : DType::kF32;
    const ConvDesc d = testing::random_desc(gen, dtype);
    Options o = callbacks(Algo::kFftTiled);
    o.fft_h = d.eff_r() + static_cast<std::int64_t>(gen() % 9);
    o.fft_w = d.eff_s() + static_cast<std::int64_t>(gen() % 9);
    const Problem p(d, 1202000 + i, i % 2 == 0);
    const RunResult r = run_forward(p, o);
    EXPECT_EQ(r.info.algo, Algo::kFftTiled) << d.to_string();
    EXPECT_TRUE(pads_in_callback(r.describe)) << d.to_string() << ": " << r.describe;
    EXPECT_TRUE(r.err.pass(testing::tolerance(dtype)))
        << d.to_string() << " tile " << o.fft_h << "x" << o.fft_w << ": " << r.err.to_string()
        << " plan: " << r.describe;
  }
}

// Backward data (per-call and kept filter) and backward filter, whose dy segment is spread by
// the stride.
TEST(Callbacks, BackwardPassesMatchOracle) {
  FFTCONV_REQUIRE_LTO_CALLBACKS();
  backward_sweep(1203, callbacks(Algo::kFft),
                 [](const ConvDesc& d, const std::string& describe, const PlanInfo&) {
                   EXPECT_TRUE(pads_in_callback(describe)) << d.to_string() << ": " << describe;
                 });
}

// Tensors that are not 16-byte aligned (cuFFT wants its input pointer aligned) take the pad
// kernel for that call; the same plan then takes aligned ones through the callback again, and
// repeated calls (replayed as a graph from the second on) give the same result.
TEST(Callbacks, MisalignedTensorsAndRepeatedCalls) {
  FFTCONV_REQUIRE_LTO_CALLBACKS();
  for (const DType dtype : {DType::kF32, DType::kF16}) {
    ConvDesc d = small_desc();
    d.dtype = dtype;
    const Problem p(d, 1205, true);
    Plan plan(d, callbacks(Algo::kFft));
    ASSERT_TRUE(pads_in_callback(plan.describe())) << plan.describe();
    const std::size_t es = dtype_size(dtype);
    // x and w one element into a larger buffer: aligned to the element only.
    testing::DeviceBuffer xs(es * (d.x_elems() + 1)), ws_(es * (d.w_elems() + 1));
    auto* x_off = static_cast<unsigned char*>(xs.get()) + es;
    auto* w_off = static_cast<unsigned char*>(ws_.get()) + es;
    testing::cuda_check(cudaMemcpy(x_off, p.x.get(), es * d.x_elems(), cudaMemcpyDeviceToDevice),
                        "copy x");
    testing::cuda_check(cudaMemcpy(w_off, p.w.get(), es * d.w_elems(), cudaMemcpyDeviceToDevice),
                        "copy w");
    testing::DeviceBuffer y(es * d.y_elems()), work(plan.workspace_size());
    const auto run = [&](const void* x, const void* w) {
      y.poison();
      plan.forward(x, w, p.bias.get(), y.get(), work.get(), work.bytes(), nullptr);
      testing::cuda_check(cudaDeviceSynchronize(), "forward");
      std::vector<unsigned char> host(y.bytes());
      y.download(host.data(), host.size());
      return testing::decode(host.data(), d.y_elems(), dtype);
    };
    const double tol = testing::tolerance(dtype);
    for (int call = 0; call < 3; ++call) {
      const auto misaligned = run(x_off, w_off);
      EXPECT_TRUE(testing::compare(misaligned, p.ref).pass(tol))
          << dtype_name(dtype) << " call " << call;
      const auto aligned = run(p.x.get(), p.w.get());
      EXPECT_TRUE(testing::compare(aligned, p.ref).pass(tol))
          << dtype_name(dtype) << " call " << call;
    }
  }
}

// A kept filter (set_filter pads it with the kernel) with the input through the callback.
TEST(Callbacks, ForwardWithAKeptFilter) {
  FFTCONV_REQUIRE_LTO_CALLBACKS();
  const Problem p(small_desc(), 1206, true);
  Plan plan(p.desc, callbacks(Algo::kFft));
  plan.set_filter(p.w.get(), nullptr);
  testing::DeviceBuffer y(4 * p.desc.y_elems()), work(plan.workspace_size());
  y.poison();
  plan.forward(p.x.get(), nullptr, p.bias.get(), y.get(), work.get(), work.bytes(), nullptr);
  testing::cuda_check(cudaDeviceSynchronize(), "forward");
  std::vector<unsigned char> host(y.bytes());
  y.download(host.data(), host.size());
  const auto out = testing::decode(host.data(), p.desc.y_elems(), DType::kF32);
  EXPECT_TRUE(pads_in_callback(plan.describe())) << plan.describe();
  EXPECT_TRUE(testing::compare(out, p.ref).pass(1e-5)) << testing::compare(out, p.ref).to_string();
}

// Off by default: the pad kernel runs and describe() does not mention the callback.
TEST(Callbacks, OffByDefault) {
  FFTCONV_REQUIRE_GPU();
  const Problem p(small_desc(), 1204, true);
  Options o;
  o.algo = Algo::kFft;
  const RunResult r = run_forward(p, o);
  EXPECT_FALSE(pads_in_callback(r.describe)) << r.describe;
  EXPECT_TRUE(r.err.pass(1e-5)) << r.err.to_string();
}

}  // namespace
}  // namespace fftconv::gputest
