"""Runtime rules: the plan cache, frozen filters, autocast, torch.compile, CUDA graphs, DDP."""
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import fftconv
from conftest import DEVICES, TOL, capture_training_step, needs_cuda, rel_l2

cache = fftconv.backends.plan_cache


def cache_of(device):
    return cache["cpu"] if device == "cpu" else cache[torch.device(device)]


# ---- plan cache ----------------------------------------------------------------------------------

@pytest.mark.parametrize("device", DEVICES)
def test_plan_cache_size_limit_and_clear(device):
    c = cache_of(device)
    c.clear()
    assert c.size == 0
    x = torch.randn(1, 1, 24, 24, device=device)
    for r in (9, 11, 13):
        fftconv.conv2d(x, torch.randn(1, 1, r, r, device=device), algo="fft")
    assert c.size == 3
    fftconv.conv2d(x, torch.randn(1, 1, 9, 9, device=device), algo="fft")  # a hit
    assert c.size == 3
    old = c.max_size
    try:
        c.max_size = 2
        assert c.size == 2
        with pytest.raises(ValueError):
            c.max_size = -1
    finally:
        c.max_size = old
    c.clear()
    assert c.size == 0
    assert "max_size" in repr(c)


def test_plan_cache_indexing():
    assert cache["cpu"].max_size == cache[torch.device("cpu")].max_size
    with pytest.raises(ValueError):
        cache[torch.device("meta")]


@pytest.mark.parametrize("device", DEVICES)
def test_plan_cache_describe(device):
    c = cache_of(device)
    c.clear()
    x = torch.randn(1, 2, 24, 24, device=device)
    fftconv.conv2d(x, torch.randn(2, 2, 9, 9, device=device), padding=4, algo="fft")
    lines = c.describe()
    assert len(lines) == 1
    assert lines[0].startswith("n1c2h24w24k2r9s9p4x4u1x1d1x1g1f32 pass=fwd algo=fft: ")
    assert "fft=" in lines[0]  # the engine plan's description
    c.clear()
    assert c.describe() == []


def _pass_call(pass_, x, w, dy, padding):
    """One call of a pass through the fftconv operators (algo auto), and its float64 reference."""
    geo = ([1, 1], [padding, padding], [1, 1], 1, "auto")
    if pass_ == "fwd":
        return fftconv.conv2d(x, w, padding=padding), F.conv2d(x.double(), w.double(), padding=padding)
    if pass_ == "dgrad":
        return (torch.ops.fftconv.conv2d_input_grad(dy, w, list(x.shape), *geo),
                torch.nn.grad.conv2d_input(x.shape, w.double(), dy.double(), padding=padding))
    return (torch.ops.fftconv.conv2d_weight_grad(dy, x, list(w.shape), *geo),
            torch.nn.grad.conv2d_weight(x.double(), w.shape, dy.double(), padding=padding))


@pytest.fixture
def cuda_auto():
    """The CUDA plan cache, emptied before and after; cudnn.benchmark, cuDNN's TF32 and
    strict_fp32 restored after the test."""
    c = cache["cuda"]
    c.clear()
    old = (torch.backends.cudnn.benchmark, torch.backends.cudnn.allow_tf32,
           fftconv.backends.strict_fp32)
    try:
        yield c
    finally:
        (torch.backends.cudnn.benchmark, torch.backends.cudnn.allow_tf32,
         fftconv.backends.strict_fp32) = old
        c.clear()


def _wgrad_5x5(dy, x):
    """The weight gradient of a 64 -> 64 5x5 convolution (padding 2) under Auto."""
    return torch.ops.fftconv.conv2d_weight_grad(dy, x, [64, 64, 5, 5], [1, 1], [2, 2], [1, 1], 1,
                                                "auto")


@needs_cuda
@pytest.mark.parametrize("pass_", ["fwd", "dgrad", "wgrad"])
def test_auto_times_engine_and_aten_under_cudnn_benchmark(pass_, cuda_auto):
    # 7x7 on 64 channels: the engine's and cuDNN's estimates are within 2x of each other, so
    # with cudnn.benchmark on the first call times both and the plan keeps the faster.
    c = cuda_auto
    x = torch.randn(8, 64, 56, 56, device="cuda")
    # A trained filter (requires grad): no kept-filter plan besides the measured one.
    w = torch.randn(64, 64, 7, 7, device="cuda", requires_grad=True)
    dy = torch.randn(8, 64, 56, 56, device="cuda")
    for benchmark in (True, False):
        c.clear()
        torch.backends.cudnn.benchmark = benchmark
        for _ in range(3):  # the first call settles the choice, the later ones run it
            out, ref = _pass_call(pass_, x, w, dy, 3)
            assert rel_l2(out, ref) <= TOL[torch.float32]
        lines = c.describe()
        assert len(lines) == 1, lines
        assert f"pass={pass_} algo=auto" in lines[0]
        assert "estimates:" in lines[0]
        if benchmark:
            if "measured:" not in lines[0]:
                pytest.skip(f"this GPU's estimates are not within 16x here: {lines[0]}")
            assert "; chose " in lines[0], lines[0]
            assert "to be settled" not in lines[0]
        else:
            assert "measured:" not in lines[0], lines[0]


@needs_cuda
def test_auto_fp32_stays_within_tolerance_whatever_cudnn_benchmark_picks(cuda_auto):
    # 5x5 backward filter on 64 channels: the algorithm cudnn.benchmark picked for PyTorch's own
    # fp32 weight gradient was 2e-3 from float64 on the H200. Auto checks aten's first fp32
    # result of a plan against float64 and runs the engine where it misses 1e-5.
    c = cuda_auto
    x = torch.randn(8, 64, 56, 56, device="cuda")
    dy = torch.randn(8, 64, 56, 56, device="cuda")
    ref = torch.nn.grad.conv2d_weight(x.double(), [64, 64, 5, 5], dy.double(), padding=2)
    torch.backends.cudnn.benchmark = True
    for _ in range(3):
        assert rel_l2(_wgrad_5x5(dy, x), ref) <= TOL[torch.float32]
    (line,) = c.describe()
    # aten timed faster: its result was checked; else the engine won on time.
    assert ("aten's fp32 result" in line) or ("chose the engine" in line), line
    # strict_fp32 off: aten's results are taken as they are (nothing checked).
    c.clear()
    fftconv.backends.strict_fp32 = False
    _wgrad_5x5(dy, x)
    (line,) = c.describe()
    assert "aten's fp32 result" not in line, line


@needs_cuda
def test_auto_does_not_check_fp32_when_cudnn_tf32_is_allowed(cuda_auto):
    # The user chose TF32 for cuDNN's convolutions: aten's fp32 results are taken as they are.
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = True
    x = torch.randn(8, 64, 56, 56, device="cuda")
    dy = torch.randn(8, 64, 56, 56, device="cuda")
    _wgrad_5x5(dy, x)
    (line,) = cuda_auto.describe()
    assert "aten's fp32 result" not in line, line


def test_strict_fp32_switch():
    assert fftconv.backends.strict_fp32 is True
    try:
        fftconv.backends.strict_fp32 = False
        assert fftconv.backends.strict_fp32 is False
    finally:
        fftconv.backends.strict_fp32 = True
    assert fftconv.backends.strict_fp32 is True


def test_cudnn_search_switch():
    assert fftconv.backends.cudnn_search == "auto"
    try:
        for name in ("graph", "heuristic", "find", "auto"):
            fftconv.backends.cudnn_search = name
            assert fftconv.backends.cudnn_search == name
        with pytest.raises(ValueError, match="unknown cuDNN search 'fastest'"):
            fftconv.backends.cudnn_search = "fastest"
        with pytest.raises(TypeError, match="must be a str"):
            fftconv.backends.cudnn_search = 2
        assert fftconv.backends.cudnn_search == "auto"
    finally:
        fftconv.backends.cudnn_search = "auto"


def test_own_fft_switch():
    assert fftconv.backends.own_fft is False
    try:
        fftconv.backends.own_fft = True
        assert fftconv.backends.own_fft is True
    finally:
        fftconv.backends.own_fft = False
    assert fftconv.backends.own_fft is False


@needs_cuda
@pytest.mark.parametrize("pass_", ["fwd", "dgrad", "wgrad"])
def test_own_fft_matches_float64(pass_):
    # The FFT path with the own plane kernels, every pass, against float64; the plan says so.
    c = fftconv.backends.plan_cache
    torch.manual_seed(6)
    x = torch.randn(2, 8, 40, 36, device="cuda")
    w = torch.randn(4, 8, 17, 13, device="cuda")
    dy = torch.randn(2, 4, 40, 36, device="cuda")
    pad = [8, 6]
    try:
        fftconv.backends.own_fft = True
        c.clear()
        if pass_ == "fwd":
            got = fftconv.conv2d(x, w, padding=pad, algo="fft")
            want = F.conv2d(x.double(), w.double(), padding=pad)
        elif pass_ == "dgrad":
            got = torch.ops.fftconv.conv2d_input_grad(dy, w, list(x.shape), [1, 1], pad,
                                                      [1, 1], 1, "fft")
            want = torch.nn.grad.conv2d_input(x.shape, w.double(), dy.double(), padding=pad)
        else:
            got = torch.ops.fftconv.conv2d_weight_grad(dy, x, list(w.shape), [1, 1], pad,
                                                       [1, 1], 1, "fft")
            want = torch.nn.grad.conv2d_weight(x.double(), w.shape, dy.double(), padding=pad)
        assert rel_l2(got, want) <= TOL[torch.float32]
        (line,) = c.describe()
        assert "own plane kernels" in line and "not the own" not in line, line
    finally:
        fftconv.backends.own_fft = False
        c.clear()


@needs_cuda
@pytest.mark.parametrize("pass_", ["fwd", "dgrad", "wgrad"])
def test_cudnn_graph_search_matches_float64(pass_):
    # The engine's cuDNN path through cuDNN's graph API, every pass, against float64.
    c = fftconv.backends.plan_cache
    torch.manual_seed(5)
    x = torch.randn(2, 16, 20, 20, device="cuda")
    w = torch.randn(8, 16, 3, 3, device="cuda")
    dy = torch.randn(2, 8, 20, 20, device="cuda")
    try:
        fftconv.backends.cudnn_search = "graph"
        c.clear()
        if pass_ == "fwd":
            got = fftconv.conv2d(x, w, padding=1, algo="cudnn")
            want = F.conv2d(x.double(), w.double(), padding=1)
        elif pass_ == "dgrad":
            got = torch.ops.fftconv.conv2d_input_grad(dy, w, list(x.shape), [1, 1], [1, 1],
                                                      [1, 1], 1, "cudnn")
            want = torch.nn.grad.conv2d_input(x.shape, w.double(), dy.double(), padding=1)
        else:
            got = torch.ops.fftconv.conv2d_weight_grad(dy, x, list(w.shape), [1, 1], [1, 1],
                                                       [1, 1], 1, "cudnn")
            want = torch.nn.grad.conv2d_weight(x.double(), w.shape, dy.double(), padding=1)
        assert rel_l2(got, want) <= TOL[torch.float32]
        (line,) = c.describe()
        assert "graph" in line, line
    finally:
        fftconv.backends.cudnn_search = "auto"
        c.clear()


@needs_cuda
def test_auto_does_not_time_far_apart_estimates(cuda_auto):
    # Depthwise 63x63: cuDNN's estimate is more than 16x the FFT's; nothing is timed.
    torch.backends.cudnn.benchmark = True
    x = torch.randn(4, 16, 128, 128, device="cuda")
    w = torch.randn(16, 1, 63, 63, device="cuda")
    y = fftconv.conv2d(x, w, padding=31, groups=16)
    assert rel_l2(y, F.conv2d(x.double(), w.double(), padding=31, groups=16)) <= TOL[torch.float32]
    (line,) = cuda_auto.describe()
    if "measured:" in line:
        pytest.skip(f"this GPU's estimates are within 16x here: {line}")
    assert "aten" not in line, line


# ---- frozen filters ------------------------------------------------------------------------------

@pytest.mark.parametrize("device", DEVICES)
def test_frozen_filter_is_kept_and_refreshed_on_change(device):
    c = cache_of(device)
    c.clear()
    x = torch.randn(2, 3, 40, 40, device=device)
    w = torch.randn(3, 1, 21, 21, device=device)  # requires_grad=False: a frozen filter

    def check():
        y = fftconv.conv2d(x, w, padding=10, groups=3, algo="fft")
        assert rel_l2(y, F.conv2d(x.double(), w.double(), padding=10, groups=3)) <= 1e-5

    check()
    assert c.size == 1  # seen once: the shared plan, filter given per call
    check()
    assert c.size == 2  # seen twice: a plan of its own that keeps the filter's spectrum
    check()
    assert c.size == 2
    with torch.no_grad():
        w.mul_(-0.5)  # an in-place change bumps the version counter: the spectrum is refreshed
    check()
    w.copy_(torch.randn_like(w))
    check()
    assert c.size == 2


@pytest.mark.parametrize("device", DEVICES)
def test_new_filter_tensors_do_not_fill_the_cache(device):
    c = cache_of(device)
    c.clear()
    x = torch.randn(1, 1, 32, 32, device=device)
    for _ in range(6):
        w = torch.randn(1, 1, 17, 17, device=device)
        y = fftconv.conv2d(x, w, padding=8, algo="fft")
        assert rel_l2(y, F.conv2d(x.double(), w.double(), padding=8)) <= 1e-5
    assert c.size == 1


@pytest.mark.parametrize("device", DEVICES)
def test_frozen_filter_backward_data(device):
    x = torch.randn(2, 2, 36, 36, device=device, requires_grad=True)
    w = torch.randn(2, 1, 25, 25, device=device)
    for _ in range(3):  # the third call runs with the kept spectrum
        x.grad = None
        fftconv.conv2d(x, w, padding=12, groups=2, algo="fft").square().sum().backward()
        xd = x.detach().double().requires_grad_()
        F.conv2d(xd, w.double(), padding=12, groups=2).square().sum().backward()
        assert rel_l2(x.grad, xd.grad) <= 1e-5


# ---- autocast ------------------------------------------------------------------------------------

@needs_cuda
def test_autocast_fp16_with_grad_scaler():
    torch.manual_seed(3)
    mod = fftconv.nn.FFTConv2d(4, 4, 31, padding=15, groups=4).cuda()
    ref = nn.Conv2d(4, 4, 31, padding=15, groups=4).cuda()
    ref.load_state_dict(mod.state_dict())
    scaler = torch.amp.GradScaler("cuda")
    x = torch.randn(2, 4, 48, 48, device="cuda")
    with torch.autocast("cuda", dtype=torch.float16):
        y = mod(x)
        yr = ref(x)
    assert y.dtype == torch.float16 and yr.dtype == torch.float16
    exact = F.conv2d(x.half().double(), mod.weight.half().double(), mod.bias.half().double(),
                     padding=15, groups=4)
    assert rel_l2(y, exact) <= TOL[torch.float16]
    scaler.scale(y.float().square().mean()).backward()
    assert mod.weight.grad.dtype == torch.float32 and mod.bias.grad.dtype == torch.float32
    scaler.scale(yr.float().square().mean()).backward()
    assert rel_l2(mod.weight.grad, ref.weight.grad) <= 5e-3


def test_autocast_cpu_bfloat16_like_f_conv2d():
    x = torch.randn(1, 2, 30, 30)
    w = torch.randn(2, 2, 15, 15)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = fftconv.conv2d(x, w, padding=7)
        yr = F.conv2d(x, w, padding=7)
    assert y.dtype == yr.dtype == torch.bfloat16
    assert rel_l2(y, F.conv2d(x.bfloat16().double(), w.bfloat16().double(), padding=7)) <= 1.6e-2


# ---- torch.compile -------------------------------------------------------------------------------

class Model(nn.Module):
    """The trap of reduce-overhead: an op after an nn.Linear must run on the current stream."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(32, 32 * 32)
        self.conv = fftconv.nn.FFTConv2d(1, 2, 17, padding=8, algo="fft")

    def forward(self, z):
        return self.conv(self.lin(z).view(-1, 1, 32, 32)).relu()


def compile_backends(device):
    # On the CPU aot_eager traces exactly what inductor would (fake kernels, autograd) without a
    # C++ compile of the generated code; the GPU run uses inductor.
    return ["inductor"] if device == "cuda" else ["aot_eager"]


@pytest.mark.parametrize("device", DEVICES)
def test_compile_fullgraph_forward_and_backward(device):
    torch._dynamo.reset()
    for backend in compile_backends(device):
        model = Model().to(device)
        compiled = torch.compile(model, fullgraph=True, backend=backend)
        for _ in range(2):
            z = torch.randn(3, 32, device=device, requires_grad=True)
            y = compiled(z)
            y.sum().backward()
            gz, gw = z.grad.clone(), model.conv.weight.grad.clone()
            z.grad = None
            model.zero_grad()
            ye = model(z)
            ye.sum().backward()
            assert rel_l2(y, ye) <= 1e-5
            assert rel_l2(gz, z.grad) <= 1e-5 and rel_l2(gw, model.conv.weight.grad) <= 1e-5
            model.zero_grad()


@needs_cuda
def test_compile_dynamic_shapes():
    torch._dynamo.reset()
    f = torch.compile(lambda x, w: fftconv.conv2d(x, w, padding=7), fullgraph=True, dynamic=True)
    w = torch.randn(2, 1, 15, 15, device="cuda")
    for h in (30, 41):
        x = torch.randn(2, 1, h, h + 3, device="cuda")
        assert rel_l2(f(x, w), F.conv2d(x.double(), w.double(), padding=7)) <= 1e-5


@needs_cuda
def test_compile_reduce_overhead():
    torch._dynamo.reset()
    model = Model().cuda().eval()
    compiled = torch.compile(model, mode="reduce-overhead", fullgraph=True)
    with torch.no_grad():
        for _ in range(5):
            z = torch.randn(4, 32, device="cuda")
            assert rel_l2(compiled(z).clone(), model(z)) <= 1e-5


# ---- CUDA graphs ---------------------------------------------------------------------------------

@needs_cuda
def test_graph_capture_of_forward_and_backward_replays():
    torch.manual_seed(5)
    model = fftconv.nn.FFTConv2d(3, 4, 25, padding=12).cuda()
    static_x = torch.randn(2, 3, 56, 56, device="cuda", requires_grad=True)
    static_g = torch.randn(2, 4, 56, 56, device="cuda")
    graph, static_y = capture_training_step(model, static_x, static_g)
    for _ in range(3):
        with torch.no_grad():
            static_x.copy_(torch.randn_like(static_x))
            static_g.copy_(torch.randn_like(static_g))
        graph.replay()
        torch.cuda.synchronize()
        xd = static_x.detach().double().requires_grad_()
        wd = model.weight.detach().double().requires_grad_()
        yd = F.conv2d(xd, wd, model.bias.detach().double(), padding=12)
        yd.backward(static_g.double())
        assert rel_l2(static_y, yd) <= 1e-5
        assert rel_l2(static_x.grad, xd.grad) <= 1e-5
        assert rel_l2(model.weight.grad, wd.grad) <= 1e-5


@needs_cuda
def test_plan_missing_during_capture_is_a_clear_error():
    x = torch.randn(1, 1, 77, 79, device="cuda")
    w = torch.randn(1, 1, 23, 23, device="cuda")
    fftconv.backends.plan_cache.clear()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match="run the model once before capture"):
        with torch.cuda.graph(graph):
            fftconv.conv2d(x, w, algo="fft")


# ---- DistributedDataParallel, world size 1 ------------------------------------------------------

@pytest.mark.parametrize("device", DEVICES)
def test_ddp_world_size_one(device, tmp_path):
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    backend = "nccl" if device == "cuda" else "gloo"
    if not dist.is_available() or (backend == "nccl" and not dist.is_nccl_available()):
        pytest.skip(f"torch.distributed with {backend} is not available")
    dist.init_process_group(backend, init_method=f"file://{tmp_path / 'store'}", rank=0,
                            world_size=1)
    try:
        torch.manual_seed(7)
        plain = nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.ReLU(),
                              nn.Conv2d(4, 4, 21, padding=10, groups=4)).to(device)
        model = fftconv.nn.convert(
            nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.ReLU(),
                          nn.Conv2d(4, 4, 21, padding=10, groups=4))).to(device)
        model.load_state_dict(plain.state_dict())
        ddp = DDP(model, device_ids=[0] if device == "cuda" else None)
        x = torch.randn(3, 2, 40, 40, device=device)
        ddp(x).square().mean().backward()
        plain(x).square().mean().backward()
        for p, q in zip(model.parameters(), plain.parameters()):
            assert rel_l2(p.grad, q.grad) <= 1e-5
    finally:
        dist.destroy_process_group()


# ---- threads -------------------------------------------------------------------------------------

@pytest.mark.parametrize("device", DEVICES)
def test_threads_share_the_plan_cache(device):
    """Eight threads call one cache at once (plans built and found concurrently, the GIL released
    inside the call); every result is right."""
    import contextlib
    import threading

    cache_of(device).clear()
    sizes = [(24, 9), (30, 11), (28, 15), (24, 9)]
    errors = []

    def work(i):
        try:
            for j in range(6):
                h, r = sizes[(i + j) % len(sizes)]
                # On the GPU each thread has its own stream (inputs made on it too).
                stream = torch.cuda.Stream() if device == "cuda" else None
                with torch.cuda.stream(stream) if stream else contextlib.nullcontext():
                    x = torch.randn(2, 2, h, h, device=device)
                    w = torch.randn(2, 1, r, r, device=device)
                    y = fftconv.conv2d(x, w, padding=r // 2, groups=2, algo="fft")
                if stream:
                    stream.synchronize()
                e = rel_l2(y, F.conv2d(x.double(), w.double(), padding=r // 2, groups=2))
                if e > 1e-5:
                    errors.append(f"thread {i} call {j}: rel-L2 {e:.3g}")
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(f"thread {i}: {exc!r}")

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert cache_of(device).size == 3


# ---- separable filters ---------------------------------------------------------------------------

def _gaussian(k, sigma, channels, device):
    t = torch.arange(k, dtype=torch.float64) - (k - 1) / 2
    g = torch.exp(-t * t / (2 * sigma * sigma))
    g = g / g.sum()
    return (g[:, None] * g[None, :]).float().expand(channels, 1, k, k).contiguous().to(device)


@needs_cuda
@pytest.mark.parametrize("algo", ["auto", "separable"])
def test_frozen_gaussian_runs_as_one_dimensional_passes(algo):
    x = torch.randn(4, 2, 96, 96, device="cuda", requires_grad=True)
    w = _gaussian(45, 7.0, 2, "cuda")  # frozen, rank 1
    for _ in range(3):  # auto keeps it from the second call on, separable from the first
        x.grad = None
        y = fftconv.conv2d(x, w, padding=22, groups=2, algo=algo)
        y.square().sum().backward()
        xd = x.detach().double().requires_grad_()
        yd = F.conv2d(xd, w.double(), padding=22, groups=2)
        yd.square().sum().backward()
        assert rel_l2(y, yd) <= 1e-5
        assert rel_l2(x.grad, xd.grad) <= 1e-5


@needs_cuda
def test_separable_needs_a_frozen_low_rank_filter():
    x = torch.randn(1, 1, 40, 40, device="cuda")
    trained = torch.randn(1, 1, 9, 9, device="cuda", requires_grad=True)
    with pytest.raises(RuntimeError, match="kept filter only"):
        fftconv.conv2d(x, trained, padding=4, algo="separable")
    full_rank = torch.randn(1, 1, 9, 9, device="cuda")
    with pytest.raises(RuntimeError, match="rank 4 or less"):
        fftconv.conv2d(x, full_rank, padding=4, algo="separable")


# ---- a training step's filter spectrum -----------------------------------------------------------

spectra = fftconv.backends.filter_spectra


def grads_f64(x, w, g, padding):
    xd = x.detach().double().requires_grad_()
    wd = w.detach().double().requires_grad_()
    F.conv2d(xd, wd, padding=padding).backward(g.double())
    return xd.grad, wd.grad


@pytest.mark.parametrize("device", DEVICES)
def test_training_step_transforms_the_weight_once(device):
    assert spectra.enabled and spectra.size == 0
    x = torch.randn(2, 3, 30, 26, device=device, requires_grad=True)
    w = torch.randn(4, 3, 15, 13, device=device, requires_grad=True)
    g = torch.randn(2, 4, 30, 26, device=device)
    for step in range(3):
        y = fftconv.conv2d(x, w, padding=(7, 6), algo="fft")
        assert spectra.size == 1 and spectra.bytes > 0, "the node holds the weight's spectrum"
        y.backward(g)
        assert spectra.size == 0, "freed with the node's saved tensors"
        dx, dw = grads_f64(x, w, g, (7, 6))
        assert rel_l2(x.grad, dx) <= 1e-5 and rel_l2(w.grad, dw) <= 1e-5, f"step {step}"
        x.grad = None
        w.grad = None
        with torch.no_grad():
            w.mul_(0.5).add_(0.25)  # an optimizer step


@pytest.mark.parametrize("device", DEVICES)
def test_backward_data_reads_the_forward_calls_spectrum(device):
    # Through .data the values change without the version counter, so the backward-data call
    # still takes the spectrum its forward call wrote: dx is that of the forward's weights, which
    # shows it did not transform the weight again. The next forward sees the new values.
    x = torch.randn(1, 2, 24, 24, device=device, requires_grad=True)
    w = torch.randn(2, 2, 11, 11, device=device, requires_grad=True)
    w_forward = w.detach().clone()
    g = torch.randn(1, 2, 24, 24, device=device)
    y = fftconv.conv2d(x, w, padding=5, algo="fft")
    w.data.copy_(torch.randn_like(w))
    y.backward(g)
    dx, _ = grads_f64(x, w_forward, g, 5)
    assert rel_l2(x.grad, dx) <= 1e-5
    y = fftconv.conv2d(x.detach(), w, padding=5, algo="fft")
    assert rel_l2(y, F.conv2d(x.detach().double(), w.detach().double(), padding=5)) <= 1e-5


@pytest.mark.parametrize("device", DEVICES)
def test_views_of_one_weight_keep_their_own_spectra(device):
    # A square kernel and its transpose share storage, data pointer, version and shape.
    x = torch.randn(1, 3, 20, 20, device=device, requires_grad=True)
    w = torch.randn(3, 3, 9, 9, device=device, requires_grad=True)
    wt = w.transpose(2, 3)
    g = torch.randn(1, 3, 20, 20, device=device)
    y = fftconv.conv2d(x, w, padding=4, algo="fft") + fftconv.conv2d(x, wt, padding=4, algo="fft")
    y.backward(g)
    xd = x.detach().double().requires_grad_()
    wd = w.detach().double()
    (F.conv2d(xd, wd, padding=4) + F.conv2d(xd, wd.transpose(2, 3), padding=4)).backward(g.double())
    assert rel_l2(x.grad, xd.grad) <= 1e-5


@pytest.mark.parametrize("device", DEVICES)
def test_no_spectrum_outside_training_or_when_off(device):
    x = torch.randn(1, 2, 20, 20, device=device)
    w = torch.randn(2, 2, 9, 9, device=device, requires_grad=True)
    y = fftconv.conv2d(x, w, padding=4, algo="fft")  # the input needs no gradient: no dx to come
    assert spectra.size == 0
    x.requires_grad_()
    with torch.no_grad():
        fftconv.conv2d(x, w, padding=4, algo="fft")
    assert spectra.size == 0
    old_limit = spectra.max_bytes
    try:
        spectra.max_bytes = 1024  # below one spectrum: none written, and the step is still right
        y = fftconv.conv2d(x, w, padding=4, algo="fft")
        assert spectra.size == 0
        spectra.max_bytes = old_limit
        spectra.enabled = False
        y = fftconv.conv2d(x, w, padding=4, algo="fft")
        assert spectra.size == 0
        y.backward(torch.ones_like(y))
        dx, _ = grads_f64(x, w, torch.ones_like(y), 4)
        assert rel_l2(x.grad, dx) <= 1e-5
    finally:
        spectra.max_bytes = old_limit
        spectra.enabled = True
    with pytest.raises(ValueError):
        spectra.max_bytes = -1
    assert "max_bytes" in repr(spectra)


def test_double_backward_with_a_spectrum():
    x = torch.randn(1, 2, 16, 16, dtype=torch.float32, requires_grad=True)
    w = torch.randn(2, 2, 7, 7, dtype=torch.float32, requires_grad=True)
    y = fftconv.conv2d(x, w, padding=3, algo="fft")
    (gx,) = torch.autograd.grad(y.square().sum(), x, create_graph=True)
    gx.square().sum().backward()
    xd = x.detach().double().requires_grad_()
    wd = w.detach().double().requires_grad_()
    (gxd,) = torch.autograd.grad(F.conv2d(xd, wd, padding=3).square().sum(), xd, create_graph=True)
    gxd.square().sum().backward()
    assert rel_l2(gx, gxd) <= 1e-5 and rel_l2(w.grad, wd.grad) <= 1e-5
