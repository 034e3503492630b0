// Autotuning at plan time and the persistent tuning cache, end to end on the device.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "gpu_test_util.h"
#include "tuning/gemm_select.h"
#include "tuning/heuristics.h"
#include "tuning/tuning_cache.h"

namespace fftconv::gputest {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/fftconv_tuning_XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path); }
};

ConvDesc dense_desc() {
  ConvDesc d;
  d.n = 4; d.c = 32; d.h = 24; d.w = 24; d.k = 32; d.r = 9; d.s = 9; d.pad_h = 4; d.pad_w = 4;
  return d;
}

std::string cache_key(const ConvDesc& d) {
  const detail::FftGeometry g = detail::choose_fft_geometry(d);
  return "fwd " + d.to_string() + " fft=" + std::to_string(g.fft_h) + "x" + std::to_string(g.fft_w);
}

// GEMM tuning at the cost model's FFT size (a forced size is not tuned), so keys are predictable.
Options gemm_tuning(Tuning t, const std::string& path, const ConvDesc& d) {
  Options o;
  o.algo = Algo::kFft;
  o.tuning = t;
  o.tuning_cache = path;
  const detail::FftGeometry g = detail::choose_fft_geometry(d);
  o.fft_h = g.fft_h;
  o.fft_w = g.fft_w;
  return o;
}

TEST(Tuning, AutotuneStoresThenHitsTheCache) {
  FFTCONV_REQUIRE_GPU();
  TempDir dir;
  const std::string path = (dir.path / "cache.json").string();
  const ConvDesc d = dense_desc();
  const Problem p(d, 31, true);
  const Options o = gemm_tuning(Tuning::kAutotune, path, d);
  const RunResult first = run_forward(p, o);
  EXPECT_NE(first.info.reason.find("autotuned"), std::string::npos) << first.info.reason;
  EXPECT_TRUE(first.err.pass(1e-5)) << first.err.to_string();
  ASSERT_TRUE(fs::exists(path));
  auto rec = detail::TuningCache(path).lookup(detail::tuning_device_name(), cache_key(d));
  ASSERT_TRUE(rec.has_value());
  EXPECT_EQ(rec->choice, first.info.gemm);
  const RunResult second = run_forward(p, o);
  EXPECT_NE(second.info.reason.find("from tuning cache"), std::string::npos) << second.info.reason;
  EXPECT_EQ(second.info.gemm, first.info.gemm);
  EXPECT_TRUE(second.err.pass(1e-5));
}

TEST(Tuning, AutotuneChoosesAndCachesTheFftSize) {
  FFTCONV_REQUIRE_GPU();
  TempDir dir;
  const std::string path = (dir.path / "cache.json").string();
  const ConvDesc d = dense_desc();
  const Problem p(d, 37, true);
  Options o;
  o.tuning = Tuning::kAutotune;
  o.tuning_cache = path;
  o.algo = Algo::kFft;
  const RunResult first = run_forward(p, o);
  EXPECT_NE(first.info.reason.find("fft size autotuned"), std::string::npos) << first.info.reason;
  EXPECT_TRUE(first.err.pass(1e-5)) << first.err.to_string();
  const auto rec = detail::TuningCache(path).lookup(detail::tuning_device_name(),
                                                    "fwd " + d.to_string() + " fft-size");
  ASSERT_TRUE(rec.has_value());
  EXPECT_EQ(rec->choice, std::to_string(first.info.fft_h) + "x" + std::to_string(first.info.fft_w));
  // The GEMM was tuned at the chosen size and stored under that size.
  EXPECT_TRUE(detail::TuningCache(path)
                  .lookup(detail::tuning_device_name(),
                          "fwd " + d.to_string() + " fft=" + rec->choice)
                  .has_value());
  const RunResult second = run_forward(p, o);
  EXPECT_NE(second.info.reason.find("fft size from tuning cache"), std::string::npos)
      << second.info.reason;
  EXPECT_EQ(second.info.fft_h, first.info.fft_h);
  EXPECT_TRUE(second.err.pass(1e-5));
}

// Under a tuning option Auto times the algorithms whose estimates are close on the plan's own
// shapes (landmark_batch64's backward filter: the staged and the fused FFT, estimated within
// 6%), runs the fastest and stores it; a second plan takes it from the cache without timing.
TEST(Tuning, AutotuneTimesTheAlgorithmsAndCachesTheWinner) {
  FFTCONV_REQUIRE_GPU();
  TempDir dir;
  const std::string path = (dir.path / "cache.json").string();
  const ConvDesc d = ConvDesc::parse("n64c1h96w96k1r45s45p22x22u1x1d1x1g1f32");
  Options o;
  o.tuning = Tuning::kAutotune;
  o.tuning_cache = path;
  const BwdProblem p(d, 41);
  const BwdResult first = run_wgrad(p, o);
  EXPECT_NE(first.info.reason.find("timed cold (median of 5)"), std::string::npos)
      << first.info.reason;
  EXPECT_TRUE(first.err.pass(1e-5)) << first.err.to_string();
  // The plan runs the fastest of the candidates timed.
  int timed = 0;
  double chosen_us = -1.0, best_us = 1e30;
  std::string chosen_name;
  for (const AlgoCandidate& c : first.info.candidates) {
    const auto at = c.note.find("timed ");
    if (at == std::string::npos) continue;
    ++timed;
    const double us = std::stod(c.note.substr(at + 6));
    best_us = std::min(best_us, us);
    if (c.chosen) {
      chosen_us = us;
      chosen_name = c.name;
    }
  }
  EXPECT_GE(timed, 2) << first.info.reason;
  EXPECT_EQ(chosen_us, best_us) << first.info.reason;
  const auto rec = detail::TuningCache(path).lookup(
      detail::tuning_device_name(),
      "wgrad " + d.to_string() + " algorithm cold ws<=" + std::to_string(o.workspace_limit));
  ASSERT_TRUE(rec.has_value());
  EXPECT_EQ(rec->choice, chosen_name);
  const BwdResult second = run_wgrad(p, o);
  EXPECT_NE(second.info.reason.find("algorithm from tuning cache"), std::string::npos)
      << second.info.reason;
  EXPECT_EQ(second.info.reason.find("timed cold (median"), std::string::npos) << second.info.reason;
  EXPECT_EQ(second.info.algo, first.info.algo);
  EXPECT_TRUE(second.err.pass(1e-5)) << second.err.to_string();
}

TEST(Tuning, ExhaustiveAlsoTimesCublasAndKeepsItsOwnEntry) {
  FFTCONV_REQUIRE_GPU();
  TempDir dir;
  const std::string path = (dir.path / "cache.json").string();
  const ConvDesc d = dense_desc();
  const Problem p(d, 32, false);
  const Options o = gemm_tuning(Tuning::kExhaustive, path, d);
  const RunResult r = run_forward(p, o);
  EXPECT_TRUE(r.err.pass(1e-5)) << r.err.to_string() << " " << r.describe;
  const std::string all = "gemm autotuned over " + std::to_string(detail::cgemm_kernels().size());
  EXPECT_NE(r.info.reason.find(all), std::string::npos) << r.info.reason;
  detail::TuningCache cache(path);
  EXPECT_TRUE(cache.lookup(detail::tuning_device_name(), cache_key(d) + " exhaustive").has_value());
  EXPECT_FALSE(cache.lookup(detail::tuning_device_name(), cache_key(d)).has_value());
}

TEST(Tuning, CandidateTimingsCoverEveryPath) {
  FFTCONV_REQUIRE_GPU();
  const ConvDesc d = dense_desc();
  const detail::CgemmProblem p = detail::forward_gemm_problem(d, detail::choose_fft_geometry(d));
  std::vector<const detail::CgemmKernel*> all;
  for (const auto& k : detail::cgemm_kernels()) all.push_back(&k);
  const auto times = detail::time_cgemm_candidates(p, all, 3);
  ASSERT_EQ(times.size(), all.size());
  for (const auto& t : times) {
    EXPECT_TRUE(std::isfinite(t.ms) && t.ms > 0.0) << t.kernel->name;
  }
}

TEST(Tuning, CorruptCacheIsIgnoredAndLeftAlone) {
  FFTCONV_REQUIRE_GPU();
  TempDir dir;
  const std::string path = (dir.path / "cache.json").string();
  const std::string garbage = "{\"format\": \"fftconv-tuning-cache\", \"version\": 1, \"entr";
  std::ofstream(path) << garbage;
  const ConvDesc d = dense_desc();
  const Problem p(d, 33, false);
  Options o;
  o.algo = Algo::kFft;
  o.tuning = Tuning::kAutotune;
  o.tuning_cache = path;
  const RunResult r = run_forward(p, o);
  EXPECT_TRUE(r.err.pass(1e-5));
  EXPECT_NE(r.info.reason.find("autotuned"), std::string::npos) << r.info.reason;
  std::ifstream in(path);
  const std::string after((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(after, garbage) << "a corrupt cache must not be overwritten";
  EXPECT_FALSE(detail::tuning_cache(path).warnings().empty());
}

TEST(Tuning, UnknownKernelInCacheIsRetuned) {
  FFTCONV_REQUIRE_GPU();
  TempDir dir;
  const std::string path = (dir.path / "cache.json").string();
  const ConvDesc d = dense_desc();
  detail::TuningCache(path).store({detail::tuning_device_name(), cache_key(d), "regtile_99x99", 0.1});
  const Problem p(d, 34, false);
  const Options o = gemm_tuning(Tuning::kAutotune, path, d);
  const RunResult r = run_forward(p, o);
  EXPECT_TRUE(r.err.pass(1e-5));
  EXPECT_NE(r.info.gemm, "regtile_99x99");
  EXPECT_NE(r.info.reason.find("autotuned"), std::string::npos) << r.info.reason;
}

TEST(Tuning, SeveralThreadsTuneAtOnce) {
  FFTCONV_REQUIRE_GPU();
  TempDir dir;
  const std::string path = (dir.path / "cache.json").string();
  ConvDesc d1 = dense_desc(), d2 = dense_desc();
  d2.k = 16;
  const Problem p1(d1, 35, true), p2(d2, 36, true);
  constexpr int kThreads = 6;
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        const Options o = gemm_tuning(Tuning::kAutotune, path, t % 2 ? d1 : d2);
        const RunResult r = run_forward(t % 2 ? p1 : p2, o);
        if (!r.err.pass(1e-5)) failures[t] = r.err.to_string();
      } catch (const std::exception& e) {
        failures[t] = e.what();
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_TRUE(failures[t].empty()) << "thread " << t << ": " << failures[t];
  detail::TuningCache fresh(path);
  EXPECT_TRUE(fresh.lookup(detail::tuning_device_name(), cache_key(d1)).has_value());
  EXPECT_TRUE(fresh.lookup(detail::tuning_device_name(), cache_key(d2)).has_value());
  EXPECT_TRUE(fresh.warnings().empty());
}

}  // namespace
}  // namespace fftconv::gputest
