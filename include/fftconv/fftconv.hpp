// fftconv: 2D convolution with large filters through the FFT. Umbrella header of the C++ API.
#pragma once

#include "fftconv/conv_desc.hpp"
#include "fftconv/device.hpp"
#include "fftconv/log.hpp"
#include "fftconv/options.hpp"
#include "fftconv/plan.hpp"
#include "fftconv/status.hpp"

namespace fftconv {

constexpr int kVersionMajor = 0;
constexpr int kVersionMinor = 1;
constexpr int kVersionPatch = 0;

}  // namespace fftconv
