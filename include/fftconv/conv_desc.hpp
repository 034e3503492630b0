// Convolution descriptor: the problem, independent of how it is computed.
#pragma once

#include <cstdint>
#include <string>
#include "fftconv/export.h"

#include "fftconv/status.hpp"

namespace fftconv {

/// Element type of x, w, bias and y. Arithmetic inside the FFT path is always fp32.
enum class DType : int {
  kF32 = 0,
  kF16 = 1,
  kBF16 = 2,
};

/// What the input holds outside its planes, where the padding reaches: zeros (F.conv2d's
/// padding), or the plane continued as F.pad's modes continue it ("reflect": mirrored about the
/// edge pixels, "replicate": the edge pixels repeated, "circular": the plane repeated). Past
/// one plane's extent, which F.pad rejects, reflect mirrors again and circular wraps again.
enum class Border : int {
  kZero = 0,
  kReflect = 1,
  kReplicate = 2,
  kCircular = 3,
};

/// "zero", "reflect", "replicate", "circular".
FFTCONV_API const char* border_name(Border b) noexcept;
/// Parses a border name (also "zeros" and "constant", as F.pad and nn.Conv2d name zeros);
/// throws Error(kInvalidArgument) otherwise.
FFTCONV_API Border parse_border(const std::string& name);

/// "f32", "f16", "bf16".
FFTCONV_API const char* dtype_name(DType t) noexcept;
/// Parses "f32" / "f16" / "bf16"; throws Error(kUnsupportedDtype) otherwise.
FFTCONV_API DType parse_dtype(const std::string& name);
/// Bytes per element; 0 for an unknown value.
FFTCONV_API std::size_t dtype_size(DType t) noexcept;

/// A 2D convolution in the semantics of torch.nn.functional.conv2d:
///   y[n,k,p,q] = bias[k] + sum_{c in group(k), r, s} x[n, c, p*sh + r*dh - ph, q*sw + s*dw - pw] *
///   w[k, c', r, s]
/// x is NCHW, w is KCRS with C/groups input channels per filter, y is NKHoWo, bias has K entries.
/// With a border other than kZero, x at a row or column outside the input is the input's value
/// at that position mapped by the border (see Border): F.conv2d of F.pad(x, mode) without
/// padding, computed without the padded copy where the algorithm applies the border as it loads.
struct FFTCONV_API ConvDesc {
  std::int64_t n = 1, c = 1, h = 1, w = 1;  ///< input batch, channels, height, width
  std::int64_t k = 1, r = 1, s = 1;         ///< output channels, kernel height, kernel width
  std::int64_t pad_h = 0, pad_w = 0;        ///< zero padding on each side
  std::int64_t stride_h = 1, stride_w = 1;
  std::int64_t dil_h = 1, dil_w = 1;
  std::int64_t groups = 1;
  DType dtype = DType::kF32;
  Border border = Border::kZero;  ///< what the padding holds

  /// Extent of the dilated kernel: (r-1)*dil_h + 1.
  std::int64_t eff_r() const { return (r - 1) * dil_h + 1; }
  std::int64_t eff_s() const { return (s - 1) * dil_w + 1; }
  /// Output height (H + 2ph - dh*(R-1) - 1)/sh + 1, floored; <= 0 when the kernel does not fit.
  std::int64_t out_h() const;
  std::int64_t out_w() const;
  std::int64_t c_per_group() const { return c / groups; }
  std::int64_t k_per_group() const { return k / groups; }
  bool is_depthwise() const { return groups == c && groups == k; }

  std::int64_t x_elems() const { return n * c * h * w; }
  std::int64_t w_elems() const { return k * c_per_group() * r * s; }
  std::int64_t y_elems() const { return n * k * out_h() * out_w(); }

  /// Status::kSuccess or the first problem found; `message` (if non-null) says what and why.
  Status validate(std::string* message = nullptr) const;
  /// Throws Error when validate() fails.
  void check() const;

  /// Canonical one-line string, e.g. "n64c1h96w96k1r45s45p22x22u1x1d1x1g1f32"; a border other
  /// than zeros follows the dtype: "...g1f32-reflect".
  std::string to_string() const;
  /// Inverse of to_string(); throws Error(kInvalidArgument) on a malformed string.
  static ConvDesc parse(const std::string& text);

  bool operator==(const ConvDesc& o) const;
  bool operator!=(const ConvDesc& o) const { return !(*this == o); }
};

}  // namespace fftconv
