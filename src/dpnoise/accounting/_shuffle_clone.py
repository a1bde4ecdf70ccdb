"""The clone bound of Feldman, McMillan & Talwar (FOCS 2021, "Hiding Among the Clones", Thm 3.2),
evaluated with its numerical error bounded upward, in three parametrisations: any ε0-LDP
randomizer (clone rate e^-ε0), k-ary randomized response, and a randomizer with a known total
variation β between two items' report laws (docs/accounting.md, "Shuffle-model accounting")."""
from __future__ import annotations

import math

import numpy as np

from ._shuffle_numerics import _REL_TOL, _binomial_pmf, _least_epsilon, _window

_BUCKET_STEP = 1e-3  # relative spacing of the C grid (a bucket is charged its smallest c)


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


def _clone_bound(epsilon0: float, n: int, delta: float, *, domain_size: int | None = None,
                 beta: float | None = None) -> _CloneBound:
    """The clone bound prepared for a target δ (FMT21 Thm 3.2; with ``domain_size`` the k-ary
    randomized-response parametrisation; with ``beta`` that of a randomizer whose two items' report
    laws are at total variation <= β: clone rate 2α, weight α(e^ε0 + 1), α = β/(e^ε0 - 1), the
    decomposition of Wang et al. 2024 with the differing user's leftover split off by joint
    convexity; docs/accounting.md). Arguments are checked by the caller."""
    if beta is not None:
        em1 = math.expm1(epsilon0)
        alpha = min(beta, em1 / (em1 + 2.0)) / em1  # β never above ε0-LDP's (e^ε0 - 1)/(e^ε0 + 1)
        r, rc, w = 2.0 * alpha, 1.0 - 2.0 * alpha, min(1.0, alpha * (em1 + 2.0))
    elif domain_size is None:
        r, rc, w = math.exp(-epsilon0), -math.expm1(-epsilon0), 1.0
    else:
        den = math.exp(epsilon0) + domain_size - 1
        r, rc, w = 2.0 / den, (den - 2.0) / den, (math.exp(epsilon0) + 1.0) / den
    if rc <= 0:  # no room (r = 1 only for d = 2 at ε0 -> 0): every report a clone; keep it exact
        rc = 1e-300
    return _CloneBound(epsilon0, n, delta, r, rc, w)


def _clone_bound_epsilon(epsilon0: float, n: int, delta: float, *, domain_size: int | None = None,
                         beta: float | None = None) -> float:
    """The clone bound's ε at ``delta`` (:func:`_clone_bound`)."""
    return _clone_bound(epsilon0, n, delta, domain_size=domain_size, beta=beta).epsilon(delta)
