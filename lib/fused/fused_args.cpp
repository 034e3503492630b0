// The fused path's size rule and kernel arguments per pass (host side of lib/fused).
#include <algorithm>

#include "fused/fused_conv.h"
#include "geometry/fft_geometry.h"

namespace fftconv::detail {

int fused_log_size(const ConvDesc& d) {
  const int lh = fused_log_extent(min_fft_h(d)), lw = fused_log_extent(min_fft_w(d));
  return lh < 0 || lw < 0 ? -1 : std::max(lh, lw);
}

FusedConvArgs fused_conv_args(const ConvDesc& d, Pass pass, int log_f) {
  const auto i32 = [](std::int64_t v) { return static_cast<int>(v); };
  FusedConvArgs a;
  a.planes = d.n * d.k;
  a.k = i32(d.k);
  a.dtype = d.dtype;
  a.log_f = log_f;
  FusedGeometry& g = a.geo;
  if (pass == Pass::kForward) {
    g.src_h = i32(d.h);
    g.src_w = i32(d.w);
    g.off_h = i32(d.pad_h);
    g.off_w = i32(d.pad_w);
    g.out_h = i32(d.out_h());
    g.out_w = i32(d.out_w());
    g.read_stride_h = i32(d.stride_h);
    g.read_stride_w = i32(d.stride_w);
    g.wrap = true;
  } else {
    g.src_h = i32(d.out_h());
    g.src_w = i32(d.out_w());
    g.step_h = i32(d.stride_h);
    g.step_w = i32(d.stride_w);
    g.out_h = i32(d.h);
    g.out_w = i32(d.w);
    g.read_off_h = i32(d.pad_h);
    g.read_off_w = i32(d.pad_w);
    g.wrap = false;
  }
  return a;
}

FusedFilterArgs fused_filter_args(const ConvDesc& d, Pass pass, int log_f) {
  FusedFilterArgs f;
  f.k = static_cast<int>(d.k);
  f.r = static_cast<int>(d.r);
  f.s = static_cast<int>(d.s);
  f.dil_h = static_cast<int>(d.dil_h);
  f.dil_w = static_cast<int>(d.dil_w);
  f.conjugate = pass == Pass::kForward;
  const double size = double(std::int64_t{1} << log_f);
  f.scale = static_cast<float>(1.0 / (size * size));
  f.dtype = d.dtype;
  f.log_f = log_f;
  return f;
}

}  // namespace fftconv::detail
