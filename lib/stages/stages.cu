#include "stages/stages.h"

#include <algorithm>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "core/check.h"
#include "geometry/int_divider.h"
#include "stages/dtype_convert.cuh"

namespace fftconv::detail {

namespace {

struct PadParams {
  PadSegment seg[kMaxPadSegments];
  SegmentDividers div[kMaxPadSegments];
  int fft_h, fft_w;
  std::int64_t pitch;
  IntDivider half_w;  ///< pairs per destination row (pitch / 2)
  IntDivider chunks;  ///< chunks per plane
};

// Pad: each warp writes one chunk of one destination plane as float2 pairs (the pitch is even),
// with 32-bit index math inside the plane; whole planes of zeros and data alike are written, so
// the transform never sees stale workspace. The warps of a block take consecutive chunks, and
// each finds its chunk's plane and source on its own: with a block per chunk, a small plane
// (replknet_dw31_14's 544 pairs) gave each thread two pairs for the same finding, and Nsight
// Compute counted the pad and clip bound by issued instructions, not by memory.
constexpr int kPadThreads = 256;
constexpr int kWarp = 32;
constexpr int kWarpsPerBlock = kPadThreads / kWarp;
// Elements per warp, sized to the problem: 16 per lane when there is plenty of work (fewer
// chunks, less per-chunk index math: multichannel_r45 pad 0.30 ms against 0.44 ms with 4), down
// to 4 when there is little (16 dependent rounds per lane cost landmark_batch64's pad and clip
// 12-14 us for 2.4 MB each; 10 us with 4). Target: about four waves of 64 warps per SM. A
// plane's chunks are of equal size (to a multiple of 32), so no warp idles on a short tail.
constexpr int kMinChunk = 128, kMaxChunk = 512;
constexpr std::int64_t kTargetWarps = 4 * 132 * 64;
// The stages are bound by memory latency: a full SM (2048 threads) keeps the most reads in
// flight. 32-bit indices inside a plane keep pad and clip within the 32 registers a thread may
// then use, without spills (ptxas -v); at 48-52 registers the fp16/bf16 pad had fewer blocks per
// SM than fp32's and ran up to 4% slower.
constexpr int kMinBlocksPerSm = 8;
// Elements a thread reads before it writes any: the reads of one round are independent, so
// their latencies overlap.
constexpr int kRound = 4;

// Blocks of a launch at most; each block walks on by the grid size, with 32-bit block indices.
constexpr std::int64_t kMaxGrid = 1 << 20;

// Whether v (>= 0) works as a 32-bit index inside a plane; fits_int: either sign.
bool fits_index(std::int64_t v) { return v >= 0 && v < (std::int64_t{1} << 31); }
bool fits_int(std::int64_t v) { return fits_index(v < 0 ? -v : v); }
// A divider for a launch-fixed divisor the launcher has checked (1 <= d < 2^31).
IntDivider divider(std::int64_t d) {
  FFTCONV_ASSERT(d >= 1 && fits_index(d), "divisor out of range");
  return IntDivider(static_cast<std::uint32_t>(d));
}

// Elements (pad: pairs) per warp for `total` elements in planes of `per_plane`.
int chunk_for(std::int64_t total, std::int64_t per_plane) {
  const std::int64_t per_warp = std::min<std::int64_t>(
      kMaxChunk, std::max<std::int64_t>(kMinChunk, (total + kTargetWarps - 1) / kTargetWarps));
  const std::int64_t chunks = (per_plane + per_warp - 1) / per_warp;
  const std::int64_t even = (per_plane + chunks - 1) / chunks;
  return static_cast<int>((even + kWarp - 1) / kWarp * kWarp);
}

// Where one destination plane's source lies, in 32-bit indices (launch_pad checks they fit).
struct PlaneSpot {
  int off_h, off_w, src_h, src_w;
};

// The source elements of pair i (flat pair index) of a destination plane whose source plane
// starts at src_plane, as stored bits (0: a zero). kUnitStep: the placement's steps are 1 (x, w;
// only dy has the stride's step), so the source index needs no division; nvcc specialised the
// fp32 loop on its own but not the fp16/bf16 one.
template <typename T>
struct RawPair {
  raw_t<T> x, y;
};

// The source index along one axis: unit steps need no division, others divide by an IntDivider.
template <bool kUnitStep>
__device__ __forceinline__ int pad_source(int t, int off, const IntDivider& step, int src) {
  return kUnitStep ? placed_source<int>(t, off, 1, src) : placed_source<int>(t, off, step, src);
}

template <typename T, bool kUnitStep>
__device__ __forceinline__ RawPair<T> pad_pair(const PadParams& p, const SegmentDividers& dv,
                                               const PlaneSpot& ps, const T* src_plane, int i) {
  int th = 0, pair = 0;
  p.half_w.divmod(i, th, pair);
  const int tw = 2 * pair;
  RawPair<T> v{0, 0};
  const int si = pad_source<kUnitStep>(th, ps.off_h, dv.step_h, ps.src_h);
  if (si >= 0) {
    // Offsets inside the source plane as unsigned 32-bit values (launch_pad checks that a plane
    // has fewer than 2^31 elements): one wide multiply-add per address, where signed 64-bit
    // offsets cost six instructions.
    const unsigned row = static_cast<unsigned>(si * ps.src_w);
    const int s0 = tw < p.fft_w ? pad_source<kUnitStep>(tw, ps.off_w, dv.step_w, ps.src_w) : -1;
    const int s1 =
        tw + 1 < p.fft_w ? pad_source<kUnitStep>(tw + 1, ps.off_w, dv.step_w, ps.src_w) : -1;
    if (s0 >= 0) v.x = load_raw(src_plane + (row + static_cast<unsigned>(s0)));
    if (s1 >= 0) v.y = load_raw(src_plane + (row + static_cast<unsigned>(s1)));
  }
  return v;
}

template <typename T, bool kUnitStep>
__device__ __forceinline__ void pad_chunk(const PadParams& p, const SegmentDividers& dv,
                                          const PlaneSpot& ps, const T* src_plane, float2* dst,
                                          int begin, int end, int lane) {
  for (int base = begin + lane; base < end; base += kRound * kWarp) {
    RawPair<T> v[kRound];
#pragma unroll
    for (int u = 0; u < kRound; ++u) {
      const int i = base + u * kWarp;
      v[u] = i < end ? pad_pair<T, kUnitStep>(p, dv, ps, src_plane, i) : RawPair<T>{0, 0};
    }
#pragma unroll
    for (int u = 0; u < kRound; ++u) {
      const int i = base + u * kWarp;
      if (i < end) dst[i] = make_float2(raw_to_float<T>(v[u].x), raw_to_float<T>(v[u].y));
    }
  }
}

// A warp per chunk: body(plane, begin, end) for every chunk [begin, end) of `per_plane`
// elements that this warp owns, grid-stride over planes * chunks_per_plane chunks.
template <typename Body>
__device__ __forceinline__ void for_each_warp_chunk(int planes, const IntDivider& chunks_per_plane,
                                                    int chunk, int per_plane, Body&& body) {
  const int chunks = planes * static_cast<int>(chunks_per_plane.divisor());
  for (int w = static_cast<int>(blockIdx.x * kWarpsPerBlock + threadIdx.x / kWarp); w < chunks;
       w += static_cast<int>(gridDim.x) * kWarpsPerBlock) {
    int plane = 0, part = 0;
    chunks_per_plane.divmod(w, plane, part);
    const int begin = part * chunk;
    body(plane, begin, min(begin + chunk, per_plane));
  }
}

template <typename T>
__global__ void __launch_bounds__(kPadThreads, kMinBlocksPerSm) pad_kernel(PadParams p, int chunk) {
  const PadSegment& seg = p.seg[blockIdx.y];
  const SegmentDividers& dv = p.div[blockIdx.y];
  const T* src = static_cast<const T*>(seg.src);
  const Placement& pl = seg.place;
  const int pairs = p.fft_h * static_cast<int>(p.half_w.divisor());
  const bool unit_step = pl.step_h == 1 && pl.step_w == 1;
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  // launch_pad checks that planes * chunks (and a grid's step past them) fits in 32 bits.
  const auto pad_plane_chunk = [&](int plane, int begin, int end) {
    float2* dst =
        reinterpret_cast<float2*>(seg.dst + static_cast<std::int64_t>(plane) * p.fft_h * p.pitch);
    const PlaneSource source = pad_plane_source<int>(plane, seg.map, pl.off_h, pl.off_w,
                                                     dv.per_image, dv.inner, dv.tiles_w);
    const PlaneSpot ps{static_cast<int>(source.off_h), static_cast<int>(source.off_w),
                       static_cast<int>(pl.src_h), static_cast<int>(pl.src_w)};
    const T* src_plane = src + source.plane * pl.src_h * pl.src_w;
    if (unit_step) {
      pad_chunk<T, true>(p, dv, ps, src_plane, dst, begin, end, lane);
    } else {
      pad_chunk<T, false>(p, dv, ps, src_plane, dst, begin, end, lane);
    }
  };
  for_each_warp_chunk(static_cast<int>(seg.planes), p.chunks, chunk, pairs, pad_plane_chunk);
}

// The clip's read window in 32-bit indices (launch_clip checks they fit).
struct ClipWindow {
  int stride_h, stride_w, off_h, off_w, fft_h, fft_w;
};

struct ClipParams {
  ClipArgs a;
  FftGeometry g;
  ClipWindow win;
  IntDivider out_w, tile_h, tile_w;
  IntDivider chunks, k;  ///< chunks per output plane; filters (output plane = n * k + kk)
};

// The unscaled value clip reads for element i of an output plane whose tile-0 result plane starts
// at plane0 (0 outside the result). kTiled: the output has several tiles, whose result planes are
// k planes apart; otherwise the whole output is tile 0, with no tile divisions. Offsets inside a
// result plane are unsigned 32-bit (fft_h * pitch < 2^32, launch_pad's check).
template <bool kTiled>
__device__ __forceinline__ float clip_value(const ClipParams& c, const float* plane0, int i) {
  const ClipWindow& w = c.win;
  int lp = 0, lq = 0;
  c.out_w.divmod(i, lp, lq);
  const float* src = plane0;
  if (kTiled) {
    int th = 0, tw = 0;
    c.tile_h.divmod(lp, th, lp);
    c.tile_w.divmod(lq, tw, lq);
    src += static_cast<std::int64_t>(th * static_cast<int>(c.g.tiles_w) + tw) * c.a.k * c.g.fft_h *
           c.g.pitch;
  }
  const int row = clip_read<int>(lp, w.stride_h, w.off_h, w.fft_h, c.a.wrap);
  const int col = clip_read<int>(lq, w.stride_w, w.off_w, w.fft_w, c.a.wrap);
  return row >= 0 && col >= 0 ? src[static_cast<unsigned>(row) * static_cast<unsigned>(c.g.pitch) +
                                    static_cast<unsigned>(col)]
                              : 0.0f;
}

// Clip: like pad, a warp per chunk of one output plane, 32-bit index math inside the plane.
template <typename T, bool kAccumulate, bool kTiled>
__global__ void __launch_bounds__(kPadThreads, kMinBlocksPerSm)
    clip_kernel(ClipParams c, int chunk) {
  const ClipArgs& a = c.a;
  T* y = static_cast<T*>(a.y);
  const T* bias = static_cast<const T*>(a.bias);
  const int per_plane = static_cast<int>(a.out_h) * static_cast<int>(c.out_w.divisor());
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  // launch_clip checks that planes * chunks (and a grid's step past them) fits in 32 bits.
  const auto clip_plane_chunk = [&](int plane, int begin, int end) {
    // The bias (forward only) is read before the rounds. A 2-byte bias is converted after the
    // first round's reads: converted before the loop, it made those reads wait for the bias's
    // (Nsight Compute, seed3_landmark_same's one-wave clip: fp16 2.75 us against fp32's
    // 2.62 us, median of 200 launches). The first round is peeled for that, as ptxas moves a
    // conversion inside the loop out of it; reading the bias inside the loop instead cost the
    // large clips 4% (replknet_dw31_14 0.0177 -> 0.0185 ms).
    const raw_t<T> b_raw = !kAccumulate && bias ? load_raw(bias + plane % c.k) : raw_t<T>(0);
    constexpr bool kConvertAfterReads = !kAccumulate && !std::is_same_v<T, float>;
    float b = kConvertAfterReads ? 0.0f : raw_to_float<T>(b_raw);
    const float* plane0 = a.src + clip_plane_source<int>(plane, c.k, c.g.tiles_h * c.g.tiles_w, 0) *
                                      c.g.fft_h * c.g.pitch;
    T* dst = y + static_cast<std::int64_t>(plane) * per_plane;
    // One round: every read first (the result, and y when accumulating), then the math.
    const auto round = [&](int base, bool first) {
      float v[kRound];
      raw_t<T> old[kRound];
#pragma unroll
      for (int u = 0; u < kRound; ++u) {
        const int i = base + u * kWarp;
        v[u] = 0.0f;
        old[u] = 0;
        if (i < end) {
          v[u] = clip_value<kTiled>(c, plane0, i);
          if (kAccumulate) old[u] = load_raw(dst + i);
        }
      }
      if (first) b = raw_to_float<T>(b_raw);
#pragma unroll
      for (int u = 0; u < kRound; ++u) {
        const int i = base + u * kWarp;
        if (i < end) {
          float out = fmaf(v[u], a.scale, b);
          if (kAccumulate) out = fmaf(a.beta, raw_to_float<T>(old[u]), out);
          dst[i] = from_float<T>(out);
        }
      }
    };
    int base = begin + lane;
    if (kConvertAfterReads && base < end) {
      round(base, true);
      base += kRound * kWarp;
    }
    for (; base < end; base += kRound * kWarp) round(base, false);
  };
  for_each_warp_chunk(static_cast<int>(a.planes), c.chunks, chunk, per_plane, clip_plane_chunk);
}

template <typename T, bool kTiled>
void clip_tiled(const ClipParams& c, unsigned grid, int chunk, cudaStream_t stream) {
  if (c.a.beta != 0.0f) {
    clip_kernel<T, true, kTiled><<<grid, kPadThreads, 0, stream>>>(c, chunk);
  } else {
    clip_kernel<T, false, kTiled><<<grid, kPadThreads, 0, stream>>>(c, chunk);
  }
}

template <typename T>
void clip_typed(const ClipParams& c, unsigned grid, int chunk, cudaStream_t stream) {
  // Tiled: the output spans more than one tile (forward passes over tiled inputs).
  if (c.g.tile_out_h < c.a.out_h || c.g.tile_out_w < c.a.out_w) {
    clip_tiled<T, true>(c, grid, chunk, stream);
  } else {
    clip_tiled<T, false>(c, grid, chunk, stream);
  }
}

}  // namespace

SegmentDividers segment_dividers(const PadSegment& seg, const FftGeometry& g) {
  // Offsets of the last tile are the lowest; t - off stays below 2^31 for every t < fft.
  const Placement& pl = seg.place;
  const TileMap& m = seg.map;
  const std::int64_t low_h = pl.off_h - (m.tiles_h - 1) * m.step_h;
  const std::int64_t low_w = pl.off_w - (m.tiles_w - 1) * m.step_w;
  FFTCONV_ASSERT(fits_index(pl.src_h) && fits_index(pl.src_w) && fits_index(pl.src_h * pl.src_w) &&
                     pl.step_h >= 1 && pl.step_w >= 1 && fits_index(pl.step_h) &&
                     fits_index(pl.step_w) && fits_int(pl.off_h) && fits_int(pl.off_w) &&
                     fits_int(low_h) && fits_int(low_w) && fits_index(g.fft_h - low_h) &&
                     fits_index(g.fft_w - low_w),
                 "pad placement too large for 32-bit plane indices");
  FFTCONV_ASSERT(m.inner >= 1 && m.tiles_h >= 1 && m.tiles_w >= 1 &&
                     fits_index(m.tiles_h * m.tiles_w * m.inner),
                 "pad tile map out of range");
  return SegmentDividers{divider(m.tiles_h * m.tiles_w * m.inner), divider(m.inner),
                         divider(m.tiles_w), divider(pl.step_h), divider(pl.step_w)};
}

void launch_pad(const PadSegment* segments, int count, DType dtype, const FftGeometry& g,
                cudaStream_t stream) {
  FFTCONV_ASSERT(count >= 1 && count <= kMaxPadSegments, "pad segment count out of range");
  FFTCONV_ASSERT(g.fft_h * (g.pitch / 2) < (std::int64_t{1} << 31), "FFT plane too large");
  PadParams p{};
  std::int64_t max_planes = 0, total_planes = 0;
  for (int i = 0; i < count; ++i) {
    p.seg[i] = segments[i];
    p.div[i] = segment_dividers(segments[i], g);
    max_planes = std::max(max_planes, segments[i].planes);
    total_planes += segments[i].planes;
  }
  p.fft_h = static_cast<int>(g.fft_h);
  p.fft_w = static_cast<int>(g.fft_w);
  p.pitch = g.pitch;
  p.half_w = divider(g.pitch / 2);
  const std::int64_t pairs = g.fft_h * (g.pitch / 2);
  const int chunk = chunk_for(total_planes * pairs, pairs);
  const int chunks = static_cast<int>((pairs + chunk - 1) / chunk);
  FFTCONV_ASSERT(fits_index(max_planes * chunks + kMaxGrid * kWarpsPerBlock),
                 "too many FFT planes for one pad launch");
  p.chunks = divider(chunks);
  const std::int64_t blocks = (max_planes * chunks + kWarpsPerBlock - 1) / kWarpsPerBlock;
  const dim3 grid(static_cast<unsigned>(std::min<std::int64_t>(blocks, kMaxGrid)),
                  static_cast<unsigned>(count));
  switch (dtype) {
    case DType::kF32:
      pad_kernel<float><<<grid, kPadThreads, 0, stream>>>(p, chunk);
      break;
    case DType::kF16:
      pad_kernel<__half><<<grid, kPadThreads, 0, stream>>>(p, chunk);
      break;
    case DType::kBF16:
      pad_kernel<__nv_bfloat16><<<grid, kPadThreads, 0, stream>>>(p, chunk);
      break;
  }
  FFTCONV_CHECK_LAUNCH();
}

void check_clip_args(const ClipArgs& args, const FftGeometry& g) {
  FFTCONV_ASSERT(args.out_h * args.out_w < (std::int64_t{1} << 31), "output plane too large");
  FFTCONV_ASSERT(g.tile_out_h >= 1 && g.tile_out_w >= 1, "clip window without outputs");
  FFTCONV_ASSERT(args.beta == 0.0f || args.bias == nullptr,
                 "the clip adds a bias only where it does not accumulate (beta = 0)");
  const auto last_read = [](std::int64_t out, std::int64_t stride, std::int64_t off) {
    return off + (out - 1) * stride;
  };
  FFTCONV_ASSERT(fits_index(last_read(g.tile_out_h, args.stride_h, args.off_h)) &&
                     fits_index(last_read(g.tile_out_w, args.stride_w, args.off_w)) &&
                     fits_int(args.off_h) && fits_int(args.off_w) && fits_index(g.fft_h) &&
                     fits_index(g.fft_w) && g.pitch >= 1 &&
                     g.fft_h * g.pitch < (std::int64_t{1} << 32),
                 "clip window too large for 32-bit plane indices");
  FFTCONV_ASSERT(args.k >= 1 && fits_index(args.k), "clip filter count out of range");
}

void launch_clip(const ClipArgs& args, DType dtype, const FftGeometry& g, cudaStream_t stream) {
  if (args.planes == 0 || args.out_h == 0 || args.out_w == 0) return;
  check_clip_args(args, g);
  const ClipWindow win{static_cast<int>(args.stride_h), static_cast<int>(args.stride_w),
                       static_cast<int>(args.off_h),    static_cast<int>(args.off_w),
                       static_cast<int>(g.fft_h),       static_cast<int>(g.fft_w)};
  const std::int64_t per_plane = args.out_h * args.out_w;
  const int chunk = chunk_for(args.planes * per_plane, per_plane);
  const int chunks = static_cast<int>((per_plane + chunk - 1) / chunk);
  FFTCONV_ASSERT(fits_index(args.planes * chunks + kMaxGrid * kWarpsPerBlock) && args.k >= 1 &&
                     fits_index(args.k),
                 "too many output planes for one clip launch");
  const ClipParams c{args,
                     g,
                     win,
                     divider(args.out_w),
                     divider(g.tile_out_h),
                     divider(g.tile_out_w),
                     divider(chunks),
                     divider(args.k)};
  const std::int64_t blocks = (args.planes * chunks + kWarpsPerBlock - 1) / kWarpsPerBlock;
  const auto grid =
      static_cast<unsigned>(std::max<std::int64_t>(1, std::min<std::int64_t>(blocks, kMaxGrid)));
  switch (dtype) {
    case DType::kF32:
      clip_typed<float>(c, grid, chunk, stream);
      break;
    case DType::kF16:
      clip_typed<__half>(c, grid, chunk, stream);
      break;
    case DType::kBF16:
      clip_typed<__nv_bfloat16>(c, grid, chunk, stream);
      break;
  }
  FFTCONV_CHECK_LAUNCH();
}

}  // namespace fftconv::detail
