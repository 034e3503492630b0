#!/usr/bin/env python3
"""PyTorch baselines for the fftconv shape suites, written as Google Benchmark JSON.

    python3 bench/torch_baseline.py --shapes data/shapes/suite.csv --out torch.json
    python3 bench/torch_baseline.py --shapes data/shapes/*.csv --filter landmark \\
        --passes fwd,dgrad,wgrad --iters 20 --warmup 5 --out torch.json
    python3 bench/torch_baseline.py --device cpu --filter seed3_landmark --iters 3 --out smoke.json

For every row of the shape CSVs (columns name,n,c,h,w,k,r,s,pad_h,pad_w,stride_h,stride_w,
dil_h,dil_w,groups,dtype) and every requested pass it times

  torch_cudnn  torch.nn.functional.conv2d (fwd), torch.nn.grad.conv2d_input (dgrad) and
               torch.nn.grad.conv2d_weight (wgrad), with torch.backends.cudnn.benchmark = True
               and TF32 off (cuDNN and matmul);
  torch_fft    (fwd only) a plain FFT convolution written with torch.fft: rfft2 of the
               zero-padded input and of the (dilated) filter at the next 2,3,5,7-smooth size
               >= H + 2*pad, the per-group product with conj(W) by einsum, irfft2, crop and
               stride subsampling. fp16/bf16 tensors are computed in fp32 inside (torch.fft
               has no general half-precision path) and cast back; the casts are timed.

Each benchmark is timed with CUDA events per call after warm-up; real_time is the median
of --iters calls (>= 20 recommended, docs/benchmarking.md "What a time is"). Inputs smaller than
--rotate-mb are replicated and rotated so that successive calls do not hit a warm L2.
The first call (which includes cuDNN's algorithm search) is reported as first_call_ms.
On small problems the time can be bound by Python's kernel-launch overhead (torch_fft
launches several kernels per call): cpu_time reports the host time per call.
The output file is rewritten after every (case, pass), and a run ended by Ctrl-C or SIGTERM
(e.g. `timeout`) writes what it measured; context.complete says whether the run finished.
torch_fft's output is checked once per case against conv2d computed in fp32 (TF32 off):
the relative L2 error goes into "rel_l2" (also for torch_cudnn on fp16/bf16 rows).

Output: Google Benchmark JSON ({"context": ..., "benchmarks": [...]}) with names
"<case>/<pass>/<provider>", times in ms, and counters tflops (direct-convolution-equivalent
2*N*K*Ho*Wo*(C/groups)*R*S per second), gbps (bytes of the pass's input and output tensors
per second), min_ms, first_call_ms and rel_l2. A benchmark that cannot run (out of memory, invalid
row) is an entry with "error_occurred": true and "error_message".

Needs only PyTorch and the standard library; the module imports without PyTorch (torch is
imported when benchmarks run), so --help and the helpers work anywhere.
"""

import argparse
import csv
import datetime
import json
import math
import os
import platform
import re
import signal
import socket
import statistics
import sys
import time
import warnings
from dataclasses import dataclass

PASSES = ("fwd", "dgrad", "wgrad")
PROVIDERS = ("torch_cudnn", "torch_fft")
DTYPES = {"f32": 4, "f16": 2, "bf16": 2}
_DTYPE_ALIASES = {"f32": "f32", "fp32": "f32", "float32": "f32", "float": "f32",
                  "f16": "f16", "fp16": "f16", "float16": "f16", "half": "f16",
                  "bf16": "bf16", "bfloat16": "bf16"}
# Accuracy a correct FFT convolution reaches (docs/benchmarking.md "Accuracy and tolerance");
# above it we warn.
REL_L2_TOLERANCE = {"f32": 1e-5, "f16": 2e-3, "bf16": 1e-2}


# ----------------------------------------------------------------------------- shapes

@dataclass(frozen=True)
class Shape:
    name: str
    n: int
    c: int
    h: int
    w: int
    k: int
    r: int
    s: int
    pad_h: int
    pad_w: int
    stride_h: int
    stride_w: int
    dil_h: int
    dil_w: int
    groups: int
    dtype: str

    @property
    def out_h(self):
        return (self.h + 2 * self.pad_h - self.dil_h * (self.r - 1) - 1) // self.stride_h + 1

    @property
    def out_w(self):
        return (self.w + 2 * self.pad_w - self.dil_w * (self.s - 1) - 1) // self.stride_w + 1

    @property
    def x_shape(self):
        return (self.n, self.c, self.h, self.w)

    @property
    def w_shape(self):
        return (self.k, self.c // self.groups, self.r, self.s)

    @property
    def y_shape(self):
        return (self.n, self.k, self.out_h, self.out_w)

    def direct_flops(self):
        """FLOPs of the direct convolution (the same count for fwd, dgrad and wgrad)."""
        return 2.0 * math.prod(self.y_shape) * (self.c // self.groups) * self.r * self.s

    def io_bytes(self):
        """Bytes of a pass's input and output tensors: x, w and y in every pass."""
        elems = math.prod(self.x_shape) + math.prod(self.w_shape) + math.prod(self.y_shape)
        return DTYPES[self.dtype] * elems

    def problem(self):
        """Why the row cannot be a convolution, or None."""
        if min(self.n, self.c, self.h, self.w, self.k, self.r, self.s, self.stride_h,
               self.stride_w, self.dil_h, self.dil_w, self.groups) < 1:
            return "sizes, strides, dilations and groups must be >= 1"
        if self.pad_h < 0 or self.pad_w < 0:
            return "padding must be >= 0"
        if self.c % self.groups or self.k % self.groups:
            return f"groups={self.groups} does not divide C={self.c} and K={self.k}"
        if self.out_h < 1 or self.out_w < 1:
            return "the (dilated) filter is larger than the padded input"
        return None

    def descriptor(self):
        """Canonical one-line string, as fftconv's ConvDesc::to_string."""
        return (f"n{self.n}c{self.c}h{self.h}w{self.w}k{self.k}r{self.r}s{self.s}"
                f"p{self.pad_h}x{self.pad_w}u{self.stride_h}x{self.stride_w}"
                f"d{self.dil_h}x{self.dil_w}g{self.groups}{self.dtype}")


_INT_COLUMNS = ("n", "c", "h", "w", "k", "r", "s", "pad_h", "pad_w", "stride_h", "stride_w",
                "dil_h", "dil_w", "groups")


def read_shapes(path):
    """Rows of one shape CSV. Raises ValueError naming the file and line on a bad row."""
    shapes = []
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        missing = [c for c in ("name",) + _INT_COLUMNS + ("dtype",)
                   if c not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"{path}: missing column(s) {', '.join(missing)}")
        for line, row in enumerate(reader, start=2):
            try:
                sizes = {c: int(row[c]) for c in _INT_COLUMNS}
            except (TypeError, ValueError):
                raise ValueError(f"{path}:{line}: a size is not an integer") from None
            dtype = _DTYPE_ALIASES.get((row["dtype"] or "").strip().lower())
            if dtype is None:
                raise ValueError(f"{path}:{line}: unknown dtype {row['dtype']!r}")
            shapes.append(Shape(name=row["name"].strip(), dtype=dtype, **sizes))
    return shapes


def next_fast_size(n):
    """The smallest m >= n whose only prime factors are 2, 3, 5 and 7 (fast cuFFT sizes)."""
    m = max(1, n)
    while True:
        v = m
        for p in (2, 3, 5, 7):
            while v % p == 0:
                v //= p
        if v == 1:
            return m
        m += 1


# ----------------------------------------------------------------------------- JSON entries

def benchmark_entry(name, family_index, times_ms, cpu_ms, shape, label, counters):
    """A Google Benchmark 'iteration' entry with real_time = median of times_ms."""
    median = statistics.median(times_ms)
    entry = {
        "name": name, "family_index": family_index, "per_family_instance_index": 0,
        "run_name": name, "run_type": "iteration", "repetitions": 1, "repetition_index": 0,
        "threads": 1, "iterations": len(times_ms), "real_time": median, "cpu_time": cpu_ms,
        "time_unit": "ms", "label": label,
    }
    if median > 0:
        entry["tflops"] = shape.direct_flops() / (median * 1e-3) * 1e-12
        entry["gbps"] = shape.io_bytes() / (median * 1e-3) * 1e-9
    entry["min_ms"] = min(times_ms)
    for k, v in counters.items():
        if v is not None and math.isfinite(v):
            entry[k] = v
    return entry


def error_entry(name, family_index, message):
    return {
        "name": name, "family_index": family_index, "per_family_instance_index": 0,
        "run_name": name, "run_type": "iteration", "repetitions": 1, "repetition_index": 0,
        "threads": 1, "error_occurred": True, "error_message": message, "iterations": 0,
        "real_time": 0.0, "cpu_time": 0.0, "time_unit": "ms",
    }


# ----------------------------------------------------------------------------- torch parts
# Everything below imports torch lazily, so that this module imports without it.

def torch_dtype(name):
    import torch
    return {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[name]


def fft_conv2d(x, w, stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1):
    """Cross-correlation like F.conv2d (no bias) through torch.fft; plain, no kept spectra."""
    import torch
    import torch.nn.functional as F
    out_dtype = x.dtype
    if x.dtype != torch.float32 and x.dtype != torch.float64:
        x, w = x.float(), w.float()
    n, c, h, wd = x.shape
    k, cg, r, s = w.shape
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    if dh > 1 or dw > 1:
        wdil = w.new_zeros(k, cg, (r - 1) * dh + 1, (s - 1) * dw + 1)
        wdil[:, :, ::dh, ::dw] = w
        w, r, s = wdil, wdil.shape[2], wdil.shape[3]
    hp, wp = h + 2 * ph, wd + 2 * pw
    # Circular correlation with period >= the padded size is exact on the valid window.
    fh, fw = next_fast_size(hp), next_fast_size(wp)
    xf = torch.fft.rfft2(F.pad(x, (pw, pw, ph, ph)), s=(fh, fw))
    wf = torch.fft.rfft2(w, s=(fh, fw))
    bins_w = fw // 2 + 1
    xf = xf.reshape(n, groups, c // groups, fh, bins_w)
    wf = wf.reshape(groups, k // groups, cg, fh, bins_w)
    yf = torch.einsum("ngcij,gkcij->ngkij", xf, wf.conj())
    y = torch.fft.irfft2(yf.reshape(n, k, fh, bins_w), s=(fh, fw))
    y = y[:, :, : hp - r + 1 : sh, : wp - s + 1 : sw]
    return y.to(out_dtype).contiguous()


def rel_l2(y, ref):
    """||y - ref|| / ||ref|| in fp64."""
    import torch
    y, ref = y.double(), ref.double()
    den = torch.linalg.vector_norm(ref).item()
    num = torch.linalg.vector_norm(y - ref).item()
    return num / den if den > 0 else (0.0 if num == 0 else math.inf)


def configure_torch(torch, cudnn_benchmark):
    """cudnn.benchmark on, TF32 off for cuDNN and cuBLAS (the legacy flags, set together)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch >= 2.9 warns that these flags are legacy
        torch.backends.cudnn.benchmark = cudnn_benchmark
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False


class Timer:
    """Per-call times in ms: CUDA events on a GPU, perf_counter on the CPU."""

    def __init__(self, torch, device):
        self.torch = torch
        self.cuda = device.type == "cuda"

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize()

    def first_call(self, fn, args):
        self.sync()
        t0 = time.perf_counter()
        out = fn(*args)
        self.sync()
        return out, (time.perf_counter() - t0) * 1e3

    def run(self, fn, arg_sets, warmup, iters):
        """Returns (per-call ms list, host CPU ms per call)."""
        for i in range(warmup):
            fn(*arg_sets[i % len(arg_sets)])
        self.sync()
        cpu0 = time.process_time()
        if self.cuda:
            ev = self.torch.cuda.Event
            marks = [(ev(enable_timing=True), ev(enable_timing=True)) for _ in range(iters)]
            for i, (start, stop) in enumerate(marks):
                args = arg_sets[(warmup + i) % len(arg_sets)]
                start.record()
                fn(*args)
                stop.record()
            self.torch.cuda.synchronize()
            times = [start.elapsed_time(stop) for start, stop in marks]
        else:
            times = []
            for i in range(iters):
                args = arg_sets[(warmup + i) % len(arg_sets)]
                t0 = time.perf_counter()
                fn(*args)
                times.append((time.perf_counter() - t0) * 1e3)
        cpu_ms = (time.process_time() - cpu0) * 1e3 / max(1, iters)
        return times, cpu_ms


class Runner:
    def __init__(self, torch, device, args):
        self.torch = torch
        self.device = device
        self.args = args
        self.timer = Timer(torch, device)
        self.generator = torch.Generator(device="cpu")
        self._ref = None  # fwd accuracy reference of the current case

    def random(self, shape, dtype):
        # Uniform in [-1, 1), drawn on the CPU with a fixed seed so runs are reproducible.
        t = self.torch.rand(shape, generator=self.generator, dtype=self.torch.float32) * 2 - 1
        return t.to(device=self.device, dtype=dtype)

    def copies(self, nbytes):
        """How many input copies to rotate so that a call does not find them in L2."""
        limit = self.args.rotate_mb * 1e6
        if limit <= 0 or nbytes <= 0:
            return 1
        return max(1, min(self.args.max_copies, math.ceil(limit / nbytes)))

    def inputs(self, shape, pass_):
        """Rotated argument tuples for the pass: fwd (x, w), dgrad (dy, w), wgrad (x, dy)."""
        dt = torch_dtype(shape.dtype)
        a_shape, b_shape = {"fwd": (shape.x_shape, shape.w_shape),
                            "dgrad": (shape.y_shape, shape.w_shape),
                            "wgrad": (shape.x_shape, shape.y_shape)}[pass_]
        nbytes = DTYPES[shape.dtype] * (math.prod(a_shape) + math.prod(b_shape))
        self.generator.manual_seed(self.args.seed)
        return [(self.random(a_shape, dt), self.random(b_shape, dt))
                for _ in range(self.copies(nbytes))]

    def function(self, shape, pass_, provider):
        import torch.nn.functional as F
        from torch.nn import grad
        geo = dict(stride=(shape.stride_h, shape.stride_w), padding=(shape.pad_h, shape.pad_w),
                   dilation=(shape.dil_h, shape.dil_w), groups=shape.groups)
        if provider == "torch_fft":
            return lambda x, w: fft_conv2d(x, w, **geo)
        if pass_ == "fwd":
            return lambda x, w: F.conv2d(x, w, None, **geo)
        if pass_ == "dgrad":
            return lambda dy, w: grad.conv2d_input(shape.x_shape, w, dy, **geo)
        return lambda x, dy: grad.conv2d_weight(x, shape.w_shape, dy, **geo)

    def reference(self, shape, arg_sets):
        """fp32 conv2d (TF32 off) of the first fwd inputs: the accuracy reference."""
        import torch.nn.functional as F
        if self._ref is None:
            x, w = arg_sets[0]
            self._ref = F.conv2d(x.float(), w.float(), None, (shape.stride_h, shape.stride_w),
                                 (shape.pad_h, shape.pad_w), (shape.dil_h, shape.dil_w),
                                 shape.groups)
        return self._ref

    def accuracy(self, shape, provider, arg_sets, out):
        """rel_l2 of a fwd output against the reference; None if not checked or not computable."""
        if provider == "torch_cudnn" and shape.dtype == "f32":
            if self._ref is None:
                self._ref = out  # F.conv2d in fp32 with TF32 off is the reference itself
            return None
        try:
            return rel_l2(out, self.reference(shape, arg_sets))
        except RuntimeError as e:  # e.g. no memory left for the reference
            print(f"  warning: {shape.name}: no accuracy check: {failure_message(self.torch, e)}",
                  file=sys.stderr)
            self.release()
            return None

    def run_one(self, shape, pass_, provider, arg_sets):
        """One benchmark -> (label, times, cpu_ms, counters). Raises on failure."""
        fn = self.function(shape, pass_, provider)
        # The first call includes cudnn.benchmark's algorithm search: reported on its own.
        out, first_ms = self.timer.first_call(fn, arg_sets[0])
        counters = {"first_call_ms": first_ms}
        label = ""
        if provider == "torch_fft":
            fh = next_fast_size(shape.h + 2 * shape.pad_h)
            fw = next_fast_size(shape.w + 2 * shape.pad_w)
            label = f"torch.fft rfft2/einsum/irfft2 F={fh}x{fw}"
            if shape.dtype != "f32":
                label += " computed in f32"
        else:
            what = {"fwd": "F.conv2d", "dgrad": "grad.conv2d_input",
                    "wgrad": "grad.conv2d_weight"}[pass_]
            label = f"{what} cudnn.benchmark={self.args.cudnn_benchmark} tf32=off"
        err = self.accuracy(shape, provider, arg_sets, out) if (
            self.args.check and pass_ == "fwd") else None
        if err is not None:
            counters["rel_l2"] = err
            if not math.isfinite(err) or err > REL_L2_TOLERANCE[shape.dtype]:
                print(f"  warning: {shape.name}/{pass_}/{provider} rel_l2 {err:.3g} "
                      f"above {REL_L2_TOLERANCE[shape.dtype]:g}", file=sys.stderr)
                label += f" rel_l2={err:.3g}"
        del out
        times, cpu_ms = self.timer.run(fn, arg_sets, self.args.warmup, self.args.iters)
        return label, times, cpu_ms, counters

    def release(self):
        if self.device.type == "cuda":
            self.torch.cuda.empty_cache()

    def end_case(self):
        self._ref = None
        self.release()


def failure_message(torch, exc):
    if isinstance(exc, torch.cuda.OutOfMemoryError):
        return "out of memory: " + str(exc).splitlines()[0][:300]
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300] if text else ''}"


def run_all(torch, device, shapes, args, entries, log=sys.stdout, checkpoint=None):
    """Appends an entry per (shape, pass, provider) to `entries`; calls checkpoint() after
    each (shape, pass) so that a long run keeps what it measured."""
    runner = Runner(torch, device, args)
    family = 0
    for shape in shapes:
        bad = shape.problem()
        for pass_ in args.passes:
            providers = [p for p in args.providers if p != "torch_fft" or pass_ == "fwd"]
            if not providers:
                continue
            names = {p: f"{shape.name}/{pass_}/{p}" for p in providers}
            if bad:
                for p in providers:
                    entries.append(error_entry(names[p], family, f"invalid row: {bad}"))
                    family += 1
                continue
            try:
                arg_sets = runner.inputs(shape, pass_)
            except (RuntimeError, MemoryError) as e:
                msg = failure_message(torch, e)
                for p in providers:
                    entries.append(error_entry(names[p], family, f"inputs: {msg}"))
                    family += 1
                runner.end_case()
                continue
            for p in providers:
                try:
                    label, times, cpu_ms, counters = runner.run_one(shape, pass_, p, arg_sets)
                    entry = benchmark_entry(names[p], family, times, cpu_ms, shape, label,
                                            counters)
                    print(f"{names[p]:<48} {entry['real_time']:10.4f} ms  "
                          f"{entry.get('tflops', 0):8.3f} TFLOP/s"
                          + (f"  rel_l2 {entry['rel_l2']:.2e}" if "rel_l2" in entry else ""),
                          file=log, flush=True)
                except (RuntimeError, MemoryError, NotImplementedError, ValueError) as e:
                    entry = error_entry(names[p], family, failure_message(torch, e))
                    print(f"{names[p]:<48} skipped: {entry['error_message']}", file=log,
                          flush=True)
                    runner.release()
                entries.append(entry)
                family += 1
            del arg_sets
            runner.end_case()
            if checkpoint:
                checkpoint()


def _flag(read):
    """A torch backend flag as set (read back), or "unknown" if it cannot be read."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return bool(read())
    except Exception:  # noqa: BLE001 - an informational read-back only
        return "unknown"


def context(torch, device, args):
    ctx = {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "host_name": socket.gethostname(),
        "executable": "bench/torch_baseline.py",
        "num_cpus": os.cpu_count() or 0,
        "python_version": platform.python_version(),
        "torch_version": torch.__version__,
        "timer": "cuda_events" if device.type == "cuda" else "perf_counter",
        "warmup": args.warmup,
        "iterations": args.iters,
        "statistic": "median",
        "cudnn_benchmark": args.cudnn_benchmark,
        "allow_tf32": {"cudnn": _flag(lambda: torch.backends.cudnn.allow_tf32),
                       "cuda_matmul": _flag(lambda: torch.backends.cuda.matmul.allow_tf32)},
        "rotate_mb": args.rotate_mb,
        "seed": args.seed,
        "shapes": [os.path.basename(p) for p in args.shapes],
    }
    if device.type == "cuda":
        idx = device.index if device.index is not None else torch.cuda.current_device()
        ctx["device_name"] = torch.cuda.get_device_name(idx)
        ctx["device_capability"] = "%d.%d" % torch.cuda.get_device_capability(idx)
        ctx["cuda_version"] = torch.version.cuda or ""
        v = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
        if v:
            # e.g. 91900 -> 9.19.0
            ctx["cudnn_version"] = f"{v // 10000}.{v // 100 % 100}.{v % 100}"
    else:
        ctx["device_name"] = platform.processor() or platform.machine() or "cpu"
    return ctx


# ----------------------------------------------------------------------------- main

def _csv_list(allowed, what):
    def parse(text):
        items = [t.strip() for t in text.split(",") if t.strip()]
        bad = [t for t in items if t not in allowed]
        if bad or not items:
            raise argparse.ArgumentTypeError(
                f"unknown {what} {', '.join(bad) or '(none)'}; choose from {', '.join(allowed)}")
        return items
    return parse


def parse_args(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    default_shapes = os.path.join(here, os.pardir, "data", "shapes", "suite.csv")
    ap = argparse.ArgumentParser(
        prog="torch_baseline.py",
        description="Time PyTorch's conv2d (cuDNN) and a plain torch.fft convolution on the "
                    "fftconv shape suites and write Google Benchmark JSON.",
        epilog="Example: python3 bench/torch_baseline.py --shapes data/shapes/suite.csv "
               "--filter landmark --out torch.json")
    ap.add_argument("--shapes", nargs="+", metavar="FILE", default=[default_shapes],
                    help="shape CSVs (default: data/shapes/suite.csv)")
    ap.add_argument("--filter", metavar="REGEX", help="run only cases whose name matches REGEX")
    ap.add_argument("--passes", type=_csv_list(PASSES, "pass"), default=list(PASSES),
                    help="comma-separated passes from fwd,dgrad,wgrad (default: all three)")
    ap.add_argument("--providers", type=_csv_list(PROVIDERS, "provider"), default=list(PROVIDERS),
                    help="comma-separated providers (default: torch_cudnn,torch_fft)")
    ap.add_argument("--iters", type=int, default=20, help="timed calls per benchmark (default 20)")
    ap.add_argument("--warmup", type=int, default=5,
                    help="untimed calls before timing, after the first call (default 5)")
    ap.add_argument("--out", metavar="FILE.json", required=True,
                    help="output JSON file ('-' for standard output)")
    ap.add_argument("--device", default="cuda", help="torch device: cuda, cuda:N or cpu "
                    "(cpu: for smoke tests only; default cuda)")
    ap.add_argument("--rotate-mb", type=float, default=100.0,
                    help="replicate inputs up to this many MB and rotate them, so that calls do "
                         "not find their inputs in L2 (default 100, twice an H200's L2; 0: off)")
    ap.add_argument("--max-copies", type=int, default=4096, help=argparse.SUPPRESS)
    ap.add_argument("--no-cudnn-benchmark", dest="cudnn_benchmark", action="store_false",
                    help="leave torch.backends.cudnn.benchmark off (heuristic algorithm choice)")
    ap.add_argument("--no-check", dest="check", action="store_false",
                    help="skip the accuracy check against an fp32 conv2d (no rel_l2)")
    ap.add_argument("--seed", type=int, default=1, help="random seed of the inputs (default 1)")
    args = ap.parse_args(argv)
    if args.iters < 1 or args.warmup < 0:
        ap.error("--iters must be >= 1 and --warmup >= 0")
    if args.filter:
        try:
            args.filter = re.compile(args.filter)
        except re.error as e:
            ap.error(f"--filter: invalid regular expression: {e}")
    return args


def write_json(doc, path):
    """Writes the document to path ('-': standard output); a file is replaced atomically."""
    text = json.dumps(doc, indent=2, allow_nan=False) + "\n"
    if path == "-":
        sys.stdout.write(text)
        return
    tmp = path + ".partial"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        shapes = [s for path in args.shapes for s in read_shapes(path)]
    except (OSError, ValueError) as e:
        print(f"torch_baseline: {e}", file=sys.stderr)
        return 2
    if args.filter:
        shapes = [s for s in shapes if args.filter.search(s.name)]
    if not shapes:
        print("torch_baseline: no shape selected", file=sys.stderr)
        return 2
    if args.iters < 20:
        print(f"torch_baseline: note: --iters {args.iters} < 20, below the measuring rule",
              file=sys.stderr)
    try:
        import torch
    except ImportError:
        print("torch_baseline: PyTorch is not installed (import torch failed)", file=sys.stderr)
        return 2
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print("torch_baseline: no CUDA device available (use --device cpu for a smoke test)",
              file=sys.stderr)
        return 2
    if device.type == "cuda" and device.index is not None:
        torch.cuda.set_device(device)
    configure_torch(torch, args.cudnn_benchmark)

    to_file = args.out != "-"
    log = sys.stdout if to_file else sys.stderr  # keep stdout pure JSON with --out -
    doc = {"context": context(torch, device, args), "benchmarks": []}
    doc["context"]["complete"] = False  # true once every benchmark ran
    checkpoint = (lambda: write_json(doc, args.out)) if to_file else None
    status = 0
    try:
        if checkpoint:
            checkpoint()  # fail early on an unwritable path, not after the run
        # SIGTERM (e.g. from `timeout`) ends the run like Ctrl-C, once the current torch call
        # returns (cuDNN's algorithm search cannot be interrupted); checkpoints keep the rest.
        previous = signal.signal(signal.SIGTERM, _interrupt)
        try:
            run_all(torch, device, shapes, args, doc["benchmarks"], log, checkpoint)
            doc["context"]["complete"] = True
        except KeyboardInterrupt:
            print("torch_baseline: interrupted; writing the benchmarks measured so far",
                  file=sys.stderr)
            status = 130
        finally:
            signal.signal(signal.SIGTERM, previous)
        write_json(doc, args.out)
    except OSError as e:
        print(f"torch_baseline: cannot write {args.out}: {e.strerror or e}", file=sys.stderr)
        return 2
    if to_file:
        failed = sum(1 for e in doc["benchmarks"] if e.get("error_occurred"))
        print(f"torch_baseline: wrote {args.out}: {len(doc['benchmarks'])} benchmarks, "
              f"{failed} skipped with an error", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
