#include "host/host_conv.h"

#include <cstdio>
#include <string>

#include "geometry/fft_geometry.h"
#include "host/host_threads.h"
#include "tuning/host_heuristics.h"
#include "tuning/tuning_cache.h"

#if FFTCONV_WITH_FFTW
#include "host/host_fft_conv.h"
#endif

namespace fftconv::detail {

namespace {

#if FFTCONV_WITH_FFTW
std::string size_text(std::int64_t h, std::int64_t w) {
  return std::to_string(h) + "x" + std::to_string(w);
}

// The FFT size: forced by Options (at least the exact minimum) or the host cost model's.
FftGeometry host_geometry(const ConvDesc& d, const Options& o, std::string* reason) {
  if (o.fft_h == 0 && o.fft_w == 0) {
    *reason = "fft size: smallest smooth size at or above the exact period " +
              size_text(min_fft_h(d), min_fft_w(d));
    return choose_host_fft_geometry(d);
  }
  *reason = "fft size forced by options";
  return forced_fft_geometry(d, o.fft_h, o.fft_w);
}
#endif

}  // namespace

Support host_can_implement(const ConvDesc& d, const Options& o) {
  const auto no = [&](const std::string& why) {
    return Support::no(Status::kNotSupported, why + " [" + d.to_string() + "]");
  };
  if (d.dtype != DType::kF32) {
    return no(std::string("the cpu backend computes fp32 tensors only, not ") +
              dtype_name(d.dtype) + " (convert to fp32, or use Backend::kGpu)");
  }
  if (!o.gemm_kernel.empty()) {
    return no("Options::gemm_kernel '" + o.gemm_kernel +
              "' names a GPU GEMM tiling; the cpu backend has one GEMM of its own");
  }
#if !FFTCONV_WITH_FFTW
  return no(
      "this fftconv was built without the cpu backend: install FFTW3 single precision "
      "(Debian: libfftw3-dev) and reconfigure with -DFFTCONV_WITH_FFTW=ON");
#else
  return Support::yes();
#endif
}

std::unique_ptr<HostConv> make_host_conv(const ConvDesc& d, const Options& o, std::string* reason) {
  const Support s = host_can_implement(d, o);
  if (!s.ok()) throw Error(s.status, s.reason);
#if FFTCONV_WITH_FFTW
  std::string size_reason;
  const FftGeometry g = host_geometry(d, o, &size_reason);
  const int threads = host_thread_count();
  const bool measure = o.tuning != Tuning::kHeuristic;
  const std::string cache = tuning_cache_path(o);
  const std::string wisdom = measure && !cache.empty() ? cache + ".fftw-wisdom" : "";
  auto conv = std::make_unique<HostFftConv>(d, g, o.pass, threads, measure, wisdom);
  if (reason) {
    char buffers[48];
    std::snprintf(buffers, sizeof(buffers), "%.1f MiB", double(conv->buffer_bytes()) / (1 << 20));
    *reason = "cpu: fftw3f, " + std::to_string(threads) + " thread" + (threads == 1 ? "" : "s") +
              ", " + (measure ? "FFTW_MEASURE plans" : "FFTW_ESTIMATE plans") +
              (wisdom.empty() ? "" : " (wisdom " + wisdom + ")") + "; " + size_reason +
              "; host buffers " + buffers;
  }
  return conv;
#else
  (void)reason;
  throw Error(Status::kInternal, "host_can_implement accepted a build without FFTW");
#endif
}

}  // namespace fftconv::detail
