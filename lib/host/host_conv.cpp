#include "host/host_conv.h"

#include <cstdio>
#include <string>

#include "geometry/fft_geometry.h"
#include "host/host_threads.h"
#include "tuning/host_heuristics.h"

#if FFTCONV_WITH_FFTW
#include "host/host_fft_conv.h"
#endif

namespace fftconv::detail {

namespace {

[[noreturn]] void not_supported(const ConvDesc& d, const std::string& why) {
  throw Error(Status::kNotSupported, why + " [" + d.to_string() + "]");
}

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
  const std::int64_t min_h = min_fft_h(d), min_w = min_fft_w(d);
  if (o.fft_h < min_h || o.fft_w < min_w) {
    throw Error(Status::kInvalidArgument, "Options FFT size " + size_text(o.fft_h, o.fft_w) +
                                              " is below the exact minimum " +
                                              size_text(min_h, min_w) + " of " + d.to_string());
  }
  *reason = "fft size forced by options";
  return make_fft_geometry(d, o.fft_h, o.fft_w);
}
#endif

}  // namespace

Backend resolve_backend(Backend requested) {
  switch (requested) {
    case Backend::kGpu:
    case Backend::kCpu:
      return requested;
    case Backend::kAuto:
      return device_count() > 0 ? Backend::kGpu : Backend::kCpu;
  }
  throw Error(Status::kInvalidArgument, "Options::backend has the invalid value " +
                                            std::to_string(static_cast<int>(requested)));
}

std::unique_ptr<HostConv> make_host_conv(const ConvDesc& d, const Options& o, PlanInfo* info) {
  if (d.dtype != DType::kF32) {
    not_supported(d, std::string("the cpu backend computes fp32 tensors only, not ") +
                         dtype_name(d.dtype) + " (convert to fp32, or use Backend::kGpu)");
  }
  if (o.algo == Algo::kCudnn || o.algo == Algo::kFftTiled) {
    not_supported(d, std::string("algorithm ") + algo_name(o.algo) +
                         " runs on the GPU only; the cpu backend runs the full-image FFT "
                         "(Algo::kAuto or Algo::kFft)");
  }
  if (!o.gemm_kernel.empty()) {
    not_supported(d, "Options::gemm_kernel '" + o.gemm_kernel +
                         "' names a GPU GEMM tiling; the cpu backend has one GEMM of its own");
  }
#if FFTCONV_WITH_FFTW
  std::string size_reason;
  const FftGeometry g = host_geometry(d, o, &size_reason);
  const int threads = host_thread_count();
  const bool measure = o.tuning != Tuning::kHeuristic;
  auto conv = std::make_unique<HostFftConv>(d, g, o.pass, threads, measure);
  if (info) {
    conv->fill_info(*info);
    char buffers[48];
    std::snprintf(buffers, sizeof(buffers), "%.1f MiB", double(conv->buffer_bytes()) / (1 << 20));
    info->reason = "cpu: fftw3f, " + std::to_string(threads) + " thread" +
                   (threads == 1 ? "" : "s") + ", " +
                   (measure ? "FFTW_MEASURE plans" : "FFTW_ESTIMATE plans") + "; " + size_reason +
                   "; host buffers " + buffers;
  }
  return conv;
#else
  (void)info;
  not_supported(d,
                "this fftconv was built without the cpu backend: install FFTW3 single precision "
                "(Debian: libfftw3-dev) and reconfigure with -DFFTCONV_WITH_FFTW=ON");
#endif
}

}  // namespace fftconv::detail
