// Low-rank structure of filter planes: a plane W (R x S) as a sum of a few outer products
// col_i row_i^T, found by the SVD in fp64 on the host. A separable filter (a Gaussian, a box) is
// rank 1; its convolution is then a column pass and a row pass, r * (R + S) taps per output
// instead of R * S. The set-up step of kept filters, for the separable path.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "fftconv/conv_desc.hpp"

namespace fftconv::detail {

struct LowRankOptions {
  /// Most outer products kept per plane; a plane that needs more is not low rank.
  int max_rank = 4;
  /// Relative Frobenius norm of the singular values dropped, and bound on the measured error of
  /// the fp32 factors: 2^-22, a few units of fp32 rounding (2^-24) of the filter itself.
  double tolerance = 0x1p-22;
};

/// The tolerance of a filter of `dtype` data: fp32 2^-22 (LowRankOptions' default); fp16 2^-11
/// and bf16 2^-8, the unit roundoff of the result's dtype. A half-precision filter is rounded
/// to it, which makes a Gaussian of rank 1 full rank at fp32's tolerance (its rounding error,
/// about 2^-12 of the norm in fp16, is what the factors then leave out).
double low_rank_tolerance(DType dtype);

/// W ~= sum over i < rank of col[i*R ..] row[i*S ..]^T, factors in fp32.
struct LowRankPlane {
  int rank = 0;             ///< outer products kept (0: the plane is zero)
  std::vector<float> cols;  ///< rank x R
  std::vector<float> rows;  ///< rank x S
  /// ||W - sum col_i row_i^T||_F / ||W||_F of the fp32 factors, computed in fp64 (0 for a zero
  /// plane): the error the factorization adds, as measured.
  double rel_error = 0.0;
  /// Relative Frobenius norm of the singular values left out.
  double dropped = 0.0;
};

/// The factors of one R x S plane (row-major, fp32 values) with the smallest rank whose dropped
/// singular values are within options.tolerance of ||W||_F, or nullopt when that rank exceeds
/// options.max_rank, when it is full (min(R, S), unless R or S is 1), or when the fp32 factors
/// miss the tolerance by more than 2x. Throws
/// Error(kInvalidArgument) for an empty plane or a non-finite value, naming it.
std::optional<LowRankPlane> low_rank_plane(const float* w, std::int64_t r, std::int64_t s,
                                           const LowRankOptions& options = {});

/// Every plane of a K x C/groups x R x S filter (d.w_elems() fp32 values), all or nothing.
struct LowRankFilter {
  int max_rank = 0;              ///< the largest rank of a plane
  double worst_rel_error = 0.0;  ///< the largest rel_error of a plane
  std::vector<LowRankPlane> planes;  ///< K * C/groups planes, in the filter's order
};
/// nullopt as soon as one plane is not low rank. Throws as low_rank_plane (the message names the
/// plane's index).
std::optional<LowRankFilter> low_rank_filter(const float* w, const ConvDesc& d,
                                             const LowRankOptions& options = {});

}  // namespace fftconv::detail
