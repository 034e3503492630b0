// RAII cuFFT plan for batched 2D real transforms in the in-place layout of FftGeometry.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>
#include <cufft.h>

#include "geometry/fft_geometry.h"

namespace fftconv::detail {

enum class FftDirection { kR2C, kC2R };

/// A batched 2D r2c or c2r plan over `batch` planes laid out as FftGeometry says (real rows of
/// `pitch` floats, complex rows of `half_w`), transforming in place. cuFFT's scratch is not
/// allocated by cuFFT: the caller passes it to exec() (part of the plan's workspace).
class CufftPlan2d {
 public:
  CufftPlan2d(FftDirection dir, const FftGeometry& g, std::int64_t batch);
  ~CufftPlan2d();
  CufftPlan2d(const CufftPlan2d&) = delete;
  CufftPlan2d& operator=(const CufftPlan2d&) = delete;

  std::size_t work_size() const { return work_size_; }
  /// Enqueues the transform of `data` on `stream`; `work` holds work_size() bytes.
  void exec(void* data, void* work, cudaStream_t stream) const;

 private:
  cufftHandle handle_ = 0;
  bool created_ = false;
  FftDirection dir_;
  std::size_t work_size_ = 0;
};

}  // namespace fftconv::detail
