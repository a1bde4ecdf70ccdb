"""Numerical helpers for the accountants: normal tails in log space, log-sum-exp, bisection.

NumPy is the only runtime dependency, so the normal CDF comes from ``math.erfc`` (accurate to a
few ulps relative, also deep in the tail) applied element-wise, with the standard asymptotic
series below the point where ``erfc`` underflows.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

_erfc = np.frompyfunc(math.erfc, 1, 1)
_SQRT2 = math.sqrt(2.0)
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def normal_cdf(x: np.ndarray | float) -> np.ndarray:
    """Φ(x) with full relative accuracy in the lower tail (and 1 - Φ(-x) in the upper)."""
    x = np.asarray(x, dtype=float)
    return np.asarray(_erfc(-x / _SQRT2), dtype=float) * 0.5


def normal_sf(x: np.ndarray | float) -> np.ndarray:
    """1 - Φ(x), accurate in the upper tail."""
    return normal_cdf(-np.asarray(x, dtype=float))


def log_normal_cdf(x: np.ndarray | float) -> np.ndarray:
    """log Φ(x); for x < -37 (where erfc underflows) the asymptotic series of Mills' ratio."""
    x = np.asarray(x, dtype=float)
    out = np.empty_like(x)
    deep = x < -37.0
    with np.errstate(divide="ignore"):
        out[~deep] = np.log(normal_cdf(x[~deep]))
    z = x[deep]
    if z.size:
        z2 = z * z
        # log Φ(z) = -z²/2 - log(-z) - log √(2π) + log(1 - 1/z² + 3/z⁴ - 15/z⁶)  (Abramowitz–Stegun 26.2.12)
        out[deep] = -0.5 * z2 - np.log(-z) - _LOG_SQRT_2PI + np.log1p(-1 / z2 + 3 / z2**2 - 15 / z2**3)
    return out


class TargetNotMet(ValueError):
    """No parameter up to the search limit meets the target."""


def least_meeting(ok: Callable[[float], bool], start: float, *, rel: float = 1e-12,
                  limit: float = 1e300) -> float:
    """The least x > 0 with ok(x), for ok monotone (false below some point, true above), to
    relative precision ``rel``; the returned x always satisfies ok. Raises TargetNotMet when no
    x up to ``limit`` does. An OverflowError raised by ok (a parameter the analysis cannot hold)
    counts as "not met".

    Bounded work: the bracket grows by repeated squaring of the ratio to ``start`` (at most
    ~11 steps to 10^±300) and is then bisected in log x, about log2(log(hi/lo)/rel) steps."""
    def good(log_x: float) -> bool:
        try:
            return bool(ok(math.exp(log_x)))
        except OverflowError:
            return False

    log_limit, log_min = math.log(min(limit, 1e300)), math.log(1e-300)
    x0 = min(max(math.log(start), log_min), log_limit)
    if good(x0):
        hi, step = x0, 1.0
        lo = max(log_min, x0 - step)
        while lo > log_min and good(lo):
            hi = lo
            step *= 2.0
            lo = max(log_min, x0 - step)
        if lo <= log_min and good(lo):
            return math.exp(lo)
    else:
        lo, step = x0, 1.0
        hi = min(log_limit, x0 + step)
        while not good(hi):
            if hi >= log_limit:
                raise TargetNotMet("no value meets the target")
            lo = hi
            step *= 2.0
            hi = min(log_limit, x0 + step)
    tol = math.log1p(rel)
    while hi - lo > tol:  # invariant: good(hi), not good(lo)
        mid = 0.5 * (lo + hi)
        if not lo < mid < hi:  # adjacent floats (|log x| large, rel below their spacing): done
            break
        if good(mid):
            hi = mid
        else:
            lo = mid
    return math.exp(hi)
