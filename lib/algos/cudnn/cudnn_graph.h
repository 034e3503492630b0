// cuDNN's graph (backend) API for the cuDNN path: the operation graph of one convolution pass,
// the engine configurations of cuDNN's heuristics, their timing, the plan-time fp32 check and the
// execution plan a call runs (Options::cudnn_search = CudnnSearch::kGraph, and kAuto where its
// engine beats the legacy search's algorithm). Only built with
// FFTCONV_WITH_CUDNN.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include <cudnn.h>

#include "algos/algo.h"

namespace fftconv::detail {

/// What the graph search may take.
struct CudnnGraphRules {
  /// fp32 data without TF32: engines that compute in TF32 or lower precision are left out.
  bool strict_fp32 = false;
  /// Measure the chosen engine's error at plan time against an fp64 direct convolution, the
  /// next fastest taken where it misses; problems over 2^38 multiply-adds, where that oracle
  /// would be too slow, are refused (Error(kNotSupported)).
  bool check_fp32 = false;
  std::size_t workspace_limit = ~std::size_t{0};
};

/// One pass's finalized execution plan, chosen by timing. The tensors are NCHW (x, y) and KCRS
/// (w), 16-byte aligned; calls whose pointers are not, or backward-filter calls with alpha != 1
/// or beta != 0, are not taken (CudnnAlgo runs its legacy algorithm for them).
class CudnnGraphPlan {
 public:
  /// Builds the operation graph, asks cuDNN's heuristics (modes A and fallback), times the
  /// admitted configurations on random data on the calling thread's plan stream and keeps the
  /// fastest that passes the rules. Throws Error(kNotSupported) when none does.
  CudnnGraphPlan(const ConvDesc& d, Pass pass, const CudnnGraphRules& rules, cudnnHandle_t handle);
  ~CudnnGraphPlan();
  CudnnGraphPlan(const CudnnGraphPlan&) = delete;
  CudnnGraphPlan& operator=(const CudnnGraphPlan&) = delete;

  std::size_t workspace_size() const;
  /// True when the execution plan can run this call (alignment, alpha and beta).
  bool takes(const RunArgs& a) const;
  /// Enqueues the pass on the handle's stream; a.workspace holds workspace_size() bytes. Callers
  /// serialise calls (the last call's variant pack is kept for a repeat of its pointers).
  void execute(cudnnHandle_t handle, const RunArgs& a) const;
  /// The engine and its knobs, e.g. "eng28 k2=3 k3=0" and its numerical notes.
  const std::string& engine() const;
  /// True when the engine computes on tensor cores (cuDNN's TENSOR_CORE note).
  bool tensor_core() const;
  /// The chosen engine's time at plan time, in milliseconds (one run after an untimed one).
  float ms() const;
  /// How it was chosen: the candidates timed, what the rules left out, the fp32 check.
  const std::string& search() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fftconv::detail
