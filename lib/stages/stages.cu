#include "stages/stages.h"

#include <algorithm>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "core/check.h"
#include "stages/dtype_convert.cuh"

namespace fftconv::detail {

namespace {

// One warp per destination row keeps both the source reads and the plane writes coalesced.
constexpr int kRowsPerBlock = 8;
constexpr int kThreadsPerBlock = kRowsPerBlock * 32;
// Enough blocks to fill an H200 several times over; the kernels loop over the remaining rows.
constexpr std::int64_t kMaxBlocks = 65535;

struct PadParams {
  PadSegment seg[kMaxPadSegments];
  std::int64_t fft_h, fft_w, pitch;
};

template <typename T>
__global__ void __launch_bounds__(kThreadsPerBlock) pad_kernel(PadParams p) {
  const PadSegment& seg = p.seg[blockIdx.y];
  const T* src = static_cast<const T*>(seg.src);
  const Placement& pl = seg.place;
  const std::int64_t rows = seg.planes * p.fft_h;
  const int lane = threadIdx.x & 31;
  for (std::int64_t row = std::int64_t(blockIdx.x) * kRowsPerBlock + (threadIdx.x >> 5); row < rows;
       row += std::int64_t(gridDim.x) * kRowsPerBlock) {
    const std::int64_t plane = row / p.fft_h;
    const std::int64_t th = row - plane * p.fft_h;
    float* dst = seg.dst + row * p.pitch;
    const std::int64_t si = placed_source(th, pl.off_h, pl.step_h, pl.src_h);
    if (si < 0) {
      for (std::int64_t tw = lane; tw < p.pitch; tw += 32) dst[tw] = 0.0f;
      continue;
    }
    const T* src_row = src + (plane * pl.src_h + si) * pl.src_w;
    for (std::int64_t tw = lane; tw < p.pitch; tw += 32) {
      const std::int64_t sj = tw < p.fft_w ? placed_source(tw, pl.off_w, pl.step_w, pl.src_w) : -1;
      dst[tw] = sj >= 0 ? to_float(src_row[sj]) : 0.0f;
    }
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreadsPerBlock)
    clip_kernel(ClipArgs a, std::int64_t fft_h, std::int64_t fft_w, std::int64_t pitch) {
  T* y = static_cast<T*>(a.y);
  const T* bias = static_cast<const T*>(a.bias);
  const std::int64_t rows = a.planes * a.out_h;
  const int lane = threadIdx.x & 31;
  for (std::int64_t row = std::int64_t(blockIdx.x) * kRowsPerBlock + (threadIdx.x >> 5); row < rows;
       row += std::int64_t(gridDim.x) * kRowsPerBlock) {
    const std::int64_t plane = row / a.out_h;
    const std::int64_t p = row - plane * a.out_h;
    const float b = bias ? to_float(bias[plane % a.k]) : 0.0f;
    const float* src_row = a.src + (plane * fft_h + clip_source(p, a.stride_h, fft_h)) * pitch;
    T* dst = y + row * a.out_w;
    for (std::int64_t q = lane; q < a.out_w; q += 32) {
      dst[q] = from_float<T>(fmaf(src_row[clip_source(q, a.stride_w, fft_w)], a.scale, b));
    }
  }
}

unsigned grid_for_rows(std::int64_t rows) {
  return static_cast<unsigned>(
      std::max<std::int64_t>(1, std::min(kMaxBlocks, (rows + kRowsPerBlock - 1) / kRowsPerBlock)));
}

}  // namespace

void launch_pad(const PadSegment* segments, int count, DType dtype, const FftGeometry& g,
                cudaStream_t stream) {
  FFTCONV_ASSERT(count >= 1 && count <= kMaxPadSegments, "pad segment count out of range");
  PadParams p{};
  std::int64_t max_rows = 0;
  for (int i = 0; i < count; ++i) {
    p.seg[i] = segments[i];
    max_rows = std::max(max_rows, segments[i].planes * g.fft_h);
  }
  p.fft_h = g.fft_h;
  p.fft_w = g.fft_w;
  p.pitch = g.pitch;
  const dim3 grid(grid_for_rows(max_rows), static_cast<unsigned>(count));
  switch (dtype) {
    case DType::kF32: pad_kernel<float><<<grid, kThreadsPerBlock, 0, stream>>>(p); break;
    case DType::kF16: pad_kernel<__half><<<grid, kThreadsPerBlock, 0, stream>>>(p); break;
    case DType::kBF16: pad_kernel<__nv_bfloat16><<<grid, kThreadsPerBlock, 0, stream>>>(p); break;
  }
  FFTCONV_CHECK_LAUNCH();
}

void launch_clip(const ClipArgs& args, DType dtype, const FftGeometry& g, cudaStream_t stream) {
  const unsigned grid = grid_for_rows(args.planes * args.out_h);
  switch (dtype) {
    case DType::kF32:
      clip_kernel<float><<<grid, kThreadsPerBlock, 0, stream>>>(args, g.fft_h, g.fft_w, g.pitch);
      break;
    case DType::kF16:
      clip_kernel<__half><<<grid, kThreadsPerBlock, 0, stream>>>(args, g.fft_h, g.fft_w, g.pitch);
      break;
    case DType::kBF16:
      clip_kernel<__nv_bfloat16><<<grid, kThreadsPerBlock, 0, stream>>>(args, g.fft_h, g.fft_w, g.pitch);
      break;
  }
  FFTCONV_CHECK_LAUNCH();
}

}  // namespace fftconv::detail
