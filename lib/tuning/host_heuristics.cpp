#include "tuning/host_heuristics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "host/host_separable.h"

namespace fftconv::detail {

const double kHostSeparableFlopCost = 0.8;

bool host_separable_pays(const ConvDesc& d, Pass pass, int rank, std::int64_t fft_h,
                         std::int64_t fft_w, std::string* why) {
  const double sep = 2.0 * HostSeparable::macs(d, pass, rank) * kHostSeparableFlopCost;
  const double points = double(fft_h) * double(fft_w);
  const double in_planes = double(d.n) * (pass == Pass::kBackwardData ? d.k : d.c);
  const double out_planes = double(d.n) * (pass == Pass::kBackwardData ? d.c : d.k);
  const double bins = double(fft_h) * double(fft_w / 2 + 1);
  const double fft = (in_planes + out_planes) * 2.5 * points * std::log2(std::max(points, 2.0)) +
                     8.0 * double(d.n) * double(d.k) * double(d.c_per_group()) * bins;
  if (why) {
    char buf[160];
    std::snprintf(buf, sizeof(buf), "1-D passes %.3g weighted flops against the fft's %.3g",
                  sep, fft);
    *why = buf;
  }
  return sep < fft;
}

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
