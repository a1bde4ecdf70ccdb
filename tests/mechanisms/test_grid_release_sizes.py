"""The grid release of a float64 array into a new array (a mechanism's array path without out=)
is the buffer kernel's release: the same draws and values as ``into``, at every size, and it
never raises once the draws began (issue 35 item 2; 0.9.0 used a second, raising kernel there).
Every check is an equality on fixed seeds (no false-alarm rate)."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import dpnoise
from dpnoise import _core
from dpnoise import _rational as R

N = 3 * 2**16 + 777  # three chunks (streams), the last short, and partial sub-blocks


def _release(law: str, param: float | Fraction, k: int, bound: int) -> _core.GridRelease:
    num, den = R.scale_pair(param, "scale") if law == "laplace" else R.sigma_to_variance_pair(param, "sigma")
    return _core.GridRelease(law, num, den, k, bound)


def test_array_release_clamps_like_the_buffer_kernel_instead_of_raising() -> None:
    # scale 2^56 grid units: most noises exceed the 2^53 exact range; 0.9.0's array() raised
    # OverflowError after the draws began, into() clamped to +-2^53 grid steps
    kernel = _release("laplace", Fraction(2**56), 0, 0)
    x = np.zeros(5000)
    got = kernel.array(dpnoise.default_rng(5)._core, x, 1)
    want = np.empty_like(x)
    kernel.into(dpnoise.default_rng(5)._core, x, want, 1)
    assert np.array_equal(got, want)
    assert np.abs(got).max() == 2.0**53


@pytest.mark.parametrize("law, param", [("laplace", Fraction(1025)), ("laplace", Fraction(2**30)),
                                        ("gaussian", 4000.5), ("gaussian", 590558208.0)])
@pytest.mark.parametrize("threads", [1, 2])
def test_array_release_equals_its_definition(law: str, param: float | Fraction, threads: int) -> None:
    """out = (clamp(round(x / 2^k)) + noise) 2^k with the noise the prepared law draws."""
    k, bound = -3, 2**40
    x = np.random.default_rng(7).normal(scale=3.0, size=N)
    x[:6] = [0.5, 1.5, 2.5, -2.5, 1e30, -1e30]  # ties and the clamp
    got = _release(law, param, k, bound).array(dpnoise.default_rng(9)._core, x, threads)
    rng = dpnoise.default_rng(9)
    noise = rng.discrete_laplace(param, N) if law == "laplace" else rng.discrete_gaussian(param, N)
    grid = np.clip(np.rint(np.ldexp(x, -k)), -bound, bound).astype(np.int64)
    assert np.array_equal(got, np.ldexp((grid + noise).astype(np.float64), k))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_mechanism_release_does_not_depend_on_threads_or_stride(dtype: type) -> None:
    x: np.ndarray = np.random.default_rng(1).normal(size=2 * N).astype(dtype)
    outs = [dpnoise.LaplaceMechanism(1.0, rng=dpnoise.default_rng(3), threads=t, allow_insecure=True)(x[::2])
            for t in (1, 2)]
    outs.append(dpnoise.LaplaceMechanism(1.0, rng=dpnoise.default_rng(3), threads=2,
                                         allow_insecure=True)(np.ascontiguousarray(x[::2])))
    assert outs[0].dtype == dtype
    assert np.array_equal(outs[0], outs[1]) and np.array_equal(outs[0], outs[2])


def test_float32_buffer_clamps_to_float_max_in_the_vectorised_combination() -> None:
    """Noise below 2^51 grid steps takes the vectorised combination: a float32 output beyond
    FLT_MAX is FLT_MAX (the exact double clamped, then rounded), never infinity."""
    k, bound, scale = 100, 2**40, Fraction(2**30)
    x = np.random.default_rng(3).uniform(-3.4e38, 3.4e38, size=N).astype(np.float32)
    out = np.empty_like(x)
    _release("laplace", scale, k, bound).into(dpnoise.default_rng(4)._core, x, out, 1)
    noise = dpnoise.default_rng(4).discrete_laplace(scale, N)
    grid = np.clip(np.rint(np.ldexp(x.astype(np.float64), -k)), -bound, bound).astype(np.int64)
    fmax = float(np.finfo(np.float32).max)
    want = np.clip(np.ldexp((grid + noise).astype(np.float64), k), -fmax, fmax).astype(np.float32)
    assert np.isfinite(out).all() and (np.abs(out) == np.float32(fmax)).any()
    assert np.array_equal(out, want)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("n", [1, 5000])  # one value (GIL held) and a released-GIL check
def test_the_core_refuses_non_finite_values_before_any_draw(bad: float, n: int) -> None:
    """The extension's own grid entry points refuse NaN and infinity before drawing, as the
    one-call release() does: array() returned NaN and +-2^30 for them (review of 0.10.0's fused
    kernel), and a NaN on the per-element path reached an undefined float-to-int64 cast."""
    x = np.zeros(n)
    x[n // 2] = bad
    kernel = _release("laplace", Fraction(1), -10, 2**40)
    rng, twin = dpnoise.default_rng(8), dpnoise.default_rng(8)
    with pytest.raises(ValueError, match="finite"):
        kernel.array(rng._core, x, 1)
    with pytest.raises(ValueError, match="finite"):
        _core.noisy_grid_into(rng._core, "laplace", x, -10, 1, 1, 2**40, np.empty_like(x), 1)
    assert rng.random_raw() == twin.random_raw()  # nothing was drawn
