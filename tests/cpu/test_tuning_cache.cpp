// The persistent tuning cache: round trips, every malformed input, and a cache file that is
// missing, corrupt, foreign, unwritable or written by many threads at once.
#include <gtest/gtest.h>

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "fftconv/status.hpp"
#include "testing/testing.h"
#include "tuning/tuning_cache.h"

namespace fftconv::detail {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

// ---- tuning cache -----------------------------------------------------------------------------

class TuningCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tmp_ = std::make_unique<testing::TempDir>("fftconv-tuning-cache");
    dir_ = tmp_->path();
    path_ = dir_ + "/cache.json";
  }
  void TearDown() override { tmp_.reset(); }

  static void write_text(const std::string& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
  }
  static std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }
  static TuningRecord rec(const std::string& device, const std::string& key,
                          const std::string& choice, double ms) {
    return TuningRecord{device, key, choice, ms};
  }
  // Files in the folder other than the cache itself and its lock file (temporaries left behind).
  std::vector<std::string> stray_files() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_)) {
      const std::string p = e.path().string();
      if (p != path_ && p != path_ + ".lock") out.push_back(p);
    }
    return out;
  }
  // A cache file with `entries` (JSON text of the array's elements) and the given header fields.
  static std::string file_text(const std::string& entries,
                               const std::string& format = "\"fftconv-tuning-cache\"",
                               const std::string& version = "1") {
    return "{\"format\": " + format + ", \"version\": " + version + ", \"entries\": [" + entries +
           "]}";
  }

  std::unique_ptr<testing::TempDir> tmp_;
  std::string dir_;
  std::string path_;
};

constexpr char kH200[] = "NVIDIA H200";
constexpr char kKey[] = "fwd n16c128h56w56k128r45s45p22x22u1x1d1x1g1f32 fft=80x80";
constexpr char kValidEntry[] =
    R"({"device": "NVIDIA H200", "key": "k1", "choice": "regtile_4x2", "ms": 0.5})";

TEST_F(TuningCacheTest, StoreThenLookupPersists) {
  {
    TuningCache cache(path_);
    EXPECT_EQ(cache.path(), path_);
    cache.store(rec(kH200, kKey, "regtile_4x2", 0.512));
    cache.store(rec(kH200, "k2", "regtile_1x1", 1.0 / 3.0));
    ASSERT_TRUE(cache.lookup(kH200, kKey).has_value());
    EXPECT_TRUE(cache.warnings().empty());
  }
  TuningCache fresh(path_);
  const auto r = fresh.lookup(kH200, kKey);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->device, kH200);
  EXPECT_EQ(r->key, kKey);
  EXPECT_EQ(r->choice, "regtile_4x2");
  EXPECT_EQ(r->ms, 0.512);
  const auto r2 = fresh.lookup(kH200, "k2");
  ASSERT_TRUE(r2.has_value());
  EXPECT_EQ(r2->ms, 1.0 / 3.0);  // exact round trip
  EXPECT_FALSE(fresh.lookup(kH200, "k3").has_value());
  EXPECT_TRUE(fresh.warnings().empty());
  EXPECT_TRUE(stray_files().empty());
}

TEST_F(TuningCacheTest, WritesTheDocumentedShape) {
  TuningCache cache(path_);
  cache.store(rec(kH200, kKey, "regtile_4x2", 0.512));
  EXPECT_EQ(read_text(path_),
            "{\n"
            "  \"format\": \"fftconv-tuning-cache\",\n"
            "  \"version\": 1,\n"
            "  \"entries\": [\n"
            "    {\"device\": \"NVIDIA H200\", \"key\": \"fwd "
            "n16c128h56w56k128r45s45p22x22u1x1d1x1g1f32 fft=80x80\", \"choice\": \"regtile_4x2\", "
            "\"ms\": 0.512}\n"
            "  ]\n"
            "}\n");
}

TEST_F(TuningCacheTest, StoreReplaces) {
  TuningCache cache(path_);
  cache.store(rec(kH200, kKey, "regtile_4x2", 0.5));
  cache.store(rec(kH200, kKey, "regtile_2x2", 0.25));
  EXPECT_EQ(cache.lookup(kH200, kKey)->choice, "regtile_2x2");
  TuningCache fresh(path_);
  EXPECT_EQ(fresh.lookup(kH200, kKey)->choice, "regtile_2x2");
  EXPECT_EQ(Json::parse(read_text(path_))["entries"].size(), 1u);
}

TEST_F(TuningCacheTest, KeepsOtherDevices) {
  // Another device's record, written by another machine sharing the file.
  write_text(path_, file_text(R"({"device": "NVIDIA A100", "key": "k1", "choice": "a", "ms": 2})"));
  TuningCache cache(path_);
  EXPECT_FALSE(cache.lookup(kH200, "k1").has_value());
  cache.store(rec(kH200, "k1", "h", 1.0));
  EXPECT_EQ(cache.lookup(kH200, "k1")->choice, "h");
  EXPECT_EQ(cache.lookup("NVIDIA A100", "k1")->choice, "a");
  EXPECT_FALSE(cache.lookup("NVIDIA B200", "k1").has_value());
  TuningCache fresh(path_);
  EXPECT_EQ(fresh.lookup("NVIDIA A100", "k1")->choice, "a");
  EXPECT_EQ(fresh.lookup(kH200, "k1")->choice, "h");
  EXPECT_EQ(Json::parse(read_text(path_))["entries"].size(), 2u);
  EXPECT_TRUE(cache.warnings().empty());
}

TEST_F(TuningCacheTest, MissingFileIsEmpty) {
  TuningCache cache(path_);
  EXPECT_FALSE(cache.lookup(kH200, kKey).has_value());
  EXPECT_TRUE(cache.warnings().empty());
  EXPECT_FALSE(fs::exists(path_));  // lookups never create the file
}

TEST_F(TuningCacheTest, EmptyFileIsEmpty) {
  write_text(path_, "");
  TuningCache cache(path_);
  EXPECT_FALSE(cache.lookup(kH200, kKey).has_value());
  EXPECT_TRUE(cache.warnings().empty());
  cache.store(rec(kH200, kKey, "c", 1.0));
  EXPECT_EQ(TuningCache(path_).lookup(kH200, kKey)->choice, "c");
}

TEST_F(TuningCacheTest, ConstructorTouchesNothing) {
  TuningCache cache(dir_ + "/no/such/folder/cache.json");
  EXPECT_TRUE(cache.warnings().empty());
  EXPECT_TRUE(stray_files().empty());
}

TEST_F(TuningCacheTest, CorruptFileIsIgnoredWithOneWarning) {
  std::mt19937 rng(1234);
  std::string bytes(4096, '\0');
  for (char& c : bytes) c = static_cast<char>(rng() & 0xFF);
  write_text(path_, bytes);
  TuningCache cache(path_);
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(cache.lookup(kH200, kKey).has_value());
  const auto w = cache.warnings();
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find(path_), std::string::npos) << w[0];
  EXPECT_NE(w[0].find("not valid JSON"), std::string::npos) << w[0];
}

// Found by fuzz/fuzz_tuning_cache: a number beyond double's range is refused by nlohmann with an
// out_of_range exception, not a parse_error; the reader once let it escape ("lookup failed").
TEST_F(TuningCacheTest, NumberOverflowIsIgnoredWithOneWarning) {
  const std::string text = file_text(
      R"({"device": "NVIDIA H200", "key": "k1", "choice": "regtile_4x2", "ms": 0.0065e978})");
  const TuningCacheContent content = parse_tuning_cache(text, path_);
  EXPECT_FALSE(content.writable);
  EXPECT_TRUE(content.records.empty());
  ASSERT_EQ(content.warnings.size(), 1u);
  EXPECT_NE(content.warnings[0].find("not valid JSON (number overflow"), std::string::npos)
      << content.warnings[0];

  write_text(path_, text);
  TuningCache cache(path_);
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(cache.lookup(kH200, "k1").has_value());
  cache.store(rec(kH200, "k2", "c", 1.0));  // kept in memory, the file left alone
  EXPECT_EQ(cache.lookup(kH200, "k2")->choice, "c");
  EXPECT_EQ(read_text(path_), text);
  const auto w = cache.warnings();
  ASSERT_EQ(w.size(), 2u);
  EXPECT_NE(w[0].find(path_), std::string::npos) << w[0];
  EXPECT_NE(w[0].find("not valid JSON (number overflow"), std::string::npos) << w[0];
  EXPECT_NE(w[1].find("not overwriting"), std::string::npos) << w[1];
}

// Found with fuzz/fuzz_tuning_cache on a constructed input (its default inputs, up to 4 KB, nest
// too shallowly): values nested a few hundred thousand levels deep (a file of under a megabyte)
// once overflowed the stack in the reader's copies of "format" and "entries".
TEST_F(TuningCacheTest, DeeplyNestedFileIsIgnoredWithOneWarning) {
  const std::string deep = std::string(300000, '[') + std::string(300000, ']');
  for (const std::string& text :
       {file_text("", deep), file_text(deep), "{\"x\": " + deep + "}", deep}) {
    const TuningCacheContent content = parse_tuning_cache(text, path_);
    EXPECT_FALSE(content.writable);
    EXPECT_TRUE(content.records.empty());
    ASSERT_EQ(content.warnings.size(), 1u);
    EXPECT_NE(content.warnings[0].find("nested deeper than"), std::string::npos)
        << content.warnings[0];
  }
  write_text(path_, file_text(deep));
  TuningCache cache(path_);
  EXPECT_FALSE(cache.lookup(kH200, "k1").has_value());
  ASSERT_EQ(cache.warnings().size(), 1u);
  EXPECT_NE(cache.warnings()[0].find(path_), std::string::npos) << cache.warnings()[0];
  // Nesting as deep as the limit still reads.
  const std::string ok = std::string(60, '[') + std::string(60, ']');
  const TuningCacheContent content = parse_tuning_cache(
      file_text(std::string(kValidEntry) + ", " + ok), path_);
  EXPECT_TRUE(content.writable);
  ASSERT_EQ(content.records.size(), 1u);
  ASSERT_EQ(content.warnings.size(), 1u);
  EXPECT_NE(content.warnings[0].find("skipped 1 malformed entry"), std::string::npos);
}

TEST_F(TuningCacheTest, TruncatedFileIsIgnoredWithOneWarning) {
  {
    TuningCache writer(path_);
    for (int i = 0; i < 10; ++i) writer.store(rec(kH200, "k" + std::to_string(i), "c", i));
  }
  const std::string full = read_text(path_);
  write_text(path_, full.substr(0, full.size() / 2));
  TuningCache cache(path_);
  for (int i = 0; i < 10; ++i) {
    EXPECT_FALSE(cache.lookup(kH200, "k" + std::to_string(i)).has_value()) << i;
  }
  const auto w = cache.warnings();
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find(path_), std::string::npos) << w[0];
  EXPECT_NE(w[0].find("unexpected end of input"), std::string::npos) << w[0];
}

TEST_F(TuningCacheTest, ForeignFormatIsIgnored) {
  for (const std::string& text :
       {file_text(kValidEntry, "\"someone-elses-cache\""), file_text(kValidEntry, "7"),
        std::string("{\"version\": 1, \"entries\": [") + kValidEntry + "]}",
        std::string("[") + kValidEntry + "]"}) {
    write_text(path_, text);
    TuningCache cache(path_);
    EXPECT_FALSE(cache.lookup(kH200, "k1").has_value()) << text;
    const auto w = cache.warnings();
    ASSERT_EQ(w.size(), 1u) << text;
    EXPECT_NE(w[0].find(path_), std::string::npos) << w[0];
  }
  write_text(path_, file_text(kValidEntry, "\"someone-elses-cache\""));
  TuningCache cache(path_);
  cache.lookup(kH200, "k1");
  EXPECT_NE(cache.warnings().at(0).find("\"format\""), std::string::npos) << cache.warnings()[0];
}

TEST_F(TuningCacheTest, WrongVersionIsIgnored) {
  for (const std::string version : {"2", "0", "1.5", "\"1\"", "null"}) {
    write_text(path_, file_text(kValidEntry, "\"fftconv-tuning-cache\"", version));
    TuningCache cache(path_);
    EXPECT_FALSE(cache.lookup(kH200, "k1").has_value()) << version;
    const auto w = cache.warnings();
    ASSERT_EQ(w.size(), 1u) << version;
    EXPECT_NE(w[0].find("\"version\""), std::string::npos) << w[0];
    EXPECT_NE(w[0].find(path_), std::string::npos) << w[0];
  }
  // The valid baseline: the same file with version 1 is read.
  write_text(path_, file_text(kValidEntry));
  TuningCache cache(path_);
  EXPECT_EQ(cache.lookup(kH200, "k1")->choice, "regtile_4x2");
  EXPECT_TRUE(cache.warnings().empty());
}

TEST_F(TuningCacheTest, MalformedEntriesAreSkipped) {
  write_text(path_,
             file_text(std::string(kValidEntry) + ",\n" +
                       R"({"device": 1, "key": "k2", "choice": "x", "ms": 1},)"
                       R"({"device": "NVIDIA H200", "key": "k3"},)"
                       R"({"device": "NVIDIA H200", "key": "k4", "choice": "x", "ms": "1"},)"
                       R"({"device": "NVIDIA H200", "key": "k5", "choice": 5, "ms": 1},)"
                       R"("k6", null, [1, 2],)"
                       R"({"device": "NVIDIA H200", "key": "k7", "choice": "ok", "ms": 7})"));
  TuningCache cache(path_);
  EXPECT_EQ(cache.lookup(kH200, "k1")->choice, "regtile_4x2");
  EXPECT_EQ(cache.lookup(kH200, "k7")->choice, "ok");
  for (const char* key : {"k2", "k3", "k4", "k5", "k6"}) {
    EXPECT_FALSE(cache.lookup(kH200, key).has_value()) << key;
  }
  const auto w = cache.warnings();
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find(path_), std::string::npos) << w[0];
  EXPECT_NE(w[0].find("skipped 7 malformed entries"), std::string::npos) << w[0];
}

TEST_F(TuningCacheTest, StoreDoesNotOverwriteUnusableFiles) {
  std::mt19937 rng(99);
  std::string corrupt(1000, '\0');
  for (char& c : corrupt) c = static_cast<char>(rng() & 0xFF);
  for (const std::string& original :
       {corrupt, file_text(kValidEntry, "\"other\""),
        file_text(kValidEntry, "\"fftconv-tuning-cache\"", "2"),
        std::string("{\"format\": \"fftconv-tuning-cache\", \"version\": 1}")}) {
    write_text(path_, original);
    TuningCache cache(path_);
    EXPECT_NO_THROW(cache.store(rec(kH200, kKey, "mine", 1.0)));
    EXPECT_NO_THROW(cache.store(rec(kH200, "k2", "mine2", 2.0)));
    EXPECT_EQ(read_text(path_), original);  // bytes unchanged
    // This process still gets what it stored.
    EXPECT_EQ(cache.lookup(kH200, kKey)->choice, "mine");
    EXPECT_EQ(cache.lookup(kH200, "k2")->choice, "mine2");
    const auto w = cache.warnings();
    ASSERT_EQ(w.size(), 2u);  // what is wrong with the file; that it is kept
    EXPECT_NE(w[1].find("not overwriting"), std::string::npos) << w[1];
    EXPECT_NE(w[1].find(path_), std::string::npos) << w[1];
    EXPECT_TRUE(stray_files().empty());
  }
}

TEST_F(TuningCacheTest, KeptResultsAreWrittenOnceTheFileIsUsable) {
  write_text(path_, "garbage");
  TuningCache cache(path_);
  cache.store(rec(kH200, "k1", "a", 1.0));
  EXPECT_EQ(read_text(path_), "garbage");
  fs::remove(path_);  // the user deletes the bad file
  cache.store(rec(kH200, "k2", "b", 2.0));
  TuningCache fresh(path_);
  EXPECT_EQ(fresh.lookup(kH200, "k1")->choice, "a");
  EXPECT_EQ(fresh.lookup(kH200, "k2")->choice, "b");
}

TEST_F(TuningCacheTest, UnwritablePathWarnsAndDoesNotThrow) {
  const std::string path = dir_ + "/missing-folder/cache.json";
  TuningCache cache(path);
  EXPECT_NO_THROW(cache.store(rec(kH200, kKey, "c", 1.0)));
  EXPECT_EQ(cache.lookup(kH200, kKey)->choice, "c");  // kept in memory
  const auto w = cache.warnings();
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find(path), std::string::npos) << w[0];
  EXPECT_NE(w[0].find("cannot write"), std::string::npos) << w[0];
  EXPECT_FALSE(fs::exists(dir_ + "/missing-folder"));
  // A path that is a folder is neither read nor replaced.
  TuningCache folder(dir_);
  EXPECT_NO_THROW(folder.store(rec(kH200, kKey, "c", 1.0)));
  EXPECT_TRUE(fs::is_directory(dir_));
  EXPECT_FALSE(folder.warnings().empty());
}

TEST_F(TuningCacheTest, NonFiniteTimesAreNotStored) {
  TuningCache cache(path_);
  cache.store(rec(kH200, kKey, "c", std::nan("")));
  cache.store(rec(kH200, kKey, "c", INFINITY));
  EXPECT_FALSE(cache.lookup(kH200, kKey).has_value());
  EXPECT_FALSE(fs::exists(path_));
  EXPECT_EQ(cache.warnings().size(), 2u);
}

TEST_F(TuningCacheTest, RereadsWhenTheFileChanges) {
  TuningCache reader(path_);
  TuningCache writer(path_);
  EXPECT_FALSE(reader.lookup(kH200, kKey).has_value());
  writer.store(rec(kH200, kKey, "first", 1.0));
  EXPECT_EQ(reader.lookup(kH200, kKey)->choice, "first");
  writer.store(rec(kH200, kKey, "second", 1.0));  // a new size
  EXPECT_EQ(reader.lookup(kH200, kKey)->choice, "second");
  // The same size: the modification time tells, once the clock has ticked (file times advance in
  // kernel ticks of a few milliseconds).
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  writer.store(rec(kH200, kKey, "third!", 1.0));
  EXPECT_EQ(reader.lookup(kH200, kKey)->choice, "third!");
  fs::remove(path_);
  EXPECT_FALSE(reader.lookup(kH200, kKey).has_value());
  EXPECT_TRUE(reader.warnings().empty());
}

TEST_F(TuningCacheTest, OneInstancePerPath) {
  TuningCache& a = tuning_cache(path_);
  TuningCache& b = tuning_cache(path_);
  TuningCache& c = tuning_cache(path_ + ".other");
  EXPECT_EQ(&a, &b);
  EXPECT_NE(&a, &c);
  EXPECT_EQ(a.path(), path_);
  std::vector<std::thread> threads;
  std::vector<TuningCache*> seen(8);
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] { seen[i] = &tuning_cache(dir_ + "/shared.json"); });
  }
  for (auto& t : threads) t.join();
  for (TuningCache* p : seen) EXPECT_EQ(p, seen[0]);
}

TEST_F(TuningCacheTest, PathFromEnvironment) {
  const char* old = std::getenv("FFTCONV_TUNING_CACHE");
  const std::string saved = old ? old : "";
  unsetenv("FFTCONV_TUNING_CACHE");
  EXPECT_EQ(tuning_cache_path_from_env(), "");
  setenv("FFTCONV_TUNING_CACHE", "", 1);
  EXPECT_EQ(tuning_cache_path_from_env(), "");
  setenv("FFTCONV_TUNING_CACHE", path_.c_str(), 1);
  EXPECT_EQ(tuning_cache_path_from_env(), path_);
  if (old) {
    setenv("FFTCONV_TUNING_CACHE", saved.c_str(), 1);
  } else {
    unsetenv("FFTCONV_TUNING_CACHE");
  }
}

TEST_F(TuningCacheTest, ConcurrentStoresAndLookups) {
  constexpr int kThreads = 8;
  constexpr int kPerThread = 50;
  auto key = [](int t, int i) { return "t" + std::to_string(t) + "/r" + std::to_string(i); };
  auto choice = [](int t, int i) { return "c" + std::to_string(t * 1000 + i); };
  TuningCache cache(path_);
  // A second instance reads the same file concurrently, as another process would: thanks to the
  // atomic rename it never sees a partial file.
  TuningCache reader(path_);
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        cache.store(rec(kH200, key(t, i), choice(t, i), t + i / 64.0));
        const int other = (t + 1) % kThreads;
        for (TuningCache* c : {&cache, &reader}) {
          const auto r = c->lookup(kH200, key(other, i));
          if (r && (r->choice != choice(other, i) || r->ms != other + i / 64.0)) ++wrong;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_TRUE(cache.warnings().empty());
  EXPECT_TRUE(reader.warnings().empty());

  TuningCache fresh(path_);
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kPerThread; ++i) {
      const auto r = fresh.lookup(kH200, key(t, i));
      ASSERT_TRUE(r.has_value()) << key(t, i);
      EXPECT_EQ(r->choice, choice(t, i));
      EXPECT_EQ(r->ms, t + i / 64.0);
    }
  }
  const Json doc = Json::parse(read_text(path_));
  EXPECT_EQ(doc["entries"].size(), static_cast<std::size_t>(kThreads * kPerThread));
  EXPECT_TRUE(fresh.warnings().empty());
  EXPECT_TRUE(stray_files().empty());
}

// Several processes storing into one cache at once keep every record: each read-merge-write
// holds the file lock, so no writer replaces a file another has just written.
TEST_F(TuningCacheTest, ProcessesStoringAtOnceKeepEveryRecord) {
  constexpr int kProcesses = 6;
  constexpr int kPerProcess = 25;
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0) << "fork failed";
    if (pid == 0) {
      // A fresh cache object per process, as separate programs would have.
      TuningCache cache(path_);
      for (int i = 0; i < kPerProcess; ++i) {
        cache.store(rec(kH200, "p" + std::to_string(p) + "k" + std::to_string(i), "regtile_1x1",
                        p + i / 100.0));
      }
      _exit(cache.warnings().empty() ? 0 : 3);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  }
  TuningCache fresh(path_);
  for (int p = 0; p < kProcesses; ++p) {
    for (int i = 0; i < kPerProcess; ++i) {
      const auto r = fresh.lookup(kH200, "p" + std::to_string(p) + "k" + std::to_string(i));
      ASSERT_TRUE(r.has_value()) << "lost p" << p << "k" << i;
      EXPECT_EQ(r->ms, p + i / 100.0);
    }
  }
  const Json doc = Json::parse(read_text(path_));
  EXPECT_EQ(doc["entries"].size(), static_cast<std::size_t>(kProcesses * kPerProcess));
  EXPECT_TRUE(stray_files().empty());
}

}  // namespace
}  // namespace fftconv::detail
