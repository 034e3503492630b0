"""fftconv.filters: kornia's filter2d and gaussian_blur2d through fftconv.

Signatures, border modes and kernels follow ``kornia.filters``: ``filter2d`` applies one 2D kernel
per image (or one for all) to every channel, as a correlation; ``gaussian_blur2d`` builds kornia's
Gaussian and filters with it; even sizes are accepted too (taps centred between pixels, as in
kornia before 0.7, which takes odd sizes only). Border
modes: "reflect", "replicate", "circular" and "constant" (zeros), applied by the convolution as
it reads the image (odd kernel sizes; even ones pad by ``F.pad``). Any kernel size runs: large
ones are where the FFT pays. Kernels built here are kept between calls (one per size, sigma,
channel count, dtype and device), so the plan keeps their spectrum.
"""
from collections import OrderedDict

import torch
import torch.nn.functional as F
from torch import nn

from .functional import conv2d

__all__ = ["filter2d", "gaussian_blur2d", "GaussianBlur2d", "get_gaussian_kernel1d",
           "get_gaussian_kernel2d", "BORDER_TYPES"]

BORDER_TYPES = ("constant", "reflect", "replicate", "circular")


def _check_border(border_type):
    if border_type not in BORDER_TYPES:
        raise ValueError(f"border_type must be one of {BORDER_TYPES}, got {border_type!r}")


def _same_padding(kh, kw):
    """F.pad's [left, right, top, bottom] that keep the size: the extra row/column after."""
    return [(kw - 1) // 2, kw - 1 - (kw - 1) // 2, (kh - 1) // 2, kh - 1 - (kh - 1) // 2]


def _depthwise_kernel(kernel, channels):
    """(B or 1, kH, kW) -> (B * C or C, 1, kH, kW): each channel gets its image's kernel."""
    b, kh, kw = kernel.shape
    return kernel[:, None].expand(b, channels, kh, kw).reshape(b * channels, 1, kh, kw)


# kornia's border_type -> fftconv.conv2d's padding_mode.
_PADDING_MODE = {"constant": "zeros", "reflect": "reflect", "replicate": "replicate",
                 "circular": "circular"}


def _filter(input, weight, border_type, padding, kh, kw):
    b, c, h, w = input.shape
    pad, mode = [0, 0], "zeros"
    if padding == "same":
        left, right, top, bottom = _same_padding(kh, kw)
        if left == right and top == bottom:
            # Odd sizes: the convolution reads beyond the edges through the border as it loads
            # (no padded copy where the algorithm can: the separable path for Gaussians).
            pad, mode = [top, left], _PADDING_MODE[border_type]
        else:
            input = F.pad(input, [left, right, top, bottom], mode=border_type)
    groups = weight.shape[0]
    out = conv2d(input.reshape(-1, groups, input.shape[-2], input.shape[-1]), weight,
                 padding=pad, groups=groups, padding_mode=mode)
    return out.reshape(b, c, out.shape[-2], out.shape[-1])


def filter2d(input, kernel, border_type="reflect", normalized=False, padding="same",
             behaviour="corr"):
    """Convolves every channel of ``input`` (B, C, H, W) with ``kernel`` (1, kH, kW) or
    (B, kH, kW), as ``kornia.filters.filter2d``: a correlation (``behaviour="conv"`` flips the
    kernel), ``normalized`` divides the kernel by the sum of its absolute values, ``padding`` is
    "same" (borders by ``border_type``) or "valid" (no padding, a smaller output)."""
    if not isinstance(input, torch.Tensor) or input.dim() != 4:
        raise ValueError(f"filter2d: input must be a (B, C, H, W) tensor, got "
                         f"{tuple(input.shape) if isinstance(input, torch.Tensor) else type(input)}")
    if not isinstance(kernel, torch.Tensor) or kernel.dim() != 3:
        raise ValueError(f"filter2d: kernel must be a (B, kH, kW) tensor, got "
                         f"{tuple(kernel.shape) if isinstance(kernel, torch.Tensor) else type(kernel)}")
    if kernel.shape[0] not in (1, input.shape[0]):
        raise ValueError(f"filter2d: kernel batch {kernel.shape[0]} must be 1 or the input's batch "
                         f"{input.shape[0]}")
    _check_border(border_type)
    if padding not in ("same", "valid"):
        raise ValueError(f"filter2d: padding must be 'same' or 'valid', got {padding!r}")
    if behaviour not in ("corr", "conv"):
        raise ValueError(f"filter2d: behaviour must be 'corr' or 'conv', got {behaviour!r}")
    kernel = kernel.to(device=input.device, dtype=input.dtype)
    if behaviour == "conv":
        kernel = kernel.flip((-2, -1))
    if normalized:
        kernel = kernel / kernel.abs().sum(dim=(-2, -1), keepdim=True)
    kh, kw = kernel.shape[-2:]
    return _filter(input, _depthwise_kernel(kernel, input.shape[1]), border_type, padding, kh, kw)


def _pair(v, name):
    if isinstance(v, (int, float)):
        return (v, v)
    v = tuple(v)
    if len(v) != 2:
        raise ValueError(f"{name} must be a number or a pair, got {v!r}")
    return v


def get_gaussian_kernel1d(kernel_size, sigma, *, device=None, dtype=None):
    """kornia's 1D Gaussian: taps at x - size // 2 (+ 0.5 for even sizes), normalised to sum 1.
    ``sigma`` a number, or a (B, 1) tensor for one kernel per image: the result is (B, size)."""
    if not isinstance(kernel_size, int) or kernel_size < 1:
        raise ValueError(f"kernel_size must be a positive int, got {kernel_size!r}")
    if isinstance(sigma, torch.Tensor):
        sigma = sigma.to(device=device, dtype=dtype).reshape(-1, 1)
    else:
        if sigma <= 0:
            raise ValueError(f"sigma must be positive, got {sigma!r}")
        sigma = torch.tensor([[float(sigma)]], device=device, dtype=dtype)
    x = torch.arange(kernel_size, device=sigma.device, dtype=sigma.dtype) - kernel_size // 2
    if kernel_size % 2 == 0:
        x = x + 0.5
    g = torch.exp(-(x[None] ** 2) / (2.0 * sigma ** 2))
    return g / g.sum(dim=-1, keepdim=True)


def get_gaussian_kernel2d(kernel_size, sigma, *, device=None, dtype=None):
    """(B, kH, kW) outer product of kornia's 1D Gaussians; ``kernel_size`` and ``sigma`` are
    (y, x) pairs (or one value for both); ``sigma`` may be a (B, 2) tensor."""
    kh, kw = _pair(kernel_size, "kernel_size")
    if isinstance(sigma, torch.Tensor):
        sigma = sigma.reshape(-1, 2)
        sy, sx = sigma[:, :1], sigma[:, 1:]
    else:
        sy, sx = _pair(sigma, "sigma")
    ky = get_gaussian_kernel1d(int(kh), sy, device=device, dtype=dtype)
    kx = get_gaussian_kernel1d(int(kw), sx, device=device, dtype=dtype)
    return ky[:, :, None] * kx[:, None, :]


_KERNELS = OrderedDict()
_KERNELS_MAX = 64


def _cached_gaussian(kernel_size, sigma, channels, device, dtype):
    """The depthwise weight of a Gaussian, one tensor per parameters: a stable tensor the plan
    keeps the spectrum of."""
    key = (tuple(_pair(kernel_size, "kernel_size")), tuple(float(s) for s in _pair(sigma, "sigma")),
           channels, device, dtype)
    weight = _KERNELS.get(key)
    if weight is None:
        kernel = get_gaussian_kernel2d(kernel_size, sigma, device=device, dtype=torch.float64)
        weight = _depthwise_kernel(kernel.to(dtype), channels).contiguous()
        _KERNELS[key] = weight
        if len(_KERNELS) > _KERNELS_MAX:
            _KERNELS.popitem(last=False)
    else:
        _KERNELS.move_to_end(key)
    return weight


def gaussian_blur2d(input, kernel_size, sigma, border_type="reflect", separable=True):
    """Blurs every channel of ``input`` (B, C, H, W) with kornia's Gaussian of ``kernel_size``
    (ky, kx) and ``sigma`` (sy, sx) (numbers, pairs, or a (B, 2) tensor for one Gaussian per
    image), keeping the size (borders by ``border_type``), as ``kornia.filters.gaussian_blur2d``.
    ``separable`` is accepted for kornia's signature; the result is the same either way."""
    if not isinstance(input, torch.Tensor) or input.dim() != 4:
        raise ValueError("gaussian_blur2d: input must be a (B, C, H, W) tensor")
    _check_border(border_type)
    kh, kw = (int(v) for v in _pair(kernel_size, "kernel_size"))
    if isinstance(sigma, torch.Tensor):
        kernel = get_gaussian_kernel2d((kh, kw), sigma, device=input.device, dtype=input.dtype)
        if kernel.shape[0] not in (1, input.shape[0]):
            raise ValueError(f"gaussian_blur2d: sigma has {kernel.shape[0]} rows for a batch of "
                             f"{input.shape[0]}")
        weight = _depthwise_kernel(kernel, input.shape[1])
    else:
        weight = _cached_gaussian((kh, kw), sigma, input.shape[1], input.device, input.dtype)
    return _filter(input, weight, border_type, "same", kh, kw)


class GaussianBlur2d(nn.Module):
    """Module form of ``gaussian_blur2d`` (kornia's ``GaussianBlur2d``)."""

    def __init__(self, kernel_size, sigma, border_type="reflect", separable=True):
        super().__init__()
        _check_border(border_type)
        self.kernel_size = tuple(int(v) for v in _pair(kernel_size, "kernel_size"))
        self.sigma = sigma if isinstance(sigma, torch.Tensor) else tuple(_pair(sigma, "sigma"))
        self.border_type = border_type
        self.separable = separable

    def forward(self, input):
        return gaussian_blur2d(input, self.kernel_size, self.sigma, self.border_type,
                               self.separable)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, sigma={self.sigma}, "
                f"border_type={self.border_type!r}")
