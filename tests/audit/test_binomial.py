"""The Clopper-Pearson bounds against scipy.stats.beta (the reference quantiles)."""
import math

import pytest

from dpnoise.audit import _binomial

scipy_stats = pytest.importorskip("scipy.stats")
scipy_special = pytest.importorskip("scipy.special")

CASES = [(1, 10), (5, 1000), (0, 1000), (1000, 1000), (3, 5_000_000), (2_000_000, 5_000_000),
         (4_999_990, 5_000_000), (17, 1_234_567), (499, 1000), (1, 1), (0, 1)]


@pytest.mark.parametrize("k,n", CASES)
@pytest.mark.parametrize("level", [0.025, 0.001, 0.3])
def test_bounds_match_scipy_and_are_conservative(k, n, level):
    low, high = _binomial.lower_bound(k, n, level), _binomial.upper_bound(k, n, level)
    ref_low = scipy_stats.beta.ppf(level, k, n - k + 1) if k > 0 else 0.0
    ref_high = scipy_stats.beta.ppf(1 - level, k + 1, n - k) if k < n else 1.0
    # conservative (never inside the exact interval) and within 1e-6 relative of it
    assert low <= ref_low * (1 + 1e-12)
    assert low >= ref_low * (1 - 1e-6)
    assert high >= ref_high * (1 - 1e-12)
    assert high <= min(1.0, ref_high * (1 + 1e-6))


@pytest.mark.parametrize("x,a,b", [(0.3, 2.0, 5.0), (0.9, 0.5, 0.5), (1e-6, 3.0, 1e6), (0.5, 1e5, 1e5),
                                   (0.0, 2.0, 2.0), (1.0, 2.0, 2.0)])
def test_regularized_beta(x, a, b):
    # lgamma of arguments near 1e6 carries ~2e-9 absolute error, so I_x is good to ~1e-9
    # relative there: a change of the bound's level by 1e-9·level (the bounds add 1e-8 margin)
    assert math.isclose(_binomial.regularized_beta(x, a, b), scipy_special.betainc(a, b, x),
                        rel_tol=1e-8, abs_tol=1e-300)


@pytest.mark.parametrize("k,n,level", [(-1, 10, 0.1), (11, 10, 0.1), (1, 0, 0.1), (1, 10, 0.0), (1, 10, 1.0),
                                       (1.0, 10, 0.1)])
def test_bad_arguments(k, n, level):
    with pytest.raises(ValueError):
        _binomial.lower_bound(k, n, level)
    with pytest.raises(ValueError):
        _binomial.upper_bound(k, n, level)
