// The library's side of logging (fftconv/log.hpp): every message goes through log().
#pragma once

#include <string>

#include "fftconv/log.hpp"

namespace fftconv::detail {

/// Sends `message` to the sink when `level` is at or above the current level.
void log(LogLevel level, const std::string& message);

inline void log_warning(const std::string& message) { log(LogLevel::kWarning, message); }

}  // namespace fftconv::detail
