// The pad stage as a cuFFT load callback: what the r2c's callback needs to read an FFT plane's
// element straight from the caller's tensor (zeros outside the placed source), so that no padded
// copy of the operand is written and read back.
#pragma once

#include <cstdint>

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

/// Names of the callbacks in the embedded LTO-IR (lib/fft/pad_load_callback.cu), by dtype of
/// the source tensor.
constexpr const char* kPadLoadF32 = "fftconv_pad_load_f32";
constexpr const char* kPadLoadF16 = "fftconv_pad_load_f16";
constexpr const char* kPadLoadBF16 = "fftconv_pad_load_bf16";

}  // namespace fftconv::detail
