#include "fft/plane_fft.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/check.h"
#include "core/device_buffer.h"
#include "core/device_info.h"
#include "fft/plane_program.cuh"
#include "stages/dtype_convert.cuh"

namespace fftconv::detail {

namespace {

using planefft::PlaneFftPlan;
using planefft::PlaneWindow;

// Blocks of a launch at most; each walks on by the grid size. PlaneFft::make lowers it to the
// blocks the device holds at once, so that each block copies the twiddles once for many planes.
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
  const float2* twiddles;  // fill_twiddle_table's
  DType dtype;
};

// The shared buffer, then the twiddle tables of the columns and of the rows, copied from the
// plan's table.
struct SharedPlane {
  float2* buf;
  float2* tw_h;
  float2* tw_w;
};

template <class Exec>
__device__ __forceinline__ SharedPlane shared_plane(Exec& ex, const PlaneFftPlan& pl,
                                                    const float2* twiddles) {
  extern __shared__ float2 smem[];
  const SharedPlane sh{smem, smem + pl.buffer, smem + pl.buffer + pl.fh};
  planefft::load_twiddles(ex, pl, twiddles, sh.tw_h);
  return sh;
}

// Registers a thread may use (__maxnreg__, which nvcc does not combine with __launch_bounds__;
// make_plane_fft_plan keeps blocks within kMaxThreads, and 128 x 512 fills the register file):
// 128 with 32 points a pass; with 16,
// at most 80, so that two blocks of 384 threads (an 81 x 81 plane) share an SM and one's
// barriers overlap the other's memory traffic. ptxas (sm_90): the 16-point kernels spill about
// 0.5 KB at 80 registers, none at 104; the 32-point ones about 1 KB at 128 (0.8 KB with the odd
// radices as plain sums, which take a tenth more instructions). Timed on an H100 only
// (data/results/h100/2026-12-05-fused, run 2): faster than cuFFT on the dense rows alone.
template <int kPoints>
constexpr int kMaxRegisters = kPoints == planefft::kSmallPoints ? 80 : 128;

// Block (x, y): planes x, x + gridDim.x, ... of segment y. kPoints: a thread's register budget
// per pass (PlaneFftPlan::points).
template <int kPoints>
__global__ void __maxnreg__(kMaxRegisters<kPoints>)
    spectrum_kernel(const __grid_constant__ SpectrumParams p) {
  const PlaneFftPlan& pl = p.plan;
  DeviceExec ex;
  const SharedPlane sh = shared_plane(ex, pl, p.twiddles);
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
    planefft::forward_program<kPoints>(
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
  const float2* twiddles;
  PlaneWindow win;
  DType dtype;
  int result_planes;
  int tile_out_h, tile_out_w;
  int band0, band_rows;
  IntDivider k, tiles, tiles_w;
};

// Block x: result planes x, x + gridDim.x, ...; each writes its tile of its output plane.
template <int kPoints>
__global__ void __maxnreg__(kMaxRegisters<kPoints>)
    clip_spectrum_kernel(const __grid_constant__ ClipSpectrumParams c) {
  const PlaneFftPlan& pl = c.plan;
  const ClipArgs& a = c.a;
  DeviceExec ex;
  const SharedPlane sh = shared_plane(ex, pl, c.twiddles);
  const std::int64_t bins = static_cast<std::int64_t>(pl.fh) * pl.cw;
  const int out_h = static_cast<int>(a.out_h), out_w = static_cast<int>(a.out_w);
  const auto* spectra = reinterpret_cast<const float2*>(a.src);
  for (int rp = static_cast<int>(blockIdx.x); rp < c.result_planes;
       rp += static_cast<int>(gridDim.x)) {
    const planefft::ResultTile rt = planefft::result_tile(rp, c.k, c.tiles, c.tiles_w, c.tile_out_h,
                                                          c.tile_out_w, out_h, out_w);
    PlaneWindow win = c.win;
    win.out_h = rt.out_h;
    win.out_w = rt.out_w;
    const float bias = a.bias ? load_element(a.bias, c.dtype, rt.filter) : 0.0f;
    const float2* spec = spectra + rp * bins;
    const std::int64_t out0 =
        rt.out_plane * out_h * out_w + static_cast<std::int64_t>(rt.oh0) * out_w + rt.ow0;
    planefft::inverse_program<kPoints>(
        ex, pl, sh.buf, sh.tw_h, sh.tw_w, c.band0, c.band_rows, win, [&](int i) { return spec[i]; },
        [&](int p, int q, float v) {
          const std::int64_t i = out0 + (p * out_w + q);
          float r = fmaf(v, a.scale, bias);
          if (a.beta != 0.0f) r = fmaf(a.beta, load_element(a.y, c.dtype, i), r);
          store_element(a.y, c.dtype, i, r);
        });
  }
}

// The bound every plan stays within (kMaxSmemBytes, or the device's own where lower), so that
// plans of different sizes never lower it for each other: the attribute is the kernel's, per
// device.
template <class Kernel>
void allow_smem(Kernel kernel, int optin) {
  const int bytes = std::min(static_cast<int>(planefft::kMaxSmemBytes), optin);
  FFTCONV_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
}

// Blocks of `kernel` the current device holds at once with this plan's block.
template <class Kernel>
std::int64_t resident_blocks(Kernel kernel, const PlaneFftPlan& pl) {
  int per_sm = 0;
  FFTCONV_CUDA_CHECK(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, pl.threads, pl.smem_bytes()));
  return std::max<std::int64_t>(1, std::int64_t(per_sm) * current_sm_count());
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
  DeviceBuffer twiddles;                            // fill_twiddle_table's, on the plan's device
  std::int64_t grid_forward = 1, grid_inverse = 1;  // resident blocks of each kernel
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
  allow_smem(spectrum_kernel<planefft::kSmallPoints>, optin);
  allow_smem(spectrum_kernel<planefft::kLargePoints>, optin);
  allow_smem(clip_spectrum_kernel<planefft::kSmallPoints>, optin);
  allow_smem(clip_spectrum_kernel<planefft::kLargePoints>, optin);
  const PlaneFftPlan& pl = impl->plan;
  const bool small = pl.points == planefft::kSmallPoints;
  impl->grid_forward = small ? resident_blocks(spectrum_kernel<planefft::kSmallPoints>, pl)
                             : resident_blocks(spectrum_kernel<planefft::kLargePoints>, pl);
  impl->grid_inverse = small ? resident_blocks(clip_spectrum_kernel<planefft::kSmallPoints>, pl)
                             : resident_blocks(clip_spectrum_kernel<planefft::kLargePoints>, pl);
  std::vector<float2> table;
  planefft::fill_twiddle_table(pl, table);
  impl->twiddles = DeviceBuffer(table.size() * sizeof(float2));
  FFTCONV_CUDA_CHECK(cudaMemcpy(impl->twiddles.get(), table.data(), table.size() * sizeof(float2),
                                cudaMemcpyHostToDevice));
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
    FFTCONV_ASSERT(s.planes + kMaxGrid < (std::int64_t{1} << 31),
                   "too many FFT planes for one launch");
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
  p.twiddles = impl_->twiddles.as<const float2>();
  p.dtype = dtype;
  const dim3 grid(static_cast<unsigned>(std::min(max_planes, impl_->grid_forward)),
                  static_cast<unsigned>(count));
  if (pl.points == planefft::kSmallPoints) {
    spectrum_kernel<planefft::kSmallPoints><<<grid, pl.threads, pl.smem_bytes(), stream>>>(p);
  } else {
    spectrum_kernel<planefft::kLargePoints><<<grid, pl.threads, pl.smem_bytes(), stream>>>(p);
  }
  FFTCONV_CHECK_LAUNCH();
}

void PlaneFft::inverse(const ClipArgs& args, DType dtype, const FftGeometry& g,
                       cudaStream_t stream) const {
  if (args.planes == 0 || args.out_h == 0 || args.out_w == 0) return;
  check_clip_args(args, g);
  const PlaneFftPlan& pl = impl_->plan;
  const std::int64_t tiles = g.tiles_h * g.tiles_w;
  const std::int64_t result_planes = args.planes * tiles;
  FFTCONV_ASSERT(result_planes + kMaxGrid < (std::int64_t{1} << 31) &&
                     args.planes * args.out_h * args.out_w >= 0,
                 "too many result planes for one launch");
  ClipSpectrumParams c{};
  c.a = args;
  c.plan = pl;
  c.twiddles = impl_->twiddles.as<const float2>();
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
  const auto grid = static_cast<unsigned>(std::min(result_planes, impl_->grid_inverse));
  if (pl.points == planefft::kSmallPoints) {
    clip_spectrum_kernel<planefft::kSmallPoints><<<grid, pl.threads, pl.smem_bytes(), stream>>>(c);
  } else {
    clip_spectrum_kernel<planefft::kLargePoints><<<grid, pl.threads, pl.smem_bytes(), stream>>>(c);
  }
  FFTCONV_CHECK_LAUNCH();
}

std::string PlaneFft::describe() const {
  const PlaneFftPlan& pl = impl_->plan;
  return "own plane kernels " + std::to_string(pl.fh) + "x" + std::to_string(pl.fw) + " (radices " +
         radices(pl.cols) + " by " + radices(pl.rows) + ", " + std::to_string(pl.threads) +
         " threads of " + std::to_string(pl.points) + " points, " +
         std::to_string((pl.smem_bytes() + 1023) / 1024) + " KiB a block)";
}

}  // namespace fftconv::detail
