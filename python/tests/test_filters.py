"""fftconv.filters against kornia's definitions: border modes, even and odd kernels, batches of
kernels. Each case is checked against F.pad + a float64 depthwise F.conv2d, and against kornia
itself where it is installed."""
import pytest
import torch
import torch.nn.functional as F

from fftconv import filters
from conftest import DEVICES, TOL, rel_l2

try:
    import kornia
except ImportError:  # pragma: no cover - optional
    kornia = None

BORDERS = ["constant", "reflect", "replicate", "circular"]


def reference(input, kernel, border_type, padding="same"):
    """Depthwise float64 correlation of every channel with its image's kernel."""
    b, c, h, w = input.shape
    kh, kw = kernel.shape[-2:]
    x = input.double()
    if padding == "same":
        x = F.pad(x, [(kw - 1) // 2, kw // 2, (kh - 1) // 2, kh // 2], mode=border_type)
    k = kernel.double().to(input.device).expand(b, kh, kw)
    out = [F.conv2d(x[i:i + 1], k[i].expand(c, 1, kh, kw), groups=c) for i in range(b)]
    return torch.cat(out)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("border_type", BORDERS)
@pytest.mark.parametrize("ksize", [(15, 15), (16, 9), (45, 45)])
def test_filter2d(device, border_type, ksize):
    x = torch.randn(2, 3, 64, 50, device=device)
    kernel = torch.randn(1, *ksize, device=device)
    got = filters.filter2d(x, kernel, border_type)
    assert got.shape == x.shape
    assert rel_l2(got, reference(x, kernel, border_type)) <= TOL[torch.float32]
    if kornia is not None:
        assert rel_l2(got, kornia.filters.filter2d(x, kernel, border_type)) <= TOL[torch.float32]


@pytest.mark.parametrize("device", DEVICES)
def test_filter2d_per_image_kernels_valid_normalized_and_conv(device):
    x = torch.randn(3, 2, 40, 40, device=device)
    kernel = torch.randn(3, 17, 17, device=device)
    got = filters.filter2d(x, kernel, padding="valid")
    assert got.shape == (3, 2, 24, 24)
    assert rel_l2(got, reference(x, kernel, "constant", "valid")) <= TOL[torch.float32]
    normed = kernel / kernel.abs().sum((-2, -1), keepdim=True)
    assert rel_l2(filters.filter2d(x, kernel, normalized=True),
                  reference(x, normed, "reflect")) <= TOL[torch.float32]
    assert rel_l2(filters.filter2d(x, kernel, behaviour="conv"),
                  reference(x, kernel.flip((-2, -1)), "reflect")) <= TOL[torch.float32]
    if kornia is not None:
        for kw in ({"padding": "valid"}, {"normalized": True}, {"behaviour": "conv"}):
            assert rel_l2(filters.filter2d(x, kernel, **kw),
                          kornia.filters.filter2d(x, kernel, **kw)) <= TOL[torch.float32]


def test_gaussian_kernels_are_kornias():
    for size, sigma in ((45, 7.0), (8, 1.5), (1, 2.0)):
        k = filters.get_gaussian_kernel1d(size, sigma, dtype=torch.float64)[0]
        x = torch.arange(size, dtype=torch.float64) - size // 2 + (0.5 if size % 2 == 0 else 0.0)
        g = torch.exp(-x ** 2 / (2 * sigma ** 2))
        assert torch.allclose(k, g / g.sum(), rtol=0, atol=1e-15)
        if kornia is not None and size % 2 == 1:  # kornia takes odd sizes only
            kk = kornia.filters.get_gaussian_kernel1d(size, sigma, dtype=torch.float64)
            assert torch.allclose(k, kk.reshape(-1), rtol=0, atol=1e-12)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("border_type", BORDERS)
def test_gaussian_blur2d(device, border_type):
    x = torch.rand(2, 3, 96, 96, device=device)
    got = filters.gaussian_blur2d(x, (45, 45), (7.0, 7.0), border_type)
    kernel = filters.get_gaussian_kernel2d((45, 45), (7.0, 7.0), dtype=torch.float64)
    assert rel_l2(got, reference(x, kernel, border_type)) <= TOL[torch.float32]
    module = filters.GaussianBlur2d((45, 45), (7.0, 7.0), border_type)
    assert rel_l2(module(x), got) <= 1e-6
    if kornia is not None:
        ref = kornia.filters.gaussian_blur2d(x, (45, 45), (7.0, 7.0), border_type)
        assert rel_l2(got, ref) <= TOL[torch.float32]


@pytest.mark.parametrize("device", DEVICES)
def test_gaussian_blur2d_per_image_sigma_and_even_size(device):
    x = torch.rand(2, 1, 50, 60, device=device)
    sigma = torch.tensor([[2.0, 3.0], [5.0, 1.5]], device=device)
    got = filters.gaussian_blur2d(x, (20, 15), sigma)
    kernel = filters.get_gaussian_kernel2d((20, 15), sigma.double())
    assert rel_l2(got, reference(x, kernel, "reflect")) <= TOL[torch.float32]
    if kornia is not None:  # kornia takes odd sizes only
        assert rel_l2(filters.gaussian_blur2d(x, (21, 15), sigma),
                      kornia.filters.gaussian_blur2d(x, (21, 15), sigma)) <= TOL[torch.float32]


def test_gaussian_weights_are_reused_between_calls():
    x = torch.rand(1, 2, 64, 64)
    filters.gaussian_blur2d(x, 31, 5.0)
    n = len(filters._KERNELS)
    filters.gaussian_blur2d(x, 31, 5.0)
    assert len(filters._KERNELS) == n


@pytest.mark.parametrize("call,match", [
    (lambda: filters.filter2d(torch.rand(1, 1, 9, 9), torch.rand(1, 3, 3), "mirror"), "border_type"),
    (lambda: filters.filter2d(torch.rand(1, 9, 9), torch.rand(1, 3, 3)), "B, C, H, W"),
    (lambda: filters.filter2d(torch.rand(2, 1, 9, 9), torch.rand(3, 3, 3)), "kernel batch"),
    (lambda: filters.filter2d(torch.rand(1, 1, 9, 9), torch.rand(1, 3, 3), padding="full"), "padding"),
    (lambda: filters.gaussian_blur2d(torch.rand(1, 1, 9, 9), 5, -1.0), "sigma"),
    (lambda: filters.gaussian_blur2d(torch.rand(1, 1, 9, 9), 0, 1.0), "kernel_size"),
])
def test_filter_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()
