// Run-time contract of a plan: argument errors write nothing, threads can share a plan, forward
// is deterministic and capturable in a CUDA graph, the C API runs end to end.
#include <cmath>
#include <cstring>
#include <functional>
#include <thread>

#include "fftconv/fftconv.h"
#include "gpu_test_util.h"

namespace fftconv::gputest {
namespace {

TEST(Runtime, RejectedCallsWriteNothing) {
  FFTCONV_REQUIRE_GPU();
  const ConvDesc d = small_desc();
  const Problem p(d, 11, true);
  Options o;
  o.algo = Algo::kFft;
  Plan plan(d, o);
  ASSERT_GT(plan.workspace_size(), 0u);
  testing::DeviceBuffer y(4 * d.y_elems()), ws(plan.workspace_size() + 512);
  y.poison();
  auto expect_status = [&](Status st, auto&& call) {
    try {
      call();
      ADD_FAILURE() << "accepted, expected " << status_name(st);
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), st) << e.what();
    }
    testing::cuda_check(cudaDeviceSynchronize(), "sync");
    EXPECT_TRUE(all_poison(y)) << "output written by a rejected call (" << status_name(st) << ")";
  };
  const std::size_t need = plan.workspace_size();
  expect_status(Status::kWorkspaceTooSmall,
                [&] { plan.forward(p.x.get(), p.w.get(), nullptr, y.get(), ws.get(), need - 1, nullptr); });
  expect_status(Status::kMisalignedPointer, [&] {
    plan.forward(p.x.get(), p.w.get(), nullptr, y.get(), ws.as<char>() + 64, need, nullptr);
  });
  expect_status(Status::kMisalignedPointer, [&] {
    plan.forward(p.x.as<char>() + 2, p.w.get(), nullptr, y.get(), ws.get(), need, nullptr);
  });
  expect_status(Status::kNullPointer,
                [&] { plan.forward(nullptr, p.w.get(), nullptr, y.get(), ws.get(), need, nullptr); });
  expect_status(Status::kNullPointer,
                [&] { plan.forward(p.x.get(), p.w.get(), nullptr, y.get(), nullptr, need, nullptr); });
}

TEST(Runtime, ForwardIsDeterministic) {
  FFTCONV_REQUIRE_GPU();
  const Problem p(small_desc(), 12, true);
  Options o;
  o.algo = Algo::kFft;
  const RunResult a = run_forward(p, o), b = run_forward(p, o);
  EXPECT_EQ(std::memcmp(a.y.data(), b.y.data(), a.y.size() * 4), 0);
  EXPECT_TRUE(a.err.pass(1e-5)) << a.err.to_string();
}

TEST(Runtime, ThreadsShareOnePlan) {
  FFTCONV_REQUIRE_GPU();
  const ConvDesc d = small_desc();
  const Problem p(d, 13, true);
  Options o;
  o.algo = Algo::kFft;
  const Plan plan(d, o);
  constexpr int kThreads = 4, kIters = 8;
  std::vector<std::vector<float>> results(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      cudaStream_t s;
      testing::cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
      testing::DeviceBuffer y(4 * d.y_elems()), ws(plan.workspace_size());
      for (int i = 0; i < kIters; ++i) {
        plan.forward(p.x.get(), p.w.get(), p.bias.get(), y.get(), ws.get(), ws.bytes(), s);
      }
      testing::cuda_check(cudaStreamSynchronize(s), "sync");
      results[t].resize(d.y_elems());
      y.download(results[t].data(), 4 * d.y_elems());
      cudaStreamDestroy(s);
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_TRUE(testing::compare(results[t], p.ref).pass(1e-5)) << "thread " << t;
    EXPECT_EQ(std::memcmp(results[t].data(), results[0].data(), 4 * d.y_elems()), 0);
  }
}

TEST(Runtime, ForwardCapturesInACudaGraph) {
  FFTCONV_REQUIRE_GPU();
  const ConvDesc d = small_desc();
  const Problem p(d, 14, true);
  for (Algo algo : {Algo::kFft, Algo::kAuto}) {
    Options o;
    o.algo = algo;
    const Plan plan(d, o);
    const auto err = testing::compare(forward_in_graph(plan, p, p.w.get(), p.bias.get()), p.ref);
    EXPECT_TRUE(err.pass(1e-5)) << algo_name(algo) << ": " << err.to_string();
  }
}

// The benchmark's timing helpers: a GraphSet replays what it captured, and interleaved timing
// calls every run once per round, warm-up included, and reports a time for each.
TEST(Runtime, GraphSetAndInterleavedTiming) {
  FFTCONV_REQUIRE_GPU();
  const ConvDesc d = small_desc();
  const Problem p(d, 15, true);
  Options o;
  o.algo = Algo::kFft;
  const Plan plan(d, o);
  testing::DeviceBuffer y(4 * d.y_elems()), ws(plan.workspace_size());
  cudaStream_t s;
  testing::cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
  int direct_calls = 0;
  const auto direct = [&](int) {
    ++direct_calls;
    plan.forward(p.x.get(), p.w.get(), p.bias.get(), y.get(), ws.get(), ws.bytes(), s);
  };
  {
    const testing::GraphSet graphs(direct, 2, s);
    EXPECT_EQ(direct_calls, 3);  // one direct call, then one capture per copy
    y.poison();
    graphs.launch(5, s);
    testing::cuda_check(cudaStreamSynchronize(s), "sync");
    std::vector<float> out(d.y_elems());
    y.download(out.data(), 4 * out.size());
    EXPECT_TRUE(testing::compare(out, p.ref).pass(1e-5));
  }
  std::vector<int> calls(3, 0);
  std::vector<std::function<void(int)>> runs;
  for (int v = 0; v < 3; ++v) {
    runs.emplace_back([&, v](int i) {
      ++calls[v];
      direct(i);
    });
  }
  const std::vector<double> ms = testing::interleaved_median_ms(runs, s, 2, 5);
  ASSERT_EQ(ms.size(), 3u);
  for (int v = 0; v < 3; ++v) {
    EXPECT_EQ(calls[v], 7) << v;
    EXPECT_GT(ms[v], 0.0) << v;
    EXPECT_TRUE(std::isfinite(ms[v])) << v;
  }
  cudaStreamDestroy(s);
}

TEST(Runtime, PlanReportsItsChoices) {
  FFTCONV_REQUIRE_GPU();
  const ConvDesc d = small_desc();
  Options o;
  o.algo = Algo::kFft;
  const Plan plan(d, o);
  const PlanInfo& i = plan.info();
  EXPECT_EQ(i.algo, Algo::kFft);
  EXPECT_GE(i.fft_h, d.h + d.pad_h);
  EXPECT_FALSE(i.gemm.empty());
  EXPECT_EQ(i.workspace_bytes, plan.workspace_size());
  EXPECT_NE(plan.describe().find(d.to_string()), std::string::npos);
  EXPECT_NE(plan.describe().find("fft="), std::string::npos);
}

TEST(Runtime, WorkspaceLimitIsHonoured) {
  FFTCONV_REQUIRE_GPU();
  ConvDesc d;
  d.n = 64; d.h = 96; d.w = 96; d.r = 45; d.s = 45; d.pad_h = 22; d.pad_w = 22;
  Options o;
  o.algo = Algo::kFft;
  o.workspace_limit = 1 << 20;
  try {
    Plan plan(d, o);
    FAIL() << "a 1 MiB limit cannot hold the spectra";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::kOutOfMemory);
    EXPECT_NE(std::string(e.what()).find("bytes"), std::string::npos) << e.what();
  }
  o.algo = Algo::kAuto;  // falls back to what fits: the fused FFT (its filter factors) or cuDNN
  try {
    Plan plan(d, o);
    EXPECT_NE(plan.info().algo, Algo::kFft) << plan.describe();
    EXPECT_LE(plan.workspace_size(), o.workspace_limit);
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::kNotSupported) << e.what();  // only a build without cuDNN
  }
}

// Every output reads only padding: the exact result is 0 (plus bias); the FFT path may leave
// rounding noise there, bounded far below the magnitude of a real output.
TEST(Runtime, AllPaddingOutputIsZero) {
  FFTCONV_REQUIRE_GPU();
  ConvDesc d = ConvDesc::parse("n1c12h15w2k12r1s1p1x1u2x3d1x1g3f32");
  ASSERT_FALSE(output_reads_data(d));
  const Problem p(d, 16, false);
  for (double r : p.ref) ASSERT_EQ(r, 0.0);
  for (Algo algo : {Algo::kFft, Algo::kAuto}) {
    Options o;
    o.algo = algo;
    const RunResult r = run_forward(p, o);
    float worst = 0.0f;
    for (float v : r.y) {
      ASSERT_TRUE(std::isfinite(v));
      worst = std::max(worst, std::fabs(v));
    }
    // inputs are in [-1, 1]; one output of this problem would otherwise be O(1)
    EXPECT_LE(worst, 1e-6f) << algo_name(algo) << ": " << r.describe;
  }
}

TEST(Runtime, ForcedFftSizeIsUsedAndChecked) {
  FFTCONV_REQUIRE_GPU();
  const ConvDesc d = small_desc();  // exact minimum 44x33
  const Problem p(d, 17, true);
  Options o;
  o.algo = Algo::kFft;
  o.fft_h = 45;  // odd and not the cost model's choice
  o.fft_w = 37;  // prime: cuFFT's general path
  const RunResult r = run_forward(p, o);
  EXPECT_EQ(r.info.fft_h, 45);
  EXPECT_EQ(r.info.fft_w, 37);
  EXPECT_TRUE(r.err.pass(1e-5)) << r.err.to_string();
  o.fft_h = 43;
  try {
    Plan plan(d, o);
    FAIL() << "43 is below the exact period";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("44x33"), std::string::npos) << e.what();
  }
}

TEST(Runtime, UnknownGemmKernelIsRejected) {
  FFTCONV_REQUIRE_GPU();
  Options o;
  o.gemm_kernel = "regtile_3x3";
  try {
    Plan plan(small_desc(), o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::kInvalidArgument);
  }
}

TEST(Runtime, CApiEndToEnd) {
  FFTCONV_REQUIRE_GPU();
  const ConvDesc d = small_desc();
  const Problem p(d, 15, true);
  const fftconv_conv_desc_t cd = c_desc(d);
  fftconv_plan_t plan = nullptr;
  ASSERT_EQ(fftconv_plan_create(&plan, &cd, nullptr), FFTCONV_STATUS_SUCCESS)
      << fftconv_last_error_message();
  size_t bytes = 0;
  ASSERT_EQ(fftconv_plan_workspace_size(plan, &bytes), FFTCONV_STATUS_SUCCESS);
  testing::DeviceBuffer y(4 * d.y_elems()), ws(bytes);
  y.poison();
  EXPECT_EQ(fftconv_forward(plan, p.x.get(), p.w.get(), p.bias.get(), y.get(), ws.get(), bytes - 1,
                            nullptr),
            bytes ? FFTCONV_STATUS_WORKSPACE_TOO_SMALL : FFTCONV_STATUS_SUCCESS);
  ASSERT_EQ(fftconv_forward(plan, p.x.get(), p.w.get(), p.bias.get(), y.get(), ws.get(), bytes,
                            nullptr),
            FFTCONV_STATUS_SUCCESS)
      << fftconv_last_error_message();
  testing::cuda_check(cudaDeviceSynchronize(), "sync");
  std::vector<float> out(d.y_elems());
  y.download(out.data(), 4 * out.size());
  EXPECT_TRUE(testing::compare(out, p.ref).pass(1e-5));
  EXPECT_NE(std::strstr(fftconv_plan_describe(plan), "n2c3h37w29"), nullptr);
  // A host output is refused with a status (test_pointers.cpp has the C++ cases), and the
  // context goes on working.
  std::vector<float> host_y(d.y_elems());
  EXPECT_EQ(fftconv_forward(plan, p.x.get(), p.w.get(), p.bias.get(), host_y.data(), ws.get(),
                            bytes, nullptr),
            FFTCONV_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(fftconv_last_error_message(), "y is host memory"), nullptr)
      << fftconv_last_error_message();
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(fftconv_plan_destroy(plan), FFTCONV_STATUS_SUCCESS);
}

// Calls with pointers seen before replay one CUDA graph per pointer set (Options::graph_replay):
// the same bits as a plan that never replays, over more pointer sets than a plan keeps graphs
// for, and none inside the caller's own capture.
TEST(Runtime, RepeatedPointersReplayAGraph) {
  FFTCONV_REQUIRE_GPU();
  const ConvDesc d = small_desc();
  const Problem p(d, 16, true);
  Options o;
  o.algo = Algo::kFft;
  const Plan plan(d, o);
  Options off = o;
  off.graph_replay = false;
  const Plan direct(d, off);
  cudaStream_t s;
  testing::cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
  testing::DeviceBuffer ws(plan.workspace_size()), y_direct(4 * d.y_elems());
  std::vector<float> expected(d.y_elems()), out(d.y_elems());
  for (int i = 0; i < 3; ++i) {
    direct.forward(p.x.get(), p.w.get(), p.bias.get(), y_direct.get(), ws.get(), ws.bytes(), s);
  }
  testing::cuda_check(cudaStreamSynchronize(s), "sync");
  y_direct.download(expected.data(), 4 * expected.size());
  EXPECT_EQ(direct.replay_graphs(), 0u);
  ASSERT_TRUE(testing::compare(expected, p.ref).pass(1e-5));

  constexpr int kKept = 64, kSets = kKept + 4;  // four more than the plan keeps graphs for
  std::vector<testing::DeviceBuffer> ys;
  for (int i = 0; i < kSets; ++i) ys.emplace_back(4 * d.y_elems());
  auto round = [&](int first, int last) {
    for (int i = first; i < last; ++i) {
      ys[i].poison();
      plan.forward(p.x.get(), p.w.get(), p.bias.get(), ys[i].get(), ws.get(), ws.bytes(), s);
    }
    testing::cuda_check(cudaStreamSynchronize(s), "sync");
    for (int i = first; i < last; ++i) {
      ys[i].download(out.data(), 4 * out.size());
      EXPECT_EQ(std::memcmp(out.data(), expected.data(), 4 * out.size()), 0) << "output " << i;
    }
  };
  round(0, kKept);  // first sight of each set: the stages
  EXPECT_EQ(plan.replay_graphs(), 0u);
  round(0, kKept);  // second: captured and launched
  EXPECT_EQ(plan.replay_graphs(), std::size_t(kKept));
  round(0, kKept);  // third: replayed
  round(kKept, kSets);
  round(kKept, kSets);  // four new graphs replace the least recently used
  EXPECT_EQ(plan.replay_graphs(), std::size_t(kKept));
  round(0, kSets);
  // Inside the caller's capture the stages are captured as they are.
  const auto err = testing::compare(forward_in_graph(plan, p, p.w.get(), p.bias.get(), 2), p.ref);
  EXPECT_TRUE(err.pass(1e-5)) << err.to_string();
  cudaStreamDestroy(s);
}

// cuDNN plans run every call directly: a graph captured from one would use the capturing
// thread's cuDNN handle, which ends with that thread.
TEST(Runtime, CudnnPlansRunDirectly) {
  FFTCONV_REQUIRE_GPU();
  const ConvDesc d = small_desc();
  const Problem p(d, 19, true);
  Options o;
  o.algo = Algo::kCudnn;
  const Plan plan(d, o);
  testing::DeviceBuffer ws(plan.workspace_size()), y(4 * d.y_elems());
  std::vector<float> first(d.y_elems()), out(d.y_elems());
  for (int i = 0; i < 4; ++i) {
    y.poison();
    plan.forward(p.x.get(), p.w.get(), p.bias.get(), y.get(), ws.get(), ws.bytes(), nullptr);
    testing::cuda_check(cudaDeviceSynchronize(), "sync");
    y.download((i == 0 ? first : out).data(), 4 * out.size());
    if (i > 0) EXPECT_EQ(std::memcmp(out.data(), first.data(), 4 * out.size()), 0) << "call " << i;
  }
  EXPECT_EQ(plan.replay_graphs(), 0u) << plan.describe();
  EXPECT_TRUE(testing::compare(out, p.ref).pass(1e-5)) << plan.describe();
}

// alpha and beta are part of what a backward-filter graph was captured with.
TEST(Runtime, BackwardFilterReplaysPerScale) {
  FFTCONV_REQUIRE_GPU();
  const ConvDesc d = small_desc();
  const BwdProblem p(d, 17);
  Options o = with_pass(Options{}, Pass::kBackwardFilter);
  o.algo = Algo::kFft;
  const Plan plan(d, o);
  Options off = o;
  off.graph_replay = false;
  const Plan direct(d, off);
  testing::DeviceBuffer ws(plan.workspace_size()), dw(4 * d.w_elems()), dw_direct(4 * d.w_elems());
  std::vector<float> got(d.w_elems()), want(d.w_elems());
  for (const float alpha : {1.0f, 2.0f, 0.5f}) {
    for (int i = 0; i < 3; ++i) {
      plan.backward_filter(p.x.get(), p.dy.get(), dw.get(), ws.get(), ws.bytes(), nullptr, alpha,
                           0.0f);
    }
    direct.backward_filter(p.x.get(), p.dy.get(), dw_direct.get(), ws.get(), ws.bytes(), nullptr,
                           alpha, 0.0f);
    testing::cuda_check(cudaDeviceSynchronize(), "sync");
    dw.download(got.data(), 4 * got.size());
    dw_direct.download(want.data(), 4 * want.size());
    EXPECT_EQ(std::memcmp(got.data(), want.data(), 4 * got.size()), 0) << "alpha " << alpha;
  }
  EXPECT_EQ(plan.replay_graphs(), 3u);
  // beta = 1 accumulates into dw (read when the graph runs, not when it was captured): the same
  // three calls on both plans, from the same dw, give the same bits.
  for (int i = 0; i < 3; ++i) {
    plan.backward_filter(p.x.get(), p.dy.get(), dw.get(), ws.get(), ws.bytes(), nullptr, 1.0f,
                         1.0f);
    direct.backward_filter(p.x.get(), p.dy.get(), dw_direct.get(), ws.get(), ws.bytes(), nullptr,
                           1.0f, 1.0f);
  }
  testing::cuda_check(cudaDeviceSynchronize(), "sync");
  dw.download(got.data(), 4 * got.size());
  dw_direct.download(want.data(), 4 * want.size());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), 4 * got.size()), 0) << "beta 1";
  EXPECT_EQ(plan.replay_graphs(), 4u);
}

}  // namespace
}  // namespace fftconv::gputest
