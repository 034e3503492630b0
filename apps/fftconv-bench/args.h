// fftconv-bench's command line: what to run and how to time it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "fftconv/fftconv.hpp"
#include "testing/testing.h"

namespace bench {

struct Config {
  std::vector<std::string> shape_files;
  std::vector<fftconv::testing::ShapeRow> single;  // --desc and the shape flags
  bool verify = false;
  bool cudnn = true;
  bool check_pointers = true;  ///< Options::check_pointers of the engine's plans
  bool fft_callbacks = false;  ///< Options::fft_callbacks of the engine's plans
  bool own_fft = false;        ///< Options::own_fft of the engine's plans
  bool shared_spectrum = false;  ///< --shared-spectrum: also time fwd/dgrad with a shared spectrum
  std::string json_path;
  std::string filter;
  int iters = 20;
  int warmup = 5;
  fftconv::Algo algo = fftconv::Algo::kAuto;
  std::string gemm;        // "" heuristic, a tiling name, or "all" (time every tiling per FFT row)
  std::string cudnn_algo;  // --cudnn-algo: the engine's cuDNN algorithm by name (with --algo cudnn)
  // --cudnn-search: how the cuDNN path (the engine's and the baseline columns) picks its
  // algorithm: the faster of cudnnFind* and the graph API's timed engines (default), one of the
  // two, or the v7 heuristics.
  fftconv::CudnnSearch cudnn_search = fftconv::CudnnSearch::kAuto;
  bool stages = false;
  bool graph = false;       // --graph: time CUDA-graph replays of the engine's pass
  bool interleave = false;  // --interleave: time a row's dtypes in turn
  bool control = false;     // --control: with --interleave, a second copy of the first dtype too
  int placements = 4;       // --placements: engine instances each --interleave run rotates over
  std::size_t workspace_limit = fftconv::Options::kNoLimit;
  bool fft_all = false;               // --fft all: time candidate sizes per FFT row
  std::int64_t fft_h = 0, fft_w = 0;  // --fft HxW: forced (0 x 0: the cost model's)
  fftconv::Tuning tuning = fftconv::Tuning::kHeuristic;
  std::string tuning_cache;
  std::vector<fftconv::Pass> passes = {fftconv::Pass::kForward};
  std::vector<fftconv::DType> dtypes;  // --dtypes: every row in each (empty: the CSV's dtype)
  double gaussian_sigma = 0.0;  // --gaussian: every filter plane a normalised Gaussian (0: random)
  std::string command;                 // the command line as recorded in the JSON
  // --resume: run only the row-passes the JSON file does not hold yet; `skip` is filled from it,
  // (descriptor, pass name) pairs.
  bool resume = false;
  bool progress = false;  // --progress: each row's parts on stderr as they end
  std::set<std::pair<std::string, std::string>> skip;
};

/// Parses the command line into `cfg`. Returns -1 when the driver should go on, 0 after --help,
/// 2 after a bad command line (reported on stderr).
int parse_args(int argc, char** argv, Config& cfg);

/// The engine's options for `pass` from the command line.
fftconv::Options engine_options(const Config& cfg, fftconv::Pass pass);

}  // namespace bench
