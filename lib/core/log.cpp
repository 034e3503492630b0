#include "core/log.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "fftconv/status.hpp"

namespace fftconv {

namespace {

// $FFTCONV_LOG_LEVEL, read once; an unknown value keeps the default and says so.
LogLevel level_from_env() {
  const char* env = std::getenv("FFTCONV_LOG_LEVEL");
  if (!env || !*env) return LogLevel::kWarning;
  try {
    return parse_log_level(env);
  } catch (const Error& e) {
    std::fprintf(stderr, "fftconv: warning: FFTCONV_LOG_LEVEL: %s; using warning\n", e.what());
    return LogLevel::kWarning;
  }
}

struct Sink {
  std::mutex mu;  // held while a message is delivered, so a sink is never replaced mid-call
  LogCallback callback = nullptr;
  void* user_data = nullptr;
  std::atomic<int> level{-1};  // -1: not read from the environment yet
};

Sink& sink() {
  static Sink s;
  return s;
}

}  // namespace

void set_log_callback(LogCallback callback, void* user_data) noexcept {
  Sink& s = sink();
  std::lock_guard<std::mutex> lock(s.mu);
  s.callback = callback;
  s.user_data = user_data;
}

void set_log_level(LogLevel level) noexcept { sink().level.store(static_cast<int>(level)); }

LogLevel log_level() noexcept {
  Sink& s = sink();
  int level = s.level.load();
  if (level < 0) {
    int expected = -1;
    s.level.compare_exchange_strong(expected, static_cast<int>(level_from_env()));
    level = s.level.load();
  }
  return static_cast<LogLevel>(level);
}

namespace detail {

void log(LogLevel level, const std::string& message) {
  if (level == LogLevel::kOff || static_cast<int>(level) > static_cast<int>(log_level())) return;
  Sink& s = sink();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.callback) {
    s.callback(level, message.c_str(), s.user_data);
  } else {
    // The default sink: the only place the library writes to stderr.
    std::fprintf(stderr, "fftconv: %s: %s\n", log_level_name(level), message.c_str());
  }
}

}  // namespace detail

}  // namespace fftconv
