"""Landmark heatmap regression trained through a fixed 45x45 Gaussian, with and without fftconv.

A few 3x3 conv + ReLU layers (dilated 1, 2, 4, ...) and a 3x3 conv map an image to L maps
(L = 68 facial landmarks by default, 96x96); a FIXED depthwise 45x45 Gaussian (sigma 7, peak 1,
padding 22, one filter per map, weights with requires_grad=False: the smoothing layer of the
CNTK report that started this project) turns them into heatmaps, trained with MSE against the
Gaussian heatmaps of the landmarks. A map that is 1 at its landmark and 0 elsewhere reproduces
its target exactly (see landmark_heatmaps.cpp).

The data is synthetic and deterministic in --seed: per face, the 68-point layout of
landmark_heatmaps.cpp (the first L points), scaled, shifted and jittered, drawn into a noisy
image as small blobs, one colour (intensity) per landmark. Sample i of the run depends only on
(--seed, i), so every world size sees the same global batches.

The model is trained twice from the same initial parameters on the same batches: "torch" with
torch.nn.Conv2d everywhere, "fftconv" after fftconv.nn.convert(model, min_kernel=15), which
moves the 45x45 smoothing (every conv with a side >= 15) onto fftconv. They must agree to fp32
rounding: the gradients at the initial parameters (relative L2 difference) and the loss curves
over the first --strict-steps steps (largest relative difference) within 1e-4 in fp32 (looser
under autocast; printed). Later the curves drift apart slowly, as training amplifies rounding
differences (with Adam, to ~1e-5..1e-2 after 300 steps in tests on the CPU), so the whole run
only has a sanity bound of 0.1. PASS, or FAIL and exit status 1. TF32 is off, so that cuDNN
computes the torch variant in full fp32 too. Step times are medians over the steps after
--warmup, synchronized per step on the GPU (data generation is not timed).

  python3 apps/examples/landmark_train.py [--device cuda|cpu] [--batch 32] [--steps 300]
      [--seed 0] [--size 96] [--landmarks 68] [--channels 1] [--optim adam|sgd]
      [--dtype fp32|bf16|fp16] [--amp] [--print-every 25] [--json out.json] [--save final.pt]

--amp (= --dtype fp16) is autocast to fp16 with a GradScaler, CUDA only; bf16 is autocast too.

DDP (torchrun sets RANK, WORLD_SIZE, LOCAL_RANK; nccl on CUDA with rank r on cuda:LOCAL_RANK,
gloo on the CPU). --batch is the global batch, split evenly across ranks; the printed losses are
global means, so a run of any world size should reproduce the curves of a single process to
rounding. Both variants are trained (--only picks one); only rank 0 prints and writes files.
--json records the curves, the step times and per variant a checksum of the final parameters;
--reference compares this run's curves and checksums with an earlier --json (PASS/FAIL likewise):

  torchrun --standalone --nproc_per_node=1 apps/examples/landmark_train.py --ddp --json ws1.json
  torchrun --standalone --nproc_per_node=2 apps/examples/landmark_train.py --ddp --json ws2.json \\
      --reference ws1.json

Needs the built extension on the path, e.g. PYTHONPATH=build/python.
"""
import argparse
import copy
import hashlib
import json
import math
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

try:
    import fftconv
except ImportError as e:
    sys.exit(f"landmark_train: cannot import fftconv ({e}); build the extension and put "
             "<build>/python on PYTHONPATH")

KERNEL, SIGMA = 45, 7.0  # the fixed smoothing layer
BLOB_SIGMA = 1.5  # landmarks as drawn in the image
# Relative tolerances on the loss curves: over the first --strict-steps steps (rounding), and a
# sanity bound over the whole run, where training has amplified the rounding differences.
TOLERANCE = {"fp32": 1e-4, "fp16": 2e-2, "bf16": 5e-2}
WHOLE_RUN = 0.1


def face_template():
    """The 68-point face layout of landmark_heatmaps.cpp on the unit square: (68, 2) as (y, x)."""
    pi, pts = math.pi, []
    pts += [(0.45 + 0.40 * math.sin(pi * i / 16), 0.5 - 0.38 * math.cos(pi * i / 16))
            for i in range(17)]  # jaw
    for side in range(2):  # brows
        pts += [(0.30 - 0.05 * math.sin(pi * i / 4), (0.56 if side else 0.18) + 0.26 * i / 4)
                for i in range(5)]
    pts += [(0.38 + 0.06 * i, 0.5) for i in range(4)]  # nose bridge
    pts += [(0.62, 0.42 + 0.04 * i) for i in range(5)]  # nostrils
    for cx in (0.34, 0.66):  # eyes
        pts += [(0.40 + 0.03 * math.sin(pi * i / 3), cx - 0.08 * math.cos(pi * i / 3))
                for i in range(6)]
    pts += [(0.76 + 0.07 * math.sin(pi * i / 6), 0.5 - 0.16 * math.cos(pi * i / 6))
            for i in range(12)]  # outer lip
    pts += [(0.76 + 0.03 * math.sin(pi * i / 4), 0.5 - 0.10 * math.cos(pi * i / 4))
            for i in range(8)]  # inner lip
    return torch.tensor(pts, dtype=torch.float64)


def gaussian_1d(size, sigma, centres, radius=None):
    """exp(-(t - c)^2 / (2 sigma^2)) for t in [0, size), one row per centre; zero beyond radius."""
    d = torch.arange(size, dtype=torch.float32, device=centres.device)[None, :] - centres[:, None]
    g = torch.exp(-d * d / (2 * sigma * sigma))
    return g if radius is None else g * (d.abs() <= radius)


class SyntheticFaces:
    """Deterministic (image, heatmaps) samples: sample i depends only on (seed, i)."""

    def __init__(self, seed, size, landmarks, channels):
        if not 1 <= landmarks <= 68:
            raise ValueError(f"--landmarks must be in [1, 68], got {landmarks}")
        self.seed, self.size = seed, size
        self.template = face_template()[:landmarks]
        g = torch.Generator().manual_seed(seed)
        self.colours = 0.2 + 0.8 * torch.rand(landmarks, channels, generator=g)

    def landmarks(self, i):
        """Integer (y, x) pixel positions of sample i's landmarks, and its image noise."""
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + i + 1)
        scale = 0.75 + 0.25 * torch.rand(1, generator=g, dtype=torch.float64)
        shift = (1 - scale) * torch.rand(2, generator=g, dtype=torch.float64)
        jitter = 0.02 * (2 * torch.rand(self.template.shape, generator=g, dtype=torch.float64) - 1)
        pts = (self.template * scale + shift + jitter).clamp(0, 1) * (self.size - 1)
        noise = 0.1 * torch.randn(self.colours.shape[1], self.size, self.size, generator=g)
        return pts.round().float(), noise

    def batch(self, indices, device):
        """Images (B, C, S, S) and target heatmaps (B, L, S, S) on device; each sample rendered on
        its own, so that its values do not depend on the batch it is in."""
        images, targets = [], []
        for i in indices:
            pts, noise = self.landmarks(i)
            pts, noise = pts.to(device), noise.to(device)
            by, bx = (gaussian_1d(self.size, BLOB_SIGMA, pts[:, k]) for k in (0, 1))
            blobs = by[:, :, None] * bx[:, None, :]  # (L, S, S)
            colours = self.colours.to(device)[:, :, None, None]  # (L, C, 1, 1)
            images.append(noise + (colours * blobs[:, None]).sum(0))
            # The target is the one-hot map of each landmark smoothed by the (truncated) kernel.
            ty, tx = (gaussian_1d(self.size, SIGMA, pts[:, k], KERNEL // 2) for k in (0, 1))
            targets.append(ty[:, :, None] * tx[:, None, :])
        return torch.stack(images), torch.stack(targets)


class LandmarkNet(nn.Module):
    """depth x (3x3 conv + ReLU), a 3x3 conv to L maps, the fixed depthwise 45x45 Gaussian."""

    def __init__(self, channels, landmarks, width, depth):
        super().__init__()
        layers, c = [], channels
        for i in range(depth):  # dilated 2^i: a receptive field of 2^(depth+1) + 1
            layers += [nn.Conv2d(c, width, 3, padding=2**i, dilation=2**i), nn.ReLU(inplace=True)]
            c = width
        self.features = nn.Sequential(*layers, nn.Conv2d(c, landmarks, 3, padding=1))
        self.smooth = nn.Conv2d(landmarks, landmarks, KERNEL, padding=KERNEL // 2,
                                groups=landmarks, bias=False)
        c0 = torch.full((1,), float(KERNEL // 2))
        g = gaussian_1d(KERNEL, SIGMA, c0)[0]
        with torch.no_grad():
            self.smooth.weight.copy_((g[:, None] * g[None, :]).expand_as(self.smooth.weight))
            # The Gaussian sums to ~300: start the maps small so that the first heatmaps are too.
            self.features[-1].weight.mul_(1.0 / g.sum().item() ** 2)
            self.features[-1].bias.zero_()
        self.smooth.weight.requires_grad_(False)

    def forward(self, x):
        return self.smooth(self.features(x))


def checksum(model):
    """Sum and sum of squares (float64) and sha256 of the bytes of the final parameters."""
    tensors = [t.detach().float().cpu().contiguous() for t in model.state_dict().values()]
    flat = torch.cat([t.flatten() for t in tensors]).double()
    sha = hashlib.sha256()
    for t in tensors:
        sha.update(bytes(t.untyped_storage()))
    return {"sum": flat.sum().item(), "sum_sq": (flat * flat).sum().item(),
            "sha256": sha.hexdigest()}


def train(model, data, args, device, rank, world):
    """Trains model in place; returns the per-step global mean losses and step times (ms)."""
    dist = torch.distributed
    if args.ddp:
        net = nn.parallel.DistributedDataParallel(
            model, device_ids=[device.index] if device.type == "cuda" else None)
    else:
        net = model
    params = [p for p in model.parameters() if p.requires_grad]
    if args.optim == "adam":
        opt = torch.optim.Adam(params, lr=args.lr)
    else:
        opt = torch.optim.SGD(params, lr=args.lr, momentum=0.9)
    amp = args.dtype != "fp32"
    amp_dtype = torch.float16 if args.dtype == "fp16" else torch.bfloat16
    scaler = torch.amp.GradScaler(device.type, enabled=args.dtype == "fp16")
    local = args.batch // world
    losses, times = [], []
    for step in range(args.steps):
        first = step * args.batch + rank * local
        x, y = data.batch(range(first, first + local), device)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device.type, dtype=amp_dtype, enabled=amp):
            loss = F.mse_loss(net(x).float(), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        times.append(1e3 * (time.perf_counter() - t0))
        losses.append(loss.detach())
    losses = torch.stack(losses).double()
    if args.ddp:  # the mean over the global batch: ranks hold equal shares
        dist.all_reduce(losses)
        losses /= world
    return losses.tolist(), times


def max_rel_diff(a, b):
    """Largest |u - v| / max(|u|, |v|) over the pairs; inf if a value is not finite or the lengths
    differ."""
    if len(a) != len(b) or not all(map(math.isfinite, [*a, *b])):
        return math.inf
    return max((abs(u - v) / max(abs(u), abs(v), 1e-30) for u, v in zip(a, b)), default=0.0)


def initial_gradient(model, x, y):
    """The gradient of the loss at the initial parameters (fp32), flattened."""
    F.mse_loss(model(x), y).backward()
    grad = torch.cat([p.grad.flatten() for p in model.parameters() if p.requires_grad]).double()
    model.zero_grad(set_to_none=True)
    return grad


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu",
                   choices=["cuda", "cpu"], help="default: cuda when available, else cpu")
    p.add_argument("--batch", type=int, default=32, help="global batch (default 32)")
    p.add_argument("--steps", type=int, default=300, help="training steps (default 300)")
    p.add_argument("--seed", type=int, default=0, help="parameters and data (default 0)")
    p.add_argument("--size", type=int, default=96, help="image and map side (default 96)")
    p.add_argument("--landmarks", type=int, default=68, help="L, at most 68 (default 68)")
    p.add_argument("--channels", type=int, default=1, choices=[1, 3], help="image channels")
    p.add_argument("--width", type=int, default=32, help="hidden channels (default 32)")
    p.add_argument("--depth", type=int, default=4, help="3x3 conv + ReLU layers (default 4)")
    p.add_argument("--optim", default="adam", choices=["adam", "sgd"])
    p.add_argument("--lr", type=float, help="default 1e-4 for adam, 1e-3 for sgd (momentum 0.9), "
                   "tuned at 96x96; lower it where the loss diverges")
    p.add_argument("--dtype", default="fp32", choices=["fp32", "fp16", "bf16"],
                   help="fp32 (default), or autocast to fp16 (GradScaler; CUDA only) or bf16")
    p.add_argument("--amp", action="store_true", help="the same as --dtype fp16")
    p.add_argument("--algo", default="auto", choices=list(fftconv.functional.ALGOS),
                   help="fftconv's algorithm for the converted layers (default auto)")
    p.add_argument("--only", choices=["torch", "fftconv"], help="train one variant only")
    p.add_argument("--print-every", type=int, default=25, help="default 25")
    p.add_argument("--strict-steps", type=int, default=50, metavar="N",
                   help="steps whose losses must agree to the rounding tolerance (default 50)")
    p.add_argument("--warmup", type=int, default=5, help="steps left out of the timing (5)")
    p.add_argument("--ddp", action="store_true", help="DistributedDataParallel (under torchrun)")
    p.add_argument("--json", metavar="PATH", help="write the curves, step times and checksums")
    p.add_argument("--save", metavar="PATH", help="write the final state_dict of each variant")
    p.add_argument("--reference", metavar="PATH", help="compare with an earlier --json")
    args = p.parse_args()
    if args.amp:
        args.dtype = "fp16"
    args.lr = args.lr or (1e-4 if args.optim == "adam" else 1e-3)
    if args.device == "cuda" and not torch.cuda.is_available():
        p.error("--device cuda: no CUDA device (use --device cpu)")
    if args.dtype == "fp16" and args.device == "cpu":
        p.error("--dtype fp16 / --amp: CUDA only (PyTorch's grouped fp16 convolution on the CPU, "
                "the torch variant's 45x45 layer, takes minutes); use --dtype bf16 on the CPU")
    if min(args.batch, args.steps, args.size, args.print_every, args.strict_steps) < 1:
        p.error("--batch, --steps, --size, --print-every and --strict-steps must be positive")
    if args.warmup < 0:
        p.error("--warmup must be >= 0")
    if args.ddp and not all(k in os.environ for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK")):
        p.error("--ddp: RANK, WORLD_SIZE and LOCAL_RANK are not set; run under torchrun")

    rank, world = 0, 1
    device = torch.device(args.device)
    if args.ddp:
        os.environ.setdefault("NCCL_NVLS_ENABLE", "0")  # NVLink multicast off on these machines
        os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
        rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        if args.device == "cuda":
            device = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
            torch.cuda.set_device(device)
        torch.distributed.init_process_group("nccl" if device.type == "cuda" else "gloo")
        if args.batch % world:
            if rank == 0:
                print(f"--batch {args.batch} does not split evenly across {world} ranks",
                      file=sys.stderr)
            torch.distributed.destroy_process_group()
            return 2
    say = print if rank == 0 else (lambda *a, **k: None)
    # cuDNN's fp32 convolutions in full fp32, as fftconv's FFT (autocast's run in half anyway).
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    tol, strict = TOLERANCE[args.dtype], min(args.strict_steps, args.steps)

    torch.manual_seed(args.seed)
    base = LandmarkNet(args.channels, args.landmarks, args.width, args.depth)
    data = SyntheticFaces(args.seed, args.size, args.landmarks, args.channels)
    variants = [v for v in ("torch", "fftconv") if args.only in (None, v)]
    where = f"{device}" + (f" x {world} ranks (DDP)" if args.ddp else "")
    say(f"landmark_train: {args.landmarks} landmarks, {args.size}x{args.size}, "
        f"{args.channels}-channel images, global batch {args.batch}, {args.steps} steps, "
        f"{args.optim} lr {args.lr:g}, {args.dtype}"
        f"{' (autocast)' if args.dtype != 'fp32' else ''}, seed {args.seed}, on {where}")
    say(f"smoothing: depthwise {KERNEL}x{KERNEL} Gaussian (sigma {SIGMA:g}), frozen; "
        f"{sum(p.numel() for p in base.parameters() if p.requires_grad)} trainable parameters")

    results, local = {}, args.batch // world
    first_batch = data.batch(range(rank * local, (rank + 1) * local), device)
    for name in variants:
        model = copy.deepcopy(base)
        if name == "fftconv":
            model = fftconv.nn.convert(model, min_kernel=15, algo=args.algo)
            converted = [n for n, m in model.named_modules() if isinstance(m, fftconv.nn.FFTConv2d)]
            say(f"fftconv: converted {', '.join(converted)} (algo {args.algo})")
        model.to(device)
        grad = initial_gradient(model, *first_batch)
        losses, times = train(model, data, args, device, rank, world)
        timed = times[args.warmup:] if len(times) > args.warmup else times
        results[name] = {"grad": grad, "losses": losses, "step_ms": times,
                         "median_ms": statistics.median(timed), "checksum": checksum(model),
                         "state_dict": model.state_dict()}

    say(f"\n{'step':>6}" + "".join(f"{'loss ' + v:>16}" for v in variants)
        + (f"{'rel diff':>11}" if len(variants) == 2 else ""))
    for s in range(args.steps):
        if s % args.print_every and s != args.steps - 1:
            continue
        row = [results[v]["losses"][s] for v in variants]
        say(f"{s + 1:>6}" + "".join(f"{v:>16.8g}" for v in row)
            + (f"{max_rel_diff(row[:1], row[1:]):>11.2e}" if len(row) == 2 else ""))
    n_timed = max(args.steps - args.warmup, 0) or args.steps
    say(f"\nmedian time per training step over {n_timed} steps"
        f"{f' (after {args.warmup} warm-up)' if args.steps > args.warmup else ''}:")
    for v in variants:
        say(f"  {v:>8}: {results[v]['median_ms']:9.2f} ms")
    if len(variants) == 2:
        say(f"  speed-up: {results['torch']['median_ms'] / results['fftconv']['median_ms']:.2f}x")

    ok, checks = True, {}

    def check(key, label, value, bound, kind="tolerance", indent="  "):
        nonlocal ok
        good = value <= bound  # False for nan
        ok &= good
        checks[key] = {"value": value, "bound": bound, "pass": good}
        say(f"{indent}{label}: {value:.3e} ({kind} {bound:g}) {'PASS' if good else 'FAIL'}")

    def compare_curves(key, a, b, indent="  "):
        check(f"{key}_first_{strict}_steps", f"losses, steps 1-{strict}, max relative difference",
              max_rel_diff(a[:strict], b[:strict]), tol, indent=indent)
        check(f"{key}_all_steps", f"losses, all {len(b)} steps (drift allowed), max relative "
              "difference", max_rel_diff(a, b), WHOLE_RUN, "sanity bound", indent)

    half = ", autocast: half-precision rounding" if args.dtype != "fp32" else ""
    if len(variants) == 2:
        say(f"\ntorch vs fftconv ({args.dtype}{half}):")
        ga, gb = results["torch"]["grad"], results["fftconv"]["grad"]
        check("initial_gradient", "fp32 gradient at the initial parameters, relative L2 "
              "difference", ((ga - gb).norm() / ga.norm()).item(), TOLERANCE["fp32"])
        compare_curves("torch_vs_fftconv", results["torch"]["losses"],
                       results["fftconv"]["losses"])
    if args.reference and rank == 0:
        with open(args.reference) as f:
            ref = json.load(f)
        say(f"\nreference {args.reference} (world size {ref.get('world_size')}):")
        same = ("batch", "steps", "seed", "size", "landmarks", "channels", "width", "depth",
                "optim", "lr", "dtype")
        differ = [k for k in same if ref.get("args", {}).get(k) != getattr(args, k)]
        if differ:
            ok = False
            say(f"  a different run: {', '.join(differ)} differ FAIL")
        for v in variants:
            if v not in ref.get("variants", {}):
                say(f"  {v}: not in the reference")
                continue
            rv = ref["variants"][v]
            say(f"  {v}:")
            compare_curves(f"{v}_vs_reference", rv["losses"], results[v]["losses"], "    ")
            cs, rcs = results[v]["checksum"]["sum_sq"], rv["checksum"]["sum_sq"]
            check(f"{v}_vs_reference_sum_sq", "final parameters' sum of squares, relative "
                  "difference", abs(cs - rcs) / max(abs(rcs), 1e-30), WHOLE_RUN, "sanity bound",
                  "    ")
            same_bits = results[v]["checksum"]["sha256"] == rv["checksum"]["sha256"]
            say(f"    final parameters bitwise {'equal' if same_bits else 'different'} (sha256)")
    say(f"\n{'PASS' if ok else 'FAIL'}" if checks or not ok
        else "\nnothing compared (one variant, no --reference)")

    if rank == 0 and args.json:
        out = {"args": {k: v for k, v in vars(args).items()}, "device": str(device),
               "world_size": world, "checks": checks, "pass": bool(ok),
               "variants": {v: {k: r[k] for k in ("losses", "step_ms", "median_ms", "checksum")}
                            for v, r in results.items()}}
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    if rank == 0 and args.save:
        torch.save({v: {k: t.cpu() for k, t in r["state_dict"].items()}
                    for v, r in results.items()}, args.save)
    if args.ddp:
        torch.distributed.destroy_process_group()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
