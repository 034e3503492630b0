// Turns every CUDA / cuFFT failure into fftconv::Error with the failing expression and location.
#pragma once

#include <string>

#include <cuda_runtime_api.h>
#include <cufft.h>

#include "fftconv/status.hpp"

namespace fftconv::detail {

[[noreturn]] void throw_cuda(cudaError_t err, const char* expr, const char* file, int line);
[[noreturn]] void throw_cufft(cufftResult err, const char* expr, const char* file, int line);
[[noreturn]] void throw_internal(const std::string& what, const char* file, int line);
const char* cufft_result_name(cufftResult r) noexcept;

}  // namespace fftconv::detail

// Evaluates `expr` once; when it is not `ok`, calls thrower(result, "expr", file, line).
#define FFTCONV_CHECK_RESULT(expr, ok, thrower)                                   \
  do {                                                                             \
    const auto fftconv_result_ = (expr);                                           \
    if (fftconv_result_ != (ok)) thrower(fftconv_result_, #expr, __FILE__, __LINE__); \
  } while (0)

#define FFTCONV_CUDA_CHECK(expr) \
  FFTCONV_CHECK_RESULT(expr, cudaSuccess, ::fftconv::detail::throw_cuda)
#define FFTCONV_CUFFT_CHECK(expr) \
  FFTCONV_CHECK_RESULT(expr, CUFFT_SUCCESS, ::fftconv::detail::throw_cufft)

// After a kernel launch: reports bad launch configurations without synchronising.
#define FFTCONV_CHECK_LAUNCH() FFTCONV_CUDA_CHECK(cudaGetLastError())

#define FFTCONV_ASSERT(cond, what)                                                 \
  do {                                                                             \
    if (!(cond)) ::fftconv::detail::throw_internal((what), __FILE__, __LINE__);    \
  } while (0)
