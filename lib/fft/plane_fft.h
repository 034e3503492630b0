// The FFT path's own plane transforms (Options::own_fft): the zero-pad and the r2c of each
// plane in one kernel, and the c2r and the clip in another, where the staged path runs a pad
// kernel, cuFFT's r2c (two or more passes over memory for a 2-D plane), cuFFT's c2r and a clip
// kernel. One block transforms one plane in shared memory (lib/fft/plane_program.cuh), so the
// planes cross global memory once each way: the source tensor is read and the spectrum written,
// the result spectrum read and the output written.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <cuda_runtime_api.h>

#include "fftconv/conv_desc.hpp"
#include "geometry/fft_geometry.h"
#include "stages/stages.h"

namespace fftconv::detail {

/// Whether the own plane kernels take an FFT size (host only; no device needed): fh and fw split
/// into passes of radix 2 to 16, and a plane fits one block's threads and shared memory.
bool plane_fft_supported(std::int64_t fft_h, std::int64_t fft_w, std::string* why);

class PlaneFft {
 public:
  /// The transforms of g's FFT size on the current device; null, and why in *why, where the
  /// kernels do not take it (a prime factor above 7, a plane over one block's threads or
  /// shared memory).
  static std::unique_ptr<PlaneFft> make(const FftGeometry& g, std::string* why);
  ~PlaneFft();

  /// Zero-pad and r2c: every destination plane of the segments (as launch_pad takes them) gets
  /// its spectrum, in cuFFT's layout and scale, where launch_pad would put the padded plane.
  void forward(const PadSegment* segments, int count, DType dtype, const FftGeometry& g,
               cudaStream_t stream) const;
  /// c2r of the result spectra (args.src: fh x (fw/2 + 1) complex values per result plane) and
  /// the clip, as launch_clip does it after cuFFT's c2r; dtype is y's.
  void inverse(const ClipArgs& args, DType dtype, const FftGeometry& g, cudaStream_t stream) const;

  /// For describe(): the passes, threads and shared memory of a block.
  std::string describe() const;

 private:
  struct Impl;
  explicit PlaneFft(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace fftconv::detail
