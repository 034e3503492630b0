"""Tests of bench/torch_baseline.py that need PyTorch; skipped where torch is not installed.

The FFT convolution must equal F.conv2d, and a small run must write benchmark JSON that
scripts/bench_compare reads. On the CPU these run in seconds; with CUDA they also cover the
GPU path (CUDA events, fp16).

    python3 -m unittest discover -s tests/scripts -p 'test_torch_baseline.py' -v
"""

import json
import os
import tempfile
import unittest

from test_bench_scripts import COMPARE, TORCH_BASELINE, load_script

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    torch = None

GEOMETRIES = [
    # (n, c, h, w, k, r, s, pad, stride, dilation, groups)
    (2, 3, 17, 13, 4, 5, 3, (2, 1), (1, 1), (1, 1), 1),
    (1, 1, 20, 20, 1, 9, 9, (4, 4), (1, 1), (1, 1), 1),
    (2, 4, 16, 19, 6, 5, 7, (0, 3), (2, 3), (1, 1), 2),
    (1, 6, 15, 15, 6, 3, 3, (3, 2), (1, 1), (3, 2), 6),
    (3, 2, 11, 12, 4, 11, 12, (0, 0), (1, 1), (1, 1), 1),
]


def devices():
    out = ["cpu"]
    if torch is not None and torch.cuda.is_available():
        out.append("cuda")
    return out


@unittest.skipIf(torch is None, "PyTorch is not installed")
class FftConvTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tb = load_script("torch_baseline", TORCH_BASELINE)

    def test_matches_conv2d_fp64(self):
        g = torch.Generator().manual_seed(3)
        for dev in devices():
            for n, c, h, w, k, r, s, pad, stride, dil, groups in GEOMETRIES:
                with self.subTest(device=dev, shape=(n, c, h, w, k, r, s, pad, stride, dil)):
                    x = torch.rand(n, c, h, w, generator=g, dtype=torch.float64).to(dev) - 0.5
                    wt = torch.rand(k, c // groups, r, s, generator=g,
                                    dtype=torch.float64).to(dev) - 0.5
                    ref = F.conv2d(x, wt, None, stride, pad, dil, groups)
                    y = self.tb.fft_conv2d(x, wt, stride, pad, dil, groups)
                    self.assertEqual(y.shape, ref.shape)
                    self.assertLess(self.tb.rel_l2(y, ref), 1e-12)

    @unittest.skipUnless("cuda" in devices(), "no CUDA device")
    def test_half_precision_on_gpu(self):
        x = torch.rand(2, 3, 40, 40, device="cuda") - 0.5
        wt = torch.rand(3, 1, 15, 15, device="cuda") - 0.5
        ref = F.conv2d(x, wt, None, 1, 7, 1, 3)
        for dt, tol in ((torch.float16, 2e-3), (torch.bfloat16, 1e-2)):
            with self.subTest(dtype=dt):
                y = self.tb.fft_conv2d(x.to(dt), wt.to(dt), (1, 1), (7, 7), (1, 1), 3)
                self.assertEqual(y.dtype, dt)
                self.assertLess(self.tb.rel_l2(y, ref), tol)


@unittest.skipIf(torch is None, "PyTorch is not installed")
class SmokeRunTest(unittest.TestCase):
    def test_small_run_writes_benchmark_json(self):
        tb = load_script("torch_baseline", TORCH_BASELINE)
        bc = load_script("bench_compare", COMPARE)
        with tempfile.TemporaryDirectory() as d:
            csv_path = os.path.join(d, "tiny.csv")
            with open(csv_path, "w") as f:
                f.write("name,n,c,h,w,k,r,s,pad_h,pad_w,stride_h,stride_w,dil_h,dil_w,groups,"
                        "dtype\n"
                        "tiny,2,3,24,20,4,7,5,3,2,1,1,1,1,1,f32\n"
                        "tiny_strided,1,4,21,21,4,5,5,2,2,2,2,2,2,2,f32\n"
                        "bad_groups,1,3,8,8,4,3,3,1,1,1,1,1,1,2,f32\n")
            out = os.path.join(d, "out.json")
            for dev in devices():
                with self.subTest(device=dev):
                    rc = tb.main(["--shapes", csv_path, "--device", dev, "--iters", "3",
                                  "--warmup", "1", "--out", out])
                    self.assertEqual(rc, 0)
                    with open(out) as f:
                        doc = json.load(f)
                    self.assertIn("torch_version", doc["context"])
                    self.assertTrue(doc["context"]["complete"])
                    self.assertFalse(os.path.exists(out + ".partial"))
                    rs = bc.load_results(out)
                    names = set(rs.results)
                    for case in ("tiny", "tiny_strided"):
                        for p in ("fwd", "dgrad", "wgrad"):
                            self.assertIn(f"{case}/{p}/torch_cudnn", names)
                        fft = rs.results[f"{case}/fwd/torch_fft"]
                        self.assertLess(fft.counter("rel_l2"), 1e-5)
                        self.assertGreater(fft.counter("tflops"), 0)
                    self.assertNotIn("tiny/dgrad/torch_fft", names)  # fwd only
                    self.assertIn("groups", rs.errors["bad_groups/fwd/torch_cudnn"])


if __name__ == "__main__":
    unittest.main()
