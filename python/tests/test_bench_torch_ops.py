"""Smoke test of bench/torch_ops.py: one small row on the CPU, in f32, every pass; the JSON has
an entry per pass and provider, and fftconv's results agree with PyTorch's. No timing checks."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="PyTorch is not installed")
try:
    import fftconv
except ImportError as e:  # the extension is not built, or not on PYTHONPATH
    pytest.skip(f"the fftconv extension is not importable ({e}); build it and put <build>/python "
                "on PYTHONPATH", allow_module_level=True)

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "torch_ops.py"
HEADER = "name,n,c,h,w,k,r,s,pad_h,pad_w,stride_h,stride_w,dil_h,dil_w,groups,dtype"
ROW = dict(n=1, c=1, h=24, w=24, k=1, r=7, s=7, pad_h=3, pad_w=3, stride_h=1, stride_w=1,
           dil_h=1, dil_w=1, groups=1)


def subprocess_env():
    """This environment, with the folder fftconv was imported from first on PYTHONPATH."""
    env = dict(os.environ)
    where = str(Path(fftconv.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (where, env.get("PYTHONPATH")) if p)
    return env


def test_cpu_smoke_run(tmp_path):
    shapes = tmp_path / "shapes.csv"
    shapes.write_text(HEADER + "\nsmoke_r7," + ",".join(str(v) for v in ROW.values()) + ",f32\n")
    out = tmp_path / "out.json"
    cmd = [sys.executable, str(SCRIPT), "--device", "cpu", "--shapes", str(shapes),
           "--dtypes", "f32", "--iters", "2", "--warmup", "1", "--cold-iters", "1",
           "--host-calls", "5", "--out", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=subprocess_env(), timeout=600)
    assert proc.returncode == 0, f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"

    doc = json.loads(out.read_text())
    assert doc["context"]["complete"] is True
    entries = {e["name"]: e for e in doc["benchmarks"]}
    expected = {f"smoke_r7/{p}/f32/{prov}" for p in ("fwd", "dgrad", "wgrad", "step")
                for prov in ("fftconv", "torch", "torch_tf32")}
    assert set(entries) == expected
    for name, e in entries.items():
        assert not e.get("error_occurred"), f"{name}: {e.get('error_message')}"
        assert e["time_unit"] == "ms"
        for key in ("real_time", "min_ms", "cold_ms", "host_us", "host_rotating_us"):
            assert key in e, f"{name} has no {key}"
        assert {k: e[k] for k in ROW} == ROW and e["dtype"] == "f32"
    for p in ("fwd", "dgrad", "wgrad", "step"):
        e = entries[f"smoke_r7/{p}/f32/fftconv"]
        assert "speedup" in e and "speedup_tf32" in e
        assert e["rel_l2"] < 1e-4, f"{p}: rel_l2 {e['rel_l2']}"
