// The cuDNN path: descriptors, the algorithm search (cudnnFind*, a bounded search of our own, the
// v7 heuristics or a forced name) and the launch, for every pass through cudnn_pass_ops().
#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstring>
#include <vector>

#include "algos/cudnn/cudnn_conv.h"
#include "algos/cudnn/cudnn_graph.h"
#include "algos/cudnn/cudnn_passes.h"
#include "core/check.h"
#include "core/device_buffer.h"
#include "core/timing.h"
#include "stages/bias.h"
#include "stages/fill.h"
#include "tuning/heuristics.h"

namespace fftconv::detail {

bool cudnn_available() { return true; }

namespace {

const std::vector<const char*>& algo_names(Pass pass) { return cudnn_pass_ops(pass).names; }

const char* algo_name(Pass pass, int algo) {
  const auto& names = algo_names(pass);
  return algo >= 0 && algo < static_cast<int>(names.size()) ? names[algo] : "UNKNOWN";
}

const char* math_name(cudnnMathType_t m) {
  switch (m) {
    case CUDNN_DEFAULT_MATH:
      return "default";
    case CUDNN_TENSOR_OP_MATH:
      return "tensor_op";
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION:
      return "tensor_op_conv";
    case CUDNN_FMA_MATH:
      return "fma";
    default:
      return "unknown";
  }
}

// cudnnFind*AlgorithmEx runs every algorithm several times: on wide_c64_512_r45 (45x45 filters,
// 64 channels, 512x512) the backward searches took minutes on the H200. Above this direct-cost
// estimate the v7 heuristics' candidates are instead timed once each, best first, until the
// budget is spent (docs/benchmarking.md, "cuDNN searches").
constexpr double kExhaustiveFindMaxUs = 20000.0;
constexpr float kBoundedSearchBudgetMs = 3000.0f;
// A candidate whose untimed run took this many times the best time so far is not run again: on
// multichannel_r45 strict fp32 backward data the heuristics list ALGO_0 (133 ms) and ALGO_1 before
// FFT (2.70 ms), and timing them twice spent the whole budget before FFT (H200).
constexpr float kSlowCandidateFactor = 2.0f;

// Winograd transforms lose accuracy: WINOGRAD_NONFUSED backward filter gave rel-L2 1.24e-5 on
// seed1_grouped3x3_f32 (H200), over the fp32 tolerance; strict fp32 leaves them out.
bool winograd(Pass pass, int algo) { return std::strstr(algo_name(pass, algo), "WINOGRAD"); }

// The calling thread's cuDNN handle for the current device, kept for the thread's life (cuDNN's
// advice for threaded use). Plans hold none: each call takes its thread's, so a plan built on one
// thread runs on any, and no handle is created or destroyed per plan. Declared after
// thread_plan_stream()'s table is first used, so it is destroyed first (before that stream).
cudnnHandle_t thread_cudnn_handle() {
  struct Handles {
    std::vector<cudnnHandle_t> per_device;
    ~Handles() {
      for (cudnnHandle_t h : per_device)
        if (h) cudnnDestroy(h);
    }
  };
  (void)thread_plan_stream();
  thread_local Handles handles;
  int dev = 0;
  FFTCONV_CUDA_CHECK(cudaGetDevice(&dev));
  if (handles.per_device.size() <= static_cast<std::size_t>(dev)) {
    handles.per_device.resize(dev + 1, nullptr);
  }
  cudnnHandle_t& h = handles.per_device[dev];
  if (!h) FFTCONV_CUDNN_CHECK(cudnnCreate(&h));
  return h;
}

static_assert(kCudnnBwdDataAlgo1 == CUDNN_CONVOLUTION_BWD_DATA_ALGO_1 &&
                  kCudnnBwdFilterAlgo1 == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1,
              "cuDNN's algorithm numbering changed");

class CudnnAlgo final : public ConvAlgo {
 public:
  CudnnAlgo(const ConvDesc& d, const Options& o)
      : d_(d), pass_(o.pass), ops_(&cudnn_pass_ops(o.pass)) {
    try {
      build(o);
    } catch (...) {
      release();
      throw;
    }
  }

  ~CudnnAlgo() override { release(); }

 private:
  void build(const Options& o) {
    const ConvDesc& d = d_;
    descs_.handle = thread_cudnn_handle();  // this thread's, for the search only
    FFTCONV_CUDNN_CHECK(cudnnCreateTensorDescriptor(&descs_.x));
    FFTCONV_CUDNN_CHECK(cudnnCreateTensorDescriptor(&descs_.y));
    FFTCONV_CUDNN_CHECK(cudnnCreateFilterDescriptor(&descs_.w));
    FFTCONV_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&descs_.conv));
    const cudnnDataType_t dt = cudnn_data_type(d.dtype);
    auto i = [](std::int64_t v) { return static_cast<int>(v); };
    FFTCONV_CUDNN_CHECK(cudnnSetTensor4dDescriptor(descs_.x, CUDNN_TENSOR_NCHW, dt, i(d.n), i(d.c),
                                                   i(d.h), i(d.w)));
    FFTCONV_CUDNN_CHECK(cudnnSetFilter4dDescriptor(descs_.w, dt, CUDNN_TENSOR_NCHW, i(d.k),
                                                   i(d.c_per_group()), i(d.r), i(d.s)));
    FFTCONV_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(
        descs_.conv, i(d.pad_h), i(d.pad_w), i(d.stride_h), i(d.stride_w), i(d.dil_h), i(d.dil_w),
        CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    FFTCONV_CUDNN_CHECK(cudnnSetConvolutionGroupCount(descs_.conv, i(d.groups)));
    // Strict fp32 is FMA only; TF32 (and fp16/bf16 tensor cores) need tensor-op math.
    const bool strict = d.dtype == DType::kF32 && !o.allow_tf32;
    fp32_contract_ = strict && o.algo == Algo::kAuto;
    const cudnnMathType_t math = strict ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH;
    FFTCONV_CUDNN_CHECK(cudnnSetConvolutionMathType(descs_.conv, math));
    int on, oc, oh, ow;
    FFTCONV_CUDNN_CHECK(
        cudnnGetConvolution2dForwardOutputDim(descs_.conv, descs_.x, descs_.w, &on, &oc, &oh, &ow));
    FFTCONV_ASSERT(on == d.n && oc == d.k && oh == d.out_h() && ow == d.out_w(),
                   "cuDNN output size disagrees with ConvDesc");
    FFTCONV_CUDNN_CHECK(
        cudnnSetTensor4dDescriptor(descs_.y, CUDNN_TENSOR_NCHW, dt, on, oc, oh, ow));

    if (!o.cudnn_algo.empty()) {
      forced_algo(o.cudnn_algo, math, o.workspace_limit);
    } else if (o.cudnn_search == CudnnSearch::kFind) {
      find_algo(strict, o.workspace_limit);
    } else if (o.cudnn_search == CudnnSearch::kHeuristic) {
      heuristic_algo(strict, o.workspace_limit);
    } else if (o.cudnn_search == CudnnSearch::kAuto) {
      faster_of_find_and_graph(strict, o.workspace_limit);
    } else {
      // kGraph: the legacy algorithm runs the calls the execution plan does not take; the plan
      // needs one of the two.
      try {
        heuristic_algo(strict, o.workspace_limit);
      } catch (const Error& e) {
        if (e.status() != Status::kNotSupported) throw;
        legacy_ = false;
        search_ = e.what();
      }
      build_graph(strict, o.workspace_limit);
      if (!graph_ && !legacy_) {
        throw Error(Status::kNotSupported, search_ + "; " + graph_note_);
      }
    }
    if (legacy_) FFTCONV_CUDNN_CHECK(cudnnSetConvolutionMathType(descs_.conv, math_));
    descs_.handle = nullptr;
  }

  // CudnnSearch::kAuto: the legacy search's fastest algorithm and the graph API's fastest
  // engine, the faster kept. The legacy algorithm stays for the calls the execution plan does
  // not take; where either search has nothing, the other serves alone.
  void faster_of_find_and_graph(bool strict, std::size_t limit) {
    try {
      find_algo(strict, limit);
    } catch (const Error& e) {
      // As in build_graph: the other search may still serve the plan.
      if (e.status() != Status::kNotSupported && e.status() != Status::kCudnnError &&
          e.status() != Status::kOutOfMemory) {
        throw;
      }
      legacy_ = false;
      search_ = e.what();
    }
    build_graph(strict, limit);
    if (!graph_ && !legacy_) throw Error(Status::kNotSupported, search_ + "; " + graph_note_);
    if (!graph_ || !legacy_) return;
    char ms[64];
    if (legacy_ms_ <= graph_->ms()) {
      std::snprintf(ms, sizeof(ms), "%.3f ms against %.3f ms", graph_->ms(), legacy_ms_);
      graph_note_ = "graph API not used: its fastest engine, " + graph_->engine() + ", took " + ms;
      graph_.reset();
      return;
    }
    // The graph engine serves; the legacy algorithm runs only the calls it cannot take, so the
    // legacy heuristic's choice takes that place, as under kGraph: find's fastest is often an
    // FFT algorithm whose workspace every call would otherwise be given.
    std::snprintf(ms, sizeof(ms), "%.3f ms", legacy_ms_);
    const std::string found = search_ + " (" + ms + ", slower than the graph engine)";
    try {
      heuristic_algo(strict, limit);
      search_ += "; " + found;
    } catch (const Error& e) {
      if (e.status() != Status::kNotSupported) throw;
      search_ = found;  // find's algorithm stays
    }
  }

  // The graph API's execution plan; where cuDNN has none the rules admit, the legacy algorithm
  // alone serves the plan, and describe() says why.
  void build_graph(bool strict, std::size_t limit) {
    if (cudnn_graph_known_slow(d_, pass_)) {
      graph_note_ =
          "graph API not used: its engines are left out of backward data on planes of 1024x1024 "
          "and more with filters of 32x32 and more (the first one ran for minutes on a 2048x2048 "
          "plane with 45x45 filters)";
      return;
    }
    CudnnGraphRules rules;
    rules.strict_fp32 = strict;
    rules.check_fp32 = strict;
    rules.workspace_limit = limit;
    try {
      graph_ = std::make_unique<CudnnGraphPlan>(d_, pass_, rules, descs_.handle);
    } catch (const Error& e) {
      if (e.status() != Status::kNotSupported && e.status() != Status::kCudnnError &&
          e.status() != Status::kOutOfMemory) {
        throw;
      }
      graph_note_ = std::string("graph API not used: ") + e.what();
    }
  }

  void release() noexcept {
    clear_filter();
    graph_.reset();
    if (descs_.conv) cudnnDestroyConvolutionDescriptor(descs_.conv);
    if (descs_.w) cudnnDestroyFilterDescriptor(descs_.w);
    if (descs_.y) cudnnDestroyTensorDescriptor(descs_.y);
    if (descs_.x) cudnnDestroyTensorDescriptor(descs_.x);
    descs_.conv = nullptr;
    descs_.w = nullptr;
    descs_.y = descs_.x = nullptr;
    descs_.handle = nullptr;
  }

 public:
  std::size_t workspace_size() const override {
    return align_up(std::max(workspace_, graph_ ? graph_->workspace_size() : std::size_t{0}));
  }

  void run(const RunArgs& a, cudaStream_t stream, StageMarks* marks) override {
    RunArgs args = a;
    if (!args.w && pass_ != Pass::kBackwardFilter) args.w = kept_.use(stream);
    CudnnDescs d = descs_;
    d.handle = thread_cudnn_handle();
    FFTCONV_CUDNN_CHECK(cudnnSetStream(d.handle, stream));
    if (graph_ && graph_->takes(args)) {
      graph_->execute(d.handle, args);
    } else if (legacy_) {
      ops_->enqueue(d, algo_, args, workspace_);
    } else {
      throw Error(Status::kNotSupported,
                  "this cuDNN plan has only the graph API's execution plan, which takes 16-byte "
                  "aligned tensors" +
                      std::string(pass_ == Pass::kBackwardFilter ? " and alpha 1, beta 0" : "") +
                      " (no legacy algorithm: " + search_ + ") [" + d_.to_string() + "]");
    }
    if (marks) marks->mark("cudnn", stream);
    if (pass_ == Pass::kForward && a.bias) {
      launch_add_bias(a.out, a.bias, d_.n, d_.k, d_.out_h() * d_.out_w(), d_.dtype, stream);
      if (marks) marks->mark("bias", stream);
    }
  }

  // cuDNN has no transform to skip: the kept filter is a copy the plan owns.
  void set_filter(const void* w, cudaStream_t stream) override { kept_.set(d_, pass_, w, stream); }
  void clear_filter() override { kept_.clear(); }
  bool has_filter() const override { return kept_.has(); }
  std::size_t filter_bytes() const override { return kept_.bytes(); }

  void fill_info(PlanInfo& info) const override {
    info.algo = Algo::kCudnn;
    info.workspace_bytes = workspace_size();
    if (graph_) {
      info.cudnn_algo = "graph " + graph_->engine();
      info.cudnn_math = graph_->tensor_core() ? "tensor_op" : "fma";
      info.reason = "cudnn " + graph_->search() + "; calls the execution plan does not take " +
                    "(tensors not 16-byte aligned, backward filter scaled or accumulated): " +
                    (legacy_ ? std::string(algo_name(pass_, algo_)) + "/" + math_name(math_) +
                                   " (" + search_ + ")"
                             : "none, no legacy algorithm (" + search_ + ")");
      return;
    }
    info.cudnn_algo = algo_name(pass_, algo_);
    info.cudnn_math = math_name(math_);
    info.reason = graph_note_.empty() ? search_ : search_ + "; " + graph_note_;
  }

 private:
  int algo_count() const { return static_cast<int>(algo_names(pass_).size()); }

  // The pass with one algorithm, on the handle's stream.
  void enqueue(int algo, const RunArgs& a, std::size_t workspace_bytes) {
    ops_->enqueue(descs_, algo, a, workspace_bytes);
  }

  // Workspace of one algorithm, or false when cuDNN does not support it here.
  bool algo_workspace(int algo, std::size_t* bytes) const {
    return ops_->workspace(descs_, algo, bytes) == CUDNN_STATUS_SUCCESS;
  }

  bool acceptable(const CudnnPerf& p, bool strict, std::size_t limit) const {
    return p.status == CUDNN_STATUS_SUCCESS && p.memory <= limit &&
           !cudnn_algo_known_slow(d_, pass_, p.algo) &&
           (!strict || (p.math == CUDNN_FMA_MATH && !winograd(pass_, p.algo) &&
                        !(fp32_contract_ && cudnn_algo_inaccurate_fp32(d_, pass_, p.algo))));
  }

  void forced_algo(const std::string& name, cudnnMathType_t math, std::size_t limit) {
    int algo = -1;
    for (int a = 0; a < algo_count(); ++a) {
      if (name == algo_name(pass_, a) && *algo_name(pass_, a)) algo = a;
    }
    if (algo < 0) {
      std::string known;
      for (const std::string& n : cudnn_algos(pass_)) known += (known.empty() ? "" : ", ") + n;
      throw Error(Status::kInvalidArgument, "unknown cuDNN " + std::string(pass_name(pass_)) +
                                                " algorithm '" + name + "' (expected one of " +
                                                known + ")");
    }
    std::size_t bytes = 0;
    if (!algo_workspace(algo, &bytes)) {
      throw Error(Status::kNotSupported, "cuDNN " + std::string(pass_name(pass_)) + " algorithm " +
                                             name + " does not support " + d_.to_string());
    }
    if (bytes > limit) {
      throw Error(Status::kOutOfMemory,
                  "cuDNN algorithm " + name + " needs " + std::to_string(bytes) +
                      " bytes of workspace, over the limit of " + std::to_string(limit));
    }
    algo_ = algo;
    math_ = math;
    workspace_ = bytes;
    search_ = "cudnn algorithm forced by options";
  }

  // Random tensors of the descriptor and a search workspace, for timing algorithms at plan time.
  struct SearchBuffers {
    DeviceBuffer x, w, y, ws;
    std::size_t ws_bytes;
  };

  // Whether a workspace of `bytes` fits the limit and, with the tensors, 90% of free memory.
  bool search_fits(std::size_t bytes, std::size_t limit) const {
    std::size_t free_bytes = 0, total_bytes = 0;
    FFTCONV_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    const std::size_t tensors =
        dtype_size(d_.dtype) * static_cast<std::size_t>(d_.x_elems() + d_.w_elems() + d_.y_elems());
    return bytes <= limit && tensors + bytes < free_bytes / 10 * 9;
  }

  std::unique_ptr<SearchBuffers> search_buffers(std::size_t ws_bytes,
                                                const PlanStream& stream) const {
    const std::size_t es = dtype_size(d_.dtype);
    auto b = std::unique_ptr<SearchBuffers>(
        new SearchBuffers{DeviceBuffer(es * d_.x_elems()), DeviceBuffer(es * d_.w_elems()),
                          DeviceBuffer(es * d_.y_elems()), DeviceBuffer(ws_bytes), ws_bytes});
    // Random data: timing on zeros can flatter kernels.
    launch_fill_uniform(b->x.get(), d_.x_elems(), d_.dtype, 1, stream.get());
    launch_fill_uniform(b->w.get(), d_.w_elems(), d_.dtype, 2, stream.get());
    launch_fill_uniform(b->y.get(), d_.y_elems(), d_.dtype, 3, stream.get());
    stream.synchronize();
    return b;
  }

  void find_algo(bool strict, std::size_t limit) {
    bool slow = false;
    for (int a = 0; a < algo_count(); ++a) slow |= cudnn_algo_known_slow(d_, pass_, a);
    // cudnnFind*AlgorithmEx runs every algorithm: where one is known to take minutes, the own
    // search (which leaves it out) runs instead.
    if (slow || estimate_direct_us(d_, pass_) > kExhaustiveFindMaxUs) {
      bounded_find(strict, limit);
      return;
    }
    // Search workspace: the largest any algorithm asks for, within the limit and free memory.
    std::size_t search_ws = 0;
    for (int a = 0; a < algo_count(); ++a) {
      std::size_t bytes = 0;
      if (*algo_name(pass_, a) && algo_workspace(a, &bytes) && search_fits(bytes, limit)) {
        search_ws = std::max(search_ws, bytes);
      }
    }
    const PlanStream& stream = thread_plan_stream();
    const auto bufs = search_buffers(search_ws, stream);
    const PlanStreamDrain drain{stream};  // before bufs are freed, also when find throws
    FFTCONV_CUDNN_CHECK(cudnnSetStream(descs_.handle, stream.get()));
    const std::vector<CudnnPerf> perf = ops_->find(
        descs_,
        CudnnSearchTensors{bufs->x.get(), bufs->w.get(), bufs->y.get(), bufs->ws.get(), search_ws});
    stream.synchronize();
    pick(perf, strict, limit, "find");
  }

  // Times the heuristics' acceptable candidates once each, best first, within the budget.
  void bounded_find(bool strict, std::size_t limit) {
    std::vector<CudnnPerf> perf = heuristic_perf(strict);
    std::size_t search_ws = 0;
    for (const CudnnPerf& p : perf) {
      if (acceptable(p, strict, limit) && search_fits(p.memory, limit)) {
        search_ws = std::max(search_ws, p.memory);
      }
    }
    const PlanStream& stream = thread_plan_stream();
    const cudaStream_t st = stream.get();
    const auto b = search_buffers(search_ws, stream);
    const PlanStreamDrain drain{stream};  // as in find_algo
    // The pass's operands: x (forward, backward filter), w (forward, backward data), dy = y
    // (backward); its output is the remaining tensor.
    RunArgs a;
    a.x = b->x.get();
    a.w = b->w.get();
    a.dy = b->y.get();
    a.out = pass_ == Pass::kForward        ? b->y.get()
            : pass_ == Pass::kBackwardData ? b->x.get()
                                           : b->w.get();
    a.workspace = b->ws.get();
    GpuTimer untimed, timer;
    FFTCONV_CUDNN_CHECK(cudnnSetStream(descs_.handle, st));
    float spent = 0.0f, best = 0.0f;
    std::vector<CudnnPerf> timed;
    std::string skipped;
    for (CudnnPerf& p : perf) {
      if (spent > kBoundedSearchBudgetMs) break;
      if (!acceptable(p, strict, limit) || p.memory > search_ws) continue;
      // One untimed run first (it pays for loading the kernels), then one timed run.
      float first = 0.0f;
      try {
        FFTCONV_CUDNN_CHECK(cudnnSetConvolutionMathType(descs_.conv, p.math));
        untimed.start(st);
        enqueue(p.algo, a, p.memory);
        untimed.stop(st);
        first = untimed.elapsed_ms();
        if (!timed.empty() && first > kSlowCandidateFactor * best) {
          // Slower than the best even with its kernels loaded: its untimed run stands.
          p.time = first;
          spent += first;
          timed.push_back(p);
          continue;
        }
        timer.start(st);
        enqueue(p.algo, a, p.memory);
        timer.stop(st);
        p.time = timer.elapsed_ms();
      } catch (const Error& e) {
        if (e.status() != Status::kCudnnError && e.status() != Status::kNotSupported) throw;
        skipped += std::string(skipped.empty() ? "" : ", ") + algo_name(pass_, p.algo) +
                   " failed: " + e.what();
        continue;
      }
      spent += first + p.time;
      best = timed.empty() ? p.time : std::min(best, p.time);
      timed.push_back(p);
    }
    stream.synchronize();
    std::stable_sort(timed.begin(), timed.end(),
                     [](const CudnnPerf& l, const CudnnPerf& r) { return l.time < r.time; });
    char how[128];
    std::snprintf(how, sizeof(how),
                  "bounded search, one timed run each after a warm-up (direct estimate %.0f ms)",
                  estimate_direct_us(d_, pass_) / 1000.0);
    pick(timed, strict, limit, skipped.empty() ? std::string(how) : how + ("; " + skipped));
  }

  // The v7 heuristics' suggestions, with the workspace each needs (strict: FMA math).
  std::vector<CudnnPerf> heuristic_perf(bool strict) {
    const std::vector<CudnnPerf> perf = ops_->heuristics(descs_);
    // One entry per algorithm, the heuristics' order first, then any algorithm they left out.
    // Whether an algorithm runs, and its memory, come from the workspace query (the v7
    // heuristics report memory only there). In strict fp32 every algorithm is tried with FMA math
    // as cudnnFind*AlgorithmEx does: the heuristics list some with default math only (backward
    // data FFT on multichannel_r45, which runs in 2.70 ms with FMA math, H200) and the bounded
    // search would otherwise time only the slow rest (ALGO_0, 133 ms).
    std::vector<CudnnPerf> out;
    std::vector<bool> seen(static_cast<std::size_t>(algo_count()), false);
    auto add = [&](CudnnPerf p) {
      if (p.algo < 0 || p.algo >= algo_count() || seen[p.algo] || !*algo_name(pass_, p.algo))
        return;
      seen[p.algo] = true;
      p.status =
          algo_workspace(p.algo, &p.memory) ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_NOT_SUPPORTED;
      if (strict) p.math = CUDNN_FMA_MATH;
      out.push_back(p);
    };
    for (const CudnnPerf& p : perf) {
      if (p.status == CUDNN_STATUS_SUCCESS) add(p);
    }
    for (int a = 0; a < algo_count(); ++a) {
      CudnnPerf p;
      p.algo = a;
      p.math = CUDNN_TENSOR_OP_MATH;
      add(p);
    }
    return out;
  }

  void heuristic_algo(bool strict, std::size_t limit) {
    pick(heuristic_perf(strict), strict, limit, "heuristic");
  }

  void pick(const std::vector<CudnnPerf>& perf, bool strict, std::size_t limit,
            const std::string& how) {
    std::string tried;
    int chosen = -1;
    for (std::size_t i = 0; i < perf.size(); ++i) {
      const bool ok = acceptable(perf[i], strict, limit);
      char buf[96];
      if (perf[i].status == CUDNN_STATUS_SUCCESS) {
        std::snprintf(buf, sizeof(buf), "%s%s/%s %.3f ms", tried.empty() ? "" : ", ",
                      algo_name(pass_, perf[i].algo), math_name(perf[i].math), perf[i].time);
        tried += buf;
      }
      if (ok && chosen < 0) chosen = static_cast<int>(i);
    }
    if (chosen < 0) {
      throw Error(Status::kNotSupported,
                  std::string("cuDNN has no ") + (strict ? "strict fp32 " : "") + pass_name(pass_) +
                      " algorithm for this problem within the workspace limit (" + how + ": " +
                      (tried.empty() ? "none succeeded" : tried) + ")");
    }
    algo_ = perf[chosen].algo;
    math_ = perf[chosen].math;
    workspace_ = perf[chosen].memory;
    legacy_ms_ = perf[chosen].time;
    search_ = "cudnn " + how + " [" + tried + "]";
  }

  ConvDesc d_;
  Pass pass_;
  const CudnnPassOps* ops_;
  CudnnDescs descs_;
  std::unique_ptr<CudnnGraphPlan> graph_;  // CudnnSearch::kGraph, or kAuto where faster
  std::string graph_note_;                 // why a kGraph or kAuto plan has no execution plan
  bool legacy_ = true;  // algo_ holds a legacy algorithm (kGraph, kAuto: may not)
  int algo_ = 0;
  float legacy_ms_ = 0.0f;  // algo_'s time in the search that chose it (heuristic: untimed)
  cudnnMathType_t math_ = CUDNN_FMA_MATH;
  std::size_t workspace_ = 0;
  std::string search_;
  bool fp32_contract_ = false;  // chosen by Auto in strict fp32: held to the fp32 tolerance
  KeptFilterCopy kept_;
};

}  // namespace

std::unique_ptr<ConvAlgo> make_cudnn(const ConvDesc& d, const Options& o) {
  const Support s = cudnn_can_implement(d, o);
  if (!s.ok()) throw Error(s.status, s.reason);
  return std::make_unique<CudnnAlgo>(d, o);
}

std::vector<std::string> cudnn_algos(Pass pass) {
  std::vector<std::string> out;
  for (const char* n : algo_names(pass)) {
    if (*n) out.emplace_back(n);
  }
  return out;
}

}  // namespace fftconv::detail
