// Autograd and autocast kernels of the fftconv operators, in C++ so that a call costs no Python.
//
// The three operators are bilinear and close under differentiation: with y = conv2d(x, w),
//   dx = conv2d_input_grad(dy, w)       dw = conv2d_weight_grad(dy, x)      db = dy.sum((0, 2, 3))
// and the gradients of the two gradient operators are again the three operators, so double
// backward (gradient penalties, opcheck's gradient checks) works too. Each node saves only what
// the gradients that are needed use; a call that needs no gradient makes no node.
#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/csrc/autograd/saved_variable.h>
#include <torch/library.h>

#include <array>
#include <string>

#include "ops.h"
#include "training_spectrum.h"

namespace fftconv::torch_ext {

at::Tensor call_conv2d(const at::Tensor& x, const at::Tensor& w,
                       const std::optional<at::Tensor>& bias, at::IntArrayRef stride,
                       at::IntArrayRef padding, at::IntArrayRef dilation, int64_t groups,
                       c10::string_view algo, c10::string_view padding_mode) {
  static const auto op =
      c10::Dispatcher::singleton()
          .findSchemaOrThrow("fftconv::conv2d", "")
          .typed<at::Tensor(const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&,
                            at::IntArrayRef, at::IntArrayRef, at::IntArrayRef, int64_t,
                            c10::string_view, c10::string_view)>();
  return op.call(x, w, bias, stride, padding, dilation, groups, algo, padding_mode);
}

namespace {

using torch::autograd::variable_list;

using GradSignature = at::Tensor(const at::Tensor&, const at::Tensor&, c10::SymIntArrayRef,
                                 at::IntArrayRef, at::IntArrayRef, at::IntArrayRef, int64_t,
                                 c10::string_view, c10::string_view);

at::Tensor call_input_grad(const at::Tensor& dy, const at::Tensor& w, c10::SymIntArrayRef x_size,
                           at::IntArrayRef stride, at::IntArrayRef padding,
                           at::IntArrayRef dilation, int64_t groups, c10::string_view algo,
                           c10::string_view padding_mode) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("fftconv::conv2d_input_grad", "")
                             .typed<GradSignature>();
  return op.call(dy, w, x_size, stride, padding, dilation, groups, algo, padding_mode);
}

at::Tensor call_weight_grad(const at::Tensor& dy, const at::Tensor& x, c10::SymIntArrayRef w_size,
                            at::IntArrayRef stride, at::IntArrayRef padding,
                            at::IntArrayRef dilation, int64_t groups, c10::string_view algo,
                           c10::string_view padding_mode) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("fftconv::conv2d_weight_grad", "")
                             .typed<GradSignature>();
  return op.call(dy, x, w_size, stride, padding, dilation, groups, algo, padding_mode);
}

// A pair of ints (the operators' schemas take int[2]; the kernels check the length).
struct Pair {
  std::array<int64_t, 2> v{};
  std::size_t n = 0;
  explicit Pair(at::IntArrayRef a) : n(a.size() < 2 ? a.size() : 2) {
    for (std::size_t i = 0; i < n; ++i) v[i] = a[i];
  }
  operator at::IntArrayRef() const { return at::IntArrayRef(v.data(), n); }
};

// The non-tensor arguments, kept by a backward node: fixed-size, no allocation per call. `algo`
// and `mode` are canonical names (static strings), or the caller's text where one is not,
// which the kernel then rejects with its message.
struct Params {
  Pair stride, padding, dilation;
  int64_t groups = 1;
  std::string algo_text, mode_text;  // only for a name that is not canonical
  const char* algo = nullptr;
  const char* mode = nullptr;

  Params(at::IntArrayRef st, at::IntArrayRef pa, at::IntArrayRef di, int64_t g, c10::string_view a,
         c10::string_view m)
      : stride(st), padding(pa), dilation(di), groups(g) {
    for (const char* name : {"auto", "fft", "fft_tiled", "fft_fused", "separable", "direct",
                             "cudnn", "implicit_gemm"}) {
      if (a == name) algo = name;
    }
    if (!algo) algo_text = std::string(a);
    for (const char* name : {"zeros", "reflect", "replicate", "circular"}) {
      if (m == name) mode = name;
    }
    if (!mode) mode_text = std::string(m);
  }
  c10::string_view algo_name() const { return algo ? c10::string_view(algo) : algo_text; }
  c10::string_view mode_name() const { return mode ? c10::string_view(mode) : mode_text; }
};

// A tensor's sizes, kept by a backward node (4-D: the kernels check).
struct Sizes {
  std::array<c10::SymInt, 4> v;
  std::size_t n = 0;
  Sizes() = default;
  explicit Sizes(const at::Tensor& t) {
    const c10::SymIntArrayRef s = t.sym_sizes();
    n = s.size() < 4 ? s.size() : 4;
    for (std::size_t i = 0; i < n; ++i) v[i] = s[i];
  }
  operator c10::SymIntArrayRef() const { return c10::SymIntArrayRef(v.data(), n); }
};

// Hand-written autograd nodes, as PyTorch's generated code has them (torch::autograd::Function
// costs several microseconds more per call). Each saves only what the needed gradients use.
struct FftconvNode : public torch::autograd::Node {
  explicit FftconvNode(Params p) : params(std::move(p)) {}
  Params params;

  // Returns the saved tensor (undefined when not saved).
  static at::Tensor unpack(const torch::autograd::SavedVariable& v) { return v.unpack(); }
};

// y = conv2d(x, w) + b: dx = input_grad(dy, w), dw = weight_grad(dy, x), db = dy.sum((0, 2, 3)).
struct Conv2dBackward final : public FftconvNode {
  using FftconvNode::FftconvNode;
  torch::autograd::SavedVariable x_, w_;
  Sizes x_size, w_size;
  // The filter's spectrum the forward call wrote (training steps: training_spectrum.h), for dx.
  std::shared_ptr<const TrainingSpectrum> spectrum_;

  std::string name() const override { return "FftconvConv2dBackward"; }
  void release_variables() override {
    x_.reset_data();
    w_.reset_data();
    spectrum_.reset();
  }
  variable_list apply(variable_list&& grads) override {
    const at::Tensor& dy = grads[0];
    variable_list out(3);
    if (!dy.defined()) return out;
    const Params& p = params;
    if (task_should_compute_output(0)) {
      const TrainingSpectrumOffer offer(spectrum_);
      out[0] = call_input_grad(dy, unpack(w_), x_size, p.stride, p.padding, p.dilation, p.groups,
                               p.algo_name(), p.mode_name());
    }
    if (task_should_compute_output(1)) {
      out[1] = call_weight_grad(dy, unpack(x_), w_size, p.stride, p.padding, p.dilation, p.groups,
                                p.algo_name(), p.mode_name());
    }
    if (task_should_compute_output(2)) out[2] = dy.sum({0, 2, 3});
    return out;
  }
};

// dx = conv2d_input_grad(dy, w); <g, dx> = <conv2d(g, w), dy> = <conv2d_weight_grad(dy, g), w>.
struct InputGradBackward final : public FftconvNode {
  using FftconvNode::FftconvNode;
  torch::autograd::SavedVariable dy_, w_;
  Sizes w_size;

  std::string name() const override { return "FftconvConv2dInputGradBackward"; }
  void release_variables() override {
    dy_.reset_data();
    w_.reset_data();
  }
  variable_list apply(variable_list&& grads) override {
    const at::Tensor& g = grads[0];
    variable_list out(2);
    if (!g.defined()) return out;
    const Params& p = params;
    if (task_should_compute_output(0)) {
      out[0] = call_conv2d(g, unpack(w_), std::nullopt, p.stride, p.padding, p.dilation, p.groups,
                           p.algo_name(), p.mode_name());
    }
    if (task_should_compute_output(1)) {
      out[1] = call_weight_grad(unpack(dy_), g, w_size, p.stride, p.padding, p.dilation, p.groups,
                                p.algo_name(), p.mode_name());
    }
    return out;
  }
};

// dw = conv2d_weight_grad(dy, x); <g, dw> = <conv2d(x, g), dy> = <conv2d_input_grad(dy, g), x>.
struct WeightGradBackward final : public FftconvNode {
  using FftconvNode::FftconvNode;
  torch::autograd::SavedVariable dy_, x_;
  Sizes x_size;

  std::string name() const override { return "FftconvConv2dWeightGradBackward"; }
  void release_variables() override {
    dy_.reset_data();
    x_.reset_data();
  }
  variable_list apply(variable_list&& grads) override {
    const at::Tensor& g = grads[0];
    variable_list out(2);
    if (!g.defined()) return out;
    const Params& p = params;
    if (task_should_compute_output(0)) {
      out[0] = call_conv2d(unpack(x_), g, std::nullopt, p.stride, p.padding, p.dilation, p.groups,
                           p.algo_name(), p.mode_name());
    }
    if (task_should_compute_output(1)) {
      out[1] = call_input_grad(unpack(dy_), g, x_size, p.stride, p.padding, p.dilation, p.groups,
                               p.algo_name(), p.mode_name());
    }
    return out;
  }
};

template <typename NodeT>
std::shared_ptr<NodeT> make_node(Params p, torch::autograd::edge_list edges) {
  std::shared_ptr<NodeT> node(new NodeT(std::move(p)), torch::autograd::deleteNode);
  node->set_next_edges(std::move(edges));
  return node;
}

at::Tensor conv2d_autograd(const at::Tensor& x, const at::Tensor& w,
                           const std::optional<at::Tensor>& bias, at::IntArrayRef stride,
                           at::IntArrayRef padding, at::IntArrayRef dilation, int64_t groups,
                           c10::string_view algo, c10::string_view padding_mode) {
  using torch::autograd::compute_requires_grad;
  const bool need_x = compute_requires_grad(x), need_w = compute_requires_grad(w);
  const bool need_b = compute_requires_grad(bias);
  std::shared_ptr<Conv2dBackward> node;
  if (need_x || need_w || need_b) {
    node = make_node<Conv2dBackward>(
        Params(stride, padding, dilation, groups, algo, padding_mode),
                                     torch::autograd::collect_next_edges(x, w, bias));
    if (need_w) node->x_ = torch::autograd::SavedVariable(x, false);  // dw needs x
    if (need_x) node->w_ = torch::autograd::SavedVariable(w, false);  // dx needs w
    node->x_size = Sizes(x);
    node->w_size = Sizes(w);
  }
  at::Tensor y;
  {
    at::AutoDispatchBelowADInplaceOrView below;
    // A trained weight whose dx will be wanted: the forward kernel may write the weight's
    // spectrum for the node's backward-data call.
    if (need_x && need_w) {
      const TrainingSpectrumRequest request;
      y = call_conv2d(x, w, bias, stride, padding, dilation, groups, algo, padding_mode);
      node->spectrum_ = take_training_spectrum();
    } else {
      y = call_conv2d(x, w, bias, stride, padding, dilation, groups, algo, padding_mode);
    }
  }
  if (node) torch::autograd::set_history(y, node);
  return y;
}

at::Tensor input_grad_autograd(const at::Tensor& dy, const at::Tensor& w,
                               c10::SymIntArrayRef x_size, at::IntArrayRef stride,
                               at::IntArrayRef padding, at::IntArrayRef dilation, int64_t groups,
                               c10::string_view algo, c10::string_view padding_mode) {
  using torch::autograd::compute_requires_grad;
  const bool need_dy = compute_requires_grad(dy), need_w = compute_requires_grad(w);
  std::shared_ptr<InputGradBackward> node;
  if (need_dy || need_w) {
    node = make_node<InputGradBackward>(
        Params(stride, padding, dilation, groups, algo, padding_mode),
                                        torch::autograd::collect_next_edges(dy, w));
    if (need_w) node->dy_ = torch::autograd::SavedVariable(dy, false);
    if (need_dy) node->w_ = torch::autograd::SavedVariable(w, false);
    node->w_size = Sizes(w);
  }
  at::Tensor dx;
  {
    at::AutoDispatchBelowADInplaceOrView below;
    dx = call_input_grad(dy, w, x_size, stride, padding, dilation, groups, algo, padding_mode);
  }
  if (node) torch::autograd::set_history(dx, node);
  return dx;
}

at::Tensor weight_grad_autograd(const at::Tensor& dy, const at::Tensor& x,
                                c10::SymIntArrayRef w_size, at::IntArrayRef stride,
                                at::IntArrayRef padding, at::IntArrayRef dilation, int64_t groups,
                                c10::string_view algo, c10::string_view padding_mode) {
  using torch::autograd::compute_requires_grad;
  const bool need_dy = compute_requires_grad(dy), need_x = compute_requires_grad(x);
  std::shared_ptr<WeightGradBackward> node;
  if (need_dy || need_x) {
    node = make_node<WeightGradBackward>(
        Params(stride, padding, dilation, groups, algo, padding_mode),
                                         torch::autograd::collect_next_edges(dy, x));
    if (need_x) node->dy_ = torch::autograd::SavedVariable(dy, false);
    if (need_dy) node->x_ = torch::autograd::SavedVariable(x, false);
    node->x_size = Sizes(x);
  }
  at::Tensor dw;
  {
    at::AutoDispatchBelowADInplaceOrView below;
    dw = call_weight_grad(dy, x, w_size, stride, padding, dilation, groups, algo, padding_mode);
  }
  if (node) torch::autograd::set_history(dw, node);
  return dw;
}

// Under torch.autocast the operator behaves as F.conv2d: input, weight and bias are cast to the
// autocast dtype (lower_precision_fp), so the cast is recorded by autograd and dw comes back in
// the weight's own dtype. The engine computes in fp32 inside either way.
template <c10::DeviceType kDevice>
at::Tensor conv2d_autocast(const at::Tensor& x, const at::Tensor& w,
                           const std::optional<at::Tensor>& bias, at::IntArrayRef stride,
                           at::IntArrayRef padding, at::IntArrayRef dilation, int64_t groups,
                           c10::string_view algo, c10::string_view padding_mode) {
  const c10::impl::ExcludeDispatchKeyGuard no_autocast(
      kDevice == c10::DeviceType::CUDA ? c10::DispatchKey::AutocastCUDA
                                       : c10::DispatchKey::AutocastCPU);
  const at::ScalarType to = at::autocast::get_autocast_dtype(kDevice);
  std::optional<at::Tensor> b;
  if (bias && bias->defined()) b = at::autocast::cached_cast(to, *bias, kDevice);
  return call_conv2d(at::autocast::cached_cast(to, x, kDevice),
                     at::autocast::cached_cast(to, w, kDevice), b, stride, padding, dilation,
                     groups, algo, padding_mode);
}

}  // namespace

}  // namespace fftconv::torch_ext

TORCH_LIBRARY_IMPL(fftconv, Autograd, m) {
  m.impl("conv2d", TORCH_FN(fftconv::torch_ext::conv2d_autograd));
  m.impl("conv2d_input_grad", TORCH_FN(fftconv::torch_ext::input_grad_autograd));
  m.impl("conv2d_weight_grad", TORCH_FN(fftconv::torch_ext::weight_grad_autograd));
}

TORCH_LIBRARY_IMPL(fftconv, AutocastCUDA, m) {
  m.impl("conv2d", TORCH_FN(fftconv::torch_ext::conv2d_autocast<c10::DeviceType::CUDA>));
}

TORCH_LIBRARY_IMPL(fftconv, AutocastCPU, m) {
  m.impl("conv2d", TORCH_FN(fftconv::torch_ext::conv2d_autocast<c10::DeviceType::CPU>));
}
