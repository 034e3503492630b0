"""fftconv.conv2d: torch.nn.functional.conv2d through the fftconv engine."""
import torch
import torch.nn.functional as F

from . import _C

_conv2d = torch.ops.fftconv.conv2d.default
# The same operator through the dispatcher without torch.ops' generic argument parsing (a few
# microseconds per call), for plain tensors in eager mode: torch.compile, __torch_function__
# subclasses and function modes take torch.ops.
_conv2d_direct = _C._conv2d
_PLAIN = (torch.Tensor, torch.nn.Parameter)
_compiling = torch.compiler.is_compiling
_function_mode = torch._C._is_torch_function_mode_enabled

ALGOS = ("auto", "fft", "fft_tiled", "fft_fused", "separable", "direct", "cudnn", "implicit_gemm")
PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _pair(v, name):
    if isinstance(v, int):
        return [v, v]
    v = list(v)
    if len(v) == 1:
        return [v[0], v[0]]
    if len(v) != 2 or not all(isinstance(e, int) for e in v):
        raise ValueError(f"fftconv.conv2d: expected {name} to be an int or a pair of ints, got {v!r}")
    return v


def _same_padding(weight, dilation):
    """Per dimension: (before, after) of padding='same'; before <= after, as torch pads."""
    pads = []
    for d, k in zip(dilation, weight.shape[2:]):
        total = d * (k - 1)
        pads.append((total // 2, total - total // 2))
    return pads


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, *, algo="auto",
           padding_mode="zeros"):
    """Applies a 2D convolution as ``torch.nn.functional.conv2d`` does, through fftconv.

    Same arguments, shapes and rules as ``F.conv2d``: ``input`` is (N, C, H, W) or unbatched
    (C, H, W), ``weight`` (K, C/groups, R, S), ``bias`` (K,) or None; ``padding`` an int, a pair
    or ``"valid"`` / ``"same"``. ``padding_mode`` is ``nn.Conv2d``'s: what the padding holds,
    ``"zeros"`` or the input continued as ``F.pad``'s ``"reflect"``, ``"replicate"`` and
    ``"circular"`` continue it (beyond one extent, which ``F.pad`` rejects, reflect mirrors
    again and circular wraps again); the engine applies it as it reads the input, without a
    padded copy where the algorithm can (the separable path), and every gradient follows it.
    ``algo`` picks the implementation: ``"auto"`` (the FFT where it
    pays, else PyTorch's own cuDNN convolution), ``"fft"``, ``"fft_tiled"`` (forward only),
    ``"fft_fused"`` (one kernel for one channel per group and FFT planes up to 128x128; every
    pass), ``"separable"`` (a frozen low-rank filter as 1-D passes; forward and
    input gradient; Auto picks it by itself for frozen filters where it pays), ``"direct"``
    (each output summed over its taps in one kernel, for one or a few planes; every pass, the
    input gradient with unit stride), ``"cudnn"`` (the engine's cuDNN path) or
    ``"implicit_gemm"`` (the weight gradient of float32 data as one tensor-core GEMM per group in
    the 3xTF32 split, float32's accuracy; the other passes as ``"auto"``; a build with CUTLASS). float32, float16 and bfloat16 run in the engine (fp32
    arithmetic inside); other floating types go to ``aten.convolution``.
    """
    # The common call, checked in C++: plain tensors, a 4-D input, numeric padding, eager mode.
    if (type(input) in _PLAIN and type(weight) in _PLAIN and (bias is None or type(bias) in _PLAIN)
            and type(padding) is not str and input.dim() == 4 and not _compiling()
            and not _function_mode()):
        return _conv2d_direct(input, weight, bias, stride, padding, dilation, groups, algo,
                              padding_mode)
    return _conv2d_general(input, weight, bias, stride, padding, dilation, groups, algo,
                           padding_mode)


def _conv2d_general(input, weight, bias, stride, padding, dilation, groups, algo, padding_mode):
    """Every other form: unbatched input, padding strings, tensor subclasses, torch.compile."""
    if algo not in ALGOS:
        raise ValueError(f"fftconv.conv2d: unknown algo {algo!r}; expected one of {ALGOS}")
    if padding_mode not in PADDING_MODES:
        raise ValueError(f"fftconv.conv2d: unknown padding_mode {padding_mode!r}; expected one of "
                         f"{PADDING_MODES}")
    if not isinstance(input, torch.Tensor) or not isinstance(weight, torch.Tensor):
        raise TypeError("fftconv.conv2d: input and weight must be tensors, got "
                        f"{type(input).__name__} and {type(weight).__name__}")
    if not isinstance(groups, int) or isinstance(groups, bool):
        raise TypeError(f"fftconv.conv2d: groups must be an int, got {type(groups).__name__}")
    stride = _pair(stride, "stride")
    dilation = _pair(dilation, "dilation")
    unbatched = input.dim() == 3
    if unbatched:
        input = input.unsqueeze(0)
    elif input.dim() != 4:
        raise RuntimeError(f"fftconv.conv2d: expected 3-D (unbatched) or 4-D (batched) input, got "
                           f"input of size {tuple(input.shape)}")
    if isinstance(padding, str):
        if padding == "valid":
            padding = [0, 0]
        elif padding == "same":
            if stride != [1, 1]:
                raise RuntimeError("fftconv.conv2d: padding='same' is not supported for strided "
                                   "convolutions")
            if weight.dim() != 4:
                raise RuntimeError(f"fftconv.conv2d: expected a 4-D weight, got {weight.dim()}-D")
            (bh, ah), (bw, aw) = _same_padding(weight, dilation)
            if bh != ah or bw != aw:
                # An even dilated extent: torch pads the extra row or column after the image
                # (with another mode, nn.Conv2d pads all of it by F.pad).
                if padding_mode != "zeros":
                    input = F.pad(input, [bw, aw, bh, ah], mode=padding_mode)
                    bh = bw = 0
                    padding_mode = "zeros"
                else:
                    input = F.pad(input, [0, aw - bw, 0, ah - bh])
            padding = [bh, bw]
        else:
            raise ValueError(f"fftconv.conv2d: invalid padding string {padding!r}, should be one of "
                             "{'valid', 'same'}")
    else:
        padding = _pair(padding, "padding")
    out = _conv2d(input, weight, bias, stride, padding, dilation, groups, algo, padding_mode)
    return out.squeeze(0) if unbatched else out
