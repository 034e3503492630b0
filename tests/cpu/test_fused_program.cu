// The fused FFT path's programs (lib/fused/fused_program.cuh) emulated on the host: every thread
// of a plane runs each phase in turn, with its own register line, between the synchronisations
// the kernels make. The same code the kernels run, so the index math, the in-register DFTs, the
// real-FFT steps and the placement and window rules are checked here against the fp64 oracle,
// on random descriptors of both passes and every FFT size, without a GPU. Shared memory starts
// as NaN: a phase that read what no phase wrote would poison the output.
#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <complex>
#include <cstdio>
#include <limits>
#include <map>
#include <random>
#include <type_traits>
#include <utility>
#include <vector>

#include "fused/fused_conv.h"
#include "fused/fused_program.cuh"
#include "geometry/fft_geometry.h"
#include "reference/reference.h"
#include "testing/testing.h"

namespace fftconv {
namespace {

using detail::FusedConvArgs;
using detail::FusedFilterArgs;
namespace fused = detail::fused;

// Runs each phase for every thread of the plane in turn: each thread keeps its own line. Its
// members are declared host-device only so that the programs' host-device lambdas may call
// them (they run on the host alone).
template <int N>
struct HostExec {
  std::vector<fused::Line<N>> lines = std::vector<fused::Line<N>>(2 * N);
#pragma nv_exec_check_disable
  template <class Fn>
  __host__ __device__ void each(Fn&& fn) {
    for (int t = 0; t < 2 * N; ++t) fn(t, lines[t]);
  }
  __host__ __device__ void sync() {}
};

// Stages a source column from a host plane (fused_program.cuh, stage_source).
struct HostColumnCopy {
  const float* plane;
  int src_w;
  void column(float* dst, int pitch, int rows, int j) const {
    for (int r = 0; r < rows; ++r) dst[r * pitch] = j >= 0 ? plane[r * src_w + j] : 0.0f;
  }
};

// The pass at FFT size F, the whole plane or (tiled) in tiles, unit by unit as the kernel's
// blocks take them.
template <int F>
std::vector<float> emulate_sized(const ConvDesc& d, Pass pass, const std::vector<float>& src,
                                 const std::vector<float>& w, const std::vector<float>& bias,
                                 bool tiled = false) {
  using L = fused::Layout<F>;
  const FusedFilterArgs fa = detail::fused_filter_args(d, pass, F);
  detail::FusedTiling t;
  const FusedConvArgs ca = tiled ? detail::fused_tiled_conv_args(d, pass, F, &t)
                                 : detail::fused_conv_args(d, pass, F);
  if (!tiled) {  // one tile: the whole plane
    t.src_h = ca.geo.src_h;
    t.src_w = ca.geo.src_w;
    t.out_h = ca.geo.out_h;
    t.out_w = ca.geo.out_w;
  }
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float2> spectra(static_cast<std::size_t>(fa.k) * L::kSpecSize,
                              make_float2(nan, nan));
  std::vector<float> buf(L::kFloats);
  const std::int64_t taps = std::int64_t(fa.r) * fa.s;
  for (int f = 0; f < fa.k; ++f) {
    std::fill(buf.begin(), buf.end(), nan);
    HostExec<F / 2> ex;
    fused::fused_filter_program<F>(ex, buf.data(), detail::filter_geometry(fa),
                                   spectra.data() + std::int64_t(f) * L::kSpecSize, true,
                                   fa.conjugate, fa.scale, HostColumnCopy{w.data() + f * taps, fa.s});
  }
  const std::int64_t src_plane = std::int64_t(t.src_h) * t.src_w;
  const std::int64_t out_plane = std::int64_t(t.out_h) * t.out_w;
  std::vector<float> out(static_cast<std::size_t>(ca.planes * out_plane), nan);
  for (std::int64_t unit = 0; unit < ca.planes * t.count(); ++unit) {
    const std::int64_t p = unit / t.count();
    const int filter = static_cast<int>(p % ca.k);
    const float b = bias.empty() ? 0.0f : bias[filter];
    const detail::FusedTile tile =
        tiled ? detail::fused_tile(ca.geo, t, static_cast<int>(unit % t.count()))
              : detail::FusedTile{ca.geo, 0, 0};
    std::fill(buf.begin(), buf.end(), nan);
    HostExec<F / 2> ex;
    float* o = out.data() + p * out_plane + tile.out_offset;
    fused::fused_conv_program<F>(
        ex, buf.data(), tile.geo, spectra.data() + std::int64_t(filter) * L::kSpecSize, true,
        HostColumnCopy{src.data() + p * src_plane + tile.src_offset, t.src_w},
        [&](int pr, int qc, float v) {
          float& e = o[std::int64_t(pr) * t.out_w + qc];
          if (!std::isnan(e)) ADD_FAILURE() << "output written twice";
          e = v + b;
        },
        [] {});
  }
  return out;
}

// The sizes the fused path covers (kFusedSizes, checked by FusedProgram.SizesAreTheKernels').
using Sizes = std::integer_sequence<int, 8, 16, 24, 32, 40, 48, 64, 72, 80, 96, 128>;

template <int... F>
std::vector<int> size_list(std::integer_sequence<int, F...>) {
  return {F...};
}

// fn(std::integral_constant<int, F>) for F = size, one of the covered sizes; an empty result
// (and a failure naming `d`) for any other.
template <class Fn, int... F>
std::vector<float> with_size_in(int size, const ConvDesc& d, Fn&& fn,
                                std::integer_sequence<int, F...>) {
  std::vector<float> out;
  const bool found =
      ((size == F ? (out = fn(std::integral_constant<int, F>{}), true) : false) || ...);
  if (!found) ADD_FAILURE() << "no fused size " << size << " for " << d.to_string();
  return out;
}

template <class Fn>
std::vector<float> with_size(int size, const ConvDesc& d, Fn&& fn) {
  return with_size_in(size, d, fn, Sizes{});
}

TEST(FusedProgram, SizesAreTheKernels) {
  const std::vector<int> listed(std::begin(detail::kFusedSizes), std::end(detail::kFusedSizes));
  EXPECT_EQ(size_list(Sizes{}), listed);
}

// "F = 8: 3, F = 16: 20, ..." for a count per size.
std::string per_size_text(const std::map<int, int>& per_size) {
  std::string s;
  for (const int f : detail::kFusedSizes) {
    const auto it = per_size.find(f);
    s += (s.empty() ? "" : ", ") + std::to_string(f) + ": " +
         std::to_string(it == per_size.end() ? 0 : it->second);
  }
  return s;
}

std::vector<float> emulate(const ConvDesc& d, Pass pass, const std::vector<float>& src,
                           const std::vector<float>& w, const std::vector<float>& bias) {
  return with_size(detail::fused_size(d), d, [&](auto f) {
    return emulate_sized<decltype(f)::value>(d, pass, src, w, bias);
  });
}

// The emulated pass against the fp64 oracle.
testing::ErrorStats check(const ConvDesc& d, Pass pass, std::uint64_t seed) {
  const testing::OracleCase c = testing::host_oracle_case(d, pass, seed);
  return testing::compare(emulate(d, pass, c.src, c.w, c.bias), c.ref);
}

// The pass in tiles of size x size (fused_tiles true) against the fp64 oracle.
testing::ErrorStats check_tiled(const ConvDesc& d, Pass pass, int size, std::uint64_t seed) {
  const testing::OracleCase c = testing::host_oracle_case(d, pass, seed);
  return testing::compare(with_size(size, d,
                                    [&](auto f) {
                                      return emulate_sized<decltype(f)::value>(
                                          d, pass, c.src, c.w, c.bias, true);
                                    }),
                          c.ref);
}

// A random descriptor with one channel per group (depthwise, grouped or single) whose fused FFT
// fits, small enough for the host oracle.
ConvDesc random_desc(std::mt19937_64& gen) {
  testing::RandomDescOptions o;
  o.wide_padding = true;  // periods below the output extent: the forward pass's wrapped reads
  o.max_extent = 128;  // edge sizes up to 128: periods of 121 to 128 drawn too
  o.max_kernel = 31;
  o.max_batch = 2;
  o.max_channels_per_group = 1;
  o.max_depthwise = 3;
  for (;;) {
    const ConvDesc d = testing::random_desc(gen, o);
    if (detail::fused_size(d) >= 0) return d;
  }
}

void sweep(Pass pass, int cases, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  double worst = 0.0;
  int failures = 0;
  std::map<int, int> per_size;
  for (int i = 0; i < cases; ++i) {
    const ConvDesc d = random_desc(gen);
    ++per_size[detail::fused_size(d)];
    const testing::ErrorStats e = check(d, pass, seed * 1000 + i);
    worst = std::max(worst, e.rel_l2);
    if (!e.pass(1e-5)) {
      ++failures;
      ADD_FAILURE() << pass_name(pass) << " " << d.to_string() << " (fused "
                    << detail::fused_size(d) << "): " << e.to_string();
    }
  }
  std::printf("[ emulated ] %s: %d cases (per size F: %s), %d failures, worst rel_l2 %.3e\n",
              pass_name(pass), cases, per_size_text(per_size).c_str(), failures, worst);
  // F = 8 needs planes and kernels this small that few draws give one: EverySize covers it.
  for (const int f : detail::kFusedSizes) {
    if (f > 8) EXPECT_GT(per_size[f], 0) << "no case of F = " << f;
  }
}

TEST(FusedProgram, ForwardSweep) { sweep(Pass::kForward, 200, 81); }
TEST(FusedProgram, BackwardDataSweep) { sweep(Pass::kBackwardData, 200, 82); }

// Tiles: random descriptors of both passes (backward data at unit stride) in tiles of a random
// size below the plane's own (every tile its window, edge tiles cut by the plane, windows
// reaching into the padding or wholly outside the source, one tile where it covers the plane),
// against the oracle; each output written once.
void tiled_sweep(Pass pass, int cases, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  double worst = 0.0;
  int failures = 0, tiles = 0;
  std::map<int, int> per_size;
  for (int i = 0; i < cases;) {
    const ConvDesc d = random_desc(gen);
    std::vector<int> sizes;
    for (const int f : detail::kFusedSizes) {
      int th = 0, tw = 0;
      if (f < detail::fused_size(d) && detail::fused_tiles(d, pass, f, &th, &tw)) {
        sizes.push_back(f);  // one tile too (backward data with padding beyond the kernel)
      }
    }
    if (sizes.empty()) continue;
    const int f = sizes[gen() % sizes.size()];
    int th = 0, tw = 0;
    detail::fused_tiles(d, pass, f, &th, &tw);
    tiles += th * tw;
    ++per_size[f];
    const testing::ErrorStats e = check_tiled(d, pass, f, seed * 1000 + i);
    worst = std::max(worst, e.rel_l2);
    if (!e.pass(1e-5)) {
      ++failures;
      ADD_FAILURE() << pass_name(pass) << " " << d.to_string() << " (tiles of " << f << ", " << th
                    << "x" << tw << "): " << e.to_string();
    }
    ++i;
  }
  std::printf("[ emulated ] tiled %s: %d cases, %d tiles (per size F: %s), %d failures, worst "
              "rel_l2 %.3e\n",
              pass_name(pass), cases, tiles, per_size_text(per_size).c_str(), failures, worst);
}

TEST(FusedProgram, TiledForwardSweep) { tiled_sweep(Pass::kForward, 120, 91); }
TEST(FusedProgram, TiledBackwardDataSweep) { tiled_sweep(Pass::kBackwardData, 120, 92); }

// The landmark rows' tiles: 96x96 heatmaps with 45x45, same padding, in four 96x96 transforms
// (tiles of 52x52 outputs), both passes.
TEST(FusedProgram, LandmarkTiles) {
  const ConvDesc d = ConvDesc::parse("n2c1h96w96k1r45s45p22x22u1x1d1x1g1f32");
  for (Pass p : {Pass::kForward, Pass::kBackwardData}) {
    int th = 0, tw = 0;
    ASSERT_TRUE(detail::fused_tiles(d, p, 96, &th, &tw));
    EXPECT_EQ(th, 2);
    EXPECT_EQ(tw, 2);
    detail::FusedTiling t;
    detail::fused_tiled_conv_args(d, p, 96, &t);
    EXPECT_EQ(t.tile_h, 52);
    EXPECT_EQ(t.window_h, 96);
    const testing::ErrorStats e = check_tiled(d, p, 96, 93);
    EXPECT_TRUE(e.pass(1e-5)) << pass_name(p) << ": " << e.to_string();
  }
  int th = 0, tw = 0;
  EXPECT_FALSE(detail::fused_tiles(d, Pass::kForward, 40, &th, &tw));  // under the 45 taps
  // Backward data with padding beyond the kernel: one tile (its window shifted by
  // pad - (eff - 1)) at a size below the whole plane's.
  for (const char* s : {"n1c1h32w32k1r1s1p1x1u1x1d1x1g1f32", "n2c1h60w60k1r5s5p6x6u1x1d1x1g1f32"}) {
    const ConvDesc one = ConvDesc::parse(s);
    const int f = one.h == 32 ? 32 : 64;
    ASSERT_LT(f, detail::fused_size(one)) << s;
    ASSERT_TRUE(detail::fused_tiles(one, Pass::kBackwardData, f, &th, &tw)) << s;
    EXPECT_EQ(th * tw, 1) << s;
    const testing::ErrorStats e = check_tiled(one, Pass::kBackwardData, f, 94);
    EXPECT_TRUE(e.pass(1e-5)) << s << ": " << e.to_string();
  }
  const ConvDesc strided = ConvDesc::parse("n1c1h40w40k1r5s5p2x2u2x2d1x1g1f32");
  EXPECT_TRUE(detail::fused_tiles(strided, Pass::kForward, 16, &th, &tw));
  EXPECT_FALSE(detail::fused_tiles(strided, Pass::kBackwardData, 16, &th, &tw));
}

// Every FFT size, with a plane of exactly that period, both passes.
TEST(FusedProgram, EverySize) {
  for (const int f : detail::kFusedSizes) {
    ConvDesc d;
    d.c = d.k = d.groups = 2;
    d.h = f;
    d.w = f;
    d.r = 5;
    d.s = 3;
    for (Pass p : {Pass::kForward, Pass::kBackwardData}) {
      ASSERT_EQ(detail::fused_size(d), f) << d.to_string();
      const testing::ErrorStats e = check(d, p, 300 + f);
      EXPECT_TRUE(e.pass(1e-5)) << pass_name(p) << " " << d.to_string() << ": " << e.to_string();
    }
  }
}

// The suite's depthwise and single-channel geometries as it runs them: the landmark rows (96x96,
// 45x45, same padding: 128x128), 31x31 on 14x14 maps (32x32) and on 56x56 maps (72x72), 51x51
// on 28x28 (56x56).
TEST(FusedProgram, SuiteGeometries) {
  for (const char* s :
       {"n2c1h96w96k1r45s45p22x22u1x1d1x1g1f32", "n1c3h14w14k3r31s31p15x15u1x1d1x1g3f32",
        "n1c2h56w56k2r31s31p15x15u1x1d1x1g2f32", "n1c2h28w28k2r51s51p25x25u1x1d1x1g2f32"}) {
    const ConvDesc d = ConvDesc::parse(s);
    for (Pass p : {Pass::kForward, Pass::kBackwardData}) {
      const testing::ErrorStats e = check(d, p, 77);
      EXPECT_TRUE(e.pass(1e-5)) << pass_name(p) << " " << s << ": " << e.to_string();
    }
  }
}

// ---- backward filter ---------------------------------------------------------------------------

// The tiled backward filter's pairs as the kernel forms them (fused_wgrad_pair): pair i of a
// slot is tile (first + i) % tiles of image (first + i) / tiles.
struct HostTiledGeos {
  const detail::FusedWgradArgs& a;
  const detail::FusedTiling& t;
  std::int64_t first;
  // Host-device like the program that calls them (they run on the host alone).
  __host__ __device__ detail::FusedWgradPair pair(int i) const {
    return detail::fused_wgrad_pair(a, t, static_cast<int>((first + i) % a.tiles));
  }
  __host__ __device__ fused::PlaneGeometry x(int i) const { return pair(i).x; }
  __host__ __device__ fused::PlaneGeometry dy(int i) const { return pair(i).dy; }
};

// Every slot of the backward-filter kernel (a channel, a slice of its pairs: images, or with
// `tiled` the tiles of images at size F) in turn, each writing its window as a partial, then
// the slices summed in order as fused_wgrad_sum_kernel does (one slice: the slot's window is
// dw).
template <int F>
std::vector<float> emulate_wgrad_sized(const ConvDesc& d, const std::vector<float>& x,
                                       const std::vector<float>& dy, int sms, int* chunks,
                                       bool tiled = false, bool sum_rows = false) {
  using L = fused::Layout<F>;
  detail::FusedTiling t;
  detail::FusedWgradArgs a = tiled ? detail::fused_tiled_wgrad_args(d, F, DType::kF32, sms, &t)
                                   : detail::fused_wgrad_args(d, F, DType::kF32, sms);
  a.sum_rows = sum_rows;
  *chunks = a.chunks;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::int64_t window = d.r * d.s, c = d.c;
  const std::int64_t x_plane = d.h * d.w, dy_plane = d.out_h() * d.out_w();
  std::vector<float> partial(static_cast<std::size_t>(a.chunks * c * window), nan);
  std::vector<float2> g(L::kSpecSize), acc(L::kSpecSize);
  std::vector<float> buf(L::kFloats);
  for (std::int64_t slot = 0; slot < a.slots(); ++slot) {
    const std::int64_t channel = slot % c, chunk = slot / c;
    const std::int64_t first = chunk * a.per_chunk;
    const int count = static_cast<int>(std::min<std::int64_t>(a.per_chunk, a.pairs() - first));
    std::fill(buf.begin(), buf.end(), nan);
    std::fill(g.begin(), g.end(), make_float2(nan, nan));
    std::fill(acc.begin(), acc.end(), make_float2(nan, nan));
    HostExec<F / 2> ex;
    const HostTiledGeos tiles{a, t, first};
    // Pair i's image plane in this channel, and where its x and dy start in it.
    const auto plane = [&](int i) { return ((first + i) / a.tiles) * c + channel; };
    const auto x_copy = [&](int i) {
      return HostColumnCopy{x.data() + plane(i) * x_plane + (tiled ? tiles.pair(i).x_offset : 0),
                            static_cast<int>(d.w)};
    };
    const auto dy_copy = [&](int i) {
      return HostColumnCopy{
          dy.data() + plane(i) * dy_plane + (tiled ? tiles.pair(i).dy_offset : 0),
          static_cast<int>(d.out_w())};
    };
    const auto store = [&](int p, int q, float v) {
      partial[(chunk * c + channel) * window + p * d.s + q] = v;
    };
    if (tiled) {
      fused::fused_wgrad_program<F>(ex, buf.data(), tiles, a.x_geo, g.data(), acc.data(),
                                    a.per_chunk, count, true, a.scale, a.sum_rows, x_copy,
                                    dy_copy, store);
    } else {
      fused::fused_wgrad_program<F>(ex, buf.data(), fused::WholeWgradGeos{a.x_geo, a.dy_geo},
                                    a.x_geo, g.data(), acc.data(), a.per_chunk, count, true,
                                    a.scale, a.sum_rows, x_copy, dy_copy, store);
    }
  }
  std::vector<float> dw(static_cast<std::size_t>(c * window));
  for (std::size_t e = 0; e < dw.size(); ++e) {
    float sum = 0.0f;
    for (int j = 0; j < a.chunks; ++j) sum += partial[j * dw.size() + e];
    dw[e] = sum;
  }
  return dw;
}

std::vector<float> emulate_wgrad(const ConvDesc& d, const std::vector<float>& x,
                                 const std::vector<float>& dy, int sms, int* chunks,
                                 int tiled_size = 0, bool sum_rows = false) {
  return with_size(tiled_size > 0 ? tiled_size : detail::fused_wgrad_size(d), d, [&](auto f) {
    return emulate_wgrad_sized<decltype(f)::value>(d, x, dy, sms, chunks, tiled_size > 0,
                                                   sum_rows);
  });
}

// The backward filter, whole planes or (tiled_size > 0) in tiles of that size, its slots
// summing spectra or (sum_rows) the window's rows, against the fp64 oracle.
testing::ErrorStats check_wgrad(const ConvDesc& d, std::uint64_t seed, int sms, int* chunks,
                                int tiled_size = 0, bool sum_rows = false) {
  const std::vector<float> x = testing::random_values(d.x_elems(), seed, DType::kF32);
  const std::vector<float> dy = testing::random_values(d.y_elems(), seed + 1, DType::kF32);
  std::vector<double> ref(static_cast<std::size_t>(d.w_elems()));
  reference::conv2d_backward_filter_host(d, x.data(), dy.data(), ref.data());
  return testing::compare(emulate_wgrad(d, x, dy, sms, chunks, tiled_size, sum_rows), ref);
}

// Random descriptors of one channel per group (padding, stride, dilation, rectangular kernels,
// wide padding), sliced over the batch as a device of 1, 2 or 132 SMs would slice them; the
// slots summing spectra and (FusedWgradArgs::sum_rows) the window's rows.
TEST(FusedProgram, BackwardFilterSweep) {
  std::mt19937_64 gen(83);
  double worst = 0.0;
  int failures = 0, sliced = 0;
  std::map<int, int> per_size;
  constexpr int kCases = 200;
  for (int i = 0; i < kCases; ++i) {
    ConvDesc d;
    do {
      d = random_desc(gen);
    } while (detail::fused_wgrad_size(d) < 0);
    const int sms = i % 3 == 0 ? 1 : i % 3 == 1 ? 2 : 132;
    ++per_size[detail::fused_wgrad_size(d)];
    for (bool sum_rows : {false, true}) {
      int chunks = 0;
      const testing::ErrorStats e = check_wgrad(d, 9000 + i, sms, &chunks, 0, sum_rows);
      sliced += chunks > 1 && !sum_rows;
      worst = std::max(worst, e.rel_l2);
      if (!e.pass(1e-5)) {
        ++failures;
        ADD_FAILURE() << "wgrad " << d.to_string() << " (fused " << detail::fused_wgrad_size(d)
                      << ", " << chunks << " slices" << (sum_rows ? ", rows summed" : "")
                      << "): " << e.to_string();
      }
    }
  }
  std::printf("[ emulated ] wgrad: %d cases (per size F: %s; %d sliced), %d failures, worst "
              "rel_l2 %.3e\n",
              kCases, per_size_text(per_size).c_str(), sliced, failures, worst);
  EXPECT_GT(sliced, 0);
  for (const int f : detail::kFusedSizes) {
    if (f > 8) EXPECT_GT(per_size[f], 0) << "no case of F = " << f;
  }
}

// The suite's depthwise rows' geometries (one or two images), every size, a strided case.
TEST(FusedProgram, BackwardFilterGeometries) {
  for (const char* s : {"n2c1h96w96k1r45s45p22x22u1x1d1x1g1f32",
                        "n3c3h14w14k3r31s31p15x15u1x1d1x1g3f32",
                        "n2c2h56w56k2r31s31p15x15u1x1d1x1g2f32",
                        "n2c2h28w28k2r51s51p25x25u1x1d1x1g2f32",
                        "n2c2h8w8k2r3s3p1x1u1x1d1x1g2f32",
                        "n3c2h17w23k2r5s3p2x1u2x3d1x2g2f32"}) {
    const ConvDesc d = ConvDesc::parse(s);
    ASSERT_GE(detail::fused_wgrad_size(d), 0) << s;
    for (int sms : {1, 132}) {
      int chunks = 0;
      const testing::ErrorStats r = check_wgrad(d, 78, sms, &chunks, 0, true);
      EXPECT_TRUE(r.pass(1e-5)) << s << " (" << chunks << " slices, rows summed): "
                                << r.to_string();
      const testing::ErrorStats e = check_wgrad(d, 78, sms, &chunks);
      EXPECT_TRUE(e.pass(1e-5)) << s << " (" << chunks << " slices): " << e.to_string();
    }
  }
}

// FFTCONV_FUSED_WGRAD_SUM=rows at plan time makes the slots sum the window's rows.
TEST(FusedProgram, BackwardFilterRowsSumOption) {
  // By default where the window's rows are half the plane or fewer: landmark_heatmaps_dw68 (45 of
  // 128) sums rows, slak_dw51_28 (51 of 64) its spectra; the variable forces either.
  const ConvDesc d = ConvDesc::parse("n32c68h96w96k68r45s45p22x22u1x1d1x1g68f32");
  const ConvDesc slak = ConvDesc::parse("n32c256h28w28k256r51s51p25x25u1x1d1x1g256f32");
  unsetenv("FFTCONV_FUSED_WGRAD_SUM");
  EXPECT_TRUE(detail::fused_wgrad_args(d, 128, DType::kF32, 132).sum_rows);
  EXPECT_FALSE(detail::fused_wgrad_args(slak, 64, DType::kF32, 132).sum_rows);
  setenv("FFTCONV_FUSED_WGRAD_SUM", "rows", 1);
  EXPECT_TRUE(detail::fused_wgrad_args(d, 128, DType::kF32, 132).sum_rows);
  EXPECT_TRUE(detail::fused_wgrad_args(slak, 64, DType::kF32, 132).sum_rows);
  setenv("FFTCONV_FUSED_WGRAD_SUM", "spectrum", 1);
  EXPECT_FALSE(detail::fused_wgrad_args(d, 128, DType::kF32, 132).sum_rows);
  unsetenv("FFTCONV_FUSED_WGRAD_SUM");
}

// The period rule: the landmark row (96x96, 45x45, same padding) at 128; 14x14 with 31x31 and
// padding 15 at 32; a plane beyond 128.
TEST(FusedProgram, BackwardFilterSizes) {
  const auto size = [](const char* s) { return detail::fused_wgrad_size(ConvDesc::parse(s)); };
  EXPECT_EQ(size("n1c1h96w96k1r45s45p22x22u1x1d1x1g1f32"), 128);
  EXPECT_EQ(size("n1c3h14w14k3r31s31p15x15u1x1d1x1g3f32"), 32);
  EXPECT_EQ(size("n1c2h56w56k2r31s31p15x15u1x1d1x1g2f32"), 72);
  EXPECT_EQ(size("n1c1h200w200k1r9s9p4x4u1x1d1x1g1f32"), -1);
}

// The backward filter's slices of a channel's images: the blocks an SM holds, and the suite's
// depthwise rows as 132 SMs slice them (one round of slots).
TEST(FusedProgram, BackwardFilterSlices) {
  EXPECT_EQ(detail::fused_wgrad_blocks_per_sm(128), 3);
  EXPECT_EQ(detail::fused_wgrad_blocks_per_sm(96), 4);
  EXPECT_EQ(detail::fused_wgrad_blocks_per_sm(72), 2);
  EXPECT_EQ(detail::fused_wgrad_blocks_per_sm(32), 4);
  // Two planes of 64x64 with both scratch spectra take 99 KB: two blocks an SM; with g alone
  // 66 KB: three; with neither, the launch bound's four.
  const int spectra64 = detail::fused_wgrad_smem_spectra(64);
  EXPECT_EQ(detail::fused_wgrad_blocks_per_sm(64), spectra64 == 2 ? 2 : spectra64 == 1 ? 3 : 4);
  // 40 (four planes of 160 threads) and 48 (two of 96): both spectra in shared memory two and
  // three blocks, g alone four.
  EXPECT_EQ(detail::fused_wgrad_blocks_per_sm(40), detail::fused_wgrad_smem_spectra(40) == 2 ? 2 : 4);
  EXPECT_EQ(detail::fused_wgrad_blocks_per_sm(48), detail::fused_wgrad_smem_spectra(48) == 2 ? 3 : 4);
  const auto slices = [](const char* s) {
    const ConvDesc d = ConvDesc::parse(s);
    const detail::FusedWgradArgs a =
        detail::fused_wgrad_args(d, detail::fused_wgrad_size(d), DType::kF32, 132);
    return std::make_pair(a.chunks, a.per_chunk);
  };
  // landmark_heatmaps_dw68 (128x128, 396 slots): five slices of 7, the last of 4.
  EXPECT_EQ(slices("n32c68h96w96k68r45s45p22x22u1x1d1x1g68f32"), std::make_pair(5, 7));
  // replknet_dw31_56 (72x72, four planes a block, two blocks an SM: 1056 slots): eight of 4.
  EXPECT_EQ(slices("n32c128h56w56k128r31s31p15x15u1x1d1x1g128f32"), std::make_pair(8, 4));
  // slak_dw51_28 (64x64, two planes a block: 528 slots with both scratch spectra in shared
  // memory, 792 with g alone, 1056 with neither): two slices of 16, three of 11, or four of 8.
  EXPECT_EQ(slices("n32c256h28w28k256r51s51p25x25u1x1d1x1g256f32"),
            spectra64 == 2   ? std::make_pair(2, 16)
            : spectra64 == 1 ? std::make_pair(3, 11)
                             : std::make_pair(4, 8));
  // One image alone: one slot.
  EXPECT_EQ(slices("n1c1h96w96k1r45s45p22x22u1x1d1x1g1f32"), std::make_pair(1, 1));
}

// The backward filter in tiles: random descriptors (padding, stride, dilation, rectangular
// kernels) whose whole plane the fused path takes, at a random size below its period where the
// forward pass's tiles apply (edge tiles cut by the plane, windows into the padding or wholly
// outside the source), sliced as a device of 1, 2 or 132 SMs would slice the pairs, against the
// oracle.
TEST(FusedProgram, TiledBackwardFilterSweep) {
  std::mt19937_64 gen(95);
  double worst = 0.0;
  double worst_rows = 0.0;
  int failures = 0, tiles = 0, sliced = 0;
  std::map<int, int> per_size;
  constexpr int kCases = 120;
  for (int i = 0; i < kCases;) {
    const ConvDesc d = random_desc(gen);
    const int whole = detail::fused_wgrad_size(d);
    std::vector<int> sizes;
    for (const int f : detail::kFusedSizes) {
      int th = 0, tw = 0;
      if (f < whole && detail::fused_tiles(d, Pass::kBackwardFilter, f, &th, &tw)) {
        sizes.push_back(f);
      }
    }
    if (sizes.empty()) continue;
    const int f = sizes[gen() % sizes.size()];
    int th = 0, tw = 0;
    detail::fused_tiles(d, Pass::kBackwardFilter, f, &th, &tw);
    tiles += th * tw;
    ++per_size[f];
    const int sms = i % 3 == 0 ? 1 : i % 3 == 1 ? 2 : 132;
    for (bool sum_rows : {false, true}) {
      int chunks = 0;
      const testing::ErrorStats e = check_wgrad(d, 9500 + i, sms, &chunks, f, sum_rows);
      sliced += chunks > 1 && !sum_rows;
      worst = std::max(worst, e.rel_l2);
      worst_rows = sum_rows ? std::max(worst_rows, e.rel_l2) : worst_rows;
      if (!e.pass(1e-5)) {
        ++failures;
        ADD_FAILURE() << "tiled wgrad " << d.to_string() << " (tiles of " << f << ", " << th
                      << "x" << tw << ", " << chunks << " slices"
                      << (sum_rows ? ", rows summed" : "") << "): " << e.to_string();
      }
    }
    ++i;
  }
  std::printf("[ emulated ] tiled wgrad: %d cases, %d tiles (per size F: %s; %d sliced), %d "
              "failures, worst rel_l2 %.3e (rows summed: %.3e)\n",
              kCases, tiles, per_size_text(per_size).c_str(), sliced, failures, worst, worst_rows);
  EXPECT_GT(sliced, 0);
}

// The landmark rows' backward filter in tiles: 96x96 heatmaps with 45x45 and same padding, four
// 96x96 pairs an image (tiles of 52x52 of dy, each with its 96x96 window of x), a slot per pair
// or several; a strided and dilated case.
TEST(FusedProgram, LandmarkBackwardFilterTiles) {
  const ConvDesc d = ConvDesc::parse("n2c1h96w96k1r45s45p22x22u1x1d1x1g1f32");
  int th = 0, tw = 0;
  ASSERT_TRUE(detail::fused_tiles(d, Pass::kBackwardFilter, 96, &th, &tw));
  EXPECT_EQ(th * tw, 4);
  detail::FusedTiling t;
  const detail::FusedWgradArgs a = detail::fused_tiled_wgrad_args(d, 96, DType::kF32, 132, &t);
  EXPECT_EQ(a.tiles, 4);
  EXPECT_EQ(a.pairs(), 8);
  EXPECT_EQ(a.chunks * a.per_chunk, 8);
  // The last tile: dy rows and columns 52..95, its x window from row 52 - 22 = 30, cut by the
  // plane at 96 (66 rows), the lags' window 45x45.
  const detail::FusedWgradPair last = detail::fused_wgrad_pair(a, t, 3);
  EXPECT_EQ(last.dy.src_h, 44);
  EXPECT_EQ(last.dy_offset, 52 * 96 + 52);
  EXPECT_EQ(last.x.src_h, 66);
  EXPECT_EQ(last.x.off_h, 0);
  EXPECT_EQ(last.x_offset, 30 * 96 + 30);
  EXPECT_EQ(last.x.out_h, 45);
  const detail::FusedWgradPair first = detail::fused_wgrad_pair(a, t, 0);
  EXPECT_EQ(first.x.off_h, 22);  // the window starts in the padding
  EXPECT_EQ(first.x.src_h, 74);
  for (const int sms : {1, 132}) {
    int chunks = 0;
    const testing::ErrorStats e = check_wgrad(d, 96, sms, &chunks, 96);
    EXPECT_TRUE(e.pass(1e-5)) << sms << " SMs (" << chunks << " slices): " << e.to_string();
  }
  const ConvDesc odd = ConvDesc::parse("n2c2h37w29k2r5s7p2x3u2x1d2x1g2f32");
  ASSERT_TRUE(detail::fused_tiles(odd, Pass::kBackwardFilter, 16, &th, &tw));
  EXPECT_GT(th * tw, 1);
  int chunks = 0;
  const testing::ErrorStats e = check_wgrad(odd, 97, 2, &chunks, 16);
  EXPECT_TRUE(e.pass(1e-5)) << odd.to_string() << ": " << e.to_string();
}

// line_dft<N> of either direction against the plain sum, X[k] read at line_slot<N>(k).
template <int N, bool kInverse>
void check_line_dft(std::mt19937_64& gen) {
  float2 v[N];
  std::vector<std::complex<double>> x(N);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int i = 0; i < N; ++i) {
    v[i] = make_float2(u(gen), u(gen));
    x[i] = {v[i].x, v[i].y};
  }
  fused::line_dft<N, kInverse>(v);
  double num = 0.0, den = 0.0;
  for (int k = 0; k < N; ++k) {
    std::complex<double> s = 0.0;
    for (int n = 0; n < N; ++n) s += x[n] * std::polar(1.0, (kInverse ? 2 : -2) * M_PI * n * k / N);
    const float2 got = v[fused::line_slot<N>(k)];
    num += std::norm(std::complex<double>(got.x, got.y) - s);
    den += std::norm(s);
  }
  EXPECT_LT(std::sqrt(num / den), 3e-7) << "N = " << N << (kInverse ? " inverse" : " forward");
}

// Every line length of the covered sizes (F/2 points), both directions.
TEST(FusedProgram, LineDftOfEverySize) {
  std::mt19937_64 gen(6);
  fused::static_for<0, 2>([&](auto ic) {
    constexpr bool kInv = decltype(ic)::value == 1;
    check_line_dft<4, kInv>(gen);
    check_line_dft<8, kInv>(gen);
    check_line_dft<12, kInv>(gen);
    check_line_dft<16, kInv>(gen);
    check_line_dft<20, kInv>(gen);
    check_line_dft<24, kInv>(gen);
    check_line_dft<28, kInv>(gen);
    check_line_dft<32, kInv>(gen);
    check_line_dft<36, kInv>(gen);
    check_line_dft<40, kInv>(gen);
    check_line_dft<48, kInv>(gen);
    check_line_dft<64, kInv>(gen);
  });
}

// The constexpr twiddles against the library's sine and cosine, and a DFT against its sum.
TEST(FusedProgram, LineDft) {
  for (int j = 0; j < 128; ++j) {
    const fused::SinCos sc = fused::sincos_turn(j / 128.0);
    EXPECT_NEAR(sc.s, std::sin(2 * M_PI * j / 128.0), 1e-15) << j;
    EXPECT_NEAR(sc.c, std::cos(2 * M_PI * j / 128.0), 1e-15) << j;
  }
  constexpr int kN = 64;
  float2 v[kN];
  std::vector<std::complex<double>> x(kN);
  std::mt19937_64 gen(5);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int i = 0; i < kN; ++i) {
    v[i] = make_float2(u(gen), u(gen));
    x[i] = {v[i].x, v[i].y};
  }
  fused::dft<kN, false>(v);
  for (int k = 0; k < kN; ++k) {
    std::complex<double> s = 0.0;
    for (int n = 0; n < kN; ++n) s += x[n] * std::polar(1.0, -2 * M_PI * n * k / kN);
    const float2 got = v[fused::brev<kN>(k)];
    EXPECT_NEAR(got.x, s.real(), 2e-5) << k;
    EXPECT_NEAR(got.y, s.imag(), 2e-5) << k;
  }
}

}  // namespace
}  // namespace fftconv
