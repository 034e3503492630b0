#include "gpu_test_util.h"

#include <filesystem>

#include "reference/reference.h"

namespace fftconv::gputest {

bool all_poison(const testing::DeviceBuffer& b) {
  std::vector<unsigned char> host(b.bytes());
  b.download(host.data(), host.size());
  for (unsigned char c : host)
    if (c != 0xFF) return false;
  return true;
}

ConvDesc small_desc() {
  ConvDesc d;
  d.n = 2;
  d.c = 3;
  d.h = 37;
  d.w = 29;
  d.k = 4;
  d.r = 15;
  d.s = 9;
  d.pad_h = 7;
  d.pad_w = 4;
  return d;
}

Problem::Problem(const ConvDesc& d, std::uint64_t s, bool bias_on)
    : Problem(d, s, bias_on, testing::random_values(d.w_elems(), s + 1, d.dtype)) {}

Problem::Problem(const ConvDesc& d, std::uint64_t s, bool bias_on, const std::vector<float>& wv)
    : desc(d), seed(s), with_bias(bias_on) {
  const auto xv = testing::random_values(d.x_elems(), seed, d.dtype);
  const auto bv = testing::random_values(d.k, seed + 2, d.dtype);
  x = upload(xv, d.dtype);
  w = upload(wv, d.dtype);
  x32 = upload(xv, DType::kF32);
  w32 = upload(wv, DType::kF32);
  if (with_bias) {
    bias = upload(bv, d.dtype);
    bias32 = upload(bv, DType::kF32);
  }
  testing::DeviceBuffer ref_dev(sizeof(double) * d.y_elems());
  reference::conv2d_forward_device(d, x32.as<float>(), w32.as<float>(),
                                   with_bias ? bias32.as<float>() : nullptr, ref_dev.as<double>(),
                                   nullptr);
  testing::cuda_check(cudaDeviceSynchronize(), "oracle");
  ref.resize(d.y_elems());
  ref_dev.download(ref.data(), ref.size() * sizeof(double));
}

RunResult run_forward(const Problem& p, const Options& options, cudaStream_t stream) {
  const ConvDesc& d = p.desc;
  Plan plan(d, options);
  RunResult r;
  r.describe = plan.describe();
  r.info = plan.info();
  testing::DeviceBuffer y(dtype_size(d.dtype) * d.y_elems());
  y.poison();
  testing::DeviceBuffer ws(plan.workspace_size());
  plan.forward(p.x.get(), p.w.get(), p.with_bias ? p.bias.get() : nullptr, y.get(), ws.get(),
               ws.bytes(), stream);
  testing::cuda_check(cudaStreamSynchronize(stream), "forward");
  testing::cuda_check(cudaGetLastError(), "forward");
  std::vector<unsigned char> host(y.bytes());
  y.download(host.data(), host.size());
  r.y = testing::decode(host.data(), d.y_elems(), d.dtype);
  r.err = testing::compare(r.y, p.ref);
  return r;
}

BwdProblem::BwdProblem(const ConvDesc& d, std::uint64_t s)
    : BwdProblem(d, s, testing::random_values(d.w_elems(), s + 1, d.dtype)) {}

BwdProblem::BwdProblem(const ConvDesc& d, std::uint64_t s, const std::vector<float>& w_values)
    : desc(d), seed(s), wv(w_values) {
  xv = testing::random_values(d.x_elems(), seed, d.dtype);
  dyv = testing::random_values(d.y_elems(), seed + 2, d.dtype);
  x = upload(xv, d.dtype);
  w = upload(wv, d.dtype);
  dy = upload(dyv, d.dtype);
  testing::DeviceBuffer x32 = upload(xv, DType::kF32), w32 = upload(wv, DType::kF32),
                        dy32 = upload(dyv, DType::kF32);
  testing::DeviceBuffer dx64(sizeof(double) * d.x_elems()), dw64(sizeof(double) * d.w_elems());
  reference::conv2d_backward_data_device(d, dy32.as<float>(), w32.as<float>(), dx64.as<double>(),
                                         nullptr);
  reference::conv2d_backward_filter_device(d, x32.as<float>(), dy32.as<float>(), dw64.as<double>(),
                                           nullptr);
  testing::cuda_check(cudaDeviceSynchronize(), "backward oracles");
  ref_dx = download_f64(dx64, d.x_elems());
  ref_dw = download_f64(dw64, d.w_elems());
}

Options with_pass(Options o, Pass pass) {
  o.pass = pass;
  return o;
}

BwdResult run_dgrad(const BwdProblem& p, const Options& options, bool keep_filter) {
  const ConvDesc& d = p.desc;
  Plan plan(d, with_pass(options, Pass::kBackwardData));
  testing::DeviceBuffer dx(dtype_size(d.dtype) * d.x_elems()), ws(plan.workspace_size());
  dx.poison();
  if (keep_filter) plan.set_filter(p.w.get(), nullptr);
  plan.backward_data(p.dy.get(), keep_filter ? nullptr : p.w.get(), dx.get(), ws.get(), ws.bytes(),
                     nullptr);
  testing::cuda_check(cudaDeviceSynchronize(), "backward_data");
  BwdResult r{{}, plan.describe(), plan.info(), download(dx, d.x_elems(), d.dtype)};
  r.err = testing::compare(r.out, p.ref_dx);
  return r;
}

BwdResult run_wgrad(const BwdProblem& p, const Options& options, float alpha, float beta,
                    const std::vector<float>* dw0) {
  const ConvDesc& d = p.desc;
  const Options o = with_pass(options, Pass::kBackwardFilter);
  const DType out_dtype = o.dw_fp32 ? DType::kF32 : d.dtype;
  Plan plan(d, o);
  testing::DeviceBuffer dw, ws(plan.workspace_size());
  if (beta != 0.0f) {
    dw = upload(*dw0, out_dtype);
  } else {
    dw = testing::DeviceBuffer(dtype_size(out_dtype) * d.w_elems());
    dw.poison();
  }
  plan.backward_filter(p.x.get(), p.dy.get(), dw.get(), ws.get(), ws.bytes(), nullptr, alpha, beta);
  testing::cuda_check(cudaDeviceSynchronize(), "backward_filter");
  BwdResult r{{}, plan.describe(), plan.info(), download(dw, d.w_elems(), out_dtype)};
  std::vector<double> ref(p.ref_dw.size());
  for (std::size_t i = 0; i < ref.size(); ++i) {
    ref[i] = alpha * p.ref_dw[i] + (beta != 0.0f ? double(beta) * (*dw0)[i] : 0.0);
  }
  r.err = testing::compare(r.out, ref);
  return r;
}

void backward_sweep(std::uint64_t seed, const Options& options, const PlanCheck& check) {
  std::mt19937_64 gen(seed);
  for (const DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    const int count = dtype == DType::kF32 ? 20 : 6;
    testing::RandomDescOptions shape;
    shape.dtype = dtype;
    for (int i = 0; i < count; ++i) {
      const ConvDesc d = testing::random_desc(gen, shape);
      const BwdProblem p(d, seed * 1000 + i);
      const double tol = testing::tolerance(dtype);
      for (const bool keep : {false, true}) {
        const BwdResult dx = run_dgrad(p, options, keep);
        check(d, dx.describe, dx.info);
        EXPECT_TRUE(dx.err.pass(tol)) << "dgrad keep " << keep << " " << d.to_string() << ": "
                                      << dx.err.to_string() << " plan: " << dx.describe;
      }
      const std::vector<float> dw0 =
          testing::random_values(d.w_elems(), seed * 1000 + 500 + i, dtype);
      const float beta = i % 2 ? 0.25f : 0.0f;
      const BwdResult dw = run_wgrad(p, options, 0.5f, beta, &dw0);
      check(d, dw.describe, dw.info);
      EXPECT_TRUE(dw.err.pass(tol)) << "wgrad beta " << beta << " " << d.to_string() << ": "
                                    << dw.err.to_string() << " plan: " << dw.describe;
    }
  }
}

std::vector<float> forward_in_graph(const Plan& plan, const Problem& p, const void* w,
                                    const void* bias, int replays, cudaStream_t s) {
  const ConvDesc& d = p.desc;
  cudaStream_t own = nullptr;
  if (!s) {
    testing::cuda_check(cudaStreamCreateWithFlags(&own, cudaStreamNonBlocking), "stream");
    s = own;
  }
  testing::DeviceBuffer y(4 * d.y_elems()), ws(plan.workspace_size());
  y.poison();
  cudaGraph_t graph;
  testing::cuda_check(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), "capture");
  plan.forward(p.x.get(), w, bias, y.get(), ws.get(), ws.bytes(), s);
  testing::cuda_check(cudaStreamEndCapture(s, &graph), "end capture");
  cudaGraphExec_t exec;
  testing::cuda_check(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
  for (int i = 0; i < replays; ++i) testing::cuda_check(cudaGraphLaunch(exec, s), "launch");
  testing::cuda_check(cudaStreamSynchronize(s), "sync");
  std::vector<float> out(d.y_elems());
  y.download(out.data(), 4 * out.size());
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  if (own) cudaStreamDestroy(own);
  return out;
}

std::string data_dir() { return FFTCONV_TEST_DATA_DIR; }

std::vector<testing::ShapeRow> suite_rows() {
  std::vector<testing::ShapeRow> rows;
  const std::filesystem::path dir = std::filesystem::path(FFTCONV_TEST_DATA_DIR) / "shapes";
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() != ".csv") continue;
    try {
      for (auto& r : testing::load_shapes(entry.path().string())) rows.push_back(r);
    } catch (const std::exception&) {
      // reported by SuiteFiles.Load
    }
  }
  return rows;
}

}  // namespace fftconv::gputest
