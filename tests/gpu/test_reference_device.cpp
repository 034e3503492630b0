// The device oracle's backward passes: against the host oracle on small random descriptors, and on
// the suite rows (too large for the host oracle) by the adjoint identity with the device forward.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <set>

#include "core/timing.h"
#include "gpu_test_util.h"
#include "reference/reference.h"

namespace fftconv::gputest {
namespace {

// Device inputs and NaN-poisoned fp64 outputs of both backward passes.
struct DeviceBackward {
  testing::DeviceBuffer x, w, dy, dx, dw;

  DeviceBackward(const ConvDesc& d, const std::vector<float>& xv, const std::vector<float>& wv,
                 const std::vector<float>& dyv)
      : x(upload(xv, DType::kF32)),
        w(upload(wv, DType::kF32)),
        dy(upload(dyv, DType::kF32)),
        dx(sizeof(double) * d.x_elems()),
        dw(sizeof(double) * d.w_elems()) {}

  void run(const ConvDesc& d) {
    dx.poison();
    dw.poison();
    reference::conv2d_backward_data_device(d, dy.as<float>(), w.as<float>(), dx.as<double>(),
                                           nullptr);
    reference::conv2d_backward_filter_device(d, x.as<float>(), dy.as<float>(), dw.as<double>(),
                                             nullptr);
    testing::cuda_check(cudaDeviceSynchronize(), "backward oracle");
  }
};

// max |got - want| / max |want|; NaN (an unwritten element) gives infinity.
double max_rel_err(const std::vector<double>& got, const std::vector<double>& want) {
  double scale = 0.0, worst = 0.0;
  for (double v : want) scale = std::max(scale, std::abs(v));
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double e = std::abs(got[i] - want[i]);
    if (!std::isfinite(e)) return std::numeric_limits<double>::infinity();
    worst = std::max(worst, e);
  }
  return scale > 0.0 ? worst / scale : worst;
}

// Small enough for the host oracle in well under a second each; sizes around the device kernels'
// edges: planes larger than a block, filters of a few tap tiles and a partial one.
testing::RandomDescOptions oracle_shapes() {
  testing::RandomDescOptions o = testing::RandomDescOptions::small();
  o.max_extent = 40;
  o.max_kernel = 11;
  o.max_depthwise = 6;
  return o;
}

void backward_matches_host_oracle(std::uint64_t gen_seed, bool borders) {
  const testing::RandomDescOptions shapes = oracle_shapes();
  std::mt19937_64 gen(gen_seed);
  double worst = 0.0;
  for (int i = 0; i < 12; ++i) {
    ConvDesc d = testing::random_desc(gen, shapes);
    if (borders) d.border = static_cast<Border>(1 + i % 3);  // reflect, replicate, circular
    const std::uint64_t seed = gen_seed * 100 + i;
    SCOPED_TRACE(d.to_string() + " case " + std::to_string(i) + " of generator seed " +
                 std::to_string(gen_seed) + ", data seed " + std::to_string(seed));
    const auto x = testing::random_values(d.x_elems(), seed, DType::kF32);
    const auto w = testing::random_values(d.w_elems(), seed + 1, DType::kF32);
    const auto dy = testing::random_values(d.y_elems(), seed + 2, DType::kF32);
    std::vector<double> dx_ref(d.x_elems()), dw_ref(d.w_elems());
    reference::conv2d_backward_data_host(d, dy.data(), w.data(), dx_ref.data());
    reference::conv2d_backward_filter_host(d, x.data(), dy.data(), dw_ref.data());

    DeviceBackward dev(d, x, w, dy);
    dev.run(d);
    const auto dx = download_f64(dev.dx, d.x_elems()), dw = download_f64(dev.dw, d.w_elems());
    // fp64 sums in another order (and with FMA): rounding-level differences only.
    const double err_dx = max_rel_err(dx, dx_ref), err_dw = max_rel_err(dw, dw_ref);
    EXPECT_LE(err_dx, 1e-12) << "dx";
    EXPECT_LE(err_dw, 1e-12) << "dw";
    worst = std::max({worst, err_dx, err_dw});

    // A fixed summation order: a second run gives the same bits.
    dev.run(d);
    const auto dx2 = download_f64(dev.dx, d.x_elems());
    const auto dw2 = download_f64(dev.dw, d.w_elems());
    EXPECT_EQ(std::memcmp(dx.data(), dx2.data(), sizeof(double) * dx.size()), 0) << "dx";
    EXPECT_EQ(std::memcmp(dw.data(), dw2.data(), sizeof(double) * dw.size()), 0) << "dw";
  }
  std::printf("[ oracle   ] device vs host backward%s: 12 cases, worst max error %.2e\n",
              borders ? " (borders)" : "", worst);
}

TEST(DeviceReference, BackwardMatchesHostOracle) {
  FFTCONV_REQUIRE_GPU();
  backward_matches_host_oracle(8100, false);
}

// Reflect, replicate and circular borders: the device oracles' bordered problems (their own
// bordered input and fold) against the host's definitions.
TEST(DeviceReference, BackwardWithBordersMatchesHostOracle) {
  FFTCONV_REQUIRE_GPU();
  backward_matches_host_oracle(8200, true);
}

double norm(const std::vector<float>& v) {
  double s = 0.0;
  for (float e : v) s += double(e) * double(e);
  return std::sqrt(s);
}

double norm(const std::vector<double>& v) {
  double s = 0.0;
  for (double e : v) s += e * e;
  return std::sqrt(s);
}

// <y, g> == <x, dx> == <w, dw> with y = conv(x, w), dx = backward_data(g, w),
// dw = backward_filter(x, g), all from the device oracle; also times each pass.
TEST(DeviceReference, BackwardAdjointOnSuiteRows) {
  FFTCONV_REQUIRE_GPU();
  const auto rows = testing::load_shapes(data_dir() + "/shapes/suite.csv");
  std::set<std::string> seen;  // the oracle reads fp32 values: f16 rows repeat an f32 one
  std::uint64_t seed = 8200;
  for (const auto& row : rows) {
    ConvDesc d = row.desc;
    d.dtype = DType::kF32;
    if (!seen.insert(d.to_string()).second) continue;
    seed += 10;
    SCOPED_TRACE(row.name + " " + d.to_string() + " seed " + std::to_string(seed));
    const auto x = testing::random_values(d.x_elems(), seed, DType::kF32);
    const auto w = testing::random_values(d.w_elems(), seed + 1, DType::kF32);
    const auto g = testing::random_values(d.y_elems(), seed + 2, DType::kF32);
    DeviceBackward dev(d, x, w, g);
    testing::DeviceBuffer y(sizeof(double) * d.y_elems());
    y.poison();
    dev.dx.poison();
    dev.dw.poison();
    detail::GpuTimer timer;
    timer.start(nullptr);
    reference::conv2d_forward_device(d, dev.x.as<float>(), dev.w.as<float>(), nullptr,
                                     y.as<double>(), nullptr);
    timer.stop(nullptr);
    testing::cuda_check(cudaDeviceSynchronize(), "forward oracle");
    const double fwd_ms = timer.elapsed_ms();
    timer.start(nullptr);
    reference::conv2d_backward_data_device(d, dev.dy.as<float>(), dev.w.as<float>(),
                                           dev.dx.as<double>(), nullptr);
    timer.stop(nullptr);
    testing::cuda_check(cudaDeviceSynchronize(), "backward data oracle");
    const double bwd_data_ms = timer.elapsed_ms();
    timer.start(nullptr);
    reference::conv2d_backward_filter_device(d, dev.x.as<float>(), dev.dy.as<float>(),
                                             dev.dw.as<double>(), nullptr);
    timer.stop(nullptr);
    testing::cuda_check(cudaDeviceSynchronize(), "backward filter oracle");
    const double bwd_filter_ms = timer.elapsed_ms();

    const auto yv = download_f64(y, d.y_elems()), dx = download_f64(dev.dx, d.x_elems()),
               dw = download_f64(dev.dw, d.w_elems());
    const double via_y = testing::dot(yv, g), via_dx = testing::dot(dx, x),
                 via_dw = testing::dot(dw, w);
    // Cauchy-Schwarz bounds the rounding of all three: relative to |<y, g>| unless that cancels.
    const double scale = std::max(std::abs(via_y), 1e-6 * norm(yv) * norm(g));
    EXPECT_TRUE(std::isfinite(via_y) && std::isfinite(via_dx) && std::isfinite(via_dw));
    EXPECT_LE(std::abs(via_dx - via_y) / scale, 1e-10)
        << "<x, dx> = " << via_dx << ", <y, g> = " << via_y;
    EXPECT_LE(std::abs(via_dw - via_y) / scale, 1e-10)
        << "<w, dw> = " << via_dw << ", <y, g> = " << via_y;
    std::printf("[ oracle   ] %-26s fwd %9.1f ms, bwd data %9.1f ms, bwd filter %9.1f ms\n",
                row.name.c_str(), fwd_ms, bwd_data_ms, bwd_filter_ms);
  }
}

}  // namespace
}  // namespace fftconv::gputest
