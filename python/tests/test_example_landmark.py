"""Smoke tests of apps/examples/landmark_train.py on the CPU, tiny (48x48, 4 landmarks, 6 steps;
the 45x45 Gaussian stays): the torch and fftconv loss curves agree, and DDP through torchrun
(gloo) runs with world size 1 and, where there are two cores, reproduces it with world size 2.
No timing checks."""
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed")
try:
    import fftconv
except ImportError as e:  # the extension is not built, or not on PYTHONPATH
    pytest.skip(f"the fftconv extension is not importable ({e}); build it and put <build>/python "
                "on PYTHONPATH", allow_module_level=True)

SCRIPT = Path(__file__).resolve().parents[2] / "apps" / "examples" / "landmark_train.py"
TINY = ["--device", "cpu", "--steps", "6", "--batch", "2", "--size", "48", "--landmarks", "4",
        "--print-every", "2", "--warmup", "2"]
RTOL = 1e-4


def subprocess_env():
    """This environment, with the folder fftconv was imported from first on PYTHONPATH."""
    env = dict(os.environ)
    where = str(Path(fftconv.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (where, env.get("PYTHONPATH")) if p)
    return env


def run(args, nproc=None):
    """The script with args; under torch.distributed.run with nproc ranks and --ddp if given."""
    launcher = [] if nproc is None else ["-m", "torch.distributed.run", "--standalone",
                                         f"--nproc_per_node={nproc}"]
    cmd = [sys.executable, *launcher, str(SCRIPT), *args, *([] if nproc is None else ["--ddp"])]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=subprocess_env(), timeout=300)
    assert proc.returncode == 0, f"{cmd}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    return proc


def assert_close(a, b):
    assert len(a) == len(b) == 6
    assert all(math.isfinite(v) for v in a + b)
    for u, v in zip(a, b):
        assert abs(u - v) <= RTOL * max(abs(u), abs(v)), (a, b)


def test_torch_and_fftconv_curves_agree(tmp_path):
    out = tmp_path / "run.json"
    proc = run([*TINY, "--json", str(out)])
    data = json.loads(out.read_text())
    assert data["pass"] and data["world_size"] == 1
    assert data["checks"]["initial_gradient"]["value"] <= RTOL
    assert_close(data["variants"]["torch"]["losses"], data["variants"]["fftconv"]["losses"])
    assert "PASS" in proc.stdout and "converted smooth" in proc.stdout


@pytest.fixture(scope="module")
def ddp_world_1(tmp_path_factory):
    where = tmp_path_factory.mktemp("ddp1")
    run([*TINY, "--only", "fftconv", "--json", str(where / "ws1.json"),
         "--save", str(where / "ws1.pt")], nproc=1)
    return where


def test_ddp_world_size_1(ddp_world_1):
    data = json.loads((ddp_world_1 / "ws1.json").read_text())
    assert data["world_size"] == 1 and list(data["variants"]) == ["fftconv"]
    losses = data["variants"]["fftconv"]["losses"]
    assert len(losses) == 6 and all(math.isfinite(v) for v in losses)
    state = torch.load(ddp_world_1 / "ws1.pt")["fftconv"]
    # nn.Conv2d's keys (no DDP "module." prefix), and the Gaussian still frozen at peak 1.
    assert "smooth.weight" in state and "features.0.weight" in state
    assert state["smooth.weight"].shape == (4, 1, 45, 45)
    assert state["smooth.weight"][:, :, 22, 22].eq(1).all()


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="world size 2 wants two CPU cores")
def test_ddp_world_size_2_matches_1(ddp_world_1, tmp_path):
    out = tmp_path / "ws2.json"
    run([*TINY, "--only", "fftconv", "--json", str(out),
         "--reference", str(ddp_world_1 / "ws1.json")], nproc=2)
    ws1 = json.loads((ddp_world_1 / "ws1.json").read_text())
    ws2 = json.loads(out.read_text())
    assert ws2["world_size"] == 2 and ws2["pass"]
    assert_close(ws1["variants"]["fftconv"]["losses"], ws2["variants"]["fftconv"]["losses"])
