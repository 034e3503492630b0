"""fftconv for PyTorch: 2D convolution with large filters through the FFT.

``fftconv.conv2d`` is a drop-in for ``torch.nn.functional.conv2d``, ``fftconv.nn.FFTConv2d`` for
``torch.nn.Conv2d`` (``fftconv.nn.convert`` swaps a model's large-kernel layers in place), and
``fftconv.filters`` has kornia's ``filter2d`` / ``gaussian_blur2d``. The operators are
``torch.ops.fftconv.conv2d``, ``conv2d_input_grad`` and ``conv2d_weight_grad``, with autograd,
autocast, torch.compile and CUDA graph support; plans are cached per device
(``fftconv.backends.plan_cache``).
"""
import torch  # noqa: F401  (first: the extension resolves its symbols from torch's libraries)

from . import _C  # noqa: F401  (registers torch.ops.fftconv.*)
from . import _meta  # noqa: F401  (fake kernels for torch.compile and meta tensors)
from . import backends, filters, nn
from .functional import conv2d

__version__ = "0.1.0"

__all__ = ["conv2d", "nn", "filters", "backends", "__version__"]
