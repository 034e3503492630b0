// fftconv-bench's cases: one row of a suite in one pass, timed, verified and compared with
// cuDNN; the rows of a run in groups (a shape's dtypes together with --interleave).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>

#include "args.h"
#include "fftconv/fftconv.hpp"
#include "testing/testing.h"

namespace bench {

/// The results of one row in one pass (a line of the table, an entry of the JSON's rows).
struct Row {
  std::string name, desc, dtype, status = "ok";
  std::string pass = "fwd";  // fwd, dgrad or wgrad
  bool verified = false, ok = true;
  double engine_ms = NAN, plan_ms = NAN, fft_ms = NAN;
  double host_us = NAN;  ///< enqueue time of one call (timing.h, Timed::host_us)
  double cold_ms = NAN;  ///< one call alone, L2 flushed, host launch included (Timed::cold_ms)
  double cudnn_ms = NAN, cudnn_tf32_ms = NAN, speedup = NAN;
  std::string cudnn_algo, cudnn_tf32_algo;
  std::string cudnn_search;  ///< how the cuDNN columns' algorithms were searched
  double rel_err = NAN, max_err = NAN;
  double kept_ms = NAN, kept_rel_err = NAN;  // fwd/dgrad with the filter spectrum kept (set_filter)
  double kept_cold_ms = NAN, kept_host_us = NAN;  // the kept filter's cold and host times
  std::string kept_note;  // describe() of the plan with the filter kept (how it runs)
  // --shared-spectrum (fwd: writing the spectrum and reading it; dgrad: reading the forward
  // plan's): times, error, the plan, or why the row has none.
  double shared_ms = NAN, shared_rel_err = NAN, shared_cold_ms = NAN, shared_host_us = NAN;
  std::string shared_note;
  std::int64_t tiles_h = 1, tiles_w = 1;
  std::string algo, gemm, reason;
  std::int64_t fft_h = 0, fft_w = 0;
  std::size_t workspace_bytes = 0;
  double floor_ms = NAN;
  std::vector<std::pair<std::string, double>> gemm_ms;  // --gemm all: FFT time per tiling
  std::string gemm_best, cublas_best;
  double regret = NAN;  // chosen own tiling's time / best own tiling's time
  double gemm_best_ms = NAN, cublas_best_ms = NAN;
  std::vector<fftconv::StageTime> stages;                    // --stages: the engine's stages
  std::vector<std::pair<std::string, double>> fft_sizes_ms;  // --fft all: time per FFT size
  double gemm_flops = 0.0, gemm_min_bytes = 0.0;
  // --interleave: this row's time against the first row of its group (the first of --dtypes),
  // round by round (testing::paired_ratio); on that first row, --control's second copy of it.
  fftconv::testing::PairedRatio paired, control;
  bool has_paired = false, has_control = false;
  std::string paired_base;  // the dtype of the group's first row
  // Wall-clock seconds of the row's parts in order (engine: its plans, timings and oracle;
  // sweeps; cudnn; cudnn_tf32), searches and plan times included.
  std::vector<std::pair<std::string, double>> wall_s;
  // Side measurements that could not be taken (a sweep's size or tiling, the FFT path's own
  // time, the TF32 baseline), each with the reason; printed under the row, not in the JSON.
  std::vector<std::string> notes;
};

/// --fft all: the FFT sizes timed for `d`, the first few of the planner's candidates on each
/// axis (on the diagonal for square problems), as "HxW" pairs.
std::vector<std::pair<std::int64_t, std::int64_t>> fft_sweep_sizes(const fftconv::ConvDesc& d);

/// Runs every row in every pass of cfg.passes, a group at a time (one row, or with
/// --interleave a shape's consecutive dtypes), and hands each result to `report` in order.
void run_rows(const std::vector<fftconv::testing::ShapeRow>& rows, const Config& cfg,
              cudaStream_t stream, const std::function<void(const Row&)>& report);

}  // namespace bench
