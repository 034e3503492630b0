// Division by a divisor fixed at launch, as one widening multiply and a shift.
#pragma once

#include <cstdint>

#include "geometry/index_math.h"  // FFTCONV_HD

namespace fftconv::detail {

/// Divides non-negative 32-bit indices n < 2^31 by a divisor 1 <= d < 2^31 fixed on the host:
/// n / d = (n * mul) >> shift, with l = ceil(log2 d), shift = 31 + l and mul = ceil(2^shift / d).
///
/// Why it is exact: mul = 2^shift / d + e with 0 <= e < 1, so n * mul / 2^shift = n / d + delta
/// with delta = n * e / 2^shift < 2^31 / 2^(31 + l) <= 1 / d (d <= 2^l). Writing n = q*d + r with
/// r <= d - 1, n / d + delta < q + (d - 1) / d + 1 / d = q + 1: the floor is q. mul < 2^32 for
/// every such d (it is 2^31 for powers of two), so it fits in 32 bits.
///
/// The stages split flat indices into (row, column) once per element; a hardware-less 32-bit
/// division costs about twenty instructions there, this costs two.
class IntDivider {
 public:
  IntDivider() = default;
  explicit IntDivider(std::uint32_t d) : d_(d) {
    int l = 0;
    while ((std::uint64_t{1} << l) < d) ++l;
    shift_ = 31 + l;
    mul_ = static_cast<std::uint32_t>(((std::uint64_t{1} << shift_) + d - 1) / d);
  }

  FFTCONV_HD std::uint32_t divisor() const { return d_; }
  FFTCONV_HD int div(int n) const {
    return static_cast<int>((static_cast<std::uint64_t>(static_cast<std::uint32_t>(n)) * mul_) >>
                            shift_);
  }
  /// q = n / d and r = n - q*d.
  FFTCONV_HD void divmod(int n, int& q, int& r) const {
    q = div(n);
    r = n - q * static_cast<int>(d_);
  }

  // So that the index helpers of index_math.h (placed_source, pad_plane_source,
  // clip_plane_source) take an IntDivider wherever they take an integer divisor.
  friend FFTCONV_HD int operator/(int n, const IntDivider& d) { return d.div(n); }
  friend FFTCONV_HD int operator%(int n, const IntDivider& d) {
    return n - d.div(n) * static_cast<int>(d.d_);
  }
  friend FFTCONV_HD bool operator==(const IntDivider& d, int v) {
    return static_cast<std::int64_t>(d.d_) == v;
  }
  friend FFTCONV_HD std::int64_t divisor_value(const IntDivider& d) { return d.d_; }

 private:
  std::uint32_t d_ = 1;
  std::uint32_t mul_ = 1u << 31;
  int shift_ = 31;
};

}  // namespace fftconv::detail
