#include "core/device_buffer.h"

#include <string>
#include <utility>

#include <cuda_runtime_api.h>

#include "fftconv/status.hpp"

namespace fftconv::detail {

DeviceBuffer::DeviceBuffer(std::size_t bytes) {
  if (bytes == 0) return;
  const cudaError_t err = cudaMalloc(&ptr_, bytes);
  if (err != cudaSuccess) {
    cudaGetLastError();  // an allocation failure leaves no sticky error behind
    ptr_ = nullptr;
    throw Error(
        err == cudaErrorMemoryAllocation ? Status::kOutOfMemory : Status::kCudaError,
        "cudaMalloc of " + std::to_string(bytes) + " bytes failed: " + cudaGetErrorString(err));
  }
  bytes_ = bytes;
}

DeviceBuffer::~DeviceBuffer() { reset(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept
    : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    reset();
    ptr_ = std::exchange(o.ptr_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

void DeviceBuffer::reset() noexcept {
  if (ptr_) cudaFree(ptr_);
  ptr_ = nullptr;
  bytes_ = 0;
}

}  // namespace fftconv::detail
