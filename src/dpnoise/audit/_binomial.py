"""Exact one-sided Clopper-Pearson bounds of a binomial proportion (NumPy-free, stdlib only).

Clopper & Pearson (1934): with k successes in n trials, the one-sided lower bound at level a is
the p solving P_p[X >= k] = a, and the upper bound the p solving P_p[X <= k] = a. Both tails are
regularised incomplete beta functions (Abramowitz & Stegun 26.5.24 / 6.6.4):
P_p[X >= k] = I_p(k, n - k + 1) and P_p[X <= k] = 1 - I_p(k + 1, n - k) = I_{1-p}(n - k, k + 1).
Both tails are computed directly, as logarithms (:func:`log_beta_tails`): the tail the continued
fraction of A&S 26.5.8 converges for is exp(log prefactor) · fraction, and the other is log1p of
minus it, which never cancels since the first is at most about 0.9 there. A tail is never
formed as 1 − (a value near 1), which saturates near 1e-16 (the upper bound was wrong for levels
below about 1e-15 before 0.7.2), so levels down to the smallest float are honoured. The fraction
is evaluated by the modified Lentz method (Numerical Recipes, 3rd ed., §6.4), and the bound is
found by bisection (over the floats' bit patterns, down to adjacent floats) on log tail against
log level; each bound is returned at the conservative end
of its bracket (the lower bound rounded down, the upper one rounded up).
"""
from __future__ import annotations

import math
import struct
from typing import Callable

_MAX_ITERATIONS = 1_000_000
_TINY = 1e-300
_EPS = 1e-16
# I_x is accurate to about 1e-9 relative for arguments near 10^6 (lgamma's rounding; measured
# against scipy in tests/audit/test_binomial.py), which moves a bound's level by 1e-9 of itself;
# each bound is moreover moved outward by this relative margin, relative to the nearer of p and
# 1 - p (near 1 a margin relative to p would push an upper bound to 1 and a lower one far down).
_MARGIN = 1e-8
_LN2 = math.log(2.0)


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


def log_beta_tails(x: float, a: float, b: float) -> tuple[float, float]:
    """(log I_x(a, b), log(1 − I_x(a, b))), each computed without cancellation.

    I_x and its complement I_{1-x}(b, a) are written as exp(log prefactor) · fraction / a (A&S
    26.5.8) for the one whose continued fraction converges (x below or above
    (a + 1)/(a + b + 2)); the other is log1p(−that). Valid for a, b > 0 and 0 <= x <= 1."""
    if x <= 0.0:
        return -math.inf, 0.0
    if x >= 1.0:
        return 0.0, -math.inf
    log_front = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                 + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        log_i = log_front + math.log(_beta_continued_fraction(a, b, x) / a)
        return log_i, _log1m_exp(log_i)
    # symmetry 1 - I_x(a, b) = I_{1-x}(b, a), where the fraction converges
    log_c = log_front + math.log(_beta_continued_fraction(b, a, 1.0 - x) / b)
    return _log1m_exp(log_c), log_c


def _log1m_exp(log_v: float) -> float:
    """log(1 − e^log_v) for log_v <= 0 (Mächler 2012, "Accurately computing log(1 − exp(−|a|))")."""
    if log_v >= 0.0:
        return -math.inf
    return math.log(-math.expm1(log_v)) if log_v > -_LN2 else math.log1p(-math.exp(log_v))


def regularized_beta(x: float, a: float, b: float) -> float:
    """I_x(a, b), the regularised incomplete beta function, for a, b > 0 and 0 <= x <= 1."""
    return math.exp(log_beta_tails(x, a, b)[0])


def regularized_beta_complement(x: float, a: float, b: float) -> float:
    """1 − I_x(a, b), computed directly (accurate where it is far below 1e-16)."""
    return math.exp(log_beta_tails(x, a, b)[1])


def _check(k: int, n: int, level: float) -> float:
    if not (isinstance(k, int) and isinstance(n, int)) or n < 1 or not 0 <= k <= n:
        raise ValueError(f"need integers 0 <= k <= n, n >= 1; got k={k!r}, n={n!r}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    return math.log(level)


def _bits(x: float) -> int:
    return struct.unpack("<q", struct.pack("<d", x))[0]


def _float(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<q", bits))[0]


def _bisect(below: Callable[[float], bool]) -> tuple[float, float]:
    """Adjacent floats (lo, hi) in [0, 1] with ``below(lo)`` true and ``below(hi)`` false, for a
    predicate true on [0, root] and false above it (``below(0)`` is taken as true and
    ``below(1)`` as false). The bisection runs over the bit patterns of the floats, which order
    non-negative floats like their values (IEEE 754-2008, §3.4), so it resolves a root near
    1e-300 as finely as one near 0.5, in at most 63 steps."""
    lo, hi = 0, _bits(1.0)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if below(_float(mid)):
            lo = mid
        else:
            hi = mid
    return _float(lo), _float(hi)


def lower_bound(k: int, n: int, level: float) -> float:
    """One-sided Clopper-Pearson lower bound: P(p < bound) <= level for every p.

    The p with P_p[X >= k] = level (P_p[X >= k] increases in p), rounded down."""
    log_level = _check(k, n, level)
    if k == 0:
        return 0.0
    if k == n:
        return math.nextafter(math.exp(log_level / n), 0.0)  # P_p[X >= n] = p^n = level, rounded down
    lo, _ = _bisect(lambda p: log_beta_tails(p, k, n - k + 1)[0] <= log_level)
    return max(0.0, lo - _MARGIN * min(lo, 1.0 - lo))


def upper_bound(k: int, n: int, level: float) -> float:
    """One-sided Clopper-Pearson upper bound: P(p > bound) <= level for every p.

    The p with P_p[X <= k] = level (P_p[X <= k] decreases in p), rounded up."""
    log_level = _check(k, n, level)
    if k == n:
        return 1.0
    if k == 0:
        # P_p[X <= 0] = (1 - p)^n = level; -expm1(log(level)/n), nudged up one ulp
        return math.nextafter(-math.expm1(log_level / n), 1.0)
    # P_p[X <= k] = 1 - I_p(k + 1, n - k), its log computed directly (no 1 - x)
    _, hi = _bisect(lambda p: log_beta_tails(p, k + 1, n - k)[1] > log_level)
    return min(1.0, hi + _MARGIN * min(hi, 1.0 - hi))
