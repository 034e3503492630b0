// A kernel launch, as the programmatic dependent of the kernel before it on the stream where
// asked (sm_90: its blocks may start once every block of that kernel has allowed it, with
// griddepcontrol.launch_dependents, or ended, and wait for its whole grid with
// griddepcontrol.wait before they read what it wrote). CUDA sources only.
#pragma once

#include <cstddef>

#include <cuda_runtime.h>

#include "core/check.h"

namespace fftconv::detail {

template <class Kernel, class... Args>
void launch_kernel(bool dependent, dim3 grid, dim3 block, std::size_t smem, cudaStream_t stream,
                   Kernel kernel, const Args&... args) {
  if (!dependent) {
    kernel<<<grid, block, smem, stream>>>(args...);
    return;
  }
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  cudaLaunchAttribute attribute = {};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  config.attrs = &attribute;
  config.numAttrs = 1;
  FFTCONV_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, args...));
}

/// Whether a kernel launched after `kernel` (a __global__ function of this library) may be its
/// programmatic dependent on the current device: the device runs such launches (sm_90 and up)
/// and `kernel` was compiled for them (PTX of compute_90 or later: a build for older
/// architectures JIT-compiled on the device lacks its griddepcontrol instructions).
inline bool can_launch_dependent(const void* kernel) {
  int dev = 0, major = 0;
  cudaFuncAttributes attr = {};
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
      cudaFuncGetAttributes(&attr, kernel) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return major >= 9 && attr.ptxVersion >= 90;
}

}  // namespace fftconv::detail
