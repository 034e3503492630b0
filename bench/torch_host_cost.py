#!/usr/bin/env python3
"""Where the host time of one fftconv forward call goes, from PyTorch, on the GPU.

    PYTHONPATH=build/python python3 bench/torch_host_cost.py --library build/lib/libfftconv.so \\
        --filter 'seed3_landmark|landmark_batch64|replknet' --out host-cost.json

For each suite row (fp32 forward, Auto), the host time per enqueued call of, in one process and
interleaved round by round:

  engine_c_api      fftconv_forward of libfftconv.so through ctypes, on torch's tensors and
                    stream, the pointers converted once before the rounds
  c_api_null        the same ctypes call with a null plan (the engine returns at its first
                    check): what ctypes and the Python call add to engine_c_api
  engine_cpp        engine_c_api - c_api_null, the engine's own call as C++ makes it; the
                    overheads (overhead_us) are relative to it
  op_frozen         torch.ops.fftconv.conv2d with a fixed filter (requires_grad False: the plan
                    keeps its spectrum)
  op_no_grad        torch.ops.fftconv.conv2d under no_grad, the filter given per call
  direct_no_grad    fftconv._C._conv2d (the dispatcher without torch.ops' argument parsing),
                    under no_grad
  conv2d_no_grad    fftconv.conv2d under no_grad
  conv2d_grad       fftconv.conv2d with the filter requiring grad (an autograd node per call)
  torch_no_grad     F.conv2d under no_grad (cudnn.benchmark on, TF32 off)
  torch_grad        F.conv2d with the filter requiring grad

A sample is a batch of --batch calls without synchronising, divided by the batch (the device is
drained between batches, untimed, so the launch queue never fills); the median of --rounds
samples is reported, in microseconds.
"""
import argparse
import csv
import ctypes
import json
import re
import statistics
import sys
import time
from pathlib import Path

DESC_FIELDS = ("n", "c", "h", "w", "k", "r", "s", "pad_h", "pad_w", "stride_h", "stride_w",
               "dil_h", "dil_w", "groups")


class Desc(ctypes.Structure):
    _fields_ = [(f, ctypes.c_int64) for f in DESC_FIELDS] + [("dtype", ctypes.c_int),
                                                            ("border", ctypes.c_int)]


class Options(ctypes.Structure):
    _fields_ = [("algo", ctypes.c_int), ("workspace_limit", ctypes.c_size_t),
                ("allow_tf32", ctypes.c_int), ("pass_", ctypes.c_int), ("dw_fp32", ctypes.c_int),
                ("backend", ctypes.c_int), ("tuning", ctypes.c_int),
                ("tuning_cache", ctypes.c_char_p), ("fft_h", ctypes.c_int64),
                ("fft_w", ctypes.c_int64), ("gemm_kernel", ctypes.c_char_p),
                ("cudnn_algo", ctypes.c_char_p), ("cudnn_search", ctypes.c_int),
                ("check_pointers", ctypes.c_int), ("kept_separable", ctypes.c_int),
                ("graph_replay", ctypes.c_int),
                ("fft_callbacks", ctypes.c_int), ("own_fft", ctypes.c_int)]


def rows(path, pattern):
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if row["dtype"] == "f32" and re.search(pattern, row["name"]):
                yield row["name"], {k: int(row[k]) for k in DESC_FIELDS}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    here = Path(__file__).resolve().parents[1]
    ap.add_argument("--shapes", default=str(here / "data" / "shapes" / "suite.csv"))
    ap.add_argument("--filter", default=".", help="regex on the row names")
    ap.add_argument("--library", required=True, help="path of libfftconv.so")
    ap.add_argument("--batch", type=int, default=25)
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--out", help="JSON file")
    args = ap.parse_args(argv)

    import torch
    import torch.nn.functional as F
    import fftconv
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    lib = ctypes.CDLL(args.library)
    lib.fftconv_conv_desc_default.restype = Desc
    lib.fftconv_options_default.restype = Options
    lib.fftconv_plan_describe.restype = ctypes.c_char_p
    lib.fftconv_last_error_message.restype = ctypes.c_char_p
    lib.fftconv_forward.argtypes = [ctypes.c_void_p] * 6 + [ctypes.c_size_t, ctypes.c_void_p]
    dev = torch.device("cuda")
    results = []
    for name, d in rows(args.shapes, args.filter):
        x = torch.randn(d["n"], d["c"], d["h"], d["w"], device=dev)
        w = torch.randn(d["k"], d["c"] // d["groups"], d["r"], d["s"], device=dev)
        wg = w.clone().requires_grad_()
        geo = dict(stride=(d["stride_h"], d["stride_w"]), padding=(d["pad_h"], d["pad_w"]),
                   dilation=(d["dil_h"], d["dil_w"]), groups=d["groups"])
        lists = [list(geo["stride"]), list(geo["padding"]), list(geo["dilation"]), d["groups"]]
        desc = lib.fftconv_conv_desc_default()
        for k, v in d.items():
            setattr(desc, k, v)
        opts = lib.fftconv_options_default()
        opts.check_pointers = 0  # as the extension builds its plans (torch checked the tensors)
        plan = ctypes.c_void_p()
        if lib.fftconv_plan_create(ctypes.byref(plan), ctypes.byref(desc), ctypes.byref(opts)):
            print(name, "plan failed:", lib.fftconv_last_error_message().decode())
            continue
        wsb = ctypes.c_size_t()
        lib.fftconv_plan_workspace_size(plan, ctypes.byref(wsb))
        ws = torch.empty(max(wsb.value, 1), dtype=torch.uint8, device=dev)
        y = fftconv.conv2d(x, w, **geo)
        stream = torch.cuda.current_stream().cuda_stream
        op = torch.ops.fftconv.conv2d.default
        direct = fftconv.functional._conv2d_direct

        ptrs = [ctypes.c_void_p(t.data_ptr()) for t in (x, w, y, ws)]
        fwd = lib.fftconv_forward
        pv, sv, nb = plan, ctypes.c_void_p(stream), wsb.value

        def engine():
            fwd(pv, ptrs[0], ptrs[1], None, ptrs[2], ptrs[3], nb, sv)

        def null_call():
            fwd(None, ptrs[0], ptrs[1], None, ptrs[2], ptrs[3], nb, sv)

        def no_grad(f):
            def g():
                with torch.no_grad():
                    f()
            return g

        calls = {
            "engine_c_api": engine,
            "c_api_null": null_call,
            "op_frozen": lambda: op(x, w, None, *lists, "auto"),
            "op_no_grad": no_grad(lambda: op(x, wg, None, *lists, "auto")),
            "direct_no_grad": no_grad(lambda: direct(x, wg, None, *lists, "auto", "zeros")),
            "conv2d_no_grad": no_grad(lambda: fftconv.conv2d(x, wg, **geo)),
            "conv2d_grad": lambda: fftconv.conv2d(x, wg, **geo),
            "torch_no_grad": no_grad(lambda: F.conv2d(x, wg, **geo)),
            "torch_grad": lambda: F.conv2d(x, wg, **geo),
        }
        samples = {k: [] for k in calls}
        for r in range(args.rounds + 3):
            order = list(calls) if r % 2 == 0 else list(reversed(calls))
            for k in order:
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                for _ in range(args.batch):
                    calls[k]()
                t1 = time.perf_counter()
                if r >= 3:
                    samples[k].append((t1 - t0) / args.batch * 1e6)
        torch.cuda.synchronize()
        med = {k: statistics.median(v) for k, v in samples.items()}
        med["engine_cpp"] = med["engine_c_api"] - med["c_api_null"]
        entry = {"name": name, "desc": d, "host_us": med,
                 "overhead_us": {k: v - med["engine_cpp"] for k, v in med.items()
                                 if k not in ("c_api_null", "engine_c_api", "engine_cpp")},
                 "plan": lib.fftconv_plan_describe(plan).decode()}
        results.append(entry)
        lib.fftconv_plan_destroy(plan)
        print(f"{name:28s} " + " ".join(f"{k}={v:6.1f}" for k, v in med.items()), flush=True)
        print(f"{'':28s} above engine_cpp: "
              + " ".join(f"{k}={v:5.1f}" for k, v in entry["overhead_us"].items()), flush=True)
    out = {"context": {"torch": torch.__version__, "device": torch.cuda.get_device_name(),
                       "batch": args.batch, "rounds": args.rounds, "statistic": "median",
                       "unit": "us per call"}, "rows": results}
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
