"""Shared fixtures of the fftconv PyTorch tests. Without torch, or without the extension built,
every test skips with the reason; GPU tests skip without a CUDA device."""
import glob
import os
import random

import pytest

# Without torch or the extension, every module but test_environment.py is left out and that one
# skips with the reason (so a run reports why instead of failing to import).
SKIP_REASON = None
try:
    import torch
except ImportError:
    SKIP_REASON = "PyTorch is not installed"
if SKIP_REASON is None:
    try:
        import fftconv  # noqa: F401
    except ImportError as e:
        SKIP_REASON = (f"the fftconv extension is not importable ({e}); build it (README) and put "
                       "<build>/python on PYTHONPATH, or pip install the package")
if SKIP_REASON is not None:
    here = os.path.dirname(os.path.abspath(__file__))
    collect_ignore = [os.path.basename(p) for p in glob.glob(os.path.join(here, "test_*.py"))
                      if not p.endswith("test_environment.py")]
    torch = None

HAS_CUDA = torch is not None and torch.cuda.is_available()
needs_cuda = pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device")

DEVICES = ["cpu"] + (["cuda"] if HAS_CUDA else [])


@pytest.fixture(autouse=True)
def _strict_fp32():
    """The references are computed with TF32 off, and every test starts from the same seed."""
    if torch is None:
        yield
        return
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(0)
    random.seed(0)
    yield


def rel_l2(a, b):
    a, b = a.detach().cpu().double(), b.detach().cpu().double()
    return ((a - b).norm() / b.norm().clamp_min(1e-300)).item()


# Largest relative L2 error of an fftconv result against float64, per dtype: the fp32 FFT path
# (rel-L2 <= 1e-5 is the promise), and one rounding of fp16/bf16 outputs.
TOL = {} if torch is None else {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2,
                                torch.float64: 1e-12}


def capture_training_step(model, static_x, static_g, warmup=2):
    """Warms `model`'s forward and backward up on a side stream (plans are built and settled
    there, never during capture), clears the gradients, then captures one forward and backward
    into a CUDA graph. Returns (graph, static_y); replay after writing new values into static_x
    and static_g."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(warmup):
            model(static_x).backward(static_g)
    torch.cuda.current_stream().wait_stream(side)
    model.zero_grad(set_to_none=True)
    static_x.grad = None
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_y = model(static_x)
        static_y.backward(static_g)
    return graph, static_y


def env_with_path():
    """The environment for subprocesses: this process's sys.path on PYTHONPATH."""
    import sys
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return env
