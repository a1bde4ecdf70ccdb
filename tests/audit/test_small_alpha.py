"""Issue 33 items 3 and 4: the auditor at small α.

The Clopper-Pearson upper bound used to be found from 1 − I_x, which is 0 below about 1e-16, so
for α below about 2e-15 it was too small (the ε bound too large: invalid), and α below about
2.2e-16 raised statistics.StatisticsError (NormalDist.inv_cdf(1 − level)). Both tails are now
computed directly; these tests compare them with SciPy's beta quantiles down to α = 1e-300 and
with the defining equation (mpmath, or SciPy's betainc/betaincc) down to the smallest float.
"""
import math
from decimal import Decimal, getcontext

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpnoise.audit import _binomial, _events
from dpnoise.audit.lower_bound import bound_from_counts, epsilon_lower_bound, search_pairs

scipy_stats = pytest.importorskip("scipy.stats")
scipy_special = pytest.importorskip("scipy.special")

SMALL_LEVELS = [1e-15, 1e-16, 1e-17, 1e-30, 1e-100, 1e-200, 1e-300]
# (k, n) where SciPy's own quantile converges at every level above (it does not everywhere:
# e.g. beta.ppf(1e-100, 5, 996) returns 7.8e-22, whose tail is far above 1e-100, and
# beta.isf(1e-300, 2, 9) is nan; the equation test below covers those cases)
SCIPY_CASES = [(1, 1000), (50, 100_000), (499, 1000), (500, 1000), (999, 1000), (2_000_000, 5_000_000),
               (1, 100_000)]


@pytest.mark.parametrize("k,n", SCIPY_CASES)
@pytest.mark.parametrize("level", SMALL_LEVELS)
def test_bounds_match_scipy_beta_quantiles_down_to_1e_300(k, n, level):
    # the upper bound is the (1 - level)-quantile of Beta(k + 1, n - k): SciPy's isf gives it
    # without forming 1 - level (beta.ppf(1 - level) saturates exactly as the old code did)
    high = _binomial.upper_bound(k, n, level)
    ref_high = scipy_stats.beta.isf(level, k + 1, n - k)
    assert ref_high * (1 - 1e-12) <= high <= min(1.0, ref_high * (1 + 1e-6))
    low = _binomial.lower_bound(k, n, level)
    ref_low = scipy_stats.beta.ppf(level, k, n - k + 1)
    assert ref_low * (1 - 1e-6) <= low <= ref_low * (1 + 1e-12)


def test_issue_example_upper_bound_is_the_exact_one():
    eps, p_lower, p_upper = bound_from_counts(500, 1, 1000, 0.0, 2e-30)
    exact = scipy_stats.beta.isf(1e-30, 2, 999)  # 0.0708 (the old code gave 0.0404)
    assert exact <= p_upper <= exact * (1 + 1e-6)
    assert eps == pytest.approx(math.log(p_lower) - math.log(p_upper))


EQUATION_CASES = [(1, 10), (5, 1000), (3, 100_000), (17, 12_345), (499, 1000), (9_990, 10_000), (1, 2)]
TINY_LEVELS = [1e-16, 1e-30, 1e-100, 1e-300, 1e-310, 5e-324]


@pytest.mark.parametrize("k,n", EQUATION_CASES)
@pytest.mark.parametrize("level", TINY_LEVELS)
def test_bounds_solve_their_equation_to_the_smallest_float(k, n, level):
    """P_low[X >= k] <= level < P_{low(1 + 2e-8)}[X >= k] and P_high[X <= k] <= level <
    P_{high(1 - 2e-8)}[X <= k] (the 2e-8 relative to the nearer of p and 1 - p, or two floats
    where that is less than two floats), the tails
    computed by mpmath at 50 digits (the upper tail as I_{1-p}(n - k, k + 1), with 1 - p exact):
    each bound is conservative and within its 1e-8 margin (plus the bisection's last float) of
    the exact quantile."""
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 50
    lev = mpmath.mpf(level)

    def lower_tail(p):  # P_p[X >= k] = I_p(k, n - k + 1)
        return mpmath.betainc(k, n - k + 1, 0, mpmath.mpf(p), regularized=True)

    def upper_tail(p):  # P_p[X <= k] = I_{1-p}(n - k, k + 1)
        return mpmath.betainc(n - k, k + 1, 0, 1 - mpmath.mpf(p), regularized=True)

    low, high = _binomial.lower_bound(k, n, level), _binomial.upper_bound(k, n, level)
    assert lower_tail(low) <= lev
    assert lower_tail(low + max(2e-8 * min(low, 1 - low), 2 * math.ulp(low))) > lev
    assert upper_tail(high) <= lev
    assert upper_tail(high - max(2e-8 * min(high, 1 - high), 2 * math.ulp(high))) > lev


@settings(max_examples=60, deadline=None)
@given(n=st.integers(2, 100_000), frac=st.floats(0, 1), log10_level=st.floats(-300, -1))
def test_property_upper_bound_tail_at_level(n, frac, log10_level):
    """Over counts and levels down to 1e-300: SciPy's betaincc (computed directly, no 1 - x) at
    the upper bound is at most the level, and above it just inside."""
    if not hasattr(scipy_special, "betaincc"):
        pytest.skip("SciPy < 1.11 has no betaincc")
    _upper_bound_tail_at_level(n, frac, log10_level)


def _upper_bound_tail_at_level(n, frac, log10_level):
    """Over counts and levels down to 1e-300: SciPy's betaincc (computed directly, no 1 - x) at
    the upper bound is at most the level, and above it just inside."""
    k = min(int(frac * n), n - 1)
    level = 10.0 ** log10_level
    high = _binomial.upper_bound(k, n, level)
    assert scipy_special.betaincc(k + 1, n - k, high) <= level * (1 + 1e-9)
    inside = scipy_special.betaincc(k + 1, n - k, high * (1 - 1e-5))
    assert inside > level or inside == 0.0  # 0: SciPy underflows (checked by mpmath above)


def test_log_tails_are_both_accurate():
    if not hasattr(scipy_special, "betaincc"):
        pytest.skip("SciPy < 1.11 has no betaincc")
    for x, a, b in [(0.3, 2.0, 5.0), (0.999, 3.0, 1e4), (1e-6, 3.0, 1e6), (0.5, 1e5, 1e5), (0.9, 0.5, 0.5)]:
        log_i, log_c = _binomial.log_beta_tails(x, a, b)
        assert math.isclose(math.exp(log_i), scipy_special.betainc(a, b, x), rel_tol=1e-8)
        assert math.isclose(math.exp(log_c), scipy_special.betaincc(a, b, x), rel_tol=1e-8)


def test_wilson_lower_bound_has_no_cancellation():
    """The Wilson lower end, computed at 60 digits from its textbook form, against the float
    one at z = 37 (level 1e-300), where the textbook form loses digits by cancellation."""
    getcontext().prec = 60
    z = -__import__("statistics").NormalDist().inv_cdf(1e-300)
    n = 10**6
    hits = np.array([0, 1, 3, 30, 1000, n // 2, n - 1, n])
    lower, upper = _events.wilson_bounds(hits, n, z)
    for h, lo, hi in zip(hits.tolist(), lower, upper):
        D, H, Z = Decimal(n), Decimal(h), Decimal(z)
        s = (H * (D - H) / D + Z * Z / 4).sqrt()
        ref_lo = (H + Z * Z / 2 - Z * s) / (D + Z * Z)
        ref_hi = (H + Z * Z / 2 + Z * s) / (D + Z * Z)
        assert math.isclose(lo, float(ref_lo), rel_tol=1e-12, abs_tol=1e-300)
        assert math.isclose(hi, min(float(ref_hi), 1.0), rel_tol=1e-12)


def _rr(seed):
    rng = np.random.default_rng(seed)
    return lambda x: np.where(rng.random(len(x)) < 0.75, x, 1 - x)  # ε = ln 3


@pytest.mark.parametrize("alpha", [1e-15, 1e-17, 1e-100, 1e-300, 1e-320])
def test_audit_runs_at_small_alpha_and_stays_below_the_truth(alpha):
    r = epsilon_lower_bound(_rr(1), 0, 1, trials=20_000, vectorized=True, seed=2, alpha=alpha)
    assert 0.0 <= r.epsilon <= math.log(3) and r.alpha == alpha


@pytest.mark.parametrize("call", [
    lambda a: epsilon_lower_bound(_rr(1), 0, 1, trials=1000, vectorized=True, alpha=a),
    lambda a: bound_from_counts(5, 1, 10, 0.0, a),
    lambda a: search_pairs(_rr(1), [(0, 1)], trials=1000, vectorized=True, alpha=a),
])
def test_alpha_too_small_for_a_float_is_a_value_error_naming_alpha(call):
    with pytest.raises(ValueError, match="alpha"):
        call(5e-324)  # alpha/2 is 0.0


def test_search_pairs_alpha_split_to_zero_is_a_value_error_naming_alpha():
    with pytest.raises(ValueError, match="alpha.*pairs"):
        search_pairs(_rr(1), [(0, 1)] * 4, trials=1000, vectorized=True, alpha=1e-323)
