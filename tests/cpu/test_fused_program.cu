// The fused FFT path's programs (lib/fused/fused_program.cuh) emulated on the host: every thread
// of a plane runs each phase in turn, with its own register line, between the synchronisations
// the kernels make. The same code the kernels run, so the index math, the in-register DFTs, the
// real-FFT steps and the placement and window rules are checked here against the fp64 oracle,
// on random descriptors of both passes and every FFT size, without a GPU. Shared memory starts
// as NaN: a phase that read what no phase wrote would poison the output.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstdio>
#include <limits>
#include <random>
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

// Runs each phase for every thread of the plane in turn: each thread keeps its own line.
template <int N>
struct HostExec {
  std::vector<fused::Line<N>> lines = std::vector<fused::Line<N>>(2 * N);
  template <class Fn>
  void each(Fn&& fn) {
    for (int t = 0; t < 2 * N; ++t) fn(t, lines[t]);
  }
  void sync() {}
};

// Stages a source column from a host plane (fused_program.cuh, stage_source).
struct HostColumnCopy {
  const float* plane;
  int src_w;
  void column(float* dst, int pitch, int rows, int j) const {
    for (int r = 0; r < rows; ++r) dst[r * pitch] = j >= 0 ? plane[r * src_w + j] : 0.0f;
  }
};

template <int F>
std::vector<float> emulate_sized(const ConvDesc& d, Pass pass, const std::vector<float>& src,
                                 const std::vector<float>& w, const std::vector<float>& bias) {
  using L = fused::Layout<F>;
  const FusedFilterArgs fa = detail::fused_filter_args(d, pass, detail::fused_log_size(d));
  const FusedConvArgs ca = detail::fused_conv_args(d, pass, detail::fused_log_size(d));
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
  const fused::PlaneGeometry& g = ca.geo;
  const std::int64_t src_plane = std::int64_t(g.src_h) * g.src_w;
  const std::int64_t out_plane = std::int64_t(g.out_h) * g.out_w;
  std::vector<float> out(static_cast<std::size_t>(ca.planes * out_plane), nan);
  for (std::int64_t p = 0; p < ca.planes; ++p) {
    const int filter = static_cast<int>(p % ca.k);
    const float b = bias.empty() ? 0.0f : bias[filter];
    std::fill(buf.begin(), buf.end(), nan);
    HostExec<F / 2> ex;
    fused::fused_conv_program<F>(
        ex, buf.data(), g, spectra.data() + std::int64_t(filter) * L::kSpecSize, true,
        HostColumnCopy{src.data() + p * src_plane, g.src_w},
        [&](int i, float v) { out[p * out_plane + i] = v + b; });
  }
  return out;
}

std::vector<float> emulate(const ConvDesc& d, Pass pass, const std::vector<float>& src,
                           const std::vector<float>& w, const std::vector<float>& bias) {
  switch (detail::fused_log_size(d)) {
    case 3: return emulate_sized<8>(d, pass, src, w, bias);
    case 4: return emulate_sized<16>(d, pass, src, w, bias);
    case 5: return emulate_sized<32>(d, pass, src, w, bias);
    case 6: return emulate_sized<64>(d, pass, src, w, bias);
    case 7: return emulate_sized<128>(d, pass, src, w, bias);
    default: ADD_FAILURE() << "no fused size for " << d.to_string(); return {};
  }
}

// The emulated pass against the fp64 oracle.
testing::ErrorStats check(const ConvDesc& d, Pass pass, std::uint64_t seed) {
  const bool fwd = pass == Pass::kForward;
  const std::vector<float> src =
      testing::random_values(fwd ? d.x_elems() : d.y_elems(), seed, DType::kF32);
  const std::vector<float> w = testing::random_values(d.w_elems(), seed + 1, DType::kF32);
  const std::vector<float> bias =
      fwd && seed % 2 == 0 ? testing::random_values(d.k, seed + 2, DType::kF32)
                           : std::vector<float>();
  std::vector<double> ref(static_cast<std::size_t>(fwd ? d.y_elems() : d.x_elems()));
  if (fwd) {
    reference::conv2d_forward_host(d, src.data(), w.data(), bias.empty() ? nullptr : bias.data(),
                                   ref.data());
  } else {
    reference::conv2d_backward_data_host(d, src.data(), w.data(), ref.data());
  }
  return testing::compare(emulate(d, pass, src, w, bias), ref);
}

// A random descriptor with one channel per group (depthwise, grouped or single) whose fused FFT
// fits, small enough for the host oracle.
ConvDesc random_desc(std::mt19937_64& gen) {
  testing::RandomDescOptions o;
  o.wide_padding = true;  // periods below the output extent: the forward pass's wrapped reads
  o.max_extent = 100;
  o.max_kernel = 31;
  o.max_batch = 2;
  o.max_channels_per_group = 1;
  o.max_depthwise = 3;
  for (;;) {
    const ConvDesc d = testing::random_desc(gen, o);
    if (detail::fused_log_size(d) >= 0) return d;
  }
}

void sweep(Pass pass, int cases, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  double worst = 0.0;
  int failures = 0, per_size[8] = {};
  for (int i = 0; i < cases; ++i) {
    const ConvDesc d = random_desc(gen);
    ++per_size[detail::fused_log_size(d)];
    const testing::ErrorStats e = check(d, pass, seed * 1000 + i);
    worst = std::max(worst, e.rel_l2);
    if (!e.pass(1e-5)) {
      ++failures;
      ADD_FAILURE() << pass_name(pass) << " " << d.to_string() << " (fused "
                    << (1 << detail::fused_log_size(d)) << "): " << e.to_string();
    }
  }
  std::printf("[ emulated ] %s: %d cases (F = 8, 16, 32, 64, 128: %d, %d, %d, %d, %d), %d failures, "
              "worst rel_l2 %.3e\n",
              pass_name(pass), cases, per_size[3], per_size[4], per_size[5], per_size[6],
              per_size[7], failures, worst);
  // F = 8 needs planes and kernels this small that few draws give one: EverySize covers it.
  for (int log_f = 4; log_f <= 7; ++log_f) {
    EXPECT_GT(per_size[log_f], 0) << "no case of F = " << (1 << log_f);
  }
}

TEST(FusedProgram, ForwardSweep) { sweep(Pass::kForward, 200, 81); }
TEST(FusedProgram, BackwardDataSweep) { sweep(Pass::kBackwardData, 200, 82); }

// Every FFT size, with a plane of exactly that period, both passes.
TEST(FusedProgram, EverySize) {
  for (int a = 3; a <= 7; ++a) {
    ConvDesc d;
    d.c = d.k = d.groups = 2;
    d.h = std::int64_t{1} << a;
    d.w = std::int64_t{1} << a;
    d.r = 5;
    d.s = 3;
    for (Pass p : {Pass::kForward, Pass::kBackwardData}) {
      ASSERT_EQ(detail::fused_log_size(d), a) << d.to_string();
      const testing::ErrorStats e = check(d, p, 300 + a);
      EXPECT_TRUE(e.pass(1e-5)) << pass_name(p) << " " << d.to_string() << ": " << e.to_string();
    }
  }
}

// The landmark row's geometry (96x96, 45x45, same padding: 128x128) and a depthwise 31x31 on
// 14x14 maps (32x32), as the suite runs them.
TEST(FusedProgram, SuiteGeometries) {
  for (const char* s : {"n2c1h96w96k1r45s45p22x22u1x1d1x1g1f32",
                        "n1c3h14w14k3r31s31p15x15u1x1d1x1g3f32",
                        "n1c2h28w28k2r51s51p25x25u1x1d1x1g2f32"}) {
    const ConvDesc d = ConvDesc::parse(s);
    for (Pass p : {Pass::kForward, Pass::kBackwardData}) {
      const testing::ErrorStats e = check(d, p, 77);
      EXPECT_TRUE(e.pass(1e-5)) << pass_name(p) << " " << s << ": " << e.to_string();
    }
  }
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
