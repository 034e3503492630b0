"""What the tests run against: skips with the reason when torch or the extension is missing."""
import pytest

import conftest


def test_package_is_importable():
    if conftest.SKIP_REASON:
        pytest.skip(conftest.SKIP_REASON)
    import torch

    import fftconv
    info = fftconv.backends.build_info
    print(f"fftconv {fftconv.__version__} from {fftconv.__file__}, torch {torch.__version__}, "
          f"build {info}, CUDA devices {torch.cuda.device_count()}")
    assert hasattr(torch.ops.fftconv, "conv2d")
    assert hasattr(torch.ops.fftconv, "conv2d_input_grad")
    assert hasattr(torch.ops.fftconv, "conv2d_weight_grad")
