"""libfftconv.so inside a PyTorch process, in both import orders.

A library that carries its own C++ runtime and exports it crashed there (two libstdc++ copies
sharing locale ids: ConvDesc::to_string segfaulted with torch imported first, free() aborted
with the library loaded first). Each order runs in a child process, which builds a canonical
descriptor string through the C API and, where there is a GPU, runs a forward pass (the FFT
path, on cuFFT) on torch's tensors and stream and compares it with F.conv2d in float64. Skips without PyTorch or without the
built library ($FFTCONV_LIBRARY, default build/lib/libfftconv.so).
"""
import os
import subprocess
import sys
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
LIBRARY = os.environ.get("FFTCONV_LIBRARY",
                         os.path.join(HERE, "..", "..", "build", "lib", "libfftconv.so"))

CHILD = textwrap.dedent(r"""
    import ctypes, sys
    order, path = sys.argv[1], sys.argv[2]
    if order == "torch-first":
        import torch
        lib = ctypes.CDLL(path)
    else:
        lib = ctypes.CDLL(path)
        import torch

    class Desc(ctypes.Structure):
        _fields_ = [(f, ctypes.c_int64) for f in
                    ("n", "c", "h", "w", "k", "r", "s", "pad_h", "pad_w", "stride_h", "stride_w",
                     "dil_h", "dil_w", "groups")] + [("dtype", ctypes.c_int),
                                                     ("border", ctypes.c_int)]

    lib.fftconv_conv_desc_default.restype = Desc
    lib.fftconv_last_error_message.restype = ctypes.c_char_p
    lib.fftconv_plan_describe.restype = ctypes.c_char_p
    d = lib.fftconv_conv_desc_default()
    d.n, d.c, d.h, d.w, d.k, d.r, d.s, d.pad_h, d.pad_w = 4, 3, 64, 61, 5, 31, 29, 15, 14
    assert lib.fftconv_conv_desc_validate(ctypes.byref(d)) == 0
    buf, needed = ctypes.create_string_buffer(256), ctypes.c_size_t()
    assert lib.fftconv_conv_desc_to_string(ctypes.byref(d), buf, 256, ctypes.byref(needed)) == 0
    print(buf.value.decode())
    if torch.cuda.is_available():
        plan = ctypes.c_void_p()
        st = lib.fftconv_plan_create(ctypes.byref(plan), ctypes.byref(d), None)
        assert st == 0, lib.fftconv_last_error_message()
        described = lib.fftconv_plan_describe(plan).decode()
        print(described)
        # The FFT path: cuFFT bound inside torch's process, not only cuDNN.
        assert " algo=fft " in described, described
        ws = ctypes.c_size_t()
        assert lib.fftconv_plan_workspace_size(plan, ctypes.byref(ws)) == 0
        g = torch.Generator(device="cuda").manual_seed(7)
        x = torch.randn(4, 3, 64, 61, device="cuda", generator=g)
        w = torch.randn(5, 3, 31, 29, device="cuda", generator=g)
        b = torch.randn(5, device="cuda", generator=g)
        y = torch.full((4, 5, 64, 61), float("nan"), device="cuda")
        work = torch.empty(max(ws.value, 1), dtype=torch.uint8, device="cuda")
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        p = lambda t: ctypes.c_void_p(t.data_ptr())
        st = lib.fftconv_forward(plan, p(x), p(w), p(b), p(y), p(work), ctypes.c_size_t(ws.value),
                                 stream)
        assert st == 0, lib.fftconv_last_error_message()
        torch.cuda.synchronize()
        ref = torch.nn.functional.conv2d(x.double(), w.double(), b.double(), padding=(15, 14))
        err = ((y.double() - ref).norm() / ref.norm()).item()
        print("rel_l2", err)
        assert err <= 1e-5, err
        assert lib.fftconv_plan_destroy(plan) == 0
    print("ok", order)
""")


def torch_available():
    try:
        import torch  # noqa: F401
        return True
    except ImportError:
        return False


@unittest.skipUnless(torch_available(), "PyTorch is not installed")
@unittest.skipUnless(os.path.exists(LIBRARY), "libfftconv.so not built at " + LIBRARY)
class LibraryInTorchProcess(unittest.TestCase):
    def run_order(self, order):
        r = subprocess.run([sys.executable, "-c", CHILD, order, LIBRARY], capture_output=True,
                           text=True, timeout=300)
        self.assertEqual(r.returncode, 0, f"{order}: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
        self.assertIn("n4c3h64w61k5r31s29p15x14u1x1d1x1g1f32", r.stdout)
        self.assertIn("ok " + order, r.stdout)
        print(r.stdout, end="")

    def test_torch_first(self):
        self.run_order("torch-first")

    def test_library_first(self):
        self.run_order("library-first")


if __name__ == "__main__":
    unittest.main()
