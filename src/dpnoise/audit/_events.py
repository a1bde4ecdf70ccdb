"""Distinguishing events: features of a mechanism's outputs, and the choice of the best event.

An event is a set of outputs E. Chosen on the training outputs only, it is then counted once on
the held-out outputs, where its Clopper-Pearson bounds hold (lower_bound.py). Candidates:

* threshold events {y >= t} and {y <= t} on a numeric output (or one coordinate, or the sum of
  the coordinates): DP-Sniper's threshold classifier on the likelihood ratio (Bichsel, Steffen,
  Bogunovic & Vechev, S&P 2021) for the common case of a ratio monotone in y;
* likelihood-ratio sets over a partition of the outputs: the exact values when they repeat
  (discrete outputs, grids), quantile bins of the pooled training outputs otherwise, and the bit
  pattern of float outputs (sign, exponent, trailing zero bits of the 52-bit mantissa), since a
  float value rarely repeats but the bits betray how it was computed (Mironov, CCS 2012). The
  parts are ordered by their training likelihood ratio and every prefix is a candidate (the
  Neyman-Pearson optimal sets for that partition, Bichsel et al. 2021, §IV).

Each family's candidates are scored on the fit outputs with Wilson score bounds (Wilson 1927) of
the same level as the final test (an estimate of the test's outcome); each family's best
proposal is then counted on the separate select outputs, and the best of those is the event.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any, Callable, Literal, Union

import numpy as np

_HAS_BITWISE_COUNT = hasattr(np, "bitwise_count")
Coordinate = Union[None, int, Literal["sum"]]  # None: the whole (scalar) output; j: coordinate j; "sum"

MAX_COORDINATES = 8      # of a vector output, the first coordinates searched one by one
MAX_VALUES = 4096        # distinct values up to which a coordinate is treated as discrete
QUANTILE_BINS = 512      # bins of a continuous coordinate
_THRESHOLDS = 400        # candidate thresholds per coordinate and direction
MIN_PART_COUNT = 30      # training outputs a part needs to be ranked by its own ratio


def column(outputs: np.ndarray, coordinate: Coordinate) -> np.ndarray:
    """The 1-D feature of each output: the output itself, one coordinate, or the sum."""
    if coordinate is None:
        return outputs
    flat = outputs.reshape(outputs.shape[0], -1)
    if coordinate == "sum":
        return flat.sum(axis=1, dtype=np.float64 if flat.dtype.kind == "f" else None)
    return flat[:, coordinate]


def _coordinate_name(coordinate: Coordinate) -> str:
    if coordinate is None:
        return "y"
    if coordinate == "sum":
        return "sum(y)"
    return f"y[{coordinate}]"


def _rows(outputs: np.ndarray) -> np.ndarray:
    """Each output as one comparable scalar: itself (1-D) or its bytes (np.void) for arrays."""
    if outputs.ndim == 1:
        return outputs
    flat = np.ascontiguousarray(outputs.reshape(outputs.shape[0], -1))
    return flat.view(np.dtype((np.void, flat.dtype.itemsize * flat.shape[1]))).reshape(-1)


def float_bit_key(values: np.ndarray) -> np.ndarray:
    """(sign, biased exponent, trailing zero bits of the mantissa) of float64 values, packed as
    sign·2^17 + exponent·2^6 + zeros (zeros = 52 for a zero mantissa)."""
    u = np.ascontiguousarray(values, dtype=np.float64).view(np.uint64)
    mantissa = u & np.uint64((1 << 52) - 1)
    lowest = mantissa & (~mantissa + np.uint64(1))  # the lowest set bit (0 for a zero mantissa)
    if _HAS_BITWISE_COUNT:  # NumPy >= 2.0: zeros below the lowest set bit = popcount(lowest - 1)
        zeros = np.minimum(np.bitwise_count(lowest - np.uint64(1)), np.uint8(52)).astype(np.int64)
    else:  # a power of two below 2^52 converts exactly; its biased exponent - 1023 is its index
        index = (lowest.astype(np.float64).view(np.uint64) >> np.uint64(52)).astype(np.int64) - 1023
        zeros = np.where(lowest == 0, 52, index)
    # the top 12 bits (sign, exponent) shifted above the 6 bits of zeros
    return ((u >> np.uint64(52)).astype(np.int64) << 6) | zeros


def describe_bit_key(key: int) -> str:
    sign, exponent, zeros = key >> 17, (key >> 6) & 0x7FF, key & 0x3F
    s = "-" if sign else "+"
    if exponent == 0x7FF:
        return f"{s}{'inf' if zeros == 52 else 'nan'}"
    if exponent == 0:
        return f"{s}0" if zeros == 52 else f"{s}subnormal/tz{zeros}"
    return f"{s}2^{exponent - 1023}/tz{zeros}"


# -- features: a partition of the outputs into numbered parts ----------------------------------
class Feature:
    """Maps outputs to integer part numbers (-1: a part never seen in training)."""

    def codes(self, outputs: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def describe(self, parts: np.ndarray) -> str:  # pragma: no cover - abstract
        raise NotImplementedError


@dataclass(frozen=True)
class ValueFeature(Feature):
    """The exact output value (or coordinate, or whole row) among the training values."""

    coordinate: Coordinate
    values: np.ndarray  # sorted distinct training values (np.void rows for array outputs)
    whole_rows: bool = False

    def _keys(self, outputs: np.ndarray) -> np.ndarray:
        return _rows(outputs) if self.whole_rows else column(outputs, self.coordinate)

    def codes(self, outputs: np.ndarray) -> np.ndarray:
        keys = self._keys(outputs)
        idx = np.searchsorted(self.values, keys)
        idx = np.minimum(idx, len(self.values) - 1)
        found = self.values[idx] == keys
        return np.where(found, idx, -1)

    def describe(self, parts: np.ndarray) -> str:
        name = "y" if self.whole_rows else _coordinate_name(self.coordinate)
        if self.whole_rows:
            return f"{name} in a set of {len(parts)} output vectors"
        shown = ", ".join(repr(v.item() if hasattr(v, "item") else v) for v in self.values[np.sort(parts)[:8]])
        more = f", ... ({len(parts)} values)" if len(parts) > 8 else ""
        return f"{name} in {{{shown}{more}}}"


@dataclass(frozen=True)
class BinFeature(Feature):
    """Quantile bins of a numeric coordinate: part i is [edges[i-1], edges[i]); NaN is the last."""

    coordinate: Coordinate
    edges: np.ndarray

    def codes(self, outputs: np.ndarray) -> np.ndarray:
        v = column(outputs, self.coordinate)
        codes = np.searchsorted(self.edges, v, side="right")
        if v.dtype.kind == "f":
            codes[np.isnan(v)] = len(self.edges) + 1
        return codes

    def describe(self, parts: np.ndarray) -> str:
        e = self.edges
        def part(i: int) -> str:
            lo = "-inf" if i == 0 else f"{e[i - 1]:.6g}"
            if i > len(e):
                return "nan"
            hi = "+inf" if i == len(e) else f"{e[i]:.6g}"
            return f"[{lo}, {hi})"
        shown = " u ".join(part(int(i)) for i in np.sort(parts)[:4])
        more = f" u ... ({len(parts)} bins)" if len(parts) > 4 else ""
        return f"{_coordinate_name(self.coordinate)} in {shown}{more}"


@dataclass(frozen=True)
class BitFeature(Feature):
    """The bit pattern of a float coordinate: (sign, exponent, trailing zeros of the mantissa)."""

    coordinate: Coordinate

    def codes(self, outputs: np.ndarray) -> np.ndarray:
        return float_bit_key(column(outputs, self.coordinate))

    def describe(self, parts: np.ndarray) -> str:
        shown = ", ".join(describe_bit_key(int(k)) for k in np.sort(parts)[:6])
        more = f", ... ({len(parts)} patterns)" if len(parts) > 6 else ""
        return (f"float bits of {_coordinate_name(self.coordinate)} (sign, binade, trailing zero "
                f"bits) in {{{shown}{more}}}")


# -- events ------------------------------------------------------------------------------------
class Event:
    """A set of outputs. ``contains(outputs)`` tells, for each output (first axis), whether it is
    in the set; ``str(event)`` describes it."""

    def contains(self, outputs: Any) -> np.ndarray:  # pragma: no cover - abstract
        """Membership of each output in the event.

        Parameters
        ----------
        outputs : array_like
            Mechanism outputs, one per entry of the first axis.

        Returns
        -------
        numpy.ndarray of bool
            Shape (len(outputs),).

        Raises
        ------
        NotImplementedError
            On the base class.
        """
        raise NotImplementedError


class AllOutputs(Event):
    """Every output (chosen when nothing separates the inputs: its bound is 0)."""

    def contains(self, outputs: Any) -> np.ndarray:
        return np.ones(np.asarray(outputs).shape[0], dtype=bool)

    def __str__(self) -> str:
        return "all outputs (nothing separated the inputs in training)"


@dataclass(frozen=True)
class ThresholdEvent(Event):
    """{y >= threshold} (``upper``) or {y <= threshold} on one numeric feature."""

    coordinate: Coordinate
    threshold: Any
    upper: bool

    def contains(self, outputs: Any) -> np.ndarray:
        v = column(np.asarray(outputs), self.coordinate)
        with np.errstate(invalid="ignore"):
            return v >= self.threshold if self.upper else v <= self.threshold

    def __str__(self) -> str:
        t = self.threshold.item() if hasattr(self.threshold, "item") else self.threshold
        return f"{_coordinate_name(self.coordinate)} {'>=' if self.upper else '<='} {t!r}"


@dataclass(frozen=True)
class PartsEvent(Event):
    """The union of some parts of a feature's partition (a likelihood-ratio set)."""

    feature: Feature
    parts: np.ndarray  # sorted part numbers

    def contains(self, outputs: Any) -> np.ndarray:
        codes = self.feature.codes(np.asarray(outputs))
        return np.isin(codes, self.parts)

    def __str__(self) -> str:
        return self.feature.describe(self.parts)


# -- candidates and their scores ---------------------------------------------------------------
@dataclass
class Candidates:
    """A batch of candidate events: training hits under the favoured input and under the other,
    which input is favoured (0 or 1), and a factory for the j-th event."""

    hits_favoured: np.ndarray
    hits_other: np.ndarray
    favours: np.ndarray
    make: Callable[[int], Event]


def wilson_bounds(hits: np.ndarray, n: int, z: float) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval (Wilson 1927) of hits/n, as arrays (lower, upper).

    The upper end is (h + z²/2 + z s)/(n + z²), s = sqrt(h(n − h)/n + z²/4). The lower end
    (h + z²/2 − z s)/(n + z²) is a difference of nearly equal terms when h is small against z²
    (large z: small levels); multiplied out by the conjugate it is h²/(n (h + z²/2 + z s)),
    a ratio of positive terms."""
    h = hits.astype(np.float64)
    zz = z * z
    s = np.sqrt(np.maximum(h * (n - h) / n, 0.0) + zz / 4)
    lower = h * h / (n * (h + zz / 2 + z * s))
    upper = (h + zz / 2 + z * s) / (n + zz)
    return np.maximum(lower, 0.0), np.minimum(upper, 1.0)


def training_scores(c: Candidates, n: int, level: float, delta: float) -> np.ndarray:
    """ln((L_favoured - δ)/U_other) with one-sided Wilson bounds at ``level`` each (-inf when
    L_favoured <= δ): the bound the held-out test would give with the training frequencies."""
    # the upper level-quantile of N(0, 1) as minus the lower one: inv_cdf(1 - level) would form
    # 1 - level, which is 1.0 (and refused) for level below 2^-53
    z = -NormalDist().inv_cdf(level)
    lower, _ = wilson_bounds(c.hits_favoured, n, z)
    _, upper = wilson_bounds(c.hits_other, n, z)
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.log(lower - delta) - np.log(upper)
    return np.where(lower > delta, s, -np.inf)


def _ratio_sets(counts0: np.ndarray, counts1: np.ndarray, feature: Feature,
                parts: np.ndarray | None = None) -> Candidates:
    """Likelihood-ratio prefix sets over a partition with training counts per part, both ways.

    Parts with fewer than MIN_PART_COUNT training outputs (both inputs together) are merged into
    one "rare" group first: their ratios are mostly noise, and ordering thousands of them by it
    overfits the training half (the held-out bound then falls below a threshold event's)."""
    if parts is None:
        parts = np.arange(len(counts0))
    counts0, counts1 = np.asarray(counts0, np.int64), np.asarray(counts1, np.int64)
    total = counts0 + counts1
    seen = total > 0
    common = total >= MIN_PART_COUNT
    rare = seen & ~common
    groups: list[np.ndarray] = [np.array([p]) for p in parts[common]]
    c0 = list(counts0[common])
    c1 = list(counts1[common])
    if rare.any():
        groups.append(parts[rare])
        c0.append(int(counts0[rare].sum()))
        c1.append(int(counts1[rare].sum()))
    g0, g1 = np.array(c0, np.int64), np.array(c1, np.int64)
    ratio = np.log(g0 + 0.5) - np.log(g1 + 0.5)  # smoothed: a part seen under one input only
    order0 = np.argsort(-ratio, kind="stable")   # groups likelier under x0 first
    order1 = order0[::-1]
    m = len(groups)
    fav = np.concatenate([np.cumsum(g0[order0]), np.cumsum(g1[order1])])
    oth = np.concatenate([np.cumsum(g1[order0]), np.cumsum(g0[order1])])
    favours = np.concatenate([np.zeros(m, np.int8), np.ones(m, np.int8)])

    def make(j: int) -> Event:
        order = order0 if j < m else order1
        size = (j % m) + 1
        return PartsEvent(feature, np.sort(np.concatenate([groups[i] for i in order[:size]])))
    return Candidates(fav, oth, favours, make)


def _threshold_candidates(coordinate: Coordinate, s0: np.ndarray, s1: np.ndarray) -> Candidates:
    """{y >= t} and {y <= t} for t among the training order statistics of either input (dense
    in the tails, where the likelihood ratio of a shifted distribution is largest)."""
    picks = []
    for s in (s0, s1):
        n = len(s)
        if n:
            tail = np.unique(np.geomspace(1, max(n // 2, 1), _THRESHOLDS // 4).astype(np.int64))
            ranks = np.concatenate([tail - 1, n - tail, np.linspace(0, n - 1, _THRESHOLDS // 4).astype(np.int64)])
            picks.append(s[np.clip(ranks, 0, n - 1)])
    if not picks:  # every output NaN
        return Candidates(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int8), lambda j: AllOutputs())
    t = np.unique(np.concatenate(picks))
    n0, n1 = len(s0), len(s1)
    ge0 = n0 - np.searchsorted(s0, t, side="left")
    ge1 = n1 - np.searchsorted(s1, t, side="left")
    le0 = np.searchsorted(s0, t, side="right")
    le1 = np.searchsorted(s1, t, side="right")
    k = len(t)
    # four blocks: (>=, favours 0), (>=, favours 1), (<=, favours 0), (<=, favours 1)
    fav = np.concatenate([ge0, ge1, le0, le1])
    oth = np.concatenate([ge1, ge0, le1, le0])
    favours = np.concatenate([np.zeros(k, np.int8), np.ones(k, np.int8)] * 2)

    def make(j: int) -> Event:
        return ThresholdEvent(coordinate, t[j % k], upper=j < 2 * k)
    return Candidates(fav, oth, favours, make)


def _sorted_finite(v: np.ndarray) -> np.ndarray:
    if v.dtype.kind == "f":
        v = v[~np.isnan(v)]
    return np.sort(v, kind="stable")


def _coordinates(outputs: np.ndarray) -> list[Coordinate]:
    if outputs.ndim == 1:
        return [None]
    d = int(np.prod(outputs.shape[1:]))
    coords: list[Coordinate] = list(range(min(d, MAX_COORDINATES)))
    if d > 1 and outputs.dtype.kind in "iuf":
        coords.append("sum")
    return coords


def candidate_batches(train0: np.ndarray, train1: np.ndarray) -> list[Candidates]:
    """Every candidate family for these training outputs (same trailing shape and dtype kind)."""
    batches: list[Candidates] = []
    numeric = train0.dtype.kind in "iuf"
    if train0.ndim > 1:  # whole output vectors, when they repeat
        r0, r1 = _rows(train0), _rows(train1)
        values = np.unique(np.concatenate([np.unique(r0), np.unique(r1)]))
        if len(values) <= MAX_VALUES:
            feature = ValueFeature(None, values, whole_rows=True)
            batches.append(_ratio_sets(np.bincount(feature.codes(train0), minlength=len(values)),
                                       np.bincount(feature.codes(train1), minlength=len(values)), feature))
    for coordinate in _coordinates(train0):
        f: Feature
        v0, v1 = column(train0, coordinate), column(train1, coordinate)
        if not numeric:  # strings and the like: exact values only
            values = np.unique(np.concatenate([np.unique(v0), np.unique(v1)]))
            if len(values) <= MAX_VALUES:
                f = ValueFeature(coordinate, values)
                batches.append(_ratio_sets(np.bincount(f.codes(train0), minlength=len(values)),
                                           np.bincount(f.codes(train1), minlength=len(values)), f))
            continue
        s0, s1 = _sorted_finite(v0), _sorted_finite(v1)
        batches.append(_threshold_candidates(coordinate, s0, s1))
        d0 = np.count_nonzero(np.diff(s0)) + 1 if len(s0) else 0
        d1 = np.count_nonzero(np.diff(s1)) + 1 if len(s1) else 0
        if d0 <= MAX_VALUES and d1 <= MAX_VALUES:  # repeated values: exact likelihood ratios
            values = np.unique(np.concatenate([np.unique(s0), np.unique(s1)]))
            f = ValueFeature(coordinate, values)
            c0 = np.searchsorted(s0, values, side="right") - np.searchsorted(s0, values, side="left")
            c1 = np.searchsorted(s1, values, side="right") - np.searchsorted(s1, values, side="left")
            batches.append(_ratio_sets(c0, c1, f))
        else:  # quantile bins of the pooled training outputs
            # about QUANTILE_BINS bins: quantiles of each input's sorted training outputs
            q = np.linspace(0, 1, QUANTILE_BINS // 2 + 1)[1:-1]
            edges = np.unique(np.concatenate([s[(q * (len(s) - 1)).astype(np.int64)] for s in (s0, s1) if len(s)]))
            f = BinFeature(coordinate, edges)
            # parts 0..len(edges) from the sorted finite values, then NaN (part len(edges) + 1)
            b0 = np.diff(np.concatenate([[0], np.searchsorted(s0, edges, side="right"), [len(s0)], [len(v0)]]))
            b1 = np.diff(np.concatenate([[0], np.searchsorted(s1, edges, side="right"), [len(s1)], [len(v1)]]))
            batches.append(_ratio_sets(b0, b1, f))
        if train0.dtype.kind == "f":
            f = BitFeature(coordinate)
            k0 = np.bincount(f.codes(train0), minlength=1 << 18)
            k1 = np.bincount(f.codes(train1), minlength=1 << 18)
            batches.append(_ratio_sets(k0, k1, f))
    return batches


def best_event(fit0: np.ndarray, fit1: np.ndarray, select0: np.ndarray, select1: np.ndarray,
               level: float, delta: float) -> tuple[Event, int, tuple[int, int], float]:
    """The event to test: each family's best candidate on the fit outputs, then the best of
    those on the separate select outputs (unbiased counts: a family with many candidates, such
    as ratio-ordered bins, overfits the fit outputs, and would win on them unfairly).

    Returns (event, favoured input, select hits (under x0, under x1), select score)."""
    n_fit, n_select = len(fit0), len(select0)
    best: tuple[float, Event, int, tuple[int, int]] | None = None
    for c in candidate_batches(fit0, fit1):
        if len(c.hits_favoured) == 0:
            continue
        s = training_scores(c, n_fit, level, delta)
        j = int(np.argmax(s))
        if not math.isfinite(s[j]):
            continue
        event, favoured = c.make(j), int(c.favours[j])
        h = (int(np.count_nonzero(event.contains(select0))), int(np.count_nonzero(event.contains(select1))))
        one = Candidates(np.array([h[favoured]]), np.array([h[1 - favoured]]), np.array([favoured]), c.make)
        score = float(training_scores(one, n_select, level, delta)[0])
        if best is None or score > best[0]:
            best = (score, event, favoured, h)
    if best is None or not math.isfinite(best[0]):
        # nothing separates the inputs: every output (its bound is 0)
        return AllOutputs(), 0, (n_select, n_select), -math.inf
    score, event, favoured, h = best
    return event, favoured, h, score
