"""The request layer seen from Python: exact C++ conversion of parameter arrays, the table
cache, the fused grid kernel of the mechanisms, and the generator's argument handling."""
import decimal
from fractions import Fraction

import numpy as np
import pytest

import dpnoise
from dpnoise import _core
from dpnoise import _rational as R

CONVERTERS = {"scale": R.scale_pair, "sigma": R.sigma_to_variance_pair, "variance": R.variance_pair,
              "p": R.probability_pair, "gamma": R.gamma_pair}


def _awkward_doubles(rng, kind):
    """Doubles that exercise every branch of the rounding rule: ordinary, tiny (below 2^-62),
    subnormal, huge, exact powers of two, ties for probabilities."""
    ordinary = rng.uniform(0.001, 1000, 200)
    if kind == "p":
        return np.concatenate([rng.uniform(0, 1, 200), [0.0, 1.0, 2.0**-63, 3 * 2.0**-63, 2.0**-80,
                                                         5e-324, 0.5 + 2.0**-53, 1 - 2.0**-53]])
    tiny = np.ldexp(rng.uniform(1, 2, 50), rng.integers(-1074, -50, 50))
    big_limit = 31 if kind == "sigma" else 62
    big = np.ldexp(rng.uniform(1, 2, 50), rng.integers(30, big_limit, 50))
    return np.concatenate([ordinary, tiny, big, [0.0, -0.0, 5e-324, 2.0**-62, 2.0**-63, 0.1, 1 / 3]])


@pytest.mark.parametrize("kind", sorted(CONVERTERS))
def test_cpp_conversion_matches_the_python_rule(kind):
    values = _awkward_doubles(np.random.default_rng(5), kind)
    nums, dens, index = _core.convert_parameters(values, kind)
    for i, v in enumerate(values):
        assert (int(nums[index[i]]), int(dens[index[i]])) == CONVERTERS[kind](float(v), kind), (kind, v)


@pytest.mark.parametrize("kind", ["scale", "sigma", "variance", "gamma"])
def test_cpp_conversion_of_integers_matches_the_python_rule(kind):
    top = [2**31, 2**40, 2**62] if kind != "sigma" else [2**20, 2**31]
    values = np.array([0, 1, 7] + top, dtype=np.int64)
    nums, dens, index = _core.convert_parameters(values, kind)
    for i, v in enumerate(values):
        assert (int(nums[index[i]]), int(dens[index[i]])) == CONVERTERS[kind](int(v), kind)


@pytest.mark.parametrize("bad, exc, text", [
    (np.array([1.0, np.nan]), ValueError, "NaN"), (np.array([np.inf]), ValueError, "finite"),
    (np.array([-1.0]), ValueError, ">= 0"), (np.array([2.0**63]), OverflowError, "too large"),
    (np.array([2**63 - 1], dtype=np.int64), OverflowError, "too large"),
])
def test_cpp_conversion_refuses_bad_values_naming_the_parameter(bad, exc, text):
    with pytest.raises(exc, match=text):
        dpnoise.default_rng(1).discrete_laplace(bad)
    with pytest.raises(exc, match="scale"):
        dpnoise.default_rng(1).discrete_laplace(bad)


def test_sigma_beyond_the_limit_names_sigma_and_its_limit():
    rng = dpnoise.default_rng(1)
    with pytest.raises(OverflowError, match=r"sigma.*2\^31"):
        rng.discrete_gaussian(2**31 + 1)
    with pytest.raises(OverflowError, match="sigma"):
        rng.discrete_gaussian(np.array([1.0, 2.0**31 + 2]))
    with pytest.raises(OverflowError, match="sigma"):   # no "integer division result too large"
        rng.discrete_gaussian(1e300)


def test_huge_fraction_message_does_not_overflow():
    with pytest.raises(OverflowError, match="too large"):
        dpnoise.default_rng(1).discrete_laplace(Fraction(10**400))


def test_float_parameter_arrays_give_the_same_samples_as_the_python_conversion():
    """The C++ path (NAME_array) and the Python path (NAME_each after _rational) draw the same."""
    values = _awkward_doubles(np.random.default_rng(6), "scale")
    values = np.repeat(values[values <= 2.0**56], 3)  # above 2^56 both paths refuse (test_generator)
    a = _core.discrete_laplace_array(dpnoise.ChaCha20(9)._core, values, "scale", 1)
    _, nums, dens, index = R.parameter_table(values, "scale", R.scale_pair)
    b = _core.discrete_laplace_each(dpnoise.ChaCha20(9)._core, nums, dens, index, 1)
    assert np.array_equal(a, b)


def test_strided_and_odd_dtype_parameter_arrays():
    base = np.arange(1, 41, dtype=np.float64).reshape(4, 10)
    strided = base[:, ::3]                          # not contiguous
    assert np.array_equal(dpnoise.default_rng(3).discrete_laplace(strided),
                          dpnoise.default_rng(3).discrete_laplace(np.ascontiguousarray(strided)))
    as32 = strided.astype(np.float32)               # converted exactly to float64
    assert np.array_equal(dpnoise.default_rng(3).discrete_laplace(as32),
                          dpnoise.default_rng(3).discrete_laplace(strided))
    ints = np.arange(1, 11, dtype=np.int16)
    assert np.array_equal(dpnoise.default_rng(3).discrete_laplace(ints),
                          dpnoise.default_rng(3).discrete_laplace(ints.astype(np.float64)))


def test_zero_dimensional_array_parameter_gives_a_scalar_like_numpy():
    out = dpnoise.default_rng(2).discrete_laplace(np.array(3.0))
    assert np.ndim(out) == 0 and not isinstance(out, np.ndarray)
    assert out == dpnoise.default_rng(2).discrete_laplace(3.0)


def test_decimal_parameters_are_exact():
    rng_a, rng_b = dpnoise.default_rng(4), dpnoise.default_rng(4)
    assert np.array_equal(rng_a.discrete_laplace(decimal.Decimal("2.5"), 100),
                          rng_b.discrete_laplace(Fraction(5, 2), 100))
    with pytest.raises(ValueError, match="scale"):
        rng_a.discrete_laplace(decimal.Decimal("NaN"))
    with pytest.raises(ValueError, match="scale"):
        rng_a.discrete_laplace(decimal.Decimal("-1"))


def test_table_cache_reuses_tables_and_output_is_unchanged():
    _core._discrete_gaussian_cache_clear()
    n = 20000
    a = dpnoise.default_rng(8).discrete_gaussian(7.25, n)
    held, hits, built = _core._discrete_gaussian_cache_stats()
    b = dpnoise.default_rng(8).discrete_gaussian(7.25, n)
    held2, hits2, built2 = _core._discrete_gaussian_cache_stats()
    assert np.array_equal(a, b)
    assert built2 == built and hits2 == hits + 1 and held2 == held >= 1


def _unfused(rng, x, law, param, k, bound):
    """The mechanisms' grid release as separate NumPy passes (the definition the kernel fuses)."""
    grid = np.clip(np.rint(np.ldexp(x, -k)), -bound, bound).astype(np.int64)
    noise = (rng.discrete_laplace(param, x.shape) if law == "laplace"
             else rng.discrete_gaussian(param, x.shape))
    return np.ldexp((grid + noise).astype(np.float64), k)


@pytest.mark.parametrize("law, param", [("laplace", Fraction(1025)), ("laplace", Fraction(3, 7)),
                                        ("gaussian", 4000.5), ("gaussian", 1.5)])
def test_fused_grid_kernel_equals_the_unfused_computation(law, param):
    x = np.random.default_rng(7).normal(scale=3.0, size=70000)
    x[:6] = [0.5, 1.5, 2.5, -2.5, 1e300, -1e300]     # ties and the clamp
    fused = dpnoise.Generator(dpnoise.ChaCha20(11))._noisy_grid(x, law=law, param=param, k=-3, bound=2**40)
    plain = _unfused(dpnoise.Generator(dpnoise.ChaCha20(11)), x, law, param, -3, 2**40)
    assert np.array_equal(fused, plain)


def test_fused_grid_kernel_integer_form_and_strides():
    x = np.arange(-50, 50, dtype=np.int64)[::2]
    rng_a, rng_b = dpnoise.default_rng(12), dpnoise.default_rng(12)
    out = rng_a._noisy_grid(x, law="laplace", param=Fraction(2), k=None, bound=10)
    expect = np.clip(x, -10, 10) + rng_b.discrete_laplace(2, x.shape)
    assert np.array_equal(out, expect)


def test_fused_grid_kernel_is_thread_independent_and_runs_on_numpy_bit_generators():
    x = np.linspace(-5, 5, 3 * 2**16 + 17)
    a = dpnoise.default_rng(13)._noisy_grid(x, law="gaussian", param=12.0, k=-4, bound=2**52, threads=1)
    b = dpnoise.default_rng(13)._noisy_grid(x, law="gaussian", param=12.0, k=-4, bound=2**52, threads=2)
    assert np.array_equal(a, b)
    c = dpnoise.Generator(np.random.PCG64(1))._noisy_grid(x, law="laplace", param=Fraction(9), k=-4, bound=2**52)
    d = dpnoise.Generator(np.random.PCG64(1))._noisy_grid(x, law="laplace", param=Fraction(9), k=-4, bound=2**52)
    assert np.array_equal(c, d) and not np.array_equal(c, np.round(x * 16) / 16)


def test_fused_grid_kernel_refuses_overflow_without_inf():
    with pytest.raises(OverflowError, match="overflows a double"):
        # DBL_MAX 2^-1000 rounds up to 2^24, and 2^24 2^1000 is beyond a double
        dpnoise.default_rng(1)._noisy_grid(np.array([np.finfo(float).max]), law="laplace", param=Fraction(0),
                                           k=1000, bound=2**40)
