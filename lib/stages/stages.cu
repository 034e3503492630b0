#include "stages/stages.h"

#include <algorithm>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "core/check.h"
#include "stages/dtype_convert.cuh"

namespace fftconv::detail {

namespace {

// Clip: one warp per output row keeps both the plane reads and the output writes coalesced.
constexpr int kRowsPerBlock = 8;
constexpr int kThreadsPerBlock = kRowsPerBlock * 32;
// Enough blocks to fill an H200 several times over; the kernels loop over the remaining rows.
constexpr std::int64_t kMaxBlocks = 65535;

struct PadParams {
  PadSegment seg[kMaxPadSegments];
  std::int64_t fft_h, fft_w, pitch;
};

// Pad: each block writes one chunk of one destination plane as float2 pairs (the pitch is even),
// with 32-bit index math inside the plane; whole planes of zeros and data alike are written, so
// the transform never sees stale workspace.
constexpr int kPadThreads = 256;
constexpr int kPadChunk = 4096;  // float2 pairs per block

template <typename T>
__global__ void __launch_bounds__(kPadThreads) pad_kernel(PadParams p, int chunks_per_plane) {
  const PadSegment& seg = p.seg[blockIdx.y];
  const T* src = static_cast<const T*>(seg.src);
  const Placement& pl = seg.place;
  const int half_w = static_cast<int>(p.pitch / 2);
  const int pairs = static_cast<int>(p.fft_h) * half_w;
  for (std::int64_t block = blockIdx.x; block < seg.planes * chunks_per_plane; block += gridDim.x) {
    const std::int64_t plane = block / chunks_per_plane;
    const int begin = static_cast<int>(block - plane * chunks_per_plane) * kPadChunk;
    const int end = min(begin + kPadChunk, pairs);
    float2* dst = reinterpret_cast<float2*>(seg.dst + plane * p.fft_h * p.pitch);
    const T* src_plane = src + plane * pl.src_h * pl.src_w;
    for (int i = begin + threadIdx.x; i < end; i += kPadThreads) {
      const int th = i / half_w;
      const int tw = 2 * (i - th * half_w);
      float2 v = make_float2(0.0f, 0.0f);
      const std::int64_t si = placed_source(th, pl.off_h, pl.step_h, pl.src_h);
      if (si >= 0) {
        const T* row = src_plane + si * pl.src_w;
        const std::int64_t s0 = tw < p.fft_w ? placed_source(tw, pl.off_w, pl.step_w, pl.src_w) : -1;
        const std::int64_t s1 = tw + 1 < p.fft_w ? placed_source(tw + 1, pl.off_w, pl.step_w, pl.src_w) : -1;
        if (s0 >= 0) v.x = to_float(row[s0]);
        if (s1 >= 0) v.y = to_float(row[s1]);
      }
      dst[i] = v;
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
  FFTCONV_ASSERT(g.fft_h * (g.pitch / 2) < (std::int64_t{1} << 31), "FFT plane too large");
  PadParams p{};
  std::int64_t max_planes = 0;
  for (int i = 0; i < count; ++i) {
    p.seg[i] = segments[i];
    max_planes = std::max(max_planes, segments[i].planes);
  }
  p.fft_h = g.fft_h;
  p.fft_w = g.fft_w;
  p.pitch = g.pitch;
  const int chunks = static_cast<int>((g.fft_h * (g.pitch / 2) + kPadChunk - 1) / kPadChunk);
  const dim3 grid(static_cast<unsigned>(std::min<std::int64_t>(max_planes * chunks, 1 << 20)),
                  static_cast<unsigned>(count));
  switch (dtype) {
    case DType::kF32: pad_kernel<float><<<grid, kPadThreads, 0, stream>>>(p, chunks); break;
    case DType::kF16: pad_kernel<__half><<<grid, kPadThreads, 0, stream>>>(p, chunks); break;
    case DType::kBF16: pad_kernel<__nv_bfloat16><<<grid, kPadThreads, 0, stream>>>(p, chunks); break;
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
