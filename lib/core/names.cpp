// Names of every public enum of options.hpp and log.hpp: one table each, read both ways.
#include <string>

#include "fftconv/log.hpp"
#include "fftconv/options.hpp"

namespace fftconv {

namespace {

template <typename E>
struct Named {
  E value;
  const char* name;
};

template <typename E, std::size_t N>
const char* name_of(const Named<E> (&table)[N], E v, const char* unknown) noexcept {
  for (const Named<E>& n : table) {
    if (n.value == v) return n.name;
  }
  return unknown;
}

// Throws Error(kInvalidArgument) naming every accepted spelling.
template <typename E, std::size_t N>
E parse_named(const Named<E> (&table)[N], const std::string& name, const char* what) {
  std::string expected;
  for (std::size_t i = 0; i < N; ++i) {
    if (name == table[i].name) return table[i].value;
    expected += (i == 0 ? "" : i + 1 == N ? " or " : ", ") + std::string(table[i].name);
  }
  throw Error(Status::kInvalidArgument,
              "unknown " + std::string(what) + " '" + name + "' (expected " + expected + ")");
}

constexpr Named<Algo> kAlgoNames[] = {
    {Algo::kAuto, "auto"},           {Algo::kFft, "fft"},
    {Algo::kFftTiled, "fft_tiled"},  {Algo::kFftFused, "fft_fused"},
    {Algo::kSeparable, "separable"}, {Algo::kDirect, "direct"},
    {Algo::kCudnn, "cudnn"},         {Algo::kImplicitGemm, "implicit_gemm"}};
constexpr Named<Pass> kPassNames[] = {
    {Pass::kForward, "fwd"}, {Pass::kBackwardData, "dgrad"}, {Pass::kBackwardFilter, "wgrad"}};
constexpr Named<Backend> kBackendNames[] = {
    {Backend::kGpu, "gpu"}, {Backend::kCpu, "cpu"}, {Backend::kAuto, "auto"}};
constexpr Named<Tuning> kTuningNames[] = {{Tuning::kHeuristic, "heuristic"},
                                          {Tuning::kAutotune, "autotune"},
                                          {Tuning::kExhaustive, "exhaustive"}};
constexpr Named<CudnnSearch> kCudnnSearchNames[] = {{CudnnSearch::kFind, "find"},
                                                    {CudnnSearch::kHeuristic, "heuristic"},
                                                    {CudnnSearch::kGraph, "graph"},
                                                    {CudnnSearch::kAuto, "auto"}};
constexpr Named<LogLevel> kLogLevelNames[] = {{LogLevel::kOff, "off"},
                                              {LogLevel::kError, "error"},
                                              {LogLevel::kWarning, "warning"},
                                              {LogLevel::kInfo, "info"},
                                              {LogLevel::kDebug, "debug"}};

}  // namespace

const char* algo_name(Algo a) noexcept { return name_of(kAlgoNames, a, "unknown_algo"); }
Algo parse_algo(const std::string& name) { return parse_named(kAlgoNames, name, "algorithm"); }

const char* pass_name(Pass p) noexcept { return name_of(kPassNames, p, "unknown_pass"); }
Pass parse_pass(const std::string& name) { return parse_named(kPassNames, name, "pass"); }

const char* backend_name(Backend b) noexcept {
  return name_of(kBackendNames, b, "unknown_backend");
}
Backend parse_backend(const std::string& name) {
  return parse_named(kBackendNames, name, "backend");
}

const char* tuning_name(Tuning t) noexcept { return name_of(kTuningNames, t, "unknown_tuning"); }
Tuning parse_tuning(const std::string& name) {
  return parse_named(kTuningNames, name, "tuning mode");
}

const char* cudnn_search_name(CudnnSearch s) noexcept {
  return name_of(kCudnnSearchNames, s, "unknown_cudnn_search");
}
CudnnSearch parse_cudnn_search(const std::string& name) {
  return parse_named(kCudnnSearchNames, name, "cuDNN search");
}

const char* log_level_name(LogLevel level) noexcept {
  return name_of(kLogLevelNames, level, "unknown_log_level");
}
LogLevel parse_log_level(const std::string& name) {
  return parse_named(kLogLevelNames, name, "log level");
}

}  // namespace fftconv
