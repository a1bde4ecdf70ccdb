"""Closed-form conversions and composition bounds, each with its source.

Every function here is a formula from the literature; the accountants call them and the tests
check them against independent evaluations.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Callable

import numpy as np

# Orders for RDP: dense near 1 (where small ε lives) up to 10^4; the best one is then refined
# continuously (golden section in log(α-1)).
DEFAULT_ORDERS = tuple(float(a) for a in 1.0 + np.geomspace(1e-3, 1e4, 141))


def rdp_to_epsilon_at(alpha: float, rdp: float, delta: float) -> float:
    """ε from (α, ε_α)-RDP at δ: ε_α + log((α-1)/α) - (log δ + log α)/(α-1)
    (Balle, Barthe, Gaboardi, Hsu & Sato 2020, Thm 21; also CKS 2020, Prop. 12).

    Parameters
    ----------
    alpha : float
        The Rényi order α > 1.
    rdp : float
        ε_α at that order (``math.inf`` allowed).
    delta : float
        The target δ in (0, 1).

    Returns
    -------
    float
        ε (may be negative; callers clamp), ``math.inf`` for an infinite ε_α.
    """
    if math.isinf(rdp):
        return math.inf
    return rdp + math.log1p(-1.0 / alpha) - (math.log(delta) + math.log(alpha)) / (alpha - 1.0)


def rdp_to_log_delta_at(alpha: float, rdp: float, epsilon: float) -> float:
    """log δ from (α, ε_α)-RDP at ε: (α-1)(ε_α - ε + log(1 - 1/α)) - log α (same theorem).

    Parameters
    ----------
    alpha, rdp : float
        The order α > 1 and ε_α, as in :func:`rdp_to_epsilon_at`.
    epsilon : float
        The ε at which δ is wanted.

    Returns
    -------
    float
        log δ (positive values mean δ = 1), ``math.inf`` for an infinite ε_α.
    """
    if math.isinf(rdp):
        return math.inf
    return (alpha - 1.0) * (rdp - epsilon + math.log1p(-1.0 / alpha)) - math.log(alpha)


def _minimise_over_orders(f: Callable[[float], float], orders: Sequence[float],
                          refine: bool = True) -> float:
    """min over α of f(α): every 4th order of the grid, stopping once f has risen for 3 of
    them (12 orders, as a full scan would), then every order around the best one, then a
    golden-section refinement in log(α-1) between the neighbours of the best order, to a width
    of 1e-6. Any α gives a valid bound, so a shortcut only costs tightness, never validity; it
    halves the evaluations of a curve that is costly at each α (a subsampled one)."""
    memo: dict[float, float] = {}

    def at(i: int) -> float:
        if i not in memo:
            memo[i] = f(orders[i])
        return memo[i]

    n = len(orders)
    best, best_i, rising = math.inf, -1, 0
    for i in range(0, n, 4):
        v = at(i)
        if v < best:
            best, best_i, rising = v, i, 0
        else:
            rising += 1
            if rising >= 3 and math.isfinite(best):
                break
    if best_i < 0:
        return best
    for i in range(max(0, best_i - 3), min(n, best_i + 4)):
        v = at(i)
        if v < best:
            best, best_i = v, i
    if not refine or not math.isfinite(best):
        return best
    lo = math.log(orders[best_i - 1] - 1) if best_i > 0 else math.log(orders[0] - 1) - 2
    hi = math.log(orders[best_i + 1] - 1) if best_i + 1 < n else math.log(orders[-1] - 1) + 2
    g = (math.sqrt(5) - 1) / 2
    x1, x2 = hi - g * (hi - lo), lo + g * (hi - lo)
    f1, f2 = f(1 + math.exp(x1)), f(1 + math.exp(x2))
    while hi - lo > 1e-6:
        if f1 < f2:
            hi, x2, f2 = x2, x1, f1
            x1 = hi - g * (hi - lo)
            f1 = f(1 + math.exp(x1))
        else:
            lo, x1, f1 = x1, x2, f2
            x2 = lo + g * (hi - lo)
            f2 = f(1 + math.exp(x2))
    return min(best, f1, f2)


def rdp_curve_to_epsilon(curve: Callable[[float], float], delta: float,
                         orders: Sequence[float] = DEFAULT_ORDERS) -> float:
    """min over α of the Balle et al. (2020) conversion of an RDP curve.

    Parameters
    ----------
    curve : callable
        α -> ε(α), the composed RDP curve.
    delta : float
        The target δ (<= 0 gives ``math.inf``, >= 1 gives 0).
    orders : sequence of float, optional
        The grid of orders searched (then refined continuously).

    Returns
    -------
    float
        ε >= 0.
    """
    if delta <= 0:
        return math.inf
    if delta >= 1:
        return 0.0
    return max(0.0, _minimise_over_orders(lambda a: rdp_to_epsilon_at(a, curve(a), delta), orders))


def rdp_curve_to_delta(curve: Callable[[float], float], epsilon: float,
                       orders: Sequence[float] = DEFAULT_ORDERS) -> float:
    """min over α of the Balle et al. (2020) conversion to δ at ε (capped at 1).

    Parameters
    ----------
    curve : callable
        α -> ε(α).
    epsilon : float
        The ε at which δ is wanted.
    orders : sequence of float, optional
        The grid of orders searched.

    Returns
    -------
    float
        δ in [0, 1].
    """
    log_d = _minimise_over_orders(lambda a: rdp_to_log_delta_at(a, curve(a), epsilon), orders)
    return 1.0 if log_d >= 0 else math.exp(log_d)


def zcdp_epsilon_bun_steinke(rho: float, delta: float) -> float:
    """ρ-zCDP ⇒ (ρ + 2√(ρ log(1/δ)), δ)-DP (Bun & Steinke 2016, Prop. 1.3).

    Parameters
    ----------
    rho : float
        ρ >= 0.
    delta : float
        δ in (0, 1].

    Returns
    -------
    float
        The ε of that bound.
    """
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


def zcdp_to_epsilon(rho: float, delta: float) -> float:
    """The CKS 2020 conversion (Prop. 12 / Cor. 13 with RDP αρ), optimised over real α > 1,
    never worse than Bun–Steinke's.

    Parameters
    ----------
    rho, delta : float
        ρ >= 0 and the target δ (δ <= 0 gives ``math.inf``; δ >= 1 or ρ = 0 gives 0).

    Returns
    -------
    float
        ε >= 0.
    """
    if rho == 0:
        return 0.0
    if delta <= 0:
        return math.inf
    if delta >= 1:
        return 0.0
    eps = rdp_curve_to_epsilon(lambda a: a * rho, delta)
    return max(0.0, min(eps, zcdp_epsilon_bun_steinke(rho, delta)))


def zcdp_to_delta(rho: float, epsilon: float) -> float:
    """δ at ε of ρ-zCDP: the RDP conversion of the curve αρ (CKS 2020, Prop. 12).

    Parameters
    ----------
    rho : float
        ρ >= 0 (0 gives δ = 0).
    epsilon : float
        The ε at which δ is wanted.

    Returns
    -------
    float
        δ in [0, 1].
    """
    if rho == 0:
        return 0.0
    return rdp_curve_to_delta(lambda a: a * rho, epsilon)


# ------------------------------------------------------------------ (ε, δ) composition
def basic_composition(pairs: Iterable[tuple[float, float, int]]) -> tuple[float, float]:
    """(Σ kε_i, Σ kδ_i) — composition theorem, adaptive too (Dwork & Roth 2014, Thm 3.16).

    Parameters
    ----------
    pairs : iterable of (float, float, int)
        (ε_i, δ_i, k_i): k_i uses of an (ε_i, δ_i)-DP release.

    Returns
    -------
    tuple of (float, float)
        The summed (ε, δ), with compensated sums.
    """
    pairs = list(pairs)
    return (math.fsum(c * e for e, _, c in pairs), math.fsum(c * d for _, d, c in pairs))


def advanced_composition_drv(epsilon: float, delta: float, k: int, delta_prime: float) -> tuple[float, float]:
    """Dwork, Rothblum & Vadhan 2010 (Dwork–Roth Thm 3.20): k-fold (ε, δ) is
    (√(2k ln(1/δ')) ε + k ε (e^ε - 1), kδ + δ')-DP. δ' must be in (0, 1].

    Parameters
    ----------
    epsilon, delta : float
        The guarantee of one use.
    k : int
        The number of uses.
    delta_prime : float
        The extra δ' in (0, 1] traded for a smaller ε.

    Returns
    -------
    tuple of (float, float)
        The composed (ε, δ).

    Raises
    ------
    ValueError
        If ``delta_prime`` is not in (0, 1].
    """
    if not 0 < delta_prime <= 1:
        raise ValueError(f"delta_prime must be in (0, 1], got {delta_prime!r}")
    return (math.sqrt(2 * k * math.log(1 / delta_prime)) * epsilon + k * epsilon * math.expm1(epsilon),
            k * delta + delta_prime)


# Largest window of binomial terms the exact KOV computation holds; above it (counts beyond
# ~8·10^9) the closed-form KOV bound is used, so time and memory never grow with the count.
KOV_MAX_WINDOW = 1 << 20
# Hoeffding tail of the binomial outside the window: P(|J - kp| >= t) <= 2 exp(-2t²/k) = 2e-30
_KOV_LOG_TAIL = math.log(1e30)
KOV_TAIL = 2e-30


def _rr_window(epsilon0: float, k: int) -> tuple[np.ndarray, np.ndarray, float]:
    """The terms of k-fold ε0-randomized response that matter: J ~ Bin(k, p), p = e^ε0/(1+e^ε0),
    loss (2J - k)ε0. Returns (losses, log P-masses, mass outside): all of J in [0, k] while
    k < KOV_MAX_WINDOW, else J within t = √(k·ln(1e30)/2) of kp; the mass outside is at most KOV_TAIL (Hoeffding
    1963, Thm 1). Raises OverflowError when the window exceeds KOV_MAX_WINDOW."""
    log_p = -math.log1p(math.exp(-epsilon0))  # log e^ε0/(1+e^ε0)
    log_q = -epsilon0 + log_p
    p = math.exp(log_p)
    t = math.sqrt(k * _KOV_LOG_TAIL / 2.0)
    lo, hi = max(0, math.floor(k * p - t)), min(k, math.ceil(k * p + t))
    if k + 1 <= KOV_MAX_WINDOW:
        lo, hi = 0, k  # small counts: every term, exactly
    outside = 0.0 if (lo == 0 and hi == k) else KOV_TAIL
    if hi - lo + 1 > KOV_MAX_WINDOW:
        raise OverflowError("window too large")
    j = np.arange(lo, hi + 1, dtype=float)
    # log C(k, j) from lgamma at the window's start, then the ratio recurrence
    first = math.lgamma(k + 1) - math.lgamma(lo + 1) - math.lgamma(k - lo + 1)
    steps = np.log((k - j[1:] + 1) / j[1:])
    log_binom = first + np.concatenate([[0.0], np.cumsum(steps)])
    return (2 * j - k) * epsilon0, log_binom + j * log_p + (k - j) * log_q, outside


# relative margin for the rounding of the log-binomial recurrence (< 1e-10 over 2^21 steps)
_KOV_REL_MARGIN = 1e-9


def kov_rr_delta(epsilon0: float, k: int, epsilon: float) -> float:
    """δ(ε) of k-fold ε0-randomized response = the optimal composition of k ε0-DP mechanisms
    (Kairouz, Oh & Viswanath 2015, Thm 3.3, at any ε, not only at the (k-2i)ε0 breakpoints):
    Σ_j C(k,j) p^j q^{k-j} (1 - e^{ε - (2j-k)ε0})_+ with p = e^ε0/(1+e^ε0).
    Exact for small k; for large k the sum runs over a Hoeffding window and the mass outside it
    (<= 2e-30) is added, so the value is never below the exact one. Time and memory are
    O(min(k, √k·12, 2^21)); OverflowError past that (callers fall back to a closed form).

    Parameters
    ----------
    epsilon0 : float
        ε0 >= 0 of each mechanism.
    k : int
        The number of mechanisms.
    epsilon : float
        The ε at which δ is wanted.

    Returns
    -------
    float
        δ in [0, 1], never below the exact value.
    """
    if epsilon0 == 0:
        return 0.0 if epsilon >= 0 else -math.expm1(epsilon)
    loss, log_mass, outside = _rr_window(epsilon0, k)
    sel = loss > epsilon
    if not sel.any():
        return outside
    terms = np.exp(log_mass[sel]) * -np.expm1(epsilon - loss[sel])
    return min(1.0, float(np.sum(terms)) * (1 + _KOV_REL_MARGIN) + outside)


def kov_rr_epsilon(epsilon0: float, k: int, delta: float) -> float:
    """The least ε with kov_rr_delta(ε0, k, ε) <= delta, in one pass over the window: on
    [l_{j-1}, l_j) the profile is A_j - e^ε B_j with suffix sums A_j = Σ_{i>=j} m_i,
    B_j = Σ_{i>=j} m_i e^{-l_i}, so the crossing is solved in closed form.

    Parameters
    ----------
    epsilon0, k
        As for :func:`kov_rr_delta`.
    delta : float
        The target δ (>= 1 gives 0).

    Returns
    -------
    float
        ε >= 0.

    Raises
    ------
    OverflowError
        When the window is too large, or ``delta`` is below the mass left outside it.
    """
    if epsilon0 == 0 or delta >= 1:
        return 0.0
    loss, log_mass, outside = _rr_window(epsilon0, k)
    if outside * (1 + 1e-12) >= delta:
        raise OverflowError("delta below the window's tail bound")
    scale = 1 + _KOV_REL_MARGIN
    budget = (delta - outside) / scale  # what the in-window sum may reach
    # suffix log-sums (from the top) of m_i and of m_i e^{-l_i}
    log_a = np.logaddexp.accumulate(log_mass[::-1])[::-1]
    log_b = np.logaddexp.accumulate((log_mass - loss)[::-1])[::-1]
    # profile at ε = l_j (terms i > j): D_j = A_{j+1}(1 - e^{l_j + log B_{j+1} - log A_{j+1}})
    d_at = np.zeros(loss.size)
    with np.errstate(under="ignore"):
        d_at[:-1] = np.exp(log_a[1:]) * -np.expm1(loss[:-1] + log_b[1:] - log_a[1:])
    ok = np.nonzero(d_at <= budget)[0]
    j = int(ok[0])  # D is non-increasing in j and D_top = 0 <= budget
    # on [l_{j-1}, l_j]: A_j - e^ε B_j = budget  ⇒  ε = log(A_j - budget) - log B_j
    a_j = math.exp(float(log_a[j]))
    if a_j <= budget:
        eps = -math.inf
    else:
        eps = math.log(a_j - budget) - float(log_b[j])
    low = float(loss[j - 1]) if j > 0 else -math.inf
    return max(0.0, min(float(loss[j]), max(low, eps)))


def kov_homogeneous_delta(epsilon0: float, delta0: float, k: int, epsilon: float) -> float:
    """KOV 2015 Thm 3.3: δ_total(ε) = 1 - (1-δ0)^k (1 - δ_RR(ε)).

    Parameters
    ----------
    epsilon0, delta0 : float
        The (ε0, δ0) of each of the ``k`` identical mechanisms.
    k : int
        How many are composed.
    epsilon : float
        The ε at which δ is wanted.

    Returns
    -------
    float
        δ_total in [0, 1].
    """
    if delta0 >= 1:
        return 1.0
    rr = kov_rr_delta(epsilon0, k, epsilon)
    if rr >= 1:
        return 1.0
    return -math.expm1(k * math.log1p(-delta0) + math.log1p(-rr))  # no rounding to 0


def kov_heterogeneous_epsilon(pairs: Sequence[tuple[float, int]], delta_tilde: float) -> float:
    """KOV 2015 Thm 3.5 (heterogeneous ε_i, the δ_i handled by the caller):
    min{Σε_i, Σ(e^ε_i-1)ε_i/(e^ε_i+1) + √(2Σε_i² log(e + √(Σε_i²)/δ̃)),
                Σ(e^ε_i-1)ε_i/(e^ε_i+1) + √(2Σε_i² log(1/δ̃))}.

    Parameters
    ----------
    pairs : sequence of (float, int)
        (ε_i, count_i) of the composed pure-DP parts.
    delta_tilde : float
        The δ̃ spent on the bound (<= 0 gives the basic sum Σε_i).

    Returns
    -------
    float
        The composed ε.
    """
    total = math.fsum(c * e for e, c in pairs)
    if delta_tilde <= 0:
        return total
    a = math.fsum(c * math.tanh(e / 2) * e for e, c in pairs)  # (e^ε-1)/(e^ε+1) = tanh(ε/2)
    s = math.fsum(c * e * e for e, c in pairs)
    b1 = a + math.sqrt(2 * s * math.log(math.e + math.sqrt(s) / delta_tilde))
    b2 = a + math.sqrt(2 * s * math.log(1 / delta_tilde)) if delta_tilde < 1 else a
    return min(total, b1, b2)


def group_approx_dp(epsilon: float, delta: float, k: int) -> tuple[float, float]:
    """(ε, δ)-DP for neighbours ⇒ (kε, k e^{(k-1)ε} δ)-DP for groups of k: the hybrid argument
    of Dwork & Roth 2014, Thm 2.2, over the k records gives δ Σ_{i<k} e^{iε} <= k e^{(k-1)ε} δ.

    Parameters
    ----------
    epsilon, delta : float
        The guarantee for neighbours.
    k : int
        The group size.

    Returns
    -------
    tuple of (float, float)
        (kε, min(1, k e^{(k-1)ε} δ)).
    """
    return k * epsilon, min(1.0, k * math.exp((k - 1) * epsilon) * delta)
