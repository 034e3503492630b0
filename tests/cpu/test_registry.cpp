// The implementation list, Auto's candidates, logging and FFTW wisdom: what a plan says about its
// choice, on the CPU backend (no GPU needed).
#include <gtest/gtest.h>

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "algos/registry.h"
#include "fftconv/fftconv.h"
#include "fftconv/fftconv.hpp"
#include "geometry/fft_geometry.h"
#include "separable/separable_conv.h"
#include "testing/testing.h"
#include "tuning/heuristics.h"

#ifndef FFTCONV_TEST_HAS_FFTW
#define FFTCONV_TEST_HAS_FFTW 0
#endif

namespace fftconv {
namespace {

namespace fs = std::filesystem;

#define REQUIRE_FFTW()                                                                  \
  do {                                                                                  \
    if (!FFTCONV_TEST_HAS_FFTW)                                                         \
      GTEST_SKIP() << "built without FFTCONV_WITH_FFTW (the cpu backend is not built)"; \
  } while (0)

const ConvDesc kDesc = ConvDesc::parse("n2c3h20w17k4r5s3p2x1u1x1d1x1g1f32");

Options cpu_options() {
  Options o;
  o.backend = Backend::kCpu;
  return o;
}

TEST(Registry, EntriesAreDistinctAndCoverEveryAlgoPerBackend) {
  std::set<std::string> names;
  std::set<std::pair<int, int>> algo_backend;
  for (const detail::AlgoFactory* f : detail::algorithm_list()) {
    EXPECT_TRUE(names.insert(f->name()).second) << f->name();
    EXPECT_NE(f->algo(), Algo::kAuto) << f->name();
    EXPECT_NE(f->backend(), Backend::kAuto) << f->name();
    // A forced Algo must name one entry per backend.
    EXPECT_TRUE(algo_backend.insert({int(f->algo()), int(f->backend())}).second) << f->name();
  }
  for (Algo a : {Algo::kFft, Algo::kFftTiled, Algo::kFftFused, Algo::kSeparable, Algo::kDirect,
                 Algo::kCudnn, Algo::kImplicitGemm}) {
    EXPECT_TRUE(algo_backend.count({int(a), int(Backend::kGpu)})) << algo_name(a);
  }
  EXPECT_TRUE(algo_backend.count({int(Algo::kFft), int(Backend::kCpu)}));
}

TEST(Registry, EveryEntryAnswersForEveryPass) {
  for (Pass p : {Pass::kForward, Pass::kBackwardData, Pass::kBackwardFilter}) {
    Options o;
    o.pass = p;
    for (const detail::AlgoFactory* f : detail::algorithm_list()) {
      const detail::Support s = f->can_implement(kDesc, o);
      if (!s.ok()) {
        EXPECT_FALSE(s.reason.empty()) << f->name() << " " << pass_name(p);
        continue;
      }
      EXPECT_GE(f->estimate_us(kDesc, o, nullptr), 0.0) << f->name() << " " << pass_name(p);
    }
  }
}

TEST(Registry, TilingRejectsBackwardPassesWithAReason) {
  Options o;
  o.pass = Pass::kBackwardData;
  for (const detail::AlgoFactory* f : detail::algorithm_list()) {
    if (f->algo() != Algo::kFftTiled) continue;
    const detail::Support s = f->can_implement(kDesc, o);
    EXPECT_EQ(s.status, Status::kNotSupported);
    EXPECT_NE(s.reason.find("forward pass only"), std::string::npos) << s.reason;
  }
}

const detail::AlgoFactory& factory(Algo a, Backend b = Backend::kGpu) {
  for (const detail::AlgoFactory* f : detail::algorithm_list()) {
    if (f->algo() == a && f->backend() == b) return *f;
  }
  throw std::runtime_error("no entry");
}

// The fused path's sizes: the smallest of kFusedSizes (powers of two from 8 to 128 and
// smooth multiples of 8 between them) at or above the exact minimum.
TEST(Fused, SizeRule) {
  EXPECT_EQ(detail::fused_extent(1), 8);
  EXPECT_EQ(detail::fused_extent(8), 8);
  EXPECT_EQ(detail::fused_extent(9), 16);
  EXPECT_EQ(detail::fused_extent(17), 24);
  EXPECT_EQ(detail::fused_extent(53), 64);  // 28 + 51 - 1 - 25: slak_dw51_28 (56 measured slower)
  EXPECT_EQ(detail::fused_extent(71), 72);  // 56 + 31 - 1 - 15: replknet_dw31_56
  EXPECT_EQ(detail::fused_extent(81), 96);
  EXPECT_EQ(detail::fused_extent(97), 128);
  EXPECT_EQ(detail::fused_extent(118), 128);  // 96 + 45 - 1 - 22: the landmark rows
  EXPECT_EQ(detail::fused_extent(128), 128);
  EXPECT_EQ(detail::fused_extent(129), -1);
  // Ascending, each a multiple of 8 (F/2 points a line, even) with no prime factor above 7.
  int previous = 0;
  for (const int f : detail::kFusedSizes) {
    EXPECT_GT(f, previous);
    EXPECT_EQ(f % 8, 0) << f;
    int r = f;
    for (const int p : {2, 3, 5, 7}) {
      while (r % p == 0) r /= p;
    }
    EXPECT_EQ(r, 1) << f;
    previous = f;
  }
  EXPECT_EQ(detail::kFusedSizes[0], detail::kMinFusedExtent);
  EXPECT_EQ(previous, detail::kMaxFusedExtent);
}

// One input and one output channel per group, planes up to 128x128, every pass (the backward
// filter at its own period, which can exceed the forward pass's).
TEST(Fused, Eligibility) {
  const detail::AlgoFactory& f = factory(Algo::kFftFused);
  Options fwd, dgrad, wgrad;
  dgrad.pass = Pass::kBackwardData;
  wgrad.pass = Pass::kBackwardFilter;
  const ConvDesc depthwise = ConvDesc::parse("n32c512h14w14k512r31s31p15x15u1x1d1x1g512f32");
  const ConvDesc single = ConvDesc::parse("n1c1h96w96k1r45s45p22x22u1x1d1x1g1f32");
  for (const ConvDesc& d : {depthwise, single}) {
    EXPECT_TRUE(f.can_implement(d, fwd).ok()) << d.to_string();
    EXPECT_TRUE(f.can_implement(d, dgrad).ok()) << d.to_string();
    EXPECT_TRUE(f.can_implement(d, wgrad).ok()) << d.to_string();
  }
  // Padding wider than the kernel: the forward pass's period is 80 + 40 = 120, the backward
  // filter's 156 (dy, 156 rows, placed as the filter, must not wrap onto itself).
  const ConvDesc padded = ConvDesc::parse("n1c1h80w80k1r5s5p40x40u1x1d1x1g1f32");
  EXPECT_TRUE(f.can_implement(padded, fwd).ok()) << detail::min_fft_h(padded);
  const detail::Support pw = f.can_implement(padded, wgrad);
  EXPECT_EQ(pw.status, Status::kNotSupported);
  EXPECT_NE(pw.reason.find("(backward filter)"), std::string::npos) << pw.reason;
  const detail::Support dense = f.can_implement(kDesc, fwd);
  EXPECT_EQ(dense.status, Status::kNotSupported);
  EXPECT_NE(dense.reason.find("one input and one output channel per group"), std::string::npos)
      << dense.reason;
  const ConvDesc multiplier = ConvDesc::parse("n1c4h20w20k8r5s5p2x2u1x1d1x1g4f32");
  EXPECT_FALSE(f.can_implement(multiplier, fwd).ok());
  const ConvDesc large = ConvDesc::parse("n1c1h200w90k1r9s9p4x4u1x1d1x1g1f32");
  const detail::Support big = f.can_implement(large, fwd);
  EXPECT_EQ(big.status, Status::kNotSupported);
  EXPECT_NE(big.reason.find("up to 128x128"), std::string::npos) << big.reason;
  std::string detail_text;
  EXPECT_GT(f.estimate_us(depthwise, fwd, &detail_text), 0.0);
  EXPECT_EQ(detail_text, "32x32");
}

// Options::fft_h x fft_w force the fused size on a plan that names the fused path: one size for
// both axes, one of kFusedSizes, at or above the pass's period (replknet_dw31_56's is 71: 72 by
// default, 80, 96 or 128 forced). Under Auto the forced size is the full-image FFT's.
TEST(Fused, ForcedSize) {
  const detail::AlgoFactory& f = factory(Algo::kFftFused);
  const ConvDesc d = ConvDesc::parse("n32c128h56w56k128r31s31p15x15u1x1d1x1g128f32");
  for (Pass p : {Pass::kForward, Pass::kBackwardData, Pass::kBackwardFilter}) {
    Options o;
    o.pass = p;
    o.fft_h = o.fft_w = 100;  // Auto: not the fused path's to take
    std::string size;
    EXPECT_TRUE(f.can_implement(d, o).ok());
    EXPECT_GT(f.estimate_us(d, o, &size), 0.0);
    EXPECT_EQ(size, "72x72") << pass_name(p);
    o.algo = Algo::kFftFused;
    o.fft_h = o.fft_w = 0;
    EXPECT_GT(f.estimate_us(d, o, &size), 0.0);
    EXPECT_EQ(size, "72x72") << pass_name(p);
    for (std::int64_t forced : {72, 80, 96, 128}) {
      o.fft_h = o.fft_w = forced;
      EXPECT_TRUE(f.can_implement(d, o).ok()) << forced;
      EXPECT_GT(f.estimate_us(d, o, &size), 0.0);
      EXPECT_EQ(size, std::to_string(forced) + "x" + std::to_string(forced));
    }
    // Below the period: tiles (the backward filter's: tiles of dy, each with its x window).
    o.fft_h = o.fft_w = 64;
    const detail::Support tiles = f.can_implement(d, o);
    EXPECT_TRUE(tiles.ok()) << tiles.reason;
    EXPECT_GT(f.estimate_us(d, o, &size), 0.0);
    EXPECT_EQ(size, "64x64, 2x2 tiles a plane");  // tiles of 34x34 outputs
    for (auto [h, w] : {std::pair<std::int64_t, std::int64_t>{72, 80}, {100, 100}, {24, 24}}) {
      o.fft_h = h;
      o.fft_w = w;
      const detail::Support s = f.can_implement(d, o);
      EXPECT_EQ(s.status, Status::kNotSupported) << h << "x" << w;
      EXPECT_NE(s.reason.find("not the forced"), std::string::npos) << s.reason;
      EXPECT_NE(s.reason.find("(32, 40, 48"), std::string::npos) << s.reason;
    }
  }
}

// Tiles where a plane's blocks cannot fill the GPU (by estimate, not yet measured): 64 heatmaps
// of 96x96 with 45x45 (one 128x128 block each, 64 of 132 SMs) in four 96x96 transforms each;
// landmark_heatmaps_dw68's 2176 planes whole. The backward filter's tiles, slower where measured,
// only where forced.
TEST(Fused, TilesWherePlanesAreFew) {
  const detail::AlgoFactory& f = factory(Algo::kFftFused);
  {
    Options o;
    o.pass = Pass::kBackwardFilter;
    std::string size;
    f.estimate_us(ConvDesc::parse("n64c1h96w96k1r45s45p22x22u1x1d1x1g1f32"), o, &size);
    EXPECT_EQ(size, "128x128");
  }
  for (Pass p : {Pass::kForward, Pass::kBackwardData}) {
    Options o;
    o.pass = p;
    std::string size;
    f.estimate_us(ConvDesc::parse("n64c1h96w96k1r45s45p22x22u1x1d1x1g1f32"), o, &size);
    EXPECT_EQ(size, "96x96, 2x2 tiles a plane") << pass_name(p);
    f.estimate_us(ConvDesc::parse("n32c68h96w96k68r45s45p22x22u1x1d1x1g68f32"), o, &size);
    EXPECT_EQ(size, "128x128") << pass_name(p);
  }
}

// Auto's choice on the small-plane suite rows follows what the H200 measured
// (data/results/h200/2026-12-04-fused/RUNS.md, run 3, back-to-back, per-call filters): fused where
// it was faster (landmark_heatmaps_dw68 0.168 ms against 0.539 staged, replknet_dw31_14 0.063
// against 0.258, replknet_dw31_56 0.249 against 0.373, slak_dw51_28 0.112 against 0.413).
// The single plane ran staged faster than as one 128x128 block of the fused path (0.028 fused,
// 0.023 to 0.034 staged; cold 0.038 against 0.021), whose one block leaves the other SMs idle;
// its four 96x96 tiles now rank the fused path before the staged one (an estimate, not yet
// measured), and the direct path before both (DirectProgram.AutoRanksItForOnePlaneOnly).
TEST(Fused, AutoFollowsTheMeasuredWinner) {
  Options o;
  o.backend = Backend::kGpu;
  for (Pass p : {Pass::kForward, Pass::kBackwardData}) {
    o.pass = p;
    for (const char* s : {"n32c512h14w14k512r31s31p15x15u1x1d1x1g512f32",
                          "n32c68h96w96k68r45s45p22x22u1x1d1x1g68f32",
                          "n32c128h56w56k128r31s31p15x15u1x1d1x1g128f32",
                          "n32c256h28w28k256r51s51p25x25u1x1d1x1g256f32"}) {
      EXPECT_EQ(detail::auto_first_choice(ConvDesc::parse(s), o), Algo::kFftFused) << s;
    }
    const std::vector<detail::RankedAlgo> one =
        detail::auto_ranking(ConvDesc::parse("n1c1h96w96k1r45s45p22x22u1x1d1x1g1f32"), o);
    std::vector<Algo> order;
    for (const detail::RankedAlgo& r : one) {
      if (r.algo == Algo::kFft || r.algo == Algo::kFftFused) order.push_back(r.algo);
    }
    EXPECT_EQ(order, (std::vector<Algo>{Algo::kFftFused, Algo::kFft}));
    EXPECT_EQ(one.front().algo, Algo::kDirect);
  }
}

// The backward filter, as measured (data/results/h200/2026-12-04-wgrad/RUNS.md, run 2, fused
// against the staged FFT): fused on landmark_heatmaps_dw68 (0.284 against 0.546 ms),
// replknet_dw31_14 (0.102 against 0.279) and slak_dw51_28 (0.179 against 0.427); staged on the
// single plane (cold 0.023 against 0.046).
TEST(Fused, AutoFollowsTheMeasuredWinnerForTheBackwardFilter) {
  Options o;
  o.backend = Backend::kGpu;
  o.pass = Pass::kBackwardFilter;
  for (const char* s :
       {"n32c512h14w14k512r31s31p15x15u1x1d1x1g512f32", "n32c68h96w96k68r45s45p22x22u1x1d1x1g68f32",
        "n32c256h28w28k256r51s51p25x25u1x1d1x1g256f32"}) {
    EXPECT_EQ(detail::auto_first_choice(ConvDesc::parse(s), o), Algo::kFftFused) << s;
  }
  // The single plane: staged before fused, the direct path (rows layout) before both
  // (DirectProgram.AutoRanksItForOnePlaneOnly).
  std::vector<Algo> order;
  for (const detail::RankedAlgo& r :
       detail::auto_ranking(ConvDesc::parse("n1c1h96w96k1r45s45p22x22u1x1d1x1g1f32"), o)) {
    if (r.algo == Algo::kFft || r.algo == Algo::kFftFused) order.push_back(r.algo);
  }
  EXPECT_EQ(order, (std::vector<Algo>{Algo::kFft, Algo::kFftFused}));
}

// 16-bit data: the fused backward filter stages its planes with a batch's raw loads in flight
// before their conversions; on the 64 heatmaps in fp16 it took 0.041 ms against the staged FFT's
// 0.050, where in fp32 it took 0.031 (H100, data/results/h100/2026-12-07-verify/RUNS.md, run 1).
// Staged a row at a time it had taken 0.111 (h100/2026-12-05-wgrad, run 4).
TEST(Fused, AutoGivesTheHalfHeatmapsBackwardFilterToTheFusedPath) {
  Options o;
  o.backend = Backend::kGpu;
  o.pass = Pass::kBackwardFilter;
  EXPECT_EQ(detail::auto_first_choice(ConvDesc::parse("n64c1h96w96k1r45s45p22x22u1x1d1x1g1f32"), o),
            Algo::kFftFused);
  for (const char* s :
       {"n64c1h96w96k1r45s45p22x22u1x1d1x1g1f16", "n64c1h96w96k1r45s45p22x22u1x1d1x1g1bf16"}) {
    EXPECT_EQ(detail::auto_first_choice(ConvDesc::parse(s), o), Algo::kFftFused) << s;
  }
}

// By estimate, not yet measured: replknet_dw31_56 ran its backward filter staged (0.369 against
// 0.419 ms for the fused path at 128x128, 2026-12-04-wgrad run 2); its plane now takes 72x72,
// about a third of that work, and Auto the fused path for every pass.
TEST(Fused, SmoothSizeMovesReplknet56ToTheFusedPath) {
  Options o;
  o.backend = Backend::kGpu;
  const ConvDesc d = ConvDesc::parse("n32c128h56w56k128r31s31p15x15u1x1d1x1g128f32");
  for (Pass p : {Pass::kForward, Pass::kBackwardData, Pass::kBackwardFilter}) {
    o.pass = p;
    EXPECT_EQ(detail::auto_first_choice(d, o), Algo::kFftFused) << pass_name(p);
  }
}

// auto_ranking (the PyTorch operators weigh the engine's best own algorithm against cuDNN's
// estimate with it): every GPU entry that can implement the pass, cheapest first, each once,
// with auto_first_choice its head and cuDNN among them for a plain convolution.
TEST(Registry, AutoRankingIsSortedAndHeadedByTheFirstChoice) {
  Options o;
  o.backend = Backend::kGpu;
  for (Pass p : {Pass::kForward, Pass::kBackwardData, Pass::kBackwardFilter}) {
    o.pass = p;
    for (const char* s :
         {"n8c64h56w56k64r7s7p3x3u1x1d1x1g1f32", "n8c64h56w56k64r5s5p2x2u1x1d1x1g1f16",
          "n32c68h96w96k68r45s45p22x22u1x1d1x1g68f32", "n1c512h256w256k512r3s3p1x1u1x1d1x1g4f32"}) {
      const ConvDesc d = ConvDesc::parse(s);
      const std::vector<detail::RankedAlgo> r = detail::auto_ranking(d, o);
      ASSERT_FALSE(r.empty()) << s;
      EXPECT_EQ(r.front().algo, detail::auto_first_choice(d, o)) << s << " " << pass_name(p);
      std::set<Algo> seen;
      bool cudnn = false;
      for (std::size_t i = 0; i < r.size(); ++i) {
        EXPECT_TRUE(seen.insert(r[i].algo).second) << s << ": " << algo_name(r[i].algo) << " twice";
        EXPECT_GT(r[i].us, 0.0) << s;
        if (i > 0) EXPECT_LE(r[i - 1].us, r[i].us) << s << " " << pass_name(p);
        cudnn = cudnn || r[i].algo == Algo::kCudnn;
        EXPECT_NE(r[i].algo, Algo::kSeparable) << s;  // kept low-rank filters only
      }
      EXPECT_TRUE(cudnn || cudnn_algo_names(p).empty())
          << s << " " << pass_name(p);  // built with cuDNN
      if (p != Pass::kForward) {
        for (const detail::RankedAlgo& x : r) EXPECT_NE(x.algo, Algo::kFftTiled) << s;
      }
    }
  }
}

// Forced only (Auto weighs it at set_filter, when the filter's rank is known); forward and
// backward data; a tile that fits in shared memory.
TEST(Separable, Eligibility) {
  const detail::AlgoFactory& f = factory(Algo::kSeparable);
  const ConvDesc landmark = ConvDesc::parse("n64c1h96w96k1r45s45p22x22u1x1d1x1g1f32");
  Options autoplan;
  const detail::Support a = f.can_implement(landmark, autoplan);
  EXPECT_EQ(a.status, Status::kNotSupported);
  EXPECT_NE(a.reason.find("kept low-rank filters only"), std::string::npos) << a.reason;
  EXPECT_NE(detail::auto_first_choice(landmark, autoplan), Algo::kSeparable);
  Options o;
  o.algo = Algo::kSeparable;
  for (Pass p : {Pass::kForward, Pass::kBackwardData}) {
    o.pass = p;
    EXPECT_TRUE(f.can_implement(landmark, o).ok()) << pass_name(p);
    EXPECT_TRUE(f.can_implement(kDesc, o).ok()) << pass_name(p);  // dense groups too
  }
  o.pass = Pass::kBackwardFilter;
  const detail::Support w = f.can_implement(landmark, o);
  EXPECT_EQ(w.status, Status::kNotSupported);
  EXPECT_NE(w.reason.find("full gradient"), std::string::npos) << w.reason;
  o.pass = Pass::kForward;
  const detail::Support huge =
      f.can_implement(ConvDesc::parse("n1c1h900w900k1r301s301p150x150u1x1d1x1g1f32"), o);
  EXPECT_EQ(huge.status, Status::kNotSupported);
  EXPECT_NE(huge.reason.find("shared memory"), std::string::npos) << huge.reason;
}

TEST(Separable, TilesFitSharedMemory) {
  for (const char* s :
       {"n64c1h96w96k1r45s45p22x22u1x1d1x1g1f32", "n1c3h2048w2048k3r45s45p22x22u1x1d1x1g3f32",
        "n1c3h3000w4000k3r101s101p50x50u1x1d1x1g3f32", "n2c4h50w61k4r7s31p3x15u2x3d2x1g2f32",
        "n2c4h50w61k4r7s31p3x15u1x1d1x1g2f32", "n2c4h50w61k4r7s31p3x15u1x1d1x1g1f32",
        "n2c4h50w61k4r7s31p3x15u2x3d1x1g4f32",        // dgrad: strip, stride spread
        "n1c1h300w300k1r3s224p1x111u1x1d1x1g1f32",    // widest strip filter
        "n1c1h300w300k1r3s225p1x112u1x1d1x1g1f32",    // one tap more: tile
        "n1c1h600w40k1r249s3p124x1u1x1d1x1g1f32",     // tallest ring that fits
        "n1c1h600w40k1r257s3p128x1u1x1d1x1g1f32"}) {  // its ring does not fit
    const ConvDesc d = ConvDesc::parse(s);
    for (Pass p : {Pass::kForward, Pass::kBackwardData}) {
      detail::SeparableGeometry g;
      std::string why;
      ASSERT_TRUE(detail::separable_geometry(d, p, &g, &why)) << s << ": " << why;
      EXPECT_EQ(g.h.out, p == Pass::kForward ? d.out_h() : d.h) << s;
      // The strip kernel on unit axes with one source plane per output where its buffers fit
      // (up to 224 taps across, a ring within kMaxStripSmemBytes at rank 4), the tile kernel
      // else.
      const bool one_source = (p == Pass::kForward ? d.c_per_group() : d.k_per_group()) == 1;
      const bool unit = g.h.unit() && g.w.unit();
      const bool fits = d.s <= 224 && d.r <= 249;
      EXPECT_EQ(g.strip(), unit && one_source && fits) << s << " " << pass_name(p);
      if (g.strip()) {
        EXPECT_GE(g.seg_chunks, 1) << s;
        EXPECT_LT(g.segment_rows() - detail::separable::kChunk, g.h.out) << s;
        // The column pass reads kChunk + taps - 1 rows, and one more that it does not use.
        EXPECT_GE(g.ring_slots() * detail::separable::kChunk,
                  detail::separable::kChunk + detail::separable::strip_taps(g.h.taps))
            << s;
        EXPECT_EQ(g.region_pitch() % 8, 4) << s;
        EXPECT_LE(g.smem_bytes(detail::kMaxSeparableRank), detail::separable::kMaxStripSmemBytes)
            << s;
        if (g.whole) {
          // One segment; the row pass covers the rows the column pass's runs read (one run of
          // kStripRun past the padded taps), every one of them staged.
          EXPECT_GE(g.segment_rows(), g.h.out) << s;
          EXPECT_EQ(g.blocks_per_plane(),
                    (g.w.out + detail::separable::kStripW - 1) / detail::separable::kStripW)
              << s;
          const int out_runs = (g.h.out + detail::separable::kStripRun - 1) /
                               detail::separable::kStripRun * detail::separable::kStripRun;
          EXPECT_EQ(g.pass_rows(), out_runs + detail::separable::strip_taps(g.h.taps)) << s;
          EXPECT_GE(g.region_rows(), g.pass_rows()) << s;
          EXPECT_EQ(g.region_rows() % detail::separable::kChunk, 0) << s;
          EXPECT_EQ(g.threads(), detail::separable::kWholeThreads) << s;
        }
      } else {
        EXPECT_EQ(g.tile_h % detail::separable::kRun, 0) << s;
        EXPECT_GT(g.tile_h, 0) << s;
        EXPECT_LE(g.tile_h, detail::separable::kMaxTileH) << s;
        EXPECT_LE(g.smem_bytes(detail::kMaxSeparableRank), detail::separable::kMaxSmemBytes) << s;
      }
    }
  }
}

// On the Gaussian rows of the suite, a rank-1 filter's 1-D passes are estimated below every
// FFT path, so Auto keeps them as such at set_filter; except on landmark_heatmaps_dw68, whose
// fused FFT (0.170 ms with a kept filter, data/results/h200/2026-12-04-fused/RUNS.md) beats
// the separable kernel (0.327 ms with a kept Gaussian, 2026-12-03-separable run 6).
TEST(Separable, EstimateBeatsTheFftOnGaussianRows) {
  for (const char* s :
       {"n1c1h96w96k1r45s45p22x22u1x1d1x1g1f32", "n64c1h96w96k1r45s45p22x22u1x1d1x1g1f32",
        "n32c68h96w96k68r45s45p22x22u1x1d1x1g68f32", "n1c3h2048w2048k3r45s45p22x22u1x1d1x1g3f32"}) {
    const ConvDesc d = ConvDesc::parse(s);
    Options o;
    detail::SeparableGeometry g;
    ASSERT_TRUE(detail::separable_geometry(d, Pass::kForward, &g, nullptr));
    const double sep = detail::estimate_separable_us(d, Pass::kForward, g, 1);
    const bool fused_wins = d.k == 68;
    for (Algo a : {Algo::kFft, Algo::kFftTiled, Algo::kFftFused}) {
      const detail::AlgoFactory& f = factory(a);
      if (!f.can_implement(d, o).ok()) continue;
      if (fused_wins && a == Algo::kFftFused) {
        EXPECT_GT(sep, f.estimate_us(d, o, nullptr)) << s << " " << f.name();
      } else {
        EXPECT_LT(sep, f.estimate_us(d, o, nullptr)) << s << " " << f.name();
      }
    }
  }
}

TEST(Registry, CpuPlanListsItsCandidate) {
  REQUIRE_FFTW();
  const Plan plan(kDesc, cpu_options());
  const PlanInfo& i = plan.info();
  ASSERT_EQ(i.candidates.size(), 1u);
  EXPECT_EQ(i.candidates[0].name, "cpu_fft");
  EXPECT_TRUE(i.candidates[0].chosen);
  EXPECT_NE(plan.describe().find("chose cpu_fft"), std::string::npos) << plan.describe();
}

TEST(Registry, ForcedGpuAlgorithmOnCpuNamesWhatRuns) {
  Options o = cpu_options();
  o.algo = Algo::kCudnn;
  try {
    Plan plan(kDesc, o);
    FAIL() << "planned " << plan.describe();
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::kNotSupported);
    EXPECT_NE(std::string(e.what()).find("GPU only"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cpu_fft"), std::string::npos) << e.what();
  }
}

TEST(EnumNames, RoundTrip) {
  for (Algo a : {Algo::kAuto, Algo::kFft, Algo::kFftTiled, Algo::kFftFused, Algo::kSeparable,
                 Algo::kDirect, Algo::kCudnn, Algo::kImplicitGemm}) {
    EXPECT_EQ(parse_algo(algo_name(a)), a);
  }
  for (CudnnSearch s :
       {CudnnSearch::kFind, CudnnSearch::kHeuristic, CudnnSearch::kGraph, CudnnSearch::kAuto}) {
    EXPECT_EQ(parse_cudnn_search(cudnn_search_name(s)), s);
  }
  for (LogLevel l :
       {LogLevel::kOff, LogLevel::kError, LogLevel::kWarning, LogLevel::kInfo, LogLevel::kDebug}) {
    EXPECT_EQ(parse_log_level(log_level_name(l)), l);
  }
  EXPECT_THROW(parse_log_level("loud"), Error);
}

// Collects what the library logs while alive; restores the default sink and level after.
class LogCapture {
 public:
  explicit LogCapture(LogLevel level) : saved_(log_level()) {
    set_log_level(level);
    set_log_callback(
        [](LogLevel l, const char* m, void* self) {
          static_cast<LogCapture*>(self)->messages.emplace_back(l, m);
        },
        this);
  }
  ~LogCapture() {
    set_log_callback(nullptr);
    set_log_level(saved_);
  }
  std::vector<std::pair<LogLevel, std::string>> messages;

 private:
  LogLevel saved_;
};

// A test with a fresh folder, and CPU plans that measure (FFTW_MEASURE) and keep a tuning cache
// in it: the case where FFTW wisdom is read and written.
class TempDir : public ::testing::Test {
 protected:
  Options measured_cpu_options() const {
    Options o = cpu_options();
    o.tuning = Tuning::kAutotune;
    o.tuning_cache = tmp_.path() + "/cache.json";
    return o;
  }
  testing::TempDir tmp_{"fftconv-registry"};
  const std::string& dir_ = tmp_.path();
};

using Logging = TempDir;

TEST_F(Logging, CallbackReceivesWarningsAndLevelFilters) {
  REQUIRE_FFTW();
  const Options o = measured_cpu_options();
  const std::string wisdom = o.tuning_cache + ".fftw-wisdom";
  {
    std::ofstream(wisdom) << "not fftw wisdom";
    LogCapture log(LogLevel::kInfo);
    const Plan plan(kDesc, o);
    bool info = false, warning = false;
    for (const auto& m : log.messages) {
      EXPECT_NE(m.first, LogLevel::kDebug);
      info |= m.first == LogLevel::kInfo && m.second.find(kDesc.to_string()) != std::string::npos;
      warning |= m.first == LogLevel::kWarning && m.second.find(wisdom) != std::string::npos;
    }
    EXPECT_TRUE(info) << "no info line naming the plan's choice";
    EXPECT_TRUE(warning) << "no warning about the unreadable wisdom file";
  }
  {
    std::ofstream(wisdom) << "not fftw wisdom";
    LogCapture log(LogLevel::kOff);
    const Plan plan(kDesc, o);
    EXPECT_TRUE(log.messages.empty());
  }
}

TEST(CLogging, CApiCallbackSeesMessages) {
  REQUIRE_FFTW();
  std::vector<std::string> seen;
  const LogLevel saved = log_level();
  fftconv_set_log_level(3);
  fftconv_set_log_callback(
      [](int level, const char* m, void* user) {
        if (level == 3) static_cast<std::vector<std::string>*>(user)->emplace_back(m);
      },
      &seen);
  { const Plan plan(kDesc, cpu_options()); }
  fftconv_set_log_callback(nullptr, nullptr);
  set_log_level(saved);
  ASSERT_FALSE(seen.empty());
  EXPECT_NE(seen[0].find("cpu_fft"), std::string::npos) << seen[0];
}

using Wisdom = TempDir;

TEST_F(Wisdom, MeasuredCpuPlansKeepFftwWisdomBesideTheTuningCache) {
  REQUIRE_FFTW();
  const Options o = measured_cpu_options();
  const Plan first(kDesc, o);
  const std::string wisdom = o.tuning_cache + ".fftw-wisdom";
  ASSERT_TRUE(fs::exists(wisdom)) << first.describe();
  EXPECT_GT(fs::file_size(wisdom), 0u);
  EXPECT_NE(first.describe().find("wisdom " + wisdom), std::string::npos) << first.describe();
  const Plan second(kDesc, o);  // reads it back
  EXPECT_EQ(second.info().fft_h, first.info().fft_h);
  for (const auto& e : fs::directory_iterator(dir_)) {
    EXPECT_EQ(e.path().string().find(".tmp."), std::string::npos) << e.path();
  }
  // Heuristic plans measure nothing and leave no wisdom.
  Options h = cpu_options();
  h.tuning_cache = dir_ + "/other.json";
  const Plan third(kDesc, h);
  EXPECT_FALSE(fs::exists(h.tuning_cache + ".fftw-wisdom"));
}

}  // namespace
}  // namespace fftconv
