// Threads of the host backend: how many, and a plain parallel loop over contiguous ranges.
#pragma once

#include <cstdint>
#include <functional>

namespace fftconv::detail {

/// Environment variable that sets the host backend's thread count.
constexpr const char* kCpuThreadsEnv = "FFTCONV_CPU_THREADS";

/// $FFTCONV_CPU_THREADS when set (a positive integer; anything else throws
/// Error(kInvalidArgument) naming the value), otherwise the hardware concurrency (at least 1).
int host_thread_count();

/// Runs body(begin, end) on up to `threads` threads over contiguous slices of [0, count), each at
/// least `min_per_thread` long (so small loops stay on the calling thread, which always takes the
/// first slice). Returns when every slice is done. `body` must not throw.
void parallel_for(std::int64_t count, int threads, std::int64_t min_per_thread,
                  const std::function<void(std::int64_t, std::int64_t)>& body);

}  // namespace fftconv::detail
