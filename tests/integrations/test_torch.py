"""PyTorch CPU tensors: exact noise in place and Opacus' noise function; skipped when torch is
not installed (it is not part of any dpnoise extra)."""
import math

import numpy as np
import pytest

import dpnoise

torch = pytest.importorskip("torch", reason="torch is not installed")
from dpnoise.integrations import torch as dptorch  # noqa: E402


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gaussian_noise_in_place(dtype):
    t = torch.zeros(100_000, dtype=getattr(torch, dtype))
    ptr = t.data_ptr()
    out = dptorch.gaussian_noise_(t, 2.0, dpnoise.default_rng(1), allow_insecure=True)
    assert out is t and t.data_ptr() == ptr
    # sd within 2% (about 9 standard errors): false alarm < 1e-6
    assert abs(float(t.std()) / 2.0 - 1) < 0.02


def test_bad_tensors_are_refused():
    for bad, error in ((torch.zeros(4, dtype=torch.int64), TypeError), (torch.zeros(4, 4).t(), ValueError),
                       (torch.zeros(4, requires_grad=True), ValueError), (np.zeros(4), TypeError)):
        with pytest.raises(error):
            dptorch.gaussian_noise_(bad, 1.0)


def test_opacus_noise_function():
    ref = torch.ones(3, 5)
    noise = dptorch.generate_noise(1.5, ref, generator=None, secure_mode=True)
    assert noise.shape == ref.shape and noise.dtype == ref.dtype
    assert torch.count_nonzero(noise) > 0
    assert torch.count_nonzero(dptorch.generate_noise(0.0, ref)) == 0
    big = dptorch.generate_noise(1.0, torch.zeros(50_000))
    assert abs(float(big.std()) - 1) < 0.03
    assert abs(float(big.mean())) < 5 / math.sqrt(50_000)
