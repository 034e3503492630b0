#include "core/check.h"

#include <cstring>

namespace fftconv::detail {

namespace {
std::string where(const char* expr, const char* file, int line) {
  const char* base = std::strrchr(file, '/');
  return std::string(expr) + " at " + (base ? base + 1 : file) + ":" + std::to_string(line);
}
}  // namespace

void throw_cuda(cudaError_t err, const char* expr, const char* file, int line) {
  // A failed call also leaves its error as the thread's last error; clear it (a sticky error
  // stays anyway), so that the next launch check does not report this failure as its own.
  cudaGetLastError();
  Status st = Status::kCudaError;
  if (err == cudaErrorMemoryAllocation) st = Status::kOutOfMemory;
  if (err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver ||
      err == cudaErrorInvalidDevice) {
    st = Status::kNoDevice;
  }
  throw Error(st, std::string(cudaGetErrorName(err)) + " (" + cudaGetErrorString(err) +
                      ") from " + where(expr, file, line));
}

const char* cufft_result_name(cufftResult r) noexcept {
  switch (r) {
    case CUFFT_SUCCESS: return "CUFFT_SUCCESS";
    case CUFFT_INVALID_PLAN: return "CUFFT_INVALID_PLAN";
    case CUFFT_ALLOC_FAILED: return "CUFFT_ALLOC_FAILED";
    case CUFFT_INVALID_TYPE: return "CUFFT_INVALID_TYPE";
    case CUFFT_INVALID_VALUE: return "CUFFT_INVALID_VALUE";
    case CUFFT_INTERNAL_ERROR: return "CUFFT_INTERNAL_ERROR";
    case CUFFT_EXEC_FAILED: return "CUFFT_EXEC_FAILED";
    case CUFFT_SETUP_FAILED: return "CUFFT_SETUP_FAILED";
    case CUFFT_INVALID_SIZE: return "CUFFT_INVALID_SIZE";
    case CUFFT_UNALIGNED_DATA: return "CUFFT_UNALIGNED_DATA";
    case CUFFT_INVALID_DEVICE: return "CUFFT_INVALID_DEVICE";
    case CUFFT_NO_WORKSPACE: return "CUFFT_NO_WORKSPACE";
    case CUFFT_NOT_IMPLEMENTED: return "CUFFT_NOT_IMPLEMENTED";
    case CUFFT_NOT_SUPPORTED: return "CUFFT_NOT_SUPPORTED";
    default: return "CUFFT_UNKNOWN_ERROR";
  }
}

void throw_cufft(cufftResult err, const char* expr, const char* file, int line) {
  const Status st = err == CUFFT_ALLOC_FAILED ? Status::kOutOfMemory : Status::kCufftError;
  throw Error(st, std::string(cufft_result_name(err)) + " from " + where(expr, file, line));
}

void throw_internal(const std::string& what, const char* file, int line) {
  throw Error(Status::kInternal, what + " at " + where("", file, line));
}

}  // namespace fftconv::detail
