#include "fft/cufft_plan.h"

#include "core/check.h"

namespace fftconv::detail {

CufftPlan2d::CufftPlan2d(FftDirection dir, const FftGeometry& g, std::int64_t batch) : dir_(dir) {
  FFTCONV_CUFFT_CHECK(cufftCreate(&handle_));
  created_ = true;
  try {
    FFTCONV_CUFFT_CHECK(cufftSetAutoAllocation(handle_, 0));
    long long n[2] = {g.fft_h, g.fft_w};
    long long real_embed[2] = {g.fft_h, g.pitch};
    long long cplx_embed[2] = {g.fft_h, g.half_w};
    const long long real_dist = g.fft_h * g.pitch;
    const long long cplx_dist = g.bins;
    std::size_t work = 0;
    if (dir == FftDirection::kR2C) {
      FFTCONV_CUFFT_CHECK(cufftMakePlanMany64(handle_, 2, n, real_embed, 1, real_dist, cplx_embed,
                                              1, cplx_dist, CUFFT_R2C, batch, &work));
    } else {
      FFTCONV_CUFFT_CHECK(cufftMakePlanMany64(handle_, 2, n, cplx_embed, 1, cplx_dist, real_embed,
                                              1, real_dist, CUFFT_C2R, batch, &work));
    }
    work_size_ = work;
  } catch (...) {
    cufftDestroy(handle_);
    throw;
  }
}

CufftPlan2d::~CufftPlan2d() {
  if (created_) cufftDestroy(handle_);
}

void CufftPlan2d::exec(void* data, void* work, cudaStream_t stream) const {
  FFTCONV_CUFFT_CHECK(cufftSetStream(handle_, stream));
  if (work_size_ > 0) FFTCONV_CUFFT_CHECK(cufftSetWorkArea(handle_, work));
  if (dir_ == FftDirection::kR2C) {
    FFTCONV_CUFFT_CHECK(cufftExecR2C(handle_, static_cast<cufftReal*>(data),
                                     static_cast<cufftComplex*>(data)));
  } else {
    FFTCONV_CUFFT_CHECK(cufftExecC2R(handle_, static_cast<cufftComplex*>(data),
                                     static_cast<cufftReal*>(data)));
  }
}

}  // namespace fftconv::detail
