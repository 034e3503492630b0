// Planning constants of the host (FFTW) backend, each with the measurement behind it.
#pragma once

#include <cstdint>
#include <string>

#include "fftconv/conv_desc.hpp"
#include "fftconv/options.hpp"
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

/// Whether a kept filter whose planes have rank `rank` runs cheaper on the host as r pairs of 1-D
/// passes (HostSeparable) than as the FFT of size fft_h x fft_w with its kept spectrum. Both
/// costs in flops: 2 per multiply-add of the passes, against 2.5 P log2 P per real transform of P
/// points (input and output planes) and 8 per complex multiply-add of the pointwise product;
/// the passes' flops are weighted by kHostSeparableFlopCost (their time per flop over the FFT
/// path's). `why` (may be null) receives both estimates.
///
/// kHostSeparableFlopCost = 0.8: on the 2-core build machine (2 threads; bench/host_separable.py,
/// a Gaussian and a random filter of one shape kept in one process, alternating, median of 15
/// calls: data/results/cpu-2core/2026-12-02-separable) the two paths' times per modelled flop
/// were in the ratio 0.72 on a 2048x2048 RGB photo with 45x45 (separable 137.3 ms, fft 126.6),
/// 1.05 with 15x15 (70.0 against 132.9 ms: far fewer flops), 0.89 on 64 maps of 96x96 with
/// 45x45 (6.40 against 6.42), 0.67 on 68 depthwise 96x96 maps (5.71 against 7.57), 0.92 on 64
/// depthwise 56x56 maps with 31x31 (1.49 against 2.31) and 0.73 on 3 x 512x512 with 45x45 (14.56
/// against 12.67). At 0.8 each row takes the faster path, or one within 1% (64 maps of 96x96);
/// at 0.6 the two 45x45 photo-sized rows would take the slower one.
bool host_separable_pays(const ConvDesc& d, Pass pass, int rank, std::int64_t fft_h,
                         std::int64_t fft_w, std::string* why);
extern const double kHostSeparableFlopCost;

/// Least work (floats written or multiply-adds) worth a thread of its own: below this a stage
/// runs on the calling thread, since starting a thread costs tens of microseconds.
constexpr std::int64_t kHostMinWorkPerThread = 1 << 16;

}  // namespace fftconv::detail
