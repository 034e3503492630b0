#include "tuning/tuning_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <system_error>

#include <cuda_runtime_api.h>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/log.h"
#include "fftconv/status.hpp"

namespace fftconv::detail {

namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

constexpr char kFormat[] = "fftconv-tuning-cache";
constexpr double kVersion = 1;
// How much of an unexpected value a warning quotes.
constexpr std::size_t kMaxQuoted = 40;
// Deepest nesting read (a cache nests 3 levels): nlohmann parses any depth, but copying and
// printing a value recurse once per level, so a deeper file could exhaust the stack.
constexpr int kMaxDepth = 64;

// Thrown by the parser callback at the first value nested deeper than kMaxDepth.
struct TooDeep {};

std::string quoted(const Json& v) {
  std::string s = v.dump();
  if (s.size() > kMaxQuoted) s = s.substr(0, kMaxQuoted) + "...";
  return s;
}

std::string errno_text(int err) { return std::error_code(err, std::generic_category()).message(); }

TuningRecord* find_record(std::vector<TuningRecord>& records, const std::string& device,
                          const std::string& key) {
  for (auto& r : records) {
    if (r.device == device && r.key == key) return &r;
  }
  return nullptr;
}

void upsert(std::vector<TuningRecord>& records, const TuningRecord& record) {
  if (TuningRecord* r = find_record(records, record.device, record.key)) {
    *r = record;
  } else {
    records.push_back(record);
  }
}

// Why an entry cannot be used, or "" when it can.
std::string entry_problem(const Json& e) {
  if (!e.is_object()) return "not an object";
  for (const char* field : {"device", "key", "choice"}) {
    if (!e.contains(field) || !e[field].is_string()) {
      return std::string("\"") + field + "\" is not a string";
    }
  }
  if (!e.contains("ms") || !e["ms"].is_number()) return "\"ms\" is not a number";
  return "";
}

// An exclusive advisory lock on `path` + ".lock" for one read-merge-write, so writers in other
// processes wait instead of replacing each other's records. Without a lock file (an unwritable
// folder) the store goes on unlocked, as the rename keeps the file whole either way.
class FileLock {
 public:
  explicit FileLock(const std::string& path) {
    fd_ = ::open((path + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) return;
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno != EINTR) {
        ::close(fd_);
        fd_ = -1;
        return;
      }
    }
  }
  ~FileLock() {
    if (fd_ >= 0) ::close(fd_);  // closing releases the lock
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  bool held() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

}  // namespace

TuningCache::TuningCache(std::string path) : path_(std::move(path)) {}

const std::string& TuningCache::path() const { return path_; }

void TuningCache::warn(const std::string& message) {
  // The same problem is met again on every forced re-read; report it once.
  if (std::find(warnings_.begin(), warnings_.end(), message) != warnings_.end()) return;
  warnings_.push_back(message);
  log_warning(message);
}

std::vector<std::string> TuningCache::warnings() const {
  std::lock_guard<std::mutex> lock(mu_);
  return warnings_;
}

void TuningCache::refresh(bool force) {
  const std::string where = "tuning cache " + path_ + ": ";
  std::error_code ec;
  Stamp now;
  const fs::file_status st = fs::status(path_, ec);
  if (st.type() != fs::file_type::not_found) {
    if (ec || !fs::is_regular_file(st)) {
      warn(where + (ec ? "cannot access it (" + ec.message() + ")" : "not a regular file") +
           "; ignoring it");
      file_records_.clear();
      writable_ = false;
      loaded_ = false;  // look again next time
      return;
    }
    now.exists = true;
    now.mtime = fs::last_write_time(path_, ec);
    if (!ec) now.size = fs::file_size(path_, ec);
    if (ec) {
      // Replaced or removed between the calls: read it next time.
      loaded_ = false;
      return;
    }
  }
  if (!force && loaded_ && now == stamp_) return;
  // The stamp is taken before reading, so a write racing with the read shows up as a change later.
  stamp_ = now;
  loaded_ = true;
  if (!now.exists) {
    file_records_.clear();
    writable_ = true;
    return;
  }
  std::ifstream in(path_, std::ios::binary);
  std::ostringstream text;
  if (in) text << in.rdbuf();
  if (!in || in.bad()) {
    warn(where + "cannot read it (" + errno_text(errno) + "); ignoring it");
    file_records_.clear();
    writable_ = false;
    return;
  }
  load(text.str());
}

TuningCacheContent parse_tuning_cache(const std::string& text, const std::string& path) {
  const std::string where = "tuning cache " + path + ": ";
  TuningCacheContent content;
  // An empty file holds nothing to lose (e.g. made by touch): treat it as missing.
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
    content.writable = true;
    return content;
  }
  Json doc;
  try {
    doc = Json::parse(text, [](int depth, Json::parse_event_t event, Json&) {
      if (depth >= kMaxDepth && (event == Json::parse_event_t::object_start ||
                                 event == Json::parse_event_t::array_start)) {
        throw TooDeep{};
      }
      return true;
    });
  } catch (const TooDeep&) {
    content.warnings.push_back(where + "not a tuning cache (nested deeper than " +
                               std::to_string(kMaxDepth) + " levels); ignoring it");
    return content;
  } catch (const Json::parse_error& e) {
    // "[json.exception.parse_error.101] parse error at line 1, column 5: ..." without the tag.
    std::string what = e.what();
    const std::size_t tag = what.find("] ");
    if (tag != std::string::npos) what = what.substr(tag + 2);
    // A file cut short (a writer killed mid-write) is the common case: say so first.
    if (e.byte >= text.size()) what = "unexpected end of input; " + what;
    content.warnings.push_back(where + "not valid JSON (" + what + "); ignoring it");
    return content;
  } catch (const Json::exception& e) {
    // The parser's other refusals, such as a number beyond double's range (out_of_range.406),
    // which nlohmann reports apart from its parse errors.
    std::string what = e.what();
    const std::size_t tag = what.find("] ");
    if (tag != std::string::npos) what = what.substr(tag + 2);
    content.warnings.push_back(where + "not valid JSON (" + what + "); ignoring it");
    return content;
  }
  if (!doc.is_object()) {
    content.warnings.push_back(where +
                               "not a tuning cache (the top level is not an object); ignoring it");
    return content;
  }
  const Json format = doc.value("format", Json());
  if (!format.is_string() || format.get<std::string>() != kFormat) {
    content.warnings.push_back(where + "\"format\" is " + quoted(format) + ", not \"" + kFormat +
                               "\"; ignoring it");
    return content;
  }
  const Json version = doc.value("version", Json());
  if (!version.is_number() || version.get<double>() != kVersion) {
    content.warnings.push_back(where + "\"version\" " + quoted(version) +
                               " is not supported (expected 1); ignoring it");
    return content;
  }
  const Json entries = doc.value("entries", Json());
  if (!entries.is_array()) {
    content.warnings.push_back(where + "\"entries\" is missing or not an array; ignoring it");
    return content;
  }
  int bad = 0;
  std::string first_problem;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const Json& e = entries[i];
    const std::string problem = entry_problem(e);
    if (!problem.empty()) {
      if (bad++ == 0) first_problem = "entry " + std::to_string(i) + ": " + problem;
      continue;
    }
    upsert(content.records,
           TuningRecord{e["device"].get<std::string>(), e["key"].get<std::string>(),
                        e["choice"].get<std::string>(), e["ms"].get<double>()});
  }
  if (bad > 0) {
    content.warnings.push_back(where + "skipped " + std::to_string(bad) + " malformed entr" +
                               (bad == 1 ? "y" : "ies") + " (first: " + first_problem + ")");
  }
  content.writable = true;
  return content;
}

std::string format_tuning_cache(const std::vector<TuningRecord>& records) {
  // One record per line, so that the file diffs and merges well.
  std::string text =
      std::string("{\n  \"format\": \"") + kFormat + "\",\n  \"version\": 1,\n  \"entries\": [";
  for (std::size_t i = 0; i < records.size(); ++i) {
    const TuningRecord& r = records[i];
    // The documented field order, which nlohmann's sorted objects would not keep.
    const auto str = [](const std::string& v) {
      return Json(v).dump(-1, ' ', false, Json::error_handler_t::replace);
    };
    text += (i == 0 ? "\n    " : ",\n    ") + std::string("{\"device\": ") + str(r.device) +
            ", \"key\": " + str(r.key) + ", \"choice\": " + str(r.choice) +
            ", \"ms\": " + Json(r.ms).dump() + "}";
  }
  text += records.empty() ? "]\n}\n" : "\n  ]\n}\n";
  return text;
}

void TuningCache::load(const std::string& text) {
  file_records_.clear();
  writable_ = false;
  TuningCacheContent content = parse_tuning_cache(text, path_);
  file_records_ = std::move(content.records);
  writable_ = content.writable;
  for (const std::string& w : content.warnings) warn(w);
}

bool TuningCache::write(const std::vector<TuningRecord>& records) {
  static std::atomic<unsigned long> counter{0};
  const std::string text = format_tuning_cache(records);

  // Unique per process and call, in the same folder so that the rename stays on one filesystem.
  const std::string tmp =
      path_ + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  std::error_code ec;
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) {
      warn("tuning cache " + path_ + ": cannot write " + tmp + " (" + errno_text(errno) +
           "); keeping new results in memory only");
      return false;
    }
    out << text;
    out.close();
    if (out.fail()) {
      const int err = errno;
      fs::remove(tmp, ec);
      warn("tuning cache " + path_ + ": cannot write " + tmp + " (" + errno_text(err) +
           "); keeping new results in memory only");
      return false;
    }
  }
  fs::rename(tmp, path_, ec);
  if (ec) {
    warn("tuning cache " + path_ + ": cannot replace it (" + ec.message() +
         "); keeping new results in memory only");
    fs::remove(tmp, ec);
    return false;
  }
  return true;
}

std::optional<TuningRecord> TuningCache::lookup(const std::string& device, const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  try {
    refresh(/*force=*/false);
    if (TuningRecord* r = find_record(memory_records_, device, key)) return *r;
    if (TuningRecord* r = find_record(file_records_, device, key)) return *r;
  } catch (const std::exception& e) {
    warn("tuning cache " + path_ + ": lookup failed (" + e.what() + ")");
  }
  return std::nullopt;
}

void TuningCache::store(const TuningRecord& record) {
  std::lock_guard<std::mutex> lock(mu_);
  try {
    if (!std::isfinite(record.ms)) {
      warn("tuning cache " + path_ + ": not storing " + record.key + " with time " +
           std::to_string(record.ms) + " ms");
      return;
    }
    // Kept in memory first, so this process still sees it if the file cannot be written.
    upsert(memory_records_, record);
    // Other processes' writers wait on the lock, so the re-read below sees every record stored
    // before it and nothing is lost between re-read and rename. Always re-read: another process
    // may have written within the stamp's resolution.
    const FileLock file_lock(path_);
    refresh(/*force=*/true);
    if (!writable_) {
      warn("tuning cache " + path_ +
           ": not overwriting a file that is not a valid tuning cache; keeping new results in "
           "memory only");
      return;
    }
    std::vector<TuningRecord> merged = file_records_;
    for (const TuningRecord& r : memory_records_) upsert(merged, r);
    if (write(merged)) {
      file_records_ = std::move(merged);
      memory_records_.clear();
      loaded_ = false;  // take the new file's stamp on the next lookup
    }
  } catch (const std::exception& e) {
    warn("tuning cache " + path_ + ": store failed (" + e.what() + ")");
  }
}

TuningCache& tuning_cache(const std::string& path) {
  static std::mutex mu;
  // Never destroyed: callers may still hold references while static destructors run at exit.
  static auto* caches = new std::map<std::string, std::unique_ptr<TuningCache>>();
  std::lock_guard<std::mutex> lock(mu);
  std::unique_ptr<TuningCache>& slot = (*caches)[path];
  if (!slot) slot = std::make_unique<TuningCache>(path);
  return *slot;
}

std::string tuning_cache_path_from_env() {
  const char* v = std::getenv("FFTCONV_TUNING_CACHE");
  return v ? std::string(v) : std::string();
}

std::string tuning_cache_path(const Options& o) {
  return o.tuning_cache.empty() ? tuning_cache_path_from_env() : o.tuning_cache;
}

std::string tuning_device_name() {
  int dev = 0;
  FFTCONV_CUDA_CHECK(cudaGetDevice(&dev));
  cudaDeviceProp prop{};
  FFTCONV_CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
  return std::string(prop.name) + " sm_" + std::to_string(prop.major) + std::to_string(prop.minor) +
         " " + std::to_string(prop.multiProcessorCount) + "SM";
}

TunedChoice::TunedChoice(const Options& o, std::string key)
    : path_(tuning_cache_path(o)), key_(std::move(key)) {
  if (!path_.empty()) device_ = tuning_device_name();
}

std::optional<TuningRecord> TunedChoice::find(const std::function<bool(const std::string&)>& usable,
                                              const char* what) const {
  if (path_.empty()) return std::nullopt;
  std::optional<TuningRecord> hit = tuning_cache(path_).lookup(device_, key_);
  if (hit && !usable(hit->choice)) {
    log_warning("tuning cache " + path_ + " has an unusable " + what + " '" + hit->choice +
                "' for " + key_ + "; retuning");
    return std::nullopt;
  }
  return hit;
}

void TunedChoice::store(const std::string& choice, double ms) const {
  if (!path_.empty()) tuning_cache(path_).store({device_, key_, choice, ms});
}

}  // namespace fftconv::detail
