#include "stages/stages.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "core/check.h"
#include "geometry/int_divider.h"
#include "stages/dtype_convert.cuh"

namespace fftconv::detail {

namespace {

// A segment's divisions: destination plane -> image, tile, channel (TileMap) and the steps.
struct SegmentDividers {
  IntDivider per_image, inner, tiles_w;  ///< tiles * inner, inner, tiles_w
  IntDivider step_h, step_w;
};

struct PadParams {
  PadSegment seg[kMaxPadSegments];
  SegmentDividers div[kMaxPadSegments];
  int fft_h, fft_w;
  std::int64_t pitch;
  IntDivider half_w;  ///< pairs per destination row (pitch / 2)
  IntDivider chunks;  ///< chunks per plane
  bool staged[kMaxPadSegments];  ///< the segment's blocks stage their source plane
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

// Staging through shared memory. A block copies a whole small source plane in (pad) or a chunk
// of outputs out (clip) as aligned 16-byte granules, so every dtype moves its bytes with the same
// wide accesses and a 2-byte type issues half the instructions of a 4-byte one; only the
// granules at either end that the range covers in part go element by element. In shared memory
// an element keeps its global offset within its granule.
constexpr int kStageElems = 2048;  ///< source elements of a plane the pad stages at most

template <typename T, int kElems>
struct StageBuffer {
  static constexpr int kGranules = kElems * static_cast<int>(sizeof(T)) / 16 + 1;
};

// The granule walk of both copies: granule j of the range covers bytes [16j - head, 16j - head
// + 16) from its first element, head = that element's offset within its granule.
struct Granules {
  int head, bytes, count;
  __device__ __forceinline__ Granules(const void* g, int n, int size)
      : head(static_cast<int>(reinterpret_cast<std::uintptr_t>(g) & 15)),
        bytes(n * size),
        count((head + n * size + 15) >> 4) {}
  __device__ __forceinline__ bool whole(int j) const {
    return 16 * j >= head && 16 * j - head + 16 <= bytes;
  }
};

// Copies n elements at g into s; returns where element 0 landed.
template <typename T>
__device__ __forceinline__ const T* stage_in(const T* g, int n, uint4* s) {
  const Granules r(g, n, static_cast<int>(sizeof(T)));
  const auto* from = reinterpret_cast<const unsigned char*>(g) - r.head;  // granule 0
  auto* to = reinterpret_cast<unsigned char*>(s);
  for (int j = static_cast<int>(threadIdx.x); j < r.count; j += static_cast<int>(blockDim.x)) {
    if (r.whole(j)) {
      s[j] = *reinterpret_cast<const uint4*>(from + 16 * j);
    } else {
      const int last = min(16 * j + 16, r.head + r.bytes);
      for (int o = max(16 * j, r.head); o < last; o += static_cast<int>(sizeof(T))) {
        *reinterpret_cast<raw_t<T>*>(to + o) = *reinterpret_cast<const raw_t<T>*>(from + o);
      }
    }
  }
  return reinterpret_cast<const T*>(to + r.head);
}

// Where a block stages element 0 of the elements it will write at g.
template <typename T>
__device__ __forceinline__ T* stage_slot(T* g, uint4* s) {
  return reinterpret_cast<T*>(reinterpret_cast<unsigned char*>(s) +
                              (reinterpret_cast<std::uintptr_t>(g) & 15));
}

// Copies the n elements staged at stage_slot(g, s) out to g.
template <typename T>
__device__ __forceinline__ void stage_out(T* g, int n, const uint4* s) {
  const Granules r(g, n, static_cast<int>(sizeof(T)));
  auto* to = reinterpret_cast<unsigned char*>(g) - r.head;  // granule 0
  const auto* from = reinterpret_cast<const unsigned char*>(s);
  for (int j = static_cast<int>(threadIdx.x); j < r.count; j += static_cast<int>(blockDim.x)) {
    if (r.whole(j)) {
      *reinterpret_cast<uint4*>(to + 16 * j) = s[j];
    } else {
      const int last = min(16 * j + 16, r.head + r.bytes);
      for (int o = max(16 * j, r.head); o < last; o += static_cast<int>(sizeof(T))) {
        *reinterpret_cast<raw_t<T>*>(to + o) = *reinterpret_cast<const raw_t<T>*>(from + o);
      }
    }
  }
}

// Experiment switch (FFTCONV_STAGE_VARIANT bits): 1 staged pad, 2 staged clip for 2-byte types,
// 4 staged clip for fp32.
int stage_variant() {
  static const int v = [] {
    const char* e = std::getenv("FFTCONV_STAGE_VARIANT");
    return e ? std::atoi(e) : 0;
  }();
  return v;
}

// Whether v (>= 0) works as a 32-bit index inside a plane; fits_int: either sign.
bool fits_index(std::int64_t v) { return v >= 0 && v < (std::int64_t{1} << 31); }
bool fits_int(std::int64_t v) { return fits_index(v < 0 ? -v : v); }
// A divider for a launch-fixed divisor the launcher has checked (1 <= d < 2^31).
IntDivider divider(std::int64_t d) {
  FFTCONV_ASSERT(d >= 1 && fits_index(d), "divisor out of range");
  return IntDivider(static_cast<std::uint32_t>(d));
}

int chunk_for(std::int64_t total) {
  const std::int64_t per_block =
      (total / kTargetBlocks + kPadThreads - 1) / kPadThreads * kPadThreads;
  return static_cast<int>(
      std::min<std::int64_t>(kMaxChunk, std::max<std::int64_t>(kMinChunk, per_block)));
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
    const T* row = src_plane + static_cast<std::int64_t>(si) * ps.src_w;
    const int s0 = tw < p.fft_w ? pad_source<kUnitStep>(tw, ps.off_w, dv.step_w, ps.src_w) : -1;
    const int s1 =
        tw + 1 < p.fft_w ? pad_source<kUnitStep>(tw + 1, ps.off_w, dv.step_w, ps.src_w) : -1;
    if (s0 >= 0) v.x = load_raw(row + s0);
    if (s1 >= 0) v.y = load_raw(row + s1);
  }
  return v;
}

template <typename T, bool kUnitStep>
__device__ __forceinline__ void pad_chunk(const PadParams& p, const SegmentDividers& dv,
                                          const PlaneSpot& ps, const T* src_plane, float2* dst,
                                          int begin, int end) {
  for (int base = begin + static_cast<int>(threadIdx.x); base < end; base += kRound * kPadThreads) {
    RawPair<T> v[kRound];
#pragma unroll
    for (int u = 0; u < kRound; ++u) {
      const int i = base + u * kPadThreads;
      v[u] = i < end ? pad_pair<T, kUnitStep>(p, dv, ps, src_plane, i) : RawPair<T>{0, 0};
    }
#pragma unroll
    for (int u = 0; u < kRound; ++u) {
      const int i = base + u * kPadThreads;
      if (i < end) dst[i] = make_float2(raw_to_float<T>(v[u].x), raw_to_float<T>(v[u].y));
    }
  }
}

template <typename T, bool kStage>
__global__ void __launch_bounds__(kPadThreads, kMinBlocksPerSm) pad_kernel(PadParams p, int chunk) {
  __shared__ uint4 stage[kStage ? StageBuffer<T, kStageElems>::kGranules : 1];
  const PadSegment& seg = p.seg[blockIdx.y];
  const SegmentDividers& dv = p.div[blockIdx.y];
  const T* src = static_cast<const T*>(seg.src);
  const Placement& pl = seg.place;
  const int pairs = p.fft_h * static_cast<int>(p.half_w.divisor());
  const bool unit_step = pl.step_h == 1 && pl.step_w == 1;
  const bool staged = kStage && p.staged[blockIdx.y];
  // launch_pad checks that planes * chunks fits in 32 bits.
  const int blocks = static_cast<int>(seg.planes) * static_cast<int>(p.chunks.divisor());
  for (int block = blockIdx.x; block < blocks; block += gridDim.x) {
    int plane = 0, part = 0;
    p.chunks.divmod(block, plane, part);
    const int begin = part * chunk;
    const int end = min(begin + chunk, pairs);
    float2* dst =
        reinterpret_cast<float2*>(seg.dst + static_cast<std::int64_t>(plane) * p.fft_h * p.pitch);
    const PlaneSource source = pad_plane_source<int>(plane, seg.map, pl.off_h, pl.off_w,
                                                     dv.per_image, dv.inner, dv.tiles_w);
    const PlaneSpot ps{static_cast<int>(source.off_h), static_cast<int>(source.off_w),
                       static_cast<int>(pl.src_h), static_cast<int>(pl.src_w)};
    const T* src_plane = src + source.plane * pl.src_h * pl.src_w;
    if (staged) {
      __syncthreads();  // every read of the previous plane's copy is done
      const T* staged_plane = stage_in(src_plane, ps.src_h * ps.src_w, stage);
      __syncthreads();
      if (unit_step) {
        pad_chunk<T, true>(p, dv, ps, staged_plane, dst, begin, end);
      } else {
        pad_chunk<T, false>(p, dv, ps, staged_plane, dst, begin, end);
      }
    } else if (unit_step) {
      pad_chunk<T, true>(p, dv, ps, src_plane, dst, begin, end);
    } else {
      pad_chunk<T, false>(p, dv, ps, src_plane, dst, begin, end);
    }
  }
}

template <typename T>
void pad_typed(const PadParams& p, dim3 grid, int chunk, bool stage, cudaStream_t stream) {
  if (stage) {
    pad_kernel<T, true><<<grid, kPadThreads, 0, stream>>>(p, chunk);
  } else {
    pad_kernel<T, false><<<grid, kPadThreads, 0, stream>>>(p, chunk);
  }
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

// The unscaled value clip reads for element i of an output plane whose tile-0 result plane is
// plane0 (0 outside the result). Result planes of later tiles are k planes apart.
__device__ __forceinline__ float clip_value(const ClipParams& c, std::int64_t plane0, int i) {
  const ClipWindow& w = c.win;
  int p = 0, q = 0, th = 0, lp = 0, tw = 0, lq = 0;
  c.out_w.divmod(i, p, q);
  c.tile_h.divmod(p, th, lp);
  c.tile_w.divmod(q, tw, lq);
  const std::int64_t src_plane = plane0 + (th * c.g.tiles_w + tw) * c.a.k;
  const int row = clip_read<int>(lp, w.stride_h, w.off_h, w.fft_h, c.a.wrap);
  const int col = clip_read<int>(lq, w.stride_w, w.off_w, w.fft_w, c.a.wrap);
  return row >= 0 && col >= 0 ? c.a.src[(src_plane * w.fft_h + row) * c.g.pitch + col] : 0.0f;
}

// Clip: like pad, a block per chunk of one output plane, 32-bit index math inside the plane.
// kStage: the block converts its chunk into shared memory and writes it out in 16-byte granules.
template <typename T, bool kAccumulate, bool kStage>
__global__ void __launch_bounds__(kPadThreads, kMinBlocksPerSm)
    clip_kernel(ClipParams c, int chunk) {
  __shared__ uint4 stage[kStage ? StageBuffer<T, kMaxChunk>::kGranules : 1];
  const ClipArgs& a = c.a;
  T* y = static_cast<T*>(a.y);
  const T* bias = static_cast<const T*>(a.bias);
  const int per_plane = static_cast<int>(a.out_h) * static_cast<int>(c.out_w.divisor());
  // launch_clip checks that planes * chunks fits in 32 bits.
  const int blocks = static_cast<int>(a.planes) * static_cast<int>(c.chunks.divisor());
  for (int block = blockIdx.x; block < blocks; block += gridDim.x) {
    int plane = 0, part = 0;
    c.chunks.divmod(block, plane, part);
    const int begin = part * chunk;
    const int end = min(begin + chunk, per_plane);
    const float b = bias ? to_float(bias[plane % c.k]) : 0.0f;
    const std::int64_t plane0 = clip_plane_source<int>(plane, c.k, c.g.tiles_h * c.g.tiles_w, 0);
    T* dst = y + static_cast<std::int64_t>(plane) * per_plane;
    T* out = dst;
    if (kStage) {
      __syncthreads();  // the previous chunk's copy-out is done
      out = stage_slot(dst + begin, stage) - begin;
    }
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
          float r = fmaf(v[u], a.scale, b);
          if (kAccumulate) r = fmaf(a.beta, raw_to_float<T>(old[u]), r);
          out[i] = from_float<T>(r);
        }
      }
    }
    if (kStage) {
      __syncthreads();
      stage_out(dst + begin, end - begin, stage);
    }
  }
}

template <typename T>
void clip_typed(const ClipParams& c, unsigned grid, int chunk, bool stage, cudaStream_t stream) {
  if (stage) {
    if (c.a.beta != 0.0f) {
      clip_kernel<T, true, true><<<grid, kPadThreads, 0, stream>>>(c, chunk);
    } else {
      clip_kernel<T, false, true><<<grid, kPadThreads, 0, stream>>>(c, chunk);
    }
  } else if (c.a.beta != 0.0f) {
    clip_kernel<T, true, false><<<grid, kPadThreads, 0, stream>>>(c, chunk);
  } else {
    clip_kernel<T, false, false><<<grid, kPadThreads, 0, stream>>>(c, chunk);
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
    // Offsets of the last tile are the lowest; t - off stays below 2^31 for every t < fft.
    const Placement& pl = segments[i].place;
    const TileMap& m = segments[i].map;
    const std::int64_t low_h = pl.off_h - (m.tiles_h - 1) * m.step_h;
    const std::int64_t low_w = pl.off_w - (m.tiles_w - 1) * m.step_w;
    FFTCONV_ASSERT(fits_index(pl.src_h) && fits_index(pl.src_w) && pl.step_h >= 1 &&
                       pl.step_w >= 1 && fits_index(pl.step_h) && fits_index(pl.step_w) &&
                       fits_int(pl.off_h) && fits_int(pl.off_w) && fits_int(low_h) &&
                       fits_int(low_w) && fits_index(g.fft_h - low_h) &&
                       fits_index(g.fft_w - low_w),
                   "pad placement too large for 32-bit plane indices");
    FFTCONV_ASSERT(m.inner >= 1 && m.tiles_h >= 1 && m.tiles_w >= 1 &&
                       fits_index(m.tiles_h * m.tiles_w * m.inner),
                   "pad tile map out of range");
    p.seg[i] = segments[i];
    p.div[i] = SegmentDividers{divider(m.tiles_h * m.tiles_w * m.inner), divider(m.inner),
                               divider(m.tiles_w), divider(pl.step_h), divider(pl.step_w)};
    max_planes = std::max(max_planes, segments[i].planes);
    total_planes += segments[i].planes;
  }
  p.fft_h = static_cast<int>(g.fft_h);
  p.fft_w = static_cast<int>(g.fft_w);
  p.pitch = g.pitch;
  p.half_w = divider(g.pitch / 2);
  const std::int64_t pairs = g.fft_h * (g.pitch / 2);
  const int chunk = chunk_for(total_planes * pairs);
  const int chunks = static_cast<int>((pairs + chunk - 1) / chunk);
  FFTCONV_ASSERT(fits_index(max_planes * chunks + kMaxGrid),
                 "too many FFT planes for one pad launch");
  p.chunks = divider(chunks);
  bool stage = false;
  for (int i = 0; i < count; ++i) {
    const PadSegment& sg = segments[i];
    p.staged[i] = (stage_variant() & 1) && chunks == 1 && sg.map.tiles_h * sg.map.tiles_w == 1 &&
                  sg.place.src_h * sg.place.src_w <= kStageElems;
    stage = stage || p.staged[i];
  }
  const dim3 grid(static_cast<unsigned>(std::min<std::int64_t>(max_planes * chunks, kMaxGrid)),
                  static_cast<unsigned>(count));
  switch (dtype) {
    case DType::kF32:
      pad_typed<float>(p, grid, chunk, stage, stream);
      break;
    case DType::kF16:
      pad_typed<__half>(p, grid, chunk, stage, stream);
      break;
    case DType::kBF16:
      pad_typed<__nv_bfloat16>(p, grid, chunk, stage, stream);
      break;
  }
  FFTCONV_CHECK_LAUNCH();
}

void launch_clip(const ClipArgs& args, DType dtype, const FftGeometry& g, cudaStream_t stream) {
  FFTCONV_ASSERT(args.out_h * args.out_w < (std::int64_t{1} << 31), "output plane too large");
  if (args.planes == 0 || args.out_h == 0 || args.out_w == 0) return;
  FFTCONV_ASSERT(g.tile_out_h >= 1 && g.tile_out_w >= 1, "clip window without outputs");
  const auto last_read = [](std::int64_t out, std::int64_t stride, std::int64_t off) {
    return off + (out - 1) * stride;
  };
  FFTCONV_ASSERT(fits_index(last_read(g.tile_out_h, args.stride_h, args.off_h)) &&
                     fits_index(last_read(g.tile_out_w, args.stride_w, args.off_w)) &&
                     fits_int(args.off_h) && fits_int(args.off_w) && fits_index(g.fft_h) &&
                     fits_index(g.fft_w),
                 "clip window too large for 32-bit plane indices");
  const ClipWindow win{static_cast<int>(args.stride_h), static_cast<int>(args.stride_w),
                       static_cast<int>(args.off_h),    static_cast<int>(args.off_w),
                       static_cast<int>(g.fft_h),       static_cast<int>(g.fft_w)};
  const std::int64_t per_plane = args.out_h * args.out_w;
  const int chunk = chunk_for(args.planes * per_plane);
  const int chunks = static_cast<int>((per_plane + chunk - 1) / chunk);
  FFTCONV_ASSERT(fits_index(args.planes * chunks + kMaxGrid) && args.k >= 1 && fits_index(args.k),
                 "too many output planes for one clip launch");
  const ClipParams c{args,
                     g,
                     win,
                     divider(args.out_w),
                     divider(g.tile_out_h),
                     divider(g.tile_out_w),
                     divider(chunks),
                     divider(args.k)};
  const auto grid = static_cast<unsigned>(
      std::max<std::int64_t>(1, std::min<std::int64_t>(args.planes * chunks, kMaxGrid)));
  const bool stage = (stage_variant() & (dtype == DType::kF32 ? 4 : 2)) != 0;
  switch (dtype) {
    case DType::kF32:
      clip_typed<float>(c, grid, chunk, stage, stream);
      break;
    case DType::kF16:
      clip_typed<__half>(c, grid, chunk, stage, stream);
      break;
    case DType::kBF16:
      clip_typed<__nv_bfloat16>(c, grid, chunk, stage, stream);
      break;
  }
  FFTCONV_CHECK_LAUNCH();
}

}  // namespace fftconv::detail
