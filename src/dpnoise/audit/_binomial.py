"""Exact one-sided Clopper-Pearson bounds of a binomial proportion (NumPy-free, stdlib only).

Clopper & Pearson (1934): with k successes in n trials, the one-sided lower bound at level a is
the p solving P_p[X >= k] = a, and the upper bound the p solving P_p[X <= k] = a. Both tails are
regularised incomplete beta functions (Abramowitz & Stegun 26.5.24 / 6.6.4):
P_p[X >= k] = I_p(k, n - k + 1) and P_p[X <= k] = 1 - I_p(k + 1, n - k). I_x(a, b) is computed
with the continued fraction of A&S 26.5.8, evaluated by the modified Lentz method (Numerical
Recipes, 3rd ed., §6.4), and the bound is found by bisection; each bound is returned at the
conservative end of its bracket (the lower bound rounded down, the upper one rounded up).
"""
from __future__ import annotations

import math

_MAX_ITERATIONS = 1_000_000
_TINY = 1e-300
_EPS = 1e-16
_BISECTIONS = 200  # the bracket [0, 1] halves to below 2^-200: far below any bound of interest
# I_x is accurate to about 1e-9 relative for arguments near 10^6 (lgamma's rounding; measured
# against scipy in tests/audit/test_binomial.py), which moves a bound's level by 1e-9 of itself;
# each bound is moreover moved outward by this relative margin.
_MARGIN = 1e-8


def _beta_continued_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of I_x(a, b) (A&S 26.5.8), modified Lentz; converges fast for
    x < (a + 1)/(a + b + 2), in O(sqrt(max(a, b))) terms."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, _MAX_ITERATIONS):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > _TINY else _TINY)
        c = 1.0 + aa / c
        c = c if abs(c) > _TINY else _TINY
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > _TINY else _TINY)
        c = 1.0 + aa / c
        c = c if abs(c) > _TINY else _TINY
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < _EPS:
            return h
    raise ArithmeticError(f"the incomplete beta continued fraction did not converge (a={a}, b={b}, x={x})")


def regularized_beta(x: float, a: float, b: float) -> float:
    """I_x(a, b), the regularised incomplete beta function, for a, b > 0 and 0 <= x <= 1."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                 + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_continued_fraction(a, b, x) / a
    # symmetry I_x(a, b) = 1 - I_{1-x}(b, a) where the fraction converges
    return 1.0 - math.exp(log_front) * _beta_continued_fraction(b, a, 1.0 - x) / b


def _check(k: int, n: int, level: float) -> None:
    if not (isinstance(k, int) and isinstance(n, int)) or n < 1 or not 0 <= k <= n:
        raise ValueError(f"need integers 0 <= k <= n, n >= 1; got k={k!r}, n={n!r}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")


def lower_bound(k: int, n: int, level: float) -> float:
    """One-sided Clopper-Pearson lower bound: P(p < bound) <= level for every p.

    The p with P_p[X >= k] = level (P_p[X >= k] increases in p), rounded down."""
    _check(k, n, level)
    if k == 0:
        return 0.0
    if k == n:
        return math.nextafter(level ** (1.0 / n), 0.0)  # P_p[X >= n] = p^n = level, rounded down
    lo, hi = 0.0, 1.0
    for _ in range(_BISECTIONS):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        if regularized_beta(mid, k, n - k + 1) <= level:
            lo = mid
        else:
            hi = mid
    return lo * (1.0 - _MARGIN)


def upper_bound(k: int, n: int, level: float) -> float:
    """One-sided Clopper-Pearson upper bound: P(p > bound) <= level for every p.

    The p with P_p[X <= k] = level (P_p[X <= k] decreases in p), rounded up."""
    _check(k, n, level)
    if k == n:
        return 1.0
    if k == 0:
        # P_p[X <= 0] = (1 - p)^n = level; -expm1(log(level)/n), nudged up one ulp
        return math.nextafter(-math.expm1(math.log(level) / n), 1.0)
    lo, hi = 0.0, 1.0
    for _ in range(_BISECTIONS):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        if 1.0 - regularized_beta(mid, k + 1, n - k) <= level:
            hi = mid
        else:
            lo = mid
    return min(1.0, hi * (1.0 + _MARGIN))
