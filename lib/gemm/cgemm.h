// Batched per-frequency complex GEMM: the contraction at the heart of the FFT method.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>
#include <vector_types.h>

namespace fftconv::detail {

/// For every group g and frequency bin f:
///   C[g][m][n][f] = alpha * sum_k opA(A[g][m][k][f]) * opB(B[g][n][k][f])
/// where op conjugates when conj_a / conj_b is set. Bins are contiguous (stride 1) in all three
/// operands, exactly as the r2c transform leaves them; the other strides are in complex elements.
/// One interface serves every pass: forward contracts over input channels (A = X, B = W,
/// conj_b), backward-data over filters, backward-filter over images; only strides and
/// conjugation differ.
struct CgemmProblem {
  std::int64_t m = 0, n = 0, k = 0, bins = 0, groups = 1;
  std::int64_t a_m = 0, a_k = 0, a_g = 0;
  std::int64_t b_n = 0, b_k = 0, b_g = 0;
  std::int64_t c_m = 0, c_n = 0, c_g = 0;
  bool conj_a = false, conj_b = false;

  double flops() const { return 8.0 * double(m) * n * k * bins * groups; }
  /// Bytes the GEMM must at least move: every operand read once, the result written once.
  double min_bytes() const { return 8.0 * double(bins) * groups * (m * k + n * k + m * n); }
  /// Complex elements each operand spans from its base pointer.
  std::int64_t a_extent() const { return (groups - 1) * a_g + (m - 1) * a_m + (k - 1) * a_k + bins; }
  std::int64_t b_extent() const { return (groups - 1) * b_g + (n - 1) * b_n + (k - 1) * b_k + bins; }
  std::int64_t c_extent() const { return (groups - 1) * c_g + (m - 1) * c_m + (n - 1) * c_n + bins; }
};

struct CgemmOperands {
  const float2* a = nullptr;
  const float2* b = nullptr;
  float2* c = nullptr;
  float alpha = 1.0f;
};

enum class CgemmFamily {
  kRegTile,  ///< one thread per bin and register tile, operands straight from global memory
  kSmem,     ///< a block per 32 bins and output tile, operands staged through shared memory
  kTensorCore,  ///< a block per 8 bins and output tile on TF32 tensor cores, 3xTF32 split
  kCublas,   ///< cublasCgemmStridedBatched over bins, with the layout changes it needs
  kCublas3m, ///< cublasCgemm3mStridedBatched, likewise
};

/// One entry of the catalog: a compiled tiling of ours, or a cuBLAS comparison path.
struct CgemmKernel {
  const char* name;
  CgemmFamily family;
  int tile_m, tile_n;    ///< outputs per thread, or per MMA tile (tensor-core kernels)
  int block_m, block_n;  ///< outputs per block along m and n (own kernels)
  int threads;           ///< threads per block (own kernels)
  void (*launch)(const CgemmProblem&, const CgemmOperands&, cudaStream_t);  ///< own kernels only
  /// Run once per runner, at plan time on the plan's device (kernel attributes); may throw
  /// Error(kNotSupported) where the device cannot run the kernel. Null when there is nothing to do.
  void (*prepare)() = nullptr;
  std::size_t smem_bytes = 0;  ///< dynamic shared memory per block (tensor-core kernels)
  int blocks_per_sm = 0;       ///< resident blocks per SM its launch bounds ask for (likewise)

  bool own() const {
    return family == CgemmFamily::kRegTile || family == CgemmFamily::kSmem ||
           family == CgemmFamily::kTensorCore;
  }
};

/// Every entry, own tilings first, in a fixed order: the only list (the tunings in lib/tuning
/// choose among these).
const std::vector<CgemmKernel>& cgemm_kernels();
/// The entry called `name`; throws Error(kInvalidArgument) when there is none.
const CgemmKernel& cgemm_kernel(const std::string& name);

/// A way to run the per-frequency GEMM, built at plan time (cuBLAS paths hold a handle).
class CgemmRunner {
 public:
  virtual ~CgemmRunner() = default;
  virtual const CgemmKernel& kernel() const = 0;
  /// Device workspace run() needs for this problem (0 for our own kernels).
  virtual std::size_t workspace_size(const CgemmProblem& p) const = 0;
  /// Enqueues the GEMM; no allocation, no synchronisation.
  virtual void run(const CgemmProblem& p, const CgemmOperands& op, void* workspace,
                   cudaStream_t stream) = 0;
};

std::unique_ptr<CgemmRunner> make_cgemm_runner(const CgemmKernel& kernel);

// Family lists, defined next to their kernels and joined by cgemm_kernels().
const std::vector<CgemmKernel>& regtile_kernels();
const std::vector<CgemmKernel>& smem_kernels();
const std::vector<CgemmKernel>& tc_kernels();
std::unique_ptr<CgemmRunner> make_cublas_runner(const CgemmKernel& kernel);

}  // namespace fftconv::detail
