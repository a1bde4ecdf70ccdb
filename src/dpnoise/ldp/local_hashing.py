"""Local hashing: optimized local hashing ("olh") and fast local hashing ("flh").

OLH (Wang, Blocki, Li & Jha 2017, "Locally differentially private protocols for frequency
estimation", USENIX Security, §4.4): each user draws a secret hash seed (independent of the
item, sent in the report), hashes the item to one of g = round(e^ε + 1) buckets and reports the
bucket by g-ary randomized response (the exact kernel shared with ``"grr"``).
FLH (Cormode, Maddock & Maple 2021, "Frequency estimation under local differential privacy",
PVLDB 14(11), §4.3): the seed is a secret uniform index into a PUBLIC pool of k′ seeds, so the
server aggregates in O(n + k′ d) instead of O(n d).

The hash family (multiply-add-shift, strongly universal, reduced by multiply-high) is described
in cpp/include/dpnoise/ldp/hash_family.hpp and docs/ldp_hashing.md.
"""
from __future__ import annotations

import math
from typing import Any, Dict, Optional

import numpy as np

from .. import _core
from .._validate import integer
from ..bit_generator import PublicStream
from ..generator import Generator
from ._protocol import Aggregator, Protocol, Reports, register

MAX_HASH_DOMAIN = 1 << 32   # items are 32-bit hash keys
MAX_BUCKETS = 1 << 32       # g <= 2^32 (the multiply-high reduction's range)
MAX_FLH_STATE = 1 << 24     # k′ g counters of the FLH aggregator (128 MiB)
DEFAULT_K_PRIME = 10_000    # Cormode, Maddock & Maple 2021, §6 (k′ = 10^4 is close to OLH's error)
POOL_STREAM = 0x464C48      # "FLH": the public stream of the pool, words 2j, 2j+1 = seed j


def optimal_buckets(gamma: Any) -> int:
    """g = round(e^γ + 1), at least 2 and at most 2^32 (Wang et al. 2017, Eq. 11: the g that
    minimises OLH's variance)."""
    g = float(gamma)
    if g > math.log(MAX_BUCKETS):
        return MAX_BUCKETS
    return max(2, int(round(math.exp(g) + 1)))


class _LocalHashing(Protocol):
    """Shared: options ``g`` (buckets; default the optimal round(e^ε + 1)), the GRR keep
    probability p over g buckets, the estimator and its variance."""

    def _check_options(self, options: Dict[str, Any]) -> Dict[str, Any]:
        opts = dict(options)
        if self.domain_size > MAX_HASH_DOMAIN:
            raise ValueError(f"domain_size must be at most 2^32 for {self.name!r} (32-bit hash keys), "
                             f"got {self.domain_size}")
        g = opts.pop("g", None)
        g = optimal_buckets(self.gamma) if g is None else integer(g, "g")
        if not 2 <= g <= MAX_BUCKETS:
            raise ValueError(f"g must be in [2, 2^32], got {g}")
        out = {"g": g}
        out.update(self._check_more_options(opts, g))
        if opts:
            raise TypeError(f"protocol {self.name!r} takes no option {sorted(opts)[0]!r}")
        return out

    def _check_more_options(self, opts: Dict[str, Any], g: int) -> Dict[str, Any]:
        return {}

    @property
    def g(self) -> int:
        return self.options["g"]

    def _pq(self) -> tuple:
        """(p, q′, p − q′): p = e^γ/(e^γ + g − 1), the probability of reporting the user's own
        bucket, q′ = 1/g, the probability that a report supports an item the user does not hold
        (Wang et al. 2017, §4.4); p − q′ = (e^γ − 1)(g − 1)/(g(e^γ + g − 1)) from expm1, accurate
        for small ε."""
        em1 = math.expm1(float(self.gamma))
        g = self.g
        return (em1 + 1) / (em1 + g), 1.0 / g, em1 * (g - 1) / (g * (em1 + g))

    def variance_per_user(self) -> float:
        """q′(1 − q′)/(p − q′)² (Wang et al. 2017, Eq. 3 with q′ = 1/g; ≈ 4e^ε/(e^ε − 1)² at the
        optimal g, Eq. 12)."""
        p, q, gap = self._pq()
        return q * (1 - q) / gap ** 2

    def variance(self, n: int, counts: Optional[np.ndarray] = None) -> np.ndarray:
        """n q′(1 − q′)/(p − q′)² + c(x)(1 − p − q′)/(p − q′) (Wang et al. 2017, Eq. 3; the
        second term from the c(x) users holding x, whose support is Bernoulli(p))."""
        p, q, gap = self._pq()
        var = np.full(self.domain_size, n * self.variance_per_user())
        if counts is not None:
            var = var + np.asarray(counts, dtype=np.float64) * (1 - p - q) / gap
        return var

    def estimate_from_support(self, support: np.ndarray, n: int) -> np.ndarray:
        """ĉ(x) = (C(x) − n/g)/(p − 1/g), C(x) the reports supporting x (Wang et al. 2017, Eq. 3)."""
        p, q, gap = self._pq()
        return (support - n * q) / gap


def _check_values(v: Any, n: int, g: int, name: str) -> None:
    if not isinstance(v, np.ndarray) or v.dtype != np.int64 or v.shape != (n,):
        raise ValueError(f"{name} reports must hold 'values': int64 of one bucket per user")
    if v.size and (int(v.min()) < 0 or int(v.max()) >= g):
        raise ValueError(f"{name} report values must be buckets in [0, {g}) (g)")


# --------------------------------------------------------------------------------------- OLH
@register
class OLH(_LocalHashing):
    """Optimized local hashing. Report: ``seeds`` uint64 (n, 2), each user's secret hash seed
    (a, b), and ``values`` int64, the bucket after g-ary randomized response. Aggregation:
    O(n d) hash tests in C++ at ``add`` time (state: d support counts); estimates O(d)."""

    name = "olh"

    def _privatize(self, rng: Generator, items: np.ndarray, threads: int) -> Dict[str, np.ndarray]:
        seeds, values = _core.ldp.olh_privatize(rng._core, items, self.g, self.gamma.numerator, self.gamma.denominator,
                                            threads)
        return {"seeds": seeds, "values": values}


class OLHAggregator(Aggregator):
    _report_keys = frozenset({"seeds", "values"})

    def _empty_state(self) -> Dict[str, np.ndarray]:
        return {"support": np.zeros(self.protocol.domain_size, dtype=np.int64)}

    def _check_state(self, state: Dict[str, np.ndarray], n: int) -> None:
        s = state["support"]
        if (s < 0).any() or (s > n).any():
            raise ValueError("corrupt aggregator state: olh support counts must be in [0, n]")

    def _check_batch(self, reports: Reports) -> None:
        s = reports.data.get("seeds")
        if not isinstance(s, np.ndarray) or s.dtype != np.uint64 or s.shape != (reports.n, 2):
            raise ValueError("olh reports must hold 'seeds': uint64 of shape (n, 2), one hash seed per user")
        _check_values(reports.data.get("values"), reports.n, self.protocol.g, "olh")

    def _ingest(self, reports: Reports) -> None:
        d = reports.data
        support = _core.ldp.olh_support(np.ascontiguousarray(d["seeds"]), np.ascontiguousarray(d["values"]),
                                    self.protocol.g, self.protocol.domain_size, 1)
        self._state["support"] = self._state["support"] + support

    def _estimate(self) -> np.ndarray:
        return self.protocol.estimate_from_support(self._state["support"], self.n)


OLH.aggregator_class = OLHAggregator


# --------------------------------------------------------------------------------------- FLH
@register
class FLH(_LocalHashing):
    """Fast local hashing. Options: ``g`` (as OLH), ``k_prime`` (pool size, default 10,000,
    or ⌊2^24/g⌋ when that is smaller) and ``pool_key`` (the PUBLIC key of the pool, an int in [0, 2^256), default 0: the pool
    is words 2j, 2j + 1 of stream 0x464C48 of ``dpnoise.PublicStream(pool_key)``).
    Report: ``indices`` int64 (the user's secret uniform pool index) and ``values`` int64.
    The estimator is OLH's; over a random pool it is unbiased with the extra variance
    Σ_{y≠x} c(y)(c(y) − 1)/((g − 1) k′) (docs/ldp_hashing.md); for one fixed pool that term is
    a bias of the same size."""

    name = "flh"

    def _check_more_options(self, opts: Dict[str, Any], g: int) -> Dict[str, Any]:
        # default: 10,000, or fewer when g is large (ε above ~7.4), so that k′ g fits the state
        k = integer(opts.pop("k_prime", max(1, min(DEFAULT_K_PRIME, MAX_FLH_STATE // g))), "k_prime")
        if not 1 <= k <= MAX_FLH_STATE:
            raise ValueError(f"k_prime must be in [1, 2^24], got {k}")
        key = integer(opts.pop("pool_key", 0), "pool_key")
        if not 0 <= key < 1 << 256:
            raise ValueError("pool_key must be in [0, 2^256)")
        return {"k_prime": k, "pool_key": key}

    def __init__(self, epsilon: float, domain_size: int, **options: Any) -> None:
        super().__init__(epsilon, domain_size, **options)
        if self.options["k_prime"] * self.g > MAX_FLH_STATE:
            raise ValueError(f"k_prime * g must be at most 2^24 (the aggregator keeps k_prime x g counters), got "
                             f"{self.options['k_prime']} * {self.g}; use a smaller k_prime or g, or 'olh'")
        self._pool: Optional[np.ndarray] = None

    @property
    def pool(self) -> np.ndarray:
        """The public seeds, uint64 (k′, 2): row j = (a_j, b_j)."""
        if self._pool is None:
            k = self.options["k_prime"]
            words = PublicStream(self.options["pool_key"]).words(POOL_STREAM, 0, 2 * k)
            self._pool = words.reshape(k, 2)
            self._pool.setflags(write=False)
        return self._pool

    def _privatize(self, rng: Generator, items: np.ndarray, threads: int) -> Dict[str, np.ndarray]:
        indices, values = _core.ldp.flh_privatize(rng._core, items, self.pool, self.g, self.gamma.numerator,
                                              self.gamma.denominator, threads)
        return {"indices": indices, "values": values}

    def pool_variance(self, counts: np.ndarray) -> np.ndarray:
        """Σ_{y≠x} c(y)(c(y) − 1)/((g − 1) k′): the variance added by sharing k′ random hash
        functions (docs/ldp_hashing.md, 'FLH's pool term'; it assumes the collisions of x with
        distinct items are uncorrelated, as for a 3-wise independent family)."""
        c = np.asarray(counts, dtype=np.float64)
        pairs = c * np.maximum(c - 1, 0)
        return (pairs.sum() - pairs) / ((self.g - 1) * self.options["k_prime"])

    def variance(self, n: int, counts: Optional[np.ndarray] = None) -> np.ndarray:
        var = super().variance(n, counts)
        if counts is not None:
            var = var + self.pool_variance(counts)
        return var


class FLHAggregator(Aggregator):
    """State: counts of reports per (pool index, value), k′ x g; the support counts are
    computed from it (O(k′ d)) when an estimate is first asked for, and cached."""

    _report_keys = frozenset({"indices", "values"})

    def _empty_state(self) -> Dict[str, np.ndarray]:
        self._support: Optional[np.ndarray] = None
        return {"counts": np.zeros((self.protocol.options["k_prime"], self.protocol.g), dtype=np.int64)}

    def _check_state(self, state: Dict[str, np.ndarray], n: int) -> None:
        c = state["counts"]
        if (c < 0).any() or int(c.sum(dtype=object)) != n:
            raise ValueError("corrupt aggregator state: flh counts must be non-negative and sum to n")

    def _check_batch(self, reports: Reports) -> None:
        j = reports.data.get("indices")
        k = self.protocol.options["k_prime"]
        if not isinstance(j, np.ndarray) or j.dtype != np.int64 or j.shape != (reports.n,):
            raise ValueError("flh reports must hold 'indices': int64 of one pool index per user")
        if j.size and (int(j.min()) < 0 or int(j.max()) >= k):
            raise ValueError(f"flh report indices must be in [0, {k}) (k_prime)")
        _check_values(reports.data.get("values"), reports.n, self.protocol.g, "flh")

    def _ingest(self, reports: Reports) -> None:
        g, k = self.protocol.g, self.protocol.options["k_prime"]
        cells = reports.data["indices"] * g + reports.data["values"]
        self._state["counts"] = self._state["counts"] + np.bincount(cells, minlength=k * g).reshape(k, g)
        self._support = None

    def _merge_state(self, other: Aggregator) -> None:
        super()._merge_state(other)
        self._support = None

    def _after_load(self) -> None:
        self._support = None

    def support(self) -> np.ndarray:
        """C(x) = Σ_j counts[j, h_j(x)] for every item (C++, O(k′ d))."""
        if self._support is None:
            self._support = _core.ldp.flh_support(self._state["counts"], self.protocol.pool, self.protocol.domain_size, 1)
            self._support.flags.writeable = False  # shared with later calls: read-only
        return self._support

    def _estimate(self) -> np.ndarray:
        return self.protocol.estimate_from_support(self.support(), self.n)


FLH.aggregator_class = FLHAggregator
