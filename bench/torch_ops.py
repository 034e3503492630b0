#!/usr/bin/env python3
"""fftconv from PyTorch against what users run instead, in one process, interleaved.

    python3 bench/torch_ops.py --out torch_ops.json
    python3 bench/torch_ops.py --filter landmark --dtypes f32,f16 --passes fwd,step --out ops.json
    python3 bench/torch_ops.py --filter seed3 --cpp-bench build/apps/fftconv-bench/fftconv-bench \\
        --out ops.json
    python3 bench/torch_ops.py --device cpu --filter seed3_landmark --dtypes f32 --iters 3 \\
        --warmup 1 --cold-iters 1 --host-calls 10 --out smoke.json

Needs PyTorch and the fftconv extension (PYTHONPATH=<build>/python). For every row of the shape
CSVs (--shapes, default data/shapes/suite.csv; --filter REGEX on the name), every dtype of
--dtypes (default f32,f16,bf16; "row": the row's own dtype column) and every pass of --passes
(fwd, dgrad, wgrad, step) it times the providers

  fftconv     fftconv.conv2d (fwd, with bias), torch.ops.fftconv.conv2d_input_grad (dgrad),
              torch.ops.fftconv.conv2d_weight_grad (wgrad), and for step
              y = fftconv.conv2d(x, w, b); y.backward(g) with x, w and b requiring grad (their
              .grad set to None first);
  torch       the same through torch.nn.functional.conv2d, torch.nn.grad.conv2d_input and
              torch.nn.grad.conv2d_weight, cudnn.benchmark = True, TF32 off (cuDNN and matmul);
  torch_tf32  (f32 only) torch with torch.backends.cudnn.allow_tf32 = True around its own calls.

A shape already run in a dtype (e.g. a row `x_f16` after `x` in f16) is not run again.

How it is timed (docs/benchmarking.md):
  real_time   median of --iters rounds (min_ms: the fastest) after --warmup rounds; a round runs
              every provider once, in an order that rotates every round, each call between its
              own pair of CUDA events, enqueued back to back and synchronised after the last
              round. Inputs rotate over copies (at least --rotate-mb in all, one copy per call,
              shared by the providers), so that a call does not find its inputs in L2.
  cold_ms     one call alone: synchronise, zero a 256 MiB buffer (flushes L2), synchronise,
              events around the call (its host launch included); median of --cold-iters.
  host_us     host time of enqueueing one call without synchronising: calls in batches of 25
              (the device drained between batches, untimed; a batch stays inside the launch
              queue, so the host never waits for the device), median over batches of batch
              time / calls; --host-calls calls in all, fewer where they would keep the device
              busy longer than --host-budget-s (the entry's host_calls says how many). Every
              call on the same tensors, as a layer in a network's step loop: fftconv's staged
              paths then replay a CUDA graph, as in the C++ driver's host_us (whose up to 32
              input copies stay within a plan's 64 graph-replay slots). Files written before
              2026-12-05 timed host_us as host_rotating_us is now.
  host_rotating_us  the same with every call on the next input copy: new pointers each call,
              where the staged paths enqueue their stages one by one.
  first_call_ms  the first call of a provider (plan creation, cuDNN's algorithm search).
On --device cpu the times are perf_counter times of synchronous calls and nothing is flushed
(for smoke runs).

Checked once per case, pass and dtype: each provider's result (step: y and the three gradients,
the largest error of the four) against torch's computed on float64 copies of the inputs (--reference
f64, the default; --reference f32: torch's on the fp32 inputs with TF32 off, whose own f32 result
then shows none), as the relative L2 error rel_l2, torch's own included. The fftconv
entry has speedup (torch median / fftconv median), speedup_tf32 (torch_tf32's) and
paired_speedup (median of the per-round ratios).

--cpp-bench PATH runs the C++ driver (fftconv-bench --shapes <the case's dtype variants> --pass
<fwd,dgrad,wgrad as requested> --algo A --no-cudnn --iters 5 --json ...) before each case, on the
same GPU, and puts its host_us (an engine Plan call enqueued from C++: the median over batches of
50 calls) on the fftconv entry as engine_host_us, with host_overhead_us = host_us -
engine_host_us: what Python, the dispatcher, the plan cache and the output allocation add. The
step pass has none. Where the driver fails, context.cpp_bench.notes says why.

Output: Google Benchmark JSON as bench/torch_baseline.py writes it, entries named
"<case>/<pass>/<dtype>/<provider>", times in ms, with the row's shape fields, cpu_time = host_us
in ms, tflops and gbps (step: three passes' worth). A benchmark that cannot run (out of memory,
a case fftconv rejects) is an entry with "error_occurred": true and "error_message". The file
is rewritten after every case, pass and dtype; context.complete says whether the run finished
(Ctrl-C or SIGTERM writes what was measured).
"""

import argparse
import contextlib
import dataclasses
import itertools
import json
import math
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_baseline as tb  # noqa: E402  (the shape CSVs, JSON entries and context)

PASSES = ("fwd", "dgrad", "wgrad", "step")
DTYPES = tuple(tb.DTYPES)  # f32, f16, bf16
ALGOS = ("auto", "fft", "fft_tiled", "fft_fused", "separable", "direct", "cudnn", "implicit_gemm")
FLUSH_BYTES = 256 << 20
HOST_BATCH = 25
# What a provider's call may raise and still leave the run going.
ERRORS = (RuntimeError, MemoryError, NotImplementedError, ValueError, TypeError)


@dataclasses.dataclass
class Provider:
    name: str
    fn: object  # fn(*args) -> a tensor, or for step (y, dx, dw, db)
    label: str
    flags: object = contextlib.nullcontext  # a context manager around its calls


# ----------------------------------------------------------------------------- the calls

def geometry(shape):
    return dict(stride=(shape.stride_h, shape.stride_w), padding=(shape.pad_h, shape.pad_w),
                dilation=(shape.dil_h, shape.dil_w), groups=shape.groups)


def autograd_step(conv):
    def step(x, w, b, g):
        x.grad = w.grad = b.grad = None  # as zero_grad(set_to_none=True): nothing accumulates
        y = conv(x, w, b)
        y.backward(g)
        return y, x.grad, w.grad, b.grad
    return step


def fftconv_fn(torch, fftconv, shape, pass_, algo):
    geo = geometry(shape)
    ops = torch.ops.fftconv
    raw = ([shape.stride_h, shape.stride_w], [shape.pad_h, shape.pad_w],
           [shape.dil_h, shape.dil_w], shape.groups, algo)
    if pass_ == "fwd":
        return lambda x, w, b: fftconv.conv2d(x, w, b, **geo, algo=algo)
    if pass_ == "dgrad":
        return lambda dy, w: ops.conv2d_input_grad.default(dy, w, list(shape.x_shape), *raw)
    if pass_ == "wgrad":
        return lambda x, dy: ops.conv2d_weight_grad.default(dy, x, list(shape.w_shape), *raw)
    return autograd_step(lambda x, w, b: fftconv.conv2d(x, w, b, **geo, algo=algo))


def torch_fn(shape, pass_):
    import torch.nn.functional as F
    from torch.nn import grad
    geo = geometry(shape)
    if pass_ == "fwd":
        return lambda x, w, b: F.conv2d(x, w, b, **geo)
    if pass_ == "dgrad":
        return lambda dy, w: grad.conv2d_input(shape.x_shape, w, dy, **geo)
    if pass_ == "wgrad":
        return lambda x, dy: grad.conv2d_weight(x, shape.w_shape, dy, **geo)
    return autograd_step(lambda x, w, b: F.conv2d(x, w, b, **geo))


@contextlib.contextmanager
def cudnn_tf32(torch):
    """cudnn.allow_tf32 = True inside, restored after (the legacy flag, as configure_torch)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        before = torch.backends.cudnn.allow_tf32
        torch.backends.cudnn.allow_tf32 = True
    try:
        yield
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.backends.cudnn.allow_tf32 = before


def providers_for(torch, fftconv, shape, pass_, algo, cuda):
    what = {"fwd": "fftconv.conv2d", "dgrad": "torch.ops.fftconv.conv2d_input_grad",
            "wgrad": "torch.ops.fftconv.conv2d_weight_grad",
            "step": "fftconv.conv2d + backward"}[pass_]
    ref = {"fwd": "F.conv2d", "dgrad": "grad.conv2d_input", "wgrad": "grad.conv2d_weight",
           "step": "F.conv2d + backward"}[pass_]
    out = [Provider("fftconv", fftconv_fn(torch, fftconv, shape, pass_, algo),
                    f"{what} algo={algo}"),
           Provider("torch", torch_fn(shape, pass_), f"{ref} cudnn.benchmark=True tf32=off")]
    if shape.dtype == "f32":
        out.append(Provider("torch_tf32", torch_fn(shape, pass_),
                            f"{ref} cudnn.benchmark=True cudnn.allow_tf32=True"
                            + ("" if cuda else " (no effect on the CPU)"),
                            lambda: cudnn_tf32(torch)))
    return out


def make_inputs(runner, shape, pass_, cuda):
    """Argument tuples of the pass (fwd x, w, b; dgrad dy, w; wgrad x, dy; step x, w, b, g with
    x, w, b requiring grad): one random set, cloned on the device into rotated copies."""
    parts = {"fwd": (shape.x_shape, shape.w_shape, (shape.k,)),
             "dgrad": (shape.y_shape, shape.w_shape),
             "wgrad": (shape.x_shape, shape.y_shape),
             "step": (shape.x_shape, shape.w_shape, (shape.k,), shape.y_shape)}[pass_]
    dt = tb.torch_dtype(shape.dtype)
    runner.generator.manual_seed(runner.args.seed)
    first = [runner.random(p, dt) for p in parts]
    nbytes = tb.DTYPES[shape.dtype] * sum(math.prod(p) for p in parts)
    copies = runner.copies(nbytes) if cuda else 1
    sets = [first] + [[t.clone() for t in first] for _ in range(copies - 1)]
    # The forward pass as in training: the filter is a trained parameter, given per call (with
    # --frozen it is fixed, as in inference: fftconv then keeps its spectrum in the plan).
    if pass_ == "step":
        grads = (0, 1, 2)  # x, w, b
    elif pass_ == "fwd" and not runner.args.frozen:
        grads = (1, 2)  # w, b
    else:
        grads = ()
    for s in sets:
        for i in grads:
            s[i].requires_grad_()
    return [tuple(s) for s in sets]


def errors_against(out, ref):
    """{"rel_l2": largest error} and, for step, each part's."""
    import torch
    if isinstance(out, torch.Tensor):
        return {"rel_l2": tb.rel_l2(out, ref)}
    parts = {f"rel_l2_{k}": math.inf if o is None else tb.rel_l2(o, r)  # None: no gradient
             for k, o, r in zip(("y", "dx", "dw", "db"), out, ref)}
    return {"rel_l2": max(parts.values()), **parts}


def reference(shape, pass_, args0, torch_out, kind="f64"):
    """The result every provider is checked against: kind "f64", torch's on float64 copies of
    the inputs; "f32", torch's on the fp32 inputs with TF32 off (for f32: torch's own result)."""
    import torch
    if kind == "f32" and shape.dtype == "f32" and torch_out is not None:
        return torch_out
    dtype = torch.float64 if kind == "f64" else torch.float32
    copies = [t.detach().to(dtype).requires_grad_(t.requires_grad) for t in args0]
    out = torch_fn(shape, pass_)(*copies)
    return out if pass_ != "step" else tuple(t.detach() for t in out)


# ----------------------------------------------------------------------------- timing

class Clock:
    """CUDA events (or perf_counter on the CPU) around calls; every call takes the next input
    copy, whichever provider makes it."""

    def __init__(self, torch, device):
        self.torch = torch
        self.cuda = device.type == "cuda"
        self.flush = (torch.empty(FLUSH_BYTES, dtype=torch.uint8, device=device)
                      if self.cuda else None)
        self.arg_sets = [()]
        self.counter = itertools.count()

    def use(self, arg_sets):
        self.arg_sets = arg_sets
        self.counter = itertools.count()

    def args(self):
        return self.arg_sets[next(self.counter) % len(self.arg_sets)]

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize()

    def events(self):
        ev = self.torch.cuda.Event
        return ev(enable_timing=True), ev(enable_timing=True)

    def rounds(self, providers, warmup, iters, failed):
        """Per-call ms of each provider over `iters` rounds after `warmup` ones; a provider that
        raises is put in `failed` (name -> message) and left out of the later rounds."""
        marks = {p.name: [] for p in providers}
        times = {p.name: [] for p in providers}
        for r in range(warmup + iters):
            k = r % len(providers)
            for p in providers[k:] + providers[:k]:
                if p.name in failed:
                    continue
                try:
                    with p.flags():
                        args = self.args()
                        if r < warmup:
                            p.fn(*args)
                        elif self.cuda:
                            start, stop = self.events()
                            start.record()
                            p.fn(*args)
                            stop.record()
                            marks[p.name].append((start, stop))
                        else:
                            t0 = time.perf_counter()
                            p.fn(*args)
                            times[p.name].append((time.perf_counter() - t0) * 1e3)
                except ERRORS as e:
                    failed[p.name] = f"timed rounds: {tb.failure_message(self.torch, e)}"
        self.sync()
        for name, pairs in marks.items():
            times[name] += [start.elapsed_time(stop) for start, stop in pairs]
        return times

    def cold(self, providers, runs, failed):
        """Median ms of one call alone after an L2 flush, per provider (rotating order)."""
        times = {p.name: [] for p in providers}
        for i in range(runs):
            k = i % len(providers)
            for p in providers[k:] + providers[:k]:
                if p.name in failed:
                    continue
                try:
                    with p.flags():
                        args = self.args()
                        if self.cuda:
                            start, stop = self.events()
                            self.sync()
                            self.flush.zero_()
                            self.sync()
                            start.record()
                            p.fn(*args)
                            stop.record()
                            stop.synchronize()
                            times[p.name].append(start.elapsed_time(stop))
                        else:
                            t0 = time.perf_counter()
                            p.fn(*args)
                            times[p.name].append((time.perf_counter() - t0) * 1e3)
                except ERRORS as e:
                    failed[p.name] = f"cold calls: {tb.failure_message(self.torch, e)}"
        return {k: statistics.median(v) for k, v in times.items() if v}

    def host_us(self, p, calls, budget_s, median_ms, rotate=False):
        """(median over batches of host us per enqueued call, calls made): every call on the
        first input copy, as a layer of a network's step loop (and the C++ driver) calls with
        the same tensors again; with `rotate`, every call on the next copy, new pointers each
        time."""
        if median_ms > 0:  # keep the device work these calls enqueue within the budget
            calls = max(1, min(calls, int(budget_s * 1e3 / median_ms)))
        batch = min(HOST_BATCH, calls)
        batches = calls // batch
        per_call = []
        with p.flags():
            for _ in range(batches):
                self.sync()
                t0 = time.perf_counter()
                for _ in range(batch):
                    p.fn(*(self.args() if rotate else self.arg_sets[0]))
                per_call.append((time.perf_counter() - t0) * 1e6 / batch)
            self.sync()
        return statistics.median(per_call), batches * batch


# ----------------------------------------------------------------------------- the C++ driver

def cpp_device_env(device):
    """The environment for the driver: the same GPU as this process's --device cuda:N."""
    env = dict(os.environ)
    if device.type == "cuda" and device.index is not None:
        visible = [v for v in env.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
        env["CUDA_VISIBLE_DEVICES"] = (visible[device.index] if device.index < len(visible)
                                       else str(device.index))
    return env


def engine_host_times(args, device, variants, passes):
    """Runs fftconv-bench on the case's dtype variants: ({(dtype, pass): host_us}, why not all
    went well or None, whether later cases would fail alike)."""
    header = ",".join(("name",) + tb._INT_COLUMNS + ("dtype",))
    with tempfile.TemporaryDirectory(prefix="torch_ops_") as tmp:
        rows_csv, out_json = os.path.join(tmp, "rows.csv"), os.path.join(tmp, "rows.json")
        with open(rows_csv, "w", encoding="utf-8") as f:
            f.write(header + "\n")
            for v in variants:
                sizes = [str(getattr(v, c)) for c in tb._INT_COLUMNS]
                f.write(",".join([f"v_{v.dtype}"] + sizes + [v.dtype]) + "\n")
        cmd = [args.cpp_bench, "--shapes", rows_csv, "--pass", ",".join(passes), "--algo",
               args.algo, "--no-cudnn", "--iters", "5", "--warmup", str(args.warmup),
               "--json", out_json]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, env=cpp_device_env(device),
                                  timeout=args.cpp_timeout)
        except OSError as e:
            return {}, f"cannot run {args.cpp_bench}: {e}", True
        except subprocess.TimeoutExpired:
            return {}, f"fftconv-bench ran past {args.cpp_timeout:g} s", False
        if proc.returncode == 2 or not os.path.exists(out_json):
            tail = (proc.stderr or proc.stdout).strip().splitlines()
            why = f"fftconv-bench exit {proc.returncode}: {tail[0][:300] if tail else ''}"
            return {}, why, proc.returncode == 2  # 2: a bad command line or no CUDA GPU
        try:
            with open(out_json, encoding="utf-8") as f:
                rows = json.load(f).get("rows", [])
        except (OSError, ValueError) as e:
            return {}, f"fftconv-bench's JSON: {e}", False
    found, missing = {}, []
    for row in rows:
        dtype, pass_ = row.get("name", "")[2:], row.get("pass")
        if row.get("host_us") is not None:
            found[(dtype, pass_)] = row["host_us"]
        else:
            missing.append(f"{dtype}/{pass_}: no host_us ({row.get('status', '')[:200]})")
    why = "; ".join(([f"fftconv-bench exit {proc.returncode}"] if proc.returncode else []) +
                    missing)
    return found, why or None, False


# ----------------------------------------------------------------------------- a run

def shape_fields(shape):
    fields = dataclasses.asdict(shape)
    fields.pop("name")
    return fields


# The printed table: (heading, provider, entry key, format) after case, pass and dtype.
COLUMNS = [("fftconv", "fftconv", "real_time", "9.4f"), ("torch", "torch", "real_time", "9.4f"),
           ("tf32", "torch_tf32", "real_time", "9.4f"), ("speedup", "fftconv", "speedup", "7.2f"),
           ("cold:fftconv", "fftconv", "cold_ms", "12.4f"), ("torch", "torch", "cold_ms", "8.4f"),
           ("tf32", "torch_tf32", "cold_ms", "8.4f"),
           ("host_us:fftconv", "fftconv", "host_us", "15.1f"),
           ("torch", "torch", "host_us", "7.1f"), ("tf32", "torch_tf32", "host_us", "7.1f"),
           ("rotating", "fftconv", "host_rotating_us", "8.1f"),
           ("rel_l2", "fftconv", "rel_l2", "8.2e")]
CPP_COLUMNS = [("engine_us", "fftconv", "engine_host_us", "9.1f"),
               ("overhead_us", "fftconv", "host_overhead_us", "11.1f")]


def table_header(cpp):
    cols = COLUMNS + (CPP_COLUMNS if cpp else [])
    return f"{'case':<28} {'pass':<5} {'dtype':<5} " + " ".join(
        f"{head:>{fmt.split('.')[0]}}" for head, _, _, fmt in cols) + "   (ms, host in us)"


def print_line(log, case, pass_, dtype, res, cpp):
    """One line of the table ("-": not measured), then the errors, by message."""
    cells = []
    for _, provider, key, fmt in COLUMNS + (CPP_COLUMNS if cpp else []):
        e = res.get(provider, {})
        v = None if e.get("error_occurred") else e.get(key)
        cells.append(f"{'-':>{fmt.split('.')[0]}}" if v is None else format(v, fmt))
    print(f"{case:<28} {pass_:<5} {dtype:<5} " + " ".join(cells), file=log, flush=True)
    failed = {}
    for p, e in res.items():
        if e.get("error_occurred"):
            failed.setdefault(e["error_message"], []).append(p)
    for message, names in failed.items():
        print(f"  {', '.join(names)}: {message}", file=log, flush=True)


def measure(torch, clock, runner, shape, pass_, providers, args):
    """What was measured of each provider on one case, pass and dtype: {name: fields} (times,
    cold_ms, first_call_ms, rel_l2..., host_us, host_calls), or {name: error message}."""
    try:
        arg_sets = make_inputs(runner, shape, pass_, clock.cuda)
    except ERRORS as e:
        return {p.name: f"inputs: {tb.failure_message(torch, e)}" for p in providers}
    clock.use(arg_sets)
    failed, first, outs = {}, {}, {}
    for p in providers:  # first calls on copy 0: plans, cuDNN's search, the results to check
        try:
            with p.flags():
                clock.sync()
                t0 = time.perf_counter()
                outs[p.name] = p.fn(*arg_sets[0])
                clock.sync()
                first[p.name] = (time.perf_counter() - t0) * 1e3
        except ERRORS as e:
            failed[p.name] = tb.failure_message(torch, e)
    errs = {}
    try:
        ref = reference(shape, pass_, arg_sets[0], outs.get("torch"), args.reference)
        for name, out in outs.items():
            if out is not ref:
                errs[name] = errors_against(out, ref)
                err, tol = errs[name]["rel_l2"], tb.REL_L2_TOLERANCE[shape.dtype]
                if name != "torch_tf32" and not err <= tol:  # TF32 is not held to fp32's bound
                    print(f"  warning: {shape.name}/{pass_}/{shape.dtype}/{name}: rel_l2 "
                          f"{err:.3g} above {tol:g}", file=sys.stderr)
    except ERRORS as e:
        print(f"  warning: {shape.name}/{pass_}/{shape.dtype}: no accuracy check: "
              f"{tb.failure_message(torch, e)}", file=sys.stderr)
    ref = outs = None
    live = [p for p in providers if p.name not in failed]
    times = clock.rounds(live, args.warmup, args.iters, failed) if live else {}
    cold = clock.cold([p for p in live if p.name not in failed], args.cold_iters, failed)
    result = {}
    for p in providers:
        if p.name in failed:
            result[p.name] = failed[p.name]
            continue
        fields = {"times": times[p.name], "cold_ms": cold.get(p.name),
                  "first_call_ms": first[p.name], **errs.get(p.name, {})}
        if args.host_calls > 0:
            try:
                median_ms = statistics.median(times[p.name])
                fields["host_us"], fields["host_calls"] = clock.host_us(
                    p, args.host_calls, args.host_budget_s, median_ms)
                fields["host_rotating_us"], _ = clock.host_us(
                    p, args.host_calls, args.host_budget_s, median_ms, rotate=True)
            except ERRORS as e:
                print(f"  warning: {shape.name}/{pass_}/{shape.dtype}/{p.name}: host time "
                      f"{'with new tensors ' if 'host_us' in fields else ''}not measured: "
                      f"{tb.failure_message(torch, e)}", file=sys.stderr)
        result[p.name] = fields
    return result


def make_entries(res, providers, case, shape, pass_, family, engine_us):
    """The JSON entries of one case, pass and dtype, by provider."""
    labels = {p.name: p.label for p in providers}
    out = {}
    for name, data in res.items():
        full = f"{case}/{pass_}/{shape.dtype}/{name}"
        if isinstance(data, str):
            e = tb.error_entry(full, next(family), data)
        else:
            counters = {k: v for k, v in data.items() if k != "times"}
            host = data.get("host_us")
            e = tb.benchmark_entry(full, next(family), data["times"],
                                   host / 1e3 if host is not None else 0.0, shape, labels[name],
                                   counters)
            if pass_ == "step":  # forward, backward data and backward filter
                for k in ("tflops", "gbps"):
                    if k in e:
                        e[k] *= 3
        e.update({"case": case, "pass": pass_, "provider": name}, **shape_fields(shape))
        out[name] = e
    f = res.get("fftconv")
    if isinstance(f, dict) and out["fftconv"]["real_time"] > 0:
        fe = out["fftconv"]
        for base, key in (("torch", "speedup"), ("torch_tf32", "speedup_tf32")):
            b = res.get(base)
            if isinstance(b, dict):
                fe[key] = out[base]["real_time"] / fe["real_time"]
        t = res.get("torch")
        if isinstance(t, dict) and len(t["times"]) == len(f["times"]) and min(f["times"]) > 0:
            fe["paired_speedup"] = statistics.median(
                a / b for a, b in zip(t["times"], f["times"]))
        if engine_us is not None and fe.get("host_us") is not None:
            fe["engine_host_us"] = engine_us
            fe["host_overhead_us"] = fe["host_us"] - engine_us
    return out


def run_all(torch, fftconv, device, shapes, args, entries, log, checkpoint, notes):
    """Appends the entries of every case, pass, dtype and provider to `entries`, calling
    checkpoint() after each case, pass and dtype; `notes` gets what --cpp-bench could not do."""
    runner = tb.Runner(torch, device, args)  # its seeded generator and input-copy rule
    clock = Clock(torch, device)
    cache = fftconv.backends.plan_cache[device]
    family = itertools.count()
    seen = {}
    cpp = args.cpp_bench
    cpp_passes = [p for p in args.passes if p != "step"]
    print(table_header(cpp), file=log, flush=True)
    for shape in shapes:
        variants = []
        for dt in ([shape.dtype] if args.dtypes == ["row"] else args.dtypes):
            v = dataclasses.replace(shape, dtype=dt)
            if v.descriptor() in seen:
                print(f"{shape.name} {dt}: the shape of {seen[v.descriptor()]} {dt}, not run "
                      "again", file=log, flush=True)
            else:
                seen[v.descriptor()] = shape.name
                variants.append(v)
        engine = {}
        if cpp and cpp_passes and variants and not shape.problem():
            engine, why, fatal = engine_host_times(args, device, variants, cpp_passes)
            if why:
                notes.append(f"{shape.name}: {why}")
                print(f"  --cpp-bench {shape.name}: {why}", file=sys.stderr)
            if fatal:
                cpp = None
                notes.append("fftconv-bench not run for the later cases")
        for v in variants:
            for pass_ in args.passes:
                bad = v.problem()
                providers = providers_for(torch, fftconv, v, pass_, args.algo, clock.cuda)
                if bad:
                    res = {p.name: f"invalid row: {bad}" for p in providers}
                else:
                    res = measure(torch, clock, runner, v, pass_, providers, args)
                out = make_entries(res, providers, shape.name, v, pass_, family,
                                   engine.get((v.dtype, pass_)))
                entries.extend(out.values())
                print_line(log, shape.name, pass_, v.dtype, out, bool(args.cpp_bench))
                clock.use([()])  # drop the inputs
                cache.clear()
                runner.release()
                checkpoint()


# ----------------------------------------------------------------------------- main

def parse_args(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    default_shapes = os.path.normpath(os.path.join(here, os.pardir, "data", "shapes", "suite.csv"))
    ap = argparse.ArgumentParser(
        prog="torch_ops.py",
        description="Time fftconv's PyTorch operators against PyTorch's conv2d (cuDNN, strict "
                    "fp32 and TF32) on the shape suites, interleaved in one process, and write "
                    "Google Benchmark JSON.",
        epilog="Example: python3 bench/torch_ops.py --filter landmark --out torch_ops.json")
    ap.add_argument("--shapes", nargs="+", metavar="FILE", default=[default_shapes],
                    help="shape CSVs (default: data/shapes/suite.csv)")
    ap.add_argument("--filter", metavar="REGEX", help="run only cases whose name matches REGEX")
    ap.add_argument("--dtypes", type=tb._csv_list(DTYPES + ("row",), "dtype"),
                    default=list(DTYPES), help="comma-separated dtypes from f32,f16,bf16 "
                    "(default: all three), or row (each row's own dtype column)")
    ap.add_argument("--passes", type=tb._csv_list(PASSES, "pass"), default=list(PASSES),
                    help="comma-separated passes from fwd,dgrad,wgrad,step (default: all)")
    ap.add_argument("--algo", choices=ALGOS, default="auto",
                    help="fftconv's algo argument (default auto)")
    ap.add_argument("--iters", type=int, default=30, help="timed rounds (default 30)")
    ap.add_argument("--warmup", type=int, default=5, help="untimed rounds first (default 5)")
    ap.add_argument("--cold-iters", type=int, default=5,
                    help="cold calls per provider, after an L2 flush (default 5)")
    ap.add_argument("--host-calls", type=int, default=1000,
                    help="calls timed on the host per provider (default 1000; 0: no host_us)")
    ap.add_argument("--host-budget-s", type=float, default=1.0,
                    help="fewer host calls where they would enqueue more device work than this "
                         "(seconds per provider and pass; default 1)")
    ap.add_argument("--out", metavar="FILE.json", required=True,
                    help="output JSON file ('-' for standard output)")
    ap.add_argument("--device", default="cuda", help="torch device: cuda, cuda:N or cpu "
                    "(cpu: for smoke runs only; default cuda)")
    ap.add_argument("--rotate-mb", type=float, default=100.0,
                    help="rotate input copies of at least this many MB in all, so that calls do "
                         "not find their inputs in L2 (default 100; 0: off; not on the CPU)")
    ap.add_argument("--max-copies", type=int, default=4096, help=argparse.SUPPRESS)
    ap.add_argument("--cpp-bench", metavar="PATH",
                    help="the C++ driver fftconv-bench: its engine host_us next to ours")
    ap.add_argument("--cpp-timeout", type=float, default=600, help=argparse.SUPPRESS)
    ap.add_argument("--frozen", action="store_true",
                    help="fwd with a fixed filter (requires_grad False: fftconv keeps its "
                         "spectrum) instead of a trained one")
    ap.add_argument("--seed", type=int, default=1, help="random seed of the inputs (default 1)")
    ap.add_argument("--cudnn-search", choices=("auto", "find", "heuristic", "graph"),
                    default="auto",
                    help="fftconv.backends.cudnn_search: how the engine's own cuDNN path finds "
                         "its algorithm (default auto: the faster of find and graph)")
    ap.add_argument("--own-fft", action="store_true",
                    help="fftconv.backends.own_fft: the engine's FFT plans transform their planes "
                         "in the own one-pass kernels instead of cuFFT")
    ap.add_argument("--reference", choices=("f64", "f32"), default="f64",
                    help="what rel_l2 is against: torch on float64 copies of the inputs "
                         "(default), or torch in fp32 with TF32 off (faster on large rows; "
                         "torch's own f32 result then shows no error)")
    args = ap.parse_args(argv)
    if "row" in args.dtypes and len(args.dtypes) > 1:
        ap.error("--dtypes row cannot be combined with other dtypes")
    if args.iters < 1 or args.warmup < 0 or args.cold_iters < 1 or args.host_calls < 0:
        ap.error("--iters and --cold-iters must be >= 1, --warmup and --host-calls >= 0")
    if args.filter:
        try:
            args.filter = re.compile(args.filter)
        except re.error as e:
            ap.error(f"--filter: invalid regular expression: {e}")
    args.cudnn_benchmark = True  # read by torch_baseline's context()
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        shapes = [s for path in args.shapes for s in tb.read_shapes(path)]
    except (OSError, ValueError) as e:
        print(f"torch_ops: {e}", file=sys.stderr)
        return 2
    if args.filter:
        shapes = [s for s in shapes if args.filter.search(s.name)]
    if not shapes:
        print("torch_ops: no shape selected", file=sys.stderr)
        return 2
    if args.iters < 20:
        print(f"torch_ops: note: --iters {args.iters} < 20, below the measuring rule",
              file=sys.stderr)
    try:
        import torch
    except ImportError:
        print("torch_ops: PyTorch is not installed (import torch failed)", file=sys.stderr)
        return 2
    try:
        import fftconv
    except ImportError as e:
        print(f"torch_ops: the fftconv extension is not importable ({e}); build it and put "
              "<build>/python on PYTHONPATH", file=sys.stderr)
        return 2
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print("torch_ops: no CUDA device available (use --device cpu for a smoke run)",
              file=sys.stderr)
        return 2
    if device.type == "cuda" and device.index is not None:
        torch.cuda.set_device(device)
    tb.configure_torch(torch, True)
    fftconv.backends.cudnn_search = args.cudnn_search
    fftconv.backends.own_fft = args.own_fft

    to_file = args.out != "-"
    log = sys.stdout if to_file else sys.stderr  # keep stdout pure JSON with --out -
    ctx = tb.context(torch, device, args)
    ctx.update(executable="bench/torch_ops.py", interleaved=True, cold_iters=args.cold_iters,
               cold_flush_bytes=FLUSH_BYTES if device.type == "cuda" else 0,
               host_calls=args.host_calls, host_batch=HOST_BATCH, host_budget_s=args.host_budget_s,
               passes=args.passes, dtypes=args.dtypes, algo=args.algo, reference=args.reference,
               cudnn_search=args.cudnn_search, own_fft=args.own_fft, fftconv_version=getattr(fftconv, "__version__", ""),
               fftconv_build=dict(getattr(fftconv.backends, "build_info", {})))
    notes = []
    if args.cpp_bench:
        ctx["cpp_bench"] = {"path": os.path.basename(args.cpp_bench), "notes": notes}
    doc = {"context": ctx, "benchmarks": []}
    ctx["complete"] = False  # true once every benchmark ran
    checkpoint = (lambda: tb.write_json(doc, args.out)) if to_file else (lambda: None)
    status = 0
    try:
        checkpoint()  # fail early on an unwritable path, not after the run
        # SIGTERM (e.g. from `timeout`) ends the run like Ctrl-C; the checkpoints keep the rest.
        previous = signal.signal(signal.SIGTERM, tb._interrupt)
        try:
            run_all(torch, fftconv, device, shapes, args, doc["benchmarks"], log, checkpoint,
                    notes)
            ctx["complete"] = True
        except KeyboardInterrupt:
            print("torch_ops: interrupted; writing the benchmarks measured so far",
                  file=sys.stderr)
            status = 130
        finally:
            signal.signal(signal.SIGTERM, previous)
        tb.write_json(doc, args.out)
    except OSError as e:
        print(f"torch_ops: cannot write {args.out}: {e.strerror or e}", file=sys.stderr)
        return 2
    if to_file:
        failed = sum(1 for e in doc["benchmarks"] if e.get("error_occurred"))
        print(f"torch_ops: wrote {args.out}: {len(doc['benchmarks'])} benchmarks, {failed} "
              "with an error", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
