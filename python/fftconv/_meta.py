"""Fake (meta) kernels of the fftconv operators: output shapes for torch.compile, meta tensors
and FakeTensor tracing. Symbolic sizes pass through unchanged."""
import torch


def _out_extent(size, kernel, stride, padding, dilation):
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


@torch.library.register_fake("fftconv::conv2d")
def _conv2d_fake(input, weight, bias, stride, padding, dilation, groups, algo,
                 padding_mode="zeros"):
    torch._check(input.dim() == 4, lambda: f"fftconv.conv2d: expected a 4-D input, got {input.dim()}-D")
    torch._check(weight.dim() == 4, lambda: f"fftconv.conv2d: expected a 4-D weight, got {weight.dim()}-D")
    torch._check(input.dtype == weight.dtype,
                 lambda: f"fftconv.conv2d: input {input.dtype} and weight {weight.dtype} differ")
    n, c, h, w = input.shape
    k, _, r, s = weight.shape
    torch._check(c == weight.shape[1] * groups,
                 lambda: f"fftconv.conv2d: input has {c} channels, weight expects {weight.shape[1] * groups}")
    ho = _out_extent(h, r, stride[0], padding[0], dilation[0])
    wo = _out_extent(w, s, stride[1], padding[1], dilation[1])
    return input.new_empty((n, k, ho, wo))


@torch.library.register_fake("fftconv::conv2d_input_grad")
def _input_grad_fake(grad_output, weight, input_size, stride, padding, dilation, groups, algo,
                     padding_mode="zeros"):
    return grad_output.new_empty(tuple(input_size))


@torch.library.register_fake("fftconv::conv2d_weight_grad")
def _weight_grad_fake(grad_output, input, weight_size, stride, padding, dilation, groups, algo,
                      padding_mode="zeros"):
    return grad_output.new_empty(tuple(weight_size))
