"""Variance formulas and estimators of the numeric mean oracles, in the units of the input grid
t in [-1, 1] (value = midpoint + t * half_width). Pure functions of ε and of the aggregator's
integer sums, so they port to any envelope unchanged (docs/ldp_numeric.md)."""
from __future__ import annotations

import math

import numpy as np


def duchi_scale(epsilon: float) -> float:
    """C = (e^ε + 1)/(e^ε − 1), Duchi's report magnitude (Duchi, Jordan & Wainwright 2018, §4.2.3;
    Wang et al. 2019, Eq. 1), from expm1 so that small ε stays accurate."""
    em1 = math.expm1(epsilon)
    return (em1 + 2) / em1


def duchi_variance(epsilon: float, t: float = 0.0) -> float:
    """Var = C² − t² (Wang et al. 2019, Eq. 3); worst case C² at t = 0. 1BitMean's variance in the
    units of [0, m] is m²/4 times this (Ding, Kulkarni & Yekhanin 2017, §2.1: the same bit)."""
    return duchi_scale(epsilon) ** 2 - t * t


def piecewise_variance(epsilon: float, t: float = 1.0) -> float:
    """Var = t²/(e^{ε/2} − 1) + (e^{ε/2} + 3)/(3(e^{ε/2} − 1)²) (Wang et al. 2019, Lemma 2); worst
    case 4e^{ε/2}/(3(e^{ε/2} − 1)²) at |t| = 1."""
    sm1 = math.expm1(epsilon / 2)
    return t * t / sm1 + (sm1 + 4) / (3 * sm1 ** 2)


def piecewise_grid_variance(c_tilde: float, t: float = 1.0) -> float:
    """The continuous Piecewise mechanism with C replaced by C~ >= C (docs/ldp_numeric.md, Eq. V):
    t²(C~ − 1)/2 + (C~ − 1)(2C~ − 1)/6; equal to piecewise_variance at C~ = C. The output grid's
    randomized rounding adds at most 2^-2G/4 (G >= 8; about 2^-76 at ε = 1)."""
    return t * t * (c_tilde - 1) / 2 + (c_tilde - 1) * (2 * c_tilde - 1) / 6


def hybrid_mixes(epsilon: float) -> bool:
    """Whether the hybrid mechanism mixes (α = 1 − e^{−ε/2}) or is Duchi's alone (α = 0): the
    choice with the smaller worst-case variance (Wang et al. 2019, §III-C: mixing above
    ε* ≈ 0.61)."""
    return hybrid_mixed_variance(epsilon) < duchi_variance(epsilon)


def hybrid_mixed_variance(epsilon: float) -> float:
    """The hybrid's variance with α = 1 − e^{−ε/2}, the same for every t:
    (e^{ε/2} + 3)/(3e^{ε/2}(e^{ε/2} − 1)) + (e^ε + 1)²/(e^{ε/2}(e^ε − 1)²) (Wang et al. 2019, Lemma 4)."""
    s = math.exp(epsilon / 2)
    sm1 = math.expm1(epsilon / 2)
    return (s + 3) / (3 * s * sm1) + duchi_scale(epsilon) ** 2 / s


# the randomizer a mean method runs: the C++ kernel's Method (mean_mechanisms.hpp), which each
# method class declares as its ``kernel`` (Duchi's bit for "duchi" and "bitmean")
DUCHI_BIT, PIECEWISE, HYBRID = 0, 1, 2


def worst_case_variance(kernel: int, epsilon: float) -> float:
    """The worst-case variance of one user's report over t in [-1, 1], per the papers, for the
    randomizer ``kernel`` (DUCHI_BIT, PIECEWISE or HYBRID)."""
    if kernel == DUCHI_BIT:
        return duchi_variance(epsilon)
    if kernel == PIECEWISE:
        return piecewise_variance(epsilon, 1.0)
    return hybrid_mixed_variance(epsilon) if hybrid_mixes(epsilon) else duchi_variance(epsilon)


def grid_worst_case_variance(kernel: int, epsilon: float, c_tilde: float, grid_bits: int) -> float:
    """The worst case of the implemented (grid) mechanism: the papers' formulas with the Piecewise
    part at C~ (an upper bound, so the stated errors never undershoot because of the grid), plus
    the output rounding's 2^-2G/4."""
    rounding = 0.25 * 2.0 ** (-2 * grid_bits)
    if kernel == DUCHI_BIT:
        return duchi_variance(epsilon)
    if kernel == PIECEWISE:
        return piecewise_grid_variance(c_tilde, 1.0) + rounding
    if not hybrid_mixes(epsilon):
        return duchi_variance(epsilon)
    a = -math.expm1(-epsilon / 2)  # α
    # α V_PM(t) + (1 − α) V_D(t) is maximal at |t| = 1 or t = 0 (it is quadratic in t)
    return max(a * (piecewise_grid_variance(c_tilde, t) + rounding) + (1 - a) * duchi_variance(epsilon, t)
               for t in (0.0, 1.0))


def moments(epsilon: float, grid_bits: int, users: np.ndarray, duchi_users: np.ndarray, duchi_ones: np.ndarray,
            pm_sum: list[int], pm_sum_squares: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Per coordinate: the mean of the reports (unbiased for the mean of t) and the sum of squared
    deviations Σ(y − ȳ)², from the exact integer sums, group by group (Duchi reports ±C, Piecewise
    reports z/2^G) and combined with the between-groups term, so that nothing cancels badly."""
    c = duchi_scale(epsilon)
    k = users.size
    mean = np.full(k, np.nan)
    ss = np.full(k, np.nan)
    scale = 2.0 ** -grid_bits
    for j in range(k):
        n = int(users[j])
        if n == 0:
            continue
        d, o = int(duchi_users[j]), int(duchi_ones[j])
        p = n - d
        s, q = pm_sum[j], pm_sum_squares[j]
        mean_d = c * (2 * o - d) / d if d else 0.0
        ss_d = c * c * 4 * o * (d - o) / d if d else 0.0  # Σ(±C − ȳ_D)² = C² 4 o (d − o)/d
        mean_p = s * scale / p if p else 0.0
        ss_p = (p * q - s * s) * scale * scale / p if p else 0.0  # exact integers, then scaled
        mean[j] = (d * mean_d + p * mean_p) / n
        ss[j] = ss_d + ss_p + (d * p / n) * (mean_d - mean_p) ** 2
    return mean, ss


def mean_variance(mean_ss: tuple[np.ndarray, np.ndarray], users: np.ndarray, worst: float) -> np.ndarray:
    """The variance of each coordinate's mean: the reports' sample variance over the users
    (unbiased for the average per-user variance plus the spread of the users' own values, so
    never too small in expectation; exact when all users hold one value), capped at the worst
    case worst/n, which bounds it for every data set; worst/n when n < 2, nan when n = 0."""
    _, ss = mean_ss
    n = users.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        sample = np.where(n >= 2, ss / np.maximum(n - 1, 1) / n, np.inf)
        bound = np.where(n >= 1, worst / n, np.nan)
    return np.minimum(sample, bound)


def two_layer_epsilon(epsilon: float, instantaneous_epsilon: float) -> float:
    """The ε of one Duchi bit equal to a bit at ε∞ then binary randomized response at ε₁: a Duchi
    bit has P(+) = 1/2 + t tanh(ε/2)/2, and the flip multiplies the slope by p₁ − q₁ = tanh(ε₁/2)
    (RAPPOR, Erlingsson et al. 2014, §3: P − Q = (p∞ − q∞)(p₁ − q₁)), so the pair is Duchi's bit at
    2 artanh(tanh(ε∞/2) tanh(ε₁/2)), whose C = C∞ C₁. For large ε, where the product rounds to 1,
    the same as ln((1 + ab)/(a + b)) with a = e^−ε∞, b = e^−ε₁."""
    k = math.tanh(epsilon / 2) * math.tanh(instantaneous_epsilon / 2)
    if k < 0.5:
        return 2 * math.atanh(k)
    a, b = math.exp(-epsilon), math.exp(-instantaneous_epsilon)
    return math.log1p(a * b) - math.log(a + b)
