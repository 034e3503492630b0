// The device query of the public API (device.hpp), below everything that asks it.
#include <cuda_runtime_api.h>

#include "fftconv/device.hpp"

namespace fftconv {

int device_count() noexcept {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the error so later calls are not affected
    return 0;
  }
  return count;
}

}  // namespace fftconv
