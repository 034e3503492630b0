// Inputs of the CPU tests that compare the FFT pipelines with the direct oracle exactly (their
// values: testing::nonzero_ints).
#pragma once

#include "testing/testing.h"

namespace fftconv::detail {

/// Descriptors of one image, one channel and one filter for the single-plane emulations (drawn
/// by testing::random_desc): sizes 1-14, kernels 1-6, strides and dilations 1-3, padding up to
/// the kernel (in a fifth of them up to 6 beyond it), outputs that read padding alone.
inline testing::RandomDescOptions one_plane_shapes() {
  testing::RandomDescOptions o = testing::RandomDescOptions::small();
  o.single_plane = true;
  o.max_extent = 14;
  o.max_kernel = 6;
  return o;
}

}  // namespace fftconv::detail
