// Persistent autotuning results: a JSON file of (device, problem) -> winner records that survives
// the process and is shared by threads and processes. A bad file never breaks planning: it is
// ignored with a warning and never overwritten.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "fftconv/options.hpp"

namespace fftconv::detail {

/// One tuned decision: on device `device`, problem `key` (a canonical descriptor string plus the
/// pass and sizes the decision depends on), the winner `choice` took `ms` milliseconds.
struct TuningRecord {
  std::string device;
  std::string key;
  std::string choice;
  double ms = 0.0;
};

/// What the text of a tuning-cache file holds (parse_tuning_cache).
struct TuningCacheContent {
  /// The usable records in file order; a later record for the same (device, key) replaces an
  /// earlier one.
  std::vector<TuningRecord> records;
  /// False when the text is not a readable tuning cache of this version: a file never to be
  /// overwritten.
  bool writable = false;
  /// What was wrong with the text, each naming the file ("tuning cache <path>: ...").
  std::vector<std::string> warnings;
};

/// Reads the text of a tuning-cache file as TuningCache does (`path` names the file in the
/// warnings only). Blank text is an empty, writable cache.
TuningCacheContent parse_tuning_cache(const std::string& text, const std::string& path);

/// The text TuningCache writes for `records`: the documented shape, one record per line.
std::string format_tuning_cache(const std::vector<TuningRecord>& records);

/// A JSON file of tuning records shared by processes and threads.
class TuningCache {
 public:
  explicit TuningCache(std::string path);  // touches nothing on disk
  TuningCache(const TuningCache&) = delete;
  TuningCache& operator=(const TuningCache&) = delete;

  const std::string& path() const;
  /// The record for (device, key), if the file holds one. Reads the file on first use and again
  /// whenever its modification time or size changed since the last read.
  std::optional<TuningRecord> lookup(const std::string& device, const std::string& key);
  /// Adds or replaces the record and writes the file: under an exclusive lock on <path>.lock
  /// (flock: processes storing at once wait for each other and keep every record), re-read,
  /// merge, write a temporary file in the same folder, rename over the original (atomic).
  /// Records of other devices are kept. Never overwrites a file it could not parse (it warns and
  /// keeps the record in memory only). The lock file stays beside the cache.
  void store(const TuningRecord& record);
  /// Warnings issued so far (each also logged once at LogLevel::kWarning).
  std::vector<std::string> warnings() const;

 private:
  // What the file looked like when last read; a different stamp means re-read.
  struct Stamp {
    bool exists = false;
    std::filesystem::file_time_type mtime{};
    std::uintmax_t size = 0;
    bool operator==(const Stamp& o) const {
      return exists == o.exists && mtime == o.mtime && size == o.size;
    }
  };

  // All private functions expect mu_ to be held.
  void refresh(bool force);
  void load(const std::string& text);
  bool write(const std::vector<TuningRecord>& records);
  void warn(const std::string& message);

  const std::string path_;
  mutable std::mutex mu_;
  bool loaded_ = false;
  Stamp stamp_;
  // False when the file holds something that is not a readable tuning cache of our version.
  bool writable_ = true;
  std::vector<TuningRecord> file_records_;
  // Stored here but not (yet) written to the file; they take precedence over file_records_.
  std::vector<TuningRecord> memory_records_;
  std::vector<std::string> warnings_;
};

/// The process-wide cache for `path` (one instance per path, created on first use; thread-safe).
TuningCache& tuning_cache(const std::string& path);

/// Path from the environment variable FFTCONV_TUNING_CACHE, or "" when unset/empty.
std::string tuning_cache_path_from_env();

/// The cache a plan uses: Options::tuning_cache, else $FFTCONV_TUNING_CACHE; "" for none.
std::string tuning_cache_path(const Options& o);

/// The device part of tuning-cache keys, e.g. "NVIDIA H200 sm_90 132SM".
std::string tuning_device_name();

/// One tuned decision of a plan in the plan's cache: the one place that looks choices up and
/// stores them (GEMM tiling, FFT size). Without a cache path both are no-ops.
class TunedChoice {
 public:
  TunedChoice(const Options& o, std::string key);
  const std::string& path() const { return path_; }
  /// The cached choice when `usable` accepts it; an unusable one is logged and ignored (`what`
  /// names the kind of choice in that message).
  std::optional<TuningRecord> find(const std::function<bool(const std::string&)>& usable,
                                   const char* what) const;
  void store(const std::string& choice, double ms) const;

 private:
  std::string path_, device_, key_;
};

}  // namespace fftconv::detail
