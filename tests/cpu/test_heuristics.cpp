#include <gtest/gtest.h>

#include <set>

#include "algos/cudnn/cudnn_conv.h"
#include "algos/registry.h"
#include "testing/testing.h"
#include "tuning/heuristics.h"

namespace fftconv::detail {
namespace {

std::vector<testing::ShapeRow> suite() {
  return testing::load_shapes(std::string(FFTCONV_TEST_DATA_DIR) + "/shapes/suite.csv");
}

const ConvDesc& row(const std::vector<testing::ShapeRow>& rows, const std::string& name) {
  for (const auto& r : rows)
    if (r.name == name) return r.desc;
  throw std::runtime_error("no suite row " + name);
}

constexpr int kH200Sms = 132;
constexpr std::size_t kH200Smem = 232448;  // cudaDevAttrMaxSharedMemoryPerBlockOptin, sm_90
constexpr std::size_t kSm89Smem = 101376;  // likewise, sm_86 and sm_89

TEST(Heuristics, FftSizesOfSuiteRowsAreSmoothAndExact) {
  for (const auto& r : suite()) {
    const FftGeometry g = choose_fft_geometry(r.desc);
    EXPECT_TRUE(is_smooth(g.fft_h) && is_smooth(g.fft_w)) << r.name;
    EXPECT_GE(g.fft_h, min_fft_h(r.desc)) << r.name;
    EXPECT_GE(g.fft_w, min_fft_w(r.desc)) << r.name;
    EXPECT_LE(g.fft_h, std::max(next_smooth(g.min_h), g.min_h * 13 / 10)) << r.name;
    EXPECT_LE(g.fft_w, std::max(next_smooth(g.min_w), g.min_w * 13 / 10)) << r.name;
  }
}

TEST(Heuristics, ForwardGemmProblemStridesFollowTheSpectrumLayout) {
  ConvDesc d;
  d.n = 3; d.c = 6; d.k = 4; d.groups = 2; d.h = d.w = 8; d.r = d.s = 3;
  const FftGeometry g = make_fft_geometry(d, 8, 8);  // bins = 8 * 5
  const CgemmProblem p = forward_gemm_problem(d, g);
  EXPECT_EQ(p.m, 3);
  EXPECT_EQ(p.n, 2);  // filters per group
  EXPECT_EQ(p.k, 3);  // channels per group
  EXPECT_EQ(p.bins, 40);
  EXPECT_EQ(p.groups, 2);
  EXPECT_EQ(p.a_m, 6 * 40);  // X[n][c][f]
  EXPECT_EQ(p.a_g, 3 * 40);
  EXPECT_EQ(p.b_n, 3 * 40);  // W[k][c'][f]
  EXPECT_EQ(p.b_g, 2 * 3 * 40);
  EXPECT_EQ(p.c_m, 4 * 40);  // Y[n][k][f]
  EXPECT_EQ(p.c_g, 2 * 40);
  EXPECT_FALSE(p.conj_a);
  EXPECT_TRUE(p.conj_b);
  EXPECT_DOUBLE_EQ(p.flops(), 8.0 * 3 * 2 * 3 * 40 * 2);
}

TEST(Heuristics, CatalogHasEveryFamily) {
  int regtile = 0, smem = 0, tc = 0, cublas = 0;
  bool own_first = true, seen_cublas = false;
  for (const CgemmKernel& k : cgemm_kernels()) {
    regtile += k.family == CgemmFamily::kRegTile;
    smem += k.family == CgemmFamily::kSmem;
    tc += k.family == CgemmFamily::kTensorCore;
    cublas += !k.own();
    if (!k.own()) seen_cublas = true;
    if (k.own() && seen_cublas) own_first = false;
  }
  EXPECT_GE(regtile, 4);
  EXPECT_GE(smem, 2);
  EXPECT_GE(tc, 4);
  EXPECT_EQ(cublas, 2);
  EXPECT_TRUE(own_first);
}

TEST(Heuristics, TilingListIsUniqueAndLookupWorks) {
  std::set<std::string> names;
  for (const CgemmKernel& k : cgemm_kernels()) {
    EXPECT_TRUE(names.insert(k.name).second) << k.name;
    EXPECT_EQ(&cgemm_kernel(k.name), &k);
    if (k.own()) {
      EXPECT_GE(k.tile_m, 1);
      EXPECT_GE(k.tile_n, 1);
      EXPECT_EQ(k.block_m % k.tile_m, 0);
      EXPECT_EQ(k.block_n % k.tile_n, 0);
      EXPECT_NE(k.launch, nullptr);
    }
  }
  try {
    cgemm_kernel("no_such_tiling");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::kInvalidArgument);
  }
}

TEST(Heuristics, GemmTileFitsTheProblem) {
  for (const auto& r : suite()) {
    const FftGeometry g = choose_fft_geometry(r.desc);
    const CgemmProblem p = forward_gemm_problem(r.desc, g);
    for (const std::size_t tc_smem : {std::size_t{0}, kH200Smem}) {
      const CgemmKernel& k = choose_cgemm(p, kH200Sms, tc_smem);
      // never a block more than twice the problem along a side (no wasted lanes beyond rounding)
      EXPECT_TRUE(k.own()) << r.name;
      EXPECT_LT(k.block_m, 2 * p.m + 1) << r.name;
      EXPECT_LT(k.block_n, 2 * p.n + 1) << r.name;
      if (r.desc.is_depthwise()) EXPECT_EQ(k.tile_n, 1) << r.name;
      if (tc_smem == 0) EXPECT_NE(k.family, CgemmFamily::kTensorCore) << r.name;
    }
  }
}

// Dense channels go to the tensor cores in every pass; thin and depthwise rows stay on the
// register tilings, as does every row of a device without TF32 MMA.
TEST(Heuristics, DenseChannelsGoToTensorCores) {
  const auto rows = suite();
  for (const char* name : {"multichannel_r45", "multichannel_r31"}) {
    const ConvDesc& d = row(rows, name);
    const FftGeometry g = choose_fft_geometry(d);
    for (const Pass pass : {Pass::kForward, Pass::kBackwardData, Pass::kBackwardFilter}) {
      const CgemmProblem p = gemm_problem(d, g, pass);
      EXPECT_EQ(choose_cgemm(p, kH200Sms, kH200Smem).family, CgemmFamily::kTensorCore)
          << name << " " << pass_name(pass);
      EXPECT_EQ(choose_cgemm(p, kH200Sms, 0).family, CgemmFamily::kRegTile) << name;
      // an sm_86/sm_89 block (99 KiB): only the tilings that fit
      const CgemmKernel& small = choose_cgemm(p, kH200Sms, kSm89Smem);
      EXPECT_LE(small.smem_bytes, kSm89Smem) << name << " " << small.name;
    }
  }
  for (const char* name : {"replknet_dw31_14", "landmark_batch64", "seed3_cntk_valid", "odd_rect"}) {
    const ConvDesc& d = row(rows, name);
    const CgemmProblem p = forward_gemm_problem(d, choose_fft_geometry(d));
    EXPECT_NE(choose_cgemm(p, kH200Sms, kH200Smem).family, CgemmFamily::kTensorCore) << name;
  }
}

TEST(Heuristics, AutoPrefersFftForLargeKernelsAndDirectForSmallOnes) {
  const auto rows = suite();
  for (const char* name : {"landmark_batch64", "landmark_heatmaps_dw68", "multichannel_r31",
                           "multichannel_r45", "photo_blur_rgb_2k", "slak_dw51_28"}) {
    const ConvDesc& d = row(rows, name);
    const AlgoEstimate e = compare_fft_direct(d, choose_fft_geometry(d));
    EXPECT_TRUE(e.prefer_fft) << name << ": " << e.reason;
  }
  for (const char* name : {"seed1_grouped3x3_f32", "seed1_grouped3x3_f16"}) {
    const ConvDesc& d = row(rows, name);
    const AlgoEstimate e = compare_fft_direct(d, choose_fft_geometry(d));
    EXPECT_FALSE(e.prefer_fft) << name << ": " << e.reason;
  }
}

// Thin (here depthwise) convolutions: cuDNN's backward passes cost more than its forward.
TEST(Heuristics, DirectBackwardPassesCostMoreThanForward) {
  ConvDesc d;
  d.n = 32; d.c = d.k = d.groups = 128; d.h = d.w = 56; d.r = d.s = 31; d.pad_h = d.pad_w = 15;
  const double fwd = estimate_direct_us(d, Pass::kForward);
  EXPECT_EQ(fwd, estimate_direct_us(d));
  EXPECT_GT(estimate_direct_us(d, Pass::kBackwardData), fwd);
  EXPECT_GT(estimate_direct_us(d, Pass::kBackwardFilter), estimate_direct_us(d, Pass::kBackwardData));
}

// Dense backward passes cost cuDNN about its forward (the thin rows' factors do not apply), and
// cuDNN's tensor cores make fp16 and bf16 dense convolutions from 32 channels cheaper than fp32.
TEST(Heuristics, DirectDenseBackwardAndHalfPrecision) {
  ConvDesc d = ConvDesc::parse("n8c64h56w56k64r7s7p3x3u1x1d1x1g1f32");
  EXPECT_EQ(estimate_direct_us(d, Pass::kBackwardData), estimate_direct_us(d, Pass::kForward));
  EXPECT_EQ(estimate_direct_us(d, Pass::kBackwardFilter), estimate_direct_us(d, Pass::kForward));
  const double f32 = estimate_direct_us(d);
  for (DType t : {DType::kF16, DType::kBF16}) {
    d.dtype = t;
    EXPECT_LT(estimate_direct_us(d), f32 / 3) << dtype_name(t);
  }
  // 16 channels (dilated2) and depthwise: the fp32 rate.
  for (const char* s : {"n4c16h64w64k16r15s15p14x14u1x1d2x2g1", "n8c256h56w56k256r7s7p3x3u1x1d1x1g256"}) {
    const ConvDesc a = ConvDesc::parse(std::string(s) + "f32");
    const ConvDesc b = ConvDesc::parse(std::string(s) + "f16");
    EXPECT_EQ(estimate_direct_us(a), estimate_direct_us(b)) << s;
  }
}

// Auto's first choice on the small-kernel parity set in fp16 follows the measured winner where
// the two differ by 1.3x or more (data/results/h200/2026-12-04-parity/run1-parity-ops.txt:
// F.conv2d's cuDNN against the FFT paths' times).
TEST(Heuristics, HalfPrecisionMidKernelsFollowTheParityRun) {
  Options o;
  for (Pass p : {Pass::kForward, Pass::kBackwardData, Pass::kBackwardFilter}) {
    o.pass = p;
    // cuDNN: 7x7 on 64 and 512 channels (0.053-0.53 ms against the FFT's 0.10-7.4), 5x5 on 512.
    for (const char* s : {"n8c64h56w56k64r7s7p3x3u1x1d1x1g1f16", "n4c512h56w56k512r7s7p3x3u1x1d1x1g1f16",
                          "n4c512h56w56k512r5s5p2x2u1x1d1x1g1f16"}) {
      EXPECT_EQ(detail::auto_first_choice(ConvDesc::parse(s), o), Algo::kCudnn) << s << " " << pass_name(p);
    }
  }
  // The FFT paths: depthwise 7x7 (fused: 0.054 against 0.23-0.29 ms), 15x15 on 512 channels
  // forward (3.3 against 4.4 ms).
  o.pass = Pass::kForward;
  for (const char* s : {"n8c256h56w56k256r7s7p3x3u1x1d1x1g256f16", "n4c512h56w56k512r15s15p7x7u1x1d1x1g1f16"}) {
    EXPECT_NE(detail::auto_first_choice(ConvDesc::parse(s), o), Algo::kCudnn) << s;
  }
}

// The cuDNN algorithms the searches (and Auto) leave out, on the shapes they were measured on
// and at their bounds.
TEST(CudnnRules, LeftOutAlgorithmsFollowTheirMeasurements) {
  const auto rows = suite();
  const auto large = testing::load_shapes(std::string(FFTCONV_TEST_DATA_DIR) + "/shapes/large.csv");
  const ConvDesc photo = row(rows, "photo_blur_rgb_2k");
  const int algo1 = kCudnnBwdDataAlgo1;
  // Backward data ALGO_1 on large planes with large filters: hung for minutes (H200).
  EXPECT_TRUE(cudnn_algo_known_slow(photo, Pass::kBackwardData, algo1));
  EXPECT_TRUE(cudnn_algo_known_slow(row(large, "large_4k_r63"), Pass::kBackwardData, algo1));
  EXPECT_FALSE(cudnn_algo_known_slow(photo, Pass::kBackwardData, 0));
  EXPECT_FALSE(cudnn_algo_known_slow(photo, Pass::kBackwardFilter, kCudnnBwdFilterAlgo1));
  EXPECT_FALSE(cudnn_algo_known_slow(photo, Pass::kForward, 1));
  for (const auto& r : rows) {  // the other rows keep it: small planes or small filters
    if (r.name != "photo_blur_rgb_2k") {
      EXPECT_FALSE(cudnn_algo_known_slow(r.desc, Pass::kBackwardData, algo1)) << r.name;
    }
  }
  ConvDesc edge = ConvDesc::parse("n1c1h1024w1024k1r32s32p0x0u1x1d1x1g1f32");
  EXPECT_TRUE(cudnn_algo_known_slow(edge, Pass::kBackwardData, algo1));
  edge.w = 1023;
  EXPECT_FALSE(cudnn_algo_known_slow(edge, Pass::kBackwardData, algo1));
  edge.w = 1024;
  edge.s = 31;
  EXPECT_FALSE(cudnn_algo_known_slow(edge, Pass::kBackwardData, algo1));

  // The graph API's search on the same shapes: its first engine ran minutes on the photo's
  // backward data (H100). Its forward pass and backward filter and every other row keep it.
  EXPECT_TRUE(cudnn_graph_known_slow(photo, Pass::kBackwardData));
  EXPECT_TRUE(cudnn_graph_known_slow(row(large, "large_4k_r63"), Pass::kBackwardData));
  EXPECT_FALSE(cudnn_graph_known_slow(photo, Pass::kForward));
  EXPECT_FALSE(cudnn_graph_known_slow(photo, Pass::kBackwardFilter));
  for (const auto& r : rows) {
    if (r.name != "photo_blur_rgb_2k") {
      EXPECT_FALSE(cudnn_graph_known_slow(r.desc, Pass::kBackwardData)) << r.name;
    }
  }
  EXPECT_FALSE(cudnn_graph_known_slow(edge, Pass::kBackwardData));  // 31 columns of taps
  edge.s = 32;
  EXPECT_TRUE(cudnn_graph_known_slow(edge, Pass::kBackwardData));

  // Backward filter ALGO_1 on long reductions (n * out_h * out_w terms per weight): max error
  // 1.2e-5 on seed1_grouped3x3_f32 (65536 terms); Auto leaves it out from 16384.
  const int wgrad1 = kCudnnBwdFilterAlgo1;
  EXPECT_TRUE(
      cudnn_algo_inaccurate_fp32(row(rows, "seed1_grouped3x3_f32"), Pass::kBackwardFilter, wgrad1));
  EXPECT_TRUE(cudnn_algo_inaccurate_fp32(row(rows, "strided2"), Pass::kBackwardFilter, wgrad1));
  EXPECT_FALSE(cudnn_algo_inaccurate_fp32(row(rows, "seed3_landmark_same"), Pass::kBackwardFilter,
                                          wgrad1));  // 9216 terms
  EXPECT_FALSE(
      cudnn_algo_inaccurate_fp32(row(rows, "seed1_grouped3x3_f32"), Pass::kBackwardFilter, 0));
  EXPECT_FALSE(cudnn_algo_inaccurate_fp32(row(rows, "seed1_grouped3x3_f32"), Pass::kBackwardData,
                                          kCudnnBwdDataAlgo1));
  ConvDesc terms = ConvDesc::parse("n4c1h64w64k1r3s3p1x1u1x1d1x1g1f32");  // 4 * 64 * 64 = 16384
  EXPECT_TRUE(cudnn_algo_inaccurate_fp32(terms, Pass::kBackwardFilter, wgrad1));
  terms.h = 63;
  EXPECT_FALSE(cudnn_algo_inaccurate_fp32(terms, Pass::kBackwardFilter, wgrad1));
}

}  // namespace
}  // namespace fftconv::detail
