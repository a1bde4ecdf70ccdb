"""Shuffled binary randomized response over EVERY dataset: an upper bound on the worst case.

n users each send one bit by randomized response at ε0 (keep probability p = e^ε0/(e^ε0 + 1));
the shuffler leaves the count of ones. Neighbouring datasets differ in one user's bit; k of the
other m = n - 1 users hold 1. The others' count is X(k, m - k), X(a, b) = Bin(a, p) + Bin(b, q),
q = 1 - p, and the pair is X + Bern(p) against X + Bern(q). docs/accounting.md ("Binary
randomized response: every dataset") proves the two facts used here:

* adding an independent term to the count is a post-processing of the pair, so
  δ(a, b) = max(D_{e^ε}(P ‖ Q), D_{e^ε}(Q ‖ P)) does not increase in a nor in b;
* flipping every bit maps the pair (a, b) to the pair (b, a) with P and Q swapped.

Hence for the integers k in a cell [a_i, a_{i+1}), δ(k, m - k) <= δ(a_i, m - a_{i+1} + 1), and
the cells need only cover k <= ceil(m/2). The returned ε is the largest of the cells' ε, each
computed from a δ(ε) whose numerical error is bounded upward (below).
"""
from __future__ import annotations

import math

import numpy as np

from ._shuffle_numerics import _REL_TOL, _binomial_pmf, _least_epsilon, _window

# number of cells over k in [0, ceil(m/2)]: a cell drops at most its width - 1 users, about
# m/(2·_CELLS), which moves ε by a relative ~1/(4·_CELLS) (ε ~ 1/√m)
_CELLS = 40
# below this many products a convolution is direct (positive sums: relative error only)
_DIRECT_CONVOLUTION = 1 << 22
_U = 2.0**-53  # unit roundoff of binary64
# beyond this n the bound is evaluated at it (valid: fewer users only add to δ, the first fact
# above), so that one call stays under a second; from about 4·10^8 on the clone bound is smaller
MAX_N = 2 * 10**8


def _fft_convolve(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
    """x * y by a real FFT of size N (a power of two), clipped at 0, with an upper bound on the
    l1 norm of its error: √N·‖error‖₂, where ‖error‖₂ <= 100·log2(N)·u·(‖x‖₂ + ‖y‖₂) for
    ‖x‖₁, ‖y‖₁ <= 1 (Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed., Thm 24.2:
    a radix-2 FFT has ‖error‖₂ <= log2(N)·η·‖Fx‖₂ with η ≈ 7u; three transforms and a product
    give about 24·log2(N)·u, charged 4× over; docs/accounting.md)."""
    size = x.size + y.size - 1
    nfft = 1 << (size - 1).bit_length()
    z = np.fft.irfft(np.fft.rfft(x, nfft) * np.fft.rfft(y, nfft), nfft)[:size]
    np.maximum(z, 0.0, out=z)  # the true values are >= 0: clipping never moves one away
    # ‖x‖₂ <= √(max(x)·‖x‖₁): no BLAS call
    norms = math.sqrt(float(x.max()) * float(x.sum())) + math.sqrt(float(y.max()) * float(y.sum()))
    err = math.sqrt(nfft) * 100.0 * math.log2(nfft) * _U * norms
    return z, err


class _CountPair:
    """The pair X(a, b) + Bern(p) against X(a, b) + Bern(q), prepared once: δ at any ε bounded
    upward (relative pmf error, FFT error and the mass outside the binomial windows charged)."""

    def __init__(self, epsilon0: float, a: int, b: int, tail: float):
        self.p = 1.0 / (1.0 + math.exp(-epsilon0))
        self.q = 1.0 / (1.0 + math.exp(epsilon0))
        parts, out = [], 0.0
        for count, log_odds, prob in ((a, epsilon0, self.p), (b, -epsilon0, self.q)):
            if count == 0:
                parts.append(np.ones(1))
                continue
            lo, hi, b_lo, b_hi = _window(count, prob, tail)
            parts.append(_binomial_pmf(count, log_odds, lo, hi))
            out += b_lo + b_hi
        x, y = parts
        if x.size == 1 or y.size == 1 or x.size * y.size <= _DIRECT_CONVOLUTION:
            z, err = np.convolve(x, y), 0.0
        else:
            z, err = _fft_convolve(x, y)
        self.out = out  # mass of X outside the window (Chernoff), charged in full
        self.err = err  # l1 bound on z's absolute error
        # z's relative error (two pmfs, each <= _REL_TOL, both normalised over their windows, so
        # never below the truth): the true z is <= z·(1 + 3τ) and >= z·(1 - 3τ)(1 - out)
        self.up = 1.0 + 3.0 * _REL_TOL
        self.down = (1.0 - 3.0 * _REL_TOL) * (1.0 - out)
        s1 = np.concatenate([[0.0], z])
        s0 = np.concatenate([z, [0.0]])
        self.P = self.p * s1 + self.q * s0  # the differing user holds 1
        self.Q = self.q * s1 + self.p * s0  # ... holds 0

    def delta(self, eps: float) -> float:
        """max(D_{e^ε}(P ‖ Q), D_{e^ε}(Q ‖ P)) bounded upward."""
        e = math.exp(eps)
        forward = float(np.sum(np.maximum(self.up * self.P - e * self.down * self.Q, 0.0)))
        backward = float(np.sum(np.maximum(self.up * self.Q - e * self.down * self.P, 0.0)))
        return min(1.0, max(forward, backward) + (self.up + e) * self.err + self.out)


def _cells(m: int) -> list[tuple[int, int]]:
    """(a_i, a_{i+1}) covering the integers 0..ceil(m/2), at most _CELLS of them, equal widths."""
    top = (m + 1) // 2 + 1  # k in [0, top)
    width = -(-top // _CELLS)
    return [(a, min(a + width, top)) for a in range(0, top, width)]


def binary_rr_worst_epsilon(epsilon0: float, n: int, delta: float) -> float:
    """An upper bound on ε at ``delta`` of binary randomized response at ε0 shuffled among n users,
    over every dataset pair (arguments checked by the caller): the largest of the cells' ε."""
    m = min(n, MAX_N) - 1
    tail = min(1e-4 * delta, 1e-12)  # per window side; four sides: <= 4e-4·δ added
    if m == 0:
        return _least_epsilon(_CountPair(epsilon0, 0, 0, tail).delta, delta, epsilon0)
    eps = 0.0
    for lo, hi in _cells(m):  # cell 0 first: where the worst case usually is
        pair = _CountPair(epsilon0, lo, m - hi + 1, tail)
        if pair.delta(eps) > delta:
            eps = max(eps, _least_epsilon(pair.delta, delta, epsilon0))
    return eps
