#include "fft/plane_fft.h"

#include <algorithm>
#include <cstdint>

#include "core/check.h"
#include "fft/plane_program.cuh"
#include "stages/dtype_convert.cuh"

namespace fftconv::detail {

namespace {

using planefft::PlaneFftPlan;
using planefft::PlaneWindow;

// Blocks of a launch at most; each walks on by the grid size.
constexpr std::int64_t kMaxGrid = 1 << 20;

// A device thread runs its halves of each step; the block synchronises between them.
struct DeviceExec {
  template <class Body>
  __host__ __device__ __forceinline__ void step(const Body& body) {
#if defined(__CUDA_ARCH__)
    typename Body::State s;
    body.read(static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x), s);
    __syncthreads();
    body.write(static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x), s);
    __syncthreads();
#endif
  }
  template <class Fn>
  __host__ __device__ __forceinline__ void each(Fn&& fn) {
#if defined(__CUDA_ARCH__)
    fn(static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x));
    __syncthreads();
#endif
  }
};

struct SpectrumSegment {
  const void* src;
  float2* dst;
  int planes;
  Placement place;
  TileMap map;
  SegmentDividers div;
};

struct SpectrumParams {
  SpectrumSegment seg[kMaxPadSegments];
  PlaneFftPlan plan;
  DType dtype;
};

// The shared buffer, then the twiddle tables of the columns and of the rows.
struct SharedPlane {
  float2* buf;
  float2* tw_h;
  float2* tw_w;
};

__device__ __forceinline__ SharedPlane shared_plane(const PlaneFftPlan& pl) {
  extern __shared__ float2 smem[];
  return SharedPlane{smem, smem + pl.buffer, smem + pl.buffer + pl.fh};
}

// Block (x, y): planes x, x + gridDim.x, ... of segment y.
__global__ void __launch_bounds__(planefft::kMaxThreads)
    spectrum_kernel(const __grid_constant__ SpectrumParams p) {
  const PlaneFftPlan& pl = p.plan;
  const SharedPlane sh = shared_plane(pl);
  DeviceExec ex;
  planefft::init_twiddles(ex, pl, sh.tw_h, sh.tw_w);
  const SpectrumSegment& seg = p.seg[blockIdx.y];
  const Placement& place = seg.place;
  const int src_h = static_cast<int>(place.src_h), src_w = static_cast<int>(place.src_w);
  const std::int64_t bins = static_cast<std::int64_t>(pl.fh) * pl.cw;
  for (int plane = static_cast<int>(blockIdx.x); plane < seg.planes;
       plane += static_cast<int>(gridDim.x)) {
    const PlaneSource ps = pad_plane_source<int>(plane, seg.map, place.off_h, place.off_w,
                                                 seg.div.per_image, seg.div.inner, seg.div.tiles_w);
    const int off_h = static_cast<int>(ps.off_h), off_w = static_cast<int>(ps.off_w);
    int band0 = 0, band_rows = 0;
    planefft::placed_band(ps.off_h, place.src_h, place.step_h, pl.fh, band0, band_rows);
    const std::int64_t base = ps.plane * place.src_h * place.src_w;
    float2* out = seg.dst + plane * bins;
    planefft::forward_program(
        ex, pl, sh.buf, sh.tw_h, sh.tw_w, band0, band_rows,
        [&](int row, int col) {
          const int si = placed_source<int>(row, off_h, seg.div.step_h, src_h);
          const int sj = placed_source<int>(col, off_w, seg.div.step_w, src_w);
          return si >= 0 && sj >= 0 ? load_element(seg.src, p.dtype, base + (si * src_w + sj))
                                    : 0.0f;
        },
        [&](int i, float2 v) { out[i] = v; });
  }
}

struct ClipSpectrumParams {
  ClipArgs a;
  PlaneFftPlan plan;
  PlaneWindow win;
  DType dtype;
  int result_planes;
  int tile_out_h, tile_out_w;
  int band0, band_rows;
  IntDivider k, tiles, tiles_w;
};

// Block x: result planes x, x + gridDim.x, ...; each writes its tile of its output plane.
__global__ void __launch_bounds__(planefft::kMaxThreads)
    clip_spectrum_kernel(const __grid_constant__ ClipSpectrumParams c) {
  const PlaneFftPlan& pl = c.plan;
  const ClipArgs& a = c.a;
  const SharedPlane sh = shared_plane(pl);
  DeviceExec ex;
  planefft::init_twiddles(ex, pl, sh.tw_h, sh.tw_w);
  const std::int64_t bins = static_cast<std::int64_t>(pl.fh) * pl.cw;
  const int out_h = static_cast<int>(a.out_h), out_w = static_cast<int>(a.out_w);
  const auto* spectra = reinterpret_cast<const float2*>(a.src);
  for (int rp = static_cast<int>(blockIdx.x); rp < c.result_planes;
       rp += static_cast<int>(gridDim.x)) {
    // Result plane (n * tiles + tile) * k + kk holds tile `tile` of output plane n * k + kk.
    int rest = 0, kk = 0, n = 0, tile = 0, th = 0, tw = 0;
    c.k.divmod(rp, rest, kk);
    c.tiles.divmod(rest, n, tile);
    c.tiles_w.divmod(tile, th, tw);
    const std::int64_t o = static_cast<std::int64_t>(n) * static_cast<int>(c.k.divisor()) + kk;
    const int oh0 = th * c.tile_out_h, ow0 = tw * c.tile_out_w;
    PlaneWindow win = c.win;
    win.out_h = min(c.tile_out_h, out_h - oh0);
    win.out_w = min(c.tile_out_w, out_w - ow0);
    const float bias = a.bias ? load_element(a.bias, c.dtype, kk) : 0.0f;
    const float2* spec = spectra + rp * bins;
    const std::int64_t out0 = o * out_h * out_w + static_cast<std::int64_t>(oh0) * out_w + ow0;
    planefft::inverse_program(
        ex, pl, sh.buf, sh.tw_h, sh.tw_w, c.band0, c.band_rows, win, [&](int i) { return spec[i]; },
        [&](int p, int q, float v) {
          const std::int64_t i = out0 + (p * out_w + q);
          float r = fmaf(v, a.scale, bias);
          if (a.beta != 0.0f) r = fmaf(a.beta, load_element(a.y, c.dtype, i), r);
          store_element(a.y, c.dtype, i, r);
        });
  }
}

unsigned grid_for(std::int64_t planes) {
  return static_cast<unsigned>(std::max<std::int64_t>(1, std::min(planes, kMaxGrid)));
}

std::string radices(const planefft::LinePasses& lp) {
  std::string s;
  for (int i = 0; i < lp.count; ++i) s += (i ? "x" : "") + std::to_string(lp.pass[i].radix);
  return s;
}

}  // namespace

bool plane_fft_supported(std::int64_t fft_h, std::int64_t fft_w, std::string* why) {
  PlaneFftPlan plan;
  return planefft::make_plane_fft_plan(fft_h, fft_w, &plan, why);
}

struct PlaneFft::Impl {
  PlaneFftPlan plan;
};

PlaneFft::PlaneFft(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PlaneFft::~PlaneFft() = default;

std::unique_ptr<PlaneFft> PlaneFft::make(const FftGeometry& g, std::string* why) {
  auto impl = std::make_unique<Impl>();
  if (!planefft::make_plane_fft_plan(g.fft_h, g.fft_w, &impl->plan, why)) return nullptr;
  FFTCONV_ASSERT(g.half_w == impl->plan.cw && g.bins == g.fft_h * g.half_w,
                 "the plane kernels' spectrum layout differs from the geometry's");
  int device = 0, optin = 0;
  FFTCONV_CUDA_CHECK(cudaGetDevice(&device));
  FFTCONV_CUDA_CHECK(
      cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  const auto bytes = static_cast<int>(impl->plan.smem_bytes());
  if (bytes > optin) {
    if (why)
      *why = "a plane needs " + std::to_string(bytes) +
             " bytes of shared memory, over the device's " + std::to_string(optin);
    return nullptr;
  }
  FFTCONV_CUDA_CHECK(
      cudaFuncSetAttribute(spectrum_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  FFTCONV_CUDA_CHECK(cudaFuncSetAttribute(clip_spectrum_kernel,
                                          cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  return std::unique_ptr<PlaneFft>(new PlaneFft(std::move(impl)));
}

void PlaneFft::forward(const PadSegment* segments, int count, DType dtype, const FftGeometry& g,
                       cudaStream_t stream) const {
  FFTCONV_ASSERT(count >= 1 && count <= kMaxPadSegments, "pad segment count out of range");
  const PlaneFftPlan& pl = impl_->plan;
  SpectrumParams p{};
  std::int64_t max_planes = 0;
  for (int i = 0; i < count; ++i) {
    const PadSegment& s = segments[i];
    FFTCONV_ASSERT(s.planes < (std::int64_t{1} << 31), "too many FFT planes for one launch");
    p.seg[i] = SpectrumSegment{s.src,
                               reinterpret_cast<float2*>(s.dst),
                               static_cast<int>(s.planes),
                               s.place,
                               s.map,
                               segment_dividers(s, g)};
    max_planes = std::max(max_planes, s.planes);
  }
  if (max_planes == 0) return;
  p.plan = pl;
  p.dtype = dtype;
  const dim3 grid(grid_for(max_planes), static_cast<unsigned>(count));
  spectrum_kernel<<<grid, pl.threads, pl.smem_bytes(), stream>>>(p);
  FFTCONV_CHECK_LAUNCH();
}

void PlaneFft::inverse(const ClipArgs& args, DType dtype, const FftGeometry& g,
                       cudaStream_t stream) const {
  if (args.planes == 0 || args.out_h == 0 || args.out_w == 0) return;
  check_clip_args(args, g);
  const PlaneFftPlan& pl = impl_->plan;
  const std::int64_t tiles = g.tiles_h * g.tiles_w;
  const std::int64_t result_planes = args.planes * tiles;
  FFTCONV_ASSERT(
      result_planes < (std::int64_t{1} << 31) && args.planes * args.out_h * args.out_w >= 0,
      "too many result planes for one launch");
  ClipSpectrumParams c{};
  c.a = args;
  c.plan = pl;
  c.dtype = dtype;
  c.result_planes = static_cast<int>(result_planes);
  c.tile_out_h = static_cast<int>(g.tile_out_h);
  c.tile_out_w = static_cast<int>(g.tile_out_w);
  c.k = IntDivider(static_cast<std::uint32_t>(args.k));
  c.tiles = IntDivider(static_cast<std::uint32_t>(tiles));
  c.tiles_w = IntDivider(static_cast<std::uint32_t>(g.tiles_w));
  PlaneWindow& w = c.win;
  w.tile_h = c.tile_out_h;
  w.tile_w_div = IntDivider(static_cast<std::uint32_t>(g.tile_out_w));
  w.stride_h = static_cast<int>(args.stride_h);
  w.stride_w = static_cast<int>(args.stride_w);
  w.off_h = static_cast<int>(args.off_h);
  w.off_w = static_cast<int>(args.off_w);
  w.wrap = args.wrap;
  planefft::window_band(args.off_h, args.stride_h, g.tile_out_h, pl.fh, args.wrap, c.band0,
                        c.band_rows);
  clip_spectrum_kernel<<<grid_for(result_planes), pl.threads, pl.smem_bytes(), stream>>>(c);
  FFTCONV_CHECK_LAUNCH();
}

std::string PlaneFft::describe() const {
  const PlaneFftPlan& pl = impl_->plan;
  return "own plane kernels " + std::to_string(pl.fh) + "x" + std::to_string(pl.fw) + " (radices " +
         radices(pl.cols) + " by " + radices(pl.rows) + ", " + std::to_string(pl.threads) +
         " threads, " + std::to_string((pl.smem_bytes() + 1023) / 1024) + " KiB a block)";
}

}  // namespace fftconv::detail
