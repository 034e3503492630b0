// The implementation list, Auto's candidates, logging and FFTW wisdom: what a plan says about its
// choice, on the CPU backend (no GPU needed).
#include <gtest/gtest.h>

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "algos/registry.h"
#include "fftconv/fftconv.h"
#include "fftconv/fftconv.hpp"
#include "testing/testing.h"

#ifndef FFTCONV_TEST_HAS_FFTW
#define FFTCONV_TEST_HAS_FFTW 0
#endif

namespace fftconv {
namespace {

namespace fs = std::filesystem;

#define REQUIRE_FFTW()                                                                  \
  do {                                                                                  \
    if (!FFTCONV_TEST_HAS_FFTW)                                                         \
      GTEST_SKIP() << "built without FFTCONV_WITH_FFTW (the cpu backend is not built)"; \
  } while (0)

const ConvDesc kDesc = ConvDesc::parse("n2c3h20w17k4r5s3p2x1u1x1d1x1g1f32");

Options cpu_options() {
  Options o;
  o.backend = Backend::kCpu;
  return o;
}

TEST(Registry, EntriesAreDistinctAndCoverEveryAlgoPerBackend) {
  std::set<std::string> names;
  std::set<std::pair<int, int>> algo_backend;
  for (const detail::AlgoFactory* f : detail::algorithm_list()) {
    EXPECT_TRUE(names.insert(f->name()).second) << f->name();
    EXPECT_NE(f->algo(), Algo::kAuto) << f->name();
    EXPECT_NE(f->backend(), Backend::kAuto) << f->name();
    // A forced Algo must name one entry per backend.
    EXPECT_TRUE(algo_backend.insert({int(f->algo()), int(f->backend())}).second) << f->name();
  }
  for (Algo a : {Algo::kFft, Algo::kFftTiled, Algo::kCudnn}) {
    EXPECT_TRUE(algo_backend.count({int(a), int(Backend::kGpu)})) << algo_name(a);
  }
  EXPECT_TRUE(algo_backend.count({int(Algo::kFft), int(Backend::kCpu)}));
}

TEST(Registry, EveryEntryAnswersForEveryPass) {
  for (Pass p : {Pass::kForward, Pass::kBackwardData, Pass::kBackwardFilter}) {
    Options o;
    o.pass = p;
    for (const detail::AlgoFactory* f : detail::algorithm_list()) {
      const detail::Support s = f->can_implement(kDesc, o);
      if (!s.ok()) {
        EXPECT_FALSE(s.reason.empty()) << f->name() << " " << pass_name(p);
        continue;
      }
      EXPECT_GE(f->estimate_us(kDesc, o, nullptr), 0.0) << f->name() << " " << pass_name(p);
    }
  }
}

TEST(Registry, TilingRejectsBackwardPassesWithAReason) {
  Options o;
  o.pass = Pass::kBackwardData;
  for (const detail::AlgoFactory* f : detail::algorithm_list()) {
    if (f->algo() != Algo::kFftTiled) continue;
    const detail::Support s = f->can_implement(kDesc, o);
    EXPECT_EQ(s.status, Status::kNotSupported);
    EXPECT_NE(s.reason.find("forward pass only"), std::string::npos) << s.reason;
  }
}

TEST(Registry, CpuPlanListsItsCandidate) {
  REQUIRE_FFTW();
  const Plan plan(kDesc, cpu_options());
  const PlanInfo& i = plan.info();
  ASSERT_EQ(i.candidates.size(), 1u);
  EXPECT_EQ(i.candidates[0].name, "cpu_fft");
  EXPECT_TRUE(i.candidates[0].chosen);
  EXPECT_NE(plan.describe().find("chose cpu_fft"), std::string::npos) << plan.describe();
}

TEST(Registry, ForcedGpuAlgorithmOnCpuNamesWhatRuns) {
  Options o = cpu_options();
  o.algo = Algo::kCudnn;
  try {
    Plan plan(kDesc, o);
    FAIL() << "planned " << plan.describe();
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::kNotSupported);
    EXPECT_NE(std::string(e.what()).find("GPU only"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cpu_fft"), std::string::npos) << e.what();
  }
}

TEST(EnumNames, RoundTrip) {
  for (Algo a : {Algo::kAuto, Algo::kFft, Algo::kFftTiled, Algo::kCudnn}) {
    EXPECT_EQ(parse_algo(algo_name(a)), a);
  }
  for (CudnnSearch s : {CudnnSearch::kFind, CudnnSearch::kHeuristic}) {
    EXPECT_EQ(parse_cudnn_search(cudnn_search_name(s)), s);
  }
  for (LogLevel l :
       {LogLevel::kOff, LogLevel::kError, LogLevel::kWarning, LogLevel::kInfo, LogLevel::kDebug}) {
    EXPECT_EQ(parse_log_level(log_level_name(l)), l);
  }
  EXPECT_THROW(parse_log_level("loud"), Error);
}

// Collects what the library logs while alive; restores the default sink and level after.
class LogCapture {
 public:
  explicit LogCapture(LogLevel level) : saved_(log_level()) {
    set_log_level(level);
    set_log_callback(
        [](LogLevel l, const char* m, void* self) {
          static_cast<LogCapture*>(self)->messages.emplace_back(l, m);
        },
        this);
  }
  ~LogCapture() {
    set_log_callback(nullptr);
    set_log_level(saved_);
  }
  std::vector<std::pair<LogLevel, std::string>> messages;

 private:
  LogLevel saved_;
};

// A test with a fresh folder, and CPU plans that measure (FFTW_MEASURE) and keep a tuning cache
// in it: the case where FFTW wisdom is read and written.
class TempDir : public ::testing::Test {
 protected:
  Options measured_cpu_options() const {
    Options o = cpu_options();
    o.tuning = Tuning::kAutotune;
    o.tuning_cache = tmp_.path() + "/cache.json";
    return o;
  }
  testing::TempDir tmp_{"fftconv-registry"};
  const std::string& dir_ = tmp_.path();
};

using Logging = TempDir;

TEST_F(Logging, CallbackReceivesWarningsAndLevelFilters) {
  REQUIRE_FFTW();
  const Options o = measured_cpu_options();
  const std::string wisdom = o.tuning_cache + ".fftw-wisdom";
  {
    std::ofstream(wisdom) << "not fftw wisdom";
    LogCapture log(LogLevel::kInfo);
    const Plan plan(kDesc, o);
    bool info = false, warning = false;
    for (const auto& m : log.messages) {
      EXPECT_NE(m.first, LogLevel::kDebug);
      info |= m.first == LogLevel::kInfo && m.second.find(kDesc.to_string()) != std::string::npos;
      warning |= m.first == LogLevel::kWarning && m.second.find(wisdom) != std::string::npos;
    }
    EXPECT_TRUE(info) << "no info line naming the plan's choice";
    EXPECT_TRUE(warning) << "no warning about the unreadable wisdom file";
  }
  {
    std::ofstream(wisdom) << "not fftw wisdom";
    LogCapture log(LogLevel::kOff);
    const Plan plan(kDesc, o);
    EXPECT_TRUE(log.messages.empty());
  }
}

TEST(CLogging, CApiCallbackSeesMessages) {
  REQUIRE_FFTW();
  std::vector<std::string> seen;
  const LogLevel saved = log_level();
  fftconv_set_log_level(3);
  fftconv_set_log_callback(
      [](int level, const char* m, void* user) {
        if (level == 3) static_cast<std::vector<std::string>*>(user)->emplace_back(m);
      },
      &seen);
  { const Plan plan(kDesc, cpu_options()); }
  fftconv_set_log_callback(nullptr, nullptr);
  set_log_level(saved);
  ASSERT_FALSE(seen.empty());
  EXPECT_NE(seen[0].find("cpu_fft"), std::string::npos) << seen[0];
}

using Wisdom = TempDir;

TEST_F(Wisdom, MeasuredCpuPlansKeepFftwWisdomBesideTheTuningCache) {
  REQUIRE_FFTW();
  const Options o = measured_cpu_options();
  const Plan first(kDesc, o);
  const std::string wisdom = o.tuning_cache + ".fftw-wisdom";
  ASSERT_TRUE(fs::exists(wisdom)) << first.describe();
  EXPECT_GT(fs::file_size(wisdom), 0u);
  EXPECT_NE(first.describe().find("wisdom " + wisdom), std::string::npos) << first.describe();
  const Plan second(kDesc, o);  // reads it back
  EXPECT_EQ(second.info().fft_h, first.info().fft_h);
  for (const auto& e : fs::directory_iterator(dir_)) {
    EXPECT_EQ(e.path().string().find(".tmp."), std::string::npos) << e.path();
  }
  // Heuristic plans measure nothing and leave no wisdom.
  Options h = cpu_options();
  h.tuning_cache = dir_ + "/other.json";
  const Plan third(kDesc, h);
  EXPECT_FALSE(fs::exists(h.tuning_cache + ".fftw-wisdom"));
}

}  // namespace
}  // namespace fftconv
