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
import secrets
from typing import Any

import numpy as np

from .. import _core
from .._validate import integer
from ..bit_generator import PublicStream
from ..generator import Generator
from ._aggregator import Aggregator, count_into
from ._channels import Channel, layered, olh_variance, symmetric_two_layers
from ._frequency import FrequencyAggregator, FrequencyConfiguration
from ._kernels import Kernels, KernelTable
from ._memo import DEFAULT_POOL_SIZE, check_pool_size
from ._protocol import native
from ._reports import Reports
from ._schema import PER_USER, ROW, ReportField, values_within

MAX_HASH_DOMAIN = 1 << 32   # items are 32-bit hash keys
MAX_BUCKETS = 1 << 32       # g <= 2^32 (the multiply-high reduction's range)
MAX_FLH_STATE = 1 << 24     # k′ g counters of the FLH aggregator (128 MiB)
DEFAULT_K_PRIME = 10_000    # Cormode, Maddock & Maple 2021, §6 (k′ = 10^4 is close to OLH's error)
DEFAULT_MAX_FLH_G = 4096    # FLH's default g is capped (from ε ≈ 8.3) so that k′ g fits with k′ >= 4096
POOL_STREAM = 0x464C48      # "FLH": the public stream of the pool, words 2j, 2j+1 = seed j
OLH_POOL_STREAM = 0x4F4C48  # "OLH": the public stream of OLH's optional pool of seeds


def optimal_buckets(gamma: Any) -> int:
    """g = round(e^γ + 1), at least 2 and at most 2^32 (Wang et al. 2017, Eq. 11: the g that
    minimises OLH's variance).

    Parameters
    ----------
    gamma : fractions.Fraction or float
        The exact ε (γ) of the configuration.

    Returns
    -------
    int
        g in [2, 2^32].
    """
    g = float(gamma)
    if g > math.log(MAX_BUCKETS):
        return MAX_BUCKETS
    return max(2, round(math.exp(g) + 1))


def local_hashing_pq(gamma: Any, g: int) -> tuple[float, float, float]:
    """(p, q′, p − q′) of g-ary randomized response over hash buckets: p = e^γ/(e^γ + g − 1),
    the probability of reporting the user's own bucket, q′ = 1/g, the probability that a report
    supports an item the user does not hold (Wang et al. 2017, §4.4); p − q′ =
    (e^γ − 1)(g − 1)/(g(e^γ + g − 1)) from expm1, accurate for small ε. Shared by OLH, FLH and
    every heavy-hitters group.

    Parameters
    ----------
    gamma : fractions.Fraction or float
        The exact ε.
    g : int
        The number of hash buckets (>= 2).

    Returns
    -------
    tuple of (float, float, float)
        (p, q′, p − q′).
    """
    em1 = math.expm1(float(gamma))
    return (em1 + 1) / (em1 + g), 1.0 / g, em1 * (g - 1) / (g * (em1 + g))


def local_hashing_variance(gamma: Any, g: int, n: float, counts: Any, pq: Channel | None = None) -> Any:
    """n q′(1 − q′)/(p − q′)² + c(x)(1 − p − q′)/(p − q′) (Wang et al. 2017, Eq. 3; the second
    term from the c(x) users holding x, whose support is Bernoulli(p)).

    Parameters
    ----------
    gamma, g
        As for :func:`local_hashing_pq`.
    n : float
        The number of reports.
    counts : array_like
        c(x) per item (or a scalar).
    pq : tuple, optional
        (p, q, p − q) overriding :func:`local_hashing_pq`, for two layers of randomisation.

    Returns
    -------
    numpy.ndarray or float
        The variance per item, broadcast like ``counts``.
    """
    p, q, gap = local_hashing_pq(gamma, g) if pq is None else pq
    return n * q * (1 - q) / gap ** 2 + np.asarray(counts, dtype=np.float64) * (1 - p - q) / gap


def pool_variance(counts: Any, g: int, k_prime: int) -> np.ndarray:
    """Σ_{y≠x} c(y)(c(y) − 1)/((g − 1) k′): the variance added by sharing k′ random hash
    functions (docs/ldp_hashing.md, 'FLH's pool term'; it assumes the collisions of x with
    distinct items are uncorrelated, as for a 3-wise independent family).

    Parameters
    ----------
    counts : array_like
        c(y) per item, shape (d,).
    g : int
        Hash buckets.
    k_prime : int
        The pool's size k′.

    Returns
    -------
    numpy.ndarray of float64
        The term for each item x, shape (d,).
    """
    c = np.asarray(counts, dtype=np.float64)
    pairs = c * np.maximum(c - 1, 0)
    return (pairs.sum() - pairs) / ((g - 1) * k_prime)


def pool_variance_bound(n: int, g: int, pool_size: int) -> float:
    """n(n − 1)/((g − 1) k′): the largest pool term of any data set of n reports, for an item no
    device holds (all n devices holding one other item). Two reports share a pool seed with
    probability 1/k′; given that, the covariance of their support of x is (p − q)² times that of
    their collision indicators, at most (1/g)(1 − 1/g) by Cauchy–Schwarz whatever their items,
    so no independence between the collisions of distinct items is assumed (docs/ldp.md, "What
    compare() assumes"; the pool term itself: docs/ldp_hashing.md, "FLH's pool term").

    Parameters
    ----------
    n : int
        The number of reports.
    g : int
        Hash buckets.
    pool_size : int
        The pool's size k′.

    Returns
    -------
    float
        The bound, in squared counts.
    """
    return float(n) * max(float(n) - 1, 0.0) / ((g - 1) * pool_size)


class _LocalHashing(FrequencyConfiguration):
    """Shared: options ``g`` (buckets; default the optimal round(e^ε + 1)), the GRR keep
    probability p over g buckets, the estimator and its variance."""

    _default_max_g = MAX_BUCKETS
    longitudinal = True

    def _check_options(self, options: dict[str, Any]) -> dict[str, Any]:
        opts = dict(options)
        if self.domain_size > MAX_HASH_DOMAIN:
            raise ValueError(f"domain_size must be at most 2^32 for {self.name!r} (32-bit hash keys), "
                             f"got {self.domain_size}")
        g = opts.pop("g", None)
        g = min(optimal_buckets(self.gamma), self._default_max_g) if g is None else integer(g, "g")
        if not 2 <= g <= MAX_BUCKETS:
            raise ValueError(f"g must be in [2, 2^32], got {g}")
        out = {"g": g}
        out.update(self._check_more_options(opts, g))
        if opts:
            raise TypeError(f"protocol {self.name!r} takes no option {sorted(opts)[0]!r}")
        return out

    def _check_more_options(self, opts: dict[str, Any], g: int) -> dict[str, Any]:
        return {}

    @property
    def g(self) -> int:
        return self.options["g"]

    def _pq(self) -> Channel:
        """(p, 1/g, p − 1/g): p the probability that a report supports the user's item, after
        one layer or both (two g-ary symmetric channels over the bucket in a row)."""
        return layered(self, lambda gamma: local_hashing_pq(gamma, self.g), self._two_buckets)

    def _two_buckets(self, perm: Channel, inst: Channel) -> Channel:
        """Two g-ary symmetric channels over the bucket in a row, as (p, 1/g, p − 1/g)."""
        g = self.g
        (p, q, gap), (p1, _, gap1) = perm, inst
        # p − 1/g = (g − 1)(p − q_g)/g for a g-ary symmetric channel with q_g = (1 − p)/(g − 1)
        P, _, gap_g = symmetric_two_layers(p, gap * g / (g - 1), p1, gap1 * g / (g - 1), g)
        return P, q, gap_g * (g - 1) / g

    def _instantaneous(self, rng: Generator, data: dict[str, np.ndarray], n: int,
                       threads: int) -> dict[str, np.ndarray]:
        """The per-report layer: g-ary randomized response at ε₁ of the permanent bucket; the
        seed (or pool index) stays as memoised."""
        g1 = self.gamma1
        out = dict(data)
        out["values"] = self.kernels.rr(native(rng), data["values"], self.g, g1.numerator, g1.denominator, threads)
        return out

    def _bucket_rr(self, rng: Generator, seeds: np.ndarray, items: np.ndarray, scramble: bool,
                   threads: int) -> np.ndarray:
        """g-ary randomized response at ε of each user's bucket h_seed(x) (π(x) with ``scramble``,
        FLH), by the kernel row's ``rr`` (the exact kernel, or the constant-time one: k = g, the
        same γ). The hash is a fixed sequence of multiplies, shifts and xors (hash_family.hpp):
        its time does not depend on the item."""
        buckets = _core.ldp.local_hash(seeds, items, self.g, scramble)
        g = self.gamma
        return self.kernels.rr(native(rng), buckets, self.g, g.numerator, g.denominator, threads)

    def variance_per_user(self) -> float:
        """q′(1 − q′)/(p − q′)² (Wang et al. 2017, Eq. 3 with q′ = 1/g; ≈ 4e^ε/(e^ε − 1)² at the
        optimal g, Eq. 12)."""
        _p, q, gap = self._pq()
        return q * (1 - q) / gap ** 2

    def worst_case_variance(self, n: int) -> float:
        """The largest variance of the count estimate of an item no device holds, over every data
        set of n reports: n q′(1 − q′)/(p − q′)² (Wang et al. 2017, Eq. 3), plus with a shared pool
        of seeds (FLH's ``k_prime``, OLH's ``pool_size``) :func:`pool_variance_bound`.
        ``dpnoise.ldp.compare`` states this, since it never sees the data.

        Parameters
        ----------
        n : int
            The number of reports.

        Returns
        -------
        float
            The variance, in squared counts.
        """
        pool = self.options.get("k_prime", self.options.get("pool_size"))
        var = float(n) * self.variance_per_user()
        return var if pool is None else var + pool_variance_bound(n, self.g, pool)

    def variance(self, n: int, counts: np.ndarray | None = None) -> np.ndarray:
        c = np.zeros(self.domain_size) if counts is None else counts
        return np.broadcast_to(local_hashing_variance(self.gamma, self.g, n, c, self._pq()),
                               (self.domain_size,)).copy()

    def estimate_from_support(self, support: np.ndarray, n: int) -> np.ndarray:
        """ĉ(x) = (C(x) − n/g)/(p − 1/g), C(x) the reports supporting x (Wang et al. 2017, Eq. 3)."""
        _p, q, gap = self._pq()
        return (support - n * q) / gap


def _check_buckets(reports: Reports, g: int, name: str) -> None:
    if not values_within(reports.data["values"], g):
        raise ValueError(f"{name} report values must be buckets in [0, {g}) (g)")


def pooled_variance(agg: Aggregator, pool_size: int, items: Any) -> np.ndarray:
    """The stated variance of an aggregator whose reports share ``pool_size`` public hash
    seeds (FLH, OLH with a pool): OLH's Eq. 3 plus the pool term estimated from the state
    without bias (:meth:`FLHAggregator.variance`; docs/ldp_hashing.md, "FLH's pool term").

    Parameters
    ----------
    agg : Aggregator
        An FLH or pooled-OLH aggregator.
    pool_size : int
        The number of public seeds the reports share (k′).
    items : array_like or None
        The items (None: every item).

    Returns
    -------
    numpy.ndarray
        float64 variances.
    """
    pr = agg.protocol
    est = agg._estimates()
    counts = np.clip(est, 0, agg.n) if agg.n else np.zeros(est.shape)
    base = local_hashing_variance(pr.gamma, pr.g, agg.n, counts, pr._pq())
    K = (pr.g - 1) * pool_size
    total = max(float((est * est - est - base).sum()) / (1 + (est.size - 1) / K), 0.0)
    own = np.clip(counts * (counts - 1), 0.0, total)
    var = base + (total - own) / K
    return var if items is None else var[pr._query(items)]


# --------------------------------------------------------------------------------------- OLH
class OLHAggregator(FrequencyAggregator):
    """State: ``support`` (int64, d): the reports supporting each item, counted at ``add``."""

    def _empty_state(self) -> dict[str, np.ndarray]:
        return {"support": np.zeros(self.protocol.domain_size, dtype=np.int64)}

    def _check_state(self, state: dict[str, np.ndarray], n: int) -> None:
        s = state["support"]
        if (s < 0).any() or (s > n).any():
            raise ValueError("corrupt aggregator state: olh support counts must be in [0, n]")

    def _check_batch(self, reports: Reports) -> None:
        _check_buckets(reports, self.protocol.g, "olh")

    def _ingest(self, reports: Reports) -> None:
        d = reports.data
        support = _core.ldp.olh_support(np.ascontiguousarray(d["seeds"]), np.ascontiguousarray(d["values"]),
                                    self.protocol.g, self.protocol.domain_size, 1)
        self._state["support"] += support

    def _estimate(self) -> np.ndarray:
        return self.protocol.estimate_from_support(self._state["support"], self.n)

    def variance(self, items: Any = None) -> np.ndarray:
        """Eq. 3 (per-user seeds), or with a public pool of seeds the pool term as FLH's: the
        clipped estimates' squares would count every item's noise as collisions."""
        pool = self.protocol.options.get("pool_size")
        return super().variance(items) if pool is None else pooled_variance(self, pool, items)


class OLH(_LocalHashing, name="olh", aggregator=OLHAggregator, cost_rank=1):
    """Optimized local hashing. Report: ``seeds`` uint64 (n, 2), each user's secret hash seed
    (a, b), and ``values`` int64, the bucket after g-ary randomized response. Aggregation:
    O(n d) hash tests in C++ at ``add`` time (state: d support counts); estimates O(d).

    Options ``pool_size`` and ``pool_key`` (daily collection; default with
    ``instantaneous_epsilon``: 2^10 seeds and a fresh random key): the seeds are drawn from a
    PUBLIC pool (words 2j, 2j + 1 of stream 0x4F4C48 of ``dpnoise.PublicStream(pool_key)``), so a
    memoised seed names one of ``pool_size`` public values, never the device. The shared seeds
    add FLH's pool term to the variance (:func:`pool_variance`)."""

    report_fields = (ReportField("seeds", ROW, np.uint64, width=2),
                     ReportField("values", PER_USER, np.int64, bound=lambda p: p.g))
    variance_formula = staticmethod(olh_variance)

    def _check_more_options(self, opts: dict[str, Any], g: int) -> dict[str, Any]:
        size, key = opts.pop("pool_size", None), opts.pop("pool_key", None)
        if size is None and key is None and self.gamma1 is None:
            return {}  # per-user secret seeds (the original protocol)
        size = check_pool_size(size, DEFAULT_POOL_SIZE)
        key = secrets.randbits(256) if key is None else integer(key, "pool_key")
        if not 0 <= key < 1 << 256:
            raise ValueError("pool_key must be in [0, 2^256)")
        return {"pool_size": size, "pool_key": key}

    @property
    def pool(self) -> np.ndarray | None:
        """The public seeds, uint64 (pool_size, 2), or None (per-user secret seeds)."""
        if "pool_size" not in self.options:
            return None
        if getattr(self, "_pool", None) is None:
            k = self.options["pool_size"]
            self._pool = PublicStream(self.options["pool_key"]).words(OLH_POOL_STREAM, 0, 2 * k).reshape(k, 2)
            self._pool.setflags(write=False)
        return self._pool

    def _check_device_key(self, device_key: Any) -> bytes:
        key = super()._check_device_key(device_key)
        if self.pool is None:
            raise ValueError("device_key on 'olh' needs a public pool of hash seeds (a memoised per-device seed "
                             "would identify the device): give the configuration pool_size= (e.g. 1024) or "
                             "instantaneous_epsilon=")
        return key

    def _memo_rows_kernel(self, keys: np.ndarray, fingerprint: bytes, person: bytes, items: np.ndarray,
                          threads: int) -> dict[str, np.ndarray] | None:
        """The permanent (pool seed, bucket) of memoised rows from the C++ keyed-row kernel: row i
        a public seed and the g-ary randomized response of ``items[i]``'s bucket, the same as
        ``_privatize`` on the generator keyed by the PRF of (``keys[i]``, ``fingerprint``,
        ``items[i]``). None where the kernel row has no keyed-row kernel (the constant-time one)."""
        memo = self.kernels.get("memo_rows")
        if memo is None:
            return None
        g = self.gamma
        seeds, values = memo(keys, fingerprint, person, items, self.pool, self.g, g.numerator,
                                           g.denominator, threads)
        return {"seeds": seeds, "values": values}

    def variance(self, n: int, counts: np.ndarray | None = None) -> np.ndarray:
        """OLH's variance, plus the pool term of shared seeds when the seeds come from a pool."""
        var = super().variance(n, counts)
        if counts is not None and self.pool is not None:
            var = var + pool_variance(counts, self.g, self.options["pool_size"])
        return var

    def cost_units(self, n: int) -> tuple[float, float]:
        """The server tests every report against every item at add: n d."""
        return float(n), float(n) * self.domain_size

    def _privatize(self, rng: Generator, items: np.ndarray, threads: int) -> dict[str, np.ndarray]:
        pool = self.pool
        if pool is not None:  # a uniform public seed, its bucket, g-ary randomized response at ε∞
            j = np.asarray(rng.integers(0, pool.shape[0], size=items.shape[0], threads=threads), dtype=np.int64)
            seeds = np.ascontiguousarray(pool[j])
            return {"seeds": seeds, "values": self._bucket_rr(rng, seeds, items, False, threads)}
        return self.kernels.secret_seeds(self, rng, items, threads)

    def _fused_seeds(self, rng: Generator, items: np.ndarray, threads: int) -> dict[str, np.ndarray]:
        """Per-user secret seeds and their buckets' randomized response in one C++ pass."""
        seeds, values = _core.ldp.olh_privatize(native(rng), items, self.g, self.gamma.numerator,
                                                self.gamma.denominator, threads)
        return {"seeds": seeds, "values": values}

    def _drawn_seeds(self, rng: Generator, items: np.ndarray, threads: int) -> dict[str, np.ndarray]:
        """Per-user secret seeds, two uniform words each (as the C++ client), then the bucket's
        randomized response by the row's ``rr``."""
        seeds = np.asarray(rng.random_raw((items.shape[0], 2), threads=threads), dtype=np.uint64)
        return {"seeds": seeds, "values": self._bucket_rr(rng, seeds, items, False, threads)}

    # the constant-time row: seeds drawn apart from the item, then the constant-time k-ary
    # randomized response of the bucket, one decision a report (no keyed-row kernel)
    kernel_table = KernelTable(
        variable_time=Kernels(rr=_core.ldp.grr_privatize, memo_rows=_core.ldp.memo_olh, secret_seeds=_fused_seeds),
        constant_time=Kernels(rr=_core.randomized_response_constant_time, secret_seeds=_drawn_seeds))


# --------------------------------------------------------------------------------------- FLH
class FLHAggregator(FrequencyAggregator):
    """State: counts of reports per (pool index, value), k′ x g; the support counts are
    computed from it (O(k′ d)) when an estimate is first asked for, and cached."""

    def _empty_state(self) -> dict[str, np.ndarray]:
        return {"counts": np.zeros((self.protocol.options["k_prime"], self.protocol.g), dtype=np.int64)}

    def _check_state(self, state: dict[str, np.ndarray], n: int) -> None:
        c = state["counts"]
        if (c < 0).any() or int(c.sum(dtype=object)) != n:
            raise ValueError("corrupt aggregator state: flh counts must be non-negative and sum to n")

    def _check_batch(self, reports: Reports) -> None:
        j = reports.data["indices"]
        k = self.protocol.options["k_prime"]
        if not values_within(j, k):
            raise ValueError(f"flh report indices must be in [0, {k}) (k_prime)")
        _check_buckets(reports, self.protocol.g, "flh")

    def _ingest(self, reports: Reports) -> None:
        g = self.protocol.g
        count_into(self._state["counts"], reports.data["indices"] * g + reports.data["values"])

    def support(self) -> np.ndarray:
        """C(x) = Σ_j counts[j, h_j(x)] for every item (C++, O(k′ d)), cached until the next change.

        Returns
        -------
        numpy.ndarray of int64
            Shape (d,), read-only.
        """
        return self._cached("support", lambda: _core.ldp.flh_support(self._state["counts"], self.protocol.pool,
                                                                 self.protocol.domain_size, 1))

    def _estimate(self) -> np.ndarray:
        return self.protocol.estimate_from_support(self.support(), self.n)

    def variance(self, items: Any = None) -> np.ndarray:
        """OLH's variance (Wang et al. 2017, Eq. 3, counts from the clipped estimates) plus the
        pool term Σ_{y≠x} c(y)(c(y) − 1)/K, K = (g − 1) k′, with P = Σ_y c(y)(c(y) − 1)
        estimated from the state without bias: E[ĉ_y²] = c_y² + Var ĉ_y and
        Var ĉ_y = base_y + (P − p_y)/K, so Σ_y (ĉ_y² − ĉ_y − base_y) has expectation
        P (1 + (d − 1)/K), which gives P (docs/ldp_hashing.md, "FLH's pool term"; clamped at 0).
        The clipped estimates' squares, used before, counted every item's noise as collisions:
        at d = 65,536 and k′ = 1000 they overstated the variance about 6-fold."""
        return pooled_variance(self, self.protocol.options["k_prime"], items)


class FLH(_LocalHashing, name="flh", aggregator=FLHAggregator):
    """Fast local hashing. Options: ``g`` (as OLH, but at most 4096 by default), ``k_prime``
    (pool size, default 10,000, or ⌊2^24/g⌋ when that is smaller) and ``pool_key`` (the PUBLIC
    key of the pool, an int in [0, 2^256); default a fresh random key, recorded in ``params()``:
    the pool is words 2j, 2j + 1 of stream 0x464C48 of ``dpnoise.PublicStream(pool_key)``).
    Report: ``indices`` int64 (the user's secret uniform pool index) and ``values`` int64.
    The estimator is OLH's; over a random pool it is unbiased with the extra variance
    Σ_{y≠x} c(y)(c(y) − 1)/((g − 1) k′) (docs/ldp_hashing.md); for one fixed pool that term is
    a bias of the same size.

    Raises
    ------
    ValueError
        Beyond :class:`~dpnoise.ldp.FrequencyOracle`'s checks: k′ outside [1, 2^24], a pool key
        outside [0, 2^256), or k′ g above 2^24.
    """

    report_fields = (ReportField("indices", PER_USER, np.int64, bound=lambda p: p.options["k_prime"]),
                     ReportField("values", PER_USER, np.int64, bound=lambda p: p.g))
    example_options = {"k_prime": 64}
    _default_max_g = DEFAULT_MAX_FLH_G

    def _check_more_options(self, opts: dict[str, Any], g: int) -> dict[str, Any]:
        # default: 10,000, or fewer when g is large (ε above ~7.4), so that k′ g fits the state; for
        # daily collection the public pool of memoised indices is 2^10 by default
        default = DEFAULT_POOL_SIZE if self.gamma1 is not None else DEFAULT_K_PRIME
        k = integer(opts.pop("k_prime", max(1, min(default, MAX_FLH_STATE // g))), "k_prime")
        if not 1 <= k <= MAX_FLH_STATE:
            raise ValueError(f"k_prime must be in [1, 2^24], got {k}")
        key = opts.pop("pool_key", None)
        key = secrets.randbits(256) if key is None else integer(key, "pool_key")
        if not 0 <= key < 1 << 256:
            raise ValueError("pool_key must be in [0, 2^256)")
        return {"k_prime": k, "pool_key": key}

    def __init__(self, epsilon: float, domain_size: int, **options: Any) -> None:
        super().__init__(epsilon, domain_size, **options)
        if self.options["k_prime"] * self.g > MAX_FLH_STATE:
            raise ValueError(f"k_prime * g must be at most 2^24 (the aggregator keeps k_prime x g counters), got "
                             f"{self.options['k_prime']} * {self.g}; use a smaller k_prime or g, or 'olh'")
        self._pool: np.ndarray | None = None

    @property
    def pool(self) -> np.ndarray:
        """The public seeds, uint64 (k′, 2): row j = (a_j, b_j)."""
        if self._pool is None:
            k = self.options["k_prime"]
            words = PublicStream(self.options["pool_key"]).words(POOL_STREAM, 0, 2 * k)
            self._pool = words.reshape(k, 2)
            self._pool.setflags(write=False)
        return self._pool

    def _privatize(self, rng: Generator, items: np.ndarray, threads: int) -> dict[str, np.ndarray]:
        return self.kernels.pool_index(self, rng, items, threads)

    def _fused_index(self, rng: Generator, items: np.ndarray, threads: int) -> dict[str, np.ndarray]:
        """A secret uniform pool index and its bucket's randomized response in one C++ pass."""
        indices, values = _core.ldp.flh_privatize(native(rng), items, self.pool, self.g, self.gamma.numerator,
                                                  self.gamma.denominator, threads)
        return {"indices": indices, "values": values}

    def _drawn_index(self, rng: Generator, items: np.ndarray, threads: int) -> dict[str, np.ndarray]:
        """A uniform pool index (public in the report), then the bucket's randomized response by
        the row's ``rr``."""
        j = np.asarray(rng.integers(0, self.options["k_prime"], size=items.shape[0], threads=threads), dtype=np.int64)
        return {"indices": j, "values": self._bucket_rr(rng, np.ascontiguousarray(self.pool[j]), items, True, threads)}

    # the constant-time row: the index drawn apart from the item, then the constant-time k-ary
    # randomized response of the scrambled bucket, one decision a report
    kernel_table = KernelTable(
        variable_time=Kernels(rr=_core.ldp.grr_privatize, pool_index=_fused_index),
        constant_time=Kernels(rr=_core.randomized_response_constant_time, pool_index=_drawn_index))

    def cost_units(self, n: int) -> tuple[float, float]:
        """Server: one count a report, then k′ d hash evaluations for the supports."""
        return float(n), float(n) + float(self.options["k_prime"]) * self.domain_size

    def state_bytes(self) -> int:
        """k′ g int64 counters."""
        return 8 * self.options["k_prime"] * self.g

    def pool_variance(self, counts: np.ndarray) -> np.ndarray:
        """The pool term of :func:`pool_variance` for this configuration.

        Parameters
        ----------
        counts : numpy.ndarray
            c(y) per item, shape (d,).

        Returns
        -------
        numpy.ndarray of float64
            Shape (d,).
        """
        return pool_variance(counts, self.g, self.options["k_prime"])

    def variance(self, n: int, counts: np.ndarray | None = None) -> np.ndarray:
        """OLH's variance plus the pool term (:meth:`pool_variance`)."""
        var = super().variance(n, counts)
        if counts is not None:
            var = var + self.pool_variance(counts)
        return var
