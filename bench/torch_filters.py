#!/usr/bin/env python3
"""Gaussian blurs from PyTorch: fftconv against what users run instead, in one process.

    PYTHONPATH=build/python python3 bench/torch_filters.py --out filters.json
        [--rows landmark_batch64,...] [--dtypes f32,f16] [--iters 30] [--warmup 5]
        [--cold-iters 10] [--no-cpu]

Rows (the blurs of the landmark networks and of fftconv-blur):
  landmark_batch64     64 x 1 x 96 x 96, 45x45, sigma 7
  landmark_dw68        32 x 68 x 96 x 96, depthwise 45x45, sigma 7
  photo_rgb_2k         1 x 3 x 2048 x 2048, 45x45, sigma 7
  photo_rgb_4000x3000  1 x 3 x 3000 x 4000, 101x101, sigma 16

Providers, each on the same input:
  fftconv_conv   fftconv.conv2d(x, g, padding=k // 2, groups=C) with the 2D Gaussian g as a frozen
                 depthwise weight (requires_grad False): the plan keeps it, finds it of rank 1 and
                 runs it as 1-D passes (the separable path), zero borders
  fftconv_blur   fftconv.filters.gaussian_blur2d(x, (k, k), (s, s), border_type="reflect"): the
                 same with reflect borders, which the separable kernel applies as it loads
                 (padding_mode; before 2026-12-04 an F.pad copy came first)
  kornia         kornia.filters.gaussian_blur2d(..., border_type="reflect", separable=True)
  torchvision    torchvision.transforms.v2.functional.gaussian_blur (reflect), where installed
  conv2d         F.conv2d(x, g, padding=k // 2, groups=C): the dense depthwise convolution,
                 cudnn.benchmark on, TF32 off
  cv2_cpu        cv2.GaussianBlur on the host (fp32, photo rows, BORDER_REFLECT_101 as kornia's
                 reflect), where OpenCV is installed; perf_counter around the call

Timing as bench/torch_ops.py's: median_ms of --iters interleaved rounds (inputs rotated over
copies of at least 100 MB where they are smaller), cold_ms one call alone after a 256 MiB L2
flush with its host launch (median of --cold-iters). rel_l2 against float64 on the device: the
two exact 1-D passes of the Gaussian, with zero borders (fftconv_conv, conv2d) or reflect ones.
The fftconv entries carry speedup_vs_kornia (kornia's cold_ms / theirs) and
speedup_vs_kornia_median.
"""
import argparse
import json
import os
import platform
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_ops as to  # noqa: E402  (Clock, Provider)

ROWS = {  # name: n, c, h, w, kernel, sigma
    "landmark_batch64": (64, 1, 96, 96, 45, 7.0),
    "landmark_dw68": (32, 68, 96, 96, 45, 7.0),
    "photo_rgb_2k": (1, 3, 2048, 2048, 45, 7.0),
    "photo_rgb_4000x3000": (1, 3, 3000, 4000, 101, 16.0),
}
DTYPES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}


def gaussian_1d(torch, k, sigma, device):
    t = torch.arange(k, dtype=torch.float64, device=device) - (k - 1) / 2
    g = torch.exp(-t * t / (2 * sigma * sigma))
    return g / g.sum()


def reference(torch, F, x, k, sigma, reflect):
    """float64 result of the Gaussian as its two 1-D passes (exact for a separable filter)."""
    c = x.shape[1]
    g = gaussian_1d(torch, k, sigma, x.device)
    x64 = x.double()
    p = k // 2
    if reflect:
        x64 = F.pad(x64, (p, p, p, p), mode="reflect")
        pad = 0
    else:
        pad = p
    rows = F.conv2d(x64, g.view(1, 1, 1, k).expand(c, 1, 1, k), padding=(0, pad), groups=c)
    return F.conv2d(rows, g.view(1, 1, k, 1).expand(c, 1, k, 1), padding=(pad, 0), groups=c)


def rel_l2(torch, out, ref):
    d = (out.double() - ref).norm().item()
    n = ref.norm().item()
    return d / n if n > 0 else float("nan")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default=",".join(ROWS), help="comma-separated row names")
    ap.add_argument("--dtypes", default="f32,f16", help="comma-separated: f32, f16, bf16")
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--cold-iters", type=int, default=10)
    ap.add_argument("--cpu-iters", type=int, default=3, help="cv2 calls per photo row")
    ap.add_argument("--no-cpu", action="store_true", help="leave out cv2 on the host")
    ap.add_argument("--out", required=True, metavar="FILE.json")
    args = ap.parse_args(argv)
    rows = [r for r in args.rows.split(",") if r]
    for r in rows:
        if r not in ROWS:
            ap.error(f"unknown row {r!r}; rows: {', '.join(ROWS)}")
    dtypes = [d for d in args.dtypes.split(",") if d]
    for d in dtypes:
        if d not in DTYPES:
            ap.error(f"unknown dtype {d!r}")

    import torch
    import torch.nn.functional as F
    import fftconv
    import fftconv.filters
    notes = []
    try:
        import kornia
    except ImportError as e:
        kornia = None
        notes.append(f"kornia not importable: {e}")
    try:
        from torchvision.transforms.v2 import functional as tvf
    except Exception as e:  # noqa: BLE001  (a wheel built for another torch fails as it loads)
        tvf = None
        notes.append(f"torchvision not importable: {e}")
    cv2 = None
    if not args.no_cpu:
        try:
            import cv2
        except ImportError as e:
            notes.append(f"cv2 (OpenCV) not importable: {e}")
    if not torch.cuda.is_available():
        raise SystemExit("torch_filters.py needs a CUDA device")
    device = torch.device("cuda")
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    clock = to.Clock(torch, device)
    entries = []
    print(f"{'row':<22} {'dtype':<5} {'provider':<13} {'median_ms':>10} {'cold_ms':>9} "
          f"{'rel_l2':>9} {'vs kornia (cold)':>17}", flush=True)
    for name in rows:
        n, c, h, w, k, sigma = ROWS[name]
        for dname in dtypes:
            dtype = getattr(torch, DTYPES[dname])
            gen = torch.Generator(device="cpu").manual_seed(1)
            x0 = torch.rand(n, c, h, w, generator=gen).to(device=device, dtype=dtype)
            copies = max(1, min(16, int(100e6 // (x0.numel() * x0.element_size()))))
            xs = [x0] + [x0.clone() for _ in range(copies - 1)]
            g1 = gaussian_1d(torch, k, sigma, device)
            weight = (g1[:, None] * g1[None, :]).to(dtype).expand(c, 1, k, k).contiguous()
            p = k // 2
            provs = [
                to.Provider("fftconv_conv",
                            lambda x: fftconv.conv2d(x, weight, padding=p, groups=c),
                            "fftconv.conv2d, frozen Gaussian, zero borders"),
                to.Provider("fftconv_blur",
                            lambda x: fftconv.filters.gaussian_blur2d(x, (k, k), (sigma, sigma),
                                                                      border_type="reflect"),
                            "fftconv.filters.gaussian_blur2d, reflect"),
                to.Provider("conv2d", lambda x: F.conv2d(x, weight, padding=p, groups=c),
                            "F.conv2d, dense depthwise, zero borders"),
            ]
            if kornia is not None:
                provs.append(to.Provider(
                    "kornia",
                    lambda x: kornia.filters.gaussian_blur2d(x, (k, k), (sigma, sigma),
                                                             border_type="reflect",
                                                             separable=True),
                    "kornia.filters.gaussian_blur2d(separable=True), reflect"))
            if tvf is not None:
                provs.append(to.Provider(
                    "torchvision", lambda x: tvf.gaussian_blur(x, [k, k], [sigma, sigma]),
                    "torchvision gaussian_blur, reflect"))
            clock.use([(x,) for x in xs])
            failed = {}
            errs = {}
            ref0 = {False: reference(torch, F, x0.float(), k, sigma, False),
                    True: reference(torch, F, x0.float(), k, sigma, True)}
            for pv in provs:
                try:
                    out = pv.fn(x0)
                    out = pv.fn(x0)  # the second call: the frozen filter is kept from here on
                    reflect = pv.name in ("fftconv_blur", "kornia", "torchvision")
                    errs[pv.name] = rel_l2(torch, out, ref0[reflect])
                except to.ERRORS as e:
                    failed[pv.name] = f"first calls: {e}"
            times = clock.rounds(provs, args.warmup, args.iters, failed)
            cold = clock.cold(provs, args.cold_iters, failed)
            results = {}
            for pv in provs:
                if pv.name in failed:
                    results[pv.name] = {"error_occurred": True,
                                        "error_message": failed[pv.name]}
                    continue
                results[pv.name] = {"median_ms": statistics.median(times[pv.name]),
                                    "min_ms": min(times[pv.name]),
                                    "cold_ms": cold.get(pv.name),
                                    "rel_l2": errs.get(pv.name)}
            if cv2 is not None and name.startswith("photo") and dname == "f32":
                img = x0[0].permute(1, 2, 0).contiguous().float().cpu().numpy()
                cv2.GaussianBlur(img, (k, k), sigma, borderType=cv2.BORDER_REFLECT_101)
                ts = []
                for _ in range(args.cpu_iters):
                    t0 = time.perf_counter()
                    out = cv2.GaussianBlur(img, (k, k), sigma, borderType=cv2.BORDER_REFLECT_101)
                    ts.append((time.perf_counter() - t0) * 1e3)
                ref = ref0[True][0].permute(1, 2, 0).cpu()
                out_t = torch.from_numpy(out).to(torch.float64)
                results["cv2_cpu"] = {"median_ms": statistics.median(ts),
                                      "cold_ms": statistics.median(ts),
                                      "rel_l2": ((out_t - ref).norm() / ref.norm()).item(),
                                      "threads": cv2.getNumThreads()}
            kc = results.get("kornia", {})
            for prov, r in results.items():
                entry = {"name": f"{name}/{dname}/{prov}", "row": name, "dtype": dname,
                         "provider": prov, "n": n, "c": c, "h": h, "w": w, "kernel": k,
                         "sigma": sigma, **r}
                if prov.startswith("fftconv") and kc.get("cold_ms") and r.get("cold_ms"):
                    entry["speedup_vs_kornia"] = kc["cold_ms"] / r["cold_ms"]
                    entry["speedup_vs_kornia_median"] = kc["median_ms"] / r["median_ms"]
                entries.append(entry)
                if r.get("error_occurred"):
                    print(f"{name:<22} {dname:<5} {prov:<13} {r['error_message']}", flush=True)
                    continue
                sp = entry.get("speedup_vs_kornia")
                print(f"{name:<22} {dname:<5} {prov:<13} {r['median_ms']:>10.4f} "
                      f"{r['cold_ms']:>9.4f} {r['rel_l2']:>9.2e} "
                      f"{(f'{sp:.2f}x' if sp else ''):>17}", flush=True)
            del xs, x0
            torch.cuda.empty_cache()
    context = {"command": " ".join([os.path.basename(sys.argv[0])] + sys.argv[1:]),
               "device": torch.cuda.get_device_name(),
               "torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
               "kornia": getattr(kornia, "__version__", None),
               "cv2": getattr(cv2, "__version__", None), "host": platform.node(),
               "notes": notes}
    with open(args.out, "w") as f:
        json.dump({"context": context, "benchmarks": entries}, f, indent=1)
    for note in notes:
        print("note:", note)


if __name__ == "__main__":
    main()
