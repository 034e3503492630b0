#include "host/host_threads.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "fftconv/status.hpp"

namespace fftconv::detail {

namespace {
// More threads than this is a typo, not a machine.
constexpr long kMaxThreads = 4096;
}  // namespace

int host_thread_count() {
  const char* env = std::getenv(kCpuThreadsEnv);
  if (env && *env) {
    char* end = nullptr;
    errno = 0;
    const long n = std::strtol(env, &end, 10);
    if (errno != 0 || end == env || *end != '\0' || n < 1 || n > kMaxThreads) {
      throw Error(Status::kInvalidArgument,
                  std::string(kCpuThreadsEnv) + "='" + env +
                      "' is not a thread count (expected an integer from 1 to " +
                      std::to_string(kMaxThreads) + ")");
    }
    return static_cast<int>(n);
  }
  const unsigned hw = std::thread::hardware_concurrency();
  return hw > 0 ? static_cast<int>(hw) : 1;
}

void parallel_for(std::int64_t count, int threads, std::int64_t min_per_thread,
                  const std::function<void(std::int64_t, std::int64_t)>& body) {
  if (count <= 0) return;
  const std::int64_t by_work =
      std::max<std::int64_t>(1, count / std::max<std::int64_t>(1, min_per_thread));
  const std::int64_t parts = std::min<std::int64_t>(std::max(threads, 1), by_work);
  if (parts == 1) {
    body(0, count);
    return;
  }
  auto slice = [&](std::int64_t i) { return count * i / parts; };
  std::vector<std::thread> workers;
  workers.reserve(static_cast<std::size_t>(parts - 1));
  std::int64_t next = 1;
  try {
    for (; next < parts; ++next) {
      workers.emplace_back([&body, b = slice(next), e = slice(next + 1)] { body(b, e); });
    }
  } catch (const std::system_error&) {
    // No more threads to be had: the calling thread runs the slices left.
  }
  for (std::int64_t i = next; i < parts; ++i) body(slice(i), slice(i + 1));
  body(slice(0), slice(1));
  for (std::thread& t : workers) t.join();
}

}  // namespace fftconv::detail
