"""The extension exports its module init function only, and shares a process with torch and
libfftconv.so in either load order."""
import os
import shutil
import subprocess
import sys

import pytest

import fftconv
from conftest import HAS_CUDA, env_with_path


@pytest.mark.skipif(shutil.which("nm") is None, reason="nm (binutils) is not installed")
def test_extension_exports_only_its_init():
    out = subprocess.run(["nm", "-D", "--defined-only", "-C", fftconv._C.__file__], check=True,
                         capture_output=True, text=True).stdout
    names = [line.split(None, 2)[2] for line in out.splitlines() if len(line.split(None, 2)) == 3]
    assert names == ["PyInit__C"], names[:20]


ORDERS = {
    "torch_then_library": ["import torch, fftconv", "lib = ctypes.CDLL(LIB)"],
    "library_then_torch": ["lib = ctypes.CDLL(LIB)", "import torch, fftconv"],
}

SCRIPT = """
import ctypes, os, sys
LIB = os.environ["FFTCONV_LIBRARY"]
{first}
{second}
import torch.nn.functional as F
dev = "cuda" if torch.cuda.is_available() else "cpu"
x = torch.randn(2, 3, 40, 40, device=dev); w = torch.randn(4, 3, 17, 17, device=dev)
y = fftconv.conv2d(x, w, padding=8)
ref = F.conv2d(x.double(), w.double(), padding=8)
err = ((y.double() - ref).norm() / ref.norm()).item()
# The C API in the same process: formatting a descriptor (the call that crashed when the library
# exported its C++ runtime).
class Desc(ctypes.Structure):
    _fields_ = [(f, ctypes.c_int64) for f in ("n", "c", "h", "w", "k", "r", "s", "pad_h", "pad_w",
                "stride_h", "stride_w", "dil_h", "dil_w", "groups")] + [("dtype", ctypes.c_int),
                                                                   ("border", ctypes.c_int)]
lib.fftconv_conv_desc_default.restype = Desc
d = lib.fftconv_conv_desc_default()
d.h, d.w, d.r, d.s = 40, 40, 17, 17
buf = ctypes.create_string_buffer(128)
assert lib.fftconv_conv_desc_to_string(ctypes.byref(d), buf, ctypes.c_size_t(128), None) == 0
print(dev, err, buf.value.decode())
sys.exit(0 if err < 1e-5 else 1)
"""


@pytest.mark.parametrize("order", ORDERS)
def test_library_and_extension_in_one_process(order):
    lib = os.environ.get("FFTCONV_LIBRARY")
    if not lib or not os.path.exists(lib):
        pytest.skip("FFTCONV_LIBRARY (the path of libfftconv.so) is not set; ctest sets it")
    first, second = ORDERS[order]
    env = env_with_path()
    r = subprocess.run([sys.executable, "-c", SCRIPT.format(first=first, second=second)],
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    print(order, r.stdout.strip(), "(GPU)" if HAS_CUDA else "(CPU)")
