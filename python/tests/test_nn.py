"""fftconv.nn.FFTConv2d and convert()."""
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import fftconv
from conftest import DEVICES, TOL, rel_l2


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("padding_mode", ["zeros", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("padding", [7, "same", (3, 5)])
def test_fftconv2d_is_conv2d(device, padding_mode, padding):
    torch.manual_seed(1)
    ref = nn.Conv2d(4, 6, 15, padding=padding, padding_mode=padding_mode, groups=2).to(device)
    mod = fftconv.nn.FFTConv2d(4, 6, 15, padding=padding, padding_mode=padding_mode, groups=2,
                               device=device)
    assert isinstance(mod, nn.Conv2d)
    assert mod.state_dict().keys() == ref.state_dict().keys()
    mod.load_state_dict(ref.state_dict())
    x = torch.randn(2, 4, 33, 30, device=device)
    assert rel_l2(mod(x), ref(x)) <= TOL[torch.float32]


def test_algo_argument():
    assert "algo='fft'" in repr(fftconv.nn.FFTConv2d(1, 1, 17, algo="fft"))
    with pytest.raises(ValueError, match="unknown algo"):
        fftconv.nn.FFTConv2d(1, 1, 17, algo="winograd")


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.body = nn.Sequential(nn.Conv2d(8, 8, 31, padding=15, groups=8), nn.ReLU(),
                                  nn.Conv2d(8, 8, (5, 21), padding=(2, 10)))
        self.head = nn.Conv2d(8, 2, 15, padding=7, bias=False)
        self.up = nn.ConvTranspose2d(2, 2, 17)

    def forward(self, x):
        return self.up(self.head(self.body(self.stem(x))))


def test_convert_swaps_large_kernels_in_place_and_shares_parameters():
    net = Net()
    x = torch.randn(1, 3, 40, 40)
    before = net(x)
    params = {id(p) for p in net.parameters()}
    keys = net.state_dict().keys()
    out = fftconv.nn.convert(net, min_kernel=15)
    assert out is net
    kinds = {name: type(m).__name__ for name, m in net.named_modules()}
    assert kinds["stem"] == "Conv2d"
    assert kinds["body.0"] == "FFTConv2d" and kinds["body.2"] == "FFTConv2d"
    assert kinds["head"] == "FFTConv2d" and kinds["up"] == "ConvTranspose2d"
    assert {id(p) for p in net.parameters()} == params
    assert net.state_dict().keys() == keys
    assert rel_l2(net(x), before) <= TOL[torch.float32]
    # The optimizer of the original parameters trains the converted model.
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    w0 = net.head.weight.detach().clone()
    net(x).square().mean().backward()
    opt.step()
    assert not torch.equal(net.head.weight, w0)


def test_convert_a_single_conv_and_bad_arguments():
    conv = nn.Conv2d(1, 1, 21)
    assert isinstance(fftconv.nn.convert(conv), fftconv.nn.FFTConv2d)
    assert type(fftconv.nn.convert(nn.Conv2d(1, 1, 3))) is nn.Conv2d
    with pytest.raises(ValueError, match="min_kernel"):
        fftconv.nn.convert(conv, min_kernel=0)
