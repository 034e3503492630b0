#include "stages/stages.h"

#include <algorithm>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "core/check.h"
#include "geometry/int_divider.h"
#include "stages/dtype_convert.cuh"

namespace fftconv::detail {

namespace {

struct PadParams {
  PadSegment seg[kMaxPadSegments];
  std::int64_t fft_h, fft_w, pitch;
  IntDivider half_w;  ///< pairs per destination row (pitch / 2)
};

// Pad: each block writes one chunk of one destination plane as float2 pairs (the pitch is even),
// with 32-bit index math inside the plane; whole planes of zeros and data alike are written, so
// the transform never sees stale workspace.
constexpr int kPadThreads = 256;
// Elements per block, sized to the problem: 16 per thread when there is plenty of work (fewer
// blocks, less per-block index math: multichannel_r45 pad 0.30 ms against 0.44 ms with 4), down
// to 4 when there is little (16 dependent rounds per thread cost landmark_batch64's pad and clip
// 12-14 us for 2.4 MB each; 10 us with 4). Target: about four waves of eight blocks per SM.
constexpr int kMinChunk = 1024, kMaxChunk = 4096;
constexpr std::int64_t kTargetBlocks = 4 * 132 * 8;
// Elements a thread reads before it writes any: the reads of one round are independent, so
// their latencies overlap.
constexpr int kRound = 4;

int chunk_for(std::int64_t total) {
  const std::int64_t per_block =
      (total / kTargetBlocks + kPadThreads - 1) / kPadThreads * kPadThreads;
  return static_cast<int>(
      std::min<std::int64_t>(kMaxChunk, std::max<std::int64_t>(kMinChunk, per_block)));
}

// The source elements of pair i (flat pair index) of a destination plane whose tile-0 source
// starts at src_plane, as stored bits (0: a zero). kUnitStep: the placement's steps are 1 (x, w;
// only dy has the stride's step), so the source index needs no division; nvcc specialised the
// fp32 loop on its own but not the fp16/bf16 one.
template <typename T>
struct RawPair {
  raw_t<T> x, y;
};

template <typename T, bool kUnitStep>
__device__ __forceinline__ RawPair<T> pad_pair(const PadParams& p, const Placement& pl,
                                               const PlaneSource& ps, const T* src_plane, int i) {
  int th = 0, pair = 0;
  p.half_w.divmod(i, th, pair);
  const int tw = 2 * pair;
  const std::int64_t step_h = kUnitStep ? 1 : pl.step_h, step_w = kUnitStep ? 1 : pl.step_w;
  RawPair<T> v{0, 0};
  const std::int64_t si = placed_source(th, ps.off_h, step_h, pl.src_h);
  if (si >= 0) {
    const T* row = src_plane + si * pl.src_w;
    const std::int64_t s0 = tw < p.fft_w ? placed_source(tw, ps.off_w, step_w, pl.src_w) : -1;
    const std::int64_t s1 =
        tw + 1 < p.fft_w ? placed_source(tw + 1, ps.off_w, step_w, pl.src_w) : -1;
    if (s0 >= 0) v.x = load_raw(row + s0);
    if (s1 >= 0) v.y = load_raw(row + s1);
  }
  return v;
}

template <typename T, bool kUnitStep>
__device__ __forceinline__ void pad_chunk(const PadParams& p, const Placement& pl,
                                          const PlaneSource& ps, const T* src_plane, float2* dst,
                                          int begin, int end) {
  for (int base = begin + static_cast<int>(threadIdx.x); base < end; base += kRound * kPadThreads) {
    RawPair<T> v[kRound];
#pragma unroll
    for (int u = 0; u < kRound; ++u) {
      const int i = base + u * kPadThreads;
      v[u] = i < end ? pad_pair<T, kUnitStep>(p, pl, ps, src_plane, i) : RawPair<T>{0, 0};
    }
#pragma unroll
    for (int u = 0; u < kRound; ++u) {
      const int i = base + u * kPadThreads;
      if (i < end) dst[i] = make_float2(raw_to_float<T>(v[u].x), raw_to_float<T>(v[u].y));
    }
  }
}

template <typename T>
__global__ void __launch_bounds__(kPadThreads)
    pad_kernel(PadParams p, int chunk, int chunks_per_plane) {
  const PadSegment& seg = p.seg[blockIdx.y];
  const T* src = static_cast<const T*>(seg.src);
  const Placement& pl = seg.place;
  const int pairs = static_cast<int>(p.fft_h) * static_cast<int>(p.half_w.divisor());
  const bool unit_step = pl.step_h == 1 && pl.step_w == 1;
  for (std::int64_t block = blockIdx.x; block < seg.planes * chunks_per_plane; block += gridDim.x) {
    const std::int64_t plane = block / chunks_per_plane;
    const int begin = static_cast<int>(block - plane * chunks_per_plane) * chunk;
    const int end = min(begin + chunk, pairs);
    float2* dst = reinterpret_cast<float2*>(seg.dst + plane * p.fft_h * p.pitch);
    const PlaneSource ps = pad_plane_source(plane, seg.map, pl.off_h, pl.off_w);
    const T* src_plane = src + ps.plane * pl.src_h * pl.src_w;
    if (unit_step) {
      pad_chunk<T, true>(p, pl, ps, src_plane, dst, begin, end);
    } else {
      pad_chunk<T, false>(p, pl, ps, src_plane, dst, begin, end);
    }
  }
}

struct ClipParams {
  ClipArgs a;
  FftGeometry g;
  IntDivider out_w, tile_h, tile_w;
};

// The unscaled value clip reads for element i of an output plane whose tile-0 result plane is
// plane0 (0 outside the result). Result planes of later tiles are k planes apart.
__device__ __forceinline__ float clip_value(const ClipParams& c, std::int64_t plane0, int i) {
  const ClipArgs& a = c.a;
  const FftGeometry& g = c.g;
  int p = 0, q = 0, th = 0, lp = 0, tw = 0, lq = 0;
  c.out_w.divmod(i, p, q);
  c.tile_h.divmod(p, th, lp);
  c.tile_w.divmod(q, tw, lq);
  const std::int64_t src_plane = plane0 + (th * g.tiles_w + tw) * a.k;
  const std::int64_t row = clip_read(lp, a.stride_h, a.off_h, g.fft_h, a.wrap);
  const std::int64_t col = clip_read(lq, a.stride_w, a.off_w, g.fft_w, a.wrap);
  return row >= 0 && col >= 0 ? a.src[(src_plane * g.fft_h + row) * g.pitch + col] : 0.0f;
}

// Clip: like pad, a block per chunk of one output plane, 32-bit index math inside the plane.
template <typename T, bool kAccumulate>
__global__ void __launch_bounds__(kPadThreads)
    clip_kernel(ClipParams c, int chunk, int chunks_per_plane) {
  const ClipArgs& a = c.a;
  T* y = static_cast<T*>(a.y);
  const T* bias = static_cast<const T*>(a.bias);
  const int per_plane = static_cast<int>(a.out_h) * static_cast<int>(c.out_w.divisor());
  for (std::int64_t block = blockIdx.x; block < a.planes * chunks_per_plane; block += gridDim.x) {
    const std::int64_t plane = block / chunks_per_plane;
    const int begin = static_cast<int>(block - plane * chunks_per_plane) * chunk;
    const int end = min(begin + chunk, per_plane);
    const float b = bias ? to_float(bias[plane % a.k]) : 0.0f;
    const std::int64_t plane0 = clip_plane_source(plane, a.k, c.g.tiles_h * c.g.tiles_w, 0);
    T* dst = y + plane * per_plane;
    for (int base = begin + static_cast<int>(threadIdx.x); base < end;
         base += kRound * kPadThreads) {
      // Every read of the round first (the result, and y when accumulating), then the math.
      float v[kRound];
      raw_t<T> old[kRound];
#pragma unroll
      for (int u = 0; u < kRound; ++u) {
        const int i = base + u * kPadThreads;
        v[u] = 0.0f;
        old[u] = 0;
        if (i < end) {
          v[u] = clip_value(c, plane0, i);
          if (kAccumulate) old[u] = load_raw(dst + i);
        }
      }
#pragma unroll
      for (int u = 0; u < kRound; ++u) {
        const int i = base + u * kPadThreads;
        if (i < end) {
          float out = fmaf(v[u], a.scale, b);
          if (kAccumulate) out = fmaf(a.beta, raw_to_float<T>(old[u]), out);
          dst[i] = from_float<T>(out);
        }
      }
    }
  }
}

template <typename T>
void clip_typed(const ClipParams& c, unsigned grid, int chunk, int chunks, cudaStream_t stream) {
  if (c.a.beta != 0.0f) {
    clip_kernel<T, true><<<grid, kPadThreads, 0, stream>>>(c, chunk, chunks);
  } else {
    clip_kernel<T, false><<<grid, kPadThreads, 0, stream>>>(c, chunk, chunks);
  }
}

}  // namespace

void launch_pad(const PadSegment* segments, int count, DType dtype, const FftGeometry& g,
                cudaStream_t stream) {
  FFTCONV_ASSERT(count >= 1 && count <= kMaxPadSegments, "pad segment count out of range");
  FFTCONV_ASSERT(g.fft_h * (g.pitch / 2) < (std::int64_t{1} << 31), "FFT plane too large");
  PadParams p{};
  std::int64_t max_planes = 0, total_planes = 0;
  for (int i = 0; i < count; ++i) {
    p.seg[i] = segments[i];
    max_planes = std::max(max_planes, segments[i].planes);
    total_planes += segments[i].planes;
  }
  p.fft_h = g.fft_h;
  p.fft_w = g.fft_w;
  p.pitch = g.pitch;
  p.half_w = IntDivider(static_cast<std::uint32_t>(g.pitch / 2));
  const std::int64_t pairs = g.fft_h * (g.pitch / 2);
  const int chunk = chunk_for(total_planes * pairs);
  const int chunks = static_cast<int>((pairs + chunk - 1) / chunk);
  const dim3 grid(static_cast<unsigned>(std::min<std::int64_t>(max_planes * chunks, 1 << 20)),
                  static_cast<unsigned>(count));
  switch (dtype) {
    case DType::kF32:
      pad_kernel<float><<<grid, kPadThreads, 0, stream>>>(p, chunk, chunks);
      break;
    case DType::kF16:
      pad_kernel<__half><<<grid, kPadThreads, 0, stream>>>(p, chunk, chunks);
      break;
    case DType::kBF16:
      pad_kernel<__nv_bfloat16><<<grid, kPadThreads, 0, stream>>>(p, chunk, chunks);
      break;
  }
  FFTCONV_CHECK_LAUNCH();
}

void launch_clip(const ClipArgs& args, DType dtype, const FftGeometry& g, cudaStream_t stream) {
  FFTCONV_ASSERT(args.out_h * args.out_w < (std::int64_t{1} << 31), "output plane too large");
  if (args.planes == 0 || args.out_h == 0 || args.out_w == 0) return;
  FFTCONV_ASSERT(g.tile_out_h >= 1 && g.tile_out_w >= 1, "clip window without outputs");
  const ClipParams c{args, g, IntDivider(static_cast<std::uint32_t>(args.out_w)),
                     IntDivider(static_cast<std::uint32_t>(g.tile_out_h)),
                     IntDivider(static_cast<std::uint32_t>(g.tile_out_w))};
  const std::int64_t per_plane = args.out_h * args.out_w;
  const int chunk = chunk_for(args.planes * per_plane);
  const int chunks = static_cast<int>((per_plane + chunk - 1) / chunk);
  const auto grid = static_cast<unsigned>(
      std::max<std::int64_t>(1, std::min<std::int64_t>(args.planes * chunks, 1 << 20)));
  switch (dtype) {
    case DType::kF32:
      clip_typed<float>(c, grid, chunk, chunks, stream);
      break;
    case DType::kF16:
      clip_typed<__half>(c, grid, chunk, chunks, stream);
      break;
    case DType::kBF16:
      clip_typed<__nv_bfloat16>(c, grid, chunk, chunks, stream);
      break;
  }
  FFTCONV_CHECK_LAUNCH();
}

}  // namespace fftconv::detail
