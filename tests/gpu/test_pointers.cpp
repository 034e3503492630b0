// Pointer checks at call time: a host buffer (pageable or pinned) given to a GPU plan is rejected
// with kInvalidArgument naming the argument, nothing is enqueued, and the process's CUDA context
// keeps working; managed memory is accepted. The C API's case is in test_runtime.cpp
// (Runtime.CApiEndToEnd).
#include <cstdlib>
#include <memory>
#include <string>

#include "gpu_test_util.h"

namespace fftconv::gputest {
namespace {

// The call is rejected with kInvalidArgument and a message naming `arg`, and afterwards the
// device still runs a correct forward pass.
template <typename Call>
void expect_rejected(const Plan& plan, const Problem& p, const char* arg, const std::string& kind,
                     Call&& call) {
  try {
    call();
    ADD_FAILURE() << arg << ": accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::kInvalidArgument) << e.what();
    EXPECT_NE(std::string(e.what()).find(std::string(arg) + " "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(kind), std::string::npos) << e.what();
  }
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << "the context broke after " << arg;
  testing::DeviceBuffer y(4 * p.desc.y_elems()), ws(plan.workspace_size());
  y.poison();
  plan.forward(p.x.get(), p.w.get(), p.bias.get(), y.get(), ws.get(), ws.bytes(), nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<float> out(static_cast<std::size_t>(p.desc.y_elems()));
  y.download(out.data(), out.size() * 4);
  EXPECT_TRUE(testing::compare(out, p.ref).pass(1e-5)) << "after " << arg;
}

TEST(Pointers, HostBuffersAreRejectedAndTheContextSurvives) {
  FFTCONV_REQUIRE_GPU();
  const ConvDesc d = small_desc();
  const Problem p(d, 31, true);
  const Plan plan(d);
  testing::DeviceBuffer y(4 * d.y_elems()), ws(plan.workspace_size());
  std::unique_ptr<float[]> host_y(new float[d.y_elems()]);
  std::unique_ptr<float[]> host_x(new float[d.x_elems()]);
  void* pinned = nullptr;
  ASSERT_EQ(cudaMallocHost(&pinned, 4 * d.y_elems()), cudaSuccess);

  expect_rejected(plan, p, "y", "host memory", [&] {
    plan.forward(p.x.get(), p.w.get(), p.bias.get(), host_y.get(), ws.get(), ws.bytes(), nullptr);
  });
  expect_rejected(plan, p, "x", "host memory", [&] {
    plan.forward(host_x.get(), p.w.get(), p.bias.get(), y.get(), ws.get(), ws.bytes(), nullptr);
  });
  expect_rejected(plan, p, "y", "pinned host memory", [&] {
    plan.forward(p.x.get(), p.w.get(), p.bias.get(), pinned, ws.get(), ws.bytes(), nullptr);
  });
  if (plan.workspace_size() > 0) {
    std::unique_ptr<unsigned char[]> host_ws(new unsigned char[plan.workspace_size() + 256]);
    void* aligned = reinterpret_cast<void*>(
        (reinterpret_cast<std::uintptr_t>(host_ws.get()) + 255) / 256 * 256);
    expect_rejected(plan, p, "workspace", "host memory", [&] {
      plan.forward(p.x.get(), p.w.get(), p.bias.get(), y.get(), aligned, plan.workspace_size(),
                   nullptr);
    });
  }
  Plan kept(d);
  expect_rejected(kept, p, "w", "host memory", [&] { kept.set_filter(host_x.get(), nullptr); });
  cudaFreeHost(pinned);
}

TEST(Pointers, BackwardPassesCheckTheirPointers) {
  FFTCONV_REQUIRE_GPU();
  const ConvDesc d = small_desc();
  const Problem p(d, 32, false);
  const Plan fwd(d);
  Options o;
  o.pass = Pass::kBackwardFilter;
  const Plan wgrad(d, o);
  testing::DeviceBuffer dy(4 * d.y_elems()), ws(wgrad.workspace_size());
  std::unique_ptr<float[]> host_dw(new float[d.w_elems()]);
  expect_rejected(fwd, p, "dw", "host memory", [&] {
    wgrad.backward_filter(p.x.get(), dy.get(), host_dw.get(), ws.get(), ws.bytes(), nullptr);
  });
  o.pass = Pass::kBackwardData;
  const Plan dgrad(d, o);
  testing::DeviceBuffer ws2(dgrad.workspace_size());
  std::unique_ptr<float[]> host_dx(new float[d.x_elems()]);
  expect_rejected(fwd, p, "dx", "host memory", [&] {
    dgrad.backward_data(dy.get(), p.w.get(), host_dx.get(), ws2.get(), ws2.bytes(), nullptr);
  });
}

TEST(Pointers, ManagedMemoryIsAccepted) {
  FFTCONV_REQUIRE_GPU();
  const ConvDesc d = small_desc();
  const Problem p(d, 33, true);
  const Plan plan(d);
  testing::DeviceBuffer ws(plan.workspace_size());
  float* y = nullptr;
  ASSERT_EQ(cudaMallocManaged(reinterpret_cast<void**>(&y), 4 * d.y_elems()), cudaSuccess);
  plan.forward(p.x.get(), p.w.get(), p.bias.get(), y, ws.get(), ws.bytes(), nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<float> out(y, y + d.y_elems());
  EXPECT_TRUE(testing::compare(out, p.ref).pass(1e-5));
  cudaFree(y);
}

}  // namespace
}  // namespace fftconv::gputest
