// Autograd and autocast kernels of the fftconv operators, in C++ so that a call costs no Python.
//
// The three operators are bilinear and close under differentiation: with y = conv2d(x, w),
//   dx = conv2d_input_grad(dy, w)       dw = conv2d_weight_grad(dy, x)      db = dy.sum((0, 2, 3))
// and the gradients of the two gradient operators are again the three operators, so double
// backward (gradient penalties, opcheck's gradient checks) works too. Each function saves only
// what the gradients that are needed use.
#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <torch/autograd.h>
#include <torch/library.h>

#include "ops.h"

namespace fftconv::torch_ext {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

at::Tensor call_conv2d(const at::Tensor& x, const at::Tensor& w,
                       const std::optional<at::Tensor>& bias, at::IntArrayRef stride,
                       at::IntArrayRef padding, at::IntArrayRef dilation, int64_t groups,
                       c10::string_view algo) {
  static const auto op =
      c10::Dispatcher::singleton()
          .findSchemaOrThrow("fftconv::conv2d", "")
          .typed<at::Tensor(const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&,
                            at::IntArrayRef, at::IntArrayRef, at::IntArrayRef, int64_t,
                            c10::string_view)>();
  return op.call(x, w, bias, stride, padding, dilation, groups, algo);
}

using GradSignature = at::Tensor(const at::Tensor&, const at::Tensor&, c10::SymIntArrayRef,
                                 at::IntArrayRef, at::IntArrayRef, at::IntArrayRef, int64_t,
                                 c10::string_view);

at::Tensor call_input_grad(const at::Tensor& dy, const at::Tensor& w, c10::SymIntArrayRef x_size,
                           at::IntArrayRef stride, at::IntArrayRef padding,
                           at::IntArrayRef dilation, int64_t groups, c10::string_view algo) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("fftconv::conv2d_input_grad", "")
                             .typed<GradSignature>();
  return op.call(dy, w, x_size, stride, padding, dilation, groups, algo);
}

at::Tensor call_weight_grad(const at::Tensor& dy, const at::Tensor& x, c10::SymIntArrayRef w_size,
                            at::IntArrayRef stride, at::IntArrayRef padding,
                            at::IntArrayRef dilation, int64_t groups, c10::string_view algo) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("fftconv::conv2d_weight_grad", "")
                             .typed<GradSignature>();
  return op.call(dy, x, w_size, stride, padding, dilation, groups, algo);
}

// The non-tensor arguments, kept in the context for the backward pass.
void save_params(AutogradContext* ctx, at::IntArrayRef stride, at::IntArrayRef padding,
                 at::IntArrayRef dilation, int64_t groups, c10::string_view algo) {
  ctx->saved_data["stride"] = stride.vec();
  ctx->saved_data["padding"] = padding.vec();
  ctx->saved_data["dilation"] = dilation.vec();
  ctx->saved_data["groups"] = groups;
  ctx->saved_data["algo"] = std::string(algo);
}

struct SavedParams {
  std::vector<int64_t> stride, padding, dilation;
  int64_t groups;
  std::string algo;
};

SavedParams load_params(AutogradContext* ctx) {
  return {ctx->saved_data["stride"].toIntVector(), ctx->saved_data["padding"].toIntVector(),
          ctx->saved_data["dilation"].toIntVector(), ctx->saved_data["groups"].toInt(),
          ctx->saved_data["algo"].toStringRef()};
}

std::vector<c10::SymInt> sym_sizes(const at::Tensor& t) { return t.sym_sizes().vec(); }

// y = conv2d(x, w) + b.
struct Conv2dFunction : public torch::autograd::Function<Conv2dFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& w,
                            const std::optional<at::Tensor>& bias, at::IntArrayRef stride,
                            at::IntArrayRef padding, at::IntArrayRef dilation, int64_t groups,
                            c10::string_view algo) {
    save_params(ctx, stride, padding, dilation, groups, algo);
    const bool need_x = x.requires_grad(), need_w = w.requires_grad();
    const bool need_b = bias && bias->defined() && bias->requires_grad();
    ctx->saved_data["need"] = std::vector<int64_t>{need_x, need_w, need_b};
    ctx->saved_data["x_size"] = c10::IValue(sym_sizes(x));
    ctx->saved_data["w_size"] = c10::IValue(sym_sizes(w));
    // dx needs w, dw needs x.
    ctx->save_for_backward({need_w ? x : at::Tensor(), need_x ? w : at::Tensor()});
    at::AutoDispatchBelowADInplaceOrView below;
    return call_conv2d(x, w, bias, stride, padding, dilation, groups, algo);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const SavedParams p = load_params(ctx);
    const std::vector<int64_t> need = ctx->saved_data["need"].toIntVector();
    const variable_list saved = ctx->get_saved_variables();
    const at::Tensor& dy = grads[0];
    at::Tensor dx, dw, db;
    if (need[0]) {
      dx = call_input_grad(dy, saved[1], ctx->saved_data["x_size"].toSymIntVector(), p.stride,
                           p.padding, p.dilation, p.groups, p.algo);
    }
    if (need[1]) {
      dw = call_weight_grad(dy, saved[0], ctx->saved_data["w_size"].toSymIntVector(), p.stride,
                            p.padding, p.dilation, p.groups, p.algo);
    }
    if (need[2]) db = dy.sum({0, 2, 3});
    return {dx, dw, db, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

// dx = conv2d_input_grad(dy, w); <g, dx> = <conv2d(g, w), dy> = <conv2d_weight_grad(dy, g), w>.
struct InputGradFunction : public torch::autograd::Function<InputGradFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& dy, const at::Tensor& w,
                            c10::SymIntArrayRef x_size, at::IntArrayRef stride,
                            at::IntArrayRef padding, at::IntArrayRef dilation, int64_t groups,
                            c10::string_view algo) {
    save_params(ctx, stride, padding, dilation, groups, algo);
    const bool need_dy = dy.requires_grad(), need_w = w.requires_grad();
    ctx->saved_data["need"] = std::vector<int64_t>{need_dy, need_w};
    ctx->saved_data["w_size"] = c10::IValue(sym_sizes(w));
    ctx->save_for_backward({need_w ? dy : at::Tensor(), need_dy ? w : at::Tensor()});
    at::AutoDispatchBelowADInplaceOrView below;
    return call_input_grad(dy, w, x_size, stride, padding, dilation, groups, algo);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const SavedParams p = load_params(ctx);
    const std::vector<int64_t> need = ctx->saved_data["need"].toIntVector();
    const variable_list saved = ctx->get_saved_variables();
    const at::Tensor& g = grads[0];
    at::Tensor ddy, dw;
    if (need[0]) {
      ddy = call_conv2d(g, saved[1], std::nullopt, p.stride, p.padding, p.dilation, p.groups,
                        p.algo);
    }
    if (need[1]) {
      dw = call_weight_grad(saved[0], g, ctx->saved_data["w_size"].toSymIntVector(), p.stride,
                            p.padding, p.dilation, p.groups, p.algo);
    }
    return {ddy, dw, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(),
            at::Tensor()};
  }
};

// dw = conv2d_weight_grad(dy, x); <g, dw> = <conv2d(x, g), dy> = <conv2d_input_grad(dy, g), x>.
struct WeightGradFunction : public torch::autograd::Function<WeightGradFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& dy, const at::Tensor& x,
                            c10::SymIntArrayRef w_size, at::IntArrayRef stride,
                            at::IntArrayRef padding, at::IntArrayRef dilation, int64_t groups,
                            c10::string_view algo) {
    save_params(ctx, stride, padding, dilation, groups, algo);
    const bool need_dy = dy.requires_grad(), need_x = x.requires_grad();
    ctx->saved_data["need"] = std::vector<int64_t>{need_dy, need_x};
    ctx->saved_data["x_size"] = c10::IValue(sym_sizes(x));
    ctx->save_for_backward({need_x ? dy : at::Tensor(), need_dy ? x : at::Tensor()});
    at::AutoDispatchBelowADInplaceOrView below;
    return call_weight_grad(dy, x, w_size, stride, padding, dilation, groups, algo);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const SavedParams p = load_params(ctx);
    const std::vector<int64_t> need = ctx->saved_data["need"].toIntVector();
    const variable_list saved = ctx->get_saved_variables();
    const at::Tensor& g = grads[0];
    at::Tensor ddy, dx;
    if (need[0]) {
      ddy = call_conv2d(saved[1], g, std::nullopt, p.stride, p.padding, p.dilation, p.groups,
                        p.algo);
    }
    if (need[1]) {
      dx = call_input_grad(saved[0], g, ctx->saved_data["x_size"].toSymIntVector(), p.stride,
                           p.padding, p.dilation, p.groups, p.algo);
    }
    return {ddy, dx, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(),
            at::Tensor()};
  }
};

at::Tensor conv2d_autograd(const at::Tensor& x, const at::Tensor& w,
                           const std::optional<at::Tensor>& bias, at::IntArrayRef stride,
                           at::IntArrayRef padding, at::IntArrayRef dilation, int64_t groups,
                           c10::string_view algo) {
  return Conv2dFunction::apply(x, w, bias, stride, padding, dilation, groups, algo);
}

at::Tensor input_grad_autograd(const at::Tensor& dy, const at::Tensor& w,
                               c10::SymIntArrayRef x_size, at::IntArrayRef stride,
                               at::IntArrayRef padding, at::IntArrayRef dilation, int64_t groups,
                               c10::string_view algo) {
  return InputGradFunction::apply(dy, w, x_size, stride, padding, dilation, groups, algo);
}

at::Tensor weight_grad_autograd(const at::Tensor& dy, const at::Tensor& x,
                                c10::SymIntArrayRef w_size, at::IntArrayRef stride,
                                at::IntArrayRef padding, at::IntArrayRef dilation, int64_t groups,
                                c10::string_view algo) {
  return WeightGradFunction::apply(dy, x, w_size, stride, padding, dilation, groups, algo);
}

// Under torch.autocast the operator behaves as F.conv2d: input, weight and bias are cast to the
// autocast dtype (lower_precision_fp), so the cast is recorded by autograd and dw comes back in
// the weight's own dtype. The engine computes in fp32 inside either way.
template <c10::DeviceType kDevice>
at::Tensor conv2d_autocast(const at::Tensor& x, const at::Tensor& w,
                           const std::optional<at::Tensor>& bias, at::IntArrayRef stride,
                           at::IntArrayRef padding, at::IntArrayRef dilation, int64_t groups,
                           c10::string_view algo) {
  const c10::impl::ExcludeDispatchKeyGuard no_autocast(
      kDevice == c10::DeviceType::CUDA ? c10::DispatchKey::AutocastCUDA
                                       : c10::DispatchKey::AutocastCPU);
  const at::ScalarType to = at::autocast::get_autocast_dtype(kDevice);
  std::optional<at::Tensor> b;
  if (bias && bias->defined()) b = at::autocast::cached_cast(to, *bias, kDevice);
  return call_conv2d(at::autocast::cached_cast(to, x, kDevice),
                     at::autocast::cached_cast(to, w, kDevice), b, stride, padding, dilation,
                     groups, algo);
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
