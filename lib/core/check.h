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

#define FFTCONV_CUDA_CHECK(expr)                                                   \
  do {                                                                             \
    const cudaError_t fftconv_err_ = (expr);                                       \
    if (fftconv_err_ != cudaSuccess)                                               \
      ::fftconv::detail::throw_cuda(fftconv_err_, #expr, __FILE__, __LINE__);      \
  } while (0)

#define FFTCONV_CUFFT_CHECK(expr)                                                  \
  do {                                                                             \
    const cufftResult fftconv_err_ = (expr);                                       \
    if (fftconv_err_ != CUFFT_SUCCESS)                                             \
      ::fftconv::detail::throw_cufft(fftconv_err_, #expr, __FILE__, __LINE__);     \
  } while (0)

// After a kernel launch: reports bad launch configurations without synchronising.
#define FFTCONV_CHECK_LAUNCH() FFTCONV_CUDA_CHECK(cudaGetLastError())

#define FFTCONV_ASSERT(cond, what)                                                 \
  do {                                                                             \
    if (!(cond)) ::fftconv::detail::throw_internal((what), __FILE__, __LINE__);    \
  } while (0)
