// The cuDNN path through cuDNN's graph (backend) API: one convolution operation as an operation
// graph, the engine configurations of cuDNN's heuristics, each timed, and the fastest kept as a
// finalized execution plan. A call then costs one cudnnBackendExecute (and a variant pack when
// its pointers changed), where the legacy cudnnConvolution* entry points set the problem up again
// at every call. Written against cudnn_graph.h directly: the API is cuDNN's own and stable across
// 9.x, and this path needs a few of its descriptors only.
#include "algos/cudnn/cudnn_graph.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <utility>
#include <vector>

#include "algos/cudnn/cudnn_passes.h"
#include "core/check.h"
#include "core/device_buffer.h"
#include "core/log.h"
#include "core/timing.h"
#include "reference/reference.h"
#include "stages/fill.h"

namespace fftconv::detail {

namespace {

// Tensors the execution plan declares: NCHW x and y, KCRS w, with base pointers at this
// alignment (calls whose pointers are not run the legacy algorithm). The caching allocators of
// PyTorch and of the CUDA runtime give 256-byte aligned blocks.
constexpr std::int64_t kAlignment = 16;
// The variant pack's tensor ids: x (dx in backward data), w (dw in backward filter), y (dy in the
// backward passes).
constexpr std::int64_t kUidX = 1, kUidW = 2, kUidY = 3;
// At most this many engine configurations are timed, in the heuristics' order, within the budget.
constexpr int kMaxTimed = 16;
constexpr float kSearchBudgetMs = 3000.0f;
// A candidate whose untimed run took this many times the best time so far is not timed again.
constexpr float kSlowCandidateFactor = 2.0f;
// fp32's promise: rel-L2 and max error (over max |ref|) against fp64 at most this.
constexpr double kFp32Tolerance = 1e-5;
// Up to this many multiply-adds the fp32 check runs the fp64 direct oracle; above, a strict
// fp32 plan does not use the graph API (its engines are not known to hold the tolerance). 2^38
// covers the small-kernel parity set (its largest, 512 channels of 56x56 with 5x5 filters,
// is 8.2e10), whose backward filter cuDNN computes with errors up to 1.5e-3 under PyTorch's choice;
// at 1e12 fp64 multiply-adds a second, a quarter of the search's budget.
constexpr double kCheckMaxMacs = 274877906944.0;  // 2^38

// A backend descriptor, destroyed with the object.
class Desc {
 public:
  explicit Desc(cudnnBackendDescriptorType_t type) {
    FFTCONV_CUDNN_CHECK(cudnnBackendCreateDescriptor(type, &d_));
  }
  ~Desc() {
    if (d_) cudnnBackendDestroyDescriptor(d_);
  }
  Desc(Desc&& o) noexcept : d_(std::exchange(o.d_, nullptr)) {}
  Desc& operator=(Desc&& o) noexcept {
    if (this != &o) {
      if (d_) cudnnBackendDestroyDescriptor(d_);
      d_ = std::exchange(o.d_, nullptr);
    }
    return *this;
  }
  Desc(const Desc&) = delete;
  Desc& operator=(const Desc&) = delete;

  cudnnBackendDescriptor_t get() const { return d_; }

  template <typename T>
  Desc& set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, const T* values,
            std::int64_t count = 1) {
    FFTCONV_CUDNN_CHECK(cudnnBackendSetAttribute(d_, name, type, count, values));
    return *this;
  }
  Desc& set_desc(cudnnBackendAttributeName_t name, const Desc& value) {
    cudnnBackendDescriptor_t v = value.get();
    return set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, &v);
  }
  Desc& finalize() {
    FFTCONV_CUDNN_CHECK(cudnnBackendFinalize(d_));
    return *this;
  }
  /// cudnnBackendFinalize's status, for descriptors whose finalisation may be refused.
  cudnnStatus_t try_finalize() { return cudnnBackendFinalize(d_); }

  template <typename T>
  T get_value(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type) const {
    T v{};
    std::int64_t n = 0;
    FFTCONV_CUDNN_CHECK(cudnnBackendGetAttribute(d_, name, type, 1, &n, &v));
    return v;
  }

  /// The descriptors of a list attribute (engine configurations of heuristics, knob choices),
  /// created as `type` for cuDNN to fill: `capacity` of them, or (0) as many as cuDNN counts.
  std::vector<Desc> get_descs(cudnnBackendAttributeName_t name, cudnnBackendDescriptorType_t type,
                              std::int64_t capacity = 0) const {
    std::int64_t count = capacity;
    if (count == 0) {
      FFTCONV_CUDNN_CHECK(
          cudnnBackendGetAttribute(d_, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr));
    }
    std::vector<Desc> out;
    std::vector<cudnnBackendDescriptor_t> raw;
    for (std::int64_t i = 0; i < count; ++i) {
      out.emplace_back(type);
      raw.push_back(out.back().get());
    }
    if (count > 0) {
      std::int64_t returned = 0;
      FFTCONV_CUDNN_CHECK(cudnnBackendGetAttribute(d_, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, count,
                                                   &returned, raw.data()));
      out.erase(out.begin() + std::max<std::int64_t>(0, std::min(returned, count)), out.end());
    }
    return out;
  }

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
};

// The alignment a tensor declares: kAlignment, lowered to the largest power of two that also
// divides the byte offset of a group's slice. Engines that split a grouped convolution into its
// groups address each slice from the base pointer, and one that vectorizes by the declared
// alignment faults (cudaErrorMisalignedAddress, which ends the context) on a slice that does not
// have it: seen on the H200 with cuDNN 9 for fp16 data, 2 input channels of 15x31 a group.
std::int64_t declared_alignment(std::int64_t group_slice_bytes) {
  std::int64_t a = kAlignment;
  while (a > 1 && group_slice_bytes % a != 0) a /= 2;
  return a;
}

Desc tensor(std::int64_t uid, cudnnDataType_t dt, const std::array<std::int64_t, 4>& dims,
            std::int64_t alignment) {
  const std::array<std::int64_t, 4> strides = {dims[1] * dims[2] * dims[3], dims[2] * dims[3],
                                               dims[3], 1};
  Desc t(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  t.set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, &dt)
      .set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, dims.data(), 4)
      .set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, strides.data(), 4)
      .set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, &uid)
      .set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, &alignment)
      .finalize();
  return t;
}

const char* note_name(cudnnBackendNumericalNote_t n) {
  switch (n) {
    case CUDNN_NUMERICAL_NOTE_TENSOR_CORE:
      return "tensor_core";
    case CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS:
      return "down_convert_inputs";
    case CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION:
      return "reduced_precision_reduction";
    case CUDNN_NUMERICAL_NOTE_FFT:
      return "fft";
    case CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC:
      return "nondeterministic";
    case CUDNN_NUMERICAL_NOTE_WINOGRAD:
    case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_4x4:
    case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_6x6:
    case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_13x13:
      return "winograd";
    case CUDNN_NUMERICAL_NOTE_STRICT_NAN_PROP:
      return "strict_nan_prop";
    default:
      return "other";
  }
}

// One engine configuration of the heuristics, with what the rules need to know of it.
struct Candidate {
  explicit Candidate(Desc c) : cfg(std::move(c)) {}
  Desc cfg;
  std::string name;  // "eng<global index>" and its knob choices
  std::string notes;
  bool tf32 = false;             // TENSOR_CORE on fp32 data: TF32
  bool lower_precision = false;  // down-converted inputs or a reduced-precision reduction
  bool tensor_core = false;
  Desc plan{CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR};
  std::size_t workspace = 0;
  float ms = 0.0f;
};

// `fp32`: the data is fp32, where a TENSOR_CORE note means TF32.
Candidate describe_candidate(Desc cfg, bool fp32) {
  Candidate c(std::move(cfg));
  std::vector<Desc> engine =
      c.cfg.get_descs(CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_BACKEND_ENGINE_DESCRIPTOR, 1);
  if (engine.empty())
    throw Error(Status::kCudnnError, "cuDNN returned a configuration without an engine");
  const auto index =
      engine[0].get_value<std::int64_t>(CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64);
  c.name = "eng" + std::to_string(index);
  for (const Desc& knob :
       c.cfg.get_descs(CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR,
                       CUDNN_KNOB_TYPE_COUNTS)) {
    const auto type = knob.get_value<cudnnBackendKnobType_t>(CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE,
                                                             CUDNN_TYPE_KNOB_TYPE);
    const auto value =
        knob.get_value<std::int64_t>(CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64);
    c.name += " k" + std::to_string(static_cast<int>(type)) + "=" + std::to_string(value);
  }
  std::array<cudnnBackendNumericalNote_t, CUDNN_NUMERICAL_NOTE_TYPE_COUNT> notes{};
  std::int64_t count = 0;
  FFTCONV_CUDNN_CHECK(cudnnBackendGetAttribute(
      engine[0].get(), CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
      static_cast<std::int64_t>(notes.size()), &count, notes.data()));
  for (std::int64_t i = 0; i < std::min<std::int64_t>(count, notes.size()); ++i) {
    const cudnnBackendNumericalNote_t n = notes[i];
    const std::string name = note_name(n);
    if (c.notes.find(name) == std::string::npos) c.notes += (c.notes.empty() ? "" : ",") + name;
    c.lower_precision |= n == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS ||
                         n == CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION;
    c.tensor_core |= n == CUDNN_NUMERICAL_NOTE_TENSOR_CORE;
    c.tf32 |= n == CUDNN_NUMERICAL_NOTE_TENSOR_CORE && fp32;
  }
  return c;
}

std::string with_notes(const Candidate& c) {
  return c.notes.empty() ? c.name : c.name + " (" + c.notes + ")";
}

// The convolution operation of a pass and its attributes, named after the forward pass's
// tensors: x (dx), w (dw), y (dy).
struct OpAttrs {
  cudnnBackendDescriptorType_t type;
  cudnnBackendAttributeName_t x, w, y, conv, alpha, beta;
};

const OpAttrs& op_attrs(Pass pass) {
  static const OpAttrs kForward = {CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
                                   CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
                                   CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
                                   CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
                                   CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
                                   CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
                                   CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA};
  static const OpAttrs kBackwardData = {
      CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA};
  static const OpAttrs kBackwardFilter = {
      CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA};
  return pass == Pass::kForward        ? kForward
         : pass == Pass::kBackwardData ? kBackwardData
                                       : kBackwardFilter;
}

bool aligned(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p) % static_cast<std::uintptr_t>(kAlignment) == 0;
}

}  // namespace

struct CudnnGraphPlan::Impl {
  Impl(const ConvDesc& desc, Pass p) : d(desc), pass(p) {}
  ConvDesc d;
  Pass pass;
  // The graph's descriptors live as long as the execution plan that was finalized from them.
  std::vector<Desc> keep;
  Candidate chosen{Desc(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR)};  // replaced by the search
  std::string engine, search;
  // The last call's variant pack, reused while its pointers repeat.
  mutable Desc pack{CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR};
  mutable std::array<void*, 4> pack_ptrs{};  // x, w, y, workspace
  mutable bool pack_valid = false;

  // The call's tensors by id: x, w, y as the forward pass names them.
  std::array<void*, 3> pointers(const RunArgs& a) const {
    switch (pass) {
      case Pass::kForward:
        return {const_cast<void*>(a.x), const_cast<void*>(a.w), a.out};
      case Pass::kBackwardData:
        return {a.out, const_cast<void*>(a.w), const_cast<void*>(a.dy)};
      case Pass::kBackwardFilter:
        break;
    }
    return {const_cast<void*>(a.x), a.out, const_cast<void*>(a.dy)};
  }
};

namespace {
// The variant pack of one pointer set: the tensors by id, and the workspace.
Desc variant_pack(const std::array<void*, 3>& ptrs, void* workspace) {
  const std::int64_t uids[3] = {kUidX, kUidW, kUidY};
  Desc vp(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  vp.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, uids, 3)
      .set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, ptrs.data(), 3)
      .set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, &workspace)
      .finalize();
  return vp;
}
}  // namespace

CudnnGraphPlan::CudnnGraphPlan(const ConvDesc& d, Pass pass, const CudnnGraphRules& rules,
                               cudnnHandle_t handle)
    : impl_(new Impl(d, pass)) {
  Impl& m = *impl_;
  const double macs =
      static_cast<double>(d.n) * d.k * d.out_h() * d.out_w() * d.c_per_group() * d.r * d.s;
  if (rules.check_fp32 && macs > kCheckMaxMacs) {
    char buf[96];
    std::snprintf(buf, sizeof(buf), "%.3g multiply-adds, over the 2^38", macs);
    throw Error(Status::kNotSupported,
                std::string("strict fp32 on cuDNN's graph API needs the plan-time check against "
                            "fp64, whose direct convolution would take ") +
                    buf + " it is given");
  }
  const cudnnDataType_t dt = cudnn_data_type(d.dtype);
  m.keep.reserve(6);  // x, w, y below stay put
  const std::int64_t cg = d.c_per_group(), kg = d.k_per_group();
  const std::int64_t grouped = d.groups > 1 ? static_cast<std::int64_t>(dtype_size(d.dtype))
                                            : 0;  // one group: no slices but the tensor
  m.keep.push_back(
      tensor(kUidX, dt, {d.n, d.c, d.h, d.w}, declared_alignment(grouped * cg * d.h * d.w)));
  m.keep.push_back(
      tensor(kUidW, dt, {d.k, cg, d.r, d.s}, declared_alignment(grouped * kg * cg * d.r * d.s)));
  m.keep.push_back(tensor(kUidY, dt, {d.n, d.k, d.out_h(), d.out_w()},
                          declared_alignment(grouped * kg * d.out_h() * d.out_w())));
  const Desc& x = m.keep[0];
  const Desc& w = m.keep[1];
  const Desc& y = m.keep[2];

  Desc conv(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  const std::int64_t dims = 2;
  const std::int64_t dil[2] = {d.dil_h, d.dil_w}, stride[2] = {d.stride_h, d.stride_w},
                     pad[2] = {d.pad_h, d.pad_w};
  conv.set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, &compute)
      .set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, &mode)
      .set(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, &dims)
      .set(CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, dil, 2)
      .set(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, stride, 2)
      .set(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, pad, 2)
      .set(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, pad, 2)
      .finalize();

  // alpha 1, beta 0: the pass overwrites its output (calls that scale or accumulate are not
  // taken; see takes()).
  const OpAttrs& at = op_attrs(pass);
  const float one = 1.0f, zero = 0.0f;
  Desc op(at.type);
  op.set_desc(at.x, x)
      .set_desc(at.w, w)
      .set_desc(at.y, y)
      .set_desc(at.conv, conv)
      .set(at.alpha, CUDNN_TYPE_FLOAT, &one)
      .set(at.beta, CUDNN_TYPE_FLOAT, &zero)
      .finalize();

  Desc graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  cudnnBackendDescriptor_t ops[1] = {op.get()};
  graph.set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, ops, 1)
      .set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, &handle)
      .finalize();

  // The heuristics' configurations, mode A first, then the fallback list, without repeats. In
  // strict fp32 TF32 engines are left out; down-converted inputs and reduced-precision
  // reductions always are (the engine's promise: fp32 arithmetic inside, whatever the dtype).
  std::vector<Candidate> candidates;
  std::vector<std::string> seen;
  int not_timed = 0;
  std::string left_out;
  auto leave_out = [&](const std::string& what) {
    left_out += (left_out.empty() ? "" : ", ") + what;
  };
  const std::size_t tensor_bytes =
      dtype_size(d.dtype) * static_cast<std::size_t>(d.x_elems() + d.w_elems() + d.y_elems());
  std::size_t free_bytes = 0, total_bytes = 0;
  FFTCONV_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  // Host time spent finalizing plans counts in the search's budget (an engine compiled at run
  // time takes long to finalize).
  float spent = 0.0f;
  for (cudnnBackendHeurMode_t heur_mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    Desc heur(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    heur.set_desc(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph)
        .set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, &heur_mode);
    if (heur.try_finalize() != CUDNN_STATUS_SUCCESS) continue;
    for (Desc& cfg :
         heur.get_descs(CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR)) {
      Candidate c = describe_candidate(std::move(cfg), d.dtype == DType::kF32);
      if (std::find(seen.begin(), seen.end(), c.name) != seen.end()) continue;
      seen.push_back(c.name);
      if (c.lower_precision) {
        leave_out(with_notes(c) + ": lower precision than fp32");
        continue;
      }
      if (rules.strict_fp32 && c.tf32) {
        leave_out(with_notes(c) + ": TF32");
        continue;
      }
      if (static_cast<int>(candidates.size()) >= kMaxTimed || spent > kSearchBudgetMs) {
        ++not_timed;  // not finalized either
        continue;
      }
      const auto t0 = std::chrono::steady_clock::now();
      c.plan.set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, &handle)
          .set_desc(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, c.cfg);
      const cudnnStatus_t finalized = c.plan.try_finalize();
      spent +=
          std::chrono::duration<float, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (finalized != CUDNN_STATUS_SUCCESS) {
        leave_out(c.name + ": no execution plan");
        continue;
      }
      c.workspace = static_cast<std::size_t>(c.plan.get_value<std::int64_t>(
          CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64));
      if (c.workspace > rules.workspace_limit) {
        leave_out(c.name + ": workspace " + std::to_string(c.workspace) + " bytes over the limit");
        continue;
      }
      if (c.workspace + tensor_bytes > free_bytes / 10 * 9) {
        leave_out(c.name + ": workspace " + std::to_string(c.workspace) +
                  " bytes, with the search's tensors over 90% of free device memory");
        continue;
      }
      candidates.push_back(std::move(c));
    }
  }
  if (candidates.empty()) {
    throw Error(Status::kNotSupported,
                std::string("cuDNN's graph API has no ") +
                    (rules.strict_fp32 ? "strict fp32 " : "") + pass_name(pass) + " engine for " +
                    d.to_string() + (left_out.empty() ? "" : " (left out: " + left_out + ")"));
  }

  // Random operands and the largest workspace, on the thread's plan stream.
  std::size_t ws_bytes = 0;
  for (const Candidate& c : candidates) ws_bytes = std::max(ws_bytes, c.workspace);
  const PlanStream& stream = thread_plan_stream();
  const cudaStream_t st = stream.get();
  const std::size_t es = dtype_size(d.dtype);
  const std::int64_t out_elems = pass == Pass::kForward        ? d.y_elems()
                                 : pass == Pass::kBackwardData ? d.x_elems()
                                                               : d.w_elems();
  DeviceBuffer bx(es * d.x_elems()), bw(es * d.w_elems()), by(es * d.y_elems());
  DeviceBuffer ws(std::max<std::size_t>(ws_bytes, 256));
  DeviceBuffer ref;  // the fp32 check's fp64 result
  launch_fill_uniform(bx.get(), d.x_elems(), d.dtype, 11, st);
  launch_fill_uniform(bw.get(), d.w_elems(), d.dtype, 12, st);
  launch_fill_uniform(by.get(), d.y_elems(), d.dtype, 13, st);
  const PlanStreamDrain drain{stream};  // before the buffers are freed, also when a run throws
  const std::array<void*, 3> ptrs = {bx.get(), bw.get(), by.get()};
  const void* out = pass == Pass::kForward        ? ptrs[2]
                    : pass == Pass::kBackwardData ? ptrs[0]
                                                  : ptrs[1];
  const Desc pack = variant_pack(ptrs, ws.get());  // every plan of the graph takes the same ids
  FFTCONV_CUDNN_CHECK(cudnnSetStream(handle, st));
  auto run = [&](const Candidate& c) {
    FFTCONV_CUDNN_CHECK(cudnnBackendExecute(handle, c.plan.get(), pack.get()));
  };
  // A run that fails (cuDNN refusing the problem after all) leaves that engine out; any other
  // failure, a CUDA error above all, ends the plan.
  auto refused = [](const Error& e) {
    return e.status() == Status::kCudnnError || e.status() == Status::kNotSupported;
  };

  GpuTimer untimed, timer;
  float best = 0.0f;
  std::vector<Candidate*> timed;
  for (Candidate& c : candidates) {
    if (spent > kSearchBudgetMs) {
      leave_out(c.name + ": not timed, the search's budget spent");
      continue;
    }
    // A candidate's run is waited for before the next starts, so the last of these messages
    // names the engine when a run faults (FFTCONV_LOG_LEVEL=debug).
    log(LogLevel::kDebug,
        "cuDNN graph: running " + with_notes(c) + " for " + pass_name(pass) + " " + d.to_string());
    try {
      untimed.start(st);
      run(c);
      untimed.stop(st);
      const float first = untimed.elapsed_ms();
      spent += first;
      if (!timed.empty() && first > kSlowCandidateFactor * best) {
        c.ms = first;  // slower than the best even with its kernels loaded
      } else {
        timer.start(st);
        run(c);
        timer.stop(st);
        c.ms = timer.elapsed_ms();
        spent += c.ms;
      }
    } catch (const Error& e) {
      if (!refused(e)) throw;
      stream.synchronize();
      leave_out(c.name + " failed: " + e.what());
      continue;
    }
    best = timed.empty() ? c.ms : std::min(best, c.ms);
    timed.push_back(&c);
  }
  if (not_timed > 0) {
    leave_out(std::to_string(not_timed) + " more configurations not finalized or timed (at most " +
              std::to_string(kMaxTimed) + ", within the search's budget)");
  }
  std::stable_sort(timed.begin(), timed.end(),
                   [](const Candidate* l, const Candidate* r) { return l->ms < r->ms; });
  std::string tried;
  for (const Candidate* c : timed) {
    char buf[160];
    std::snprintf(buf, sizeof(buf), "%s%s %.3f ms", tried.empty() ? "" : ", ",
                  with_notes(*c).c_str(), c->ms);
    tried += buf;
  }

  // The fastest; in strict fp32, the fastest whose error on the random operands is within the
  // fp32 tolerance of the fp64 oracle.
  Candidate* pick = nullptr;
  std::string check;
  for (Candidate* c : timed) {
    if (!rules.check_fp32) {
      pick = c;
      break;
    }
    reference::DeviceErrorNorms e;
    try {
      if (!ref) {
        // The oracle reads the operands of the pass, which the timed runs left as they were
        // (each wrote only the pass's output).
        ref = DeviceBuffer(sizeof(double) * static_cast<std::size_t>(out_elems));
        const auto* fx = bx.as<const float>();
        const auto* fw = bw.as<const float>();
        const auto* fy = by.as<const float>();
        if (pass == Pass::kForward) {
          reference::conv2d_forward_device(d, fx, fw, nullptr, ref.as<double>(), st);
        } else if (pass == Pass::kBackwardData) {
          reference::conv2d_backward_data_device(d, fy, fw, ref.as<double>(), st);
        } else {
          reference::conv2d_backward_filter_device(d, fx, fy, ref.as<double>(), st);
        }
      }
      try {
        run(*c);
      } catch (const Error& err) {
        if (!refused(err)) throw;
        stream.synchronize();
        check += std::string(check.empty() ? "" : "; ") + c->name + " failed: " + err.what();
        continue;
      }
      e = reference::compare_device(out, d.dtype, ref.as<const double>(), out_elems, st);
    } catch (const Error& err) {
      if (err.status() != Status::kOutOfMemory) throw;
      throw Error(
          Status::kNotSupported,
          std::string("the fp32 check of cuDNN's graph engines could not run: ") + err.what());
    } catch (const std::exception& err) {  // the oracle's launch errors
      throw Error(Status::kCudaError,
                  std::string("the fp32 check of cuDNN's graph engines failed: ") + err.what());
    }
    char buf[200];
    std::snprintf(buf, sizeof(buf), "%s%s: rel-L2 %.2e, max %.2e%s", check.empty() ? "" : "; ",
                  c->name.c_str(), e.rel_l2, e.max_err,
                  e.pass(kFp32Tolerance) ? "" : ", over the fp32 tolerance");
    check += buf;
    if (e.pass(kFp32Tolerance)) {
      pick = c;
      break;
    }
  }
  if (!pick) {
    throw Error(Status::kNotSupported,
                "no " + std::string(rules.check_fp32 ? "strict fp32 " : "") + pass_name(pass) +
                    " engine of cuDNN's graph API ran" +
                    (rules.check_fp32 ? " within the fp32 tolerance" : "") + " on " +
                    d.to_string() + " (" + (check.empty() ? tried : check) +
                    (left_out.empty() ? "" : "; left out: " + left_out) + ")");
  }
  m.chosen = std::move(*pick);
  m.keep.push_back(std::move(conv));
  m.keep.push_back(std::move(op));
  m.keep.push_back(std::move(graph));
  m.engine = with_notes(m.chosen);
  m.search = "graph API, heuristics A and fallback, timed [" + tried + "]";
  if (!check.empty()) m.search += "; fp32 check against fp64: " + check;
  if (!left_out.empty()) m.search += "; left out: " + left_out;
}

CudnnGraphPlan::~CudnnGraphPlan() = default;

std::size_t CudnnGraphPlan::workspace_size() const { return impl_->chosen.workspace; }

bool CudnnGraphPlan::takes(const RunArgs& a) const {
  if (impl_->pass == Pass::kBackwardFilter && (a.alpha != 1.0f || a.beta != 0.0f)) return false;
  for (const void* p : impl_->pointers(a)) {
    if (!aligned(p)) return false;
  }
  return impl_->chosen.workspace == 0 || aligned(a.workspace);
}

void CudnnGraphPlan::execute(cudnnHandle_t handle, const RunArgs& a) const {
  Impl& m = *impl_;
  const std::array<void*, 3> p = m.pointers(a);
  const std::array<void*, 4> key = {p[0], p[1], p[2], a.workspace};
  if (!m.pack_valid || key != m.pack_ptrs) {
    m.pack_valid = false;
    m.pack = variant_pack(p, a.workspace);
    m.pack_ptrs = key;
    m.pack_valid = true;
  }
  FFTCONV_CUDNN_CHECK(cudnnBackendExecute(handle, m.chosen.plan.get(), m.pack.get()));
}

const std::string& CudnnGraphPlan::engine() const { return impl_->engine; }

bool CudnnGraphPlan::tensor_core() const { return impl_->chosen.tensor_core; }

float CudnnGraphPlan::ms() const { return impl_->chosen.ms; }

const std::string& CudnnGraphPlan::search() const { return impl_->search; }

}  // namespace fftconv::detail
