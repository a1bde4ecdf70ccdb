"""PyTorch CPU tensors: exact noise in place and Opacus' noise function; skipped when torch is
not installed (it is not part of any dpnoise extra)."""
import math
import warnings

import numpy as np
import pytest

import dpnoise

torch = pytest.importorskip("torch", reason="torch is not installed")
# torch warns about its own hooks, which Opacus registers (not about anything dpnoise does)
pytestmark = pytest.mark.filterwarnings("ignore:Full backward hook is firing:UserWarning")
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


def make_private_linear(batch=16, d=2000):
    """A bias-free linear model on all-zero inputs, made private by Opacus: every per-example
    gradient is 0, so the gradient Opacus releases is pure noise / batch."""
    opacus = pytest.importorskip("opacus", reason="opacus is not installed")
    model = torch.nn.Linear(d, 1, bias=False)
    data = torch.utils.data.TensorDataset(torch.zeros(64, d), torch.zeros(64, 1))
    loader = torch.utils.data.DataLoader(data, batch_size=batch)
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    with warnings.catch_warnings():
        # "Secure RNG turned off": Opacus' secure_mode needs torchcsprng (unmaintained); the
        # noise comes from dpnoise below instead
        warnings.simplefilter("ignore", UserWarning)
        engine = opacus.PrivacyEngine()
    model, optimizer, loader = engine.make_private(module=model, optimizer=optimizer, data_loader=loader,
                                                   noise_multiplier=1.5, max_grad_norm=1.0, poisson_sampling=False)
    return model, optimizer, loader


def opacus_step(model, optimizer, loader):
    x, y = next(iter(loader))
    optimizer.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    optimizer.step()
    return next(model.parameters()).grad.detach().reshape(-1).numpy().copy()


def test_opacus_optimizer_draws_its_noise_from_dpnoise(monkeypatch):
    model, optimizer, loader = make_private_linear()
    import opacus.optimizers.optimizer as opacus_optimizer
    calls = []

    def counted(std, reference, generator=None, secure_mode=False):
        calls.append(std)
        return dptorch.generate_noise(std, reference, generator, secure_mode)

    monkeypatch.setattr(opacus_optimizer, "_generate_noise", counted)
    grad = opacus_step(model, optimizer, loader)
    assert calls == [1.5]
    # noise sd 1.5 divided by the batch of 16; 2000 coordinates: within 10% (~4.5 standard errors)
    assert abs(grad.std() / (1.5 / 16) - 1) < 0.1


def test_opacus_exact_add_noise():
    import functools
    model, optimizer, loader = make_private_linear()
    optimizer.add_noise = functools.partial(dptorch.add_noise_exact, optimizer)
    grad = opacus_step(model, optimizer, loader)
    assert abs(grad.std() / (1.5 / 16) - 1) < 0.1
    # the released sum is on the grid: grad * 16 is a multiple of 2^k, exactly (float32 of it)
    k = dptorch.numpy_random.grid_exponent_for(1.5)
    units = (grad.astype(np.float64) * 16) * 2.0 ** -k
    assert np.all(np.abs(units - np.round(units)) <= np.abs(units) * 2.0 ** -23)
