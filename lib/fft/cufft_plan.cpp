#include "fft/cufft_plan.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <cufftXt.h>
#include <dlfcn.h>

#include "core/check.h"
#include "fft/pad_load.h"
// Generated (lib/CMakeLists.txt): the LTO-IR of the pad callbacks and of the probe.
#include "fftconv_load_probe_fatbin.h"
#include "fftconv_pad_load_fatbin.h"

namespace fftconv::detail {

namespace {

/// A copy of embedded LTO-IR in 8-byte aligned memory (bin2c's arrays are aligned to bytes only).
std::vector<std::uint64_t> aligned_copy(const unsigned char* bytes, std::size_t n) {
  std::vector<std::uint64_t> v((n + 7) / 8, 0);
  std::memcpy(v.data(), bytes, n);
  return v;
}

const void* pad_load_fatbin() {
  static const std::vector<std::uint64_t> aligned =
      aligned_copy(fftconv_pad_load_fatbin, fftconv_pad_load_fatbinLength);
  return aligned.data();
}

constexpr const char* kLoadProbe = "fftconv_load_probe";  // lib/fft/load_probe_callback.cu

/// The version of the nvJitLink cuFFT has loaded to link callbacks ("13.0"), asked of the copy
/// already in the process (never loading one: cuFFT chooses which); "not loaded" otherwise.
std::string loaded_nvjitlink_version() {
  // Its soname carries the CUDA major version, as cuFFT's does not.
  const std::string soname = "libnvJitLink.so." + std::to_string(CUDART_VERSION / 1000);
  void* lib = dlopen(soname.c_str(), RTLD_LAZY | RTLD_NOLOAD);
  if (!lib) return "not loaded";
  using VersionFn = int (*)(unsigned*, unsigned*);
  const auto version = reinterpret_cast<VersionFn>(dlsym(lib, "nvJitLinkVersion"));
  unsigned major = 0, minor = 0;
  const bool ok = version && version(&major, &minor) == 0;
  dlclose(lib);
  return ok ? std::to_string(major) + "." + std::to_string(minor) : std::string("of unknown version");
}

/// cufftResult of making a small r2c plan with the probe callback (CUFFT_SUCCESS: cuFFT links LTO
/// callbacks here), tried once per process.
cufftResult probe_result() {
  static const cufftResult result = [] {
    cufftHandle h;
    if (cufftCreate(&h) != CUFFT_SUCCESS) return CUFFT_INTERNAL_ERROR;
    static const std::vector<std::uint64_t> probe =
        aligned_copy(fftconv_load_probe_fatbin, fftconv_load_probe_fatbinLength);
    cufftResult r = cufftXtSetJITCallback(h, kLoadProbe, probe.data(),
                                          fftconv_load_probe_fatbinLength, CUFFT_CB_LD_REAL,
                                          nullptr);
    if (r == CUFFT_SUCCESS) {
      std::size_t work = 0;
      r = cufftMakePlan2d(h, 16, 16, CUFFT_R2C, &work);  // the plainest plan there is
    }
    cufftDestroy(h);
    return r;
  }();
  return result;
}

}  // namespace

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

CufftPlan2d::CufftPlan2d(const FftGeometry& g, std::int64_t batch, const PadLoadCallback& load)
    : dir_(FftDirection::kR2C), load_callback_(true) {
  FFTCONV_CUFFT_CHECK(cufftCreate(&handle_));
  created_ = true;
  try {
    FFTCONV_CUFFT_CHECK(cufftSetAutoAllocation(handle_, 0));
    const char* name = load.dtype == DType::kF16    ? kPadLoadF16
                       : load.dtype == DType::kBF16 ? kPadLoadBF16
                                                    : kPadLoadF32;
    caller_info_ = const_cast<PadLoadInfo*>(load.info);
    // cuFFT reads the name and the LTO-IR when the plan is made: both are static.
    const cufftResult set =
        cufftXtSetJITCallback(handle_, name, pad_load_fatbin(), fftconv_pad_load_fatbinLength,
                              CUFFT_CB_LD_REAL, &caller_info_);
    if (set != CUFFT_SUCCESS) {
      throw Error(Status::kNotSupported, "cuFFT did not accept the pad load callback (cufftResult " +
                                             std::to_string(static_cast<int>(set)) + ")");
    }
    // The 32-bit planner, as cuFFT's callback examples use: the caller has checked that every
    // offset of the input layout fits in 32 bits (the callback's own indices), so do the sizes.
    FFTCONV_ASSERT(batch * g.real_plane_floats() < (std::int64_t{1} << 31),
                   "callback plan past 32-bit offsets");
    const auto i32 = [](std::int64_t v) { return static_cast<int>(v); };
    int n[2] = {i32(g.fft_h), i32(g.fft_w)};
    int real_embed[2] = {i32(g.fft_h), i32(g.pitch)};
    int cplx_embed[2] = {i32(g.fft_h), i32(g.half_w)};
    std::size_t work = 0;
    const cufftResult made =
        cufftMakePlanMany(handle_, 2, n, real_embed, 1, i32(g.real_plane_floats()), cplx_embed, 1,
                          i32(g.bins), CUFFT_R2C, i32(batch), &work);
    if (made != CUFFT_SUCCESS) {
      int cufft_version = 0;
      cufftGetVersion(&cufft_version);
      const cufftResult probe = probe_result();
      const std::string versions =
          "cuFFT " + std::to_string(cufft_version) + ", nvJitLink " + loaded_nvjitlink_version() +
          ", callbacks compiled by CUDA " + std::to_string(CUDART_VERSION / 1000) + "." +
          std::to_string(CUDART_VERSION % 1000 / 10);
      throw Error(Status::kNotSupported,
                  probe != CUFFT_SUCCESS
                      ? std::string(kNoLtoCallbacks) + " (a trivial load callback: cufftResult " +
                            std::to_string(static_cast<int>(probe)) + "; " + versions + ")"
                      : "cuFFT could not make an r2c plan with the pad load callback, though it "
                        "links a trivial one (cufftResult " +
                            std::to_string(static_cast<int>(made)) + "; " + versions + ")");
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

void CufftPlan2d::exec_from(const void* src, void* spectrum, void* work,
                            cudaStream_t stream) const {
  FFTCONV_ASSERT(load_callback_, "exec_from: not a load-callback plan");
  FFTCONV_CUFFT_CHECK(cufftSetStream(handle_, stream));
  if (work_size_ > 0) FFTCONV_CUFFT_CHECK(cufftSetWorkArea(handle_, work));
  // The callback reads the source through cuFFT's input pointer; cuFFT itself never does.
  FFTCONV_CUFFT_CHECK(cufftExecR2C(handle_, static_cast<cufftReal*>(const_cast<void*>(src)),
                                   static_cast<cufftComplex*>(spectrum)));
}

void CufftPlan2d::exec(void* data, void* work, cudaStream_t stream) const {
  FFTCONV_ASSERT(!load_callback_, "exec: a load-callback plan runs through exec_from");
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
