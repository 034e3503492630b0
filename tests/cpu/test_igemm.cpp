// The implicit-GEMM backward filter's planning on the host: its geometry (tiles, channels padded
// to 4, split-K slices, workspace), what it refuses and why, and where Auto sends a backward
// filter once it is built (dense channels under small filters; never the large filters the FFT
// is for). Its kernels are tested on the device (tests/gpu/test_implicit_gemm.cpp).
#include <gtest/gtest.h>

#include <string>

#include "algos/registry.h"
#include "fftconv/fftconv.hpp"
#include "igemm/igemm_wgrad.h"
#include "tuning/heuristics.h"

namespace fftconv {
namespace {

constexpr int kSms = 132;

TEST(ImplicitGemmGeometry, TilesPaddingAndSlices) {
  // seed1_grouped3x3: 4 groups of 128, 65536 positions.
  const detail::IgemmWgradGeometry seed1 = detail::igemm_wgrad_geometry(
      ConvDesc::parse("n1c512h256w256k512r3s3p1x1u1x1d1x1g4f32"), kSms);
  EXPECT_EQ(seed1.tile, detail::igemm::Tile::kWide);
  EXPECT_EQ(seed1.cg4, 128);
  EXPECT_EQ(seed1.tiles_m(), 1);
  EXPECT_EQ(seed1.tiles_n(), 9 * 128 / 64);
  // Slices while a group's launch fits one wave of two blocks an SM.
  EXPECT_EQ(seed1.split_k, 2 * kSms / 18);
  EXPECT_GT(seed1.semaphore_bytes(), 0u);

  // 131 filters and 130 channels: padded to 132 with zero channels; no slices where the tiles
  // fill the GPU or the positions are few.
  const detail::IgemmWgradGeometry odd =
      detail::igemm_wgrad_geometry(ConvDesc::parse("n2c130h17w19k131r3s5p1x2u2x1d1x2g1f32"), kSms);
  EXPECT_EQ(odd.cg4, 132);
  EXPECT_EQ(odd.kg4, 132);
  EXPECT_EQ(odd.tile, detail::igemm::Tile::kWide);
  EXPECT_EQ(odd.split_k, 1);  // 2 x 9 x 13 = 234 positions: fewer than a slice's
  EXPECT_EQ(odd.semaphore_bytes(), 0u);
  EXPECT_EQ(odd.x_floats(), 2 * 17 * 19 * 132);
  EXPECT_EQ(odd.dw_floats(), 132 * 3 * 5 * 132);
  EXPECT_GE(odd.workspace_bytes(),
            sizeof(float) * std::size_t(odd.x_floats() + odd.dy_floats() + odd.dw_floats()));

  // 32 filters a group: narrow tiles.
  const detail::IgemmWgradGeometry narrow = detail::igemm_wgrad_geometry(
      ConvDesc::parse("n8c128h112w112k128r3s3p1x1u1x1d1x1g4f32"), kSms);
  EXPECT_EQ(narrow.tile, detail::igemm::Tile::kNarrow);
  EXPECT_GT(narrow.split_k, 1);
  EXPECT_LE(narrow.positions() / narrow.split_k, narrow.positions());
  EXPECT_GE(narrow.positions() / narrow.split_k, detail::igemm::kMinSlicePositions);
  EXPECT_NE(detail::igemm_wgrad_text(narrow).find("3xTF32"), std::string::npos);
}

TEST(ImplicitGemmGeometry, RefusesWithReasons) {
  ConvDesc half = ConvDesc::parse("n2c64h30w30k96r3s3p1x1u1x1d1x1g1f16");
  const detail::Support s = detail::igemm_wgrad_support(half);
  EXPECT_EQ(s.status, Status::kUnsupportedDtype);
  EXPECT_NE(s.reason.find("fp32"), std::string::npos) << s.reason;
  // A group's x past CUTLASS's 32-bit indexing.
  const detail::Support big =
      detail::igemm_wgrad_support(ConvDesc::parse("n64c256h256w256k8r3s3p1x1u1x1d1x1g1f32"));
  EXPECT_EQ(big.status, Status::kNotSupported);
  EXPECT_NE(big.reason.find("32 bits"), std::string::npos) << big.reason;
}

const detail::AlgoFactory& igemm_factory() {
  for (const detail::AlgoFactory* f : detail::algorithm_list()) {
    if (f->algo() == Algo::kImplicitGemm) return *f;
  }
  throw Error(Status::kInternal, "no implicit-GEMM entry");
}

// Empty where the path is built; else why not.
std::string igemm_missing() {
  Options forced;
  forced.pass = Pass::kBackwardFilter;
  forced.algo = Algo::kImplicitGemm;
  const detail::Support s = detail::entry_support(
      igemm_factory(), ConvDesc::parse("n2c64h30w30k96r3s3p1x1u1x1d1x1g1f32"), forced);
  return s.ok() ? std::string() : s.reason;
}

// Under Auto, once built: the backward filters of 128 filters a group or more (its wide tiles)
// where its estimate beats cuDNN's exact algorithms on the CUDA cores; not the narrow tiles
// (slower than cuDNN or the FFT wherever measured), not the large filters the FFT is for, not
// half data. Measured on an H100 (data/results/h100/2026-12-07b/RUNS.md, run 7):
// seed1_grouped3x3_f32 1.68 ms against cuDNN's 2.71, small5x5_c512_56 3.23 against 4.80,
// small3x3_c512_56 1.43 against 1.80; small7x7_c512_56 5.40 against the FFT's 8.66 (run 9).
TEST(ImplicitGemmAuto, TakesDenseWideFiltersOnly) {
  const std::string missing = igemm_missing();
  if (!missing.empty()) GTEST_SKIP() << missing;
  Options o;
  o.pass = Pass::kBackwardFilter;
  for (const char* s : {"n1c512h256w256k512r3s3p1x1u1x1d1x1g4f32",   // seed1_grouped3x3_f32
                        "n4c512h56w56k512r5s5p2x2u1x1d1x1g1f32",     // small5x5_c512_56
                        "n4c512h56w56k512r3s3p1x1u1x1d1x1g1f32",    // small3x3_c512_56
                        "n4c512h56w56k512r7s7p3x3u1x1d1x1g1f32"}) {  // small7x7_c512_56
    EXPECT_EQ(detail::auto_first_choice(ConvDesc::parse(s), o), Algo::kImplicitGemm) << s;
  }
  for (const char* s : {"n8c64h64w64k64r31s31p15x15u1x1d1x1g1f32",     // multichannel_r31
                        "n16c128h56w56k128r45s45p22x22u1x1d1x1g1f32",  // multichannel_r45
                        "n1c1h96w96k1r45s45p22x22u1x1d1x1g1f32",       // seed3_landmark_same
                        "n32c68h96w96k68r45s45p22x22u1x1d1x1g68f32",   // landmark_heatmaps_dw68
                        "n8c64h56w56k64r5s5p2x2u1x1d1x1g1f32",         // small5x5_c64_56: narrow
                        "n8c128h112w112k128r3s3p1x1u1x1d1x1g4f32",     // 32 filters a group
                        "n1c512h256w256k512r3s3p1x1u1x1d1x1g4f16"}) {  // half data
    EXPECT_NE(detail::auto_first_choice(ConvDesc::parse(s), o), Algo::kImplicitGemm) << s;
  }
}

// A forced plan builds without asking can_implement first: create() refuses what it would.
TEST(ImplicitGemmAuto, CreateRefusesWhatItCannotRun) {
  Options forced;
  forced.pass = Pass::kBackwardFilter;
  forced.algo = Algo::kImplicitGemm;
  const bool built = igemm_missing().empty();
  const auto status_of = [&](const ConvDesc& d, const Options& o) {
    try {
      igemm_factory().create(d, o, true, nullptr);
      return Status::kSuccess;
    } catch (const Error& e) {
      return e.status();
    }
  };
  const ConvDesc half = ConvDesc::parse("n2c64h30w30k96r3s3p1x1u1x1d1x1g1f16");
  EXPECT_EQ(status_of(half, forced), built ? Status::kUnsupportedDtype : Status::kNotSupported);
  Options fwd = forced;
  fwd.pass = Pass::kForward;
  const ConvDesc d = ConvDesc::parse("n2c64h30w30k96r3s3p1x1u1x1d1x1g1f32");
  EXPECT_EQ(status_of(d, fwd), Status::kNotSupported);
  Options small = forced;
  small.workspace_limit = 1024;
  EXPECT_EQ(status_of(d, small), built ? Status::kOutOfMemory : Status::kNotSupported);
}

}  // namespace
}  // namespace fftconv
