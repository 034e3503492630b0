#include "core/device_info.h"

#include <cuda_runtime_api.h>

namespace fftconv::detail {

int current_sm_count() {
  int dev = 0, sms = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || sms < 1) {
    (void)cudaGetLastError();
    return 132;
  }
  return sms;
}


}  // namespace fftconv::detail
