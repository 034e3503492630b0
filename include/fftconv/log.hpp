// Logging: the library reports warnings and plan-time notes through one sink, never by printing
// on its own. The default sink writes "fftconv: <level>: <message>" lines to stderr for messages
// at or above the level, which is $FFTCONV_LOG_LEVEL (off, error, warning, info, debug; default
// warning) until set_log_level() is called.
#pragma once

#include <string>
#include "fftconv/export.h"

namespace fftconv {

enum class LogLevel : int {
  kOff = 0,      ///< nothing is reported
  kError = 1,    ///< a failure the library recovered from but the user should know about
  kWarning = 2,  ///< e.g. an unreadable tuning cache that is being ignored
  kInfo = 3,     ///< plan-time choices (what Auto chose and why)
  kDebug = 4,    ///< every candidate and timing
};

/// "off", "error", "warning", "info", "debug".
FFTCONV_API const char* log_level_name(LogLevel level) noexcept;
/// Parses a level name; throws Error(kInvalidArgument) otherwise.
FFTCONV_API LogLevel parse_log_level(const std::string& name);

/// Receives each message at or above the current level. Called from the thread that logs,
/// possibly from several threads at once; must not call back into the library.
using LogCallback = void (*)(LogLevel level, const char* message, void* user_data);

/// Replaces the sink (nullptr: the default stderr sink). Thread-safe.
FFTCONV_API void set_log_callback(LogCallback callback, void* user_data = nullptr) noexcept;
/// Sets the level, overriding $FFTCONV_LOG_LEVEL. Thread-safe.
FFTCONV_API void set_log_level(LogLevel level) noexcept;
/// The current level ($FFTCONV_LOG_LEVEL, read once, until set_log_level()).
FFTCONV_API LogLevel log_level() noexcept;

}  // namespace fftconv
