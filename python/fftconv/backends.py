"""The extension's plan caches, in the manner of ``torch.backends.cuda.cufft_plan_cache``, and the
training steps' filter spectra.

``fftconv.backends.plan_cache`` is the cache of the current CUDA device;
``fftconv.backends.plan_cache[i]`` that of device ``i`` and ``plan_cache["cpu"]`` that of the host
backend. Each is a bounded LRU (``max_size``, default 1024) of plans keyed by descriptor, pass,
algorithm and, for frozen filters, the filter tensor; ``size`` is the number of plans in it and
``clear()`` drops them all; ``describe()`` says, per plan, what runs it and why.

Under ``algo="auto"`` on CUDA, a plan chooses between the engine's best algorithm and PyTorch's
own convolution (``aten::convolution``, cuDNN with PyTorch's settings) by estimate. With
``torch.backends.cudnn.benchmark = True`` (as PyTorch's own algorithm search), a plan made while
it is on and whose two estimates are within 16x of each other instead times both on its first
call's tensors (two untimed calls each, then five alternating timed ones; the median decides)
and runs the faster from then on. Where the estimate ranks aten first and the engine's plan
would need more than 1 GiB of workspace, the estimate decides. Nothing is timed while a stream
is being captured.

``fftconv.backends.strict_fp32`` (default ``True``): fp32 results stay within 1e-5 (rel-L2)
of float64 whatever runs them. PyTorch's cuDNN search may pick algorithms that miss that
(measured on the H200: some 3x3 and 5x5 weight gradients at 1.2e-5 to 3.7e-3), so under
``cudnn.benchmark`` the first fp32 result a plan gets from aten is checked against a float64
computation and, where it misses, the engine runs the plan instead (its FFT, or its own cuDNN
path, which keeps to algorithms within fp32's tolerance), even where that is slower. ``False``:
aten's results are taken as they are, for parity with F.conv2d's speed and results; so they are
while ``torch.backends.cudnn.allow_tf32`` is on (PyTorch's default: the user chose TF32 for
cuDNN's convolutions). Read when a plan is made; ``plan_cache.clear()`` applies a change to the
plans made before.

``fftconv.backends.cudnn_search`` (default ``"auto"``): how the engine's own cuDNN path (``algo=
"cudnn"``, and the plans strict_fp32 moves off aten) picks its algorithm: ``"auto"`` (both of
the next two searches, the faster kept; see ``fftconv::CudnnSearch::kAuto``), ``"find"`` (the
legacy API's ``cudnnFind*``), ``"graph"`` (cuDNN's graph API: its heuristics' engines timed,
every engine of the fp32 path checked against float64 at plan time, one
``cudnnBackendExecute`` per call; see ``fftconv::CudnnSearch::kGraph``) or ``"heuristic"``.
Read when a plan is made, as strict_fp32.

``fftconv.backends.own_fft`` (default ``False``): whether the engine's FFT plans zero-pad and
transform each plane in one kernel of their own, and invert and clip it in another, instead of a
pad kernel, cuFFT's transforms and a clip kernel (``fftconv::Options::own_fft``; FFT sizes the
kernels do not take stay on cuFFT, and ``plan_cache.describe()`` says which). Read when a plan is
made, as strict_fp32.

``fftconv.backends.filter_spectra``: in a training step (input and weight both require grad,
grad mode on) the forward call of an FFT plan computes the weight's spectrum once, into memory of
PyTorch's allocator held by the call's autograd node, and that node's backward-data call reads it
instead of transforming the weight again; it is freed with the node's saved tensors.
``filter_spectra.enabled = False`` turns this off, ``max_bytes`` (default 1 GiB) bounds the
spectrum a call may write, and ``size`` and ``bytes`` say what is held now.
"""
import sys
import types

import torch

from . import _C


class PlanCache:
    def __init__(self, device):
        self._device = device

    def _index(self):
        if self._device is None:
            return torch.cuda.current_device() if torch.cuda.is_available() else -1
        return self._device

    @property
    def size(self):
        return _C._plan_cache_size(self._index())

    @property
    def max_size(self):
        return _C._plan_cache_max_size(self._index())

    @max_size.setter
    def max_size(self, n):
        _C._plan_cache_set_max_size(self._index(), int(n))

    def clear(self):
        _C._plan_cache_clear(self._index())

    def describe(self):
        """One line per plan, most recently used first: its descriptor, pass and algo, then what
        runs it (the engine plan's description, or ``aten::convolution``) and, under Auto, how
        it was chosen (the estimates, or the times measured on its first call)."""
        return _C._plan_cache_describe(self._index())

    def __getitem__(self, device):
        if isinstance(device, str) and device == "cpu":
            return PlanCache(-1)
        device = torch.device(device) if isinstance(device, str) else device
        if isinstance(device, torch.device):
            if device.type == "cpu":
                return PlanCache(-1)
            if device.type != "cuda":
                raise ValueError(f"fftconv has no plan cache for device type {device.type}")
            device = device.index if device.index is not None else torch.cuda.current_device()
        if not isinstance(device, int) or device < -1:
            raise ValueError(f"expected a device index, 'cpu' or a torch.device, got {device!r}")
        return PlanCache(device)

    def __repr__(self):
        where = "current CUDA device" if self._device is None else (
            "cpu" if self._device == -1 else f"cuda:{self._device}")
        return f"PlanCache({where}, size={self.size}, max_size={self.max_size})"


class FilterSpectra:
    """The training steps' filter spectra (process-wide): ``enabled``, ``max_bytes`` (the largest
    spectrum a forward call writes), and ``size`` and ``bytes`` of those alive now."""

    @property
    def size(self):
        return _C._filter_spectra_info()[0]

    @property
    def bytes(self):
        return _C._filter_spectra_info()[1]

    @property
    def max_bytes(self):
        return _C._filter_spectra_info()[2]

    @max_bytes.setter
    def max_bytes(self, n):
        _C._filter_spectra_set_max_bytes(int(n))

    @property
    def enabled(self):
        return _C._filter_spectra_enabled()

    @enabled.setter
    def enabled(self, on):
        _C._filter_spectra_enabled(bool(on))

    def __repr__(self):
        return (f"FilterSpectra(size={self.size}, bytes={self.bytes}, "
                f"max_bytes={self.max_bytes}, enabled={self.enabled})")


class _BackendsModule(types.ModuleType):
    """This module, with ``strict_fp32``, ``cudnn_search`` and ``own_fft`` as properties (as
    torch.backends' switches)."""

    @property
    def strict_fp32(self):
        return _C._strict_fp32()

    @strict_fp32.setter
    def strict_fp32(self, on):
        _C._strict_fp32(bool(on))

    @property
    def own_fft(self):
        return _C._own_fft()

    @own_fft.setter
    def own_fft(self, on):
        _C._own_fft(bool(on))

    @property
    def cudnn_search(self):
        return _C._cudnn_search()

    @cudnn_search.setter
    def cudnn_search(self, name):
        if not isinstance(name, str):
            raise TypeError(f"cudnn_search must be a str, got {type(name).__name__}")
        _C._cudnn_search(name)


plan_cache = PlanCache(None)
filter_spectra = FilterSpectra()

build_info = _C._build_info()
"""What this build holds: {'cuda': bool, 'host_fft': bool, 'cudnn': bool}."""

sys.modules[__name__].__class__ = _BackendsModule
