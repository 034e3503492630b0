// Planning constants of the host (FFTW) backend, each with the measurement behind it.
#pragma once

#include <cstdint>

#include "fftconv/conv_desc.hpp"
#include "geometry/fft_geometry.h"

namespace fftconv::detail {

/// FFT size of the host backend: the smallest 2-3-5-7-smooth size at or above the exact circular
/// period on each axis. On the 2-core build machine FFTW's r2c+c2r times for the smooth sizes up
/// to +10% above that differed less than their run-to-run spread (plan_many over 3 planes,
/// 2 threads, FFTW_ESTIMATE, median of 5, three repetitions: 2100 113-277 ms, 2160 173-212 ms,
/// 2240 146-156 ms, 2304 162-178 ms), so no larger size earned its extra area and memory.
FftGeometry choose_host_fft_geometry(const ConvDesc& d);

/// Bins of the per-frequency GEMM handled at a time: the loop runs filters outside images, so a
/// group's input spectra for the block (n * c_per_group planes) are re-read for every filter and
/// should stay in a core's L2 (kHostGemmCacheBytes); between kHostMinBinBlock and
/// kHostMaxBinBlock bins, a multiple of kHostMinBinBlock.
std::int64_t host_bin_block(std::int64_t n, std::int64_t c_per_group);

/// L2 bytes the GEMM's reused operands may take (half of a 512 KiB L2, common on x86 cores).
constexpr std::int64_t kHostGemmCacheBytes = 256 << 10;
constexpr std::int64_t kHostMinBinBlock = 16;
constexpr std::int64_t kHostMaxBinBlock = 256;

/// Least work (floats written or multiply-adds) worth a thread of its own: below this a stage
/// runs on the calling thread, since starting a thread costs tens of microseconds.
constexpr std::int64_t kHostMinWorkPerThread = 1 << 16;

}  // namespace fftconv::detail
