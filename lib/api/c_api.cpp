// The C API: every entry point catches and returns a status; the message is kept per thread.
#include "fftconv/fftconv.h"

#include <cstring>
#include <new>
#include <string>

#include "fftconv/fftconv.hpp"

struct fftconv_plan {
  fftconv::Plan plan;
  std::string description;
};

namespace {

// The int a C caller stored in an enum field: reading it as the enum type would be undefined
// for values outside the enum's range (the C++ side then rejects them by name).
template <typename E>
int raw_enum(const E& field) {
  static_assert(sizeof(E) == sizeof(int), "C enums are int-sized");
  int v = 0;
  std::memcpy(&v, &field, sizeof v);
  return v;
}


thread_local std::string g_last_error;

// The C enums mirror the C++ ones value for value: the last member of each must agree.
constexpr bool same(int c, int cpp) { return c == cpp; }
static_assert(same(FFTCONV_STATUS_INTERNAL, static_cast<int>(fftconv::Status::kInternal)) &&
                  same(FFTCONV_ALGO_FFT_TILED, static_cast<int>(fftconv::Algo::kFftTiled)) &&
                  same(FFTCONV_ALGO_SEPARABLE, static_cast<int>(fftconv::Algo::kSeparable)) &&
                  same(FFTCONV_ALGO_DIRECT, static_cast<int>(fftconv::Algo::kDirect)) &&
                  same(FFTCONV_ALGO_IMPLICIT_GEMM,
                       static_cast<int>(fftconv::Algo::kImplicitGemm)) &&
                  same(FFTCONV_PASS_BACKWARD_FILTER,
                       static_cast<int>(fftconv::Pass::kBackwardFilter)) &&
                  same(FFTCONV_BACKEND_AUTO, static_cast<int>(fftconv::Backend::kAuto)) &&
                  same(FFTCONV_TUNING_EXHAUSTIVE, static_cast<int>(fftconv::Tuning::kExhaustive)) &&
                  same(FFTCONV_DTYPE_BF16, static_cast<int>(fftconv::DType::kBF16)),
              "the C API's enums are out of sync with the C++ ones");

fftconv_status_t fail(fftconv::Status st, const std::string& message) {
  g_last_error = message;
  return static_cast<fftconv_status_t>(st);
}

fftconv_status_t ok() {
  g_last_error.clear();
  return FFTCONV_STATUS_SUCCESS;
}

template <typename Fn>
fftconv_status_t guarded(Fn&& fn) {
  try {
    fn();
    return ok();
  } catch (const fftconv::Error& e) {
    return fail(e.status(), e.what());
  } catch (const std::bad_alloc&) {
    return fail(fftconv::Status::kOutOfMemory, "host allocation failed");
  } catch (const std::exception& e) {
    return fail(fftconv::Status::kInternal, e.what());
  } catch (...) {
    return fail(fftconv::Status::kInternal, "unknown exception");
  }
}

fftconv::ConvDesc to_cpp(const fftconv_conv_desc_t& d) {
  fftconv::ConvDesc c;
  c.n = d.n;
  c.c = d.c;
  c.h = d.h;
  c.w = d.w;
  c.k = d.k;
  c.r = d.r;
  c.s = d.s;
  c.pad_h = d.pad_h;
  c.pad_w = d.pad_w;
  c.stride_h = d.stride_h;
  c.stride_w = d.stride_w;
  c.dil_h = d.dil_h;
  c.dil_w = d.dil_w;
  c.groups = d.groups;
  c.dtype = static_cast<fftconv::DType>(raw_enum(d.dtype));
  c.border = static_cast<fftconv::Border>(raw_enum(d.border));
  return c;
}

}  // namespace

extern "C" {

fftconv_conv_desc_t fftconv_conv_desc_default(void) {
  fftconv_conv_desc_t d;
  d.n = d.c = d.h = d.w = d.k = d.r = d.s = 1;
  d.pad_h = d.pad_w = 0;
  d.stride_h = d.stride_w = d.dil_h = d.dil_w = 1;
  d.groups = 1;
  d.dtype = FFTCONV_DTYPE_F32;
  d.border = FFTCONV_BORDER_ZERO;
  return d;
}

fftconv_options_t fftconv_options_default(void) {
  fftconv_options_t o;
  o.algo = FFTCONV_ALGO_AUTO;
  o.workspace_limit = SIZE_MAX;
  o.allow_tf32 = 0;
  o.pass = FFTCONV_PASS_FORWARD;
  o.dw_fp32 = 0;
  o.backend = FFTCONV_BACKEND_GPU;
  o.tuning = FFTCONV_TUNING_HEURISTIC;
  o.tuning_cache = nullptr;
  o.fft_h = o.fft_w = 0;
  o.gemm_kernel = nullptr;
  o.cudnn_algo = nullptr;
  o.cudnn_search = 3;
  o.check_pointers = 1;
  o.kept_separable = 1;
  o.graph_replay = 1;
  o.fft_callbacks = 0;
  o.own_fft = 0;
  return o;
}

fftconv_status_t fftconv_conv_desc_validate(const fftconv_conv_desc_t* desc) {
  if (!desc) return fail(fftconv::Status::kNullPointer, "desc is null");
  return guarded([&] { to_cpp(*desc).check(); });
}

fftconv_status_t fftconv_conv_desc_to_string(const fftconv_conv_desc_t* desc, char* buf,
                                             size_t buf_len, size_t* needed) {
  if (!desc) return fail(fftconv::Status::kNullPointer, "desc is null");
  return guarded([&] {
    const std::string s = to_cpp(*desc).to_string();
    if (needed) *needed = s.size() + 1;
    if (buf && buf_len > 0) {
      const size_t n = s.size() < buf_len - 1 ? s.size() : buf_len - 1;
      std::memcpy(buf, s.data(), n);
      buf[n] = '\0';
    }
  });
}

fftconv_status_t fftconv_plan_create(fftconv_plan_t* plan, const fftconv_conv_desc_t* desc,
                                     const fftconv_options_t* options) {
  if (!plan) return fail(fftconv::Status::kNullPointer, "plan is null");
  *plan = nullptr;
  if (!desc) return fail(fftconv::Status::kNullPointer, "desc is null");
  return guarded([&] {
    fftconv::Options o;
    if (options) {
      o.algo = static_cast<fftconv::Algo>(raw_enum(options->algo));
      o.workspace_limit = options->workspace_limit;
      o.allow_tf32 = options->allow_tf32 != 0;
      o.pass = static_cast<fftconv::Pass>(raw_enum(options->pass));
      o.dw_fp32 = options->dw_fp32 != 0;
      o.backend = static_cast<fftconv::Backend>(raw_enum(options->backend));
      o.tuning = static_cast<fftconv::Tuning>(raw_enum(options->tuning));
      if (options->tuning_cache) o.tuning_cache = options->tuning_cache;
      o.fft_h = options->fft_h;
      o.fft_w = options->fft_w;
      if (options->gemm_kernel) o.gemm_kernel = options->gemm_kernel;
      if (options->cudnn_algo) o.cudnn_algo = options->cudnn_algo;
      o.cudnn_search = static_cast<fftconv::CudnnSearch>(options->cudnn_search);
      o.check_pointers = options->check_pointers != 0;
      o.kept_separable = options->kept_separable != 0;
      o.graph_replay = options->graph_replay != 0;
      o.fft_callbacks = options->fft_callbacks != 0;
      o.own_fft = options->own_fft != 0;
    }
    auto* p = new fftconv_plan{fftconv::Plan(to_cpp(*desc), o), std::string()};
    p->description = p->plan.describe();
    *plan = p;
  });
}

fftconv_status_t fftconv_plan_destroy(fftconv_plan_t plan) {
  delete plan;
  return ok();
}

fftconv_status_t fftconv_plan_workspace_size(fftconv_plan_t plan, size_t* bytes) {
  if (!plan) return fail(fftconv::Status::kNullPointer, "plan is null");
  if (!bytes) return fail(fftconv::Status::kNullPointer, "bytes is null");
  *bytes = plan->plan.workspace_size();
  return ok();
}

const char* fftconv_plan_describe(fftconv_plan_t plan) {
  return plan ? plan->description.c_str() : "";
}

fftconv_status_t fftconv_forward(fftconv_plan_t plan, const void* x, const void* w,
                                 const void* bias, void* y, void* workspace,
                                 size_t workspace_bytes, cudaStream_t stream) {
  if (!plan) return fail(fftconv::Status::kNullPointer, "plan is null");
  return guarded([&] { plan->plan.forward(x, w, bias, y, workspace, workspace_bytes, stream); });
}

fftconv_status_t fftconv_backward_data(fftconv_plan_t plan, const void* dy, const void* w,
                                       void* dx, void* workspace, size_t workspace_bytes,
                                       cudaStream_t stream) {
  if (!plan) return fail(fftconv::Status::kNullPointer, "plan is null");
  return guarded(
      [&] { plan->plan.backward_data(dy, w, dx, workspace, workspace_bytes, stream); });
}

fftconv_status_t fftconv_backward_filter(fftconv_plan_t plan, const void* x, const void* dy,
                                         void* dw, void* workspace, size_t workspace_bytes,
                                         cudaStream_t stream, float alpha, float beta) {
  if (!plan) return fail(fftconv::Status::kNullPointer, "plan is null");
  return guarded([&] {
    plan->plan.backward_filter(x, dy, dw, workspace, workspace_bytes, stream, alpha, beta);
  });
}

fftconv_status_t fftconv_plan_set_filter(fftconv_plan_t plan, const void* w, cudaStream_t stream) {
  if (!plan) return fail(fftconv::Status::kNullPointer, "plan is null");
  return guarded([&] { plan->plan.set_filter(w, stream); });
}

fftconv_status_t fftconv_plan_clear_filter(fftconv_plan_t plan) {
  if (!plan) return fail(fftconv::Status::kNullPointer, "plan is null");
  return guarded([&] { plan->plan.clear_filter(); });
}

fftconv_status_t fftconv_plan_filter_spectrum_size(fftconv_plan_t plan, size_t* bytes) {
  if (!plan) return fail(fftconv::Status::kNullPointer, "plan is null");
  if (!bytes) return fail(fftconv::Status::kNullPointer, "bytes is null");
  return guarded([&] { *bytes = plan->plan.filter_spectrum_size(); });
}

fftconv_status_t fftconv_plans_share_filter_spectrum(fftconv_plan_t a, fftconv_plan_t b,
                                                     int* shared) {
  if (!a || !b) return fail(fftconv::Status::kNullPointer, "plan is null");
  if (!shared) return fail(fftconv::Status::kNullPointer, "shared is null");
  return guarded([&] { *shared = a->plan.shares_filter_spectrum(b->plan) ? 1 : 0; });
}

fftconv_status_t fftconv_filter_spectrum(fftconv_plan_t plan, const void* w, void* spectrum,
                                         void* workspace, size_t workspace_bytes,
                                         cudaStream_t stream) {
  if (!plan) return fail(fftconv::Status::kNullPointer, "plan is null");
  return guarded(
      [&] { plan->plan.filter_spectrum(w, spectrum, workspace, workspace_bytes, stream); });
}

fftconv_status_t fftconv_forward_with_spectrum(fftconv_plan_t plan, const void* x,
                                               const void* spectrum, const void* bias, void* y,
                                               void* workspace, size_t workspace_bytes,
                                               cudaStream_t stream) {
  if (!plan) return fail(fftconv::Status::kNullPointer, "plan is null");
  return guarded([&] {
    plan->plan.forward_with_spectrum(x, spectrum, bias, y, workspace, workspace_bytes, stream);
  });
}

fftconv_status_t fftconv_backward_data_with_spectrum(fftconv_plan_t plan, const void* dy,
                                                     const void* spectrum, void* dx,
                                                     void* workspace, size_t workspace_bytes,
                                                     cudaStream_t stream) {
  if (!plan) return fail(fftconv::Status::kNullPointer, "plan is null");
  return guarded([&] {
    plan->plan.backward_data_with_spectrum(dy, spectrum, dx, workspace, workspace_bytes, stream);
  });
}

const char* fftconv_status_name(fftconv_status_t status) {
  return fftconv::status_name(static_cast<fftconv::Status>(status));
}

const char* fftconv_status_string(fftconv_status_t status) {
  return fftconv::status_string(static_cast<fftconv::Status>(status));
}

const char* fftconv_last_error_message(void) { return g_last_error.c_str(); }

}  // extern "C"

namespace {
// The C callback behind the C++ sink.
struct CLogSink {
  fftconv_log_callback_t callback = nullptr;
  void* user_data = nullptr;
};
CLogSink g_c_log_sink;

void forward_log(fftconv::LogLevel level, const char* message, void* user) {
  const auto* sink = static_cast<const CLogSink*>(user);
  sink->callback(static_cast<int>(level), message, sink->user_data);
}
}  // namespace

extern "C" void fftconv_set_log_callback(fftconv_log_callback_t callback, void* user_data) {
  if (!callback) {
    fftconv::set_log_callback(nullptr);
    return;
  }
  // Detach first so no message sees a half-written sink.
  fftconv::set_log_callback(nullptr);
  g_c_log_sink = CLogSink{callback, user_data};
  fftconv::set_log_callback(forward_log, &g_c_log_sink);
}

extern "C" void fftconv_set_log_level(int level) {
  const int lo = static_cast<int>(fftconv::LogLevel::kOff);
  const int hi = static_cast<int>(fftconv::LogLevel::kDebug);
  fftconv::set_log_level(static_cast<fftconv::LogLevel>(level < lo ? lo : level > hi ? hi : level));
}
