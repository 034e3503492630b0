// The pad and clip stages accept any element-aligned tensor: a tensor that starts inside a 16-byte
// granule must give the same bits as one that starts on a granule, in every dtype and pass
// (planes of odd sizes, so chunks and planes start at every offset as well).
#include <cmath>
#include <cstring>

#include "gpu_test_util.h"

namespace fftconv::gputest {
namespace {

// A device copy of `bytes` starting `offset` bytes into its allocation.
struct Placed {
  testing::DeviceBuffer buf;
  std::size_t offset;
  Placed(const std::vector<unsigned char>& bytes, std::size_t off)
      : buf(bytes.size() + 32), offset(off) {
    buf.poison();
    testing::cuda_check(
        cudaMemcpy(ptr(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice), "upload");
  }
  void* ptr() const { return buf.as<unsigned char>() + offset; }
  std::vector<unsigned char> read(std::size_t bytes) const {
    std::vector<unsigned char> out(bytes);
    testing::cuda_check(cudaMemcpy(out.data(), ptr(), bytes, cudaMemcpyDeviceToHost), "download");
    return out;
  }
};

// Output bytes of one pass with every tensor placed `offset` bytes into its allocation.
std::vector<unsigned char> run_pass(const ConvDesc& d, Pass pass, std::size_t offset,
                                    std::uint64_t seed) {
  const auto x = testing::encode(testing::random_values(d.x_elems(), seed, d.dtype), d.dtype);
  const auto w = testing::encode(testing::random_values(d.w_elems(), seed + 1, d.dtype), d.dtype);
  const auto b = testing::encode(testing::random_values(d.k, seed + 2, d.dtype), d.dtype);
  const auto dy = testing::encode(testing::random_values(d.y_elems(), seed + 3, d.dtype), d.dtype);
  const auto dw0 = testing::encode(testing::random_values(d.w_elems(), seed + 4, d.dtype), d.dtype);
  Options o;
  o.algo = Algo::kFft;
  o.pass = pass;
  const Plan plan(d, o);
  testing::DeviceBuffer ws(plan.workspace_size());
  const std::size_t es = dtype_size(d.dtype);
  switch (pass) {
    case Pass::kForward: {
      const Placed px(x, offset), pw(w, offset), pb(b, offset);
      const Placed py(std::vector<unsigned char>(es * d.y_elems(), 0xFF), offset);
      plan.forward(px.ptr(), pw.ptr(), pb.ptr(), py.ptr(), ws.get(), ws.bytes(), nullptr);
      return py.read(es * d.y_elems());
    }
    case Pass::kBackwardData: {
      const Placed pdy(dy, offset), pw(w, offset);
      const Placed pdx(std::vector<unsigned char>(es * d.x_elems(), 0xFF), offset);
      plan.backward_data(pdy.ptr(), pw.ptr(), pdx.ptr(), ws.get(), ws.bytes(), nullptr);
      return pdx.read(es * d.x_elems());
    }
    case Pass::kBackwardFilter: {
      // beta != 0: the clip reads dw as well as writing it.
      const Placed px(x, offset), pdy(dy, offset), pdw(dw0, offset);
      plan.backward_filter(px.ptr(), pdy.ptr(), pdw.ptr(), ws.get(), ws.bytes(), nullptr, 1.0f,
                           0.5f);
      return pdw.read(es * d.w_elems());
    }
  }
  return {};
}

TEST(Stages, ElementAlignedPointersGiveTheSameBits) {
  FFTCONV_REQUIRE_GPU();
  // Odd plane sizes (13x11 input, 9x7 filter), so planes start at every offset within a granule.
  ConvDesc d;
  d.n = 3; d.c = 5; d.h = 13; d.w = 11; d.k = 3; d.r = 9; d.s = 7; d.pad_h = 4; d.pad_w = 3;
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    d.dtype = dtype;
    const std::size_t es = dtype_size(dtype);
    for (Pass pass : {Pass::kForward, Pass::kBackwardData, Pass::kBackwardFilter}) {
      const auto base = run_pass(d, pass, 0, 77);
      for (std::size_t off = es; off < 16; off += es) {
        const auto moved = run_pass(d, pass, off, 77);
        ASSERT_EQ(base.size(), moved.size());
        EXPECT_EQ(0, std::memcmp(base.data(), moved.data(), base.size()))
            << d.to_string() << " " << pass_name(pass) << ": tensors " << off
            << " bytes into a granule";
      }
      // And the results are written: no element keeps the poison.
      const auto values =
          testing::decode(base.data(), static_cast<std::int64_t>(base.size() / es), dtype);
      for (float v : values) ASSERT_FALSE(std::isnan(v)) << d.to_string() << " " << pass_name(pass);
    }
  }
}

}  // namespace
}  // namespace fftconv::gputest
