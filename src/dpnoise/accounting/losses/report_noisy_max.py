"""Private selection by report-noisy-max (three methods), one selection or a batch of them."""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ... import _validate as check
from .base import Atoms, PrivacyLoss, _atoms_rdp, _fields, _register, _rr_atoms

_NOISY_MAX_METHODS = ("laplace", "permute_and_flip", "exponential_mechanism")

# The loss distribution of many selections is cut to a window of the binomial, outside which
# there is at most this much mass (a geometric bound); the upper part goes to the infinite-loss
# atom, the lower part is carried by the window (docs/accounting.md).
_TAIL_MASS = 1e-18
# Beyond this many atoms in the window the loss distribution is not built (None): the PLD
# accountant then refuses the loss and names the accountants that take it.
_MAX_ATOMS = 1 << 22
# The closed form of the bounded-range RDP is evaluated up to this order; above it the other
# two bounds (randomized response, zCDP) are used.
_BR_MAX_ORDER = 1e12


@_register
@dataclass(frozen=True)
class ReportNoisyMax(PrivacyLoss):
    """``selections`` private selections by report-noisy-max, each calibrated for ε with scores
    of sensitivity 1, composed sequentially (adaptively, e.g. top-k by peeling).

    A whole score matrix of R rows with top-k by peeling is R·k selections; rows computed on
    disjoint data are k (parallel composition over the rows).

    Each selection is ε-DP: Laplace noise (Dwork & Roth 2014, Claim 3.9), permute-and-flip
    (McKenna & Sheldon 2020), the exponential mechanism (McSherry & Talwar 2007). The
    exponential mechanism is moreover ε-bounded-range (Durfee & Rogers 2019), hence
    ε²/8-zCDP (Cesar & Rogers 2021, Lemma 3.2), and its exact worst-case Rényi divergence is
    used too (docs/accounting.md, "Report noisy max and bounded range"). The PLD accountant uses
    the pure-DP worst case, randomized response, composed ``selections`` times (a binomial).

    Parameters
    ----------
    epsilon : float
        ε >= 0 of one selection.
    method : {"exponential_mechanism", "permute_and_flip", "laplace"}
        The selection algorithm.
    selections : int, default 1
        How many selections are composed (>= 1).

    Raises
    ------
    ValueError
        For a negative ε, an unknown method or a non-positive count.
    """

    epsilon: float
    method: str = "exponential_mechanism"
    selections: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check.nonnegative(self.epsilon, "epsilon"))
        if self.method not in _NOISY_MAX_METHODS:
            raise ValueError(f"method must be one of {_NOISY_MAX_METHODS}, got {self.method!r}")
        object.__setattr__(self, "selections", check.count(self.selections, "selections"))

    def _rho_one(self) -> float:
        if self.method == "exponential_mechanism":
            return self.epsilon**2 / 8  # ε-BR ⇒ ε²/8-zCDP (Cesar & Rogers 2021, Lemma 3.2)
        return self.epsilon**2 / 2  # ε-DP ⇒ ε²/2-zCDP (Bun & Steinke 2016, Prop. 1.4)

    def repetitions(self) -> tuple[ReportNoisyMax, int]:
        """(one selection, ``selections``)."""
        if self.selections == 1:
            return self, 1
        return ReportNoisyMax(self.epsilon, self.method), self.selections

    def pure_epsilon(self) -> float:
        """``selections`` × ε."""
        return self.selections * self.epsilon  # basic composition (Dwork & Roth 2014, Thm 3.16)

    def zcdp_rho(self) -> float:
        """``selections`` × ρ of one: ε²/8 for the exponential mechanism, else ε²/2."""
        # ρ-zCDP is RDP αρ at every α (Bun & Steinke 2016, Def. 1.1), so it adds up like RDP
        # (Mironov 2017, Prop. 1)
        return self.selections * self._rho_one()

    def rdp(self, alpha: float) -> float:
        """``selections`` × the least of the one-selection RDP bounds (RR, zCDP, bounded range)."""
        # RDP composes additively, adaptively too (Mironov 2017, Prop. 1)
        one = min(_atoms_rdp(_rr_atoms(self.epsilon, 2), alpha), alpha * self._rho_one())
        if self.method == "exponential_mechanism" and alpha <= _BR_MAX_ORDER:
            one = min(one, _bounded_range_rdp(self.epsilon, alpha))
        return self.selections * one

    def _loss_atoms(self, direction: str) -> Atoms | None:
        # m adaptively composed ε-DP mechanisms are dominated by m-fold randomized response
        # (Kairouz, Oh & Viswanath 2015, Thm 3.3). Built here as one binomial, not by the
        # accountant's count, so that the PLD accountant discretises it once, not m times.
        return _rr_composition_atoms(self.epsilon, self.selections)

    def to_dict(self) -> dict[str, Any]:
        """``{"type": "ReportNoisyMax", "epsilon", "method"[, "selections"]}``."""
        # one selection is written as before, so ledgers stay readable by earlier versions
        if self.selections == 1:
            return _fields(self, "epsilon", "method")
        return _fields(self, "epsilon", "method", "selections")


def _bounded_range_rdp(epsilon: float, alpha: float) -> float:
    """The largest Rényi divergence D_α(P‖Q) of an ε-bounded-range pair.

    Proved in docs/accounting.md ("Report noisy max and bounded range"): the loss of an ε-BR pair
    lies in [t-ε, t] for some t in [0, ε] (the reduction to generalized randomized response of
    Dong, Durfee & Rogers 2020, §4); for a fixed t the two-point pair at the ends is the worst;
    the worst t has the closed form below (d = t - ε). A rounding allowance of 64 units in the
    last place of ε is added: every term summed here is at most 2ε in size."""
    if epsilon == 0:
        return 0.0
    lam = alpha - 1.0
    c = -math.expm1(-lam * epsilon)
    if not c > 0:  # (α-1)ε underflows: no closed form needed, the zCDP bound is as good
        return alpha * epsilon**2 / 8
    em1_neg = math.expm1(-epsilon)  # e^{-ε} - 1 < 0
    # the maximiser u* = e^{t*} = (α-1)(e^ε - 1 + c)/(cα), written as d = t* - ε
    d = math.log1p(-1.0 / alpha) + math.log1p(-em1_neg * math.exp(-lam * epsilon) / c)
    d = min(0.0, max(-epsilon, d))
    a = math.expm1(d) / em1_neg  # P-mass of the loss t: (e^ε - e^t)/(e^ε - 1)
    # D_α = d + log(1 + a(e^{(α-1)ε} - 1))/(α-1)
    if lam * epsilon <= 1.0:
        g = math.log1p(a * math.expm1(lam * epsilon)) / lam
    elif a > 0:
        g = epsilon + math.log(a + (1.0 - a) * math.exp(-lam * epsilon)) / lam
    else:
        return epsilon  # no reliable value: ε bounds the divergence of any ε-DP pair
    return min(epsilon, max(0.0, d + g) + 64 * 2.0**-52 * epsilon)


@functools.lru_cache(maxsize=64)
def _rr_composition_atoms(epsilon: float, m: int) -> Atoms | None:
    """The loss distribution of m-fold binary randomized response: (2J - m)ε with
    J ~ Binomial(m, p), p = e^ε/(1 + e^ε), on a window of J around its mode.

    Masses are computed relative to the mode through the ratios
    P(J=j+1)/P(J=j) = (m-j)/(j+1)·e^ε, summed as logarithms (no factorials of large numbers).
    Outside the window the ratios keep shrinking, so each tail is at most a geometric series.
    The bound U on the upper tail goes to the infinite-loss atom and the window masses w_j/S
    (S their sum) are scaled by (1 - U). The result is stochastically larger than the true law
    (for every x its mass above x is at least the true one; docs/accounting.md), so every δ
    computed from it, composed or not, is an upper bound. None when the window would exceed
    _MAX_ATOMS."""
    if m == 1:
        return _readonly(*_rr_atoms(epsilon, 2))
    if epsilon == 0:
        return _readonly(np.zeros(1), np.ones(1), 0.0)
    p = 1.0 / (1.0 + math.exp(-epsilon))  # q = 1 - p = e^{-ε} p, computed without cancellation
    mode = min(m, math.floor((m + 1) * p))
    half = math.ceil(12.0 * math.sqrt(m * p * p * math.exp(-epsilon))) + 16
    while True:
        lo, hi = max(0, mode - half), min(m, mode + half)
        if hi - lo + 1 > _MAX_ATOMS:
            return None
        j = np.arange(lo, hi, dtype=np.int64)  # ratios from j to j+1, for j in [lo, hi)
        log_ratio = np.log((m - j).astype(float) / (j + 1).astype(float)) + epsilon
        log_w = np.zeros(hi - lo + 1)
        up = log_ratio[mode - lo:]
        log_w[mode - lo + 1:] = np.cumsum(up)
        down = log_ratio[: mode - lo][::-1]
        log_w[: mode - lo] = -np.cumsum(down)[::-1]
        w = np.exp(log_w)  # w = 1 at the mode, so the sum is >= 1
        total = float(np.sum(w))
        upper = lower = 0.0  # bounds on the tails, in units of P(J = mode) (<= 1/total)
        if hi < m:  # P(J > hi) <= P(J = hi)·r/(1-r), r = the ratio at hi (< 1, decreasing)
            r = (m - hi) / (hi + 1) * math.exp(epsilon)
            upper = math.inf if r >= 1 else float(w[-1]) * r / (1.0 - r)
        if lo > 0:  # P(J < lo) <= P(J = lo)·s/(1-s), s = lo/(m-lo+1)·e^{-ε}
            s = lo / (m - lo + 1) * math.exp(-epsilon)
            lower = math.inf if s >= 1 else float(w[0]) * s / (1.0 - s)
        if (upper + lower) / total <= _TAIL_MASS:
            break
        half *= 2
    upper /= total
    masses = w * ((1.0 - upper) / total)
    j = np.arange(lo, hi + 1, dtype=np.int64)
    losses = (j - (m - j)).astype(float) * epsilon  # 2j - m, without overflowing int64
    keep = masses > 0
    return _readonly(losses[keep], masses[keep], upper)


def _readonly(losses: np.ndarray, masses: np.ndarray, inf_mass: float) -> Atoms:
    """Atoms shared through the cache, so nobody may write into them."""
    losses.flags.writeable = False
    masses.flags.writeable = False
    return losses, masses, float(inf_mass)
