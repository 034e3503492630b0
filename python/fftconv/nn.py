"""fftconv.nn: FFTConv2d, a torch.nn.Conv2d that computes through fftconv, and convert()."""
import torch
from torch import nn

from .functional import ALGOS, conv2d

__all__ = ["FFTConv2d", "convert"]


class FFTConv2d(nn.Conv2d):
    """``torch.nn.Conv2d`` computed by fftconv: the same constructor, parameters, ``padding_mode``
    and ``state_dict`` keys, so checkpoints load into either. ``algo`` is passed to
    ``fftconv.conv2d`` ("auto" by default)."""

    def __init__(self, *args, algo="auto", **kwargs):
        super().__init__(*args, **kwargs)
        if algo not in ALGOS:
            raise ValueError(f"FFTConv2d: unknown algo {algo!r}; expected one of {ALGOS}")
        self.algo = algo

    def _conv_forward(self, input, weight, bias):
        # padding_mode goes to the engine, which reads the input through it (no padded copy
        # where the algorithm can); "same" with an even extent pads in fftconv.conv2d.
        return conv2d(input, weight, bias, self.stride, self.padding, self.dilation, self.groups,
                      algo=self.algo, padding_mode=self.padding_mode)

    def extra_repr(self):
        return super().extra_repr() + (f", algo={self.algo!r}" if self.algo != "auto" else "")

    @classmethod
    def from_conv(cls, conv, algo="auto"):
        """An FFTConv2d that shares ``conv``'s parameters, buffers and hooks (no copy)."""
        if type(conv) is not nn.Conv2d and not isinstance(conv, FFTConv2d):
            raise TypeError(f"FFTConv2d.from_conv: expected an nn.Conv2d, got {type(conv).__name__}")
        if algo not in ALGOS:
            raise ValueError(f"FFTConv2d: unknown algo {algo!r}; expected one of {ALGOS}")
        new = cls.__new__(cls)
        new.__dict__.update(conv.__dict__)
        # Own containers, shared tensors: optimizers holding the parameters keep working.
        new._parameters = dict(conv._parameters)
        new._buffers = dict(conv._buffers)
        new._modules = dict(conv._modules)
        new.algo = algo
        return new


def convert(model, min_kernel=15, algo="auto"):
    """Replaces, in place, every ``nn.Conv2d`` of ``model`` whose kernel has a side of at least
    ``min_kernel`` by an ``FFTConv2d`` sharing its parameters; returns ``model`` (itself replaced
    when it is such a convolution). Transposed convolutions and subclasses are left alone."""
    if not isinstance(min_kernel, int) or min_kernel < 1:
        raise ValueError(f"convert: min_kernel must be a positive int, got {min_kernel!r}")

    def wanted(m):
        return type(m) is nn.Conv2d and max(m.kernel_size) >= min_kernel

    if wanted(model):
        return FFTConv2d.from_conv(model, algo)
    for parent in model.modules():
        for name, child in list(parent.named_children()):
            if wanted(child):
                setattr(parent, name, FFTConv2d.from_conv(child, algo))
    return model
