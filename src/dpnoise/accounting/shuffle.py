"""Shuffle-model accounting: the central (ε, δ) of n shuffled ε0-LDP reports.

Two computations (docs/accounting.md, "Shuffle-model accounting"):

* the **clone bound** (Feldman, McMillan & Talwar 2021, "Hiding Among the Clones", Thm 3.2): the
  shuffled reports are (ε, δ(ε))-DP with δ(ε) = w·E_{C~Bin(n-1, r)}[D_{e^ε}(P_C ‖ Q_C)], where
  P_c = α·(A_c + 1) + (1 - α)·A_c and Q_c = (1 - α)·(A_c + 1) + α·A_c, A_c ~ Bin(c, 1/2),
  α = e^ε0/(e^ε0 + 1). For any ε0-LDP randomizer r = e^-ε0 and w = 1 (FMT21); for k-ary
  randomized response r = 2/(e^ε0 + d - 1) and w = (e^ε0 + 1)/(e^ε0 + d - 1) (the same proof with
  GRR's own clone decomposition, the parametrisation of Wang et al. 2024; proof in the docs page).
  It is evaluated with its numerical error bounded upward (below).
* the **binary randomized-response value** for d = 2: the count of ones, C ~ Bin(n-1, q) from the
  other users (all holding the same bit) plus the differing user's Bern(p) or Bern(q): two
  binomial mixtures, compared exactly.
"""
from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from .. import _validate as check

# relative error bound of the float pmf / tail sums below (derivation in docs/accounting.md:
# log-pmf by a cumulative sum of at most _MAX_WINDOW log ratios of magnitude <= 200 in total,
# |error| <= _MAX_WINDOW·2^-53·200 < 3e-8); every δ term is inflated by this much
_REL_TOL = 1e-7
_MAX_WINDOW = 1 << 21
_BUCKET_STEP = 1e-3  # relative spacing of the C grid (a bucket is charged its smallest c)
_BISECTION_STEPS = 60
# largest ε0 accepted (as elsewhere in the library: e^ε0 must stay far from overflow)
_MAX_EPSILON0 = check.MAX_EPSILON
# the largest n accepted (counts feed float arithmetic; beyond 2^62 it is meaningless)
_MAX_N = check.MAX_PART
# beyond this n the bounds are evaluated at _N_CAP: every bound here only decreases with n (one
# more report is one more independent clone or coin, a post-processing), so the value at
# _N_CAP is valid for every larger n, and its windows stay below _MAX_WINDOW points
_N_CAP = 10**10


# --------------------------------------------------------------------------- validation
def _check_args(epsilon0: Any, n: Any, delta: Any) -> tuple[float, int, float]:
    eps0 = check.real(epsilon0, "epsilon0")
    if not eps0 > 0 or math.isinf(eps0):
        raise ValueError(f"epsilon0 must be a finite real > 0, got {eps0!r}")
    if eps0 > _MAX_EPSILON0:
        raise ValueError(f"epsilon0 must be at most {_MAX_EPSILON0:g}, got {eps0!r}")
    n = check.integer(n, "n")
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if n > _MAX_N:
        raise ValueError("n must be at most 2^62")
    d = check.real(delta, "delta")
    if not 0.0 < d < 1.0:
        raise ValueError(f"delta must be in (0, 1), got {d!r}")
    return eps0, n, d


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


# --------------------------------------------------------------------------- the clone bound
class _CloneBound:
    """δ(ε) = w·E_{C~Bin(n-1, r)}[D_{e^ε}(P_C ‖ Q_C)] bounded upward (FMT21, Thm 3.2), prepared
    once for a target δ (the windows depend on it) and evaluated at any ε in O(#grid points).

    Upward steps, each proved in docs/accounting.md: C's pmf is normalised over its window (it
    then over-weights every point, and D_c decreases in c: adding a clone is a post-processing,
    one more fair coin), the mass below the window is charged D_0; each bucket [c_i, c_{i+1}) of
    C is charged D_{c_i}; the J-mass outside each A_c window is charged 1; every sum is inflated
    by the relative error bound _REL_TOL."""

    def __init__(self, epsilon0: float, n: int, delta: float, clone_rate: float, clone_rate_c: float,
                 weight: float):
        self.epsilon0 = epsilon0
        self.weight = weight
        # α = e^ε0/(e^ε0+1) and 1 - α, without cancellation
        self.alpha = 1.0 / (1.0 + math.exp(-epsilon0))
        self.beta = 1.0 / (1.0 + math.exp(epsilon0))
        tail = min(1e-3 * delta, 1e-12)
        m = n - 1
        if m == 0:
            lo_c, hi_c, below = 0, 0, 0.0
            c_pmf = np.ones(1)
        else:
            lo_c, hi_c, below, _ = _window(m, clone_rate, tail)
            c_pmf = _binomial_pmf(m, math.log(clone_rate) - math.log(clone_rate_c), lo_c, hi_c)
        self.below = below  # Pr[C < lo_c], charged D_0
        # bucket grid: every c while c·step < 1, then geometric
        grid = [lo_c]
        while grid[-1] < hi_c:
            grid.append(min(hi_c + 1, max(grid[-1] + 1, int(grid[-1] * (1 + _BUCKET_STEP)))))
        if grid[-1] != hi_c + 1:
            grid.append(hi_c + 1)
        edges = np.asarray(grid, dtype=np.int64) - lo_c
        cdf = np.concatenate([[0.0], np.cumsum(c_pmf)])
        self.bucket_mass = (cdf[edges[1:]] - cdf[edges[:-1]]) * (1 + _REL_TOL)
        self.points = np.asarray(grid[:-1], dtype=np.int64)
        # per point c: J = A_c + Δ on 0..c+1 has P_c(j) = 2 b_{c+1}(j)·(α u + (1-α)(1-u)),
        # Q_c(j) = 2 b_{c+1}(j)·((1-α) u + α(1-u)), u = j/(c+1); suffix sums of both
        jtail = min(1e-6 * delta, 1e-40)
        sp, sq, offsets, starts, outside, self._pj, self._uj = [], [], [0], [], [], [], []
        for c in self.points.tolist():
            mm = c + 1
            lo, hi, b_lo, b_hi = _window(mm, 0.5, jtail)
            b = _binomial_pmf(mm, 0.0, lo, hi)
            u = np.arange(lo, hi + 1, dtype=np.float64) / mm
            pj = 2.0 * b * (self.alpha * u + self.beta * (1 - u))
            qj = 2.0 * b * (self.beta * u + self.alpha * (1 - u))
            # the P-mass outside the window is at most 2·(b_lo + b_hi) (P_c(j) <= 2 b_{c+1}(j)),
            # charged at loss +inf below
            self._pj.append(pj)
            self._uj.append(u)
            sp.append(np.concatenate([np.cumsum(pj[::-1])[::-1], [0.0]]))
            sq.append(np.concatenate([np.cumsum(qj[::-1])[::-1], [0.0]]))
            offsets.append(offsets[-1] + hi - lo + 2)
            starts.append(lo)
            outside.append(2.0 * (b_lo + b_hi))
        self.sp = np.concatenate(sp)
        self.sq = np.concatenate(sq)
        self.offsets = np.asarray(offsets[:-1], dtype=np.int64)
        self.starts = np.asarray(starts, dtype=np.int64)
        self.ends = self.starts + np.diff(np.asarray(offsets, dtype=np.int64)) - 2  # hi per point
        self.outside = np.asarray(outside)

    def _d0(self, eps: float) -> float:
        """D_{e^ε} of the pair with no clone: binary randomized response at ε0."""
        return max(0.0, self.alpha - math.exp(eps) * self.beta)

    def delta(self, eps: float) -> float:
        """An upper bound on the clone pair's δ at ε (P ‖ Q; the pair is symmetric, j ↔ c+1-j)."""
        if eps >= self.epsilon0:
            return 0.0
        e = math.exp(eps)
        # L(u) > e^ε  ⟺  u > u* = (e^ε α - (1-α)) / ((2α - 1)(1 + e^ε))
        ustar = (e * self.alpha - self.beta) / ((self.alpha - self.beta) * (1.0 + e))
        c1 = (self.points + 1).astype(np.float64)
        t = np.floor(ustar * c1).astype(np.int64)  # j > t is in the set (one below, to be safe)
        t = np.clip(t, self.starts, self.ends + 1)
        idx = self.offsets + (t - self.starts)
        # the suffix from t (a term with L <= e^ε only lowers the sum, so each threshold's sum is
        # at most the true D; the one at t, if negative, is removed: max over t and t + 1)
        head_p, head_q = self.sp[idx], self.sq[idx]
        nxt = np.minimum(idx + 1, self.offsets + (self.ends - self.starts + 1))
        s0 = head_p - e * head_q
        s1 = self.sp[nxt] - e * self.sq[nxt]
        d = np.maximum(np.maximum(s0, s1), 0.0)
        d += _REL_TOL * (head_p + e * head_q) + self.outside  # float error and outside mass
        total = math.fsum((self.bucket_mass * d).tolist()) + self.below * self._d0(eps)
        return min(1.0, self.weight * total * (1 + _REL_TOL))

    def atoms(self) -> tuple[np.ndarray, np.ndarray, float]:
        """The privacy-loss atoms (loss, P-mass, mass at +inf) of a pair that dominates the clone
        pair: C moved down to its bucket's smallest point (the true pair is then a post-processing
        of it: D_c decreases in c), the mass below C's window at c = 0 (binary randomized response
        at ε0), and the J-mass outside each window at the largest loss, ε0; masses are inflated by
        the float error bound. No atom at +inf: every loss of the pair is in [-ε0, ε0]."""
        losses, masses = [], []
        for w, pj, u in zip(self.bucket_mass, self._pj, self._uj):
            num = self.alpha * u + self.beta * (1 - u)
            den = self.beta * u + self.alpha * (1 - u)
            losses.append(np.log(num) - np.log(den))
            masses.append(w * pj)
        outside = float(np.sum(self.bucket_mass * self.outside))
        losses.append(np.array([self.epsilon0, -self.epsilon0, self.epsilon0]))
        masses.append(np.array([self.alpha * self.below, self.beta * self.below, outside]))
        loss = np.concatenate(losses)
        mass = np.concatenate(masses) * (self.weight * (1 + _REL_TOL))
        if self.weight < 1:  # k-ary randomized response: the differing user's report elsewhere
            loss = np.append(loss, 0.0)
            mass = np.append(mass, 1.0 - self.weight)
        order = np.argsort(loss, kind="stable")
        return loss[order], mass[order], 0.0

    def epsilon(self, delta: float) -> float:
        """The least ε on a 60-step bisection with delta(ε) <= ``delta`` (never below: the end
        returned is one where the bound was checked), at most ε0."""
        return _least_epsilon(self.delta, delta, self.epsilon0)


def _clone_bound(epsilon0: float, n: int, delta: float, *, domain_size: int | None = None) -> _CloneBound:
    """The clone bound prepared for a target δ (FMT21 Thm 3.2; with ``domain_size`` the k-ary
    randomized-response parametrisation). Arguments are checked by the caller."""
    if domain_size is None:
        r, rc, w = math.exp(-epsilon0), -math.expm1(-epsilon0), 1.0
    else:
        den = math.exp(epsilon0) + domain_size - 1
        r, rc, w = 2.0 / den, (den - 2.0) / den, (math.exp(epsilon0) + 1.0) / den
    if rc <= 0:  # no room (r = 1 only for d = 2 at ε0 -> 0): every report a clone; keep it exact
        rc = 1e-300
    return _CloneBound(epsilon0, n, delta, r, rc, w)


def _clone_bound_epsilon(epsilon0: float, n: int, delta: float, *, domain_size: int | None = None) -> float:
    """The clone bound's ε at ``delta`` (:func:`_clone_bound`)."""
    return _clone_bound(epsilon0, n, delta, domain_size=domain_size).epsilon(delta)


# --------------------------------------------------------------------------- binary RR, exact
def _binary_rr_delta_curve(epsilon0: float, n: int, delta: float):  # type: ignore[no-untyped-def]
    """δ(ε) of binary randomized response at ε0 shuffled among n users, the other n - 1 holding
    the same bit: the count of ones is C + B with C ~ Bin(n-1, q), B ~ Bern(p) or Bern(q)
    (p = e^ε0/(e^ε0+1), q = 1 - p), two binomial mixtures compared exactly (both directions).
    Returns a function of ε."""
    p = 1.0 / (1.0 + math.exp(-epsilon0))
    q = 1.0 / (1.0 + math.exp(epsilon0))
    m = n - 1
    tail = min(1e-6 * delta, 1e-40)
    if m == 0:
        lo, s, out = 0, np.ones(1), 0.0
    else:
        lo, hi, b_lo, b_hi = _window(m, q, tail)
        s = _binomial_pmf(m, -epsilon0, lo, hi)  # log(q/p) = -ε0
        out = b_lo + b_hi
    s1 = np.concatenate([[0.0], s])  # s(c-1) at c = lo..hi+1
    s0 = np.concatenate([s, [0.0]])
    P = p * s1 + q * s0  # the differing user holds 1
    Q = q * s1 + p * s0  # ... holds 0
    P = np.maximum(P, 0.0)
    Q = np.maximum(Q, 0.0)

    def curve(eps: float) -> float:
        e = math.exp(eps)
        up = float(np.sum(np.maximum(P - e * Q, 0.0)))
        down = float(np.sum(np.maximum(Q - e * P, 0.0)))
        return max(up, down) * (1 + _REL_TOL) + out

    return curve


def _binary_rr_epsilon(epsilon0: float, n: int, delta: float) -> float:
    """ε at ``delta`` of :func:`_binary_rr_delta_curve` (bisection, the checked end), at most ε0."""
    return _least_epsilon(_binary_rr_delta_curve(epsilon0, n, delta), delta, epsilon0)


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


# --------------------------------------------------------------------------- closed form
def _fmt21_closed_form(epsilon0: float, n: int, delta: float) -> float | None:
    """FMT21 Thm 3.1: for ε0 <= log(n/(16 log(2/δ))), the shuffle is (ε, δ)-DP with
    ε = log(1 + (e^ε0 - 1)/(e^ε0 + 1)·(8√(e^ε0 log(4/δ))/√n + 8e^ε0/n)); None outside that range."""
    if n < 16 * math.log(2 / delta) or epsilon0 > math.log(n / (16 * math.log(2 / delta))):
        return None
    e0 = math.exp(epsilon0)
    return math.log1p((e0 - 1) / (e0 + 1) * (8 * math.sqrt(e0 * math.log(4 / delta)) / math.sqrt(n) + 8 * e0 / n))


# --------------------------------------------------------------------------- public
def _configuration_kind(configuration: Any, epsilon0: float) -> int | None:
    """The domain size d when ``configuration`` is plain k-ary randomized response at ε0 (its
    structure is used), None for any other configuration that is pure ε0-LDP (generic bound).
    ValueError naming ``configuration`` otherwise."""
    from ..ldp._protocol import Configuration  # lazy: ldp imports accounting

    if not isinstance(configuration, Configuration):
        raise TypeError(f"configuration must be an LDP configuration (dpnoise.ldp), got {type(configuration).__name__}")
    loss = configuration.privacy_loss()
    pure = loss.pure_epsilon()
    if pure is None:
        raise ValueError(f"configuration {configuration!r} is not pure ε-LDP per report ({type(loss).__name__}); "
                         "the shuffle bounds need pure ε0-LDP reports")
    if pure > epsilon0 * (1 + 1e-12):
        raise ValueError(f"configuration has ε = {pure} per report, more than epsilon0 = {epsilon0}")
    d = getattr(configuration, "domain_size", None)
    if (getattr(configuration, "name", "") == "grr" and getattr(configuration, "family", "") == "frequency"
            and not getattr(configuration, "options", {}) and getattr(configuration, "gamma1", None) is None
            and pure == epsilon0 and d is not None):
        return int(d)
    return None


def shuffle_amplification(epsilon0: float, n: int, delta: float, *, configuration: Any = None) -> float:
    """The central ε of n shuffled ε0-LDP reports at δ: an upper bound.

    Without a configuration, the numerical clone bound of Feldman, McMillan & Talwar (FOCS 2021,
    Thm 3.2) for any ε0-LDP randomizer, evaluated with its numerical error bounded upward. With a
    k-ary randomized-response configuration (``FrequencyOracle("grr", ...)``, d >= 3), the same
    bound with GRR's clone probability 2/(e^ε0 + d - 1) (never worse than the generic one: the
    smaller of the two is returned), d = 2 included (the two-mixture value of binary randomized
    response is not used: that its pair of datasets is the worst is not proved, and a search found
    slightly worse ones; docs/accounting.md). Other configurations get the generic bound. The result is at most ε0 (shuffling never makes privacy worse).
    docs/accounting.md, "Shuffle-model accounting", states the theorems and their range.

    Parameters
    ----------
    epsilon0 : float
        ε0 of each report, in (0, 100].
    n : int
        The number of shuffled reports, one per user, n >= 1.
    delta : float
        δ of the central guarantee, in (0, 1).
    configuration : dpnoise.ldp.Configuration, optional
        The LDP configuration that made the reports (its ε per report must be at most ``epsilon0``;
        a configuration that is not pure ε-LDP per report, e.g. ``constant_time=True``, is refused).

    Returns
    -------
    float
        ε in [0, ε0] such that the shuffled reports are (ε, δ)-DP (neighbouring datasets differ in
        one user's data).

    Raises
    ------
    ValueError
        For ε0 not in (0, 100], n < 1, δ not in (0, 1) (NaN included), or a configuration as above.
    TypeError
        For a non-real ε0 or δ, a non-integer n, or a configuration that is not an LDP one.

    Warns
    -----
    UserWarning
        When the bound gives no amplification (n = 1, or too few clones for δ): ε0 is returned.

    Examples
    --------
    >>> from dpnoise.accounting import shuffle_amplification
    >>> round(shuffle_amplification(1.0, 10**6, 1e-8), 3) < 0.02
    True
    """
    eps0, n, delta = _check_args(epsilon0, n, delta)
    d = None if configuration is None else _configuration_kind(configuration, eps0)
    m = min(n, _N_CAP)
    # d = 2 too takes the proved clone bound: the two-mixture value of binary randomized response
    # (_binary_rr_epsilon) assumes the worst neighbours are "every other user holds the same bit",
    # and a search found datasets up to 0.04% worse at n = 10^4, so it is not an upper bound
    eps = _clone_bound_epsilon(eps0, m, delta)
    if d is not None:
        eps = min(eps, _clone_bound_epsilon(eps0, m, delta, domain_size=d))
    if eps >= eps0:
        warnings.warn(f"shuffling {n} reports gives no amplification at delta={delta:g} under this bound; "
                      f"returning epsilon0={eps0:g} (the reports' own guarantee)", UserWarning, stacklevel=2)
        return eps0
    return eps
