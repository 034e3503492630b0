"""padding_mode (nn.Conv2d's, fftconv.conv2d's and the operators'): the engine reads the input
through the border as F.pad would have padded it. Every pass against F.pad + F.conv2d in
float64, large kernels (the engine) and small ones (aten's bordered problem on the CPU), the
float64 path, opcheck, double backward, errors."""
import pytest
import torch
import torch.nn.functional as F

import fftconv
from conftest import DEVICES, TOL, capture_training_step, needs_cuda, rel_l2

ops = torch.ops.fftconv
MODES = ["reflect", "replicate", "circular"]

CASES = [
    # (n, c, h, w, k, r, s, stride, padding, dilation, groups)
    (2, 3, 24, 21, 4, 13, 11, (1, 1), (6, 5), (1, 1), 1),     # the engine (large kernel)
    (2, 4, 28, 28, 4, 15, 15, (1, 1), (7, 7), (1, 1), 4),     # depthwise
    (1, 2, 20, 17, 3, 5, 7, (2, 1), (3, 2), (1, 2), 1),       # stride, dilation
    (2, 3, 15, 15, 6, 3, 3, (1, 1), (1, 1), (1, 1), 3),       # small: aten on the CPU
]


def source(i, n, mode):
    """The element position i holds: mirrored or wrapped step by step, or clamped."""
    if mode == "replicate":
        return min(max(i, 0), n - 1)
    while i < 0 or i >= n:
        if mode == "circular":
            i = i + n if i < 0 else i - n
        else:
            i = -i if i < 0 else 2 * (n - 1) - i
    return i


def reference(x, w, b, mode, stride, padding, dilation, groups):
    """F.pad then F.conv2d in float64, with autograd through both."""
    xp = F.pad(x, [padding[1], padding[1], padding[0], padding[0]], mode=mode)
    return F.conv2d(xp, w, b, stride, 0, dilation, groups)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES)
def test_every_pass_matches_fpad(device, mode, case):
    n, c, h, w, k, r, s, stride, padding, dilation, groups = case
    x = torch.randn(n, c, h, w, device=device, requires_grad=True)
    wt = torch.randn(k, c // groups, r, s, device=device, requires_grad=True)
    b = torch.randn(k, device=device, requires_grad=True)
    y = fftconv.conv2d(x, wt, b, stride, padding, dilation, groups, padding_mode=mode)
    g = torch.randn_like(y)
    y.backward(g)
    xd, wd, bd = (t.detach().cpu().double().requires_grad_() for t in (x, wt, b))
    ref = reference(xd, wd, bd, mode, stride, padding, dilation, groups)
    ref.backward(g.cpu().double())
    tol = TOL[torch.float32]
    assert rel_l2(y, ref) <= tol
    assert rel_l2(x.grad, xd.grad) <= tol
    assert rel_l2(wt.grad, wd.grad) <= tol
    assert rel_l2(b.grad, bd.grad) <= tol


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("beyond", [False, True])
def test_float64_and_double_backward(device, mode, beyond):
    """float64 runs aten's bordered problem (F.pad's own pad and its backward within F.pad's
    limits, the border map beyond them); gradcheck and gradgradcheck hold through it."""
    h, w_, pad = (4, 3, (6, 5)) if beyond else (9, 8, (2, 1))
    x = torch.randn(1, 2, h, w_, device=device, dtype=torch.float64, requires_grad=True)
    w = torch.randn(2, 2, 5, 3, device=device, dtype=torch.float64, requires_grad=True)

    def f(x, w):
        return fftconv.conv2d(x, w, None, 1, pad, 1, 1, padding_mode=mode)

    assert torch.autograd.gradcheck(f, (x, w))
    assert torch.autograd.gradgradcheck(f, (x, w))
    rows = [source(i - pad[0], h, mode) for i in range(h + 2 * pad[0])]
    cols = [source(j - pad[1], w_, mode) for j in range(w_ + 2 * pad[1])]
    ref = F.conv2d(x.detach()[:, :, rows][:, :, :, cols], w.detach())
    assert rel_l2(f(x, w), ref) <= 1e-12


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("mode", MODES)
def test_opcheck(device, mode):
    x = torch.randn(2, 3, 19, 17, device=device, requires_grad=True)
    w = torch.randn(4, 3, 13, 9, device=device, requires_grad=True)
    geo = ([1, 1], [6, 4], [1, 1], 1, "auto", mode)
    torch.library.opcheck(ops.conv2d.default, (x, w, None) + geo)
    dy = torch.randn(2, 4, 19, 17, device=device)
    torch.library.opcheck(ops.conv2d_input_grad.default, (dy, w, list(x.shape)) + geo)
    torch.library.opcheck(ops.conv2d_weight_grad.default, (dy, x, list(w.shape)) + geo)


@pytest.mark.parametrize("device", DEVICES)
def test_padding_beyond_an_extent(device):
    """F.pad rejects reflect padding of a plane's extent or more; the engine mirrors again
    (circular wraps again): the same as padding twice within the limit."""
    x = torch.randn(1, 1, 6, 5, device=device)
    w = torch.randn(1, 1, 17, 15, device=device)
    for mode in MODES:
        y = fftconv.conv2d(x, w, padding=(8, 7), padding_mode=mode)
        rows = [source(i - 8, 6, mode) for i in range(6 + 16)]
        cols = [source(j - 7, 5, mode) for j in range(5 + 14)]
        xp = x.double().cpu()[:, :, rows][:, :, :, cols]
        ref = F.conv2d(xp, w.double().cpu())
        assert rel_l2(y, ref) <= TOL[torch.float32], mode


def test_unknown_padding_mode_is_an_error():
    x = torch.randn(1, 1, 8, 8)
    w = torch.randn(1, 1, 3, 3)
    with pytest.raises(ValueError, match="padding_mode"):
        fftconv.conv2d(x, w, padding=1, padding_mode="mirror")
    with pytest.raises(ValueError, match="padding_mode"):
        fftconv.conv2d(x.unsqueeze(0)[0], w, padding="same", padding_mode="mirror")
    with pytest.raises(ValueError, match="padding_mode"):
        ops.conv2d(x, w, None, [1, 1], [1, 1], [1, 1], 1, "auto", "wrap")


@pytest.mark.parametrize("device", DEVICES)
def test_same_padding_with_an_even_kernel(device):
    """'same' with an even extent pads the odd row and column by F.pad, as nn.Conv2d does."""
    x = torch.randn(2, 3, 16, 15, device=device)
    w = torch.randn(2, 3, 12, 13, device=device)
    for mode in MODES:
        y = fftconv.conv2d(x, w, padding="same", padding_mode=mode)
        conv = torch.nn.Conv2d(3, 2, (12, 13), padding="same", padding_mode=mode, bias=False)
        conv.weight.data.copy_(w.cpu())
        ref = conv.double()(x.double().cpu())
        assert y.shape == ref.shape
        assert rel_l2(y, ref) <= TOL[torch.float32], mode


@needs_cuda
def test_gaussian_blur_reads_the_border_on_load():
    """A kept Gaussian with a reflect border runs on the separable path, which applies the border
    as it loads: no padded copy, in the plan or in Python."""
    fftconv.backends.plan_cache.clear()
    img = torch.rand(4, 3, 96, 80, device="cuda")
    for _ in range(3):  # a frozen filter is kept from its second sight
        out = fftconv.filters.gaussian_blur2d(img, (45, 45), (7.0, 7.0), border_type="reflect")
    ref = reference(img.double().cpu(), fftconv.filters.get_gaussian_kernel2d(
        (45, 45), (7.0, 7.0), dtype=torch.float64)[:, None].expand(3, 1, 45, 45), None,
        "reflect", (1, 1), (22, 22), (1, 1), 3)
    assert rel_l2(out, ref) <= TOL[torch.float32]
    plans = "\n".join(fftconv.backends.plan_cache.describe())
    assert "border reflect on load" in plans, plans


@needs_cuda
@pytest.mark.parametrize("kernel", [3, 25])  # 3: cuDNN first (aten bordered); 25: the engine
def test_graph_capture_with_a_border(kernel):
    """Forward and backward of a bordered layer captured into a CUDA graph and replayed: the
    border map is built on the device (no host copy inside the capture)."""
    torch.manual_seed(7)
    model = fftconv.nn.FFTConv2d(3, 4, kernel, padding=kernel // 2, padding_mode="reflect").cuda()
    static_x = torch.randn(2, 3, 40, 36, device="cuda", requires_grad=True)
    static_g = torch.randn(2, 4, 40, 36, device="cuda")
    graph, static_y = capture_training_step(model, static_x, static_g, warmup=3)
    for _ in range(2):
        with torch.no_grad():
            static_x.copy_(torch.randn_like(static_x))
            static_g.copy_(torch.randn_like(static_g))
        graph.replay()
        torch.cuda.synchronize()
        xd = static_x.detach().double().cpu().requires_grad_()
        wd = model.weight.detach().double().cpu().requires_grad_()
        p = kernel // 2
        yd = reference(xd, wd, model.bias.detach().double().cpu(), "reflect", (1, 1), (p, p),
                       (1, 1), 1)
        yd.backward(static_g.double().cpu())
        assert rel_l2(static_y, yd) <= TOL[torch.float32]
        assert rel_l2(static_x.grad, xd.grad) <= TOL[torch.float32]
        assert rel_l2(model.weight.grad, wd.grad) <= TOL[torch.float32]
