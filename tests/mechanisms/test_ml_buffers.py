"""Issue 24 items 1-2: float32 kept, out= and in-place releases, DLPack and buffer-protocol
arrays, bad buffers refused before the charge, and the DP-SGD form of GaussianMechanism."""
from __future__ import annotations

import array
import math

import numpy as np
import pytest

import dpnoise
from dpnoise.accounting import PrivacyBudget
from dpnoise.accounting.losses import Gaussian, PoissonSampled


def _laplace(seed=1, **kw):
    return dpnoise.LaplaceMechanism(1.0, rng=dpnoise.default_rng(seed), allow_insecure=True, **kw)


def _gauss(seed=1, **kw):
    kw.setdefault("rho", 0.5)
    return dpnoise.GaussianMechanism(rng=dpnoise.default_rng(seed), allow_insecure=True, **kw)


MECHS = {"laplace": _laplace, "gaussian": _gauss}


class FakeTensor:
    """A minimal DLPack producer over a NumPy array (what a CPU torch/JAX tensor looks like)."""

    def __init__(self, arr, device=(1, 0)):
        self.arr, self.device = arr, device

    def __dlpack__(self, **kw):
        return self.arr.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.device


@pytest.mark.parametrize("name", MECHS)
def test_float32_in_float32_out_and_equal_to_the_rounded_float64_release(name):
    x = np.linspace(-3, 3, 1001, dtype=np.float32)
    y32 = MECHS[name](seed=4)(x)
    y64 = MECHS[name](seed=4)(x.astype(np.float64))
    assert y32.dtype == np.float32 and y64.dtype == np.float64
    # the same exact noisy value y 2^k, rounded to float32 (post-processing, docs/security.md)
    assert np.array_equal(y32, y64.astype(np.float32))
    s = MECHS[name](seed=4)(np.float32(1.5))
    assert isinstance(s, np.float32)


@pytest.mark.parametrize("name", MECHS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_out_returns_out_and_in_place_allocates_nothing_new(name, dtype):
    x = np.linspace(-3, 3, 4096).astype(dtype).reshape(64, 64)
    want = MECHS[name](seed=9)(x.copy())
    buf = np.empty_like(x)
    got = MECHS[name](seed=9)(x, out=buf)
    assert got is buf and np.array_equal(buf, want)
    inplace = x.copy()
    ptr = inplace.__array_interface__["data"][0]
    got = MECHS[name](seed=9)(inplace, out=inplace)
    assert got is inplace and inplace.__array_interface__["data"][0] == ptr
    assert np.array_equal(inplace, want)


def test_shifted_overlap_reads_the_input_before_it_is_overwritten():
    base = np.arange(11, dtype=np.float64)
    want = _laplace(seed=3)(base[:-1].copy())
    _laplace(seed=3)(base[:-1], out=base[1:])
    assert np.array_equal(base[1:], want)


def test_integer_path_writes_int64_out():
    x = np.arange(10, dtype=np.int64)
    want = _laplace(seed=2)(x)
    buf = np.zeros(10, dtype=np.int64)
    assert _laplace(seed=2)(x, out=buf) is buf and np.array_equal(buf, want)


def test_dlpack_cpu_tensor_is_written_in_place():
    store = np.linspace(0, 1, 100, dtype=np.float32)
    want = _gauss(seed=5)(store.copy())
    t = FakeTensor(store)
    assert _gauss(seed=5)(t, out=t) is t
    assert np.array_equal(store, want)
    # a DLPack input without out= gives a NumPy array of its dtype
    assert _gauss(seed=5)(FakeTensor(np.ones(3, dtype=np.float32))).dtype == np.float32


def test_numpy_own_dlpack_and_buffer_protocol():
    x = np.ones(8)
    want = _laplace(seed=6)(x.copy())
    buf = array.array("d", [0.0] * 8)
    assert _laplace(seed=6)(memoryview(np.ones(8)), out=buf) is buf
    assert np.array_equal(np.frombuffer(buf), want)
    out = np.empty(8)
    _laplace(seed=6)(np.from_dlpack(x), out=out)
    assert np.array_equal(out, want)


def _bad_outs():
    ro = np.zeros(5)
    ro.flags.writeable = False
    return [
        (ro, ValueError, "writable"),
        (np.zeros(4), ValueError, "shape"),
        (np.zeros(5, dtype=np.float32), TypeError, "dtype float64"),
        (np.zeros(5, dtype=np.int64), TypeError, "integer dtype"),
        (np.zeros(10)[::2], ValueError, "contiguous"),
        (FakeTensor(np.zeros(5), device=(2, 0)), ValueError, "CPU"),
        (FakeTensor(ro), ValueError, "writable"),
        ([0.0] * 5, TypeError, "out must be an array"),
    ]


@pytest.mark.parametrize("out,exc,msg", _bad_outs())
def test_bad_out_refused_before_the_charge_and_left_untouched(out, exc, msg):
    budget = PrivacyBudget(epsilon=10.0)
    mech = dpnoise.LaplaceMechanism(1.0, rng=dpnoise.default_rng(1), budget=budget, allow_insecure=True)
    before = np.array(out.arr if isinstance(out, FakeTensor) else out, copy=True)
    with pytest.raises(exc, match=msg):
        mech(np.arange(5.0), out=out)
    assert len(budget.ledger) == 0
    after = out.arr if isinstance(out, FakeTensor) else out
    assert np.array_equal(np.asarray(after), before)


def test_gpu_dlpack_input_refused_before_the_charge():
    budget = PrivacyBudget(epsilon=10.0)
    mech = dpnoise.LaplaceMechanism(1.0, rng=dpnoise.default_rng(1), budget=budget, allow_insecure=True)
    with pytest.raises(ValueError, match="CPU"):
        mech(FakeTensor(np.zeros(3), device=(2, 0)))
    assert len(budget.ledger) == 0


def test_out_unsupported_mechanism_refuses_before_the_charge():
    budget = PrivacyBudget(epsilon=10.0)
    rr = dpnoise.RandomizedResponse(1.0, 3, rng=dpnoise.default_rng(1), budget=budget, allow_insecure=True)
    with pytest.raises(TypeError, match="out="):
        rr(np.array([0, 1]), out=np.zeros(2, dtype=np.int64))
    assert len(budget.ledger) == 0


def test_torch_cpu_tensor_in_place():
    torch = pytest.importorskip("torch")
    g = torch.linspace(0, 1, 50, dtype=torch.float32)
    want = _gauss(seed=8)(g.numpy().copy())
    assert _gauss(seed=8)(g, out=g) is g
    assert np.array_equal(g.numpy(), want)


# -- the DP-SGD form ---------------------------------------------------------------------------
@pytest.mark.parametrize("d", [1, 1000, 10**7])
@pytest.mark.parametrize("z,c", [(1.1, 1.0), (0.5, 3.0), (8.0, 0.01)])
def test_noise_multiplier_effective_sigma(d, z, c):
    mech = dpnoise.GaussianMechanism(noise_multiplier=z, sensitivity=c, rng=dpnoise.default_rng(1),
                                     allow_insecure=True)
    p = mech.plan((d,))
    ratio = math.ldexp(float(p.param), p.k) / (z * c)
    assert 1.0 <= ratio <= 1 + 1e-4
    widening = (float(p.sensitivity) * 2.0**p.k) / c  # the L2 sensitivity charged, in units of C
    assert 1.0 <= widening <= 1 + 1e-4


def test_noise_multiplier_noise_has_sigma_z_c():
    x = np.zeros(200_000, dtype=np.float32)
    mech = dpnoise.GaussianMechanism(noise_multiplier=1.1, sensitivity=2.0, rng=dpnoise.default_rng(11),
                                     allow_insecure=True)
    mech(x, out=x)
    # the sample std has relative sd 1/sqrt(2n) = 0.16%; 1% is over 6 sd: false alarm < 1e-9
    assert abs(float(np.std(x, dtype=np.float64)) / 2.2 - 1) < 0.01
    assert abs(float(np.mean(x, dtype=np.float64))) < 6 * 2.2 / math.sqrt(x.size)


@pytest.mark.parametrize("kw,exc", [
    ({"noise_multiplier": 0.0}, ValueError), ({"noise_multiplier": -1.0}, ValueError),
    ({"noise_multiplier": math.nan}, ValueError), ({"noise_multiplier": math.inf}, ValueError),
    ({"noise_multiplier": "1"}, TypeError),
    ({"noise_multiplier": 1.0, "sample_rate": 0.0}, ValueError),
    ({"noise_multiplier": 1.0, "sample_rate": 1.5}, ValueError),
    ({"noise_multiplier": 1.0, "sample_rate": -0.1}, ValueError),
    ({"noise_multiplier": 1.0, "sample_rate": math.nan}, ValueError),
    ({"rho": 0.5, "sample_rate": 0.1}, TypeError),
    ({"noise_multiplier": 1.0, "rho": 0.5}, TypeError),
    ({"noise_multiplier": 1.0, "epsilon": 1.0, "delta": 1e-5}, TypeError),
])
def test_noise_multiplier_and_sample_rate_bad_values(kw, exc):
    with pytest.raises(exc):
        dpnoise.GaussianMechanism(rng=dpnoise.default_rng(1), allow_insecure=True, **kw)


def test_sample_rate_charges_the_poisson_subsampled_gaussian():
    z, c, q, steps, d = 1.1, 1.0, 0.01, 3, 10_000
    budget = PrivacyBudget(epsilon=100.0, delta=1e-5, accountant="pld")
    mech = dpnoise.GaussianMechanism(noise_multiplier=z, sensitivity=c, sample_rate=q, budget=budget,
                                     rng=dpnoise.default_rng(1), allow_insecure=True)
    g = np.zeros(d, dtype=np.float32)
    for _ in range(steps):
        mech(g, out=g)
    assert len(budget.ledger) == steps
    assert all(e["loss"]["type"] == "PoissonSampled" and e["loss"]["rate"] == q for e in budget.ledger)
    ref = PrivacyBudget(epsilon=100.0, delta=1e-5, accountant="pld")
    for _ in range(steps):
        ref.spend(PoissonSampled(Gaussian(z * c, c), q))
    got, want = budget.accountant.get_epsilon(1e-5), ref.accountant.get_epsilon(1e-5)
    assert abs(got / want - 1) <= 1e-3
