// Every per-frequency GEMM path (own tilings and cuBLAS) against an fp64 complex GEMM, over the
// sizes that stress tile edges, bin counts 1 and primes, groups, both operand layouts and every
// conjugation variant.
#include <complex>

#include "gpu_test_util.h"
#include "reference/reference.h"

namespace fftconv::gputest {
namespace {

using detail::CgemmKernel;
using detail::CgemmProblem;

constexpr std::int64_t kSizes[] = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 64, 65, 128};
constexpr int kNumSizes = sizeof(kSizes) / sizeof(kSizes[0]);
constexpr std::int64_t kBins[] = {1, 2, 3, 7, 31, 97, 257};
// Keeps the host oracle quick: bins shrink as the product grows.
constexpr double kMaxHostMacs = 4e6;

// layout 0: operands as the forward pass has them (contraction index next to the bins);
// layout 1: the row index next to the bins (as backward-filter reads its operands).
CgemmProblem make_problem(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t bins,
                          std::int64_t groups, int layout, bool conj_a, bool conj_b) {
  CgemmProblem p;
  p.m = m; p.n = n; p.k = k; p.bins = bins; p.groups = groups;
  p.conj_a = conj_a; p.conj_b = conj_b;
  if (layout == 0) {
    p.a_k = bins; p.a_m = k * bins;
    p.b_k = bins; p.b_n = k * bins;
  } else {
    p.a_m = bins; p.a_k = m * bins;
    p.b_n = bins; p.b_k = n * bins;
  }
  p.a_g = m * k * bins;
  p.b_g = n * k * bins;
  p.c_n = bins; p.c_m = n * bins; p.c_g = m * n * bins;
  return p;
}

std::vector<std::complex<float>> random_complex(std::int64_t count, std::uint64_t seed) {
  const auto v = testing::random_values(2 * count, seed, DType::kF32);
  std::vector<std::complex<float>> out(count);
  for (std::int64_t i = 0; i < count; ++i) out[i] = {v[2 * i], v[2 * i + 1]};
  return out;
}

// Returns "" when the kernel matches the oracle, else what went wrong.
std::string check(const CgemmKernel& kernel, const CgemmProblem& p, std::uint64_t seed) {
  const auto a = random_complex(p.a_extent(), seed);
  const auto b = random_complex(p.b_extent(), seed + 1);
  const float alpha = 0.75f;
  std::vector<std::complex<double>> ref(p.c_extent());
  reference::cgemm_host(p, a.data(), b.data(), alpha, ref.data());
  testing::DeviceBuffer da(8 * a.size()), db(8 * b.size()), dc(8 * ref.size());
  da.upload(a.data(), da.bytes());
  db.upload(b.data(), db.bytes());
  dc.poison();
  auto runner = detail::make_cgemm_runner(kernel);
  testing::DeviceBuffer ws(runner->workspace_size(p));
  detail::CgemmOperands ops{da.as<float2>(), db.as<float2>(), dc.as<float2>(), alpha};
  runner->run(p, ops, ws.get(), nullptr);
  testing::cuda_check(cudaDeviceSynchronize(), kernel.name);
  std::vector<std::complex<float>> c(ref.size());
  dc.download(c.data(), dc.bytes());
  // Compare real and imaginary parts as one real vector.
  std::vector<float> y;
  std::vector<double> r;
  for (std::size_t i = 0; i < c.size(); ++i) {
    y.push_back(c[i].real());
    y.push_back(c[i].imag());
    r.push_back(ref[i].real());
    r.push_back(ref[i].imag());
  }
  const testing::ErrorStats e = testing::compare(y, r);
  if (e.pass(1e-5)) return "";
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                "%s m%lld n%lld k%lld bins%lld g%lld a(%lld,%lld) conj %d%d seed %llu: %s", kernel.name,
                (long long)p.m, (long long)p.n, (long long)p.k, (long long)p.bins,
                (long long)p.groups, (long long)p.a_m, (long long)p.a_k, p.conj_a, p.conj_b,
                (unsigned long long)seed, e.to_string().c_str());
  return buf;
}

class GemmKernel : public ::testing::TestWithParam<std::string> {};

TEST_P(GemmKernel, MatchesOracleOnEdgeSizes) {
  FFTCONV_REQUIRE_GPU();
  const CgemmKernel& kernel = detail::cgemm_kernel(GetParam());
  int cases = 0;
  // Every size appears as m, as n and as k (7 and 5 are coprime with 16).
  for (int i = 0; i < kNumSizes; ++i) {
    const std::int64_t m = kSizes[i], n = kSizes[(7 * i + 3) % kNumSizes],
                       k = kSizes[(5 * i + 1) % kNumSizes];
    std::int64_t bins = kBins[i % 7];
    while (bins > 1 && double(m) * n * k * bins > kMaxHostMacs) bins = kBins[0];
    const CgemmProblem p = make_problem(m, n, k, bins, 1 + i % 2, i % 2, i % 4 >= 2, i % 2 == 1);
    const std::string err = check(kernel, p, 1000 + i);
    EXPECT_TRUE(err.empty()) << err;
    ++cases;
  }
  // Every conjugation variant on one problem with ragged edges everywhere.
  for (int conj = 0; conj < 4; ++conj) {
    const CgemmProblem p = make_problem(17, 33, 9, 97, 2, conj % 2, conj & 1, conj & 2);
    const std::string err = check(kernel, p, 2000 + conj);
    EXPECT_TRUE(err.empty()) << err;
    ++cases;
  }
  EXPECT_EQ(cases, kNumSizes + 4);
}

std::vector<std::string> all_kernels() { return gemm_kernel_names(); }

INSTANTIATE_TEST_SUITE_P(AllPaths, GemmKernel, ::testing::ValuesIn(all_kernels()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace fftconv::gputest
