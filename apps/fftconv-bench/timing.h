// fftconv-bench's timing: input sets rotated past L2, one plan timed on its own, and a row's
// dtypes timed in turn (--interleave).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "args.h"
#include "fftconv/fftconv.hpp"
#include "testing/testing.h"

namespace bench {

// The names every part of the driver uses.
using fftconv::ConvDesc;
using fftconv::DType;
using fftconv::Options;
using fftconv::Pass;
using fftconv::Plan;
namespace ft = fftconv::testing;

/// Input sets: several copies when they fit in L2, so repeated runs do not time the cache. x, w
/// and dy are the pass's possible inputs (dy only for backward passes); out is its output; the
/// *32 buffers hold the same values in fp32 for the oracle.
struct Inputs {
  std::vector<fftconv::testing::DeviceBuffer> x, w, dy;
  fftconv::testing::DeviceBuffer bias, out, x32, w32, bias32, dy32;
  int copies = 1;
};

/// Elements of the output of `pass` (y, dx or dw).
std::int64_t out_elems(const fftconv::ConvDesc& d, fftconv::Pass pass);

/// Random inputs for `pass` of `d` from `seed` (x, w, bias from seed, seed+1, seed+2; dy from
/// seed+3).
/// `gaussian_sigma` > 0: every filter plane a normalised Gaussian of that sigma (exact in the
/// dtype), else random values.
Inputs make_inputs(const fftconv::ConvDesc& d, fftconv::Pass pass, std::uint64_t seed,
                   double gaussian_sigma = 0.0);

/// What time_plan() measured and what the plan chose.
struct Timed {
  double ms = NAN, plan_ms = NAN;
  /// Host time of enqueueing one call, without synchronising: the median over batches of calls
  /// (the device drained between them) of batch time / calls.
  double host_us = NAN;
  /// Time of one call alone, as a network sees it: L2 flushed by another operation first, the
  /// stream idle, events around the call, so its host launch is included (median of the runs).
  double cold_ms = NAN;
  fftconv::PlanInfo info;
  std::string describe;
  std::vector<fftconv::StageTime> stages;
};

/// Plans (timed on the host) and times the plan's pass; leaves the last result in in.out.
/// stages: also profile the forward pass's stages. kept: the filter goes to set_filter() once,
/// the pass gets w == nullptr (fwd and dgrad). timed == false: the pass runs once, untimed
/// (--interleave times it with the other dtypes).
Timed time_plan(const fftconv::ConvDesc& d, const fftconv::Options& o, Inputs& in,
                const Config& cfg, cudaStream_t stream, bool stages = false, bool kept = false,
                bool timed = true);

/// --shared-spectrum, fwd and dgrad: a training step's filter spectrum. The forward plan of
/// `o` writes it; fwd times filter_spectrum + forward_with_spectrum per call, dgrad times
/// backward_data_with_spectrum of a plan at the forward plan's FFT size reading it (written once).
/// Leaves the result in in.out. t.ms is NaN and t.describe says why where the forward plan has no
/// spectrum to share.
Timed time_shared_spectrum(const fftconv::ConvDesc& d, const fftconv::Options& o, Inputs& in,
                           const Config& cfg, cudaStream_t stream);

/// --interleave: per row of a group, its engine times (every round), or why it was not timed.
struct Interleaved {
  std::vector<std::vector<float>> times;  ///< empty for a row that was not timed
  std::vector<std::string> errors;        ///< why a row was not timed ("" when it was)
};

/// --interleave: the engine's times for `pass` on each row of `group` (one shape in several
/// dtypes, inputs from `seeds`), timed in turn. With cfg.control a last entry holds a second,
/// separate copy of the first row's run (empty when the first row does not plan).
Interleaved interleaved_times(const std::vector<const fftconv::testing::ShapeRow*>& group,
                              const std::vector<std::uint64_t>& seeds, fftconv::Pass pass,
                              const Config& cfg, cudaStream_t stream);

}  // namespace bench
