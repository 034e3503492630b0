#!/usr/bin/env python3
"""The parity table: fftconv Auto against PyTorch's F.conv2d on every case, pass and dtype.

    python3 bench/parity.py TORCH_OPS.json [TORCH_OPS.json ...] --out parity.json
        [--markdown parity.md] [--limit 1.03]

The inputs are bench/torch_ops.py results (interleaved rounds of fftconv.conv2d and its
gradients against F.conv2d and torch.nn.grad, cudnn.benchmark on, TF32 off), e.g. of the suite
and of the small-kernel set next to this script:

    PYTHONPATH=build/python python3 bench/torch_ops.py --shapes data/shapes/suite.csv \\
        bench/parity_small.csv --passes fwd,dgrad,wgrad --dtypes f32,f16,bf16 --out ops.json

(the `parity` step of scripts/gpu_check.sh). A later file's entry replaces an earlier one of the
same name. Output: one entry per case, pass and dtype with `name`, `pass`, `dtype`,
`fftconv_ms`, `torch_ms` (medians), `ratio` = fftconv_ms / torch_ms, `cold_ratio` (the same of
cold calls, where both were measured), `rel_err` and `torch_rel_err` (fftconv's and F.conv2d's
rel-L2 against the reference torch_ops.py computed: torch on float64 copies of the inputs by
default; `reference` says which, from the file's context, "f32" for files without one) and
`within` (ratio <= --limit); a summary with the worst
ratio, the entries above the limit and the fp32 entries checked against float64 whose rel_err
(or torch's) is above 1e-5. Entries where either side failed are listed under `errors`. Exit status 1 when an entry is
above the limit, above 1e-5 in fp32, or failed, so a run can gate on it.
"""
import argparse
import json
import sys

FP32_TOLERANCE = 1e-5  # rel-L2 of an fp32 result against float64, whatever algorithm ran


def load(paths):
    """Entries by name, each with the file's `reference` (torch_ops.py --reference; files
    without one checked against torch's fp32 result)."""
    by_name = {}
    for p in paths:
        with open(p) as f:
            data = json.load(f)
        reference = data.get("context", {}).get("reference", "f32")
        for b in data.get("benchmarks", []):
            by_name[b["name"]] = dict(b, reference=reference)
    return by_name


def parity(by_name, limit):
    """(entries, errors) from torch_ops entries keyed by name (case/pass/dtype/provider)."""
    keys = sorted({tuple(n.split("/")[:3]) for n in by_name if n.count("/") == 3})
    entries, errors = [], []
    for case, pass_, dtype in keys:
        if pass_ == "step":
            continue
        ff = by_name.get(f"{case}/{pass_}/{dtype}/fftconv")
        tt = by_name.get(f"{case}/{pass_}/{dtype}/torch")
        if not ff or not tt:
            continue
        bad = [b for b in (ff, tt) if b.get("error_occurred")]
        if bad:
            errors.append({"name": case, "pass": pass_, "dtype": dtype,
                           "message": "; ".join(b.get("error_message", "error") for b in bad)})
            continue
        e = {"name": case, "pass": pass_, "dtype": dtype,
             "fftconv_ms": ff["real_time"], "torch_ms": tt["real_time"],
             "ratio": ff["real_time"] / tt["real_time"], "rel_err": ff.get("rel_l2"),
             "torch_rel_err": tt.get("rel_l2"), "reference": ff.get("reference", "f32")}
        if ff.get("cold_ms") and tt.get("cold_ms"):
            e["cold_ratio"] = ff["cold_ms"] / tt["cold_ms"]
        e["within"] = e["ratio"] <= limit
        entries.append(e)
    return entries, errors


def markdown(entries):
    lines = ["| case | pass | dtype | fftconv ms | torch ms | ratio | cold ratio | rel-L2 | "
             "torch rel-L2 |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for e in entries:
        cold = f"{e['cold_ratio']:.3f}" if "cold_ratio" in e else "-"
        rel, trel = (f"{e[k]:.1e}" if e.get(k) is not None else "-"
                     for k in ("rel_err", "torch_rel_err"))
        lines.append(f"| {e['name']} | {e['pass']} | {e['dtype']} | {e['fftconv_ms']:.4f} | "
                     f"{e['torch_ms']:.4f} | {e['ratio']:.3f} | {cold} | {rel} | {trel} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("inputs", nargs="+", metavar="TORCH_OPS.json")
    ap.add_argument("--out", required=True, metavar="parity.json")
    ap.add_argument("--markdown", metavar="FILE.md", help="also write the table as Markdown")
    ap.add_argument("--limit", type=float, default=1.03,
                    help="largest fftconv / torch time ratio that counts as parity (1.03)")
    args = ap.parse_args(argv)
    entries, errors = parity(load(args.inputs), args.limit)
    above = [e for e in entries if not e["within"]]
    worst = max(entries, key=lambda e: e["ratio"], default=None)

    def inaccurate(key):  # against float64 only: an fp32 reference has errors of its own
        return [e for e in entries if e["dtype"] == "f32" and e.get("reference") == "f64"
                and e.get(key) is not None and not e[key] <= FP32_TOLERANCE]
    bad_fp32, torch_bad_fp32 = inaccurate("rel_err"), inaccurate("torch_rel_err")
    summary = {"entries": len(entries), "limit": args.limit, "above_limit": len(above),
               "errors": len(errors), "fp32_tolerance": FP32_TOLERANCE,
               "fp32_above_tolerance": [f"{e['name']}/{e['pass']}" for e in bad_fp32],
               "torch_fp32_above_tolerance": [f"{e['name']}/{e['pass']}" for e in torch_bad_fp32],
               "worst": None if worst is None else
               {k: worst[k] for k in ("name", "pass", "dtype", "ratio")}}
    with open(args.out, "w") as f:
        json.dump({"summary": summary, "entries": entries, "errors": errors,
                   "inputs": args.inputs}, f, indent=1)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(markdown(entries))
    print(f"parity: {len(entries)} entries, {len(above)} above {args.limit}, "
          f"{len(errors)} failed" +
          (f"; worst {worst['name']} {worst['pass']} {worst['dtype']} {worst['ratio']:.3f}"
           if worst else ""))
    for e in above:
        print(f"  above: {e['name']} {e['pass']} {e['dtype']} {e['ratio']:.3f} "
              f"({e['fftconv_ms']:.4f} against {e['torch_ms']:.4f} ms)")
    for e in errors:
        print(f"  failed: {e['name']} {e['pass']} {e['dtype']}: {e['message']}")
    for e in bad_fp32:
        print(f"  fp32 rel-L2 above {FP32_TOLERANCE:g}: {e['name']} {e['pass']} {e['rel_err']:.2e}")
    for e in torch_bad_fp32:
        print(f"  F.conv2d's own fp32 rel-L2 above {FP32_TOLERANCE:g}: {e['name']} {e['pass']} "
              f"{e['torch_rel_err']:.2e}")
    return 1 if above or errors or bad_fp32 or not entries else 0


if __name__ == "__main__":
    sys.exit(main())
