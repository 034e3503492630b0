// cuBLAS comparison paths for the per-frequency GEMM.
//
// cuBLAS wants one column-major matrix per batch entry, so the operands are first gathered from
// the FFT layout (bins innermost) into per-bin matrices, and the result scattered back. Those
// layout changes are part of the path and of its time.
#include <cublas_v2.h>

#include <algorithm>
#include <cstring>

#include "core/check.h"
#include "gemm/cgemm.h"

namespace fftconv::detail {

namespace {

[[noreturn]] void throw_cublas(cublasStatus_t st, const char* expr, const char* file, int line) {
  const Status s = st == CUBLAS_STATUS_ALLOC_FAILED ? Status::kOutOfMemory : Status::kCudaError;
  const char* base = std::strrchr(file, '/');
  throw Error(s, std::string(cublasGetStatusName(st)) + " (" + cublasGetStatusString(st) +
                     ") from " + expr + " at " + (base ? base + 1 : file) + ":" +
                     std::to_string(line));
}

#define FFTCONV_CUBLAS_CHECK(expr)                                                        \
  do {                                                                                    \
    const cublasStatus_t fftconv_st_ = (expr);                                            \
    if (fftconv_st_ != CUBLAS_STATUS_SUCCESS) throw_cublas(fftconv_st_, #expr, __FILE__, __LINE__); \
  } while (0)

constexpr int kTile = 32;
constexpr int kRowsPerPass = 8;
// cuBLAS gets a workspace of its own inside ours: no hidden allocation at run time.
constexpr std::size_t kCublasWorkspace = std::size_t{4} << 20;

/// Batch-major view of one operand: element (r, c) of bin f in group g lives at
/// g*s_g + r*s_r + c*s_c + f in the FFT layout and at ((g*bins + f)*cols + c)*rows + r in the
/// packed (column-major per bin) layout.
struct PackView {
  float2* fft;
  float2* packed;
  std::int64_t rows, cols, bins, groups;
  std::int64_t s_r, s_c, s_g;
  float conj_sign;  // -1 conjugates on the way
};

// Tiled transpose between "bins innermost" and "bins outermost": 32 bins x 32 (r,c) pairs per
// block, staged in shared memory so both sides are read and written in 256-byte runs.
template <bool kToPacked>
__global__ void __launch_bounds__(kTile* kRowsPerPass) repack_kernel(PackView v) {
  __shared__ float2 tile[kTile][kTile + 1];  // [pair][bin], padded against bank conflicts
  const std::int64_t pairs = v.rows * v.cols;
  const std::int64_t f0 = std::int64_t(blockIdx.x) * kTile;
  const std::int64_t j0 = std::int64_t(blockIdx.y) * kTile;
  for (std::int64_t g = blockIdx.z; g < v.groups; g += gridDim.z) {
    if (kToPacked) {
      for (int jj = threadIdx.y; jj < kTile; jj += kRowsPerPass) {  // lanes along bins
        const std::int64_t j = j0 + jj, f = f0 + threadIdx.x;
        if (j >= pairs || f >= v.bins) continue;
        const std::int64_t r = j % v.rows, c = j / v.rows;
        float2 e = v.fft[g * v.s_g + r * v.s_r + c * v.s_c + f];
        e.y *= v.conj_sign;
        tile[jj][threadIdx.x] = e;
      }
      __syncthreads();
      for (int ff = threadIdx.y; ff < kTile; ff += kRowsPerPass) {  // lanes along pairs
        const std::int64_t f = f0 + ff, j = j0 + threadIdx.x;
        if (j >= pairs || f >= v.bins) continue;
        v.packed[(g * v.bins + f) * pairs + j] = tile[threadIdx.x][ff];
      }
    } else {
      for (int ff = threadIdx.y; ff < kTile; ff += kRowsPerPass) {  // lanes along pairs
        const std::int64_t f = f0 + ff, j = j0 + threadIdx.x;
        if (j >= pairs || f >= v.bins) continue;
        tile[threadIdx.x][ff] = v.packed[(g * v.bins + f) * pairs + j];
      }
      __syncthreads();
      for (int jj = threadIdx.y; jj < kTile; jj += kRowsPerPass) {  // lanes along bins
        const std::int64_t j = j0 + jj, f = f0 + threadIdx.x;
        if (j >= pairs || f >= v.bins) continue;
        const std::int64_t r = j % v.rows, c = j / v.rows;
        v.fft[g * v.s_g + r * v.s_r + c * v.s_c + f] = tile[jj][threadIdx.x];
      }
    }
    __syncthreads();
  }
}

template <bool kToPacked>
void launch_repack(const PackView& v, cudaStream_t stream) {
  const std::int64_t pairs = v.rows * v.cols;
  const dim3 grid(static_cast<unsigned>((v.bins + kTile - 1) / kTile),
                  static_cast<unsigned>((pairs + kTile - 1) / kTile),
                  static_cast<unsigned>(std::min<std::int64_t>(v.groups, 65535)));
  FFTCONV_ASSERT(grid.x <= 0x7fffffffu && grid.y <= 65535u, "repack grid out of range");
  repack_kernel<kToPacked><<<grid, dim3(kTile, kRowsPerPass), 0, stream>>>(v);
  FFTCONV_CHECK_LAUNCH();
}

class CublasRunner final : public CgemmRunner {
 public:
  explicit CublasRunner(const CgemmKernel& k) : kernel_(k) {
    FFTCONV_CUBLAS_CHECK(cublasCreate(&handle_));
    // Full fp32: no TF32 for the comparison either.
    const cublasStatus_t st = cublasSetMathMode(handle_, CUBLAS_PEDANTIC_MATH);
    if (st != CUBLAS_STATUS_SUCCESS) {
      cublasDestroy(handle_);
      throw_cublas(st, "cublasSetMathMode", __FILE__, __LINE__);
    }
  }
  ~CublasRunner() override { cublasDestroy(handle_); }

  const CgemmKernel& kernel() const override { return kernel_; }

  std::size_t workspace_size(const CgemmProblem& p) const override {
    const std::size_t per_bin = static_cast<std::size_t>(p.m * p.k + p.n * p.k + p.m * p.n);
    return kCublasWorkspace + 8 * per_bin * static_cast<std::size_t>(p.bins * p.groups) + 3 * 256;
  }

  void run(const CgemmProblem& p, const CgemmOperands& op, void* workspace,
           cudaStream_t stream) override {
    auto* base = static_cast<unsigned char*>(workspace);
    auto align = [](std::size_t b) { return (b + 255) / 256 * 256; };
    const std::int64_t batches = p.bins * p.groups;
    float2* a_packed = reinterpret_cast<float2*>(base + kCublasWorkspace);
    float2* b_packed = a_packed + align(8 * p.m * p.k * batches) / 8;
    float2* c_packed = b_packed + align(8 * p.n * p.k * batches) / 8;
    // Conjugation happens while packing, so cuBLAS sees plain N / T operands.
    launch_repack<true>(PackView{const_cast<float2*>(op.a), a_packed, p.m, p.k, p.bins, p.groups,
                                 p.a_m, p.a_k, p.a_g, p.conj_a ? -1.0f : 1.0f},
                        stream);
    launch_repack<true>(PackView{const_cast<float2*>(op.b), b_packed, p.n, p.k, p.bins, p.groups,
                                 p.b_n, p.b_k, p.b_g, p.conj_b ? -1.0f : 1.0f},
                        stream);
    FFTCONV_CUBLAS_CHECK(cublasSetStream(handle_, stream));
    FFTCONV_CUBLAS_CHECK(cublasSetWorkspace(handle_, base, kCublasWorkspace));
    const cuComplex alpha = make_cuComplex(op.alpha, 0.0f), beta = make_cuComplex(0.0f, 0.0f);
    const int m = static_cast<int>(p.m), n = static_cast<int>(p.n), k = static_cast<int>(p.k);
    FFTCONV_ASSERT(batches <= 0x7fffffff, "cuBLAS batch count out of range");
    // Per bin: C (m x n) = A (m x k) * B^T, with B stored n x k; all column-major.
    auto gemm = kernel_.family == CgemmFamily::kCublas3m ? &cublasCgemm3mStridedBatched
                                                          : &cublasCgemmStridedBatched;
    FFTCONV_CUBLAS_CHECK(gemm(handle_, CUBLAS_OP_N, CUBLAS_OP_T, m, n, k, &alpha, a_packed, m,
                              p.m * p.k, b_packed, n, p.n * p.k, &beta, c_packed, m, p.m * p.n,
                              static_cast<int>(batches)));
    launch_repack<false>(PackView{op.c, c_packed, p.m, p.n, p.bins, p.groups, p.c_m, p.c_n, p.c_g,
                                  1.0f},
                         stream);
  }

 private:
  CgemmKernel kernel_;
  cublasHandle_t handle_ = nullptr;
};

}  // namespace

std::unique_ptr<CgemmRunner> make_cublas_runner(const CgemmKernel& kernel) {
  FFTCONV_ASSERT(kernel.family == CgemmFamily::kCublas || kernel.family == CgemmFamily::kCublas3m,
                 "not a cuBLAS entry");
  return std::make_unique<CublasRunner>(kernel);
}

}  // namespace fftconv::detail
