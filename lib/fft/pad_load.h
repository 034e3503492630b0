// The pad stage as a cuFFT load callback: what the r2c's callback needs to read an FFT plane's
// element straight from the caller's tensor (zeros outside the placed source), so that no padded
// copy of the operand is written and read back.
#pragma once

#include <cstdint>

#include "geometry/fft_geometry.h"
#include "geometry/index_math.h"
#include "geometry/int_divider.h"

namespace fftconv::detail {

/// Device-resident parameters of one operand segment's load callback, set at plan time. The r2c
/// reads real element `offset` of its input layout (planes of fft_h rows of `pitch` floats, as
/// FftGeometry lays them out); the callback splits it into plane, row and column and maps them
/// through the segment's TileMap and Placement, exactly as the pad stage does.
struct PadLoadInfo {
  IntDivider plane_floats;  ///< FftGeometry::real_plane_floats()
  IntDivider pitch;         ///< floats per real row
  IntDivider per_image, inner, tiles_w;  ///< the TileMap's divisions (see pad_plane_source)
  IntDivider step_h, step_w;             ///< the Placement's steps
  TileMap map;
  Placement place;
};

/// The parameters of a segment placed by `place` and `map` into planes of `g`. The caller checks
/// that the segment's offsets, source elements and divisors fit in 32 bits (FftConvAlgo).
inline PadLoadInfo pad_load_info(const Placement& place, const TileMap& map, const FftGeometry& g) {
  const auto div = [](std::int64_t d) { return IntDivider(static_cast<std::uint32_t>(d)); };
  return PadLoadInfo{div(g.real_plane_floats()),
                     div(g.pitch),
                     div(map.tiles_h * map.tiles_w * map.inner),
                     div(map.inner),
                     div(map.tiles_w),
                     div(place.step_h),
                     div(place.step_w),
                     map,
                     place};
}

/// The source element (an index into the segment's tensor) that real element `offset` of the
/// r2c's input holds, or -1 where the padded plane holds a zero: the pad stage's placement, in
/// 32-bit indices inside a plane.
FFTCONV_HD std::int64_t pad_load_source(unsigned long long offset, const PadLoadInfo& in) {
  int plane = 0, rest = 0, row = 0, col = 0;
  in.plane_floats.divmod(static_cast<int>(offset), plane, rest);
  in.pitch.divmod(rest, row, col);
  const PlaneSource s = pad_plane_source<int>(plane, in.map, in.place.off_h, in.place.off_w,
                                              in.per_image, in.inner, in.tiles_w);
  const int src_h = static_cast<int>(in.place.src_h), src_w = static_cast<int>(in.place.src_w);
  const int i = placed_source<int>(row, static_cast<int>(s.off_h), in.step_h, src_h);
  const int j = placed_source<int>(col, static_cast<int>(s.off_w), in.step_w, src_w);
  if (i < 0 || j < 0) return -1;
  return s.plane * src_h * src_w + i * src_w + j;
}

/// Names of the callbacks in the embedded LTO-IR (lib/fft/pad_load_callback.cu), by dtype of
/// the source tensor.
constexpr const char* kPadLoadF32 = "fftconv_pad_load_f32";
constexpr const char* kPadLoadF16 = "fftconv_pad_load_f16";
constexpr const char* kPadLoadBF16 = "fftconv_pad_load_bf16";

}  // namespace fftconv::detail
