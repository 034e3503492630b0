// Inputs of the CPU tests that compare the FFT pipelines with the direct oracle exactly.
#pragma once

#include <cstddef>
#include <random>
#include <vector>

#include "fftconv/fftconv.hpp"

namespace fftconv::detail {

/// Nonzero integers: every sum is exact in double, so equality is exact, and the range is wide
/// enough that a wrong index does not reproduce the right sum by coincidence.
inline std::vector<float> nonzero_ints(std::size_t count, std::mt19937& gen) {
  std::uniform_int_distribution<int> dist(1, 1000), sign(0, 1);
  std::vector<float> v(count);
  for (float& e : v) e = float(dist(gen) * (sign(gen) ? 1 : -1));
  return v;
}

/// A small one-image, one-channel descriptor: sizes 1-14, kernels 1-6, padding 0-5, strides and
/// dilations 1-3 on each axis, drawn in that order. It may be invalid; callers skip those.
inline ConvDesc random_small_desc(std::mt19937& gen) {
  std::uniform_int_distribution<int> size(1, 14), ks(1, 6), pads(0, 5), strides(1, 3), dils(1, 3);
  ConvDesc d;
  d.h = size(gen); d.w = size(gen); d.r = ks(gen); d.s = ks(gen);
  d.pad_h = pads(gen); d.pad_w = pads(gen);
  d.stride_h = strides(gen); d.stride_w = strides(gen);
  d.dil_h = dils(gen); d.dil_w = dils(gen);
  return d;
}

}  // namespace fftconv::detail
