// RAII cuFFT plan for batched 2D real transforms in the in-place layout of FftGeometry.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>
#include <cufft.h>

#include "fftconv/conv_desc.hpp"
#include "geometry/fft_geometry.h"

namespace fftconv::detail {

enum class FftDirection { kR2C, kC2R };

/// A batched 2D r2c or c2r plan over `batch` planes laid out as FftGeometry says (real rows of
/// `pitch` floats, complex rows of `half_w`), transforming in place. cuFFT's scratch is not
/// allocated by cuFFT: the caller passes it to exec() (part of the plan's workspace).
struct PadLoadInfo;

/// How a callback plan's failure begins where cuFFT on this machine makes no plan with any LTO
/// callback, not even a trivial one (the environment, not the pad callback).
constexpr const char* kNoLtoCallbacks = "cuFFT here makes no plan with an LTO callback";

/// The pad stage as a load callback of an r2c plan (lib/fft/pad_load.h): the plan reads the
/// caller's tensor of `dtype` through `info` (device memory that outlives the plan).
struct PadLoadCallback {
  DType dtype = DType::kF32;
  const PadLoadInfo* info = nullptr;
};

class CufftPlan2d {
 public:
  CufftPlan2d(FftDirection dir, const FftGeometry& g, std::int64_t batch);
  /// An r2c plan whose input is a source tensor read through the pad load callback (cuFFT links
  /// it at plan time, which takes longer than a plain plan); run it with exec_from(). Every
  /// offset of its `batch` planes must fit in 32 bits (the callback's indices; the caller checks).
  /// Throws Error(kNotSupported) where cuFFT cannot link the callback.
  CufftPlan2d(const FftGeometry& g, std::int64_t batch, const PadLoadCallback& load);
  ~CufftPlan2d();
  CufftPlan2d(const CufftPlan2d&) = delete;
  CufftPlan2d& operator=(const CufftPlan2d&) = delete;

  std::size_t work_size() const { return work_size_; }
  /// Enqueues the transform of `data` on `stream`; `work` holds work_size() bytes.
  void exec(void* data, void* work, cudaStream_t stream) const;
  /// Callback plans: transforms the padded planes of `src` (never written) into `spectrum`.
  void exec_from(const void* src, void* spectrum, void* work, cudaStream_t stream) const;

 private:
  cufftHandle handle_ = 0;
  bool created_ = false;
  FftDirection dir_;
  bool load_callback_ = false;
  void* caller_info_ = nullptr;  ///< the callback's parameters (device), as cuFFT was given it
  std::size_t work_size_ = 0;
};

}  // namespace fftconv::detail
