"""Numerics shared by the shuffle-model bounds (docs/accounting.md, "Shuffle-model accounting"):
binomial windows with Chernoff tails, binomial pmfs with a bounded relative error, and the
bisection that returns the checked end. Every function here errs upward only."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

# relative error bound of the float pmf / tail sums below (derivation in docs/accounting.md:
# log-pmf by a cumulative sum of at most _MAX_WINDOW log ratios of magnitude <= 200 in total,
# |error| <= _MAX_WINDOW·2^-53·200 < 3e-8); every δ term is inflated by this much
_REL_TOL = 1e-7
_MAX_WINDOW = 1 << 21
_BISECTION_STEPS = 60


# --------------------------------------------------------------------------- binomial windows
def _kl(a: float, b: float) -> float:
    """KL(Bern(a) ‖ Bern(b)), 0 log 0 = 0."""
    out = 0.0
    if a > 0:
        out += a * math.log(a / b)
    if a < 1:
        out += (1 - a) * (math.log1p(-a) - math.log1p(-b)) if b < 1 else math.inf
    return out


def _chernoff_below(m: int, prob: float, k: int) -> float:
    """An upper bound on Pr[Bin(m, prob) < k] (Chernoff–Hoeffding: exp(-m·KL((k-1)/m ‖ prob)) for
    k - 1 <= m·prob; Hoeffding 1963, Thm 1)."""
    if k <= 0:
        return 0.0
    a = (k - 1) / m
    if a >= prob:
        return 1.0
    return min(1.0, math.exp(-m * _kl(a, prob)))


def _chernoff_above(m: int, prob: float, k: int) -> float:
    """An upper bound on Pr[Bin(m, prob) > k] (as :func:`_chernoff_below`, upper tail)."""
    if k >= m:
        return 0.0
    a = (k + 1) / m
    if a <= prob:
        return 1.0
    return min(1.0, math.exp(-m * _kl(a, prob)))


def _window(m: int, prob: float, tail: float) -> tuple[int, int, float, float]:
    """[lo, hi] holding Bin(m, prob) but at most ``tail`` on each side (Chernoff): returns
    (lo, hi, bound on Pr[X < lo], bound on Pr[X > hi])."""
    mean = m * prob
    sd = math.sqrt(max(m * prob * (1 - prob), 1.0))
    lo_i, hi_i = 0, max(0, min(m, int(mean)))  # Pr[X < lo] <= tail for lo in [0, lo_i]
    while hi_i - lo_i > 1:  # the largest lo with the bound <= tail (bisection)
        mid = (lo_i + hi_i) // 2
        if _chernoff_below(m, prob, mid) <= tail:
            lo_i = mid
        else:
            hi_i = mid
    lo = lo_i if _chernoff_below(m, prob, hi_i) > tail else hi_i
    lo_i, hi_i = min(m, int(mean) + 1), m
    while hi_i - lo_i > 1:  # the least hi with Pr[X > hi] <= tail
        mid = (lo_i + hi_i) // 2
        if _chernoff_above(m, prob, mid) <= tail:
            hi_i = mid
        else:
            lo_i = mid
    hi = lo_i if _chernoff_above(m, prob, lo_i) <= tail else hi_i
    if hi - lo + 1 > _MAX_WINDOW:  # cannot happen for m <= 2^62 (width ~ 30·sd); guarded anyway
        raise ValueError(f"the binomial window is too wide ({hi - lo + 1} points, sd {sd:.3g})")
    return lo, hi, _chernoff_below(m, prob, lo), _chernoff_above(m, prob, hi)


def _binomial_pmf(m: int, log_odds: float, lo: int, hi: int) -> np.ndarray:
    """Bin(m, prob) at lo..hi, normalised to sum 1 over the window (so never below the true pmf,
    up to _REL_TOL): log pmf by the cumulative sum of log((m - k)/(k + 1)) + log_odds from the
    window's mode outward, so that errors do not grow with the magnitude of lgamma(m)."""
    k = np.arange(lo, hi, dtype=np.float64)
    steps = np.log((m - k) / (k + 1.0)) + log_odds  # log pmf(k+1) - log pmf(k)
    logp = np.empty(hi - lo + 1)
    if steps.size == 0:
        return np.ones(1)
    # anchor at the mode: steps are decreasing, positive before the mode and negative after it
    mode = int(np.searchsorted(-steps, 0.0))  # first index with steps <= 0
    logp[mode] = 0.0
    if mode < steps.size:
        logp[mode + 1:] = np.cumsum(steps[mode:])
    if mode > 0:
        logp[:mode] = -np.cumsum(steps[:mode][::-1])[::-1]
    p = np.exp(logp - logp.max())
    return p / p.sum()



def _least_epsilon(curve: Any, delta: float, epsilon0: float) -> float:
    """The least ε in [0, ε0] on a bisection with curve(ε) <= ``delta`` (never below: the end
    returned is one where the curve was checked); curve is a δ(ε) that decreases in ε."""
    if curve(0.0) <= delta:
        return 0.0
    lo, hi = 0.0, epsilon0
    for _ in range(_BISECTION_STEPS):
        mid = 0.5 * (lo + hi)
        if curve(mid) <= delta:
            hi = mid
        else:
            lo = mid
        if hi - lo <= 1e-12 * hi:
            break
    return hi
