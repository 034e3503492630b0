// The one owning device allocation of the code base: the library's plan-time scratch and kept
// filters, and (through lib/testing) the tests, the driver and the benchmarks.
#pragma once

#include <cstddef>

namespace fftconv::detail {

/// cudaMalloc'd bytes freed on destruction; movable, not copyable. A size of 0 holds no memory.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  /// Allocates on the current device; throws Error(kOutOfMemory) naming the bytes when it cannot.
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return ptr_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  std::size_t bytes() const { return bytes_; }
  explicit operator bool() const { return ptr_ != nullptr; }
  /// Frees the memory (without synchronising: the caller orders it after its last use).
  void reset() noexcept;

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace fftconv::detail
