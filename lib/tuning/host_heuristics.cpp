#include "tuning/host_heuristics.h"

#include <algorithm>

namespace fftconv::detail {

FftGeometry choose_host_fft_geometry(const ConvDesc& d) {
  return make_fft_geometry(d, next_smooth(min_fft_h(d)), next_smooth(min_fft_w(d)));
}

std::int64_t host_bin_block(std::int64_t n, std::int64_t c_per_group) {
  constexpr std::int64_t kComplexBytes = 8;
  const std::int64_t per_bin = kComplexBytes * (n * c_per_group + c_per_group);
  const std::int64_t fit = kHostGemmCacheBytes / std::max<std::int64_t>(per_bin, 1);
  return std::clamp(fit / kHostMinBinBlock * kHostMinBinBlock, kHostMinBinBlock, kHostMaxBinBlock);
}

}  // namespace fftconv::detail
