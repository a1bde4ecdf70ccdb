"""The direct Duchi bit (layout 2, 0.11.0) against an exact replica of fresh "duchi" reports.

The test generator is a NumPy PCG64, so the kernel reads a word sequence that is known in advance
(its sequential family reads ``random_raw`` in order; one 65,536-report stream per call here).
Values are chosen after seeing the words, so that c(u)·2^32 falls a chosen distance δ from the
value's own first 32 bits w32: inside the coarse step's slack (|δ| < 64), next to it, and inside
the one word that 32 bits cannot decide (0 < δ < 1). The replica then follows the layout of
docs/reproducibility.md (0.11.0): per block of 2,048 values, the coordinates through the bit
reader, one 64-bit word per two values, then in order each undecided value's next 32 bits
(through the bit reader) and whole words. It decides every bit as "R < c(u)" exactly, c(u)
from the value's exact position u (``fractions``) and e^-γ at 60 digits. The kernel's own
64-bit enclosure (``_mean_duchi_direct_bounds_for_testing``) is used only to know how many bits
the kernel reads; a decision is never taken from it.

No statistics: each report must equal the replica's bit, and every decision the replica takes
is checked to be certain (R's interval does not contain c). This pins layout 2 (no committed
test does: fresh Duchi reports are no longer compared with any reference) and checks the
decisions next to c, where a statistical test sees nothing. Checked by hand (review of the
change): a coarse
slack of 0 instead of 64 (wrong bits for values within ~13 words of c), or the refinement's next
32 bits with their top bit flipped (a layout change that keeps the law), each make 12 and 24 of
these cases fail, while every test of tests/ldp/test_mean_direct_bit.py still passes.
"""
from __future__ import annotations

from fractions import Fraction
from typing import Any, Iterator

import mpmath  # type: ignore[import-untyped]
import numpy as np
import pytest

import dpnoise
from dpnoise import _core, ldp

mpmath.mp.dps = 60
M32 = (1 << 32) - 1
BLOCK = 2048


class Reader:
    """random::BitReader's semantics over a list of words: bits(k) from a 64-bit buffer
    (low bits first), word() straight from the source (the buffer untouched)."""

    def __init__(self, words: np.ndarray) -> None:
        self._words: Iterator[int] = iter(int(w) for w in words)
        self.buffer = 0
        self.available = 0

    def word(self) -> int:
        return next(self._words)

    def bits(self, k: int) -> int:
        if k <= self.available:
            out = self.buffer & ((1 << k) - 1)
            self.buffer >>= k
            self.available -= k
            return out
        low, have, need = self.buffer, self.available, k - self.available
        self.buffer = self.word()
        high = self.buffer & ((1 << need) - 1)
        self.buffer >>= need
        self.available = 64 - need
        return low | (high << have)

    def uniform_below(self, n: int) -> int:  # exact::uniform_below: k bits, reject >= n
        if n <= 1:
            return 0
        k = (n - 1).bit_length()
        while True:
            x = self.bits(k)
            if x < n:
                return x


class Law:
    """c(u) = (u + e(1 − u))/(1 + e), e = e^-γ, u = (clip(v) − low)/(high − low) exactly."""

    def __init__(self, low: float, high: float, gamma: Fraction) -> None:
        self.low, self.high = low, high
        self.e = mpmath.exp(-mpmath.mpf(gamma.numerator) / gamma.denominator)
        self.kappa = (1 - self.e) / (1 + self.e)

    def c(self, v: float) -> Any:
        x = min(max(v, self.low), self.high)
        u = (Fraction(x) - Fraction(self.low)) / (Fraction(self.high) - Fraction(self.low))
        um = mpmath.mpf(u.numerator) / u.denominator
        return (um + self.e * (1 - um)) / (1 + self.e)

    def value_at(self, target: Any) -> float | None:
        """A double v whose c(u) is near ``target`` (None when no u in [0, 1] reaches it)."""
        u = (target - (1 - self.kappa) / 2) / self.kappa
        if not 0 <= u <= 1:
            return None
        return float(self.low + (self.high - self.low) * u) if self.low != 0.0 else float(self.high * u)


def less(prefix: int, bits: int, c: Any) -> bool:
    """R < c for R in [prefix, prefix + 1)/2^bits, asserting that the prefix decides it."""
    scaled = c * mpmath.mpf(2) ** bits
    assert not (prefix < scaled < prefix + 1), "the replica read too few bits to decide"
    return bool(prefix + 1 <= scaled)


def enclosures(x: list[float], law: Law, gamma: Fraction) -> tuple[np.ndarray, np.ndarray]:
    """The kernel's 64-bit enclosure (center, slack) of c·2^64 for the values ``x``."""
    centers, slacks, _c, _fast, _coarse = _core.ldp._mean_duchi_direct_bounds_for_testing(
        np.array(x, dtype=np.float64), law.low, law.high, gamma.numerator, gamma.denominator)
    return centers, slacks


def craft_and_replicate(law: Law, gamma: Fraction, k: int, n: int, raw: np.ndarray, deltas: list[float],
                        seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(values, coordinates, bits): values (n,) or (n, k) whose reported coordinate is placed so
    that c(u)·2^32 = w32 + δ for the value's own first word half w32 (δ cycling through
    ``deltas``; a random value where no u in [0, 1] reaches it), and the reports of layout 2 on
    the words ``raw``, each bit decided exactly. The kernel's 64-bit enclosure only says whether
    it reads R's next bits (it never decides a bit here)."""
    g = np.random.default_rng(seed)
    values = law.low + (law.high - law.low) * g.random((n, k))
    coords = np.zeros(n, dtype=np.int64)
    bits = np.zeros(n, dtype=np.uint8)
    reader = Reader(raw)
    d = 0
    for b0 in range(0, n, BLOCK):
        nb = min(BLOCK, n - b0)
        if k > 1:
            for i in range(nb):
                coords[b0 + i] = reader.uniform_below(k)
        words = [reader.word() for _ in range((nb + 1) // 2)]
        w32s = [(words[i // 2] >> (32 * (i & 1))) & M32 for i in range(nb)]
        for i in range(nb):
            v = law.value_at((w32s[i] + deltas[d % len(deltas)]) / mpmath.mpf(2) ** 32)
            d += 1
            if v is not None and law.low <= v <= law.high:
                values[b0 + i, coords[b0 + i]] = v
        x = [float(values[b0 + i, coords[b0 + i]]) for i in range(nb)]
        centers, slacks = enclosures(x, law, gamma)
        for i in range(nb):
            j, w32, c = b0 + i, w32s[i], law.c(x[i])
            center, slack = int(centers[i]), int(slacks[i])
            lo, hi = max(center - slack, 0), center + slack
            if w32 < lo >> 32 or w32 >= -(-hi // (1 << 32)):  # R's first 32 bits decide
                bits[j] = less(w32, 32, c)
                continue
            w = (w32 << 32) | reader.bits(32)
            if slack != 2**64 - 1 and (w + 1 <= lo or w >= hi):
                bits[j] = less(w, 64, c)
                continue
            bits[j] = less((w << 64) | reader.word(), 128, c)  # the lazy comparison at L = 2
    return (values if k > 1 else values[:, 0]), coords, bits


# δ: outside the slack (±64.5, ±70.5), inside it (±12.5, ±1.5, -0.5, 1.5, 2.5), and in the
# undecided word itself (0 < δ < 1: R's next bits decide)
DELTAS = [-70.5, -64.5, -63.5, -12.5, -1.5, -0.5, 0.25, 0.5, 0.75, 1.5, 2.5, 12.5, 63.5, 64.5, 70.5, 0.001, 0.999]
BOUNDS = [
    (0.0, 1.0),                  # coarse step
    (-1.0, 1.0),
    (0.0, 600.0),
    (1e6, 1e6 + 1e-9),           # no fixed point: the exact 128-bit quotient's enclosure (its doubles
                                 # are a ninth of the width apart: values land where they may)
    (0.0, 2.0 ** -930),          # a tiny magnitude, as the kernel may see it (coarse step from 2^-961)
    (0.0, 1e302),                # a huge magnitude (coarse step up to 2^1024)
    (2.0 ** -100, 1.0),          # map()'s wide case: every value through the exact comparison
]


@pytest.fixture(params=[0, 1], ids=["portable", "avx512"])
def coarse_kernel(request: pytest.FixtureRequest) -> Iterator[int]:
    try:
        old = _core.ldp._force_duchi_coarse_kernel_for_testing(request.param)
    except ValueError:
        pytest.skip("this CPU has no AVX-512F/DQ/VL")
    yield request.param
    _core.ldp._force_duchi_coarse_kernel_for_testing(old)


@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("bounds", BOUNDS, ids=[f"{lo!r},{hi!r}" for lo, hi in BOUNDS])
def test_fresh_duchi_reports_are_the_exact_replica(coarse_kernel: int, bounds: tuple[float, float], k: int) -> None:
    low, high = bounds
    oracle = ldp.MeanOracle("duchi", 1.0, bounds=bounds, dimensions=k)
    assert oracle._scale == 0  # the kernel sees these bounds as they are
    law = Law(low, high, oracle.gamma)
    n = 2 * BLOCK + 37
    seed = 1000 + 10 * k + BOUNDS.index(bounds)
    raw = np.random.PCG64(seed).random_raw(8 * n + 64)
    values, coords, want = craft_and_replicate(law, oracle.gamma, k, n, raw, DELTAS, seed)
    got = oracle._privatize(dpnoise.Generator(np.random.PCG64(seed)), values, 1)
    if k > 1:
        np.testing.assert_array_equal(got["coordinates"], coords)
    bits = np.unpackbits(got["bits"], count=n, bitorder="little")
    wrong = np.flatnonzero(bits != want)
    assert wrong.size == 0, f"{wrong.size} reports differ from the exact replica, first at {wrong[:5]}"


@pytest.mark.parametrize("bounds", [(0.0, 600.0), (-1.0, 1.0)])
def test_edge_values_are_the_exact_replica(coarse_kernel: int, bounds: tuple[float, float]) -> None:
    """Clipped values, ±0, subnormals, values far below the bounds' scale, next to the bounds."""
    low, high = bounds
    oracle = ldp.MeanOracle("duchi", 2.0, bounds=bounds)
    law = Law(low, high, oracle.gamma)
    edges = [low, high, float(np.nextafter(low, high)), float(np.nextafter(high, low)), 0.0, -0.0, 5e-324, -5e-324,
             1e-300, -1e-300, low - 1.0, high + 1.0, 2.0 ** -32, 1e308, -1e308]
    values = np.array(edges * 300, dtype=np.float64)
    raw = np.random.PCG64(5).random_raw(4 * values.size + 64)
    got = oracle._privatize(dpnoise.Generator(np.random.PCG64(5)), values, 1)
    reader = Reader(raw)
    want = np.zeros(values.size, dtype=np.uint8)
    for b0 in range(0, values.size, BLOCK):
        nb = min(BLOCK, values.size - b0)
        words = [reader.word() for _ in range((nb + 1) // 2)]
        for i in range(nb):
            w32 = (words[i // 2] >> (32 * (i & 1))) & M32
            want[b0 + i] = less(w32, 32, law.c(float(values[b0 + i])))  # random words: decided (else: reads)
    np.testing.assert_array_equal(np.unpackbits(got["bits"], count=values.size, bitorder="little"), want)


def test_the_crafted_values_reach_every_decision_stage() -> None:
    """The replica must meet all three stages (32 bits, 64 bits, the exact comparison) on bounds
    with a coarse step, or it would not test the coarse slack and the refinement's reads."""
    oracle = ldp.MeanOracle("duchi", 1.0, bounds=(0.0, 1.0))
    law = Law(0.0, 1.0, oracle.gamma)
    raw = np.random.PCG64(7).random_raw(8 * BLOCK)
    values, _coords, _bits = craft_and_replicate(law, oracle.gamma, 1, BLOCK, raw, DELTAS, 7)
    g = oracle.gamma
    centers, slacks, coarse, _f, has_coarse = _core.ldp._mean_duchi_direct_bounds_for_testing(
        values, 0.0, 1.0, g.numerator, g.denominator)
    assert has_coarse
    reader = Reader(raw)
    words = [reader.word() for _ in range(BLOCK // 2)]
    w32 = [(words[i // 2] >> (32 * (i & 1))) & M32 for i in range(BLOCK)]
    pending = np.array([abs(w - int(c)) < 64 for w, c in zip(w32, coarse)])
    open64 = np.array([not (w < max(int(c) - int(s), 0) >> 32 or w >= -(-(int(c) + int(s)) // (1 << 32)))
                       for w, c, s in zip(w32, centers, slacks)])
    assert pending.sum() > BLOCK // 3               # the coarse step leaves these open
    assert open64.sum() > BLOCK // 10               # R's first 32 bits cannot decide these
    assert (pending & ~open64).sum() > BLOCK // 10  # the 64-bit enclosure decides these on w32
