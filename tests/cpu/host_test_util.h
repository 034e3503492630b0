// Shared by the host-backend suites: the skip without FFTW and the plain helpers of a CPU plan.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "fftconv/options.hpp"

#ifndef FFTCONV_TEST_HAS_FFTW
#define FFTCONV_TEST_HAS_FFTW 0
#endif

#define FFTCONV_REQUIRE_FFTW()                                                          \
  do {                                                                                  \
    if (!FFTCONV_TEST_HAS_FFTW)                                                         \
      GTEST_SKIP() << "built without FFTCONV_WITH_FFTW (the cpu backend is not built)"; \
  } while (0)

namespace fftconv::hosttest {

/// Options of a CPU plan of `pass`.
inline Options cpu_options(Pass pass = Pass::kForward) {
  Options o;
  o.backend = Backend::kCpu;
  o.pass = pass;
  return o;
}

/// `count` NaNs: an output every element of which must be written.
inline std::vector<float> poisoned(std::int64_t count) {
  return std::vector<float>(static_cast<std::size_t>(count),
                            std::numeric_limits<float>::quiet_NaN());
}

}  // namespace fftconv::hosttest
