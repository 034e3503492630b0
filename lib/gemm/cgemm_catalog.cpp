#include "core/check.h"
#include "gemm/cgemm.h"

namespace fftconv::detail {

namespace {

class OwnKernelRunner final : public CgemmRunner {
 public:
  explicit OwnKernelRunner(const CgemmKernel& k) : kernel_(k) {
    if (k.prepare != nullptr) k.prepare();
  }
  const CgemmKernel& kernel() const override { return kernel_; }
  std::size_t workspace_size(const CgemmProblem&) const override { return 0; }
  void run(const CgemmProblem& p, const CgemmOperands& op, void*, cudaStream_t stream) override {
    kernel_.launch(p, op, stream);
  }

 private:
  const CgemmKernel& kernel_;
};

}  // namespace

const std::vector<CgemmKernel>& cgemm_kernels() {
  static const std::vector<CgemmKernel> all = [] {
    std::vector<CgemmKernel> v = regtile_kernels();
    for (const CgemmKernel& k : smem_kernels()) v.push_back(k);
    for (const CgemmKernel& k : tc_kernels()) v.push_back(k);
    v.push_back(CgemmKernel{"cublas_cgemm", CgemmFamily::kCublas, 0, 0, 0, 0, 0, nullptr});
    v.push_back(CgemmKernel{"cublas_cgemm3m", CgemmFamily::kCublas3m, 0, 0, 0, 0, 0, nullptr});
    return v;
  }();
  return all;
}

const CgemmKernel& cgemm_kernel(const std::string& name) {
  for (const CgemmKernel& k : cgemm_kernels()) {
    if (name == k.name) return k;
  }
  std::string known;
  for (const CgemmKernel& k : cgemm_kernels()) known += std::string(known.empty() ? "" : ", ") + k.name;
  throw Error(Status::kInvalidArgument,
              "no per-frequency GEMM kernel named '" + name + "' (known: " + known + ")");
}

std::unique_ptr<CgemmRunner> make_cgemm_runner(const CgemmKernel& kernel) {
  if (kernel.own()) return std::make_unique<OwnKernelRunner>(kernel);
  return make_cublas_runner(kernel);
}

}  // namespace fftconv::detail
