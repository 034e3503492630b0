// cuDNN's per-pass entry points as one table, so the cuDNN path has no per-pass switches: the
// algorithm names, workspace query, launch, timed search and heuristics of each pass. Only built
// with FFTCONV_WITH_CUDNN.
#pragma once

#include <cstddef>
#include <vector>

#include <cudnn.h>

#include "algos/algo.h"
#include "core/check.h"

namespace fftconv::detail {

[[noreturn]] void throw_cudnn(cudnnStatus_t st, const char* expr, const char* file, int line);

#define FFTCONV_CUDNN_CHECK(expr) \
  FFTCONV_CHECK_RESULT(expr, CUDNN_STATUS_SUCCESS, ::fftconv::detail::throw_cudnn)

/// cuDNN's data type of a dtype.
cudnnDataType_t cudnn_data_type(DType t);

/// The descriptors of one convolution (x and y as NCHW tensors, w as KCRS filter).
struct CudnnDescs {
  cudnnHandle_t handle = nullptr;
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
};

/// One algorithm's result from cuDNN's search, whatever the pass.
struct CudnnPerf {
  int algo = 0;
  cudnnStatus_t status = CUDNN_STATUS_NOT_SUPPORTED;
  float time = 0.0f;
  std::size_t memory = 0;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
};

/// Search tensors named after the forward pass: the backward passes read dy from `y` and write
/// dx into `x` (backward data) or dw into `w` (backward filter).
struct CudnnSearchTensors {
  void* x;
  void* w;
  void* y;
  void* workspace;
  std::size_t workspace_bytes;
};

struct CudnnPassOps {
  /// cuDNN's algorithm enum of the pass by value, names without the CUDNN_CONVOLUTION_*_ALGO_
  /// prefix; "" for a value that is not an algorithm.
  std::vector<const char*> names;
  /// Workspace of one algorithm (CUDNN_STATUS_NOT_SUPPORTED when it cannot run the problem).
  cudnnStatus_t (*workspace)(const CudnnDescs& d, int algo, std::size_t* bytes);
  /// Enqueues the pass with one algorithm on the handle's stream: out = alpha * op + beta * out
  /// (forward and backward data with alpha 1, beta 0).
  void (*enqueue)(const CudnnDescs& d, int algo, const RunArgs& a, std::size_t workspace_bytes);
  /// cudnnFind*AlgorithmEx: times every algorithm on the given tensors.
  std::vector<CudnnPerf> (*find)(const CudnnDescs& d, const CudnnSearchTensors& t);
  /// cudnnGet*Algorithm_v7: the heuristics' suggestions, best first.
  std::vector<CudnnPerf> (*heuristics)(const CudnnDescs& d);
};

const CudnnPassOps& cudnn_pass_ops(Pass pass);

}  // namespace fftconv::detail
