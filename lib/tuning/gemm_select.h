// Choosing the per-frequency GEMM of a plan: forced by name, by the heuristic, or by timing the
// candidates at plan time (autotune), remembered in the persistent tuning cache.
#pragma once

#include <string>
#include <vector>

#include "fftconv/options.hpp"
#include "gemm/cgemm.h"

namespace fftconv::detail {

struct GemmChoice {
  const CgemmKernel* kernel = nullptr;
  std::string reason;  ///< how it was chosen, for Plan::describe()
};

/// The GEMM for `p` under `o`; `key` names the problem in the tuning cache.
GemmChoice select_cgemm(const CgemmProblem& p, const Options& o, const std::string& key);

struct GemmTiming {
  const CgemmKernel* kernel = nullptr;
  double ms = 0.0;  ///< median of the timed runs; +inf when the candidate failed
};

/// Times every candidate on random operands of problem `p` (one warm-up, then up to `runs` timed
/// runs; a candidate already 2x slower than the best so far stops after one). Allocates and
/// synchronises: plan time only.
std::vector<GemmTiming> time_cgemm_candidates(const CgemmProblem& p,
                                              const std::vector<const CgemmKernel*>& candidates,
                                              int runs);


}  // namespace fftconv::detail
