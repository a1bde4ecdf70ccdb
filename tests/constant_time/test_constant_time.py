"""The constant-time samplers (issue 25; docs/security.md, "Constant-time sampling").

Goodness of fit: chi-square against the exact pmf of the ideal law (the constant-time law is
within total variation 2^-64 of it, far below what 400 000 samples can see), with fixed seeds
and false-alarm rate ALPHA = 1e-6 per test (deterministic: a seeded run always passes or always
fails). Timing itself is checked in C++ by .ci/constant_time (dudect and valgrind).
"""
from fractions import Fraction

import numpy as np
import pytest

import dpnoise
from dpnoise import _core

# the exact laws and the chi-square of the variable-time samplers' tests, at ALPHA = 1e-6
from statistical.test_distributions import gaussian_cdf, laplace_cdf, run_gof

N = 400_000

# (sampler, exact cdf, half-width of the binned range in units of the parameter, parameters)
LAWS = {
    "discrete_laplace": (laplace_cdf, 40, [0.3, Fraction(7, 3), 10, 1000, 2**20]),
    "discrete_gaussian": (gaussian_cdf, 12, [0.5, 1, Fraction(7, 3), 10, 100, 10**4, 2**20]),
}


@pytest.mark.parametrize("method,param", [(m, p) for m, law in LAWS.items() for p in law[2]], ids=str)
def test_sampler_fits_exact_pmf(method, param):
    cdf, width, _ = LAWS[method]
    y = getattr(dpnoise.default_rng(2511), method)(param, N, constant_time=True)
    assert y.dtype == np.int64
    run_gof(y, cdf(param), int(width * float(param)) + 10)


def test_variance_keyword_gives_the_same_law_as_sigma():
    a = dpnoise.default_rng(5).discrete_gaussian(variance=Fraction(9, 4), size=1000, constant_time=True)
    b = dpnoise.default_rng(5).discrete_gaussian(Fraction(3, 2), size=1000, constant_time=True)
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("method", ["discrete_laplace", "discrete_gaussian"])
def test_reproducible_and_independent_of_threads(method):
    def draw(rng, threads):
        return getattr(rng, method)(37, size=(300, 700), threads=threads, constant_time=True)

    a = draw(dpnoise.default_rng(9), 1)
    b = draw(dpnoise.default_rng(9), 2)
    assert a.shape == (300, 700)
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("method", ["discrete_laplace", "discrete_gaussian"])
def test_scalar_call(method):
    rng = dpnoise.default_rng(3)
    x = getattr(rng, method)(5, constant_time=True)
    assert isinstance(x, np.int64)  # a NumPy scalar, never a (small-int-cached) Python int
    assert getattr(rng, method)(0, constant_time=True) == 0
    assert (getattr(rng, method)(0, size=50, constant_time=True) == 0).all()


def test_secure_generator():
    rng = dpnoise.default_rng()
    y = rng.discrete_gaussian(3, size=10_000, constant_time=True)
    assert abs(float(y.var()) - 9) < 1.0  # sd of the sample variance about 0.13: a 7-sigma band


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "call",
    [
        lambda r: r.discrete_laplace(2**20 + 1, constant_time=True),
        lambda r: r.discrete_laplace(Fraction(2**21 + 1, 2), size=3, constant_time=True),
        lambda r: r.discrete_gaussian(2**20 * 1.0001, constant_time=True),
        lambda r: r.discrete_gaussian(variance=2**40 + 1, constant_time=True),
    ],
)
def test_out_of_range_is_refused_naming_the_range(call):
    with pytest.raises(ValueError, match=r"2\^20"):
        call(dpnoise.default_rng(1))


def test_largest_supported_parameters_are_accepted():
    rng = dpnoise.default_rng(1)
    assert rng.discrete_laplace(2**20, size=4, constant_time=True).shape == (4,)
    assert rng.discrete_gaussian(2**20, size=4, constant_time=True).shape == (4,)


@pytest.mark.parametrize("bad", [-1, float("nan"), float("inf"), "3"])
def test_bad_parameters(bad):
    rng = dpnoise.default_rng(1)
    with pytest.raises((ValueError, TypeError)):
        rng.discrete_laplace(bad, constant_time=True)
    with pytest.raises((ValueError, TypeError)):
        rng.discrete_gaussian(bad, constant_time=True)


def test_array_parameters_are_refused():
    rng = dpnoise.default_rng(1)
    with pytest.raises(ValueError, match="one scalar scale"):
        rng.discrete_laplace([1, 2], constant_time=True)
    with pytest.raises(ValueError, match="one scalar sigma"):
        rng.discrete_gaussian(np.array([1.0, 2.0]), size=2, constant_time=True)


# --------------------------------------------------------------------------- certified bounds
@pytest.mark.parametrize("variance", [(1, 2**62), (1, 4), (1, 1), (49, 9), (100, 1), (10**8, 1), (2**40, 1),
                                      (2**40 * 3 - 1, 3)])
def test_gaussian_distance_bound_is_below_2_to_the_minus_64(variance):
    leaves, entries, inner, tv_log2 = _core._constant_time_gaussian_info(*variance)
    assert leaves == inner + 1  # a binary tree
    assert tv_log2 <= -66
    assert entries <= 1200  # the scan per draw stays small even at sigma = 2^20


@pytest.mark.parametrize("scale", [(1, 2**62), (1, 3), (1, 1), (10**4, 1), (2**20, 1)])
def test_laplace_thresholds_are_certified_tightly(scale):
    digits, width = _core._constant_time_laplace_info(*scale)
    assert width <= 256  # every threshold within 2^-120 of its probability
    # 2^digits / scale >= 46: the truncated geometric tail is at most e^-46 < 2^-66
    assert Fraction(2**digits * scale[1], scale[0]) >= 46


def test_numpy_bit_generator_and_zero_dim_parameter():
    rng = dpnoise.default_rng(np.random.PCG64(4))  # insecure, sequential: for tests only
    y = rng.discrete_laplace(np.float64(2.5), size=20_000, constant_time=True)
    q = np.exp(-1 / 2.5)
    assert abs(float(y.var()) / (2 * q / (1 - q) ** 2) - 1) < 0.1  # sd of the ratio about 0.02
    z = rng.discrete_gaussian(np.array(4.0), size=(10, 3), constant_time=True)
    assert z.shape == (10, 3) and z.dtype == np.int64


# --------------------------------------------------------------------------- release kernels
# Generator._noisy_grid(constant_time=True): the mechanisms' fused release (clamp, round onto the
# grid, add noise) with the constant-time noise and no branch on the values. Its noise is the
# same stream as the Generator's constant-time request of the same size from the same seed.
@pytest.mark.parametrize("law,param,method", [("laplace", 3.0, "discrete_laplace"), ("gaussian", 2.5, "discrete_gaussian")])
def test_integer_release_adds_the_same_noise(law, param, method):
    values = np.array([0, 5, -7, 2**61, -(2**61), 123456789] * 1000, dtype=np.int64)
    out = dpnoise.default_rng(11)._noisy_grid(values, law=law, param=param, k=None, bound=1000, constant_time=True)
    noise = getattr(dpnoise.default_rng(11), method)(param, size=values.size, constant_time=True)
    np.testing.assert_array_equal(out, np.clip(values, -1000, 1000) + noise)


@pytest.mark.parametrize("law,param,method", [("laplace", 3.0, "discrete_laplace"), ("gaussian", 2.5, "discrete_gaussian")])
def test_grid_release_adds_the_same_noise(law, param, method):
    values = np.array([0.0, 0.3, -1.75, 2.5, 3.5, 1e300, -1e300, 5e-324, 1234.5678] * 500)
    k = -3
    out = dpnoise.default_rng(12)._noisy_grid(values, law=law, param=param, k=k, bound=2**20, constant_time=True)
    noise = getattr(dpnoise.default_rng(12), method)(param, size=values.size, constant_time=True)
    v = np.clip(np.rint(values * 2.0**-k), -(2**20), 2**20).astype(np.int64)  # rint: ties to even
    np.testing.assert_array_equal(out, (v + noise).astype(np.float64) * 2.0**k)


def test_release_bad_parameters_are_refused():
    rng = dpnoise.default_rng(1)
    with pytest.raises(ValueError, match=r"\[-1000, 960\]"):
        rng._noisy_grid(np.zeros(3), law="laplace", param=1.0, k=990, bound=10, constant_time=True)
    with pytest.raises(ValueError, match=r"2\^20"):
        rng._noisy_grid(np.zeros(3), law="gaussian", param=2.0**21, k=0, bound=10, constant_time=True)
    with pytest.raises(ValueError, match="law"):
        _core.noisy_integers_constant_time(rng._core, "cauchy", np.zeros(3, np.int64), 1, 1, 10, 1)
