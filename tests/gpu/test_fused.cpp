// The fused FFT path (Algo::kFftFused) against the fp64 device oracle: random depthwise and
// single-channel descriptors in every dtype for all three passes (padding, stride, dilation,
// rectangular kernels, odd plane counts; the backward filter with alpha, beta and fp32 dw),
// every covered FFT size, kept filters and CUDA graph capture.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "fused/fused_conv.h"
#include "geometry/fft_geometry.h"
#include "gpu_test_util.h"

namespace fftconv::gputest {
namespace {

// A random descriptor with one channel per group whose fused FFT fits (up to 128 per axis).
ConvDesc random_fused_desc(std::mt19937_64& gen, DType dtype, bool wgrad = false) {
  auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return lo + static_cast<std::int64_t>(gen() % static_cast<std::uint64_t>(hi - lo + 1));
  };
  for (;;) {
    ConvDesc d;
    d.dtype = dtype;
    d.n = pick(1, 3);
    d.c = d.k = d.groups = pick(1, 5);
    d.h = pick(1, 90);
    d.w = pick(1, 90);
    d.r = pick(1, 31);
    d.s = gen() % 4 == 0 ? d.r : pick(1, 31);
    d.dil_h = gen() % 5 == 0 ? pick(2, 3) : 1;
    d.dil_w = gen() % 5 == 0 ? pick(2, 3) : 1;
    d.stride_h = gen() % 4 == 0 ? pick(2, 3) : 1;
    d.stride_w = gen() % 4 == 0 ? pick(2, 3) : 1;
    d.pad_h = pick(0, d.eff_r() - 1 + (gen() % 6 == 0 ? 4 : 0));
    d.pad_w = pick(0, d.eff_s() - 1 + (gen() % 6 == 0 ? 4 : 0));
    if (d.h + 2 * d.pad_h < d.eff_r() || d.w + 2 * d.pad_w < d.eff_s()) continue;
    if (!output_reads_data(d)) continue;
    if (detail::min_fft_h(d) > 128 || detail::min_fft_w(d) > 128) continue;
    if (wgrad && detail::fused_wgrad_size(d) < 0) continue;
    return d;
  }
}

void sweep(Pass pass, DType dtype, int cases, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  Options o;
  o.algo = Algo::kFftFused;
  o.pass = pass;
  int failures = 0;
  double worst = 0.0;
  std::map<std::int64_t, int> per_size;  // cases per FFT size the plans ran
  for (int i = 0; i < cases; ++i) {
    const ConvDesc d = random_fused_desc(gen, dtype, pass == Pass::kBackwardFilter);
    const std::uint64_t case_seed = seed * 1000 + i;
    const bool keep = i % 3 == 0;
    try {
      testing::ErrorStats err;
      std::string plan;
      if (pass == Pass::kForward) {
        const Problem p(d, case_seed, i % 2 == 0);
        const RunResult r = run_forward(p, o);
        err = r.err;
        plan = r.describe;
        EXPECT_EQ(r.info.algo, Algo::kFftFused) << plan;
        ++per_size[r.info.fft_h];
      } else if (pass == Pass::kBackwardFilter) {
        // Every third case accumulates (alpha, beta), every other half-precision one writes an
        // fp32 dw.
        const BwdProblem p(d, case_seed);
        Options ow = o;
        ow.dw_fp32 = dtype != DType::kF32 && i % 2 == 1;
        const DType out_dtype = ow.dw_fp32 ? DType::kF32 : dtype;
        const std::vector<float> dw0 =
            testing::random_values(d.w_elems(), case_seed + 7, out_dtype);
        const BwdResult r = keep ? run_wgrad(p, ow, 0.5f, -1.25f, &dw0) : run_wgrad(p, ow);
        err = r.err;
        plan = r.describe;
        EXPECT_EQ(r.info.algo, Algo::kFftFused) << plan;
        ++per_size[r.info.fft_h];
      } else {
        const BwdProblem p(d, case_seed);
        const BwdResult r = run_dgrad(p, o, keep);
        err = r.err;
        plan = r.describe;
        EXPECT_EQ(r.info.algo, Algo::kFftFused) << plan;
        ++per_size[r.info.fft_h];
      }
      worst = std::max(worst, err.rel_l2);
      if (!err.pass(testing::tolerance(dtype))) {
        ++failures;
        ADD_FAILURE() << pass_name(pass) << " " << d.to_string() << " seed " << case_seed << ": "
                      << err.to_string() << " plan: " << plan;
      }
    } catch (const Error& e) {
      ++failures;
      ADD_FAILURE() << pass_name(pass) << " " << d.to_string() << ": " << e.what();
    }
  }
  std::string sizes;
  for (const auto& [size, count] : per_size) {
    sizes += (sizes.empty() ? "" : ", ") + std::to_string(size) + ": " + std::to_string(count);
  }
  std::printf(
      "[ sweep    ] %s %s fft_fused: %d cases (per size F: %s), %d failures, worst "
      "rel_l2 %.3e\n",
      pass_name(pass), dtype_name(dtype), cases, sizes.c_str(), failures, worst);
  EXPECT_EQ(failures, 0);
}

TEST(FusedSweep, ForwardFp32) {
  FFTCONV_REQUIRE_GPU();
  sweep(Pass::kForward, DType::kF32, 150, 71);
}
TEST(FusedSweep, ForwardFp16) {
  FFTCONV_REQUIRE_GPU();
  sweep(Pass::kForward, DType::kF16, 50, 72);
}
TEST(FusedSweep, ForwardBf16) {
  FFTCONV_REQUIRE_GPU();
  sweep(Pass::kForward, DType::kBF16, 50, 73);
}
TEST(FusedSweep, BackwardDataFp32) {
  FFTCONV_REQUIRE_GPU();
  sweep(Pass::kBackwardData, DType::kF32, 150, 74);
}
TEST(FusedSweep, BackwardDataFp16) {
  FFTCONV_REQUIRE_GPU();
  sweep(Pass::kBackwardData, DType::kF16, 50, 75);
}
TEST(FusedSweep, BackwardDataBf16) {
  FFTCONV_REQUIRE_GPU();
  sweep(Pass::kBackwardData, DType::kBF16, 50, 76);
}

TEST(FusedSweep, BackwardFilterFp32) {
  FFTCONV_REQUIRE_GPU();
  sweep(Pass::kBackwardFilter, DType::kF32, 150, 77);
}
TEST(FusedSweep, BackwardFilterFp16) {
  FFTCONV_REQUIRE_GPU();
  sweep(Pass::kBackwardFilter, DType::kF16, 50, 78);
}
TEST(FusedSweep, BackwardFilterBf16) {
  FFTCONV_REQUIRE_GPU();
  sweep(Pass::kBackwardFilter, DType::kBF16, 50, 79);
}

// Every FFT size the fused path covers (kFusedSizes): an unpadded input of a x b of those sizes
// with a small kernel has exactly that minimum period on each axis, and the plan, forced to the
// larger (rather than tiles, which its estimate may prefer for so few planes), takes it for both.
// Each size once against each of a few others.
TEST(Fused, EveryCoveredSize) {
  FFTCONV_REQUIRE_GPU();
  const std::vector<std::int64_t> sizes(std::begin(detail::kFusedSizes),
                                        std::end(detail::kFusedSizes));
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    for (std::size_t j : {std::size_t{0}, i, (i + 5) % sizes.size()}) {
      ConvDesc d;
      d.n = 1;
      d.c = d.k = d.groups = 5;  // an odd plane count: the last block is partly idle
      d.h = sizes[i];
      d.w = sizes[j];
      d.r = 5;
      d.s = 3;
      Options o;
      o.algo = Algo::kFftFused;
      o.fft_h = o.fft_w = std::max(d.h, d.w);
      const Problem p(d, 500 + 10 * i + j, true);
      const RunResult r = run_forward(p, o);
      // One size for both axes: the larger one.
      EXPECT_EQ(r.info.fft_h, std::max(d.h, d.w)) << r.describe;
      EXPECT_EQ(r.info.fft_w, std::max(d.h, d.w)) << r.describe;
      EXPECT_TRUE(r.err.pass(1e-5)) << d.to_string() << ": " << r.err.to_string();
    }
  }
}

// Tiles (forced by the FFT size, below the plane's period): random descriptors of every pass
// (backward data at unit stride), fp32, against the oracle; the landmark rows' 2 x 2 tiles of
// 96x96.
TEST(Fused, TilesMatchOracle) {
  FFTCONV_REQUIRE_GPU();
  std::mt19937_64 gen(97);
  int checked = 0;
  double worst = 0.0;
  for (int i = 0; checked < 60 && i < 6000; ++i) {
    const Pass pass = i % 3 == 0   ? Pass::kForward
                      : i % 3 == 1 ? Pass::kBackwardData
                                   : Pass::kBackwardFilter;
    const bool wgrad = pass == Pass::kBackwardFilter;
    const ConvDesc d = random_fused_desc(gen, DType::kF32, wgrad);
    const int whole = wgrad ? detail::fused_wgrad_size(d) : detail::fused_size(d);
    std::vector<int> sizes;
    for (const int f : detail::kFusedSizes) {
      int th = 0, tw = 0;
      if (f < whole && detail::fused_tiles(d, pass, f, &th, &tw)) {
        sizes.push_back(f);  // one tile too
      }
    }
    if (sizes.empty()) continue;
    Options o;
    o.algo = Algo::kFftFused;
    o.fft_h = o.fft_w = sizes[gen() % sizes.size()];
    testing::ErrorStats err;
    std::string describe;
    if (pass == Pass::kForward) {
      const RunResult r = run_forward(Problem(d, 700 + i, i % 3 == 0), o);
      err = r.err;
      describe = r.describe;
    } else if (pass == Pass::kBackwardData) {
      const BwdResult r = run_dgrad(BwdProblem(d, 700 + i), with_pass(o, pass));
      err = r.err;
      describe = r.describe;
    } else {  // every other case accumulates into dw
      const BwdProblem p(d, 700 + i);
      const std::vector<float> dw0 = testing::random_values(d.w_elems(), 800 + i, DType::kF32);
      const BwdResult r = i % 2 ? run_wgrad(p, o, 0.5f, -1.25f, &dw0) : run_wgrad(p, o);
      err = r.err;
      describe = r.describe;
      EXPECT_NE(describe.find("tiles a plane"), std::string::npos) << describe;
    }
    worst = std::max(worst, err.rel_l2);
    EXPECT_TRUE(err.pass(1e-5)) << pass_name(pass) << " " << describe << ": " << err.to_string();
    ++checked;
  }
  EXPECT_EQ(checked, 60);
  std::printf("[ sweep    ] fused tiles: %d cases, worst rel_l2 %.3e\n", checked, worst);
  const ConvDesc landmark = ConvDesc::parse("n64c1h96w96k1r45s45p22x22u1x1d1x1g1f32");
  Options o;
  o.algo = Algo::kFftFused;
  const RunResult r = run_forward(Problem(landmark, 98, true), o);
  EXPECT_EQ(r.info.fft_h, 96) << r.describe;  // Auto's tiles, by estimate
  EXPECT_EQ(r.info.tiles_h * r.info.tiles_w, 4) << r.describe;
  EXPECT_TRUE(r.err.pass(1e-5)) << r.err.to_string();
}

// The landmark shapes: a 45x45 kernel, same padding, on 96x96 planes: forward and backward data
// in 2 x 2 tiles of 96x96 (Auto's choice for one or 64 planes), the backward filter whole
// (128x128) and, forced, in 2 x 2 tiles of 96x96 (a tile of dy and its window of x a pair).
TEST(Fused, LandmarkShapes) {
  FFTCONV_REQUIRE_GPU();
  for (std::int64_t planes : {1, 64}) {
    ConvDesc d;
    d.n = planes;
    d.h = d.w = 96;
    d.r = d.s = 45;
    d.pad_h = d.pad_w = 22;
    Options o;
    o.algo = Algo::kFftFused;
    const Problem p(d, 900 + planes, true);
    const RunResult r = run_forward(p, o);
    EXPECT_EQ(r.info.fft_h, 96) << r.describe;
    EXPECT_EQ(r.info.tiles_h * r.info.tiles_w, 4) << r.describe;
    EXPECT_TRUE(r.err.pass(1e-5)) << d.to_string() << ": " << r.err.to_string();
    const BwdProblem q(d, 950 + planes);
    const BwdResult b = run_dgrad(q, o);
    EXPECT_EQ(b.info.tiles_h * b.info.tiles_w, 4) << b.describe;
    EXPECT_TRUE(b.err.pass(1e-5)) << d.to_string() << " dgrad: " << b.err.to_string();
    const BwdResult w = run_wgrad(q, o);
    EXPECT_EQ(w.info.fft_h, 128) << w.describe;
    EXPECT_TRUE(w.err.pass(1e-5)) << d.to_string() << " wgrad: " << w.err.to_string();
    Options forced = o;
    forced.fft_h = forced.fft_w = 96;
    const BwdResult t = run_wgrad(q, forced);
    EXPECT_EQ(t.info.fft_h, 96) << t.describe;
    EXPECT_EQ(t.info.tiles_h * t.info.tiles_w, 4) << t.describe;
    EXPECT_TRUE(t.err.pass(1e-5)) << d.to_string() << " tiled wgrad: " << t.err.to_string();
  }
}

// The backward filter in tiles with several pairs a slot: 11 images of 64 channels in 3 x 3 tiles
// of 16x16 make 99 pairs a channel, two a slot on 132 SMs and one in the last slice; fp32, and
// fp16 with an fp32 dw, accumulated with alpha and beta.
TEST(Fused, TiledBackwardFilterSlotsOfSeveralPairs) {
  FFTCONV_REQUIRE_GPU();
  for (DType dtype : {DType::kF32, DType::kF16}) {
    ConvDesc d = ConvDesc::parse("n11c64h30w30k64r5s5p2x2u1x1d1x1g64f32");
    d.dtype = dtype;
    Options o;
    o.algo = Algo::kFftFused;
    o.fft_h = o.fft_w = 16;
    o.dw_fp32 = dtype != DType::kF32;
    const BwdProblem p(d, 971);
    const std::vector<float> dw0 = testing::random_values(d.w_elems(), 972, DType::kF32);
    const BwdResult r = run_wgrad(p, o, 0.5f, 2.0f, &dw0);
    EXPECT_NE(r.describe.find("3x3 tiles a plane"), std::string::npos) << r.describe;
    EXPECT_NE(r.describe.find("tiles per channel"), std::string::npos) << r.describe;
    EXPECT_TRUE(r.err.pass(testing::tolerance(dtype))) << r.describe << ": " << r.err.to_string();
  }
}

// A batch sliced into one image a slot (5 images, 3 channels: every slot's window a partial),
// accumulated into dw with alpha and beta, and captured in a CUDA graph.
TEST(Fused, BackwardFilterSlicesSumInOrder) {
  FFTCONV_REQUIRE_GPU();
  const ConvDesc d = ConvDesc::parse("n5c3h20w17k3r7s9p3x4u1x1d1x1g3f32");
  Options o;
  o.algo = Algo::kFftFused;
  const BwdProblem p(d, 961);
  const BwdResult plain = run_wgrad(p, o);
  EXPECT_NE(plain.describe.find("5 slices"), std::string::npos) << plain.describe;
  EXPECT_TRUE(plain.err.pass(1e-5)) << plain.err.to_string();
  const std::vector<float> dw0 = testing::random_values(d.w_elems(), 962, DType::kF32);
  const BwdResult acc = run_wgrad(p, o, 2.0f, 0.5f, &dw0);
  EXPECT_TRUE(acc.err.pass(1e-5)) << acc.err.to_string();

  Plan plan(d, with_pass(o, Pass::kBackwardFilter));
  testing::DeviceBuffer dw(4 * d.w_elems()), ws(plan.workspace_size());
  dw.poison();
  cudaStream_t s;
  testing::cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
  cudaGraph_t graph;
  testing::cuda_check(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), "capture");
  plan.backward_filter(p.x.get(), p.dy.get(), dw.get(), ws.get(), ws.bytes(), s);
  testing::cuda_check(cudaStreamEndCapture(s, &graph), "end capture");
  cudaGraphExec_t exec;
  testing::cuda_check(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
  for (int i = 0; i < 2; ++i) testing::cuda_check(cudaGraphLaunch(exec, s), "launch");
  testing::cuda_check(cudaStreamSynchronize(s), "replay");
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(s);
  EXPECT_TRUE(testing::compare(download(dw, d.w_elems(), DType::kF32), p.ref_dw).pass(1e-5));
}

// The depthwise rows of the suite, backward filter, as a network's training step runs them
// (the batch sliced across the SMs, the slices' windows summed): FFT sizes 128, 32, 64 and 72.
TEST(Fused, BackwardFilterDepthwiseRows) {
  FFTCONV_REQUIRE_GPU();
  for (const char* s : {"n32c68h96w96k68r45s45p22x22u1x1d1x1g68f32",
                        "n32c512h14w14k512r31s31p15x15u1x1d1x1g512f32",
                        "n8c256h28w28k256r51s51p25x25u1x1d1x1g256f32",
                        "n4c128h56w56k128r31s31p15x15u1x1d1x1g128f32"}) {
    const ConvDesc d = ConvDesc::parse(s);
    Options o;
    o.algo = Algo::kFftFused;
    const BwdProblem p(d, 960);
    const BwdResult r = run_wgrad(p, o);
    EXPECT_EQ(r.info.algo, Algo::kFftFused) << r.describe;
    EXPECT_TRUE(r.err.pass(1e-5)) << s << ": " << r.err.to_string() << " " << r.describe;
  }
}

TEST(Fused, KeptFilterMatchesPerCall) {
  FFTCONV_REQUIRE_GPU();
  ConvDesc d;
  d.n = 2;
  d.c = d.k = d.groups = 7;
  d.h = 28;
  d.w = 31;
  d.r = d.s = 13;
  d.pad_h = d.pad_w = 6;
  const Problem p(d, 31, true);
  Options o;
  o.algo = Algo::kFftFused;
  Plan plan(d, o);
  testing::DeviceBuffer y(4 * d.y_elems()), ws(plan.workspace_size());
  plan.set_filter(p.w.get(), nullptr);
  y.poison();
  plan.forward(p.x.get(), nullptr, p.bias.get(), y.get(), ws.get(), ws.bytes(), nullptr);
  testing::cuda_check(cudaDeviceSynchronize(), "kept forward");
  std::vector<float> out(d.y_elems());
  y.download(out.data(), 4 * out.size());
  EXPECT_TRUE(testing::compare(out, p.ref).pass(1e-5));
  EXPECT_GT(plan.filter_bytes(), 0u);
}

// Per-call filters that change from call to call on one plan, workspace and stream, with no
// synchronisation between the calls: each convolution kernel, which overlaps its filter kernel
// (programmatic dependent launch), must read the spectra of its own call's filter, not the
// previous call's still in the workspace. One 128x128 filter is one block of the filter kernel,
// the longest it runs; 64 planes and 96x96 planes besides; forward and backward data, fp32 and
// fp16 (whose loads before the wait differ), on a stream of the test's own.
TEST(Fused, PerCallFiltersChangingBetweenCalls) {
  FFTCONV_REQUIRE_GPU();
  cudaStream_t stream;
  testing::cuda_check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  for (const char* s : {"n64c1h96w96k1r45s45p22x22u1x1d1x1g1f32",
                        "n2c8h56w56k8r31s31p15x15u1x1d1x1g8f32",
                        "n64c1h96w96k1r45s45p22x22u1x1d1x1g1f16"}) {
    const ConvDesc d = ConvDesc::parse(s);
    const double tol = testing::tolerance(d.dtype);
    for (Pass pass : {Pass::kForward, Pass::kBackwardData}) {
      const bool fwd = pass == Pass::kForward;
      // Two sets of inputs: the forward pass's (x, w) and the backward pass's (dy, w).
      const Problem fa(d, 71, false), fb(d, 72, false);
      const BwdProblem ba(d, 71), bb(d, 72);
      Options o;
      o.algo = Algo::kFftFused;
      o.pass = pass;
      o.graph_replay = false;  // each call enqueued as it comes
      Plan plan(d, o);
      testing::DeviceBuffer ws(plan.workspace_size());
      const int order[] = {0, 1, 0, 1, 1, 0};
      const std::int64_t elems = fwd ? d.y_elems() : d.x_elems();
      std::vector<testing::DeviceBuffer> outs;
      outs.reserve(std::size(order));
      for (std::size_t i = 0; i < std::size(order); ++i) {
        outs.emplace_back(dtype_size(d.dtype) * elems);
        outs.back().poison();
      }
      testing::cuda_check(cudaDeviceSynchronize(), "poison");
      for (std::size_t i = 0; i < outs.size(); ++i) {
        if (fwd) {
          const Problem& p = order[i] ? fb : fa;
          plan.forward(p.x.get(), p.w.get(), nullptr, outs[i].get(), ws.get(), ws.bytes(), stream);
        } else {
          const BwdProblem& p = order[i] ? bb : ba;
          plan.backward_data(p.dy.get(), p.w.get(), outs[i].get(), ws.get(), ws.bytes(), stream);
        }
      }
      testing::cuda_check(cudaStreamSynchronize(stream), "calls");
      for (std::size_t i = 0; i < outs.size(); ++i) {
        const std::vector<double>& ref =
            fwd ? (order[i] ? fb : fa).ref : (order[i] ? bb : ba).ref_dx;
        const testing::ErrorStats e = testing::compare(download(outs[i], elems, d.dtype), ref);
        EXPECT_TRUE(e.pass(tol)) << s << " " << pass_name(pass) << " call " << i << ": "
                                 << e.to_string();
      }
    }
  }
  cudaStreamDestroy(stream);
}

TEST(Fused, CapturesInACudaGraph) {
  FFTCONV_REQUIRE_GPU();
  ConvDesc d;
  d.n = 3;
  d.c = d.k = d.groups = 4;
  d.h = d.w = 14;
  d.r = d.s = 31;
  d.pad_h = d.pad_w = 15;
  const Problem p(d, 15, true);
  Options o;
  o.algo = Algo::kFftFused;
  const Plan plan(d, o);
  const auto out = forward_in_graph(plan, p, p.w.get(), p.bias.get(), /*replays=*/3);
  EXPECT_TRUE(testing::compare(out, p.ref).pass(1e-5));
}

TEST(Fused, RejectsWhatItDoesNotServe) {
  FFTCONV_REQUIRE_GPU();
  ConvDesc dense;
  dense.c = 2;
  dense.h = dense.w = 20;
  dense.r = dense.s = 5;
  Options o;
  o.algo = Algo::kFftFused;
  EXPECT_THROW(Plan(dense, o), Error);
  ConvDesc big;
  big.h = big.w = 200;
  big.r = big.s = 9;
  EXPECT_THROW(Plan(big, o), Error);
  o.pass = Pass::kBackwardFilter;
  EXPECT_THROW(Plan(dense, o), Error);
  ConvDesc wide;  // the correlation's period: 120 + 10 rows, over 128
  wide.h = wide.w = 120;
  wide.r = wide.s = 21;
  wide.pad_h = wide.pad_w = 10;
  EXPECT_THROW(Plan(wide, o), Error);
}

}  // namespace
}  // namespace fftconv::gputest
