// The cuDNN entry of the implementation list, and the rules about cuDNN that hold with or
// without it in the build (sizes it takes, algorithms left out of searches).
#include <climits>

#include "algos/cudnn/cudnn_conv.h"
#include "algos/registry.h"
#include "core/check.h"
#include "tuning/heuristics.h"

namespace fftconv::detail {

Support cudnn_can_implement(const ConvDesc& d, const Options& o) {
  if (!cudnn_available()) {
    return Support::no(Status::kNotSupported,
                       "this build of fftconv has no cuDNN path (configure with "
                       "-DFFTCONV_WITH_CUDNN=ON where cuDNN is installed)");
  }
  const std::int64_t dims[] = {d.n,        d.c,     d.h,     d.w,     d.k,
                               d.r,        d.s,     d.pad_h, d.pad_w, d.stride_h,
                               d.stride_w, d.dil_h, d.dil_w, d.groups};
  for (std::int64_t v : dims) {
    if (v > INT_MAX) return Support::no(Status::kNotSupported, "cuDNN takes 32-bit sizes");
  }
  // cuDNN's legacy API addresses tensors with 32-bit element offsets.
  const std::int64_t limit = INT_MAX;
  if (d.x_elems() > limit || d.w_elems() > limit || d.y_elems() > limit) {
    return Support::no(Status::kNotSupported,
                       "a tensor has more than 2^31-1 elements, over cuDNN's limit");
  }
  if (o.pass == Pass::kBackwardFilter && o.dw_fp32 && d.dtype != DType::kF32) {
    return Support::no(Status::kNotSupported,
                       "cuDNN writes dw in the data's dtype; Options::dw_fp32 needs the FFT path");
  }
  return Support::yes();
}

bool cudnn_graph_known_slow(const ConvDesc& d, Pass pass) {
  return pass == Pass::kBackwardData && d.h * d.w >= (std::int64_t(1) << 20) && d.r * d.s >= 1024;
}

bool cudnn_algo_known_slow(const ConvDesc& d, Pass pass, int algo) {
  return algo == kCudnnBwdDataAlgo1 && cudnn_graph_known_slow(d, pass);
}

bool cudnn_algo_inaccurate_fp32(const ConvDesc& d, Pass pass, int algo) {
  return pass == Pass::kBackwardFilter && algo == kCudnnBwdFilterAlgo1 &&
         d.n * d.out_h() * d.out_w() >= 16384;
}

#if !FFTCONV_WITH_CUDNN

bool cudnn_available() { return false; }

std::unique_ptr<ConvAlgo> make_cudnn(const ConvDesc& d, const Options& o) {
  const Support s = cudnn_can_implement(d, o);
  throw Error(s.status, s.reason);
}

std::vector<std::string> cudnn_algos(Pass) { return {}; }

#endif

namespace {

class CudnnFactory final : public AlgoFactory {
 public:
  CudnnFactory() : AlgoFactory("cudnn", Algo::kCudnn, Backend::kGpu) {}
  Support can_implement(const ConvDesc& d, const Options& o) const override {
    return cudnn_can_implement(d, o);
  }
  double estimate_us(const ConvDesc& d, const Options& o, std::string* detail) const override {
    if (detail) *detail = "direct";
    return estimate_direct_us(d, o.pass);
  }
  std::unique_ptr<ConvAlgo> create(const ConvDesc& d, const Options& o, bool,
                                   std::string*) const override {
    auto algo = make_cudnn(d, o);
    check_device_memory(*algo);
    return algo;
  }
};

}  // namespace

const AlgoFactory& cudnn_factory() {
  static const CudnnFactory f;
  return f;
}

}  // namespace fftconv::detail
