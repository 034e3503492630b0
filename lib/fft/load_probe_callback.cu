// A trivial cuFFT LTO load callback (the input as it is), compiled to LTO-IR apart from the pad
// callbacks: when a plan with the pad callback cannot be made, one with this tells whether cuFFT
// on the machine links LTO callbacks at all (cufft_plan.cpp).
#include <cufft.h>

extern "C" __device__ cufftReal fftconv_load_probe(void* data_in, unsigned long long offset, void*,
                                                   void*) {
  return static_cast<const cufftReal*>(data_in)[offset];
}
