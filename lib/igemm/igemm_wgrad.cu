// The implicit-GEMM backward filter's kernels: the channels-last copies (ours) and CUTLASS's
// Conv2dWgrad in the 3xTF32 split. Built where CUTLASS's headers are found (FFTCONV_WITH_CUTLASS).
#include "igemm/igemm_wgrad.h"

#include <cutlass/conv/conv2d_problem_size.h>
#include <cutlass/conv/device/implicit_gemm_convolution.h>
#include <cutlass/conv/kernel/default_conv2d_wgrad.h>
#include <cutlass/cutlass.h>
#include <cutlass/epilogue/thread/linear_combination.h>
#include <cutlass/gemm/threadblock/threadblock_swizzle.h>

#include "core/check.h"
#include "fftconv/status.hpp"

namespace fftconv::detail {

namespace {

using Nhwc = cutlass::layout::TensorNHWC;

/// CUTLASS's Conv2dWgrad on fp32 channels-last tensors: TF32 MMAs (m16n8k8, sm_80 on) in the
/// 3xTF32 split, the optimized iterators (16-byte accesses: channels a multiple of 4), three
/// pipeline stages, four warps of a quarter of the tile each.
template <int kM, int kN>
struct WgradOp {
  using Kernel = typename cutlass::conv::kernel::DefaultConv2dWgrad<
      float, Nhwc, float, Nhwc, float, Nhwc, float, cutlass::arch::OpClassTensorOp,
      cutlass::arch::Sm80, cutlass::gemm::GemmShape<kM, kN, igemm::kTileK>,
      cutlass::gemm::GemmShape<kM / 2, kN / 2, igemm::kTileK>, cutlass::gemm::GemmShape<16, 8, 8>,
      cutlass::epilogue::thread::LinearCombination<float, 4, float, float>,
      cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<>, 3,
      cutlass::arch::OpMultiplyAddFastF32, cutlass::conv::IteratorAlgorithm::kOptimized>::Kernel;
  using Conv = cutlass::conv::device::ImplicitGemmConvolution<Kernel>;
};
using WideOp = WgradOp<igemm::tile_m(igemm::Tile::kWide), igemm::tile_n(igemm::Tile::kWide)>;
using NarrowOp = WgradOp<igemm::tile_m(igemm::Tile::kNarrow), igemm::tile_n(igemm::Tile::kNarrow)>;

std::size_t align256(std::size_t v) { return (v + 255) / 256 * 256; }

/// One group's problem as CUTLASS states it: dy (n, out_h, out_w, kg4) and x (n, h, w, cg4)
/// channels-last, dw (kg4, r, s, cg4).
cutlass::conv::Conv2dProblemSize problem_of(const IgemmWgradGeometry& g) {
  return cutlass::conv::Conv2dProblemSize(
      g.n, g.h, g.w, g.cg4, g.kg4, g.r, g.s, g.out_h, g.out_w, g.pad_h, g.pad_w, g.stride_h,
      g.stride_w, g.dil_h, g.dil_w, cutlass::conv::Mode::kCrossCorrelation, g.split_k, 1);
}

template <class Op>
typename Op::Conv::Arguments arguments_of(const IgemmWgradGeometry& g, const float* x,
                                          const float* dy, float* dw) {
  const cutlass::conv::Conv2dProblemSize p = problem_of(g);
  const Nhwc dw_layout = Nhwc::packed({g.kg4, g.r, g.s, g.cg4});
  return typename Op::Conv::Arguments(
      p, {const_cast<float*>(dy), Nhwc::packed({g.n, g.out_h, g.out_w, g.kg4})},
      {const_cast<float*>(x), Nhwc::packed({g.n, g.h, g.w, g.cg4})}, {dw, dw_layout},
      {dw, dw_layout}, {1.0f, 0.0f}, cutlass::conv::SplitKMode::kSerial);
}

const char* cutlass_text(cutlass::Status st) { return cutlass::cutlassGetStatusString(st); }

template <class Op>
void check_implementable(const IgemmWgradGeometry& g) {
  const auto args = arguments_of<Op>(g, nullptr, nullptr, nullptr);
  const cutlass::Status st = Op::Conv::can_implement(args);
  if (st != cutlass::Status::kSuccess) {
    throw Error(Status::kNotSupported,
                std::string("CUTLASS's Conv2dWgrad cannot implement the implicit-GEMM backward "
                            "filter's problem: ") +
                    cutlass_text(st));
  }
  if (Op::Conv::get_workspace_size(args) > g.semaphore_bytes()) {
    throw Error(Status::kInternal, "CUTLASS's Conv2dWgrad asks for more workspace than planned");
  }
}

template <class Op>
void run_group(const IgemmWgradGeometry& g, const float* x, const float* dy, float* dw,
               void* semaphores, cudaStream_t stream) {
  const auto args = arguments_of<Op>(g, x, dy, dw);
  typename Op::Conv op;
  cutlass::Status st = op.initialize(args, g.split_k > 1 ? semaphores : nullptr, stream);
  if (st == cutlass::Status::kSuccess) st = op.run(stream);
  if (st != cutlass::Status::kSuccess) {
    FFTCONV_CUDA_CHECK(cudaGetLastError());
    throw Error(Status::kInternal,
                std::string("CUTLASS's Conv2dWgrad failed: ") + cutlass_text(st));
  }
}

/// dst[g][img][p][c] = src[img][g * cg + c][p] for c < cg, 0 for cg <= c < cg4 (p the plane's
/// positions): 32 x 32 tiles through shared memory, both sides' accesses along their rows.
__global__ void __launch_bounds__(256)
    to_channels_last_kernel(const float* __restrict__ src, float* __restrict__ dst, int groups,
                            int n, int cg, int cg4, std::int64_t plane, std::int64_t p_tiles,
                            int c_tiles) {
  __shared__ float tile[32][33];
  std::int64_t b = blockIdx.x;
  const std::int64_t pt = b % p_tiles;
  b /= p_tiles;
  const int ct = static_cast<int>(b % c_tiles);
  b /= c_tiles;
  const int img = static_cast<int>(b % n);
  const int grp = static_cast<int>(b / n);
  const int tx = threadIdx.x % 32, ty = threadIdx.x / 32;
  const std::int64_t p0 = pt * 32;
  const int c0 = ct * 32;
  const float* s = src + (std::int64_t(img) * groups + grp) * cg * plane;
  for (int i = ty; i < 32; i += 8) {
    const int c = c0 + i;
    const std::int64_t p = p0 + tx;
    tile[i][tx] = c < cg && p < plane ? s[std::int64_t(c) * plane + p] : 0.0f;
  }
  __syncthreads();
  float* d = dst + (std::int64_t(grp) * n + img) * plane * cg4;
  for (int i = ty; i < 32; i += 8) {
    const std::int64_t p = p0 + i;
    const int c = c0 + tx;
    if (p < plane && c < cg4) d[p * cg4 + c] = tile[tx][i];
  }
}

void to_channels_last(const float* src, float* dst, int groups, int n, int cg, int cg4,
                      std::int64_t plane, cudaStream_t stream) {
  const std::int64_t p_tiles = (plane + 31) / 32;
  const int c_tiles = (cg4 + 31) / 32;
  const std::int64_t blocks = std::int64_t(groups) * n * c_tiles * p_tiles;
  to_channels_last_kernel<<<static_cast<unsigned>(blocks), 256, 0, stream>>>(
      src, dst, groups, n, cg, cg4, plane, p_tiles, c_tiles);
  FFTCONV_CUDA_CHECK(cudaGetLastError());
}

/// dw[k][c][r][s] = alpha * dwt[g][k % kg][r][s][c] + beta * dw (beta 0: dw not read).
__global__ void __launch_bounds__(256)
    filter_back_kernel(const float* __restrict__ dwt, float* __restrict__ dw, std::int64_t elems,
                       int kg, int kg4, int cg, int cg4, int rs, float alpha, float beta) {
  for (std::int64_t e = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; e < elems;
       e += std::int64_t(gridDim.x) * blockDim.x) {
    const int tap = static_cast<int>(e % rs);
    const std::int64_t kc = e / rs;
    const int c = static_cast<int>(kc % cg);
    const std::int64_t k = kc / cg;
    const std::int64_t grp = k / kg;
    const std::int64_t kt = grp * kg4 + (k - grp * kg);
    const float v = alpha * dwt[(kt * rs + tap) * cg4 + c];
    dw[e] = beta != 0.0f ? v + beta * dw[e] : v;
  }
}

}  // namespace

void prepare_igemm_wgrad(const IgemmWgradGeometry& g) {
  int dev = 0, major = 0;
  FFTCONV_CUDA_CHECK(cudaGetDevice(&dev));
  FFTCONV_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  if (major < 8) {
    throw Error(Status::kNotSupported,
                "the implicit-GEMM backward filter needs compute capability 8.0 (TF32 MMA)");
  }
  if (g.tile == igemm::Tile::kWide) {
    check_implementable<WideOp>(g);
  } else {
    check_implementable<NarrowOp>(g);
  }
}

void launch_igemm_wgrad(const IgemmWgradGeometry& g, const float* x, const float* dy, float* dw,
                        void* workspace, float alpha, float beta, cudaStream_t stream) {
  auto* base = static_cast<unsigned char*>(workspace);
  float* xt = reinterpret_cast<float*>(base);
  base += align256(sizeof(float) * std::size_t(g.x_floats()));
  float* dyt = reinterpret_cast<float*>(base);
  base += align256(sizeof(float) * std::size_t(g.dy_floats()));
  float* dwt = reinterpret_cast<float*>(base);
  base += align256(sizeof(float) * std::size_t(g.dw_floats()));
  void* semaphores = base;

  to_channels_last(x, xt, g.groups, g.n, g.cg, g.cg4, std::int64_t(g.h) * g.w, stream);
  to_channels_last(dy, dyt, g.groups, g.n, g.kg, g.kg4, std::int64_t(g.out_h) * g.out_w, stream);
  const std::int64_t x_group = std::int64_t(g.n) * g.h * g.w * g.cg4;
  const std::int64_t dy_group = std::int64_t(g.n) * g.out_h * g.out_w * g.kg4;
  const std::int64_t dw_group = std::int64_t(g.kg4) * g.r * g.s * g.cg4;
  for (int grp = 0; grp < g.groups; ++grp) {
    const float *xg = xt + grp * x_group, *dyg = dyt + grp * dy_group;
    float* dwg = dwt + grp * dw_group;
    if (g.tile == igemm::Tile::kWide) {
      run_group<WideOp>(g, xg, dyg, dwg, semaphores, stream);
    } else {
      run_group<NarrowOp>(g, xg, dyg, dwg, semaphores, stream);
    }
  }
  const std::int64_t elems = std::int64_t(g.groups) * g.kg * g.cg * g.r * g.s;
  const int blocks = static_cast<int>(std::min<std::int64_t>((elems + 255) / 256, 4096));
  filter_back_kernel<<<blocks, 256, 0, stream>>>(dwt, dw, elems, g.kg, g.kg4, g.cg, g.cg4,
                                                 g.r * g.s, alpha, beta);
  FFTCONV_CUDA_CHECK(cudaGetLastError());
}

}  // namespace fftconv::detail
