// FFT sizes and buffer geometry of the full-image FFT path.
#pragma once

#include <cstdint>
#include <vector>

#include "fftconv/conv_desc.hpp"
#include "geometry/index_math.h"

namespace fftconv::detail {

/// True when n >= 1 has no prime factor other than 2, 3, 5, 7 (sizes cuFFT handles fastest).
bool is_smooth(std::int64_t n);
/// Smallest 2-3-5-7-smooth size >= n (n >= 1).
std::int64_t next_smooth(std::int64_t n);
/// Smooth sizes in [lo, hi], ascending.
std::vector<std::int64_t> smooth_sizes(std::int64_t lo, std::int64_t hi);

/// Buffer geometry for one FFT size. Real planes are stored with a row pitch of 2*(fft_w/2+1)
/// floats so that the r2c and c2r transforms run in place.
struct FftGeometry {
  std::int64_t fft_h = 0, fft_w = 0;
  std::int64_t half_w = 0;   ///< fft_w/2 + 1 complex columns
  std::int64_t pitch = 0;    ///< 2*half_w floats per real row
  std::int64_t bins = 0;     ///< fft_h * half_w frequency bins per plane
  std::int64_t min_h = 0, min_w = 0;  ///< smallest exact periods (min_fft_extent)

  std::int64_t real_plane_floats() const { return fft_h * pitch; }
};

FftGeometry make_fft_geometry(const ConvDesc& d, std::int64_t fft_h, std::int64_t fft_w);

/// Smallest exact periods of a descriptor along h and w.
std::int64_t min_fft_h(const ConvDesc& d);
std::int64_t min_fft_w(const ConvDesc& d);

/// Candidate sizes along one axis: smooth sizes from `min` up to kCandidateSlack * min (at most
/// kMaxCandidates of them, always including next_smooth(min)).
std::vector<std::int64_t> fft_size_candidates(std::int64_t min);

}  // namespace fftconv::detail
