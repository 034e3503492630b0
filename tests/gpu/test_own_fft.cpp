// Options::own_fft: the FFT path's own plane kernels (pad + r2c, c2r + clip in one pass each).
// Their spectra against cuFFT's on the same padded planes, their windows against cuFFT's c2r and
// the clip kernel, and whole passes in every dtype, geometry and pass against the fp64 device
// oracle. Every case also checks that the plan did use the own kernels (describe()), so that a
// silent fall-back to cuFFT fails here.
#include <cmath>
#include <cstring>
#include <random>

#include "fft/cufft_plan.h"
#include "fft/plane_fft.h"
#include "gpu_test_util.h"
#include "stages/stages.h"

namespace fftconv::gputest {
namespace {

constexpr const char* kOwnKernels = "own plane kernels";

Options own(Algo algo) {
  Options o;
  o.algo = algo;
  o.own_fft = true;
  return o;
}

bool uses_own(const std::string& describe) {
  return describe.find(kOwnKernels) != std::string::npos &&
         describe.find("not the own plane kernels") == std::string::npos;
}

double rel_l2(const std::vector<float>& got, const std::vector<float>& want) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double d = double(got[i]) - double(want[i]);
    num += std::isfinite(d) ? d * d : 1e300;
    den += double(want[i]) * double(want[i]);
  }
  return std::sqrt(num / (den > 0 ? den : 1.0));
}

std::vector<float> floats(const testing::DeviceBuffer& b, std::size_t count) {
  std::vector<float> out(count);
  b.download(out.data(), count * sizeof(float));
  return out;
}

// One FFT geometry with two source segments (an input with tiles or an offset, a filter with a
// step), transformed by pad + cuFFT and by the own kernel; then one result: cuFFT's c2r + clip
// against the own inverse, on the same spectra.

void check_stages(const ConvDesc& d, const detail::FftGeometry& g, DType dtype,
                  std::uint64_t seed) {
  SCOPED_TRACE(d.to_string() + " fft " + std::to_string(g.fft_h) + "x" + std::to_string(g.fft_w) +
               (g.tiled ? " tiled" : ""));
  std::string why;
  const auto plane = detail::PlaneFft::make(g, &why);
  ASSERT_TRUE(plane) << why;
  const std::int64_t tiles = g.tiles_h * g.tiles_w;
  const std::int64_t x_planes = d.n * tiles * d.c, w_planes = d.k * d.c_per_group();
  const std::int64_t planes = x_planes + w_planes;
  const std::size_t floats_all = static_cast<std::size_t>(planes * g.real_plane_floats());
  const testing::DeviceBuffer x = upload(testing::random_values(d.x_elems(), seed, dtype), dtype);
  const testing::DeviceBuffer w =
      upload(testing::random_values(d.w_elems(), seed + 1, dtype), dtype);
  testing::DeviceBuffer by_cufft(floats_all * 4), by_own(floats_all * 4);
  by_own.poison();
  const auto segments = [&](float* base, detail::PadSegment(&segs)[2]) {
    const detail::TileMap x_map{d.c, g.tiles_h, g.tiles_w, g.tile_out_h * d.stride_h,
                                g.tile_out_w * d.stride_w};
    segs[0] = {x.get(), base, x_planes, detail::Placement{d.h, d.w, d.pad_h, d.pad_w, 1, 1}, x_map};
    segs[1] = {w.get(), base + x_planes * g.real_plane_floats(), w_planes,
               detail::Placement{d.r, d.s, 0, 0, d.dil_h, d.dil_w}, detail::TileMap{}};
  };
  detail::PadSegment a[2], b[2];
  segments(by_cufft.as<float>(), a);
  segments(by_own.as<float>(), b);
  const detail::CufftPlan2d r2c(detail::FftDirection::kR2C, g, planes);
  testing::DeviceBuffer work(std::max<std::size_t>(r2c.work_size(), 1));
  detail::launch_pad(a, 2, dtype, g, nullptr);
  r2c.exec(by_cufft.get(), work.get(), nullptr);
  plane->forward(b, 2, dtype, g, nullptr);
  testing::cuda_check(cudaDeviceSynchronize(), "spectra");
  const std::size_t bins = static_cast<std::size_t>(planes * g.bins * 2);
  const std::vector<float> want = floats(by_cufft, bins), got = floats(by_own, bins);
  EXPECT_LT(rel_l2(got, want), 2e-6) << "spectra";

  // The inverse of the input planes' spectra through the forward clip's window (stride, bias,
  // tiles): cuFFT's c2r in place and the clip kernel against the own kernel.
  const testing::DeviceBuffer bias = upload(testing::random_values(d.c, seed + 2, dtype), dtype);
  detail::ClipArgs clip;
  clip.bias = bias.get();
  clip.planes = d.n * d.c;
  clip.k = d.c;
  clip.out_h = d.out_h();
  clip.out_w = d.out_w();
  clip.stride_h = d.stride_h;
  clip.stride_w = d.stride_w;
  clip.scale = static_cast<float>(1.0 / (double(g.fft_h) * double(g.fft_w)));
  const std::size_t outs = static_cast<std::size_t>(clip.planes * clip.out_h * clip.out_w);
  testing::DeviceBuffer y_cufft(outs * dtype_size(dtype)), y_own(outs * dtype_size(dtype));
  y_own.poison();
  clip.src = by_own.as<float>();  // the own kernel reads the spectra as they are
  clip.y = y_own.get();
  plane->inverse(clip, dtype, g, nullptr);
  const detail::CufftPlan2d c2r(detail::FftDirection::kC2R, g, x_planes);
  testing::DeviceBuffer work2(std::max<std::size_t>(c2r.work_size(), 1));
  c2r.exec(by_cufft.get(), work2.get(), nullptr);
  clip.src = by_cufft.as<float>();
  clip.y = y_cufft.get();
  detail::launch_clip(clip, dtype, g, nullptr);
  testing::cuda_check(cudaDeviceSynchronize(), "windows");
  const std::vector<float> y_want = download(y_cufft, static_cast<std::int64_t>(outs), dtype);
  const std::vector<float> y_got = download(y_own, static_cast<std::int64_t>(outs), dtype);
  EXPECT_LT(rel_l2(y_got, y_want), dtype == DType::kF32 ? 2e-6 : 2e-3) << "windows";
}

TEST(OwnFft, StagesMatchCufftAndTheClip) {
  FFTCONV_REQUIRE_GPU();
  std::mt19937_64 gen(1301);
  int cases = 0;
  for (int i = 0; i < 24; ++i) {
    const DType dtype = i % 6 == 5 ? DType::kBF16 : i % 6 == 4 ? DType::kF16 : DType::kF32;
    const ConvDesc d = testing::random_desc(gen, dtype);
    detail::FftGeometry g;
    if (i % 3 == 2) {
      // Overlap-save tiles a few rows and columns above the kernel.
      g = detail::make_tiled_geometry(
          d, detail::next_smooth(d.eff_r() + static_cast<std::int64_t>(gen() % 9)),
          detail::next_smooth(d.eff_s() + static_cast<std::int64_t>(gen() % 9)));
    } else {
      g = detail::make_fft_geometry(d, detail::next_smooth(detail::min_fft_h(d)),
                                    detail::next_smooth(detail::min_fft_w(d)));
    }
    if (!detail::plane_fft_supported(g.fft_h, g.fft_w, nullptr)) continue;
    check_stages(d, g, dtype, 1301000 + i);
    ++cases;
  }
  EXPECT_GE(cases, 18);
  // multichannel_r45's planes: 81 x 81, filter 45 x 45, input 56 x 56 padded by 22.
  const ConvDesc r45 = ConvDesc::parse("n2c4h56w56k4r45s45p22x22u1x1d1x1g1f32");
  check_stages(r45, detail::make_fft_geometry(r45, 81, 81), DType::kF32, 1301100);
}

TEST(OwnFft, ForwardMatchesOracleInEveryDtype) {
  FFTCONV_REQUIRE_GPU();
  std::mt19937_64 gen(1302);
  int cases = 0, used = 0;
  for (const DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    const int count = dtype == DType::kF32 ? 30 : 10;
    for (int i = 0; i < count; ++i) {
      const ConvDesc d = testing::random_desc(gen, dtype);
      const Problem p(d, 1302000 + cases, i % 2 == 0);
      const RunResult r = run_forward(p, own(Algo::kFft));
      if (detail::plane_fft_supported(r.info.fft_h, r.info.fft_w, nullptr)) {
        EXPECT_TRUE(uses_own(r.describe)) << d.to_string() << ": " << r.describe;
        ++used;
      }
      EXPECT_TRUE(r.err.pass(testing::tolerance(dtype)))
          << d.to_string() << ": " << r.err.to_string() << " plan: " << r.describe;
      ++cases;
    }
  }
  EXPECT_EQ(cases, 50);
  EXPECT_GE(used, 40);
}

TEST(OwnFft, TiledForwardMatchesOracle) {
  FFTCONV_REQUIRE_GPU();
  std::mt19937_64 gen(1303);
  for (int i = 0; i < 20; ++i) {
    const DType dtype = i % 4 == 3 ? DType::kBF16 : i % 4 == 2 ? DType::kF16 : DType::kF32;
    const ConvDesc d = testing::random_desc(gen, dtype);
    Options o = own(Algo::kFftTiled);
    o.fft_h = detail::next_smooth(d.eff_r() + static_cast<std::int64_t>(gen() % 9));
    o.fft_w = detail::next_smooth(d.eff_s() + static_cast<std::int64_t>(gen() % 9));
    const Problem p(d, 1303000 + i, i % 2 == 0);
    const RunResult r = run_forward(p, o);
    EXPECT_EQ(r.info.algo, Algo::kFftTiled) << d.to_string();
    if (detail::plane_fft_supported(o.fft_h, o.fft_w, nullptr)) {
      EXPECT_TRUE(uses_own(r.describe)) << d.to_string() << ": " << r.describe;
    }
    EXPECT_TRUE(r.err.pass(testing::tolerance(dtype)))
        << d.to_string() << " tile " << o.fft_h << "x" << o.fft_w << ": " << r.err.to_string()
        << " plan: " << r.describe;
  }
}

// Backward data (per-call and kept filter) and backward filter (dy spread by the stride; alpha
// and beta in the clip).
TEST(OwnFft, BackwardPassesMatchOracle) {
  FFTCONV_REQUIRE_GPU();
  backward_sweep(1304, own(Algo::kFft),
                 [](const ConvDesc& d, const std::string& describe, const PlanInfo& info) {
                   if (detail::plane_fft_supported(info.fft_h, info.fft_w, nullptr)) {
                     EXPECT_TRUE(uses_own(describe)) << d.to_string() << ": " << describe;
                   }
                 });
}

// Repeated calls (replayed as a CUDA graph from the second on) and a captured call give the
// first call's bits.
TEST(OwnFft, RepeatedAndCapturedCallsAgree) {
  FFTCONV_REQUIRE_GPU();
  const ConvDesc d = ConvDesc::parse("n2c3h40w36k4r17s13p8x6u1x1d1x1g1f32");
  const Problem p(d, 1305, true);
  const Plan plan(d, own(Algo::kFft));
  ASSERT_TRUE(uses_own(plan.describe())) << plan.describe();
  testing::DeviceBuffer y(sizeof(float) * d.y_elems()), ws(plan.workspace_size());
  std::vector<float> first;
  for (int call = 0; call < 4; ++call) {
    y.poison();
    plan.forward(p.x.get(), p.w.get(), p.bias.get(), y.get(), ws.get(), ws.bytes(), nullptr);
    testing::cuda_check(cudaDeviceSynchronize(), "forward");
    const std::vector<float> out = download(y, d.y_elems(), d.dtype);
    if (call == 0) {
      first = out;
    } else {
      EXPECT_EQ(std::memcmp(out.data(), first.data(), out.size() * sizeof(float)), 0) << call;
    }
  }
  const std::vector<float> captured = forward_in_graph(plan, p, p.w.get(), p.bias.get(), 2);
  EXPECT_EQ(std::memcmp(captured.data(), first.data(), first.size() * sizeof(float)), 0);
}

}  // namespace
}  // namespace fftconv::gputest
