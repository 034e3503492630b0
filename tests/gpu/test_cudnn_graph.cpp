// The cuDNN path through cuDNN's graph API (CudnnSearch::kGraph): every pass against the fp64
// oracle, what strict fp32 admits, the calls its execution plan does not take (misaligned
// tensors, a scaled or accumulated backward filter), another thread's handle, graph capture.
#include <cuda_runtime_api.h>

#include <memory>
#include <thread>

#include "gpu_test_util.h"
#include "reference/reference.h"

namespace fftconv::gputest {
namespace {

#define REQUIRE_GPU_AND_CUDNN() \
  FFTCONV_REQUIRE_GPU();        \
  if (cudnn_algo_names(Pass::kForward).empty()) GTEST_SKIP() << "built without cuDNN"

Options graph_options(Pass pass) {
  Options o;
  o.algo = Algo::kCudnn;
  o.cudnn_search = CudnnSearch::kGraph;
  return with_pass(o, pass);
}

// Small random descriptors the fp64 oracle checks quickly: the sweeps of the other suites, with
// the graph search instead of the legacy one.
TEST(CudnnGraph, EveryPassMatchesOracle) {
  REQUIRE_GPU_AND_CUDNN();
  std::mt19937_64 gen(9101);
  int graph_plans = 0;
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    const double tol = testing::tolerance(dtype);
    for (int i = 0; i < 12; ++i) {
      const ConvDesc d = testing::random_desc(gen, dtype);
      const std::uint64_t seed = 9101000 + i;
      SCOPED_TRACE(d.to_string() + " seed " + std::to_string(seed));
      const Problem fp(d, seed, i % 2 == 0);
      const RunResult f = run_forward(fp, graph_options(Pass::kForward));
      EXPECT_TRUE(f.err.pass(tol)) << "fwd " << f.err.to_string() << "\n" << f.describe;
      const BwdProblem bp(d, seed);
      const BwdResult dx = run_dgrad(bp, graph_options(Pass::kBackwardData));
      EXPECT_TRUE(dx.err.pass(tol)) << "dgrad " << dx.err.to_string() << "\n" << dx.describe;
      const BwdResult dw = run_wgrad(bp, graph_options(Pass::kBackwardFilter));
      EXPECT_TRUE(dw.err.pass(tol)) << "wgrad " << dw.err.to_string() << "\n" << dw.describe;
      for (const PlanInfo* info : {&f.info, &dx.info, &dw.info}) {
        EXPECT_EQ(info->algo, Algo::kCudnn);
        graph_plans += info->cudnn_algo.rfind("graph ", 0) == 0;
      }
    }
  }
  // cuDNN's graph API has an engine for every one of these small problems.
  EXPECT_EQ(graph_plans, 3 * 3 * 12);
}

// Strict fp32 leaves TF32 engines out and reports the plan-time fp32 check; with TF32 allowed
// the tensor-core engines compete.
TEST(CudnnGraph, StrictFp32ChecksTheChosenEngine) {
  REQUIRE_GPU_AND_CUDNN();
  const ConvDesc d = ConvDesc::parse("n4c64h28w28k64r3s3p1x1u1x1d1x1g1f32");
  for (Pass pass : {Pass::kForward, Pass::kBackwardData, Pass::kBackwardFilter}) {
    const Plan strict(d, graph_options(pass));
    EXPECT_EQ(strict.info().cudnn_math, "fma") << strict.describe();
    EXPECT_EQ(strict.info().cudnn_algo.find("tensor_core"), std::string::npos) << strict.describe();
    EXPECT_NE(strict.describe().find("fp32 check against fp64"), std::string::npos)
        << strict.describe();
    Options tf32 = graph_options(pass);
    tf32.allow_tf32 = true;
    const Plan fast(d, tf32);
    EXPECT_EQ(fast.describe().find("fp32 check"), std::string::npos) << fast.describe();
  }
}

// Tensors one element off 16-byte alignment run the legacy algorithm the plan keeps; a backward
// filter with alpha and beta accumulates through it too. Both agree with the oracle.
TEST(CudnnGraph, CallsTheExecutionPlanDoesNotTakeRunLegacy) {
  REQUIRE_GPU_AND_CUDNN();
  const ConvDesc d = small_desc();
  const BwdProblem bp(d, 9202);
  const std::vector<float> dw0 = testing::random_values(d.w_elems(), 9203, d.dtype);
  const BwdResult acc = run_wgrad(bp, graph_options(Pass::kBackwardFilter), 0.5f, 2.0f, &dw0);
  EXPECT_TRUE(acc.err.pass(testing::tolerance(d.dtype))) << acc.err.to_string() << acc.describe;

  const Problem p(d, 9204, true);
  const Plan plan(d, graph_options(Pass::kForward));
  ASSERT_EQ(plan.info().cudnn_algo.rfind("graph ", 0), 0u) << plan.describe();
  const std::size_t es = sizeof(float);
  testing::DeviceBuffer x(es * (d.x_elems() + 1)), w(es * (d.w_elems() + 1)),
      y(es * (d.y_elems() + 1)), ws(plan.workspace_size() + 256);
  auto* xo = x.as<float>() + 1;
  auto* wo = w.as<float>() + 1;
  auto* yo = y.as<float>() + 1;
  testing::cuda_check(cudaMemcpy(xo, p.x.get(), es * d.x_elems(), cudaMemcpyDeviceToDevice), "x");
  testing::cuda_check(cudaMemcpy(wo, p.w.get(), es * d.w_elems(), cudaMemcpyDeviceToDevice), "w");
  y.poison();
  plan.forward(xo, wo, p.bias.get(), yo, ws.get(), plan.workspace_size(), nullptr);
  testing::cuda_check(cudaDeviceSynchronize(), "forward");
  std::vector<float> out(d.y_elems());
  testing::cuda_check(cudaMemcpy(out.data(), yo, es * d.y_elems(), cudaMemcpyDeviceToHost), "y");
  const testing::ErrorStats e = testing::compare(out, p.ref);
  EXPECT_TRUE(e.pass(testing::tolerance(d.dtype))) << e.to_string();
}

// A plan made on one thread runs on another (with that thread's cuDNN handle), and inside a CUDA
// graph capture.
TEST(CudnnGraph, RunsOnAnotherThreadAndInAGraph) {
  REQUIRE_GPU_AND_CUDNN();
  const ConvDesc d = small_desc();
  const Problem p(d, 9301, true);
  const Plan plan(d, graph_options(Pass::kForward));
  testing::DeviceBuffer y(sizeof(float) * d.y_elems()), ws(plan.workspace_size() + 256);
  y.poison();
  std::thread t([&] {
    plan.forward(p.x.get(), p.w.get(), p.bias.get(), y.get(), ws.get(), plan.workspace_size(),
                 nullptr);
    testing::cuda_check(cudaDeviceSynchronize(), "forward on another thread");
  });
  t.join();
  const std::vector<float> other = download(y, d.y_elems(), d.dtype);
  EXPECT_TRUE(testing::compare(other, p.ref).pass(testing::tolerance(d.dtype)));
  const std::vector<float> replayed = forward_in_graph(plan, p, p.w.get(), p.bias.get(), 2);
  EXPECT_TRUE(testing::compare(replayed, p.ref).pass(testing::tolerance(d.dtype)));
}

// A plan made on a thread that has ended (its cuDNN handle destroyed with it) runs on this one.
TEST(CudnnGraph, OutlivesTheThreadThatMadeIt) {
  REQUIRE_GPU_AND_CUDNN();
  const ConvDesc d = small_desc();
  const Problem p(d, 9302, false);
  std::unique_ptr<Plan> plan;
  std::thread maker([&] { plan = std::make_unique<Plan>(d, graph_options(Pass::kForward)); });
  maker.join();
  ASSERT_EQ(plan->info().cudnn_algo.rfind("graph ", 0), 0u) << plan->describe();
  testing::DeviceBuffer y(sizeof(float) * d.y_elems()), ws(plan->workspace_size() + 256);
  y.poison();
  plan->forward(p.x.get(), p.w.get(), nullptr, y.get(), ws.get(), plan->workspace_size(), nullptr);
  testing::cuda_check(cudaDeviceSynchronize(), "forward");
  EXPECT_TRUE(
      testing::compare(download(y, d.y_elems(), d.dtype), p.ref).pass(testing::tolerance(d.dtype)));
}

// Strict fp32 on a problem whose fp64 check would be too slow: the plan keeps the legacy
// algorithm alone and says why (nothing runs: the plan is only made).
TEST(CudnnGraph, TooLargeToCheckKeepsTheLegacyAlgorithm) {
  REQUIRE_GPU_AND_CUDNN();
  const ConvDesc d = ConvDesc::parse("n1c512h256w256k512r9s9p4x4u1x1d1x1g1f32");
  const Plan plan(d, graph_options(Pass::kForward));
  EXPECT_NE(plan.info().cudnn_algo.rfind("graph ", 0), 0u) << plan.describe();
  EXPECT_NE(plan.describe().find("graph API not used"), std::string::npos) << plan.describe();
  EXPECT_NE(plan.describe().find("2^38"), std::string::npos) << plan.describe();
}

// CudnnSearch::kAuto, the default: both searches run, the faster serves, and describe() says
// which lost and by how much; either way the result holds the dtype's tolerance. The grouped
// fp16 problem is the one whose misaligned group slices faulted before the tensors declared
// their slices' alignment.
TEST(CudnnGraph, AutoSearchKeepsTheFasterOfFindAndGraph) {
  REQUIRE_GPU_AND_CUDNN();
  EXPECT_EQ(Options{}.cudnn_search, CudnnSearch::kAuto);
  for (const char* s :
       {"n8c64h56w56k64r3s3p1x1u1x1d1x1g1f32", "n8c256h56w56k256r3s3p1x1u1x1d1x1g256f32",
        "n1c6h15w31k12r2s7p0x1u1x1d1x1g3f16", "n4c64h28w28k64r5s5p2x2u1x1d1x1g4bf16"}) {
    const ConvDesc d = ConvDesc::parse(s);
    for (Pass pass : {Pass::kForward, Pass::kBackwardData, Pass::kBackwardFilter}) {
      SCOPED_TRACE(d.to_string() + " " + pass_name(pass));
      Options o;
      o.algo = Algo::kCudnn;
      o = with_pass(o, pass);
      const double tol = testing::tolerance(d.dtype);
      RunResult r;
      if (pass == Pass::kForward) {
        r = run_forward(Problem(d, 77, true), o);
      } else {
        const BwdProblem bp(d, 77);
        const BwdResult b = pass == Pass::kBackwardData ? run_dgrad(bp, o) : run_wgrad(bp, o);
        r.err = b.err;
        r.info = b.info;
        r.describe = b.describe;
      }
      EXPECT_TRUE(r.err.pass(tol)) << r.err.to_string() << "\n" << r.describe;
      const bool graph = r.info.cudnn_algo.rfind("graph ", 0) == 0;
      EXPECT_NE(r.describe.find(graph ? "slower than the graph engine" : "graph API not used"),
                std::string::npos)
          << r.describe;
    }
  }
}

// The comparison the plan-time check uses agrees with the tests' host comparison.
TEST(CudnnGraph, DeviceComparisonMatchesHost) {
  FFTCONV_REQUIRE_GPU();
  const std::int64_t n = 100003;
  std::vector<float> y = testing::random_values(n, 9401, DType::kF32);
  std::vector<double> ref(n);
  for (std::int64_t i = 0; i < n; ++i) ref[i] = y[i] * (1.0 + 1e-6 * ((i % 7) - 3));
  y[17] = NAN;
  testing::DeviceBuffer yd = upload(y, DType::kF32), rd(sizeof(double) * n);
  rd.upload(ref.data(), sizeof(double) * n);
  const reference::DeviceErrorNorms dev =
      reference::compare_device(yd.get(), DType::kF32, rd.as<const double>(), n, nullptr);
  const testing::ErrorStats host = testing::compare(y, ref);
  EXPECT_EQ(dev.nonfinite, host.nonfinite);
  EXPECT_NEAR(dev.rel_l2, host.rel_l2, 1e-9 * host.rel_l2 + 1e-15);
  EXPECT_DOUBLE_EQ(dev.max_err, host.max_err);
}

}  // namespace
}  // namespace fftconv::gputest
