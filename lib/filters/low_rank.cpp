#include "filters/low_rank.h"

#include <Eigen/SVD>

#include <algorithm>
#include <cmath>
#include <string>

#include "fftconv/status.hpp"

namespace fftconv::detail {

namespace {

using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

void check_plane(const float* w, std::int64_t r, std::int64_t s, const std::string& where) {
  if (r < 1 || s < 1) {
    throw Error(Status::kInvalidArgument, "low-rank filter: empty plane (" + std::to_string(r) +
                                              " x " + std::to_string(s) + ")" + where);
  }
  if (!w) throw Error(Status::kInvalidArgument, "low-rank filter: null filter" + where);
  for (std::int64_t i = 0; i < r * s; ++i) {
    if (!std::isfinite(w[i])) {
      throw Error(Status::kInvalidArgument,
                  "low-rank filter: non-finite value " + std::to_string(w[i]) + " at (" +
                      std::to_string(i / s) + ", " + std::to_string(i % s) + ")" + where);
    }
  }
}

std::optional<LowRankPlane> factor(const float* w, std::int64_t r, std::int64_t s,
                                   const LowRankOptions& o) {
  Matrix m(r, s);
  for (std::int64_t i = 0; i < r; ++i)
    for (std::int64_t j = 0; j < s; ++j) m(i, j) = w[i * s + j];
  const double norm = m.norm();
  LowRankPlane p;
  if (norm == 0.0) return p;  // rank 0: contributes nothing

  const Eigen::JacobiSVD<Matrix> svd(m, Eigen::ComputeThinU | Eigen::ComputeThinV);
  const Eigen::VectorXd& sigma = svd.singularValues();  // descending
  const int n = static_cast<int>(sigma.size());
  // Smallest rank whose tail is within the tolerance: tail[k] = ||sigma[k..]||.
  std::vector<double> tail(n + 1, 0.0);
  for (int k = n - 1; k >= 0; --k) tail[k] = std::hypot(tail[k + 1], sigma[k]);
  int rank = n;
  for (int k = 0; k <= n; ++k) {
    if (tail[k] <= o.tolerance * norm) {
      rank = k;
      break;
    }
  }
  // Full rank (beyond a single row or column) has no structure to use, whatever max_rank says.
  if (rank > o.max_rank || (rank == n && n > 1)) return std::nullopt;
  p.rank = rank;
  p.dropped = tail[rank] / norm;
  p.cols.resize(static_cast<std::size_t>(rank * r));
  p.rows.resize(static_cast<std::size_t>(rank * s));
  for (int k = 0; k < rank; ++k) {
    // The singular value split evenly, so that both passes see values of one magnitude.
    const double scale = std::sqrt(sigma[k]);
    for (std::int64_t i = 0; i < r; ++i) p.cols[k * r + i] = static_cast<float>(svd.matrixU()(i, k) * scale);
    for (std::int64_t j = 0; j < s; ++j) p.rows[k * s + j] = static_cast<float>(svd.matrixV()(j, k) * scale);
  }
  // The error of what will run: the fp32 factors against W, in fp64.
  double err2 = 0.0;
  for (std::int64_t i = 0; i < r; ++i) {
    for (std::int64_t j = 0; j < s; ++j) {
      double v = m(i, j);
      for (int k = 0; k < rank; ++k) v -= double(p.cols[k * r + i]) * double(p.rows[k * s + j]);
      err2 += v * v;
    }
  }
  p.rel_error = std::sqrt(err2) / norm;
  if (p.rel_error > 2.0 * o.tolerance) return std::nullopt;
  return p;
}

}  // namespace

double low_rank_tolerance(DType dtype) {
  switch (dtype) {
    case DType::kF16: return 0x1p-11;
    case DType::kBF16: return 0x1p-8;
    case DType::kF32: break;
  }
  return LowRankOptions{}.tolerance;
}

std::optional<LowRankPlane> low_rank_plane(const float* w, std::int64_t r, std::int64_t s,
                                           const LowRankOptions& options) {
  check_plane(w, r, s, "");
  return factor(w, r, s, options);
}

std::optional<LowRankFilter> low_rank_filter(const float* w, const ConvDesc& d,
                                             const LowRankOptions& options) {
  const std::int64_t planes = d.k * d.c_per_group();
  const std::int64_t size = d.r * d.s;
  LowRankFilter f;
  f.planes.reserve(static_cast<std::size_t>(planes));
  for (std::int64_t p = 0; p < planes; ++p) {
    check_plane(w ? w + p * size : nullptr, d.r, d.s,
                " in plane " + std::to_string(p) + " (filter " + std::to_string(p / d.c_per_group()) +
                    ", channel " + std::to_string(p % d.c_per_group()) + ")");
    std::optional<LowRankPlane> lr = factor(w + p * size, d.r, d.s, options);
    if (!lr) return std::nullopt;
    f.max_rank = std::max(f.max_rank, lr->rank);
    f.worst_rel_error = std::max(f.worst_rel_error, lr->rel_error);
    f.planes.push_back(std::move(*lr));
  }
  return f;
}

}  // namespace fftconv::detail
