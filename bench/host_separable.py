#!/usr/bin/env python3
"""The CPU backend's kept filters: the separable path against the FFT with a kept spectrum.

    PYTHONPATH=build/python python3 bench/host_separable.py [--threads N] [--rounds 7] [--out F.json]

For each row, two fixed filters of the same shape go through fftconv.conv2d on CPU tensors with
requires_grad False (the extension keeps a frozen filter in a plan of its own, after seeing it
twice): a Gaussian, whose planes are rank 1 (the separable path wherever host_separable_pays
says it is cheaper: on every row here), and a random filter of the same size (full rank: the FFT
with the kept spectrum, whose cost does not depend on the values). Both are timed in one process,
alternating round by round; the median of --rounds calls each (time.perf_counter around a
synchronous call). Each result is checked against F.conv2d in float64 (rel_l2; the Gaussian's as its two exact
1-D passes, the random filter's where the direct convolution fits in memory). The columns are
named by the filter: describe() is not reachable from Python, and the C++ tests check which path
each kind of filter takes (tests/cpu/test_host_separable.cpp).
"""
import argparse
import json
import statistics
import sys
import time

ROWS = [  # name, n, c, h, w, kernel, groups, padding
    ("landmark_batch64", 64, 1, 96, 96, 45, 1, 22),
    ("landmark_heatmaps_dw68", 1, 68, 96, 96, 45, 68, 22),
    ("photo_2048_rgb_45", 1, 3, 2092, 2092, 45, 3, 0),
    ("photo_2048_rgb_15", 1, 3, 2062, 2062, 15, 3, 0),
    ("depthwise_56_r31", 1, 64, 56, 56, 31, 64, 15),
    ("plane_512_rgb_45", 1, 3, 512, 512, 45, 3, 22),
]


def gaussian(torch, size, sigma):
    t = torch.arange(size, dtype=torch.float64) - (size - 1) / 2
    g = torch.exp(-t * t / (2 * sigma * sigma))
    g /= g.sum()
    return (g[:, None] * g[None, :]).float()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=0,
                    help="torch and FFTCONV_CPU_THREADS threads (default: all cores)")
    ap.add_argument("--rounds", type=int, default=7, help="timed calls per filter (default 7)")
    ap.add_argument("--filter", default="", help="only rows whose name contains this")
    ap.add_argument("--out", help="JSON file for the results")
    args = ap.parse_args(argv)
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")
    import os
    if args.threads:
        os.environ["FFTCONV_CPU_THREADS"] = str(args.threads)
    import torch
    import torch.nn.functional as F
    import fftconv
    if args.threads:
        torch.set_num_threads(args.threads)
    results = []
    for name, n, c, h, w, k, groups, pad in ROWS:
        if args.filter not in name:
            continue
        gen = torch.Generator().manual_seed(1)
        x = torch.rand(n, c, h, w, generator=gen)
        planes = c if groups > 1 else 1
        filters = {
            "gaussian": gaussian(torch, k, (k - 1) / 6).expand(planes, 1, k, k).contiguous(),
            "random": torch.rand(planes, 1, k, k, generator=gen),
        }
        times = {p: [] for p in filters}
        errors = {}
        g1 = gaussian(torch, k, (k - 1) / 6)[k // 2].double()  # the Gaussian's 1-D factor, up to scale
        g1 = g1 / g1.sum()
        for p, wt in filters.items():  # two calls keep the filter, then warm up
            for _ in range(3):
                y = fftconv.conv2d(x, wt, padding=pad, groups=groups)
            if p == "gaussian":
                # The dense Gaussian in float64 as its two exact 1-D passes (an im2col of the
                # photo rows would not fit in memory).
                xd = x.double()
                ref = F.conv2d(xd, g1.view(1, 1, k, 1).expand(planes, 1, k, 1),
                               padding=(pad, 0), groups=groups)
                ref = F.conv2d(ref, g1.view(1, 1, 1, k).expand(planes, 1, 1, k),
                               padding=(0, pad), groups=groups)
            elif x.numel() * k * k <= 2e9:
                ref = F.conv2d(x.double(), wt.double(), padding=pad, groups=groups)
            else:
                ref = None  # too large for the float64 direct convolution
            errors[p] = None if ref is None else ((y.double() - ref).norm() / ref.norm()).item()
        for _ in range(args.rounds):
            for p, wt in filters.items():
                t0 = time.perf_counter()
                fftconv.conv2d(x, wt, padding=pad, groups=groups)
                times[p].append((time.perf_counter() - t0) * 1e3)
        row = {"name": name, "n": n, "c": c, "h": h, "w": w, "kernel": k, "groups": groups,
               "padding": pad, "threads": torch.get_num_threads()}
        for p in filters:
            row[f"{p}_ms"] = statistics.median(times[p])
            row[f"{p}_rel_l2"] = errors[p]
        row["speedup"] = row["random_ms"] / row["gaussian_ms"]
        results.append(row)
        print(f"{name:24s} gaussian {row['gaussian_ms']:9.2f} ms  random {row['random_ms']:9.2f} ms"
              f"  {row['speedup']:5.2f}x  rel-L2 {errors['gaussian']:.1e} / "
              f"{'-' if errors['random'] is None else format(errors['random'], '.1e')}",
              flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"command": " ".join(sys.argv), "rounds": args.rounds, "rows": results}, f,
                      indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
