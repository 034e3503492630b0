// The direct path's block program (lib/direct/direct_program.cuh) emulated on the host: every
// thread of a block runs each phase in turn between the synchronisations the kernel makes, each
// with its own registers, in shared memory that starts as NaN (a read of anything no phase wrote
// poisons the output). The same code the kernel runs, so the tiling, the window and filter
// staging (zeros outside the source, the flipped and transposed filter of the input gradient),
// the sliding window and the partial sums are checked against the fp64 oracle without a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <vector>

#include "algos/registry.h"
#include "direct/direct_conv.h"
#include "direct/direct_program.cuh"
#include "reference/reference.h"
#include "testing/testing.h"
#include "tuning/heuristics.h"

namespace fftconv {
namespace {

namespace direct = detail::direct;
using detail::DirectGeometry;
using detail::DirectWgradGeometry;

struct HostSource {
  const float* p;
  __host__ __device__ float operator()(std::int64_t e) const { return p[e]; }
};

struct HostSink {
  float* out;
  const float* bias;
  __host__ __device__ void operator()(std::int64_t e, int o, float v) const {
    out[e] = bias ? v + bias[o] : v;
  }
};

// Every block of the grid, its threads phase by phase.
std::vector<float> emulate(const DirectGeometry& g, const std::vector<float>& src,
                           const std::vector<float>& w, const std::vector<float>& bias) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> out(static_cast<std::size_t>(std::int64_t(g.n) * g.out_c * g.out_h * g.out_w),
                         nan);
  std::vector<float> smem(static_cast<std::size_t>(g.smem_floats()));
  std::vector<float> acc(static_cast<std::size_t>(direct::kThreads) * direct::kStrip);
  const HostSink sink{out.data(), bias.empty() ? nullptr : bias.data()};
  for (std::int64_t b = 0; b < g.blocks(); ++b) {
    const direct::Block k = direct::block_of(g, b);
    std::fill(smem.begin(), smem.end(), nan);
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (int ci = 0; ci < g.group_in; ++ci) {
      for (int t = 0; t < direct::kThreads; ++t) {
        direct::load(g, k, ci, t, smem.data(), HostSource{src.data()}, HostSource{w.data()});
      }
      for (int t = 0; t < direct::kThreads; ++t) {
        direct::compute(g, t, smem.data(), acc.data() + t * direct::kStrip);
      }
    }
    std::fill(smem.begin(), smem.end(), nan);  // the partial sums overwrite the window
    for (int t = 0; t < direct::kThreads; ++t) {
      direct::write_partials(g, t, smem.data(), acc.data() + t * direct::kStrip);
    }
    for (int t = 0; t < direct::kThreads; ++t) direct::store(g, k, t, smem.data(), sink);
  }
  return out;
}

testing::ErrorStats check(const ConvDesc& d, Pass pass, int tile_w, std::uint64_t seed) {
  const testing::OracleCase c = testing::host_oracle_case(d, pass, seed);
  return testing::compare(emulate(detail::direct_geometry(d, pass, tile_w), c.src, c.w, c.bias),
                          c.ref);
}

// The backward filter's blocks: dw = alpha * the gradient + beta * dw0.
std::vector<float> emulate_wgrad(const ConvDesc& d, const std::vector<float>& x,
                                 const std::vector<float>& dy, float alpha, float beta,
                                 const std::vector<float>& dw0) {
  const DirectWgradGeometry g = detail::direct_wgrad_geometry(d);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> dw = dw0;
  std::vector<float> smem(direct::kWgradTaps * direct::kThreads + direct::kWgradTaps * 32);
  std::vector<float> acc(static_cast<std::size_t>(direct::kThreads) * direct::kWgradTaps);
  auto sink = [&](std::int64_t e, float v) {
    dw[static_cast<std::size_t>(e)] = beta == 0.0f ? alpha * v : alpha * v + beta * dw[e];
  };
  for (std::int64_t b = 0; b < g.blocks(); ++b) {
    const direct::WgradBlock k = direct::wgrad_block_of(g, b);
    std::fill(smem.begin(), smem.end(), nan);
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (int t = 0; t < direct::kThreads; ++t) {
      direct::accumulate_wgrad(g, k, t, HostSource{x.data()}, HostSource{dy.data()},
                               acc.data() + t * direct::kWgradTaps);
      direct::write_wgrad_partials(t, smem.data(), acc.data() + t * direct::kWgradTaps);
    }
    for (int t = 0; t < direct::kThreads; ++t) direct::fold_wgrad(t, smem.data());
    for (int t = 0; t < direct::kThreads; ++t) direct::store_wgrad(g, k, t, smem.data(), sink);
  }
  return dw;
}

// The rows layout: every block's threads stage their share of a step, then sum it; the parts'
// partials (NaN until written) added in part order as the partial-sum kernel does.
std::vector<float> emulate_wgrad_rows(const DirectWgradGeometry& g, const std::vector<float>& x,
                                      const std::vector<float>& dy, float alpha, float beta,
                                      const std::vector<float>& dw0) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> dw = dw0;
  std::vector<float> partial(static_cast<std::size_t>(g.parts * g.w_elems()), nan);
  std::vector<float> smem(static_cast<std::size_t>(g.smem_floats()));
  std::vector<float> acc(static_cast<std::size_t>(g.threads) * direct::kWgradTaps);
  std::vector<float> row(acc.size());
  const auto sink = [&](int part, std::int64_t e, float v) {
    if (g.parts > 1) {
      partial[static_cast<std::size_t>(part * g.w_elems() + e)] = v;
    } else {
      dw[static_cast<std::size_t>(e)] = beta == 0.0f ? alpha * v : alpha * v + beta * dw[e];
    }
  };
  for (std::int64_t b = 0; b < g.blocks(); ++b) {
    const direct::RowsBlock k = direct::rows_block_of(g, b);
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (std::int64_t rid = k.row_begin; rid < k.row_end; ++rid) {
      std::fill(row.begin(), row.end(), 0.0f);
      for (int q0 = 0; q0 < g.out_w; q0 += g.tile_q) {
        std::fill(smem.begin(), smem.end(), nan);
        for (int t = 0; t < g.threads; ++t) {
          direct::stage_step(g, k, rid, q0, t, g.threads, smem.data(), HostSource{x.data()},
                             HostSource{dy.data()});
        }
        for (int t = 0; t < g.threads; ++t) {
          direct::accumulate_rows(g, k, t, smem.data(), row.data() + t * direct::kWgradTaps);
        }
      }
      for (int t = 0; t < g.threads; ++t) {
        direct::add_row(acc.data() + t * direct::kWgradTaps, row.data() + t * direct::kWgradTaps);
      }
    }
    for (int t = 0; t < g.threads; ++t) {
      direct::store_rows(g, k, t, acc.data() + t * direct::kWgradTaps, sink);
    }
  }
  if (g.parts > 1) {
    for (std::int64_t e = 0; e < g.w_elems(); ++e) {
      float sum = 0.0f;
      for (int j = 0; j < g.parts; ++j) sum += partial[static_cast<std::size_t>(j * g.w_elems() + e)];
      dw[e] = beta == 0.0f ? alpha * sum : alpha * sum + beta * dw[e];
    }
  }
  return dw;
}

// d's backward filter through `emulate(x, dy, alpha, beta, dw0)` against the fp64 oracle (alpha
// 0.5 and beta 2 on a random dw where `accumulate`, else a NaN dw that must be overwritten).
template <class Emulate>
testing::ErrorStats check_wgrad(const ConvDesc& d, bool accumulate, std::uint64_t seed,
                                const Emulate& emulate) {
  const std::vector<float> x = testing::random_values(d.x_elems(), seed, DType::kF32);
  const std::vector<float> dy = testing::random_values(d.y_elems(), seed + 1, DType::kF32);
  const std::vector<float> dw0 =
      accumulate ? testing::random_values(d.w_elems(), seed + 2, DType::kF32)
                 : std::vector<float>(static_cast<std::size_t>(d.w_elems()),
                                      std::numeric_limits<float>::quiet_NaN());
  const float alpha = accumulate ? 0.5f : 1.0f, beta = accumulate ? 2.0f : 0.0f;
  std::vector<double> ref(static_cast<std::size_t>(d.w_elems()));
  reference::conv2d_backward_filter_host(d, x.data(), dy.data(), ref.data());
  for (std::size_t e = 0; e < ref.size(); ++e) {
    ref[e] = alpha * ref[e] + beta * (accumulate ? dw0[e] : 0.0);
  }
  return testing::compare(emulate(x, dy, alpha, beta, dw0), ref);
}

// The same in the rows layout on `sms` SMs (min_threads 1: small filters too).
testing::ErrorStats check_wgrad_rows(const ConvDesc& d, int sms, bool accumulate,
                                     std::uint64_t seed, DirectWgradGeometry* used) {
  const DirectWgradGeometry g = detail::direct_wgrad_rows_geometry(d, sms, 1);
  *used = g;
  return check_wgrad(d, accumulate, seed, [&](const auto&... v) {
    return emulate_wgrad_rows(g, v...);
  });
}

// The random descriptors of the emulation tests: wide padding, small enough to emulate.
testing::RandomDescOptions random_options() {
  testing::RandomDescOptions o;
  o.wide_padding = true;
  o.max_extent = 40;
  o.max_kernel = 13;
  o.max_macs = 4e6;
  return o;
}

TEST(DirectProgram, BackwardFilterMatchesOracle) {
  std::mt19937_64 gen(4343);
  const testing::RandomDescOptions o = random_options();
  double worst = 0.0;
  for (int i = 0; i < 80; ++i) {
    const ConvDesc d = testing::random_desc(gen, o);
    ASSERT_TRUE(detail::direct_support(d, Pass::kBackwardFilter).ok()) << d.to_string();
    const bool accumulate = i % 3 == 0;
    const testing::ErrorStats err =
        check_wgrad(d, accumulate, 4343000 + i,
                    [&](const auto&... v) { return emulate_wgrad(d, v...); });
    worst = std::max(worst, err.rel_l2);
    EXPECT_TRUE(err.pass(testing::tolerance(DType::kF32)))
        << d.to_string() << (accumulate ? " accumulating: " : ": ") << err.to_string();
  }
  std::printf("[ direct   ] backward filter: 80 cases, worst rel-L2 %.2e\n", worst);
}

// The rows layout on random descriptors (groups, stride, dilation, wide padding), with one
// part a plane (many SMs' worth of planes or one SM) or many (132 SMs), taken for small filters
// too (min_threads 1).
TEST(DirectProgram, BackwardFilterRowsMatchesOracle) {
  std::mt19937_64 gen(4545);
  const testing::RandomDescOptions o = random_options();
  double worst = 0.0;
  int parted = 0;
  for (int i = 0; i < 80; ++i) {
    const ConvDesc d = testing::random_desc(gen, o);
    DirectWgradGeometry g;
    const testing::ErrorStats err = check_wgrad_rows(d, i % 2 == 0 ? 132 : 1, i % 3 == 0,
                                                     4545000 + i, &g);
    ASSERT_TRUE(g.rows) << d.to_string();
    parted += g.parts > 1;
    worst = std::max(worst, err.rel_l2);
    EXPECT_TRUE(err.pass(testing::tolerance(DType::kF32))) << d.to_string() << ": " << err.to_string();
  }
  std::printf("[ direct   ] backward filter, rows: 80 cases (%d in parts), worst rel-L2 %.2e\n",
              parted, worst);
  EXPECT_GE(parted, 20);
}

// The rows layout where its geometry has limits: the landmark plane (45 filter rows in two
// blocks of 23, six runs of 8 taps, 96 parts), rows wider than a tile (out_w 300: three tiles
// of 128, stride 2 along rows), dilated filters (one whose x rows shrink the tile to 96
// columns), 1x1 output planes of three filters, 65536 positions a plane summed by one part
// (on one SM); and the taps layout for small filters.
TEST(DirectProgram, BackwardFilterRowsGeometry) {
  const ConvDesc landmark = ConvDesc::parse("n1c1h96w96k1r45s45p22x22u1x1d1x1g1f32");
  const DirectWgradGeometry lg = detail::direct_wgrad_rows_geometry(landmark, 132);
  ASSERT_TRUE(lg.rows);
  EXPECT_EQ(lg.groups_s, 6);
  EXPECT_EQ(lg.r_blocks, 2);
  EXPECT_EQ(lg.rows_b, 23);
  EXPECT_EQ(lg.threads, 160);
  EXPECT_EQ(lg.tile_q, 96);
  EXPECT_EQ(lg.parts, 96);
  EXPECT_EQ(lg.pitch, 144);
  EXPECT_FALSE(detail::direct_wgrad_rows_geometry(
                   ConvDesc::parse("n8c64h56w56k64r3s3p1x1u1x1d1x1g1f32"), 132)
                   .rows);
  for (const char* s : {"n1c1h96w96k1r45s45p22x22u1x1d1x1g1f32",
                        "n2c2h20w600k4r5s33p2x16u1x2d1x1g2f32",
                        "n1c2h40w90k2r21s41p30x60u1x1d3x3g2f32",
                        "n1c1h100w400k1r42s41p0x0u1x1d1x4g1f32",
                        "n2c1h13w11k3r13s11p0x0u1x1d1x1g1f32",
                        "n16c32h64w64k32r9s9p4x4u1x1d1x1g32f32"}) {
    const ConvDesc d = ConvDesc::parse(s);
    for (int sms : {1, 132}) {
      DirectWgradGeometry g;
      const testing::ErrorStats err = check_wgrad_rows(d, sms, sms == 1, 91, &g);
      ASSERT_TRUE(g.rows) << s;
      EXPECT_LE(4 * std::size_t(g.smem_floats()), direct::kRowsMaxSmemBytes) << s;
      EXPECT_EQ(g.tile_q % direct::kWgradTaps, 0) << s;
      EXPECT_EQ(g.pitch % 4, 0) << s;
      EXPECT_TRUE(err.pass(testing::tolerance(DType::kF32)))
          << s << " on " << sms << " SMs: " << err.to_string();
    }
  }
  // More output rows than an int holds (2^22 images of 1024 rows): parts enough that each
  // part's rows fit one.
  const ConvDesc tall = ConvDesc::parse("n4194304c1h1024w1k1r5s1p2x0u1x1d1x1g1f32");
  const DirectWgradGeometry tg = detail::direct_wgrad_rows_geometry(tall, 1, 1);
  ASSERT_TRUE(tg.rows);
  EXPECT_GE(tg.parts, 2);
  EXPECT_GT(tg.rows_per_part, 0);
  EXPECT_GE(std::int64_t(tg.parts) * tg.rows_per_part, tall.n * tall.out_h());
  // Plans take the layout where its partials fit the workspace limit, unless
  // FFTCONV_DIRECT_WGRAD=taps.
  unsetenv("FFTCONV_DIRECT_WGRAD");
  EXPECT_TRUE(detail::choose_direct_wgrad_geometry(landmark, 132, SIZE_MAX).rows);
  EXPECT_FALSE(detail::choose_direct_wgrad_geometry(landmark, 132, 1000).rows);
  setenv("FFTCONV_DIRECT_WGRAD", "taps", 1);
  EXPECT_FALSE(detail::choose_direct_wgrad_geometry(landmark, 132, SIZE_MAX).rows);
  setenv("FFTCONV_DIRECT_WGRAD", "rows", 1);
  EXPECT_TRUE(detail::choose_direct_wgrad_geometry(landmark, 132, SIZE_MAX).rows);
  unsetenv("FFTCONV_DIRECT_WGRAD");
  const DirectWgradGeometry wide =
      detail::direct_wgrad_rows_geometry(ConvDesc::parse("n2c2h20w600k4r5s33p2x16u1x2d1x1g2f32"), 132, 1);
  EXPECT_EQ(wide.tile_q, 128);
  EXPECT_EQ(wide.q_tiles, 3);
  // 42 filter rows dilated by 4 along the row: x rows of 285 columns at 96 a tile fill 47.6 KB.
  const DirectWgradGeometry dilated = detail::direct_wgrad_rows_geometry(
      ConvDesc::parse("n1c1h100w400k1r42s41p0x0u1x1d1x4g1f32"), 132);
  EXPECT_EQ(dilated.tile_q, 96);
  EXPECT_EQ(dilated.q_tiles, 3);
}

// Random descriptors (groups, stride, dilation, wide padding), both passes, every tile width.
TEST(DirectProgram, MatchesOracle) {
  std::mt19937_64 gen(4242);
  const testing::RandomDescOptions o = random_options();
  int cases = 0;
  double worst = 0.0;
  for (int i = 0; i < 120; ++i) {
    const ConvDesc d = testing::random_desc(gen, o);
    for (Pass pass : {Pass::kForward, Pass::kBackwardData}) {
      if (!detail::direct_support(d, pass).ok()) continue;
      const int tile_w = direct::kTileWidths[i % 3];
      const testing::ErrorStats e = check(d, pass, tile_w, 4242000 + i);
      ++cases;
      worst = std::max(worst, e.rel_l2);
      EXPECT_TRUE(e.pass(testing::tolerance(DType::kF32)))
          << d.to_string() << " " << pass_name(pass) << " tile_w " << tile_w << ": "
          << e.to_string();
    }
  }
  std::printf("[ direct   ] %d cases, worst rel-L2 %.2e\n", cases, worst);
  EXPECT_GE(cases, 150);
}

// The landmark row (one 96x96 plane, a 45x45 filter, 'same'), both passes and tile widths, and
// a window wider than the source on every side (a 3x3 input with a 13x13 filter).
TEST(DirectProgram, LandmarkAndTinyPlanes) {
  for (const char* s : {"n1c1h96w96k1r45s45p22x22u1x1d1x1g1f32",
                        "n2c3h3w3k2r13s13p6x6u1x1d1x1g1f32", "n1c4h20w17k4r7s9p3x4u1x1d2x1g4f32"}) {
    const ConvDesc d = ConvDesc::parse(s);
    for (Pass pass : {Pass::kForward, Pass::kBackwardData}) {
      for (int tile_w : direct::kTileWidths) {
        const testing::ErrorStats e = check(d, pass, tile_w, 77);
        EXPECT_TRUE(e.pass(testing::tolerance(DType::kF32)))
            << s << " " << pass_name(pass) << " tile_w " << tile_w << ": " << e.to_string();
      }
    }
  }
}

TEST(DirectProgram, SupportRules) {
  const ConvDesc d = ConvDesc::parse("n1c1h96w96k1r45s45p22x22u2x2d1x1g1f32");
  EXPECT_TRUE(detail::direct_support(d, Pass::kForward).ok());
  EXPECT_FALSE(detail::direct_support(d, Pass::kBackwardData).ok());   // strided
  EXPECT_TRUE(detail::direct_support(d, Pass::kBackwardFilter).ok());  // any stride
  // A 101x101 filter fits a tile's shared memory; 151x151 does not.
  EXPECT_TRUE(detail::direct_support(ConvDesc::parse("n1c3h400w400k3r101s101p50x50u1x1d1x1g3f32"),
                                     Pass::kForward)
                  .ok());
  const detail::Support big = detail::direct_support(
      ConvDesc::parse("n1c3h400w400k3r151s151p75x75u1x1d1x1g3f32"), Pass::kForward);
  EXPECT_FALSE(big.ok());
  EXPECT_NE(big.reason.find("shared memory"), std::string::npos) << big.reason;
  // A stride whose window would overflow 32 bits: refused, not wrapped.
  EXPECT_FALSE(detail::direct_support(ConvDesc::parse("n1c1h8w8k1r1s1p0x0u1073741824x1d1x1g1f32"),
                                      Pass::kForward)
                   .ok());
  // Under Auto, filters under 7x7 are left to the FFT and cuDNN; forced, they run.
  Options automatic;
  const ConvDesc small = ConvDesc::parse("n1c16h32w32k16r3s3p1x1u1x1d1x1g1f32");
  for (const detail::RankedAlgo& r : detail::auto_ranking(small, automatic)) {
    EXPECT_NE(r.algo, Algo::kDirect);
  }
  EXPECT_TRUE(detail::direct_support(small, Pass::kForward).ok());
  // The tile width with the lowest estimate.
  for (const char* text :
       {"n1c1h96w96k1r45s45p22x22u1x1d1x1g1f32", "n64c1h96w96k1r45s45p22x22u1x1d1x1g1f32",
        "n2c8h300w260k8r31s31p15x15u1x1d1x1g1f32"}) {
    const ConvDesc d = ConvDesc::parse(text);
    const DirectGeometry best = detail::choose_direct_geometry(d, Pass::kForward, 132);
    ASSERT_GT(best.tile_w, 0) << text;
    for (int tile_w : direct::kTileWidths) {
      const DirectGeometry g = detail::direct_geometry(d, Pass::kForward, tile_w);
      EXPECT_LE(detail::estimate_direct_kernel_us(d, best, 132),
                detail::estimate_direct_kernel_us(d, g, 132))
          << text << " tile_w " << tile_w;
    }
  }
}

}  // namespace
}  // namespace fftconv

namespace fftconv {
namespace {

// Auto's estimates (device-free): the direct path first for one heatmap's forward pass and its
// backward filter (rows layout), not for 64 of them nor for the depthwise rows, whose
// multiply-adds the FFT saves.
TEST(DirectProgram, AutoRanksItForOnePlaneOnly) {
  unsetenv("FFTCONV_DIRECT_WGRAD");
  Options o;
  const ConvDesc one = ConvDesc::parse("n1c1h96w96k1r45s45p22x22u1x1d1x1g1f32");
  for (const char* s :
       {"n1c1h96w96k1r45s45p22x22u1x1d1x1g1f32", "n64c1h96w96k1r45s45p22x22u1x1d1x1g1f32",
        "n32c68h96w96k68r45s45p22x22u1x1d1x1g68f32", "n1c3h224w224k1r45s45p0x0u1x1d1x1g1f32",
        "n32c512h14w14k512r31s31p15x15u1x1d1x1g512f32"}) {
    std::string ranking;
    for (const detail::RankedAlgo& r : detail::auto_ranking(ConvDesc::parse(s), o)) {
      ranking += std::string(" ") + algo_name(r.algo) + " " + detail::us_text(r.us);
    }
    std::printf("[ ranking  ] %s:%s\n", s, ranking.c_str());
  }
  EXPECT_EQ(detail::auto_first_choice(one, o), Algo::kDirect);
  for (Pass p : {Pass::kBackwardData, Pass::kBackwardFilter}) {
    Options po;
    po.pass = p;
    std::string ranking;
    for (const detail::RankedAlgo& r : detail::auto_ranking(one, po)) {
      ranking += std::string(" ") + algo_name(r.algo) + " " + detail::us_text(r.us);
    }
    std::printf("[ ranking  ] %s %s:%s\n", one.to_string().c_str(), pass_name(p), ranking.c_str());
  }
  // Its backward filter in the rows layout (estimated 17.9 us) took 14.1 us on the H100 against
  // 25 for the staged FFT's; the taps layout 33 us on the H200 and the H100, which Auto does not
  // rank first (FFTCONV_DIRECT_WGRAD=taps).
  Options wo;
  wo.pass = Pass::kBackwardFilter;
  EXPECT_EQ(detail::auto_first_choice(one, wo), Algo::kDirect);
  setenv("FFTCONV_DIRECT_WGRAD", "taps", 1);
  EXPECT_NE(detail::auto_first_choice(one, wo), Algo::kDirect);
  unsetenv("FFTCONV_DIRECT_WGRAD");
  EXPECT_NE(detail::auto_first_choice(ConvDesc::parse("n64c1h96w96k1r45s45p22x22u1x1d1x1g1f32"), o),
            Algo::kDirect);
  EXPECT_NE(
      detail::auto_first_choice(ConvDesc::parse("n32c68h96w96k68r45s45p22x22u1x1d1x1g68f32"), o),
      Algo::kDirect);
}

}  // namespace
}  // namespace fftconv
