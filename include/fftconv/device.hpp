// The devices fftconv can run on.
#pragma once

#include "fftconv/export.h"

namespace fftconv {

/// Number of CUDA devices that can run fftconv (0 when none or no driver).
FFTCONV_API int device_count() noexcept;

}  // namespace fftconv
