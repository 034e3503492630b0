// The host backend (Backend::kCpu, FFTW) against the fp64 host oracle, through the public API:
// random sweeps, its corner cases, its options and its rejections. Needs no GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "fftconv/fftconv.h"
#include "fftconv/fftconv.hpp"
#include "geometry/fft_geometry.h"
#include "reference/reference.h"
#include "testing/testing.h"

#include "host_test_util.h"

namespace fftconv {
namespace {

using hosttest::cpu_options;
using hosttest::poisoned;

// Inputs of one run (uniform in [-1, 1), fixed seed) and the oracle's output.
struct Problem {
  ConvDesc d;
  std::uint64_t seed;
  bool with_bias;
  std::vector<float> x, w, bias;
  std::vector<double> ref;

  Problem(const ConvDesc& desc, std::uint64_t s, bool bias_on)
      : d(desc), seed(s), with_bias(bias_on) {
    x = testing::random_values(d.x_elems(), seed, DType::kF32);
    w = testing::random_values(d.w_elems(), seed + 1, DType::kF32);
    if (with_bias) bias = testing::random_values(d.k, seed + 2, DType::kF32);
    ref.resize(static_cast<std::size_t>(d.y_elems()));
    reference::conv2d_forward_host(d, x.data(), w.data(), with_bias ? bias.data() : nullptr,
                                   ref.data());
  }
  const float* bias_ptr() const { return with_bias ? bias.data() : nullptr; }
};

// Plans on the CPU, runs into a NaN-poisoned output and compares with the oracle.
testing::ErrorStats run_cpu(const Problem& p, const Options& o = cpu_options(),
                            std::string* describe = nullptr) {
  Plan plan(p.d, o);
  if (describe) *describe = plan.describe();
  std::vector<float> y = poisoned(p.d.y_elems());
  plan.forward(p.x.data(), p.w.data(), p.bias_ptr(), y.data(), nullptr, 0, nullptr);
  return testing::compare(y, p.ref);
}

// Random valid descriptors with padding up to well beyond the kernel (the FFT period then falls
// below the output extent and the clip wraps), and a bound on the direct convolution's
// multiply-adds that keeps the fp64 oracle's share of the sweep small. All-padding outputs are
// left out (their reference is all zero): HostBackend.AllPaddingOutputIsBias covers them.
testing::RandomDescOptions sweep_shapes() {
  testing::RandomDescOptions o;
  o.wide_padding = true;
  o.max_macs = 2.0e7;
  return o;
}

TEST(HostBackend, RandomSweepMatchesOracle) {
  FFTCONV_REQUIRE_FFTW();
  constexpr std::uint64_t kSeed = 20261130;
  constexpr int kCases = 400;
  std::printf("[ sweep    ] cpu seed %llu, %d cases\n", static_cast<unsigned long long>(kSeed),
              kCases);
  std::mt19937_64 gen(kSeed);
  const double tol = testing::tolerance(DType::kF32);
  int failures = 0, wrapped = 0;
  double worst = 0.0;
  std::string worst_desc;
  for (int i = 0; i < kCases; ++i) {
    const ConvDesc d = testing::random_desc(gen, sweep_shapes());
    const std::uint64_t case_seed = kSeed * 1000 + i;
    const Problem p(d, case_seed, i % 2 == 0);
    const Plan probe(d, cpu_options());
    if ((d.out_h() - 1) * d.stride_h >= probe.info().fft_h ||
        (d.out_w() - 1) * d.stride_w >= probe.info().fft_w) {
      ++wrapped;  // the clip reads outputs past the period at their wrapped position
    }
    std::string plan;
    testing::ErrorStats err;
    try {
      err = run_cpu(p, cpu_options(), &plan);
    } catch (const Error& e) {
      ++failures;
      ADD_FAILURE() << d.to_string() << " seed " << case_seed << ": " << e.what();
      continue;
    }
    if (err.rel_l2 > worst) {
      worst = err.rel_l2;
      worst_desc = d.to_string();
    }
    if (!err.pass(tol)) {
      ++failures;
      ADD_FAILURE() << d.to_string() << " seed " << case_seed << " bias " << p.with_bias << ": "
                    << err.to_string() << " (tolerance " << tol << ") plan: " << plan;
    }
  }
  std::printf(
      "[ sweep    ] f32 cpu: %d cases (%d with outputs past the FFT period), "
      "%d failures, worst rel_l2 %.3e (%s)\n",
      kCases, wrapped, failures, worst, worst_desc.c_str());
  EXPECT_EQ(failures, 0);
  EXPECT_GT(wrapped, 0) << "the sweep should cover outputs past the FFT period";
}

// Cases named for what they stress, beyond what the random sweep is sure to hit.
TEST(HostBackend, NamedCasesMatchOracle) {
  FFTCONV_REQUIRE_FFTW();
  struct Case {
    const char* what;
    const char* desc;
  };
  const Case cases[] = {
      {"landmark same", "n2c1h96w96k1r45s45p22x22u1x1d1x1g1f32"},
      {"depthwise rgb blur, odd sizes", "n1c3h61w47k3r45s45p22x22u1x1d1x1g3f32"},
      {"rectangular kernel, prime image", "n1c2h37w53k3r7s19p3x9u1x1d1x1g1f32"},
      {"padding wider than the kernel", "n1c1h5w9k2r3s3p11x7u1x1d1x1g1f32"},
      {"stride 3, dilation 2", "n2c2h41w43k2r5s4p6x2u3x3d2x2g1f32"},
      {"grouped, stride 2x1", "n3c6h23w29k9r11s9p4x5u2x1d1x1g3f32"},
      {"1x1 kernel, 1x1 image", "n1c1h1w1k1r1s1p0x0u1x1d1x1g1f32"},
      {"kernel as large as the image", "n1c2h17w17k2r17s17p0x0u1x1d1x1g2f32"},
      {"many channels", "n2c24h16w16k20r9s9p4x4u1x1d1x1g4f32"},
  };
  const double tol = testing::tolerance(DType::kF32);
  for (const Case& c : cases) {
    const ConvDesc d = ConvDesc::parse(c.desc);
    for (bool bias : {false, true}) {
      const Problem p(d, 77, bias);
      std::string plan;
      const testing::ErrorStats err = run_cpu(p, cpu_options(), &plan);
      EXPECT_TRUE(err.pass(tol)) << c.what << ": " << c.desc << " bias " << bias << ": "
                                 << err.to_string() << " plan: " << plan;
    }
  }
}

TEST(HostBackend, AllPaddingOutputIsBias) {
  FFTCONV_REQUIRE_FFTW();
  // 3x3 input, padding 8, kernel 3: the corner outputs read only zeros.
  const ConvDesc d = ConvDesc::parse("n1c2h3w3k2r3s3p8x8u1x1d1x1g1f32");
  const Problem p(d, 5, true);
  Plan plan(d, cpu_options());
  std::vector<float> y = poisoned(d.y_elems());
  plan.forward(p.x.data(), p.w.data(), p.bias.data(), y.data(), nullptr, 0, nullptr);
  double max_diff = 0.0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    ASSERT_TRUE(std::isfinite(y[i])) << "element " << i;
    max_diff = std::max(max_diff, std::abs(double(y[i]) - p.ref[i]));
  }
  // Inputs and weights are below 1 in magnitude, so every output is below 19 (2*9 + bias).
  EXPECT_LE(max_diff, 19 * 1e-5) << plan.describe();
  const std::int64_t wo = d.out_w();
  EXPECT_EQ(p.ref[0], p.bias[0]);
  EXPECT_NEAR(y[0], p.bias[0], 1e-5);
  EXPECT_NEAR(y[d.out_h() * wo - 1], p.bias[0], 1e-5);
}

TEST(HostBackend, PlanInfoAndDescribe) {
  FFTCONV_REQUIRE_FFTW();
  const ConvDesc d = ConvDesc::parse("n2c3h96w96k3r45s45p22x22u1x1d1x1g3f32");
  Plan plan(d, cpu_options());
  const PlanInfo& i = plan.info();
  EXPECT_EQ(i.backend, Backend::kCpu);
  EXPECT_EQ(i.algo, Algo::kFft);
  EXPECT_EQ(i.fft_h, detail::next_smooth(detail::min_fft_h(d)));
  EXPECT_EQ(i.fft_w, detail::next_smooth(detail::min_fft_w(d)));
  EXPECT_EQ(i.fft_h, 120);  // exact period 118, not the padded extent 140
  EXPECT_EQ(i.gemm, "host_pointwise");
  EXPECT_EQ(plan.workspace_size(), 0u);
  const std::string s = plan.describe();
  EXPECT_NE(s.find("backend=cpu pass=fwd algo=fft fft=120x120 gemm=host_pointwise"), std::string::npos) << s;
  EXPECT_NE(s.find("fftw3f"), std::string::npos) << s;
  EXPECT_EQ(Plan(ConvDesc::parse("n1c4h16w16k2r5s5p2x2u1x1d1x1g1f32"), cpu_options()).info().gemm,
            "host_cgemm");
}

TEST(HostBackend, AutoBackendPicksCpuWithoutDevice) {
  FFTCONV_REQUIRE_FFTW();
  Options o;
  o.backend = Backend::kAuto;
  const Plan plan(ConvDesc::parse("n1c1h32w32k1r9s9p4x4u1x1d1x1g1f32"), o);
  EXPECT_EQ(plan.info().backend, device_count() > 0 ? Backend::kGpu : Backend::kCpu);
}

TEST(HostBackend, KeptFilterMatchesPerCallFilter) {
  FFTCONV_REQUIRE_FFTW();
  const ConvDesc d = ConvDesc::parse("n2c4h33w31k6r13s11p6x5u1x1d1x1g2f32");
  const Problem p(d, 11, true);
  Plan plan(d, cpu_options());
  std::vector<float> per_call = poisoned(d.y_elems());
  plan.forward(p.x.data(), p.w.data(), p.bias_ptr(), per_call.data(), nullptr, 0, nullptr);
  EXPECT_FALSE(plan.has_filter());
  EXPECT_EQ(plan.filter_bytes(), 0u);
  plan.set_filter(p.w.data(), nullptr);
  EXPECT_TRUE(plan.has_filter());
  EXPECT_GT(plan.filter_bytes(), 0u);
  std::vector<float> kept = poisoned(d.y_elems());
  plan.forward(p.x.data(), nullptr, p.bias_ptr(), kept.data(), nullptr, 0, nullptr);
  EXPECT_EQ(kept, per_call);  // the same arithmetic on the same spectra
  EXPECT_EQ(plan.replay_graphs(), 0u);  // host plans run their calls directly
  EXPECT_TRUE(testing::compare(kept, p.ref).pass(testing::tolerance(DType::kF32)));
  // A per-call filter still wins over the kept one, and leaves the kept one intact.
  const std::vector<float> other = testing::random_values(d.w_elems(), 99, DType::kF32);
  std::vector<double> other_ref(static_cast<std::size_t>(d.y_elems()));
  reference::conv2d_forward_host(d, p.x.data(), other.data(), p.bias_ptr(), other_ref.data());
  std::vector<float> y = poisoned(d.y_elems());
  plan.forward(p.x.data(), other.data(), p.bias_ptr(), y.data(), nullptr, 0, nullptr);
  EXPECT_TRUE(testing::compare(y, other_ref).pass(testing::tolerance(DType::kF32)));
  plan.forward(p.x.data(), nullptr, p.bias_ptr(), y.data(), nullptr, 0, nullptr);
  EXPECT_EQ(y, per_call);
  plan.clear_filter();
  EXPECT_FALSE(plan.has_filter());
  EXPECT_THROW(plan.forward(p.x.data(), nullptr, nullptr, y.data(), nullptr, 0, nullptr), Error);
}

TEST(HostBackend, ForcedFftSize) {
  FFTCONV_REQUIRE_FFTW();
  const ConvDesc d = ConvDesc::parse("n1c2h40w24k2r9s5p4x2u1x1d1x1g1f32");
  const Problem p(d, 3, false);
  Options o = cpu_options();
  o.fft_h = 64;
  o.fft_w = 37;  // a prime: any size at or above the exact period is valid on the cpu
  std::string plan;
  EXPECT_TRUE(run_cpu(p, o, &plan).pass(testing::tolerance(DType::kF32))) << plan;
  EXPECT_NE(plan.find("fft=64x37"), std::string::npos) << plan;
  o.fft_h = detail::min_fft_h(d) - 1;
  try {
    Plan bad(d, o);
    ADD_FAILURE() << "an FFT size below the exact period was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("below the exact minimum"), std::string::npos) << e.what();
  }
}

TEST(HostBackend, MeasuredPlansMatchOracle) {
  FFTCONV_REQUIRE_FFTW();
  const ConvDesc d = ConvDesc::parse("n2c3h50w45k4r15s15p7x7u1x1d1x1g1f32");
  const Problem p(d, 21, true);
  Options o = cpu_options();
  o.tuning = Tuning::kAutotune;  // FFTW_MEASURE plans
  std::string plan;
  EXPECT_TRUE(run_cpu(p, o, &plan).pass(testing::tolerance(DType::kF32))) << plan;
  EXPECT_NE(plan.find("FFTW_MEASURE"), std::string::npos) << plan;
}

// Sets an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (had_) {
      setenv(name_, old_.c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

TEST(HostBackend, ThreadCountFromEnvironment) {
  FFTCONV_REQUIRE_FFTW();
  const ConvDesc d = ConvDesc::parse("n2c3h70w66k3r21s21p10x10u1x1d1x1g3f32");
  const Problem p(d, 8, true);
  for (const char* threads : {"1", "3", "8"}) {
    ScopedEnv env("FFTCONV_CPU_THREADS", threads);
    std::string plan;
    EXPECT_TRUE(run_cpu(p, cpu_options(), &plan).pass(testing::tolerance(DType::kF32))) << plan;
    EXPECT_NE(plan.find(std::string("fftw3f, ") + threads + " thread"), std::string::npos) << plan;
  }
  for (const char* bad : {"0", "-2", "two", "3x", "99999999999"}) {
    ScopedEnv env("FFTCONV_CPU_THREADS", bad);
    try {
      Plan plan(d, cpu_options());
      ADD_FAILURE() << "FFTCONV_CPU_THREADS=" << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), Status::kInvalidArgument) << bad;
      EXPECT_NE(std::string(e.what()).find("FFTCONV_CPU_THREADS"), std::string::npos) << e.what();
    }
  }
}

// The transforms split whole planes among the threads (BatchedFft): uneven slices (35, 21 and 15
// planes over 2 to 24 threads), planes whose size is not a multiple of 64 bytes (27x28 floats:
// new-array execution at unaligned offsets), more threads than planes, and the kept filter
// (transformed through the same plans into another buffer), all against the oracle.
TEST(HostBackend, PlanesSplitAmongThreadsMatchOracle) {
  FFTCONV_REQUIRE_FFTW();
  const ConvDesc d = ConvDesc::parse("n5c7h23w23k3r5s5p2x2u1x1d1x1g1f32");
  const Problem p(d, 21, true);
  for (const char* threads : {"2", "3", "5", "8", "24", "64"}) {
    ScopedEnv env("FFTCONV_CPU_THREADS", threads);
    Plan plan(d, cpu_options());
    std::vector<float> y = poisoned(d.y_elems());
    plan.forward(p.x.data(), p.w.data(), p.bias_ptr(), y.data(), nullptr, 0, nullptr);
    EXPECT_TRUE(testing::compare(y, p.ref).pass(testing::tolerance(DType::kF32)))
        << threads << " threads: " << testing::compare(y, p.ref).to_string() << " "
        << plan.describe();
    plan.set_filter(p.w.data(), nullptr);
    std::vector<float> kept = poisoned(d.y_elems());
    plan.forward(p.x.data(), nullptr, p.bias_ptr(), kept.data(), nullptr, 0, nullptr);
    EXPECT_EQ(kept, y) << threads << " threads";
  }
}

TEST(HostBackend, ConcurrentPlansAndCalls) {
  FFTCONV_REQUIRE_FFTW();
  // FFTW's planner is not thread-safe: plans built at once must still be right, and calls on one
  // plan from several threads are serialised by it.
  const ConvDesc d = ConvDesc::parse("n1c2h48w40k2r11s11p5x5u1x1d1x1g2f32");
  const Problem p(d, 4, false);
  const double tol = testing::tolerance(DType::kF32);
  std::vector<testing::ErrorStats> errs(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] { errs[t] = run_cpu(p); });
  }
  for (std::thread& t : threads) t.join();
  for (const testing::ErrorStats& e : errs) EXPECT_TRUE(e.pass(tol)) << e.to_string();

  const Plan plan(d, cpu_options());
  std::vector<std::vector<float>> ys(4, poisoned(d.y_elems()));
  threads.clear();
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      plan.forward(p.x.data(), p.w.data(), nullptr, ys[t].data(), nullptr, 0, nullptr);
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::vector<float>& y : ys) EXPECT_TRUE(testing::compare(y, p.ref).pass(tol));
}

TEST(HostBackend, ProfileForwardTimesEveryStage) {
  FFTCONV_REQUIRE_FFTW();
  const ConvDesc d = ConvDesc::parse("n1c1h64w64k1r15s15p7x7u1x1d1x1g1f32");
  const Problem p(d, 2, false);
  const Plan plan(d, cpu_options());
  std::vector<float> y = poisoned(d.y_elems());
  const std::vector<StageTime> stages =
      plan.profile_forward(p.x.data(), p.w.data(), nullptr, y.data(), nullptr, 0, nullptr, 3);
  ASSERT_EQ(stages.size(), 5u);
  const char* names[] = {"pad", "r2c", "gemm", "c2r", "clip"};
  for (std::size_t i = 0; i < stages.size(); ++i) {
    EXPECT_EQ(stages[i].stage, names[i]);
    EXPECT_GE(stages[i].ms, 0.0);
  }
  EXPECT_TRUE(testing::compare(y, p.ref).pass(testing::tolerance(DType::kF32)));
}

// ---- what the host backend rejects ---------------------------------------------------------

Status plan_status(const ConvDesc& d, const Options& o, std::string* message = nullptr) {
  try {
    Plan plan(d, o);
  } catch (const Error& e) {
    if (message) *message = e.what();
    return e.status();
  }
  return Status::kSuccess;
}

TEST(HostBackendRejects, HalfPrecisionTensors) {
  for (const char* desc :
       {"n1c1h32w32k1r9s9p4x4u1x1d1x1g1f16", "n1c1h32w32k1r9s9p4x4u1x1d1x1g1bf16"}) {
    std::string msg;
    EXPECT_EQ(plan_status(ConvDesc::parse(desc), cpu_options(), &msg), Status::kNotSupported);
    EXPECT_NE(msg.find("fp32 tensors only"), std::string::npos) << msg;
  }
}

TEST(HostBackendRejects, GpuOnlyAlgorithmsAndKernels) {
  const ConvDesc d = ConvDesc::parse("n1c1h32w32k1r9s9p4x4u1x1d1x1g1f32");
  for (Algo a : {Algo::kCudnn, Algo::kFftTiled}) {
    Options o = cpu_options();
    o.algo = a;
    std::string msg;
    EXPECT_EQ(plan_status(d, o, &msg), Status::kNotSupported) << algo_name(a);
    EXPECT_NE(msg.find("GPU only"), std::string::npos) << msg;
  }
  Options o = cpu_options();
  o.gemm_kernel = gemm_kernel_names().front();
  EXPECT_EQ(plan_status(d, o), Status::kNotSupported);
  o = cpu_options();
  o.backend = static_cast<Backend>(7);
  EXPECT_EQ(plan_status(d, o), Status::kInvalidArgument);
}

TEST(HostBackendRejects, BadPointersWriteNothing) {
  FFTCONV_REQUIRE_FFTW();
  const ConvDesc d = ConvDesc::parse("n1c2h16w16k2r5s5p2x2u1x1d1x1g1f32");
  const Problem p(d, 6, true);
  Plan plan(d, cpu_options());
  std::vector<float> y(static_cast<std::size_t>(d.y_elems()), 42.0f);
  const std::vector<float> untouched = y;
  auto status = [&](const void* x, const void* w, const void* b, void* out) {
    try {
      plan.forward(x, w, b, out, nullptr, 0, nullptr);
    } catch (const Error& e) {
      return e.status();
    }
    return Status::kSuccess;
  };
  EXPECT_EQ(status(nullptr, p.w.data(), nullptr, y.data()), Status::kNullPointer);
  EXPECT_EQ(status(p.x.data(), nullptr, nullptr, y.data()), Status::kNullPointer);
  EXPECT_EQ(status(p.x.data(), p.w.data(), nullptr, nullptr), Status::kNullPointer);
  const auto* odd = reinterpret_cast<const char*>(p.x.data()) + 1;
  EXPECT_EQ(status(odd, p.w.data(), nullptr, y.data()), Status::kMisalignedPointer);
  // y overlapping an input.
  std::vector<float> big(static_cast<std::size_t>(d.x_elems() + d.y_elems()));
  EXPECT_EQ(status(big.data(), p.w.data(), nullptr, big.data() + 1), Status::kInvalidArgument);
  EXPECT_EQ(y, untouched);
  EXPECT_THROW(plan.set_filter(nullptr, nullptr), Error);
}

TEST(HostBackendRejects, WithoutFftwSaysHowToEnableIt) {
  if (FFTCONV_TEST_HAS_FFTW) GTEST_SKIP() << "this build has the cpu backend";
  std::string msg;
  EXPECT_EQ(plan_status(ConvDesc::parse("n1c1h32w32k1r9s9p4x4u1x1d1x1g1f32"), cpu_options(), &msg),
            Status::kNotSupported);
  EXPECT_NE(msg.find("FFTCONV_WITH_FFTW=ON"), std::string::npos) << msg;
}

// The C API reaches the CPU backend through options.backend: host pointers, no workspace.
TEST(HostBackend, CApiRunsOnTheHost) {
  FFTCONV_REQUIRE_FFTW();
  fftconv_conv_desc_t cd = fftconv_conv_desc_default();
  cd.n = 2; cd.c = 3; cd.h = 21; cd.w = 17; cd.k = 4; cd.r = 7; cd.s = 5; cd.pad_h = 3; cd.pad_w = 2;
  fftconv_options_t o = fftconv_options_default();
  o.backend = FFTCONV_BACKEND_CPU;
  fftconv_plan_t plan = nullptr;
  ASSERT_EQ(fftconv_plan_create(&plan, &cd, &o), FFTCONV_STATUS_SUCCESS)
      << fftconv_last_error_message();
  size_t ws = 1;
  EXPECT_EQ(fftconv_plan_workspace_size(plan, &ws), FFTCONV_STATUS_SUCCESS);
  EXPECT_EQ(ws, 0u);
  EXPECT_NE(std::string(fftconv_plan_describe(plan)).find("backend=cpu"), std::string::npos);
  ConvDesc d;
  d.n = cd.n; d.c = cd.c; d.h = cd.h; d.w = cd.w; d.k = cd.k; d.r = cd.r; d.s = cd.s;
  d.pad_h = cd.pad_h; d.pad_w = cd.pad_w;
  const auto x = testing::random_values(d.x_elems(), 41, DType::kF32);
  const auto w = testing::random_values(d.w_elems(), 42, DType::kF32);
  std::vector<float> y(d.y_elems(), std::numeric_limits<float>::quiet_NaN());
  ASSERT_EQ(fftconv_forward(plan, x.data(), w.data(), nullptr, y.data(), nullptr, 0, nullptr),
            FFTCONV_STATUS_SUCCESS)
      << fftconv_last_error_message();
  std::vector<double> ref(d.y_elems());
  reference::conv2d_forward_host(d, x.data(), w.data(), nullptr, ref.data());
  const testing::ErrorStats err = testing::compare(y, ref);
  EXPECT_TRUE(err.pass(testing::tolerance(DType::kF32))) << err.to_string();
  // A forced FFT size reaches the plan through the C API.
  fftconv_options_t forced = o;
  forced.fft_h = 40;
  forced.fft_w = 36;
  fftconv_plan_t sized = nullptr;
  ASSERT_EQ(fftconv_plan_create(&sized, &cd, &forced), FFTCONV_STATUS_SUCCESS)
      << fftconv_last_error_message();
  EXPECT_NE(std::string(fftconv_plan_describe(sized)).find("fft=40x36"), std::string::npos)
      << fftconv_plan_describe(sized);
  EXPECT_EQ(fftconv_plan_destroy(sized), FFTCONV_STATUS_SUCCESS);
  // A forward plan runs the forward pass only.
  EXPECT_EQ(fftconv_backward_data(plan, y.data(), w.data(), y.data(), nullptr, 0, nullptr),
            FFTCONV_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(fftconv_plan_destroy(plan), FFTCONV_STATUS_SUCCESS);
  // A backward-data plan on the host, through the C API.
  o.pass = FFTCONV_PASS_BACKWARD_DATA;
  ASSERT_EQ(fftconv_plan_create(&plan, &cd, &o), FFTCONV_STATUS_SUCCESS)
      << fftconv_last_error_message();
  const auto dy = testing::random_values(d.y_elems(), 43, DType::kF32);
  std::vector<float> dx(d.x_elems(), std::numeric_limits<float>::quiet_NaN());
  ASSERT_EQ(fftconv_backward_data(plan, dy.data(), w.data(), dx.data(), nullptr, 0, nullptr),
            FFTCONV_STATUS_SUCCESS)
      << fftconv_last_error_message();
  std::vector<double> ref_dx(d.x_elems());
  reference::conv2d_backward_data_host(d, dy.data(), w.data(), ref_dx.data());
  const testing::ErrorStats err_dx = testing::compare(dx, ref_dx);
  EXPECT_TRUE(err_dx.pass(testing::tolerance(DType::kF32))) << err_dx.to_string();
  EXPECT_EQ(fftconv_plan_destroy(plan), FFTCONV_STATUS_SUCCESS);
}

// ---- backward passes on the host ----------------------------------------------------------

// dx and dw of random descriptors (wide padding included: the period then falls below the output
// extent) against the fp64 oracles; NaN-poisoned outputs, so every element must be written.
TEST(HostBackward, RandomSweepMatchesOracle) {
  FFTCONV_REQUIRE_FFTW();
  std::mt19937_64 gen(20261201);
  const double tol = testing::tolerance(DType::kF32);
  double worst[2] = {0.0, 0.0};
  for (int i = 0; i < 150; ++i) {
    const ConvDesc d = testing::random_desc(gen, sweep_shapes());
    const auto x = testing::random_values(d.x_elems(), 7000 + i, DType::kF32);
    const auto w = testing::random_values(d.w_elems(), 8000 + i, DType::kF32);
    const auto dy = testing::random_values(d.y_elems(), 9000 + i, DType::kF32);
    for (Pass pass : {Pass::kBackwardData, Pass::kBackwardFilter}) {
      Options o = cpu_options();
      o.pass = pass;
      Plan plan(d, o);
      EXPECT_EQ(plan.info().pass, pass);
      EXPECT_EQ(plan.workspace_size(), 0u);
      const bool dgrad = pass == Pass::kBackwardData;
      std::vector<float> out(dgrad ? d.x_elems() : d.w_elems(),
                             std::numeric_limits<float>::quiet_NaN());
      std::vector<double> ref(out.size());
      if (dgrad) {
        plan.backward_data(dy.data(), w.data(), out.data(), nullptr, 0, nullptr);
        reference::conv2d_backward_data_host(d, dy.data(), w.data(), ref.data());
      } else {
        plan.backward_filter(x.data(), dy.data(), out.data(), nullptr, 0, nullptr);
        reference::conv2d_backward_filter_host(d, x.data(), dy.data(), ref.data());
      }
      const testing::ErrorStats err = testing::compare(out, ref);
      worst[dgrad ? 0 : 1] = std::max(worst[dgrad ? 0 : 1], err.rel_l2);
      EXPECT_TRUE(err.pass(tol)) << pass_name(pass) << " " << d.to_string() << " case " << i
                                 << ": " << err.to_string() << " " << plan.describe();
    }
  }
  std::printf("[ sweep    ] cpu backward: 150 cases, worst rel_l2 dgrad %.3e wgrad %.3e\n",
              worst[0], worst[1]);
}

TEST(HostBackward, FilterGradientAccumulatesAndDataKeepsItsFilter) {
  FFTCONV_REQUIRE_FFTW();
  const ConvDesc d = ConvDesc::parse("n3c4h23w19k6r7s5p3x2u2x1d1x2g2f32");
  const auto x = testing::random_values(d.x_elems(), 1, DType::kF32);
  const auto w = testing::random_values(d.w_elems(), 2, DType::kF32);
  const auto w2 = testing::random_values(d.w_elems(), 3, DType::kF32);
  const auto dy = testing::random_values(d.y_elems(), 4, DType::kF32);
  // dw = 0.5 * grad - 2 * dw0.
  Options o = cpu_options();
  o.pass = Pass::kBackwardFilter;
  Plan wgrad(d, o);
  std::vector<float> dw = testing::random_values(d.w_elems(), 5, DType::kF32);
  const std::vector<float> dw0 = dw;
  wgrad.backward_filter(x.data(), dy.data(), dw.data(), nullptr, 0, nullptr, 0.5f, -2.0f);
  std::vector<double> ref(d.w_elems());
  reference::conv2d_backward_filter_host(d, x.data(), dy.data(), ref.data());
  for (std::size_t i = 0; i < ref.size(); ++i) ref[i] = 0.5 * ref[i] - 2.0 * dw0[i];
  EXPECT_TRUE(testing::compare(dw, ref).pass(1e-5)) << testing::compare(dw, ref).to_string();
  EXPECT_THROW(wgrad.set_filter(w.data(), nullptr), Error);
  // Backward data with a kept filter, and a per-call one over it.
  o.pass = Pass::kBackwardData;
  Plan dgrad(d, o);
  dgrad.set_filter(w.data(), nullptr);
  for (const std::vector<float>* filter : {&w, &w2}) {
    std::vector<float> dx(d.x_elems(), std::numeric_limits<float>::quiet_NaN());
    dgrad.backward_data(dy.data(), filter == &w ? nullptr : filter->data(), dx.data(), nullptr, 0,
                        nullptr);
    std::vector<double> rdx(d.x_elems());
    reference::conv2d_backward_data_host(d, dy.data(), filter->data(), rdx.data());
    EXPECT_TRUE(testing::compare(dx, rdx).pass(1e-5)) << testing::compare(dx, rdx).to_string();
  }
}

}  // namespace
}  // namespace fftconv
