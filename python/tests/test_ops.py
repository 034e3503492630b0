"""The three operators against PyTorch in float64: opcheck, gradients, a random sweep, errors."""
import random

import pytest
import torch
import torch.nn.functional as F

import fftconv
from conftest import DEVICES, HAS_CUDA, TOL, needs_cuda, rel_l2

ops = torch.ops.fftconv


def ref_forward(x, w, b, stride, padding, dilation, groups):
    return F.conv2d(x.cpu().double(), w.cpu().double(), None if b is None else b.cpu().double(),
                    stride, padding, dilation, groups)


def ref_input_grad(dy, w, input_size, stride, padding, dilation, groups):
    return torch.nn.grad.conv2d_input(list(input_size), w.cpu().double(), dy.cpu().double(), stride,
                                      padding, dilation, groups)


def ref_weight_grad(dy, x, weight_size, stride, padding, dilation, groups):
    return torch.nn.grad.conv2d_weight(x.cpu().double(), list(weight_size), dy.cpu().double(),
                                       stride, padding, dilation, groups)


def dtypes_for(device):
    return [torch.float32] + ([torch.float16, torch.bfloat16] if device == "cuda" else [])


# ---- opcheck -------------------------------------------------------------------------------------

OPCHECK_CASES = [
    # (n, c, h, w, k, r, s, stride, padding, dilation, groups, bias)
    (2, 3, 17, 19, 4, 7, 5, (1, 1), (3, 2), (1, 1), 1, True),
    (1, 4, 20, 16, 4, 9, 9, (2, 1), (4, 4), (1, 1), 2, False),
    (2, 2, 24, 24, 2, 5, 5, (1, 2), (0, 3), (2, 1), 2, True),
    (1, 3, 15, 15, 6, 3, 3, (1, 1), (1, 1), (1, 1), 3, True),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", OPCHECK_CASES)
@pytest.mark.parametrize("grads", ["none", "input", "weight", "all"])
def test_opcheck(device, case, grads):
    n, c, h, w, k, r, s, stride, padding, dilation, groups, has_bias = case
    for dtype in dtypes_for(device):
        x = torch.randn(n, c, h, w, device=device, dtype=dtype)
        wt = torch.randn(k, c // groups, r, s, device=device, dtype=dtype)
        b = torch.randn(k, device=device, dtype=dtype) if has_bias else None
        if grads in ("input", "all"):
            x.requires_grad_()
        if grads in ("weight", "all"):
            wt.requires_grad_()
            if b is not None:
                b.requires_grad_()
        args = (x, wt, b, list(stride), list(padding), list(dilation), groups, "auto")
        torch.library.opcheck(ops.conv2d.default, args)
        y = ref_forward(x.detach(), wt.detach(), None, stride, padding, dilation, groups)
        dy = torch.randn(y.shape, device=device, dtype=dtype, requires_grad=grads == "all")
        torch.library.opcheck(ops.conv2d_input_grad.default,
                              (dy, wt, list(x.shape), list(stride), list(padding), list(dilation),
                               groups, "auto"))
        torch.library.opcheck(ops.conv2d_weight_grad.default,
                              (dy, x, list(wt.shape), list(stride), list(padding), list(dilation),
                               groups, "auto"))


# ---- gradients -----------------------------------------------------------------------------------

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("algo", ["auto", "fft", "direct"])
def test_gradients_match_torch_in_float64(device, algo):
    x = torch.randn(2, 4, 30, 27, device=device, requires_grad=True)
    w = torch.randn(6, 2, 11, 9, device=device, requires_grad=True)
    b = torch.randn(6, device=device, requires_grad=True)
    y = fftconv.conv2d(x, w, b, stride=(2, 1), padding=(5, 3), dilation=(1, 2), groups=2, algo=algo)
    g = torch.randn_like(y)
    y.backward(g)
    xd, wd, bd = (t.detach().cpu().double().requires_grad_() for t in (x, w, b))
    yd = F.conv2d(xd, wd, bd, stride=(2, 1), padding=(5, 3), dilation=(1, 2), groups=2)
    yd.backward(g.cpu().double())
    assert rel_l2(y, yd) <= TOL[torch.float32]
    assert rel_l2(x.grad, xd.grad) <= TOL[torch.float32]
    assert rel_l2(w.grad, wd.grad) <= TOL[torch.float32]
    assert rel_l2(b.grad, bd.grad) <= TOL[torch.float32]


def assert_matches_float64(x, w, y, g, **conv):
    """y = conv2d(x, w, **conv) and, after y.backward(g), x.grad and w.grad within fp32's
    tolerance of F.conv2d's in float64 on the CPU."""
    xd, wd = (t.detach().cpu().double().requires_grad_() for t in (x, w))
    yd = F.conv2d(xd, wd, **conv)
    yd.backward(g.cpu().double())
    assert rel_l2(y, yd) <= TOL[torch.float32]
    assert rel_l2(x.grad, xd.grad) <= TOL[torch.float32]
    assert rel_l2(w.grad, wd.grad) <= TOL[torch.float32]


@needs_cuda
def test_implicit_gemm_runs_the_weight_gradient():
    # Dense channels under a 3x3 filter: the weight gradient through the implicit-GEMM path
    # (3xTF32 on the tensor cores) within fp32's tolerance of float64; Auto runs the other passes.
    x = torch.randn(2, 128, 20, 20, device="cuda", requires_grad=True)
    w = torch.randn(128, 128, 3, 3, device="cuda", requires_grad=True)
    y = fftconv.conv2d(x, w, padding=1, algo="implicit_gemm")
    g = torch.randn_like(y)
    try:
        y.backward(g)
    except RuntimeError as e:
        if "was not built" in str(e):
            pytest.skip(str(e))
        raise
    assert_matches_float64(x, w, y, g, padding=1)
    lines = fftconv.backends.plan_cache.describe()
    assert any("algo=implicit_gemm" in line and "pass=wgrad" in line for line in lines), lines


@needs_cuda
def test_direct_algo_runs_every_pass():
    # One 96x96 heatmap with a 45x45 filter: the direct path's row, every pass through it, all
    # within fp32's tolerance of float64.
    x = torch.randn(1, 1, 96, 96, device="cuda", requires_grad=True)
    w = torch.randn(1, 1, 45, 45, device="cuda", requires_grad=True)
    y = fftconv.conv2d(x, w, padding=22, algo="direct")
    g = torch.randn_like(y)
    y.backward(g)
    assert_matches_float64(x, w, y, g, padding=22)
    lines = fftconv.backends.plan_cache.describe()
    assert any("algo=direct" in line and "pass=fwd" in line for line in lines), lines
    assert any("algo=direct" in line and "pass=dgrad" in line for line in lines), lines
    assert any("algo=direct" in line and "pass=wgrad" in line for line in lines), lines


@pytest.mark.parametrize("device", DEVICES)
def test_double_backward(device):
    x = torch.randn(1, 2, 14, 14, device=device, dtype=torch.float64, requires_grad=True)
    w = torch.randn(2, 2, 5, 5, device=device, dtype=torch.float64, requires_grad=True)
    torch.autograd.gradcheck(lambda a, b: fftconv.conv2d(a, b, padding=2), (x, w))
    torch.autograd.gradgradcheck(lambda a, b: fftconv.conv2d(a, b, padding=2), (x, w))
    # The engine's own fp32 path: a gradient penalty's second derivative against float64.
    xf, wf = (t.detach().float().requires_grad_() for t in (x, w))
    gx, = torch.autograd.grad(fftconv.conv2d(xf, wf, padding=2).square().sum(), xf,
                              create_graph=True)
    gx.square().sum().backward()
    xd, wd = (t.detach().requires_grad_() for t in (x, w))
    gxd, = torch.autograd.grad(F.conv2d(xd, wd, padding=2).square().sum(), xd, create_graph=True)
    gxd.square().sum().backward()
    assert rel_l2(wf.grad, wd.grad) <= TOL[torch.float32]


@pytest.mark.parametrize("need", ["input", "weight", "both"])
def test_only_needed_tensors_are_saved(need):
    x = torch.randn(1, 2, 16, 16, requires_grad=need in ("input", "both"))
    w = torch.randn(3, 2, 5, 5, requires_grad=need in ("weight", "both"))
    saved = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t):
        y = fftconv.conv2d(x, w, padding=2)
    ptrs = {t.data_ptr() for t in saved if t.numel()}
    assert (w.data_ptr() in ptrs) == (need in ("input", "both"))  # dx needs w
    assert (x.data_ptr() in ptrs) == (need in ("weight", "both"))  # dw needs x
    y.sum().backward()
    assert (x.grad is not None) == x.requires_grad and (w.grad is not None) == w.requires_grad


# ---- the random sweep ----------------------------------------------------------------------------

def random_case(rng):
    groups = rng.choice([1, 1, 2, 3])
    depthwise = rng.random() < 0.25
    cpg = 1 if depthwise else rng.randint(1, 3)
    kpg = 1 if depthwise else rng.randint(1, 3)
    c, k = groups * cpg, groups * kpg
    dil = (rng.choice([1, 1, 2]), rng.choice([1, 1, 2]))
    r, s = rng.randint(1, 17), rng.randint(1, 17)
    pad = (rng.randint(0, r // 2 + 1), rng.randint(0, s // 2 + 1))
    h = rng.randint(max(1, (r - 1) * dil[0] + 1 - 2 * pad[0]), 40)
    w = rng.randint(max(1, (s - 1) * dil[1] + 1 - 2 * pad[1]), 40)
    stride = (rng.randint(1, 3), rng.randint(1, 3))
    return rng.randint(1, 3), c, h, w, k, r, s, stride, pad, dil, groups


@pytest.mark.parametrize("device", DEVICES)
def test_random_sweep_three_passes(device):
    rng = random.Random(1234)
    worst = {}
    for i in range(200):
        n, c, h, w, k, r, s, stride, pad, dil, groups = random_case(rng)
        dtype = dtypes_for(device)[i % len(dtypes_for(device))]
        algo = ["auto", "fft"][i % 2]
        x = torch.randn(n, c, h, w, device=device, dtype=dtype)
        wt = torch.randn(k, c // groups, r, s, device=device, dtype=dtype)
        b = torch.randn(k, device=device, dtype=dtype) if i % 3 else None
        what = f"case {i}: x {tuple(x.shape)} w {tuple(wt.shape)} s{stride} p{pad} d{dil} g{groups} {dtype} {algo}"
        y = ops.conv2d(x, wt, b, list(stride), list(pad), list(dil), groups, algo)
        yr = ref_forward(x, wt, b, stride, pad, dil, groups)
        assert y.shape == yr.shape and y.dtype == dtype, what
        dy = torch.randn(y.shape, device=device, dtype=dtype)
        dx = ops.conv2d_input_grad(dy, wt, list(x.shape), list(stride), list(pad), list(dil), groups, algo)
        dw = ops.conv2d_weight_grad(dy, x, list(wt.shape), list(stride), list(pad), list(dil), groups, algo)
        for name, got, ref in (
                ("fwd", y, yr),
                ("dgrad", dx, ref_input_grad(dy, wt, x.shape, stride, pad, dil, groups)),
                ("wgrad", dw, ref_weight_grad(dy, x, wt.shape, stride, pad, dil, groups))):
            e = rel_l2(got, ref)
            assert e <= TOL[dtype], f"{what} {name}: rel-L2 {e:.3g}"
            worst[(name, dtype)] = max(worst.get((name, dtype), 0.0), e)
    print({f"{p}/{t}": f"{e:.2e}" for (p, t), e in worst.items()})


@pytest.mark.parametrize("device", DEVICES)
def test_float64_goes_to_aten(device):
    x = torch.randn(1, 2, 12, 12, device=device, dtype=torch.float64)
    w = torch.randn(3, 2, 5, 5, device=device, dtype=torch.float64)
    assert rel_l2(fftconv.conv2d(x, w, padding=1), F.conv2d(x, w, padding=1)) <= 1e-12


def test_small_kernels_on_the_cpu_go_to_aten():
    """Auto on the CPU gives filters of dilated extent <= 11 to PyTorch's own convolution,
    which is faster than the host FFT there: the very same result as F.conv2d."""
    x = torch.randn(2, 4, 20, 20)
    for w, kw in ((torch.randn(6, 4, 3, 3), dict(padding=1)),
                  (torch.randn(6, 4, 11, 1), dict(padding=(5, 0))),
                  (torch.randn(6, 2, 4, 4), dict(padding=4, dilation=3, groups=2))):
        b = torch.randn(6)
        assert torch.equal(fftconv.conv2d(x, w, b, **kw), F.conv2d(x, w, b, **kw)), kw


# ---- F.conv2d's argument forms and errors --------------------------------------------------------

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kernel,dilation", [((7, 7), 1), ((6, 5), 1), ((4, 8), (2, 1))])
def test_padding_same_and_valid(device, kernel, dilation):
    x = torch.randn(2, 3, 21, 18, device=device)
    w = torch.randn(4, 3, *kernel, device=device)
    for padding in ("same", "valid"):
        got = fftconv.conv2d(x, w, padding=padding, dilation=dilation)
        ref = F.conv2d(x, w, padding=padding, dilation=dilation)
        assert got.shape == ref.shape
        assert rel_l2(got, ref) <= TOL[torch.float32]


@pytest.mark.parametrize("device", DEVICES)
def test_unbatched_and_argument_forms(device):
    x = torch.randn(3, 20, 20, device=device)
    w = torch.randn(2, 3, 9, 9, device=device)
    got = fftconv.conv2d(x, w, None, 1, 4, 1, 1)
    assert got.shape == (2, 20, 20)
    assert rel_l2(got, F.conv2d(x, w, padding=4)) <= TOL[torch.float32]
    got = fftconv.conv2d(x[None], w, stride=(2,), padding=[4, 3], dilation=(1, 1))
    assert rel_l2(got, F.conv2d(x[None], w, stride=2, padding=(4, 3))) <= TOL[torch.float32]


def test_empty_batch():
    x = torch.randn(0, 2, 16, 16, requires_grad=True)
    w = torch.randn(3, 2, 5, 5, requires_grad=True)
    y = fftconv.conv2d(x, w, padding=2)
    assert y.shape == (0, 3, 16, 16)
    y.sum().backward()
    assert x.grad.shape == x.shape and torch.all(w.grad == 0)


@pytest.mark.parametrize("call,error,match", [
    (lambda: fftconv.conv2d(torch.randn(1, 3, 9, 9), torch.randn(2, 2, 3, 3)), RuntimeError,
     "channels"),
    (lambda: fftconv.conv2d(torch.randn(1, 4, 9, 9), torch.randn(3, 2, 3, 3), groups=2),
     RuntimeError, "divisible by groups"),
    (lambda: fftconv.conv2d(torch.randn(1, 1, 4, 4), torch.randn(1, 1, 7, 7)), RuntimeError,
     "larger than the padded input"),
    (lambda: fftconv.conv2d(torch.randn(1, 1, 9, 9), torch.randn(1, 1, 3, 3, dtype=torch.float16)),
     RuntimeError, "same dtype"),
    (lambda: fftconv.conv2d(torch.ones(1, 1, 9, 9, dtype=torch.int64),
                            torch.ones(1, 1, 3, 3, dtype=torch.int64)), RuntimeError,
     "floating-point"),
    (lambda: fftconv.conv2d(torch.randn(1, 1, 9, 9), torch.randn(1, 1, 3, 3), torch.randn(2)),
     RuntimeError, "bias of 1 elements"),
    (lambda: fftconv.conv2d(torch.randn(9, 9), torch.randn(1, 1, 3, 3)), RuntimeError,
     "3-D \\(unbatched\\) or 4-D"),
    (lambda: fftconv.conv2d(torch.randn(1, 1, 9, 9), torch.randn(1, 1, 3, 3), padding="full"),
     ValueError, "invalid padding string"),
    (lambda: fftconv.conv2d(torch.randn(1, 1, 9, 9), torch.randn(1, 1, 3, 3), padding="same",
                            stride=2), RuntimeError, "strided"),
    (lambda: fftconv.conv2d(torch.randn(1, 1, 9, 9), torch.randn(1, 1, 3, 3), algo="winograd"),
     ValueError, "unknown algo"),
    (lambda: fftconv.conv2d(torch.randn(1, 1, 9, 9), torch.randn(1, 1, 3, 3), stride=0),
     ValueError, "stride must be positive"),
    (lambda: ops.conv2d(torch.randn(1, 1, 9, 9), torch.randn(1, 1, 3, 3), None, [1, 1], [0, 0],
                        [1, 1], 1, "winograd"), ValueError, "unknown algo"),
    (lambda: ops.conv2d_input_grad(torch.randn(1, 1, 5, 5), torch.randn(1, 1, 3, 3),
                                   [1, 1, 9, 9], [1, 1], [0, 0], [1, 1], 1, "auto"),
     RuntimeError, "does not match the output"),
])
def test_errors_say_what_is_wrong(call, error, match):
    with pytest.raises(error, match=match):
        call()


@needs_cuda
def test_device_mismatch():
    with pytest.raises(RuntimeError, match="same device"):
        fftconv.conv2d(torch.randn(1, 1, 9, 9, device="cuda"), torch.randn(1, 1, 3, 3))


@needs_cuda
def test_other_device_index_and_current_stream():
    # The op runs on its input's device whatever the current device is, on the current stream.
    x = torch.randn(2, 3, 40, 40, device="cuda")
    w = torch.randn(4, 3, 15, 15, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        y = fftconv.conv2d(x, w, padding=7, algo="fft")
    torch.cuda.current_stream().wait_stream(side)
    assert rel_l2(y, ref_forward(x, w, None, 1, 7, 1, 1)) <= TOL[torch.float32]


@pytest.mark.skipif(not HAS_CUDA or torch.cuda.device_count() < 2, reason="needs two CUDA devices")
def test_plans_are_per_device():
    for d in (0, 1):
        x = torch.randn(1, 2, 32, 32, device=f"cuda:{d}")
        w = torch.randn(2, 2, 17, 17, device=f"cuda:{d}")
        assert rel_l2(fftconv.conv2d(x, w, padding=8), ref_forward(x, w, None, 1, 8, 1, 1)) <= 1e-5
