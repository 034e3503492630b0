#include "gpu_test_util.h"

#include <filesystem>

#include "reference/reference.h"

namespace fftconv::gputest {

testing::DeviceBuffer upload(const std::vector<float>& v, DType dtype) {
  const auto bytes = testing::encode(v, dtype);
  testing::DeviceBuffer b(bytes.size());
  b.upload(bytes.data(), bytes.size());
  return b;
}

std::vector<float> download(const testing::DeviceBuffer& b, std::int64_t count, DType dtype) {
  std::vector<unsigned char> host(b.bytes());
  b.download(host.data(), host.size());
  return testing::decode(host.data(), count, dtype);
}

Problem::Problem(const ConvDesc& d, std::uint64_t s, bool bias_on)
    : desc(d), seed(s), with_bias(bias_on) {
  const auto xv = testing::random_values(d.x_elems(), seed, d.dtype);
  const auto wv = testing::random_values(d.w_elems(), seed + 1, d.dtype);
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

namespace {
// True when some output position along an axis reads at least one input element.
bool axis_reads_data(std::int64_t in, std::int64_t pad, std::int64_t k, std::int64_t stride,
                     std::int64_t dil, std::int64_t out) {
  for (std::int64_t p = 0; p < out; ++p)
    for (std::int64_t t = 0; t < k; ++t) {
      const std::int64_t i = p * stride + t * dil - pad;
      if (i >= 0 && i < in) return true;
    }
  return false;
}
}  // namespace

bool output_reads_data(const ConvDesc& d) {
  return axis_reads_data(d.h, d.pad_h, d.r, d.stride_h, d.dil_h, d.out_h()) &&
         axis_reads_data(d.w, d.pad_w, d.s, d.stride_w, d.dil_w, d.out_w());
}

ConvDesc random_desc(std::mt19937_64& gen, DType dtype) {
  auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(gen);
  };
  // Sizes that stress boundaries: primes, powers of two and their neighbours, anything small.
  static const std::int64_t kEdgeSizes[] = {1,  2,  3,  5,  7,  8,  9,  11, 13, 15, 16, 17,
                                            23, 31, 32, 33, 37, 47, 63, 64, 65, 71, 97, 127, 128, 129};
  auto extent = [&]() {
    return pick(0, 2) ? kEdgeSizes[pick(0, sizeof(kEdgeSizes) / sizeof(kEdgeSizes[0]) - 1)]
                      : pick(1, 80);
  };
  for (;;) {
    ConvDesc d;
    d.dtype = dtype;
    d.n = pick(1, 3);
    const int kind = static_cast<int>(pick(0, 3));
    if (kind == 3) {  // depthwise
      d.groups = pick(1, 6);
      d.c = d.k = d.groups;
    } else {
      d.groups = kind == 0 ? 1 : pick(2, 3);
      d.c = d.groups * pick(1, 4);
      d.k = d.groups * pick(1, 4);
    }
    d.h = extent();
    d.w = extent();
    d.r = pick(1, 3) == 1 ? pick(1, 3) : pick(1, 23);
    d.s = pick(0, 2) ? d.r : pick(1, 23);  // rectangular a third of the time
    d.pad_h = pick(0, d.r);
    d.pad_w = pick(0, d.s);
    d.stride_h = pick(0, 3) ? 1 : pick(2, 3);
    d.stride_w = pick(0, 3) ? d.stride_h : pick(1, 3);
    d.dil_h = pick(0, 3) ? 1 : pick(2, 3);
    d.dil_w = pick(0, 3) ? d.dil_h : pick(1, 3);
    // Outputs made of padding alone have an all-zero reference, where relative error means
    // nothing; Runtime.AllPaddingOutputIsZero covers them with an absolute bound.
    if (d.validate() == Status::kSuccess && output_reads_data(d)) return d;
  }
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
