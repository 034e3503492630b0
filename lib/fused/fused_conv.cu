#include "fused/fused_conv.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "core/check.h"
#include "core/launch.cuh"
#include "fused/fused_program.cuh"
#include "geometry/fft_geometry.h"
#include "stages/dtype_convert.cuh"
#include "stages/partial_sum.h"

namespace fftconv::detail {

namespace {

using fused::Layout;
using fused::Line;

// A device thread runs the program's phases for itself; sync() is the block's barrier. Its line
// stays in registers: every index into it is a constant after unrolling.
template <int N>
struct DeviceExec {
  int t;
  Line<N> line;
  template <class Fn>
  __host__ __device__ __forceinline__ void each(Fn&& fn) {
    fn(t, line);
  }
  __host__ __device__ __forceinline__ void sync() {
#if defined(__CUDA_ARCH__)
    __syncthreads();
#endif
  }
};

// Stages one source column of a plane (fused_program.cuh, stage_source): fp32 by cp.async, every
// row's copy in flight at once (zero-filled where the column is padding); fp16 and bf16 by
// loads in batches of 16, converted when the batch has arrived.
struct ColumnCopy {
  const void* src;
  DType dtype;
  std::int64_t base;  // the first element the plane (or tile) stages
  int src_w;          // the source plane's row pitch

  __device__ __forceinline__ void column(float* dst, int pitch, int rows, int j) const {
    if (dtype == DType::kF32) {
      const float* p = static_cast<const float*>(src) + base + (j >= 0 ? j : 0);
      const int bytes = j >= 0 ? 4 : 0;
      for (int r = 0; r < rows; ++r) {
        const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst + r * pitch));
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(d),
                     "l"(p + static_cast<std::int64_t>(r) * src_w), "r"(bytes));
      }
      asm volatile("cp.async.wait_all;\n" ::: "memory");
      return;
    }
    // The batch's raw 16-bit values first, all loads in flight, converted after: a conversion
    // next to its load (load_element's switch) made each load wait for the one before.
    const auto* s = static_cast<const unsigned short*>(src) + base + (j >= 0 ? j : 0);
    const bool half = dtype == DType::kF16;
    constexpr int kBatch = 16;
    for (int r0 = 0; r0 < rows; r0 += kBatch) {
      unsigned short raw[kBatch];
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const int r = r0 + u;
        raw[u] = r < rows && j >= 0 ? s[static_cast<std::int64_t>(r) * src_w] : 0;
      }
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const float v = half ? __half2float(__ushort_as_half(raw[u]))
                             : __uint_as_float(static_cast<unsigned>(raw[u]) << 16);
        if (r0 + u < rows) dst[(r0 + u) * pitch] = v;
      }
    }
  }
};

// Programmatic dependent launch (sm_90): with a per-call filter the convolution kernel is
// launched as the filter kernel's dependent, so its blocks stage and transform their planes
// while the filter kernel runs, and wait for it (its whole grid done, its writes visible) only
// before the product reads the filter spectra. Each filter block allows the dependent launch as
// it starts. Without such a launch (a kept filter, older devices) the wait returns at once.
__device__ __forceinline__ void allow_dependent_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
__device__ __forceinline__ void wait_for_primary_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Threads and planes of a block, and the blocks an SM holds (fused_conv.h): at most 170
// registers a thread for 128x128 (three blocks of 128 threads and 66.5 KB of shared memory an
// SM), 128 for the other powers of two.
template <int F>
constexpr int kPlanes = fused_planes_per_block(F);
template <int F>
constexpr int kThreads = fused_block_threads(F);
template <int F>
constexpr int kMinBlocks = fused_min_blocks(F);

// A block's planes: this thread's (the block's local-th, at buf in shared memory) and its place
// in it.
template <int F>
struct BlockPlane {
  int local = static_cast<int>(threadIdx.x) / F;
  std::int64_t plane = static_cast<std::int64_t>(blockIdx.x) * kPlanes<F> + local;
  float* buf;
  DeviceExec<F / 2> ex{static_cast<int>(threadIdx.x) % F, {}};
  __device__ explicit BlockPlane(float* smem) : buf(smem + local * Layout<F>::kFloats) {}
};

template <int F>
__global__ void __launch_bounds__(kThreads<F>, kMinBlocks<F>) fused_conv_kernel(
    const FusedConvArgs a) {
  extern __shared__ float smem[];
  BlockPlane<F> bp(smem);
  const std::int64_t plane = bp.plane;
  const bool active = plane < a.planes;
  const int filter = active ? static_cast<int>(plane % a.k) : 0;
  const fused::PlaneGeometry& geo = a.geo;
  const std::int64_t src_base = plane * geo.src_h * geo.src_w;
  const std::int64_t out_base = plane * geo.out_h * geo.out_w;
  const float bias = active && a.bias ? load_element(a.bias, a.dtype, filter) : 0.0f;
  const auto* g = static_cast<const float2*>(a.factors) +
                  static_cast<std::int64_t>(filter) * Layout<F>::kSpecSize;
  fused::fused_conv_program<F>(
      bp.ex, bp.buf, geo, g, active, ColumnCopy{a.src, a.dtype, src_base, geo.src_w},
      [&](int p, int q, float v) {
        store_element(a.out, a.dtype, out_base + (p * geo.out_w + q), v + bias);
      },
      [] { wait_for_primary_grid(); });
}

// The tiles of t (FusedTiling), a block's unit a tile of a plane, its geometry computed per
// block (fused_tile).
template <int F>
__global__ void __launch_bounds__(kThreads<F>, kMinBlocks<F>) fused_tiled_conv_kernel(
    const FusedConvArgs a, const FusedTiling t) {
  extern __shared__ float smem[];
  BlockPlane<F> bp(smem);
  const int tiles = t.count();
  const std::int64_t unit = bp.plane;
  const bool active = unit < a.planes * tiles;
  const std::int64_t plane = unit / tiles;
  const int filter = active ? static_cast<int>(plane % a.k) : 0;
  const FusedTile tile = fused_tile(a.geo, t, static_cast<int>(unit - plane * tiles));
  const std::int64_t src_base = plane * t.src_h * t.src_w + tile.src_offset;
  const std::int64_t out_base = plane * t.out_h * t.out_w + tile.out_offset;
  const float bias = active && a.bias ? load_element(a.bias, a.dtype, filter) : 0.0f;
  const auto* g = static_cast<const float2*>(a.factors) +
                  static_cast<std::int64_t>(filter) * Layout<F>::kSpecSize;
  fused::fused_conv_program<F>(
      bp.ex, bp.buf, tile.geo, g, active, ColumnCopy{a.src, a.dtype, src_base, t.src_w},
      [&](int p, int q, float v) {
        store_element(a.out, a.dtype, out_base + (p * t.out_w + q), v + bias);
      },
      [] { wait_for_primary_grid(); });
}

template <int F>
__global__ void __launch_bounds__(kThreads<F>, kMinBlocks<F>) fused_filter_kernel(
    const FusedFilterArgs a) {
  allow_dependent_grid();  // the convolution kernel may start its transforms now
  extern __shared__ float smem[];
  BlockPlane<F> bp(smem);
  const int filter = static_cast<int>(bp.plane);
  const bool active = filter < a.k;
  const fused::PlaneGeometry geo = filter_geometry(a);
  const std::int64_t base = static_cast<std::int64_t>(filter) * a.r * a.s;
  auto* g = static_cast<float2*>(a.factors) +
            static_cast<std::int64_t>(active ? filter : 0) * Layout<F>::kSpecSize;
  fused::fused_filter_program<F>(bp.ex, bp.buf, geo, g, active,
                                 a.conjugate, a.scale, ColumnCopy{a.w, a.dtype, base, geo.src_w});
}

// A slot of F threads owns one channel and a slice of its `pairs` pairs (images, or their
// tiles: a.pairs(), which a grid's int holds): pairs [first, first + count) (fused_conv.h,
// FusedWgradArgs).
struct SlotPlace {
  int channel, chunk, first, count;
  bool active;
  __device__ SlotPlace(const FusedWgradArgs& a, std::int64_t slot, int pairs) {
    active = slot < a.slots();
    channel = active ? static_cast<int>(slot % a.c) : 0;
    chunk = active ? static_cast<int>(slot / a.c) : 0;
    first = chunk * a.per_chunk;
    count = active ? min(a.per_chunk, pairs - first) : 0;
  }
};

// The slot's two scratch spectra, g (dy's) and acc (the sum): its own, in shared memory after
// the block's planes (fused_wgrad_smem_spectra of them, g first) and the rest in the workspace.
struct WgradScratch {
  float2* g;
  float2* acc;
};
template <int F>
__device__ __forceinline__ WgradScratch wgrad_scratch(const FusedWgradArgs& a, float* smem,
                                                      const BlockPlane<F>& bp, bool active) {
  constexpr int kSpec = Layout<F>::kSpecSize;
  constexpr int kInSmem = fused_wgrad_smem_spectra(F);
  float2* shared =
      reinterpret_cast<float2*>(smem + kPlanes<F> * Layout<F>::kFloats) + bp.local * kInSmem * kSpec;
  float2* global = static_cast<float2*>(a.scratch) + (active ? bp.plane : 0) * (2 - kInSmem) * kSpec;
  if constexpr (kInSmem == 2) {
    return {shared, shared + kSpec};
  } else if constexpr (kInSmem == 1) {
    return {shared, global};
  } else {
    return {global, global + kSpec};
  }
}

// Where the slot's window goes: dw (one slice a channel) or the slice's partial.
struct WgradWindowStore {
  const FusedWgradArgs& a;
  std::int64_t out_base, partial_base;
  __device__ WgradWindowStore(const FusedWgradArgs& args, const SlotPlace& s)
      : a(args),
        out_base(std::int64_t(s.channel) * args.x_geo.out_h * args.x_geo.out_w),
        partial_base((std::int64_t(s.chunk) * args.c + s.channel) * args.x_geo.out_h *
                     args.x_geo.out_w) {}
  __device__ void operator()(int p, int q, float v) const {
    const int i = p * a.x_geo.out_w + q;
    if (a.chunks > 1) {
      a.partial[partial_base + i] = v;
      return;
    }
    float r = a.alpha * v;
    if (a.beta != 0.0f) r += a.beta * load_element(a.dw, a.out_dtype, out_base + i);
    store_element(a.dw, a.out_dtype, out_base + i, r);
  }
};

// Whole planes: pair i of the slot is image first + i.
template <int F>
__global__ void __launch_bounds__(kThreads<F>, kMinBlocks<F>) fused_wgrad_kernel(
    const FusedWgradArgs a) {
  extern __shared__ float smem[];
  // The sum kernel's blocks may take SMs as slots end (only where it follows: a dependent
  // launch of the caller's next kernel must not be released early).
  if (a.sum_after_slots) allow_dependent_grid();
  BlockPlane<F> bp(smem);
  const SlotPlace s(a, bp.plane, a.n);
  const WgradScratch scratch = wgrad_scratch<F>(a, smem, bp, s.active);
  const fused::PlaneGeometry& xg = a.x_geo;
  const fused::PlaneGeometry& dyg = a.dy_geo;
  const std::int64_t x_plane = std::int64_t(xg.src_h) * xg.src_w;
  const std::int64_t dy_plane = std::int64_t(dyg.src_h) * dyg.src_w;
  fused::fused_wgrad_program<F>(
      bp.ex, bp.buf, fused::WholeWgradGeos{xg, dyg}, xg, scratch.g, scratch.acc,
      a.per_chunk, s.count, s.active, a.scale, a.sum_rows,
      [&](int i) {
        return ColumnCopy{a.x, a.dtype, (std::int64_t(s.first + i) * a.c + s.channel) * x_plane,
                          xg.src_w};
      },
      [&](int i) {
        return ColumnCopy{a.dy, a.dtype,
                          (std::int64_t(s.first + i) * a.c + s.channel) * dy_plane, dyg.src_w};
      },
      WgradWindowStore(a, s));
}

// The tiled backward filter's pairs (fused_wgrad_pair): pair i of the slot is tile
// (first + i) % tiles of image (first + i) / tiles.
struct TiledWgradGeos {
  const FusedWgradArgs& a;
  const FusedTiling& t;
  int first;
  __device__ FusedWgradPair pair(int i) const {
    return fused_wgrad_pair(a, t, (first + i) % a.tiles);
  }
  __device__ fused::PlaneGeometry x(int i) const { return pair(i).x; }
  __device__ fused::PlaneGeometry dy(int i) const { return pair(i).dy; }
};

// Tiles (t: the forward pass's).
template <int F>
__global__ void __launch_bounds__(kThreads<F>, kMinBlocks<F>) fused_tiled_wgrad_kernel(
    const FusedWgradArgs a, const FusedTiling t) {
  extern __shared__ float smem[];
  // The sum kernel's blocks may take SMs as slots end (only where it follows: a dependent
  // launch of the caller's next kernel must not be released early).
  if (a.sum_after_slots) allow_dependent_grid();
  BlockPlane<F> bp(smem);
  const SlotPlace s(a, bp.plane, a.n * a.tiles);
  const WgradScratch scratch = wgrad_scratch<F>(a, smem, bp, s.active);
  const std::int64_t x_plane = std::int64_t(t.src_h) * t.src_w;
  const std::int64_t dy_plane = std::int64_t(t.out_h) * t.out_w;
  const TiledWgradGeos geos{a, t, s.first};
  // The plane of pair i's image in this slot's channel.
  const auto plane = [&](int i) {
    return std::int64_t((s.first + i) / a.tiles) * a.c + s.channel;
  };
  fused::fused_wgrad_program<F>(
      bp.ex, bp.buf, geos, a.x_geo, scratch.g, scratch.acc, a.per_chunk, s.count,
      s.active, a.scale, a.sum_rows,
      [&](int i) {
        return ColumnCopy{a.x, a.dtype, plane(i) * x_plane + geos.pair(i).x_offset, t.src_w};
      },
      [&](int i) {
        return ColumnCopy{a.dy, a.dtype, plane(i) * dy_plane + geos.pair(i).dy_offset, t.out_w};
      },
      WgradWindowStore(a, s));
}

template <int F>
constexpr std::size_t smem_bytes() {
  return sizeof(float) * kPlanes<F> * Layout<F>::kFloats;
}

// The backward filter's: the planes' buffers, and their scratch spectra where they are kept in
// shared memory.
template <int F>
constexpr std::size_t wgrad_smem_bytes() {
  constexpr std::size_t bytes = fused_wgrad_block_smem(F);
  static_assert(bytes == smem_bytes<F>() + sizeof(float2) * kPlanes<F> *
                                               fused_wgrad_smem_spectra(F) * Layout<F>::kSpecSize,
                "the planner's count of the block's shared memory is the kernel's layout");
  return bytes;
}

template <int F>
void prepare_size() {
  constexpr int bytes = static_cast<int>(smem_bytes<F>());
  FFTCONV_CUDA_CHECK(cudaFuncSetAttribute(fused_conv_kernel<F>,
                                          cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  FFTCONV_CUDA_CHECK(cudaFuncSetAttribute(fused_tiled_conv_kernel<F>,
                                          cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  FFTCONV_CUDA_CHECK(cudaFuncSetAttribute(fused_filter_kernel<F>,
                                          cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  FFTCONV_CUDA_CHECK(cudaFuncSetAttribute(fused_wgrad_kernel<F>,
                                          cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          static_cast<int>(wgrad_smem_bytes<F>())));
  FFTCONV_CUDA_CHECK(cudaFuncSetAttribute(fused_tiled_wgrad_kernel<F>,
                                          cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          static_cast<int>(wgrad_smem_bytes<F>())));
}

// Grid of a kernel over `planes` planes (or slots).
template <int F>
dim3 grid_of(std::int64_t planes) {
  return dim3(static_cast<unsigned>((planes + kPlanes<F> - 1) / kPlanes<F>));
}

// Launches kernel over `units` units with args; as the filter kernel's programmatic dependent
// where a.after_filter.
template <int F, class Kernel, class... Args>
void launch_units(const FusedConvArgs& a, std::int64_t units, cudaStream_t stream, Kernel kernel,
                  const Args&... args) {
  launch_kernel(a.after_filter, grid_of<F>(units), dim3(kThreads<F>), smem_bytes<F>(), stream,
                kernel, args...);
}

template <int F>
void launch_conv(const FusedConvArgs& a, const FusedTiling* tiling, cudaStream_t stream) {
  if (tiling) {  // even one tile: its window and read offset are not the whole plane's
    launch_units<F>(a, a.planes * tiling->count(), stream, fused_tiled_conv_kernel<F>, a, *tiling);
  } else {
    launch_units<F>(a, a.planes, stream, fused_conv_kernel<F>, a);
  }
}

template <int F>
void launch_filter(const FusedFilterArgs& a, cudaStream_t stream) {
  fused_filter_kernel<F><<<grid_of<F>(a.k), kThreads<F>, smem_bytes<F>(), stream>>>(a);
}

template <int F>
void launch_wgrad(const FusedWgradArgs& a, const FusedTiling* tiling, cudaStream_t stream) {
  if (tiling) {
    fused_tiled_wgrad_kernel<F>
        <<<grid_of<F>(a.slots()), kThreads<F>, wgrad_smem_bytes<F>(), stream>>>(a, *tiling);
  } else {
    fused_wgrad_kernel<F>
        <<<grid_of<F>(a.slots()), kThreads<F>, wgrad_smem_bytes<F>(), stream>>>(a);
  }
}

// Calls fn(std::integral_constant<int, F>) for F = size, one of kFusedSizes (kSizes: the same
// list as a parameter pack, checked against it).
template <int... F>
struct SizeList {};
using FusedSizeList = SizeList<8, 16, 24, 32, 40, 48, 64, 72, 80, 96, 128>;

template <int... F>
constexpr bool same_as_fused_sizes(SizeList<F...>) {
  constexpr int list[] = {F...};
  if (sizeof(list) / sizeof(int) != sizeof(kFusedSizes) / sizeof(int)) return false;
  for (std::size_t i = 0; i < sizeof(list) / sizeof(int); ++i) {
    if (list[i] != kFusedSizes[i]) return false;
  }
  return true;
}
static_assert(same_as_fused_sizes(FusedSizeList{}), "the kernels' sizes are kFusedSizes");

template <class Fn, int... F>
void with_size_in(int size, Fn&& fn, SizeList<F...>) {
  const bool found = ((size == F ? (fn(std::integral_constant<int, F>{}), true) : false) || ...);
  FFTCONV_ASSERT(found, "fused FFT size out of range");
}

template <class Fn>
void with_size(int size, Fn&& fn) {
  with_size_in(size, fn, FusedSizeList{});
}

}  // namespace

std::size_t fused_smem_bytes(int size) {
  std::size_t bytes = 0;
  with_size(size, [&](auto f) { bytes = smem_bytes<decltype(f)::value>(); });
  return bytes;
}

bool fused_conv_can_overlap_filter(int size) {
  bool can = false;
  with_size(size, [&](auto f) {
    can = can_launch_dependent(reinterpret_cast<const void*>(fused_conv_kernel<decltype(f)::value>));
  });
  return can;
}

void prepare_fused_kernels() {
  for (const int size : kFusedSizes) {
    with_size(size, [&](auto f) { prepare_size<decltype(f)::value>(); });
  }
}

void launch_fused_filter_factors(const FusedFilterArgs& a, cudaStream_t stream) {
  with_size(a.size, [&](auto f) { launch_filter<decltype(f)::value>(a, stream); });
  FFTCONV_CHECK_LAUNCH();
}

void launch_fused_conv(const FusedConvArgs& a, cudaStream_t stream, const FusedTiling* tiling) {
  with_size(a.size, [&](auto f) { launch_conv<decltype(f)::value>(a, tiling, stream); });
  FFTCONV_CHECK_LAUNCH();
}

void launch_fused_wgrad(const FusedWgradArgs& a, cudaStream_t stream, const FusedTiling* tiling) {
  FFTCONV_ASSERT(tiling ? tiling->count() == a.tiles : a.tiles == 1,
                 "the backward filter's tiling and its pairs disagree");
  with_size(a.size, [&](auto f) { launch_wgrad<decltype(f)::value>(a, tiling, stream); });
  FFTCONV_CHECK_LAUNCH();
  if (a.chunks > 1) {  // dw = alpha * (the slices' partial windows in slice order) + beta * dw
    launch_partial_sum(a.partial, a.chunks, std::int64_t(a.c) * a.x_geo.out_h * a.x_geo.out_w,
                       a.dw, a.out_dtype, a.alpha, a.beta, stream, a.sum_after_slots);
  }
}

}  // namespace fftconv::detail
