// The devices fftconv can run on.
#pragma once

namespace fftconv {

/// Number of CUDA devices that can run fftconv (0 when none or no driver).
int device_count() noexcept;

}  // namespace fftconv
