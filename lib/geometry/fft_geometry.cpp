#include "geometry/fft_geometry.h"

#include <algorithm>

#include "fftconv/status.hpp"

namespace fftconv::detail {

namespace {
// A slightly larger size can win when it has friendlier factors; beyond +30% it never does in
// the cost model (the area term grows faster than any radix penalty shrinks).
constexpr double kCandidateSlack = 1.3;
constexpr std::size_t kMaxCandidates = 8;
}  // namespace

bool is_smooth(std::int64_t n) {
  if (n < 1) return false;
  for (std::int64_t p : {2, 3, 5, 7}) {
    while (n % p == 0) n /= p;
  }
  return n == 1;
}

std::int64_t next_smooth(std::int64_t n) {
  if (n < 1) n = 1;
  while (!is_smooth(n)) ++n;
  return n;
}

std::vector<std::int64_t> smooth_sizes(std::int64_t lo, std::int64_t hi) {
  std::vector<std::int64_t> out;
  for (std::int64_t n = next_smooth(lo); n <= hi; n = next_smooth(n + 1)) out.push_back(n);
  return out;
}

std::vector<std::int64_t> fft_size_candidates(std::int64_t min) {
  const std::int64_t first = next_smooth(min);
  const auto hi = static_cast<std::int64_t>(static_cast<double>(min) * kCandidateSlack);
  std::vector<std::int64_t> out = smooth_sizes(first, hi > first ? hi : first);
  if (out.size() > kMaxCandidates) out.resize(kMaxCandidates);
  return out;
}

std::int64_t min_fft_h(const ConvDesc& d) {
  return min_fft_extent(d.h, d.pad_h, d.eff_r(), d.stride_h, d.out_h());
}

std::int64_t min_fft_w(const ConvDesc& d) {
  return min_fft_extent(d.w, d.pad_w, d.eff_s(), d.stride_w, d.out_w());
}

int fused_extent(std::int64_t min_extent) {
  for (const int f : kFusedSizes) {
    if (f >= min_extent) return f;
  }
  return -1;
}

FftGeometry make_fft_geometry(const ConvDesc& d, std::int64_t fft_h, std::int64_t fft_w) {
  FftGeometry g;
  g.min_h = min_fft_h(d);
  g.min_w = min_fft_w(d);
  if (fft_h < g.min_h || fft_w < g.min_w) {
    throw Error(Status::kInternal, "FFT size " + std::to_string(fft_h) + "x" +
                                       std::to_string(fft_w) + " below the exact minimum " +
                                       std::to_string(g.min_h) + "x" + std::to_string(g.min_w));
  }
  g.fft_h = fft_h;
  g.fft_w = fft_w;
  g.half_w = fft_w / 2 + 1;
  g.pitch = 2 * g.half_w;
  g.bins = fft_h * g.half_w;
  g.tile_out_h = d.out_h();
  g.tile_out_w = d.out_w();
  return g;
}

FftGeometry forced_fft_geometry(const ConvDesc& d, std::int64_t fft_h, std::int64_t fft_w) {
  const std::int64_t min_h = min_fft_h(d), min_w = min_fft_w(d);
  if (fft_h < min_h || fft_w < min_w) {
    throw Error(Status::kInvalidArgument,
                "Options FFT size " + std::to_string(fft_h) + "x" + std::to_string(fft_w) +
                    " is below the exact minimum " + std::to_string(min_h) + "x" +
                    std::to_string(min_w) + " of " + d.to_string());
  }
  return make_fft_geometry(d, fft_h, fft_w);
}

std::int64_t tile_out_extent(std::int64_t fft, std::int64_t eff_k, std::int64_t stride,
                             std::int64_t out) {
  if (fft < eff_k || stride < 1) return 0;
  return std::min(out, (fft - eff_k) / stride + 1);
}

FftGeometry make_tiled_geometry(const ConvDesc& d, std::int64_t fft_h, std::int64_t fft_w) {
  FftGeometry g;
  g.min_h = min_fft_h(d);
  g.min_w = min_fft_w(d);
  g.tile_out_h = tile_out_extent(fft_h, d.eff_r(), d.stride_h, d.out_h());
  g.tile_out_w = tile_out_extent(fft_w, d.eff_s(), d.stride_w, d.out_w());
  if (g.tile_out_h < 1 || g.tile_out_w < 1) {
    throw Error(Status::kInvalidArgument,
                "tile " + std::to_string(fft_h) + "x" + std::to_string(fft_w) +
                    " is smaller than the dilated kernel " + std::to_string(d.eff_r()) + "x" +
                    std::to_string(d.eff_s()) + " of " + d.to_string());
  }
  g.tiled = true;
  g.fft_h = fft_h;
  g.fft_w = fft_w;
  g.half_w = fft_w / 2 + 1;
  g.pitch = 2 * g.half_w;
  g.bins = fft_h * g.half_w;
  g.tiles_h = (d.out_h() + g.tile_out_h - 1) / g.tile_out_h;
  g.tiles_w = (d.out_w() + g.tile_out_w - 1) / g.tile_out_w;
  return g;
}

}  // namespace fftconv::detail
