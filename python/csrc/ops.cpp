// The fftconv operators of PyTorch: schemas, and their CUDA and CPU kernels.
//
//   fftconv::conv2d(input, weight, bias?, stride, padding, dilation, groups, algo,
//                   padding_mode="zeros") -> Tensor
//   fftconv::conv2d_input_grad(grad_output, weight, input_size, ...) -> Tensor   (backward data)
//   fftconv::conv2d_weight_grad(grad_output, input, weight_size, ...) -> Tensor  (backward filter)
//
// A kernel checks its arguments with torch's rules, finds (or builds) the plan in the per-device
// plan cache and enqueues it on the current stream, with a workspace from PyTorch's caching
// allocator. Where Auto ranks cuDNN first, and for what the engine does not compute (float64,
// a CPU build without the host backend, fp16/bf16 on the CPU), the kernel calls aten's own
// convolution. Autograd and autocast kernels are in autograd.cpp, fake kernels in Python.
#include <ATen/ATen.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#if FFTCONV_TORCH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/EmptyTensor.h>
#include <c10/cuda/CUDAGuard.h>
#endif

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "algos/registry.h"
#include "geometry/index_math.h"
#include "ops.h"
#include "plan_cache.h"
#include "training_spectrum.h"

namespace fftconv::torch_ext {

namespace {

// ---- argument checks, in torch's words ---------------------------------------------------------

std::optional<DType> engine_dtype(at::ScalarType t) {
  switch (t) {
    case at::kFloat:
      return DType::kF32;
    case at::kHalf:
      return DType::kF16;
    case at::kBFloat16:
      return DType::kBF16;
    default:
      return std::nullopt;
  }
}

void check_pair(const char* op, const char* name, at::IntArrayRef v) {
  TORCH_CHECK_VALUE(v.size() == 2, op, ": expected ", name, " to have 2 elements, got ", v.size());
}

void check_params(const char* op, const ConvParams& p) {
  check_pair(op, "stride", p.stride);
  check_pair(op, "padding", p.padding);
  check_pair(op, "dilation", p.dilation);
  for (int i = 0; i < 2; ++i) {
    TORCH_CHECK_VALUE(p.stride[i] >= 1, op, ": stride must be positive, got ", p.stride);
    TORCH_CHECK_VALUE(p.padding[i] >= 0, op, ": padding must be non-negative, got ", p.padding);
    TORCH_CHECK_VALUE(p.dilation[i] >= 1, op, ": dilation must be positive, got ", p.dilation);
  }
  TORCH_CHECK_VALUE(p.groups >= 1, op, ": groups must be positive, got ", p.groups);
}

void check_tensor(const char* op, const char* name, const at::Tensor& t, const at::Tensor& ref,
                  const char* ref_name, int64_t dim) {
  TORCH_CHECK(t.defined(), op, ": ", name, " is undefined");
  TORCH_CHECK(at::isFloatingType(t.scalar_type()), op, ": expected a floating-point ", name,
              ", got ", t.scalar_type());
  TORCH_CHECK(t.device() == ref.device(), op, ": expected ", name, " and ", ref_name,
              " on the same device, got ", t.device(), " and ", ref.device());
  TORCH_CHECK(t.scalar_type() == ref.scalar_type(), op, ": expected ", name, " and ", ref_name,
              " of the same dtype, got ", t.scalar_type(), " and ", ref.scalar_type());
  if (dim > 0) {
    TORCH_CHECK(t.dim() == dim, op, ": expected a ", dim, "-D ", name, " (", dim == 4 ? "NCHW" : "",
                "), got ", t.dim(), "-D of shape ", t.sizes());
  }
}

void check_device_kind(const char* op, const at::Tensor& t) {
  TORCH_CHECK(t.is_cuda() || t.is_cpu(), op, ": tensors must be on a CUDA device or the CPU, got ",
              t.device());
}

// The descriptor of a problem with input (n, c, h, w) and weight (k, c/groups, r, s).
ConvDesc make_desc(const char* op, at::IntArrayRef in, at::IntArrayRef wt, const ConvParams& p,
                   DType dtype) {
  TORCH_CHECK(in.size() == 4 && wt.size() == 4, op, ": expected 4-D input and weight sizes");
  TORCH_CHECK(in[1] == wt[1] * p.groups, op, ": expected input of shape ", in, " to have ",
              wt[1] * p.groups, " channels (weight ", wt, " with groups=", p.groups, "), got ",
              in[1]);
  TORCH_CHECK(wt[0] % p.groups == 0, op, ": expected weight's out_channels (", wt[0],
              ") to be divisible by groups (", p.groups, ")");
  ConvDesc d;
  d.n = in[0], d.c = in[1], d.h = in[2], d.w = in[3];
  d.k = wt[0], d.r = wt[2], d.s = wt[3];
  d.pad_h = p.padding[0], d.pad_w = p.padding[1];
  d.stride_h = p.stride[0], d.stride_w = p.stride[1];
  d.dil_h = p.dilation[0], d.dil_w = p.dilation[1];
  d.groups = p.groups;
  d.dtype = dtype;
  d.border = p.border;
  if (d.n == 0) return d;  // empty batch: no plan, handled by the caller
  std::string why;
  if (d.validate(&why) != Status::kSuccess) {
    TORCH_CHECK(false, op, ": input ", in, ", weight ", wt, ", stride ", p.stride, ", padding ",
                p.padding, ", dilation ", p.dilation, ", groups ", p.groups, ": ", why);
  }
  return d;
}

std::array<int64_t, 4> output_size(const ConvDesc& d) { return {d.n, d.k, d.out_h(), d.out_w()}; }

// ---- plans -------------------------------------------------------------------------------------

bool is_capturing(Backend backend, cudaStream_t stream) {
  if (backend != Backend::kGpu) return false;
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  const cudaError_t err = cudaStreamIsCapturing(stream, &status);
  TORCH_CHECK(err == cudaSuccess, "fftconv: cudaStreamIsCapturing: ", cudaGetErrorString(err));
  return status != cudaStreamCaptureStatusNone;
}

// On the CPU under Auto, filters whose dilated extent is at most this on both sides go to aten:
// PyTorch's CPU convolution (oneDNN) beats the host FFT there, whose transforms cost about a
// millisecond at least on the 2-core CI machine (3x3 to 11x11: slower in 20 of 25 cases, up to
// 20x; 15x15 and more: faster in 13 of 15, up to 33x; data/results/cpu-2core/2026-12-03-host-fft).
constexpr std::int64_t kHostFftMinExtent = 12;

bool small_for_host_fft(const ConvDesc& d) {
  return d.dil_h * (d.r - 1) + 1 < kHostFftMinExtent && d.dil_w * (d.s - 1) + 1 < kHostFftMinExtent;
}

// Measured Auto (torch.backends.cudnn.benchmark on): where the estimates of the engine's best
// algorithm and of cuDNN are within this factor of each other, the first call times both on its
// tensors. The estimates were off by up to 6.5x on the parity set's dense fp16 cases
// (data/results/h200/2026-12-04-parity); beyond 16x they have never been wrong.
constexpr double kMeasureWithin = 16.0;
// Where the estimate ranks cuDNN first, the engine's plan is built and timed only when its
// workspace is at most this (the workspace comes from PyTorch's caching allocator and stays
// reserved there); a larger one keeps the estimate's choice.
constexpr std::size_t kMeasureWorkspaceLimit = std::size_t{1} << 30;
// fp32's promise, whatever runs: rel-L2 against float64 at most this. Under cudnn.benchmark,
// PyTorch's cuDNN search may pick algorithms that miss it (5x5 backward filter on 64 to 512
// channels: 1.5e-3 to 3.7e-3, data/results/h200/2026-12-04-measured), so aten's first fp32
// result of such a plan is checked against float64 before aten is kept.
constexpr double kFp32Tolerance = 1e-5;

std::atomic<bool> g_strict_fp32{true};
std::atomic<int> g_cudnn_search{static_cast<int>(CudnnSearch::kAuto)};
std::atomic<bool> g_own_fft{false};

std::string estimate_text(const detail::RankedAlgo& own, const detail::RankedAlgo& cudnn) {
  return std::string("estimates: ") + algo_name(own.algo) + " " + detail::us_text(own.us) +
         ", cudnn " + detail::us_text(cudnn.us);
}

Options entry_options(Pass pass, Algo algo, Backend backend) {
  Options o;
  o.algo = algo;
  o.pass = pass;
  o.backend = backend;
  o.check_pointers = false;  // torch has checked the tensors' devices
  o.cudnn_search = cudnn_search();
  o.own_fft = own_fft();
  return o;
}

// `shared`: for a plan that keeps a frozen filter, the entry of the same problem without one
// (its measured choice, if any, carries over); null otherwise.
std::shared_ptr<PlanEntry> build_entry(const ConvDesc& d, Pass pass, Algo algo, Backend backend,
                                       PlanEntry* shared = nullptr) {
  auto e = std::make_shared<PlanEntry>();
  Options o = entry_options(pass, algo, backend);
  const bool auto_gpu = backend == Backend::kGpu && algo == Algo::kAuto;
  const bool auto_cpu = backend == Backend::kCpu && algo == Algo::kAuto;
  if (auto_cpu && small_for_host_fft(d)) {
    e->use_aten = true;
    return e;
  }
  const bool benchmark = at::globalContext().benchmarkCuDNN();
  // Whether aten's fp32 results of this plan are held to kFp32Tolerance: strict_fp32 on, and
  // cuDNN's TF32 off (a user who allows TF32 convolutions has chosen their precision).
  e->check_fp32 = !shared && benchmark && d.dtype == DType::kF32 && strict_fp32() &&
                  !at::globalContext().allowTF32CuDNN();
  // An aten plan, settled at its first call where its fp32 results are checked.
  auto aten_entry = [&](const std::string& why) {
    e->use_aten = true;
    e->plan.reset();
    e->settle_pending = e->check_fp32;
    e->choice += why;
    return e;
  };
  bool inherited_cudnn = false;  // the engine's own cuDNN path, chosen for the shared entry
  bool measure = false;
  bool cudnn_ranked = false;  // aten can run it (Auto's ranking has cuDNN)
  if (auto_gpu) {
    // The engine's best own algorithm and cuDNN's estimate (cuDNN's work goes to aten).
    const std::vector<detail::RankedAlgo> ranked = detail::auto_ranking(d, o);
    const detail::RankedAlgo* own = nullptr;
    const detail::RankedAlgo* cudnn = nullptr;
    for (const detail::RankedAlgo& r : ranked) {
      if (r.algo == Algo::kCudnn) {
        cudnn = cudnn ? cudnn : &r;
      } else {
        own = own ? own : &r;
      }
    }
    const bool aten_first = !ranked.empty() && ranked.front().algo == Algo::kCudnn;
    cudnn_ranked = cudnn != nullptr;
    // The algorithm the plan without a kept filter settled on, where it was chosen over aten
    // (measured faster, or aten's fp32 result missed the tolerance); read under its mutex, which
    // settle() holds while it decides.
    std::optional<Algo> shared_algo;
    if (shared && aten_first) {
      std::lock_guard<std::mutex> lock(shared->mutex);
      if (shared->plan && !shared->use_aten && !shared->settle_pending) {
        shared_algo = shared->plan->info().algo;
      }
    }
    if (shared_algo) {
      // Keep it. The engine's own cuDNN path is what Auto builds within the engine here (with
      // the kept low-rank check); another algorithm is forced.
      inherited_cudnn = *shared_algo == Algo::kCudnn;
      if (!inherited_cudnn) o.algo = *shared_algo;
      e->choice = "the algorithm chosen for the same problem without a kept filter";
    } else if (own && cudnn) {
      e->choice = estimate_text(*own, *cudnn);
      measure = !shared && benchmark &&
                std::max(own->us, cudnn->us) <= kMeasureWithin * std::min(own->us, cudnn->us);
      if (aten_first && !measure) return aten_entry("");
      if (measure) o.algo = own->algo;  // the engine's candidate, cuDNN left to aten
    } else if (aten_first) {
      return aten_entry("");
    }
    // The estimate's choice until measured.
    if (measure && aten_first) e->use_aten = true;
  }
  try {
    e->plan = std::make_unique<Plan>(d, o);
  } catch (const Error& err) {
    if (measure && cudnn_ranked) {  // the engine's candidate cannot be built: aten it is
      return aten_entry(std::string("; the engine's plan failed: ") + err.what());
    }
    TORCH_CHECK(false, "fftconv: cannot plan ", d.to_string(), " (", pass_name(pass), ", algo ",
                algo_name(algo), "): ", err.what());
  }
  if (measure && e->use_aten && e->plan->workspace_size() > kMeasureWorkspaceLimit) {
    return aten_entry("; not timed: the engine's workspace exceeds 1 GiB");
  }
  e->settle_pending = measure;
  if (auto_gpu && !inherited_cudnn && e->plan->info().algo == Algo::kCudnn) return aten_entry("");
  return e;
}

double rel_l2(const at::Tensor& a, const at::Tensor& ref) {
  const double den = ref.norm().item<double>();
  const double num = (a.to(at::kDouble) - ref).norm().item<double>();
  return den > 0.0 ? num / den : (num > 0.0 ? INFINITY : 0.0);
}

// Settles a settle_pending entry at its first call, on the call's own tensors. `engine` and
// `aten` each enqueue one call of the pass on `stream` and return its result (the engine's in
// buffers it keeps between calls, so that its graph replay is what is timed); `reference` returns
// the pass in float64 (through aten).
//  - With an engine plan: each candidate runs twice untimed (the plan's first calls; aten's cuDNN
//    search under cudnn.benchmark), then kMeasureRounds times alternately between CUDA events;
//    the smaller median wins. An engine candidate that runs out of memory loses.
//  - Where aten wins (or is the only candidate) on fp32 data, its result must be within
//    kFp32Tolerance of float64; if not, the engine's plan runs (without one: the plan Auto builds
//    within the engine, whose cuDNN path keeps to strict fp32 algorithms).
// While the stream is being captured nothing runs here and the current choice stands (settle
// waits for the stream: a capture in cudaStreamCaptureModeGlobal on another thread at that
// moment fails, as it would with any synchronising call). An engine candidate that fails in any
// way loses; a check that cannot run (e.g. no memory for the float64 copies) is reported in
// describe() and aten stays; either way the entry is settled. Errors of aten itself propagate.
// The engine's timed calls replay the graph its second call captured (same buffers), as calls
// do in steady state where the caching allocator hands the same blocks back.
template <typename Engine, typename Aten, typename Reference>
void settle(PlanEntry& e, const ConvDesc& d, Pass pass, Backend backend, cudaStream_t stream,
            Engine&& engine, Aten&& aten, Reference&& reference) {
#if FFTCONV_TORCH_CUDA
  std::lock_guard<std::mutex> lock(e.mutex);
  if (!e.settle_pending || is_capturing(backend, stream)) return;
  constexpr int kMeasureRounds = 5;
  at::Tensor aten_out;
  bool use_aten = true;
  std::string text;
  if (e.plan) {
    auto check = [](cudaError_t err) {
      TORCH_CHECK(err == cudaSuccess,
                  "fftconv: timing Auto's candidates: ", cudaGetErrorString(err));
    };
    std::array<cudaEvent_t, 4 * kMeasureRounds> ev{};
    struct Events {
      std::array<cudaEvent_t, 4 * kMeasureRounds>& ev;
      ~Events() {
        for (cudaEvent_t x : ev) {
          if (x != nullptr) cudaEventDestroy(x);
        }
      }
    } events{ev};
    for (cudaEvent_t& x : ev) check(cudaEventCreate(&x));
    std::array<float, kMeasureRounds> engine_ms{}, aten_ms{};
    bool engine_ok = true;
    std::string engine_error;
    try {
      engine();
      engine();
    } catch (const c10::Error& err) {  // fftconv::Error reaches here as c10::Error (engine_call)
      engine_ok = false;
      engine_error = err.what_without_backtrace();
    }
    aten();
    aten();
    auto timed_engine = [&](cudaEvent_t* x) {
      check(cudaEventRecord(x[0], stream));
      engine();
      check(cudaEventRecord(x[1], stream));
    };
    for (int i = 0; i < kMeasureRounds; ++i) {  // the order alternates round by round
      cudaEvent_t* x = &ev[4 * i];
      if (engine_ok && i % 2 == 0) timed_engine(x);
      check(cudaEventRecord(x[2], stream));
      aten_out = aten();
      check(cudaEventRecord(x[3], stream));
      if (engine_ok && i % 2 == 1) timed_engine(x);
    }
    check(cudaStreamSynchronize(stream));
    for (int i = 0; i < kMeasureRounds; ++i) {
      if (engine_ok) check(cudaEventElapsedTime(&engine_ms[i], ev[4 * i], ev[4 * i + 1]));
      check(cudaEventElapsedTime(&aten_ms[i], ev[4 * i + 2], ev[4 * i + 3]));
    }
    std::sort(engine_ms.begin(), engine_ms.end());
    std::sort(aten_ms.begin(), aten_ms.end());
    const float engine_med = engine_ms[kMeasureRounds / 2], aten_med = aten_ms[kMeasureRounds / 2];
    use_aten = !engine_ok || aten_med < engine_med;
    char buf[160];
    if (engine_ok) {
      std::snprintf(buf, sizeof(buf), "measured: %s %.4f ms, aten %.4f ms (median of %d)",
                    algo_name(e.plan->info().algo), engine_med, aten_med, kMeasureRounds);
    } else {
      std::snprintf(buf, sizeof(buf), "measured: aten %.4f ms; %s failed: ", aten_med,
                    algo_name(e.plan->info().algo));
    }
    text = buf + engine_error.substr(0, 200);
    // No call runs the plan while the entry is pending (aten runs during a capture), so the
    // failed plan can go.
    if (!engine_ok) e.plan.reset();
  }
  if (use_aten && e.check_fp32) {
    if (!aten_out.defined()) aten_out = aten();
    double err = 0.0;
    try {
      err = rel_l2(aten_out, reference());
    } catch (const c10::Error& ex) {
      e.choice += std::string(e.choice.empty() ? "" : "; ") + text + (text.empty() ? "" : "; ") +
                  "aten's fp32 result not checked: " +
                  std::string(ex.what_without_backtrace()).substr(0, 200) + "; chose aten";
      e.use_aten = true;
      e.settle_pending = false;
      return;
    }
    char buf[160];
    std::snprintf(buf, sizeof(buf), "aten's fp32 result %.1e from float64 (rel-L2)", err);
    text += std::string(text.empty() ? "" : "; ") + buf;
    if (!(err <= kFp32Tolerance)) {
      use_aten = false;
      if (!e.plan) {
        try {
          e.plan = std::make_unique<Plan>(d, entry_options(pass, Algo::kAuto, backend));
        } catch (const Error& err2) {
          TORCH_CHECK(false, "fftconv: aten's fp32 result of ", d.to_string(), " (",
                      pass_name(pass), ") is ", err,
                      " from float64 and no engine plan can run it: ", err2.what());
        }
      }
      text +=
          std::string(", above ") + "1e-05: runs the engine's " + algo_name(e.plan->info().algo);
    }
  }
  text += use_aten ? "; chose aten" : "; chose the engine";
  e.choice += std::string(e.choice.empty() ? "" : "; ") + text;
  e.use_aten = use_aten;
  e.settle_pending = false;
#else
  (void)e, (void)d, (void)pass, (void)backend, (void)stream, (void)engine, (void)aten,
      (void)reference;
#endif
}

[[noreturn]] void capture_miss(const ConvDesc& d, Pass pass, const char* what) {
  TORCH_CHECK(false, "fftconv: ", what, " for ", d.to_string(), " (", pass_name(pass),
              ") while the stream is being captured; run the model once before capture so that "
              "its plans exist (fftconv.backends.plan_cache holds them)");
}

int cache_index(Backend backend, const at::Tensor& t) {
  return backend == Backend::kGpu ? t.get_device() : -1;
}

// The filter tensor's content now: its storage (held weakly), data pointer and version counter.
FilterIdentity identity_of(const at::Tensor& t) {
  FilterIdentity id;
  id.storage = c10::weak_intrusive_ptr<c10::StorageImpl>(t.storage().getWeakStorageImpl());
  id.data = t.data_ptr();
  id.version = t.unsafeGetTensorImpl()->version_counter().current_version();
  return id;
}

// Whether `id` is tensor t's content now.
bool is_content_of(const FilterIdentity& id, const at::Tensor& t) {
  return id.same(t.storage().unsafeGetStorageImpl(), t.data_ptr(),
                 t.unsafeGetTensorImpl()->version_counter().current_version());
}

struct Resolved {
  std::shared_ptr<PlanEntry> entry;
  bool kept = false;  // run with the kept filter (w = nullptr)
};

// The plan for (d, pass, algo). `frozen`: the filter tensor when it may be kept by the plan
// (requires_grad false, forward or backward-data): a frozen filter seen twice gets a plan of its
// own that keeps its spectrum (or, low rank, its 1-D factors: the separable path), refreshed when
// the tensor's version counter changes.
Resolved resolve(const ConvDesc& d, Pass pass, Algo algo, Backend backend, int device,
                 const at::Tensor& frozen, const at::Tensor& frozen_contiguous,
                 cudaStream_t stream) {
  PlanCache& cache = plan_cache(device);
  // Asked only where something would be built: a hit costs no CUDA call.
  auto capturing = [&] { return is_capturing(backend, stream); };
  PlanKey key{d, pass, algo, nullptr};
  std::shared_ptr<PlanEntry> shared = cache.find(key);
  if (!shared) {
    if (capturing()) capture_miss(d, pass, "no plan");
    shared = cache.insert(key, build_entry(d, pass, algo, backend));
  }
  if (!frozen.defined() || shared->use_aten) return {shared, false};

  const c10::StorageImpl* storage = frozen.storage().unsafeGetStorageImpl();

  PlanKey kept_key = key;
  kept_key.filter = storage;
  std::shared_ptr<PlanEntry> kept = cache.find(kept_key);
  if (!kept) {
    // A plan forced to the separable path runs kept filters only: it keeps one at first sight.
    if (algo != Algo::kSeparable) {
      std::lock_guard<std::mutex> lock(shared->mutex);
      bool seen = false;
      for (const FilterIdentity& s : shared->seen) seen = seen || is_content_of(s, frozen);
      if (!seen) {
        constexpr std::size_t kSeen = 8;
        if (shared->seen.size() < kSeen) {
          shared->seen.push_back(identity_of(frozen));
        } else {
          shared->seen[shared->seen_next] = identity_of(frozen);
          shared->seen_next = (shared->seen_next + 1) % kSeen;
        }
        return {shared, false};
      }
    }
    if (capturing()) return {shared, false};  // no set-up during capture: run with the filter given
    kept = cache.insert(kept_key, build_entry(d, pass, algo, backend, shared.get()));
    if (kept->use_aten) return {kept, false};
  }
  std::lock_guard<std::mutex> lock(kept->mutex);
  if (!is_content_of(kept->kept, frozen)) {
    if (capturing()) capture_miss(d, pass, "a changed frozen filter");
    try {
      kept->plan->set_filter(frozen_contiguous.data_ptr(), stream);
    } catch (const Error& err) {
      TORCH_CHECK(false, "fftconv: keeping the filter of ", d.to_string(), ": ", err.what());
    }
    kept->kept = identity_of(frozen);
  }
  return {kept, true};
}

// A filter the plan may keep: not trained, and with a version counter (not an inference tensor).
at::Tensor frozen_filter(const at::Tensor& w) {
  if (w.requires_grad() || w.is_inference()) return at::Tensor();
  return w;
}

// The plan's workspace from the tensor's allocator (PyTorch's caching allocator on CUDA: the
// block returns to it, ordered on the current stream, when the call's DataPtr is dropped). A
// DataPtr, not a tensor: no TensorImpl per call.
struct Workspace {
  at::DataPtr ptr;
  std::size_t bytes = 0;
  void* get() const { return bytes ? ptr.get() : nullptr; }
};
Workspace workspace_for(const Plan& plan, const at::Tensor& like) {
  Workspace ws;
  ws.bytes = plan.workspace_size();
  if (ws.bytes == 0) return ws;
  c10::Allocator* allocator = like.is_cuda() ? c10::GetAllocator(c10::DeviceType::CUDA)
                                             : c10::GetAllocator(c10::DeviceType::CPU);
  ws.ptr = allocator->allocate(ws.bytes);
  return ws;
}

// A new contiguous tensor of `like`'s dtype and device for a kernel's result. On CUDA straight
// from the caching allocator (at::detail::empty_cuda, what at::empty's CUDA kernel calls),
// without at::empty's trip through the dispatcher.
at::Tensor new_output(at::IntArrayRef size, const at::Tensor& like) {
#if FFTCONV_TORCH_CUDA
  if (like.is_cuda()) {
    return at::detail::empty_cuda(size, like.scalar_type(), like.device(), std::nullopt);
  }
#endif
  return at::empty(size, like.options());
}

cudaStream_t current_stream(Backend backend, const at::Tensor& t) {
#if FFTCONV_TORCH_CUDA
  if (backend == Backend::kGpu) return at::cuda::getCurrentCUDAStream(t.get_device()).stream();
#else
  (void)t;
#endif
  (void)backend;
  return nullptr;
}

// Where the engine runs a tensor of this device and dtype; nullopt: aten does.
std::optional<Backend> engine_backend(const at::Tensor& t) {
  if (!engine_dtype(t.scalar_type())) return std::nullopt;
  if (t.is_cuda()) {
#if FFTCONV_TORCH_CUDA
    return Backend::kGpu;
#else
    return std::nullopt;
#endif
  }
#if FFTCONV_TORCH_HOST_FFT
  if (t.scalar_type() == at::kFloat) return Backend::kCpu;
#endif
  return std::nullopt;
}

// ---- a training step's filter spectrum (training_spectrum.h) -----------------------------------

// Forward kernel: the spectrum to run from where the autograd kernel asked for one (written now
// into memory of the tensor's allocator, and handed back to it), or null to run as usual.
std::shared_ptr<const TrainingSpectrum> forward_spectrum(const std::shared_ptr<PlanEntry>& entry,
                                                         const at::Tensor& weight,
                                                         const at::Tensor& w, Backend backend,
                                                         cudaStream_t stream, void* ws,
                                                         std::size_t ws_bytes) {
  if (!take_training_spectrum_request()) return nullptr;
  const Plan& plan = *entry->plan;
  const std::size_t bytes = plan.filter_spectrum_size();
  if (bytes == 0 || bytes > training_spectrum_max_bytes() || is_capturing(backend, stream)) {
    return nullptr;
  }
  auto s = std::make_shared<TrainingSpectrum>(bytes, weight.is_cuda());
  s->filter = identity_of(weight);
  s->writer = entry;
  s->stream = stream;
  plan.filter_spectrum(w.data_ptr(), s->data, ws, ws_bytes, stream);
  give_training_spectrum(s);
  return s;
}

// Input-gradient kernel: the spectrum its node offers, where it is of this weight's content, was
// written on this stream in this plan's layout and the stream is not being captured; else null.
std::shared_ptr<const TrainingSpectrum> backward_spectrum(const Plan& plan,
                                                          const at::Tensor& weight, Backend backend,
                                                          cudaStream_t stream) {
  std::shared_ptr<const TrainingSpectrum> s = take_offered_training_spectrum();
  if (!s || s->stream != stream || !is_content_of(s->filter, weight) || !s->writer->plan ||
      !s->writer->plan->shares_filter_spectrum(plan) || is_capturing(backend, stream)) {
    return nullptr;
  }
  return s;
}

template <typename F>
auto engine_call(const ConvDesc& d, Pass pass, F&& f) {
  try {
    return f();
  } catch (const Error& err) {
    TORCH_CHECK(false, "fftconv: ", d.to_string(), " (", pass_name(pass), "): ", err.what());
  }
}

// ---- aten fallbacks ----------------------------------------------------------------------------
// With a padding_mode other than zeros, aten runs the bordered problem: the input continued by
// the border, convolved without padding, and the gradient of the bordered input folded back.
// Within F.pad's limits (reflect: padding below the extent; circular: up to it; replicate: any)
// the input is bordered by aten's own pad, beyond them (where the engine mirrors or wraps again)
// by an index_select over the border's map; the gradient is folded back by axis_fold, in a fixed
// order.

// The padding's storage for the bordered problem's parameters.
constexpr std::array<int64_t, 2> kNoPadding{0, 0};

ConvParams unpadded(const ConvParams& p) {
  return ConvParams{p.stride, at::IntArrayRef(kNoPadding), p.dilation, p.groups, Border::kZero};
}

bool pad_op_takes(const ConvParams& p, int64_t h, int64_t w) {
  switch (p.border) {
    case Border::kReflect:
      return p.padding[0] < h && p.padding[1] < w;
    case Border::kCircular:
      return p.padding[0] <= h && p.padding[1] <= w;
    default:
      return true;
  }
}

const char* pad_mode(Border b) {
  return b == Border::kReflect ? "reflect" : b == Border::kReplicate ? "replicate" : "circular";
}

// Index along an axis of extent n that each position of the bordered axis [-pad, n + pad) holds,
// built on `opt`'s device by tensor ops (no host copy: capturable, no stream sync); the same
// rule as the engine's border_index.
at::Tensor border_axis(int64_t n, int64_t pad, Border b, const at::TensorOptions& opt) {
  const at::Tensor i = at::arange(-pad, n + pad, opt);
  switch (b) {
    case Border::kReflect: {
      if (n == 1) return at::zeros_like(i);
      const at::Tensor m = at::remainder(i, 2 * (n - 1));
      return at::where(m < n, m, 2 * (n - 1) - m);
    }
    case Border::kReplicate:
      return at::clamp(i, 0, n - 1);
    default:  // circular (zeros never reach here)
      return at::remainder(i, n);
  }
}

// Element of an h x w plane that each element of the bordered plane holds.
at::Tensor border_map(const ConvParams& p, int64_t h, int64_t w, const at::Device& device) {
  const at::TensorOptions opt = at::TensorOptions().dtype(at::kLong).device(device);
  const at::Tensor rows = border_axis(h, p.padding[0], p.border, opt);
  const at::Tensor cols = border_axis(w, p.padding[1], p.border, opt);
  return (rows.unsqueeze(1) * w + cols.unsqueeze(0)).flatten();
}

at::Tensor bordered(const at::Tensor& x, const ConvParams& p) {
  const int64_t ph = p.padding[0], pw = p.padding[1];
  if (pad_op_takes(p, x.size(2), x.size(3)))
    return at::pad(x, {pw, pw, ph, ph}, pad_mode(p.border));
  const at::Tensor map = border_map(p, x.size(2), x.size(3), x.device());
  return x.flatten(2).index_select(2, map).view(
      {x.size(0), x.size(1), x.size(2) + 2 * ph, x.size(3) + 2 * pw});
}

// The adjoint of bordering axis `dim` (extent n) by `pad` on each side: each bordered
// position's gradient added to the element it holds. Written with slices, flips and sums, not
// scatters: atomics would make the sums' order, and so the result's last bits, differ from run to
// run on the GPU (which gradcheck catches in float64); nor a matrix product, which TF32 matmuls
// would round and deterministic mode would refuse without a cuBLAS workspace setting.
at::Tensor axis_fold(const at::Tensor& g, int64_t dim, int64_t n, int64_t pad, Border b) {
  if (pad == 0) return g;
  const bool within = b == Border::kReplicate || (b == Border::kReflect ? pad < n : pad <= n);
  if (!within) {
    // Mirrored or wrapped more than once (n <= pad): the positions' indices repeat with period
    // P (2 (n - 1) mirrored, n wrapped); position i (from -pad) is residue (i mod P) of it.
    // The axis, shifted so that residues fall into columns and padded to whole periods, summed
    // over periods (in fp32 for half types), then one period folded: residue r < n holds r,
    // r >= n (mirrored) holds P - r.
    const at::ScalarType acc =
        at::isReducedFloatingType(g.scalar_type()) ? at::kFloat : g.scalar_type();
    const int64_t period = b == Border::kReflect ? 2 * (n - 1) : n;
    if (period == 0) return g.to(acc).sum(dim, true).to(g.scalar_type());  // n == 1 mirrored
    const int64_t length = n + 2 * pad;
    const int64_t front = (period - pad % period) % period;
    const int64_t periods = (front + length + period - 1) / period;
    const at::Tensor last = g.to(acc).movedim(dim, -1);
    std::vector<int64_t> shape(last.sizes().begin(), last.sizes().end() - 1);
    shape.push_back(periods);
    shape.push_back(period);
    const at::Tensor residues =
        at::constant_pad_nd(last, {front, periods * period - front - length}).view(shape).sum(-2);
    at::Tensor out = residues.narrow(-1, 0, n).clone();
    if (period > n) out.narrow(-1, 1, n - 2).add_(residues.narrow(-1, n, n - 2).flip(-1));
    return out.movedim(-1, dim).to(g.scalar_type()).contiguous();
  }
  at::Tensor out = g.narrow(dim, pad, n).clone();
  switch (b) {
    case Border::kReflect:  // position -i holds i, position n - 1 + i holds n - 1 - i
      out.narrow(dim, 1, pad).add_(g.narrow(dim, 0, pad).flip(dim));
      out.narrow(dim, n - 1 - pad, pad).add_(g.narrow(dim, pad + n, pad).flip(dim));
      break;
    case Border::kReplicate:
      out.narrow(dim, 0, 1).add_(g.narrow(dim, 0, pad).sum(dim, true));
      out.narrow(dim, n - 1, 1).add_(g.narrow(dim, pad + n, pad).sum(dim, true));
      break;
    default:  // circular
      out.narrow(dim, n - pad, pad).add_(g.narrow(dim, 0, pad));
      out.narrow(dim, 0, pad).add_(g.narrow(dim, pad + n, pad));
  }
  return out;
}

at::Tensor folded(const at::Tensor& g, at::IntArrayRef in, const ConvParams& p) {
  return axis_fold(axis_fold(g, 2, in[2], p.padding[0], p.border), 3, in[3], p.padding[1],
                   p.border);
}

at::Tensor aten_forward(const at::Tensor& x, const at::Tensor& w,
                        const std::optional<at::Tensor>& b, const ConvParams& p) {
  if (p.border != Border::kZero) return aten_forward(bordered(x, p), w, b, unpadded(p));
  return at::convolution(x, w, b, p.stride, p.padding, p.dilation, false, {0, 0}, p.groups);
}

at::Tensor aten_input_grad(const at::Tensor& dy, const at::Tensor& w, at::IntArrayRef in,
                           const ConvParams& p) {
  if (p.border != Border::kZero) {
    const std::array<int64_t, 4> inb{in[0], in[1], in[2] + 2 * p.padding[0],
                                     in[3] + 2 * p.padding[1]};
    return folded(aten_input_grad(dy, w, inb, unpadded(p)), in, p);
  }
  // The transposed convolution is the data gradient; output_padding restores the rows and
  // columns a strided forward dropped.
  std::vector<int64_t> out_pad(2);
  for (int i = 0; i < 2; ++i) {
    const int64_t covered = (dy.size(2 + i) - 1) * p.stride[i] - 2 * p.padding[i] +
                            p.dilation[i] * (w.size(2 + i) - 1) + 1;
    out_pad[i] = in[2 + i] - covered;
  }
  return at::convolution(dy, w, std::nullopt, p.stride, p.padding, p.dilation, true, out_pad,
                         p.groups);
}

at::Tensor aten_weight_grad(const at::Tensor& dy, const at::Tensor& x, at::IntArrayRef wsize,
                            const ConvParams& p) {
  if (p.border != Border::kZero) return aten_weight_grad(dy, bordered(x, p), wsize, unpadded(p));
  const at::Tensor w_shape = at::empty(wsize, x.options());  // read for its shape only
  return std::get<1>(at::convolution_backward(dy, x, w_shape, std::nullopt, p.stride, p.padding,
                                              p.dilation, false, {0, 0}, p.groups,
                                              {false, true, false}));
}

Algo parse_algo_arg(const char* op, c10::string_view algo) {
  // Compared in place (parse_algo would build a std::string per call).
  for (Algo a : {Algo::kAuto, Algo::kFft, Algo::kFftTiled, Algo::kFftFused, Algo::kSeparable,
                 Algo::kDirect, Algo::kCudnn, Algo::kImplicitGemm}) {
    if (algo == algo_name(a)) return a;
  }
  TORCH_CHECK_VALUE(
      false, op, ": unknown algo '", algo,
      "'; expected one of 'auto', 'fft', 'fft_tiled', 'fft_fused', 'separable', 'direct', "
      "'cudnn', 'implicit_gemm'");
}

// nn.Conv2d's padding_mode: what the padding holds.
Border parse_mode_arg(const char* op, c10::string_view mode) {
  if (mode == "zeros") return Border::kZero;
  if (mode == "reflect") return Border::kReflect;
  if (mode == "replicate") return Border::kReplicate;
  if (mode == "circular") return Border::kCircular;
  TORCH_CHECK_VALUE(false, op, ": unknown padding_mode '", mode,
                    "'; expected one of 'zeros', 'reflect', 'replicate', 'circular'");
}

// Whether the named algorithm implements the pass on d (the engine's own rule).
bool implements(Algo algo, const ConvDesc& d, Pass pass) {
  Options o;
  o.pass = pass;
  o.algo = algo;  // forced: an entry may leave problems to others under Auto only
  for (const detail::AlgoFactory* f : detail::algorithm_list()) {
    if (f->algo() == algo) return detail::entry_support(*f, d, o).ok();
  }
  return false;
}

// The algorithm a pass runs when the user named one: the full-image FFT for the passes that the
// tiled (forward only), separable (forward and input gradient) and direct (no strided input
// gradient) paths do not implement, and
// for a backward filter whose correlation the fused path cannot hold (its period can exceed the
// forward pass's), so that a model trained with either still gets every gradient.
Algo pass_algo(Algo algo, Pass pass, const ConvDesc& d) {
  if (algo == Algo::kFftTiled && pass != Pass::kForward) return Algo::kFft;
  // The implicit-GEMM path is the backward filter's: Auto chooses the other passes (the forward
  // pass too, where conv2d asks without pass_algo); a backward filter it cannot run says why.
  if (algo == Algo::kImplicitGemm && pass != Pass::kBackwardFilter) return Algo::kAuto;
  if (algo == Algo::kSeparable && pass == Pass::kBackwardFilter) return Algo::kFft;
  // The direct path's passes: every one but a strided backward data.
  if (algo == Algo::kDirect && !implements(algo, d, pass)) return Algo::kFft;
  if (algo == Algo::kFftFused && pass == Pass::kBackwardFilter && !implements(algo, d, pass)) {
    return Algo::kFft;
  }
  return algo;
}

// On the CPU only the host FFT (algo 'auto' or 'fft') runs in the engine.
bool engine_takes(Backend backend, Algo algo) {
  return backend == Backend::kGpu || algo == Algo::kAuto || algo == Algo::kFft;
}

}  // namespace

bool strict_fp32() { return g_strict_fp32.load(std::memory_order_relaxed); }
void set_strict_fp32(bool on) { g_strict_fp32.store(on, std::memory_order_relaxed); }
CudnnSearch cudnn_search() {
  return static_cast<CudnnSearch>(g_cudnn_search.load(std::memory_order_relaxed));
}
void set_cudnn_search(CudnnSearch s) {
  g_cudnn_search.store(static_cast<int>(s), std::memory_order_relaxed);
}
bool own_fft() { return g_own_fft.load(std::memory_order_relaxed); }
void set_own_fft(bool on) { g_own_fft.store(on, std::memory_order_relaxed); }

// ---- kernels -----------------------------------------------------------------------------------

at::Tensor conv2d_kernel(const at::Tensor& input, const at::Tensor& weight,
                         const std::optional<at::Tensor>& bias, at::IntArrayRef stride,
                         at::IntArrayRef padding, at::IntArrayRef dilation, int64_t groups,
                         c10::string_view algo_name, c10::string_view padding_mode) {
  constexpr const char* op = "fftconv.conv2d";
  const ConvParams p{stride, padding, dilation, groups, parse_mode_arg(op, padding_mode)};
  check_params(op, p);
  check_device_kind(op, input);
  check_tensor(op, "input", input, input, "input", 4);
  check_tensor(op, "weight", weight, input, "input", 4);
  if (bias && bias->defined()) {
    check_tensor(op, "bias", *bias, input, "input", 1);
    TORCH_CHECK(bias->size(0) == weight.size(0), op, ": expected bias of ", weight.size(0),
                " elements (weight's out_channels), got ", bias->size(0));
  }
  const Algo algo = parse_algo_arg(op, algo_name);
  const c10::DeviceGuard guard(input.device());
  const std::optional<Backend> backend = engine_backend(input);
  const ConvDesc d = make_desc(op, input.sizes(), weight.sizes(), p,
                               engine_dtype(input.scalar_type()).value_or(DType::kF32));
  if (d.n == 0) return at::empty(output_size(d), input.options());
  if (!backend || !engine_takes(*backend, algo)) return aten_forward(input, weight, bias, p);

  const at::Tensor x = input.contiguous();
  const at::Tensor w = weight.contiguous();
  const at::Tensor b = bias && bias->defined() ? bias->contiguous() : at::Tensor();
  const cudaStream_t stream = current_stream(*backend, x);
  const Resolved r = resolve(d, Pass::kForward, algo == Algo::kImplicitGemm ? Algo::kAuto : algo,
                             *backend, cache_index(*backend, x), frozen_filter(weight), w, stream);
  const std::optional<at::Tensor> bo = b.defined() ? std::optional<at::Tensor>(b) : std::nullopt;
  if (r.entry->settle_pending) {
    at::Tensor ty;
    Workspace tws;
    settle(
        *r.entry, d, Pass::kForward, *backend, stream,
        [&] {
          if (!ty.defined())
            ty = new_output(output_size(d), x), tws = workspace_for(*r.entry->plan, x);
          engine_call(d, Pass::kForward, [&] {
            r.entry->plan->forward(x.data_ptr(), w.data_ptr(), b.defined() ? b.data_ptr() : nullptr,
                                   ty.data_ptr(), tws.get(), tws.bytes, stream);
          });
          return ty;
        },
        [&] { return aten_forward(x, w, bo, p); },
        [&] {
          const at::Tensor bd = b.defined() ? b.to(at::kDouble) : at::Tensor();
          return aten_forward(x.to(at::kDouble), w.to(at::kDouble),
                              bd.defined() ? std::optional<at::Tensor>(bd) : std::nullopt, p);
        });
  }
  // Still pending: the stream is being captured (settle timed nothing); aten runs meanwhile.
  if (r.entry->use_aten || r.entry->settle_pending) return aten_forward(x, w, bo, p);
  at::Tensor y = new_output(output_size(d), x);
  const Workspace ws = workspace_for(*r.entry->plan, x);
  engine_call(d, Pass::kForward, [&] {
    const Plan& plan = *r.entry->plan;
    const void* bp = b.defined() ? b.data_ptr() : nullptr;
    const std::shared_ptr<const TrainingSpectrum> s =
        r.kept ? nullptr
               : forward_spectrum(r.entry, weight, w, *backend, stream, ws.get(), ws.bytes);
    if (s) {
      plan.forward_with_spectrum(x.data_ptr(), s->data, bp, y.data_ptr(), ws.get(), ws.bytes,
                                 stream);
    } else {
      plan.forward(x.data_ptr(), r.kept ? nullptr : w.data_ptr(), bp, y.data_ptr(), ws.get(),
                   ws.bytes, stream);
    }
  });
  return y;
}

at::Tensor conv2d_input_grad_kernel(const at::Tensor& grad_output, const at::Tensor& weight,
                                    at::IntArrayRef input_size, at::IntArrayRef stride,
                                    at::IntArrayRef padding, at::IntArrayRef dilation,
                                    int64_t groups, c10::string_view algo_name,
                                    c10::string_view padding_mode) {
  constexpr const char* op = "fftconv.conv2d_input_grad";
  const ConvParams p{stride, padding, dilation, groups, parse_mode_arg(op, padding_mode)};
  check_params(op, p);
  check_device_kind(op, grad_output);
  check_tensor(op, "grad_output", grad_output, grad_output, "grad_output", 4);
  check_tensor(op, "weight", weight, grad_output, "grad_output", 4);
  TORCH_CHECK_VALUE(input_size.size() == 4, op, ": expected input_size of 4 elements, got ",
                    input_size);
  const Algo algo = parse_algo_arg(op, algo_name);
  const c10::DeviceGuard guard(grad_output.device());
  const std::optional<Backend> backend = engine_backend(grad_output);
  const ConvDesc d = make_desc(op, input_size, weight.sizes(), p,
                               engine_dtype(grad_output.scalar_type()).value_or(DType::kF32));
  TORCH_CHECK(at::IntArrayRef(output_size(d)) == grad_output.sizes(), op, ": grad_output of shape ",
              grad_output.sizes(), " does not match the output ", at::IntArrayRef(output_size(d)),
              " of input ", input_size, " and weight ", weight.sizes());
  if (d.n == 0) return at::zeros(input_size, grad_output.options());
  if (!backend || !engine_takes(*backend, algo)) {
    return aten_input_grad(grad_output, weight, input_size, p);
  }
  const at::Tensor dy = grad_output.contiguous();
  const at::Tensor w = weight.contiguous();
  const cudaStream_t stream = current_stream(*backend, dy);
  const Resolved r = resolve(d, Pass::kBackwardData, pass_algo(algo, Pass::kBackwardData, d),
                             *backend, cache_index(*backend, dy), frozen_filter(weight), w, stream);
  if (r.entry->settle_pending) {
    at::Tensor tdx;
    Workspace tws;
    settle(
        *r.entry, d, Pass::kBackwardData, *backend, stream,
        [&] {
          if (!tdx.defined())
            tdx = new_output(input_size, dy), tws = workspace_for(*r.entry->plan, dy);
          engine_call(d, Pass::kBackwardData, [&] {
            r.entry->plan->backward_data(dy.data_ptr(), w.data_ptr(), tdx.data_ptr(), tws.get(),
                                         tws.bytes, stream);
          });
          return tdx;
        },
        [&] { return aten_input_grad(dy, w, input_size, p); },
        [&] { return aten_input_grad(dy.to(at::kDouble), w.to(at::kDouble), input_size, p); });
  }
  if (r.entry->use_aten || r.entry->settle_pending) return aten_input_grad(dy, w, input_size, p);
  at::Tensor dx = new_output(input_size, dy);
  const Workspace ws = workspace_for(*r.entry->plan, dy);
  engine_call(d, Pass::kBackwardData, [&] {
    const Plan& plan = *r.entry->plan;
    const std::shared_ptr<const TrainingSpectrum> s =
        r.kept ? nullptr : backward_spectrum(plan, weight, *backend, stream);
    if (s) {
      plan.backward_data_with_spectrum(dy.data_ptr(), s->data, dx.data_ptr(), ws.get(), ws.bytes,
                                       stream);
    } else {
      plan.backward_data(dy.data_ptr(), r.kept ? nullptr : w.data_ptr(), dx.data_ptr(), ws.get(),
                         ws.bytes, stream);
    }
  });
  return dx;
}

at::Tensor conv2d_weight_grad_kernel(const at::Tensor& grad_output, const at::Tensor& input,
                                     at::IntArrayRef weight_size, at::IntArrayRef stride,
                                     at::IntArrayRef padding, at::IntArrayRef dilation,
                                     int64_t groups, c10::string_view algo_name,
                                     c10::string_view padding_mode) {
  constexpr const char* op = "fftconv.conv2d_weight_grad";
  const ConvParams p{stride, padding, dilation, groups, parse_mode_arg(op, padding_mode)};
  check_params(op, p);
  check_device_kind(op, grad_output);
  check_tensor(op, "grad_output", grad_output, grad_output, "grad_output", 4);
  check_tensor(op, "input", input, grad_output, "grad_output", 4);
  TORCH_CHECK_VALUE(weight_size.size() == 4, op, ": expected weight_size of 4 elements, got ",
                    weight_size);
  const Algo algo = parse_algo_arg(op, algo_name);
  const c10::DeviceGuard guard(grad_output.device());
  const std::optional<Backend> backend = engine_backend(grad_output);
  const ConvDesc d = make_desc(op, input.sizes(), weight_size, p,
                               engine_dtype(grad_output.scalar_type()).value_or(DType::kF32));
  TORCH_CHECK(at::IntArrayRef(output_size(d)) == grad_output.sizes(), op, ": grad_output of shape ",
              grad_output.sizes(), " does not match the output ", at::IntArrayRef(output_size(d)),
              " of input ", input.sizes(), " and weight ", weight_size);
  if (d.n == 0) return at::zeros(weight_size, grad_output.options());
  if (!backend || !engine_takes(*backend, algo)) {
    return aten_weight_grad(grad_output, input, weight_size, p);
  }
  const at::Tensor dy = grad_output.contiguous();
  const at::Tensor x = input.contiguous();
  const cudaStream_t stream = current_stream(*backend, dy);
  const Resolved r =
      resolve(d, Pass::kBackwardFilter, pass_algo(algo, Pass::kBackwardFilter, d), *backend,
              cache_index(*backend, dy), at::Tensor(), at::Tensor(), stream);
  if (r.entry->settle_pending) {
    at::Tensor tdw;
    Workspace tws;
    settle(
        *r.entry, d, Pass::kBackwardFilter, *backend, stream,
        [&] {
          if (!tdw.defined())
            tdw = new_output(weight_size, dy), tws = workspace_for(*r.entry->plan, dy);
          engine_call(d, Pass::kBackwardFilter, [&] {
            r.entry->plan->backward_filter(x.data_ptr(), dy.data_ptr(), tdw.data_ptr(), tws.get(),
                                           tws.bytes, stream, 1.0f, 0.0f);
          });
          return tdw;
        },
        [&] { return aten_weight_grad(dy, x, weight_size, p); },
        [&] { return aten_weight_grad(dy.to(at::kDouble), x.to(at::kDouble), weight_size, p); });
  }
  if (r.entry->use_aten || r.entry->settle_pending) return aten_weight_grad(dy, x, weight_size, p);
  at::Tensor dw = new_output(weight_size, dy);
  const Workspace ws = workspace_for(*r.entry->plan, dy);
  engine_call(d, Pass::kBackwardFilter, [&] {
    r.entry->plan->backward_filter(x.data_ptr(), dy.data_ptr(), dw.data_ptr(), ws.get(), ws.bytes,
                                   stream, 1.0f, 0.0f);
  });
  return dw;
}

}  // namespace fftconv::torch_ext

TORCH_LIBRARY(fftconv, m) {
  const std::vector<at::Tag> tags{at::Tag::pt2_compliant_tag};
  m.def(
      "conv2d(Tensor input, Tensor weight, Tensor? bias, int[2] stride, int[2] padding, "
      "int[2] dilation, int groups, str algo, str padding_mode=\"zeros\") -> Tensor",
      tags);
  m.def(
      "conv2d_input_grad(Tensor grad_output, Tensor weight, SymInt[4] input_size, int[2] stride, "
      "int[2] padding, int[2] dilation, int groups, str algo, str padding_mode=\"zeros\") "
      "-> Tensor",
      tags);
  m.def(
      "conv2d_weight_grad(Tensor grad_output, Tensor input, SymInt[4] weight_size, int[2] stride, "
      "int[2] padding, int[2] dilation, int groups, str algo, str padding_mode=\"zeros\") "
      "-> Tensor",
      tags);
}

TORCH_LIBRARY_IMPL(fftconv, CPU, m) {
  m.impl("conv2d", TORCH_FN(fftconv::torch_ext::conv2d_kernel));
  m.impl("conv2d_input_grad", TORCH_FN(fftconv::torch_ext::conv2d_input_grad_kernel));
  m.impl("conv2d_weight_grad", TORCH_FN(fftconv::torch_ext::conv2d_weight_grad_kernel));
}

#if FFTCONV_TORCH_CUDA
TORCH_LIBRARY_IMPL(fftconv, CUDA, m) {
  m.impl("conv2d", TORCH_FN(fftconv::torch_ext::conv2d_kernel));
  m.impl("conv2d_input_grad", TORCH_FN(fftconv::torch_ext::conv2d_input_grad_kernel));
  m.impl("conv2d_weight_grad", TORCH_FN(fftconv::torch_ext::conv2d_weight_grad_kernel));
}
#endif
