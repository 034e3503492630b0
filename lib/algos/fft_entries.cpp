// The FFT entries of the implementation list: the full-image FFT (every pass) and overlap-save
// tiles (forward). Both build an FftConvAlgo; they differ in the geometry.
#include <string>

#include "algos/fft_conv.h"
#include "algos/registry.h"
#include "core/check.h"
#include "tuning/heuristics.h"

namespace fftconv::detail {

namespace {

std::string size_text(std::int64_t h, std::int64_t w) {
  return std::to_string(h) + "x" + std::to_string(w);
}

bool size_forced(const Options& o) { return o.fft_h != 0 || o.fft_w != 0; }

// Full-image geometry: forced by Options, autotuned (forward), or the cost model's.
FftGeometry full_geometry(const ConvDesc& d, const Options& o, bool first, std::string* reason) {
  if (!first) return choose_fft_geometry(d, o.pass);
  if (!size_forced(o)) {
    if (o.tuning != Tuning::kHeuristic && o.pass == Pass::kForward) {
      return FftConvAlgo::tune_geometry(d, o, reason);
    }
    return choose_fft_geometry(d, o.pass);
  }
  if (reason) *reason = "fft size forced by options";
  return forced_fft_geometry(d, o.fft_h, o.fft_w);
}

// Overlap-save geometry: the cost model's tile, or the tile size Options force on a plan that
// asks for tiling by name. False when no tile fits.
bool tiled_geometry(const ConvDesc& d, const Options& o, FftGeometry* g, std::string* reason) {
  if (o.algo == Algo::kFftTiled && size_forced(o)) {
    if (reason) *reason = "tile size forced by options";
    *g = make_tiled_geometry(d, o.fft_h, o.fft_w);
    return true;
  }
  return choose_tiled_geometry(d, g);
}

// Fails before cuFFT plans are built when the spectra alone exceed the free device memory, and
// after, when the whole workspace does.
std::unique_ptr<ConvAlgo> build_fft(const ConvDesc& d, const Options& o, const FftGeometry& g) {
  const Support s = FftConvAlgo::can_implement(d, o, g);
  if (!s.ok()) throw Error(s.status, s.reason);
  std::size_t free_bytes = 0, total_bytes = 0;
  FFTCONV_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  const std::size_t spectra = FftConvAlgo::spectrum_bytes(d, g, o.pass);
  if (spectra > free_bytes) {
    throw Error(Status::kOutOfMemory,
                std::string(g.tiled ? "tiled fft " : "fft ") + size_text(g.fft_h, g.fft_w) +
                    " needs " + std::to_string(spectra) + " bytes of spectra; the device has " +
                    std::to_string(free_bytes) + " bytes free of " + std::to_string(total_bytes));
  }
  auto algo = std::make_unique<FftConvAlgo>(d, o, g);
  check_device_memory(*algo);
  return algo;
}

class FftFullFactory final : public AlgoFactory {
 public:
  FftFullFactory() : AlgoFactory("fft", Algo::kFft, Backend::kGpu) {}
  Support can_implement(const ConvDesc& d, const Options& o) const override {
    return FftConvAlgo::can_implement(d, o, choose_fft_geometry(d, o.pass));
  }
  double estimate_us(const ConvDesc& d, const Options& o, std::string* detail) const override {
    const FftGeometry g = choose_fft_geometry(d, o.pass);
    if (detail) *detail = size_text(g.fft_h, g.fft_w);
    return estimate_fft_us(d, g, o.pass);
  }
  std::unique_ptr<ConvAlgo> create(const ConvDesc& d, const Options& o, bool first,
                                   std::string* reason) const override {
    return build_fft(d, o, full_geometry(d, o, first, reason));
  }
};

class FftTiledFactory final : public AlgoFactory {
 public:
  FftTiledFactory() : AlgoFactory("fft_tiled", Algo::kFftTiled, Backend::kGpu) {}
  Support can_implement(const ConvDesc& d, const Options& o) const override {
    if (o.pass != Pass::kForward) {
      return Support::no(Status::kNotSupported,
                         std::string("overlap-save tiling implements the forward pass only, not ") +
                             pass_name(o.pass) + "; use the full-image FFT (Algo::kFft)");
    }
    FftGeometry g;
    if (!tiled_geometry(d, o, &g, nullptr)) {
      return Support::no(Status::kNotSupported, "no tile size from " + std::to_string(kMinTile) +
                                                    " to " + std::to_string(kMaxTile) +
                                                    " fits the dilated kernel of " + d.to_string());
    }
    return FftConvAlgo::can_implement(d, o, g);
  }
  double estimate_us(const ConvDesc& d, const Options& o, std::string* detail) const override {
    FftGeometry g;
    tiled_geometry(d, o, &g, nullptr);
    if (detail) {
      *detail = size_text(g.fft_h, g.fft_w) + " (" + size_text(g.tiles_h, g.tiles_w) + " tiles)";
    }
    return estimate_fft_us(d, g) * kTiledOverheadFactor;
  }
  std::unique_ptr<ConvAlgo> create(const ConvDesc& d, const Options& o, bool,
                                   std::string* reason) const override {
    const Support s = can_implement(d, o);
    if (!s.ok()) throw Error(s.status, s.reason);
    FftGeometry g;
    tiled_geometry(d, o, &g, reason);
    return build_fft(d, o, g);
  }
};

}  // namespace

const AlgoFactory& fft_full_factory() {
  static const FftFullFactory f;
  return f;
}

const AlgoFactory& fft_tiled_factory() {
  static const FftTiledFactory f;
  return f;
}

}  // namespace fftconv::detail
