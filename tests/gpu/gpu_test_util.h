// Shared helpers of the GPU suites: skip without a device, run a plan against the device oracle.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "fftconv/fftconv.h"
#include "fftconv/fftconv.hpp"
#include "testing/testing.h"

#define FFTCONV_REQUIRE_GPU()                                \
  do {                                                       \
    std::string fftconv_why_;                                \
    if (!::fftconv::testing::has_device(&fftconv_why_))      \
      GTEST_SKIP() << fftconv_why_ << " (GPU test skipped)"; \
  } while (0)

namespace fftconv::gputest {

/// Inputs of one run: random values (fixed seed) encoded in the descriptor's dtype on the device,
/// and their exact fp32 values for the oracle.
/// A small forward problem with every stage busy: 2 images of 3 channels 37x29, 4 filters 15x9,
/// padding 7x4 (the runtime and pointer tests).
ConvDesc small_desc();

using testing::c_desc;

struct Problem {
  ConvDesc desc;
  std::uint64_t seed = 0;
  bool with_bias = false;
  testing::DeviceBuffer x, w, bias;        // engine inputs (desc.dtype)
  testing::DeviceBuffer x32, w32, bias32;  // oracle inputs (fp32)
  std::vector<double> ref;                 // oracle output

  Problem(const ConvDesc& d, std::uint64_t seed, bool with_bias);
  /// The filter `wv` (d.w_elems() values exact in d.dtype) instead of a random one.
  Problem(const ConvDesc& d, std::uint64_t seed, bool with_bias, const std::vector<float>& wv);
};

struct RunResult {
  testing::ErrorStats err;
  std::string describe;
  PlanInfo info;
  std::vector<float> y;
};

/// Plans with `options`, runs forward once into a NaN-poisoned output and compares with the oracle.
RunResult run_forward(const Problem& p, const Options& options, cudaStream_t stream = nullptr);

/// Random x, w, dy of one descriptor (values exact in its dtype) and both backward oracles.
struct BwdProblem {
  ConvDesc desc;
  std::uint64_t seed;
  std::vector<float> xv, wv, dyv;
  testing::DeviceBuffer x, w, dy;
  std::vector<double> ref_dx, ref_dw;

  BwdProblem(const ConvDesc& d, std::uint64_t s);
  /// The filter `w_values` (exact in d.dtype) instead of a random one.
  BwdProblem(const ConvDesc& d, std::uint64_t s, const std::vector<float>& w_values);
};

struct BwdResult {
  testing::ErrorStats err;
  std::string describe;
  PlanInfo info;
  std::vector<float> out;
};

Options with_pass(Options o, Pass pass);

/// Plans backward data with `options`, runs it once (the filter per call, or kept by set_filter)
/// into a NaN-poisoned dx and compares with the oracle.
BwdResult run_dgrad(const BwdProblem& p, const Options& options, bool keep_filter = false);

/// Plans backward filter with `options`, runs dw = alpha * grad + beta * dw0 once (dw0 ignored,
/// and dw NaN-poisoned, when beta == 0) and compares with the oracle.
BwdResult run_wgrad(const BwdProblem& p, const Options& options, float alpha = 1.0f,
                    float beta = 0.0f, const std::vector<float>* dw0 = nullptr);

/// Checks a plan made in a sweep: the descriptor, describe() and info().
using PlanCheck = std::function<void(const ConvDesc&, const std::string&, const PlanInfo&)>;

/// The backward passes of a path over random descriptors drawn from `seed` (20 in fp32, 6 each
/// in fp16 and bf16): backward data with the filter per call and kept, backward filter with
/// alpha 0.5 and beta 0 or 0.25, each against the oracle; check(d, describe, info) on every
/// plan (that it ran the path under test).
void backward_sweep(std::uint64_t seed, const Options& options, const PlanCheck& check);

/// Captures one forward call of `plan` (filter `w`, null for the kept one; `bias` may be null)
/// on a non-blocking stream into a CUDA graph, replays it `replays` times and returns the fp32
/// output (NaN-poisoned before the capture). `s`: the stream to capture on (null: one of its own).
std::vector<float> forward_in_graph(const Plan& plan, const Problem& p, const void* w,
                                    const void* bias, int replays = 1, cudaStream_t s = nullptr);

using testing::output_reads_data;

std::string data_dir();

using testing::download;
using testing::download_f64;
using testing::upload;
/// True when every byte still holds DeviceBuffer::poison's 0xFF (nothing was written).
bool all_poison(const testing::DeviceBuffer& b);

/// Every row of every data/shapes/*.csv that loads (a file that does not is reported by the
/// SuiteFiles.Load test).
std::vector<testing::ShapeRow> suite_rows();

}  // namespace fftconv::gputest
