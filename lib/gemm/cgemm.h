// Batched per-frequency complex GEMM: the contraction at the heart of the FFT method.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>
#include <vector_types.h>

namespace fftconv::detail {

/// For every group g and frequency bin f:
///   C[g][m][n][f] = alpha * sum_k opA(A[g][m][k][f]) * opB(B[g][n][k][f])
/// where op conjugates when conj_a / conj_b is set. Bins are contiguous (stride 1) in all three
/// operands, exactly as the r2c transform leaves them; the other strides are in complex elements.
/// Forward: A = X (m = image, k = input channel), B = W (n = filter), conj_b (cross-correlation).
struct CgemmProblem {
  std::int64_t m = 0, n = 0, k = 0, bins = 0, groups = 1;
  std::int64_t a_m = 0, a_k = 0, a_g = 0;
  std::int64_t b_n = 0, b_k = 0, b_g = 0;
  std::int64_t c_m = 0, c_n = 0, c_g = 0;
  bool conj_a = false, conj_b = false;

  double flops() const { return 8.0 * double(m) * n * k * bins * groups; }
};

struct CgemmOperands {
  const float2* a = nullptr;
  const float2* b = nullptr;
  float2* c = nullptr;
  float alpha = 1.0f;
};

/// A compiled tiling: a name, its compile-time shape and its launcher.
struct CgemmKernel {
  const char* name;
  int tile_m;   ///< output rows per thread
  int tile_n;   ///< output columns per thread
  int threads;  ///< threads per block (one bin each)
  void (*launch)(const CgemmProblem&, const CgemmOperands&, cudaStream_t);
};

/// Every instantiated tiling, in a fixed order.
const std::vector<CgemmKernel>& cgemm_kernels();
/// The kernel called `name`; throws Error(kInvalidArgument) when there is none.
const CgemmKernel& cgemm_kernel(const std::string& name);

}  // namespace fftconv::detail
