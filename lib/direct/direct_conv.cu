#include "direct/direct_conv.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/check.h"
#include "core/launch.cuh"
#include "direct/direct_program.cuh"
#include "stages/dtype_convert.cuh"
#include "stages/partial_sum.h"

namespace fftconv::detail {

namespace {

template <typename T>
struct DeviceSource {
  const T* p;
  __device__ float operator()(std::int64_t e) const { return to_float(p[e]); }
};

template <typename T>
struct DeviceSink {
  T* out;
  const T* bias;
  __device__ void operator()(std::int64_t e, int o, float v) const {
    out[e] = from_float<T>(bias ? v + to_float(bias[o]) : v);
  }
};

template <typename T>
__global__ void __launch_bounds__(direct::kThreads)
    direct_kernel(DirectGeometry geo, const T* __restrict__ src, const T* __restrict__ w,
                  const T* __restrict__ bias, T* __restrict__ out) {
  extern __shared__ float smem[];
  const direct::Block k = direct::block_of(geo, blockIdx.x);
  const int tid = threadIdx.x;
  float acc[direct::kStrip] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int ci = 0; ci < geo.group_in; ++ci) {
    direct::load(geo, k, ci, tid, smem, DeviceSource<T>{src}, DeviceSource<T>{w});
    __syncthreads();
    direct::compute(geo, tid, smem, acc);
    __syncthreads();
  }
  direct::write_partials(geo, tid, smem, acc);
  __syncthreads();
  direct::store(geo, k, tid, smem, DeviceSink<T>{out, bias});
}

template <typename O>
struct WgradSink {
  O* dw;
  float alpha, beta;
  __device__ void operator()(std::int64_t e, float v) const {
    dw[e] = from_float<O>(beta == 0.0f ? alpha * v : alpha * v + beta * to_float(dw[e]));
  }
};

static_assert(direct::kThreads == direct::kWgradTaps * 32, "fold_wgrad: a warp per tap");

template <typename T, typename O>
__global__ void __launch_bounds__(direct::kThreads)
    direct_wgrad_kernel(DirectWgradGeometry geo, const T* __restrict__ x, const T* __restrict__ dy,
                        O* __restrict__ dw, float alpha, float beta) {
  __shared__ float smem[direct::kWgradTaps * direct::kThreads + direct::kWgradTaps * 32];
  const direct::WgradBlock b = direct::wgrad_block_of(geo, blockIdx.x);
  const int tid = threadIdx.x;
  float acc[direct::kWgradTaps] = {};
  direct::accumulate_wgrad(geo, b, tid, DeviceSource<T>{x}, DeviceSource<T>{dy}, acc);
  direct::write_wgrad_partials(tid, smem, acc);
  __syncthreads();
  direct::fold_wgrad(tid, smem);
  __syncthreads();
  direct::store_wgrad(geo, b, tid, smem, WgradSink<O>{dw, alpha, beta});
}

// The rows layout's sums: to dw where a plane has one part, else to the part's partial.
template <typename O>
struct RowsSink {
  O* dw;
  float* partial;
  std::int64_t elems;
  int parts;
  float alpha, beta;
  __device__ void operator()(int part, std::int64_t e, float v) const {
    if (parts > 1) {
      partial[part * elems + e] = v;
    } else {
      dw[e] = from_float<O>(beta == 0.0f ? alpha * v : alpha * v + beta * to_float(dw[e]));
    }
  }
};

template <typename T, typename O>
__global__ void __launch_bounds__(direct::kThreads)
    direct_wgrad_rows_kernel(DirectWgradGeometry geo, const T* __restrict__ x,
                             const T* __restrict__ dy, O* __restrict__ dw, float* partial,
                             float alpha, float beta) {
  extern __shared__ float4 smem4[];  // 16-byte aligned for accumulate_rows' quads
  float* smem = reinterpret_cast<float*>(smem4);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // The partial sum (its dependent) may queue; where none follows, a dependent launch of the
  // caller's next kernel must not be released early.
  if (geo.parts > 1) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
  const direct::RowsBlock b = direct::rows_block_of(geo, blockIdx.x);
  const int tid = threadIdx.x;
  float acc[direct::kWgradTaps] = {};
  for (std::int64_t rid = b.row_begin; rid < b.row_end; ++rid) {
    float row[direct::kWgradTaps] = {};  // a row's sums first (direct::add_row)
    for (int q0 = 0; q0 < geo.out_w; q0 += geo.tile_q) {
      direct::stage_step(geo, b, rid, q0, tid, static_cast<int>(blockDim.x), smem,
                         DeviceSource<T>{x}, DeviceSource<T>{dy});
      __syncthreads();
      direct::accumulate_rows(geo, b, tid, smem, row);
      __syncthreads();
    }
    direct::add_row(acc, row);
  }
  direct::store_rows(geo, b, tid, acc,
                     RowsSink<O>{dw, partial, geo.w_elems(), geo.parts, alpha, beta});
}

template <typename T, typename O>
void launch_wgrad(const DirectWgradGeometry& g, const void* x, const void* dy, void* dw,
                  float* partial, float alpha, float beta, DType out_dtype, bool sum_dependent,
                  cudaStream_t stream) {
  if (!g.rows) {
    direct_wgrad_kernel<T, O><<<static_cast<unsigned>(g.blocks()), direct::kThreads, 0, stream>>>(
        g, static_cast<const T*>(x), static_cast<const T*>(dy), static_cast<O*>(dw), alpha, beta);
    return;
  }
  const std::size_t smem = sizeof(float) * static_cast<std::size_t>(g.smem_floats());
  direct_wgrad_rows_kernel<T, O><<<static_cast<unsigned>(g.blocks()), g.threads, smem, stream>>>(
      g, static_cast<const T*>(x), static_cast<const T*>(dy), static_cast<O*>(dw), partial, alpha,
      beta);
  if (g.parts > 1) {
    FFTCONV_CHECK_LAUNCH();
    launch_partial_sum(partial, g.parts, g.w_elems(), dw, out_dtype, alpha, beta, stream,
                       sum_dependent);
  }
}

template <typename T>
void set_smem(std::size_t bytes) {
  FFTCONV_CUDA_CHECK(cudaFuncSetAttribute(
      direct_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
}

template <typename T>
void launch(const DirectGeometry& g, const DirectArgs& a, cudaStream_t stream) {
  direct_kernel<T><<<static_cast<unsigned>(g.blocks()), direct::kThreads, g.smem_bytes(), stream>>>(
      g, static_cast<const T*>(a.src), static_cast<const T*>(a.w), static_cast<const T*>(a.bias),
      static_cast<T*>(a.out));
}

}  // namespace

Support direct_support(const ConvDesc& d, Pass pass) {
  if (pass == Pass::kBackwardData && (d.stride_h != 1 || d.stride_w != 1)) {
    return Support::no(Status::kNotSupported,
                       "the direct path's input gradient needs unit stride (the adjoint of a "
                       "strided convolution is not a convolution)");
  }
  // Every index of a plane, a tensor's planes and the grid within 32 bits (planes: 64 bits).
  const std::int64_t lim = INT_MAX;
  const std::int64_t dims[] = {d.n,
                               d.c,
                               d.h,
                               d.w,
                               d.k,
                               d.r,
                               d.s,
                               d.out_h(),
                               d.out_w(),
                               d.stride_h,
                               d.stride_w,
                               d.pad_h + d.eff_r(),
                               d.pad_w + d.eff_s()};
  for (std::int64_t v : dims) {
    if (v >= lim / 4) return Support::no(Status::kNotSupported, "a size exceeds 2^29");
  }
  if (d.h * d.w >= lim || d.out_h() * d.out_w() >= lim) {
    return Support::no(Status::kNotSupported, "a plane has 2^31 elements or more");
  }
  if (pass == Pass::kBackwardFilter) {
    if (direct_wgrad_geometry(d).blocks() >= lim) {
      return Support::no(Status::kNotSupported, "more than 2^31 - 1 blocks of filter taps");
    }
    return Support::yes();
  }
  // The narrowest tile's window and filter plane in shared memory, counted in 64 bits before
  // the geometry narrows them to int.
  const std::int64_t sh = pass == Pass::kForward ? d.stride_h : 1;
  const std::int64_t sw = pass == Pass::kForward ? d.stride_w : 1;
  const std::int64_t win_h = (direct::kTileH - 1) * sh + d.eff_r();
  const std::int64_t win_w = (direct::kTileWidths[2] - 1) * sw + d.eff_s();
  const double smem = 4.0 * (double(win_h) * double(win_w | 1) + double(d.r) * double(d.s | 1));
  if (smem > double(direct::kMaxSmemBytes)) {
    char buf[200];
    std::snprintf(buf, sizeof(buf),
                  "a tile's source window and filter plane need %.0f bytes of shared memory, "
                  "over %zu",
                  smem, direct::kMaxSmemBytes);
    return Support::no(Status::kNotSupported, buf);
  }
  const DirectGeometry g = direct_geometry(d, pass, direct::kTileWidths[2]);
  if (g.blocks() >= lim) {
    return Support::no(Status::kNotSupported, "more than 2^31 - 1 tiles");
  }
  return Support::yes();
}

DirectGeometry direct_geometry(const ConvDesc& d, Pass pass, int tile_w) {
  DirectGeometry g;
  auto i = [](std::int64_t v) { return static_cast<int>(v); };
  g.n = i(d.n);
  g.r = i(d.r);
  g.s = i(d.s);
  g.dil_h = i(d.dil_h);
  g.dil_w = i(d.dil_w);
  g.filter_cg = i(d.c_per_group());
  if (pass == Pass::kBackwardData) {
    // dx = the convolution of dy with the transposed, flipped filter, padded by the dilated
    // extent less one less the padding (unit stride).
    g.src_c = i(d.k);
    g.src_h = i(d.out_h());
    g.src_w = i(d.out_w());
    g.out_c = i(d.c);
    g.out_h = i(d.h);
    g.out_w = i(d.w);
    g.off_h = i(d.eff_r() - 1 - d.pad_h);
    g.off_w = i(d.eff_s() - 1 - d.pad_w);
    g.group_in = i(d.k_per_group());
    g.group_out = i(d.c_per_group());
    g.transpose = true;
  } else {
    g.src_c = i(d.c);
    g.src_h = i(d.h);
    g.src_w = i(d.w);
    g.out_c = i(d.k);
    g.out_h = i(d.out_h());
    g.out_w = i(d.out_w());
    g.stride_h = i(d.stride_h);
    g.stride_w = i(d.stride_w);
    g.off_h = i(d.pad_h);
    g.off_w = i(d.pad_w);
    g.group_in = i(d.c_per_group());
    g.group_out = i(d.k_per_group());
  }
  g.tile_h = direct::kTileH;
  g.tile_w = tile_w;
  g.split = direct::kThreads / (g.tile_h * tile_w / direct::kStrip);
  g.tiles_h = (g.out_h + g.tile_h - 1) / g.tile_h;
  g.tiles_w = (g.out_w + tile_w - 1) / tile_w;
  g.win_h = (g.tile_h - 1) * g.stride_h + (g.r - 1) * g.dil_h + 1;
  g.win_w = (tile_w - 1) * g.stride_w + (g.s - 1) * g.dil_w + 1;
  return g;
}

DirectWgradGeometry direct_wgrad_geometry(const ConvDesc& d) {
  DirectWgradGeometry g;
  auto i = [](std::int64_t v) { return static_cast<int>(v); };
  g.n = i(d.n);
  g.c = i(d.c);
  g.h = i(d.h);
  g.w = i(d.w);
  g.k = i(d.k);
  g.cg = i(d.c_per_group());
  g.kg = i(d.k_per_group());
  g.r = i(d.r);
  g.s = i(d.s);
  g.out_h = i(d.out_h());
  g.out_w = i(d.out_w());
  g.stride_h = i(d.stride_h);
  g.stride_w = i(d.stride_w);
  g.dil_h = i(d.dil_h);
  g.dil_w = i(d.dil_w);
  g.pad_h = i(d.pad_h);
  g.pad_w = i(d.pad_w);
  g.chunks = (g.s + direct::kWgradTaps - 1) / direct::kWgradTaps;
  return g;
}

DirectWgradGeometry direct_wgrad_rows_geometry(const ConvDesc& d, int sm_count,
                                               int min_threads) {
  const DirectWgradGeometry taps = direct_wgrad_geometry(d);
  DirectWgradGeometry g = taps;
  constexpr int kRun = direct::kWgradTaps;
  g.groups_s = (g.s + kRun - 1) / kRun;
  if (g.groups_s > direct::kThreads) return taps;
  g.r_blocks = (g.r + direct::kThreads / g.groups_s - 1) / (direct::kThreads / g.groups_s);
  g.rows_b = (g.r + g.r_blocks - 1) / g.r_blocks;
  if (g.rows_b * g.groups_s < min_threads) return taps;
  g.threads = (g.rows_b * g.groups_s + 31) / 32 * 32;
  // The columns a run of taps reads over a tile, one more (the unit-stride loads read a quad
  // past the run's last), in whole quads.
  const auto pitch_of = [&](int tile_q) {
    const std::int64_t span =
        std::int64_t(tile_q - 1) * g.stride_w + std::int64_t(g.groups_s * kRun - 1) * g.dil_w + 2;
    return (span + 3) / 4 * 4;
  };
  int tile_q = std::min((g.out_w + kRun - 1) / kRun * kRun, direct::kRowsMaxTileQ);
  const auto fits = [&](int tq) {
    return 4.0 * (double(g.rows_b) * double(pitch_of(tq)) + tq) <=
           double(direct::kRowsMaxSmemBytes);
  };
  while (tile_q > kRun && !fits(tile_q)) tile_q -= kRun;
  if (!fits(tile_q)) return taps;
  g.tile_q = tile_q;
  g.q_tiles = (g.out_w + tile_q - 1) / tile_q;
  g.pitch = static_cast<int>(pitch_of(tile_q));
  // Parts along the output rows until the grid gives every SM kRowsBlocksPerSm blocks.
  const std::int64_t rows_total = std::int64_t(g.n) * g.out_h;
  const std::int64_t base = std::int64_t(g.k) * g.cg * g.r_blocks;
  const std::int64_t want = std::int64_t(std::max(sm_count, 1)) * direct::kRowsBlocksPerSm;
  // (at least enough parts that a part's rows fit an int)
  const std::int64_t fewest = (rows_total + INT_MAX - 1) / INT_MAX;
  const std::int64_t parts =
      std::clamp<std::int64_t>((want + base - 1) / base, fewest, rows_total);
  g.rows_per_part = static_cast<int>((rows_total + parts - 1) / parts);
  g.parts = static_cast<int>((rows_total + g.rows_per_part - 1) / g.rows_per_part);
  g.rows = true;
  return g;
}

DirectWgradGeometry choose_direct_wgrad_geometry(const ConvDesc& d, int sm_count,
                                                 std::size_t workspace_limit) {
  const char* layout = std::getenv("FFTCONV_DIRECT_WGRAD");
  if (layout == nullptr || std::strcmp(layout, "taps") != 0) {
    const DirectWgradGeometry rows = direct_wgrad_rows_geometry(d, sm_count);
    if (rows.partial_bytes() <= workspace_limit) return rows;
  }
  return direct_wgrad_geometry(d);
}

void prepare_direct(DType dtype) {
  static_assert(direct::kThreads == 256 && direct::kTileH == 8 && direct::kStrip == 4,
                "lane_of's warp layout: 8 tile rows by 4 parts a warp");
  switch (dtype) {
    case DType::kF32:
      set_smem<float>(direct::kMaxSmemBytes);
      break;
    case DType::kF16:
      set_smem<__half>(direct::kMaxSmemBytes);
      break;
    case DType::kBF16:
      set_smem<__nv_bfloat16>(direct::kMaxSmemBytes);
      break;
  }
}

void launch_direct(const DirectGeometry& g, const DirectArgs& a, DType dtype, cudaStream_t stream) {
  switch (dtype) {
    case DType::kF32:
      launch<float>(g, a, stream);
      break;
    case DType::kF16:
      launch<__half>(g, a, stream);
      break;
    case DType::kBF16:
      launch<__nv_bfloat16>(g, a, stream);
      break;
  }
  FFTCONV_CHECK_LAUNCH();
}

void launch_direct_wgrad(const DirectWgradGeometry& g, const void* x, const void* dy, void* dw,
                         float* partial, float alpha, float beta, DType dtype, DType out_dtype,
                         bool sum_dependent, cudaStream_t stream) {
  const bool f32_out = out_dtype == DType::kF32;
  const auto run = [&](auto t, auto o) {
    launch_wgrad<decltype(t), decltype(o)>(g, x, dy, dw, partial, alpha, beta, out_dtype,
                                           sum_dependent, stream);
  };
  switch (dtype) {
    case DType::kF32:
      run(float{}, float{});
      break;
    case DType::kF16:
      if (f32_out) {
        run(__half{}, float{});
      } else {
        run(__half{}, __half{});
      }
      break;
    case DType::kBF16:
      if (f32_out) {
        run(__nv_bfloat16{}, float{});
      } else {
        run(__nv_bfloat16{}, __nv_bfloat16{});
      }
      break;
  }
  FFTCONV_CHECK_LAUNCH();
}

}  // namespace fftconv::detail
