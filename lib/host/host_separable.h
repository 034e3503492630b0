// The separable path of the host backend: a kept filter whose planes are low rank
// (lib/filters/low_rank.h) convolved as r pairs of 1-D passes per plane, a row pass and a column
// pass, r * (S + R) taps per output instead of R * S. Forward and backward data; fp32, host
// memory, zero padding, stride, dilation and groups as ConvDesc defines them.
#pragma once

#include <cstddef>
#include <string>

#include "filters/low_rank.h"
#include "fftconv/conv_desc.hpp"
#include "fftconv/options.hpp"

namespace fftconv::detail {

class HostSeparable {
 public:
  /// `f` holds the K * C/groups planes of d's filter; `threads` as parallel_for takes them.
  HostSeparable(const ConvDesc& d, LowRankFilter f, int threads);

  /// y = conv(x, w) + bias (bias may be null).
  void forward(const float* x, const float* bias, float* y) const;
  /// dx = dL/dx for output gradient dy.
  void backward_data(const float* dy, float* dx) const;

  int rank() const { return f_.max_rank; }
  double rel_error() const { return f_.worst_rel_error; }
  /// Host bytes of the factors.
  std::size_t bytes() const;
  /// One line for Plan::describe(): the rank and the measured error of the factors.
  std::string describe() const;

  /// Multiply-adds of one pass of `d` with planes of rank `rank` (forward: the row pass over
  /// every input row at the output columns, then the column pass; backward data likewise).
  static double macs(const ConvDesc& d, Pass pass, int rank);

 private:
  ConvDesc d_;
  LowRankFilter f_;
  int threads_;
};

}  // namespace fftconv::detail
