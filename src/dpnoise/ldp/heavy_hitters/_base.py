"""The heavy-hitters family on the LDP envelope: a configuration (``HeavyHittersConfiguration``) whose reports
(``Reports``; ``HHReports`` is the same class), client and aggregator (``HHAggregator``) are the
envelope's, plus ``top`` and ``above``.

Every method is a list of G groups, each a fast-local-hashing frequency oracle over 64-bit keys
derived from the item (a prefix of it, or a (bucket, bit) pair): see
cpp/include/dpnoise/ldp/heavy_hitters.hpp. A group's estimator and variance are FLH's
(dpnoise.ldp.local_hashing: ``local_hashing_pq``, ``local_hashing_variance``, ``pool_variance``),
scaled from the group's users to all users. A user's client draws its group at random (secret
generator, independent of the item), so each user sends ONE report and spends the whole ε on
it: the protocol is ε-LDP (``privacy_loss()`` is ``PureDP(ε)``).

Aggregator state: for group l, counts[l][j][y] = the number of reports (l, j, y): k′_l x g
int64 per group, independent of the number of users and of 2^item_bits. For a key x of group l
with n_l users, C(x) = Σ_j counts[l][j][h_j(x)],
    ĉ_l(x) = (C(x) − n_l/g)/(p − 1/g)      (Wang et al. 2017, USENIX Security, Eq. 3; OLH's estimator)
and the count among ALL n users is ĉ(x) = ĉ_l(x) · n/n_l.
"""
from __future__ import annotations

import math
import secrets
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, TypedDict

import numpy as np

from ... import _core
from ..._validate import check_threads, integer
from ...bit_generator import PublicStream
from ...generator import Generator
from .. import _wire
from .._aggregator import Aggregator, HeavyHitter, count_into
from .._kernels import Kernels, KernelTable
from .._privacy import supporting_everywhere
from .._protocol import Client, Configuration, native
from .._reports import Reports
from .._schema import PER_USER, ReportField, check_arrays
from ..local_hashing import local_hashing_pq, local_hashing_variance, optimal_buckets
from ._items import MAX_ITEM_BITS, ItemCodec, _count
from ._strings import _pack_rows, _StringCodec, bit_prefix_keys, complete_keys, find_by_bit_prefixes, prefix_hash_key

POOL_STREAM = 0x48485031      # "HHP1": the public pool, seed j = words 4j .. 4j+3
MAX_POOL = 1 << 20
MAX_STATE = 1 << 26           # counters of one aggregator (512 MiB)
DEFAULT_MAX_G = 256
ALPHA = 0.05                  # top/above: simultaneous 95% intervals over every returnable candidate


def null_support_variance(counts: np.ndarray) -> float:
    """Σ_j Var_b counts[j][b]: the variance of the support C(x) = Σ_j counts[j][h_j(x)] of a key x
    that no report holds, given the table, its buckets h_j(x) being independent and uniform on
    [0, g) (a random hash per pool index; docs/heavy_hitters.md, "Selection"). It holds the
    randomized-response noise of all reports AND the collisions with every heavy key (FLH's pool
    term over all keys, not only the estimated ones).

    Parameters
    ----------
    counts : numpy.ndarray of int64
        (k′, g) counts of one group (or of pooled levels).

    Returns
    -------
    float
        The variance, in reports².
    """
    c = counts.astype(np.float64)
    dev = c - c.mean(axis=1, keepdims=True)  # per row, deviations first: no cancellation at large n
    return float(np.einsum("jb,jb->", dev, dev)) / c.shape[1]


def simultaneous_z(candidates: int, alpha: float = ALPHA) -> float:
    """z with P(|N(0,1)| > z) = alpha/candidates: a two-sided interval est ± z·se at this z
    misses with probability alpha/candidates, so by the union bound (Bonferroni; Dunn 1961, JASA 56) the
    intervals of all ``candidates`` items a run could return cover together with probability
    >= 1 − alpha, whichever of them the noisy counts select (docs/heavy_hitters.md, "Selection").

    Parameters
    ----------
    candidates : int
        M >= 1, the items the method can return in one run (:meth:`HeavyHittersConfiguration.max_candidates`).
    alpha : float
        The family-wise miss probability (default 0.05).

    Returns
    -------
    float
        z = Φ^-1(1 − alpha/(2M)).
    """
    return statistics.NormalDist().inv_cdf(1 - alpha / (2 * max(int(candidates), 1)))


@dataclass(frozen=True)
class Group:
    """One frequency oracle of a protocol: users join it with probability weight/W; its key is
    item >> shift (kind 0) or 2 bucket(item) + bit ``shift`` of the item (kind 1)."""

    weight: int
    kind: int
    shift: int
    k_prime: int


def _check_ranges(pr: HeavyHittersConfiguration, data: dict[str, np.ndarray], n: int) -> None:
    """ValueError unless every report's group, pool index and bucket is in range."""
    gr, j, v = (data[k] for k in ("groups", "indices", "values"))
    if n:
        G = len(pr.groups)
        if int(gr.min()) < 0 or int(gr.max()) >= G:
            raise ValueError(f"report groups must be in [0, {G})")
        kp = np.array([g.k_prime for g in pr.groups], dtype=np.int64)
        if int(j.min()) < 0 or bool(np.any(j >= kp[gr])):
            raise ValueError("report pool indices must be below their group's k_prime")
        if int(v.min()) < 0 or int(v.max()) >= pr.g:
            raise ValueError(f"report values must be buckets in [0, {pr.g}) (g)")


class _Pooled(TypedDict):
    """The levels from ``level`` on, summed: their counts and their users (HHAggregator._find)."""

    level: int
    counts: np.ndarray
    users: int


class _EmptyGroup(Exception):
    """A group that the estimates need has no reports yet (too few users)."""


@dataclass(frozen=True)
class HHReports(Reports):
    """A batch of heavy-hitters reports: :class:`dpnoise.ldp.Reports` of the heavy-hitters
    family (the name kept from 0.4.0). Arrays ``groups``, ``indices`` (pool index) and
    ``values`` (bucket after g-ary randomized response), int64, one entry per user."""

    family: str = field(default="heavy_hitters", compare=False)


class HHAggregator(Aggregator):
    """The server side: ``add`` report batches, ``merge`` aggregators of the same configuration,
    ``to_bytes``/``from_bytes``, and ``top(m)`` / ``above(count)``: the heavy hitters the data
    supports, with estimates, standard errors and simultaneous 95% confidence intervals (over
    every candidate the method could return; candidates whose interval contains 0 are dropped,
    docs/heavy_hitters.md, "Selection"); ``estimate(items)`` for given items. State: counts
    per group (k′_l x g int64), independent of the number of users and of the domain; updated
    in place, O(batch) per add.

    Parameters
    ----------
    protocol : HeavyHittersConfiguration
        The configuration (``protocol.aggregator()`` makes one).
    candidates : sequence, optional
        Items the protocol cannot spell out itself (long items hashed by
        ``long_items='hash'``).
    threads : int, optional
        Threads for the support sums of ``top``/``above``.
    """

    protocol: HeavyHittersConfiguration

    def __init__(self, protocol: HeavyHittersConfiguration, candidates: Sequence[Any] | None = None, *,
                 threads: Any = None) -> None:
        self.threads = check_threads(threads)
        self._candidates = protocol.codec.candidate_map(candidates)
        super().__init__(protocol)

    def _empty_state(self) -> dict[str, np.ndarray]:
        pr = self.protocol
        sizes = [gr.k_prime * pr.g for gr in pr.groups]
        self._offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        return self._views(np.zeros(int(self._offsets[-1]), dtype=np.int64))

    def _views(self, flat: np.ndarray) -> dict[str, np.ndarray]:
        """The per-group count arrays as views of one flat buffer (so that an add is one pass)."""
        self._flat = flat
        o, g = self._offsets, self.protocol.g
        return {f"counts_{l:03d}": flat[o[l]:o[l + 1]].reshape(-1, g) for l in range(len(self.protocol.groups))}

    def _check_batch(self, reports: Reports) -> None:
        _check_ranges(self.protocol, reports.data, reports.n)

    def _ingest(self, reports: Reports) -> None:
        d = reports.data
        count_into(self._flat, self._offsets[d["groups"]] + d["indices"] * self.protocol.g + d["values"])

    def _merge_state(self, other: Aggregator) -> None:
        assert isinstance(other, HHAggregator)  # merge() refuses another configuration first
        self._flat += other._flat

    def _check_state(self, state: dict[str, np.ndarray], n: int) -> None:
        what = "corrupt heavy-hitters aggregator state"
        for k, v in state.items():
            if v.size and int(v.min()) < 0:
                raise ValueError(f"{what}: array {k!r} does not match the method (a negative counter)")
            if v.size and int(v.max()) > n:
                raise ValueError(f"{what}: a counter exceeds n")
        # Python ints: a forged state cannot wrap the int64 sum around to n
        if sum(int(v.sum(dtype=object)) for v in state.values()) != n:
            raise ValueError(f"{what}: the counts do not add up to n")

    def _after_load(self) -> None:
        flat = np.concatenate([self._state[f"counts_{l:03d}"].reshape(-1) for l in range(len(self.protocol.groups))])
        self._state = self._views(flat.astype(np.int64, copy=False))

    @classmethod
    def from_bytes(cls, blob: bytes, candidates: Sequence[Any] | None = None) -> HHAggregator:
        """An aggregator serialised by ``to_bytes``: ValueError for anything corrupt, truncated,
        of another format or inconsistent (counts that do not add up to n). ``candidates`` as
        for ``HeavyHittersConfiguration.aggregator()``.

        Parameters
        ----------
        blob : bytes
            Output of ``to_bytes``.
        candidates : sequence, optional
            As for ``HeavyHittersConfiguration.aggregator()``.

        Returns
        -------
        HHAggregator
            The restored aggregator.
        """
        agg = cls._load(blob, candidates=candidates)
        assert isinstance(agg, HHAggregator)  # _load refuses a state of another class
        return agg

    # -- results ------------------------------------------------------------------------------
    def group_sizes(self) -> np.ndarray:
        """n_l, the reports of each group (int64), computed once per state.

        Returns
        -------
        numpy.ndarray of int64
            One count per group, read-only.
        """
        return self._cached("group_sizes", lambda: np.array(
            [int(self._state[f"counts_{l:03d}"].sum()) for l in range(len(self.protocol.groups))], dtype=np.int64))

    def _results(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(items, estimates, variances) of the SUPPORTED found items, largest estimate first, at
        most ``tracked()``: those whose simultaneous interval (:meth:`_z`) lies above 0. The
        candidates are selected by the same noisy counts that estimate them, so a per-item interval
        would not cover (issue #33, item 10); a candidate the data cannot tell from 0 is dropped."""
        def compute() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            empty = (np.zeros(0, np.uint64), np.zeros(0), np.zeros(0))
            if self.n == 0:
                return empty
            try:
                items, est, var = self.protocol._find(self)
            except _EmptyGroup:  # too few users to reach the last stage: nothing can be named yet
                return empty
            supported = np.flatnonzero(est - self._z() * np.sqrt(np.maximum(var, 0)) > 0)
            order = supported[np.argsort(-est[supported], kind="stable")][: self.protocol.tracked()]
            return items[order], est[order], var[order]
        return self._cached("found", compute)

    def _z(self) -> float:
        """The z of the simultaneous 95% intervals over the candidates the method could return."""
        return simultaneous_z(self.protocol.max_candidates())

    def _rows(self, idx: np.ndarray, decode: bool) -> list[HeavyHitter]:
        items, est, var = self._results()
        names = self.protocol.codec.decode(items[idx], self._candidates, decode)
        se = np.sqrt(np.maximum(var[idx], 0))
        z = self._z()
        return [HeavyHitter(nm, float(e), float(s), float(e - z * s), float(e + z * s))
                for nm, e, s in zip(names, est[idx], se)]

    def top(self, m: Any = None, *, decode: bool = True) -> list[HeavyHitter]:
        """The m (default k) supported items with the largest estimated counts, largest first.

        The candidates are chosen by the same noisy counts that estimate them, so each record's
        interval ``(ci_low, ci_high)`` is a SIMULTANEOUS 95% interval, ``estimate ± z·stderr``
        with z = Φ^-1(1 − 0.025/M) over the M = ``protocol.max_candidates()`` items the method
        could have returned (Bonferroni): with probability >= 95% every such interval covers
        its true count, whichever items the noise selected. A candidate whose interval contains 0
        is not returned (the data cannot tell it from an item nobody holds), so ``top(m)`` may
        return FEWER than m items, possibly none (docs/heavy_hitters.md, "Selection").

        Parameters
        ----------
        m : int, optional
            How many (default ``k``), at most ``protocol.tracked()``.
        decode : bool
            Return items as the configuration's type (str/bytes) rather than integers.

        Returns
        -------
        list of HeavyHitter
            (item, estimate, stderr, ci_low, ci_high); fewer than m, possibly none, when fewer
            candidates are supported (ci_low > 0) or too few users have reported for the method to
            reach its last stage.

        Raises
        ------
        ValueError
            If m is outside [1, tracked()].
        """
        m = self.protocol.k if m is None else integer(m, "m")
        if not 1 <= m <= self.protocol.tracked():
            raise ValueError(f"m must be in [1, {self.protocol.tracked()}] (the items this configuration tracks; "
                             f"raise k or keep), got {m}")
        items = self._results()[0]
        return self._rows(np.arange(min(m, items.size)), decode)

    def above(self, count: Any, *, decode: bool = True) -> list[HeavyHitter]:
        """The supported tracked items whose estimated count is at least ``count``, largest
        first; intervals and support as for :meth:`top` (simultaneous, no interval containing 0).

        Parameters
        ----------
        count : float
            The threshold, in users.
        decode : bool, default True
            As for :meth:`top`.

        Returns
        -------
        list of HeavyHitter
            Possibly empty.

        Raises
        ------
        TypeError
            For a count that is not a number.
        ValueError
            For a NaN or infinite count.
        """
        if isinstance(count, (bool, np.bool_)) or not isinstance(count, (int, float, np.integer, np.floating)):
            raise TypeError(f"count must be a number, got {type(count).__name__}")
        c = float(count)
        if not math.isfinite(c):
            raise ValueError(f"count must be finite, got {count!r}")
        est = self._results()[1]
        return self._rows(np.flatnonzero(est >= c), decode)

    def _item_estimates(self, items: Any) -> tuple[np.ndarray, np.ndarray]:
        if items is None:
            raise TypeError("heavy hitters do not enumerate their domain: pass the items to estimate")
        pr = self.protocol
        keys = pr.codec.encode(items)
        if self.n == 0:
            return np.zeros(keys.shape[0]), np.zeros(keys.shape[0])
        if pr.strings and all(gr.kind == 0 for gr in pr.groups):  # PEM/TreeHist over strings: as top() does
            return self.pooled_estimates(keys, [gr.shift for gr in pr.groups], pr.groups[-1].k_prime)
        l = pr._item_group()
        try:
            return self.group_estimates(l, pr._group_keys(l, keys))
        except _EmptyGroup:
            raise ValueError("too few reports: the group that estimates whole items has none yet") from None

    def level_counts(self, l: int) -> np.ndarray:
        """Group l's counts, (k′_l, g) int64, as the state holds them (a view: do not modify).

        Parameters
        ----------
        l : int
            The group.

        Returns
        -------
        numpy.ndarray of int64
        """
        return self._state[f"counts_{l:03d}"]

    def null_stderr(self, counts: np.ndarray, users: int) -> float:
        """The standard error, among all n users, of a key nobody holds, measured from
        ``counts`` reported by ``users`` >= 1 users: LDP noise plus the collisions with every
        held key (``null_support_variance``), scaled by n/users.

        Parameters
        ----------
        counts : numpy.ndarray of int64
            (k′, g) counts.
        users : int
            The reports they hold.

        Returns
        -------
        float
        """
        return (self.n / users) * math.sqrt(null_support_variance(counts)) / self.protocol._pq()[2]

    def group_estimates(self, l: int, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Unbiased counts of ``keys`` (group l) among ALL users, and their variances.

        The group is an FLH frequency oracle over its n_l users: ĉ_l = (C − n_l/g)/(p − q′),
        q′ = 1/g (Wang et al. 2017, Eq. 3), scaled to all users: ĉ = ĉ_l n/n_l. Variance, with
        c_l = clip(ĉ_l, 0, n_l) and c = clip(ĉ, 0, n) standing for the true counts::

          (n/n_l)² [ local_hashing_variance(n_l, c_l)                       (Wang et al. 2017, Eq. 3)
                     + Σ_{y≠x} c_y(c_y − 1)/((g − 1) k′)                    (FLH pool term, docs/ldp_hashing.md)
                     + n_l (c/n)(1 − c/n)(n − n_l)/(n − 1) ]                (sampling the group: hypergeometric)

        The pool sum runs over EVERY key the group's users hold, measured from the counts
        (``null_support_variance``), not only over the keys estimated here.

        Parameters
        ----------
        l : int
            The group.
        keys : numpy.ndarray of uint64
            The group's keys to estimate.

        Returns
        -------
        tuple of (numpy.ndarray, numpy.ndarray)
            float64 estimates and variances, one per key.

        Raises
        ------
        _EmptyGroup
            When group l has no reports yet.
        """
        pr = self.protocol
        n_l = int(self.group_sizes()[l])
        if n_l == 0:
            raise _EmptyGroup(l)
        return self.count_estimates(self.level_counts(l), n_l, keys, pr.groups[l].k_prime)

    def count_estimates(self, counts: np.ndarray, users: int, keys: np.ndarray,
                        k_prime: int) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`group_estimates` for FLH counts (k′ x g) reported by ``users`` >= 1 users (one
        group, or the sum of the levels where string keys are complete).

        Parameters
        ----------
        counts : numpy.ndarray of int64
            (k_prime, g) counts.
        users : int
            The reports those counts hold.
        keys : numpy.ndarray of uint64
            The keys to estimate.
        k_prime : int
            The pool indices the counts use.

        Returns
        -------
        tuple of (numpy.ndarray, numpy.ndarray)
            float64 estimates among all n users and their variances.
        """
        pr = self.protocol
        n = self.n
        _p, q, d = pr._pq()
        support = _core.ldp.hh_support(counts, pr.pool, np.ascontiguousarray(keys, dtype=np.uint64),
                                       self.threads).astype(np.float64)
        est_l = (support - users * q) / d
        scale = n / users
        c_l = np.clip(est_l, 0, users)
        c = np.clip(est_l * scale, 0, n)
        sampling = users * (c / n) * (1 - c / n) * (n - users) / max(n - 1, 1)  # hypergeometric
        # the pool term of ALL keys, measured: E[null_support_variance] = users q′(1 − q′)
        # + d² Σ_y c_y(c_y − 1)/((g − 1) k′) (docs/heavy_hitters.md, "Selection"); x's own share
        # removed, the rest is the collision variance with every other key, heavy ones included
        pool_all = (null_support_variance(counts) - users * q * (1 - q)) / d ** 2
        pool = np.maximum(pool_all - c_l * np.maximum(c_l - 1, 0) / ((pr.g - 1) * k_prime), 0)
        var_l = local_hashing_variance(pr.gamma, pr.g, users, c_l) + pool + sampling
        return est_l * scale, var_l * scale ** 2

    def pooled_estimates(self, packed: Any, level_bits: Sequence[int],
                         k_prime: int) -> tuple[np.ndarray, np.ndarray]:
        """Estimates of whole strings from prefix levels of ``level_bits`` bits: a string of λ
        bytes is complete, with one key, at every level of b_l > 8λ bits, so it is estimated
        (:meth:`count_estimates`) from the counts of those levels added together.

        Parameters
        ----------
        packed : _PackedStrings
            The strings.
        level_bits : sequence of int
            b_l per group, increasing, the last above 8 max_length.
        k_prime : int
            The levels' shared k′.

        Returns
        -------
        tuple of (numpy.ndarray, numpy.ndarray)
            Estimates among all users and their variances.

        Raises
        ------
        ValueError
            When the levels that estimate an item have no reports yet.
        """
        pr = self.protocol
        est, var = np.zeros(packed.shape[0]), np.zeros(packed.shape[0])
        if not packed.shape[0]:
            return est, var
        keys = complete_keys(packed, pr.hash_key, self.threads)
        first = np.searchsorted(np.asarray(level_bits), 8 * packed.lengths, side="right")  # first b_l > 8λ
        sizes = self.group_sizes()
        pooled, users = np.zeros_like(self.level_counts(0)), 0
        for lvl in range(len(level_bits) - 1, int(first.min()) - 1, -1):
            pooled += self.level_counts(lvl)
            users += int(sizes[lvl])
            sel = np.flatnonzero(first == lvl)
            if sel.size:
                if users == 0:
                    raise ValueError("too few reports: the levels that estimate these items have none yet")
                est[sel], var[sel] = self.count_estimates(pooled, users, keys[sel], k_prime)
        return est, var

    def find_string_prefixes(self, select: Callable[[np.ndarray, np.ndarray], np.ndarray]
                             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """PEM/TreeHist over strings: prefix extension over the bits of x⊥, group l reporting
        prefixes of ``groups[l].shift`` bits (_strings.find_by_bit_prefixes). A complete
        string found at level l is estimated from the counts of the levels >= l pooled (its key
        is the same in all of them).

        Parameters
        ----------
        select : callable
            ``select(estimates, empty_key_stderrs)``: the indices of a level's candidates to keep,
            best first.

        Returns
        -------
        tuple of (numpy.ndarray, numpy.ndarray, numpy.ndarray)
            The found items (uint64 keys), their estimates and variances.
        """
        pr = self.protocol
        L = len(pr.groups)
        sizes = self.group_sizes()
        level = [self.level_counts(l) for l in range(L)]
        pooled: _Pooled = {"level": 0, "counts": sum(level[1:], level[0].copy()), "users": self.n}

        def estimate(lvl: int, rows: np.ndarray, bits: int, complete: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            while pooled["level"] < lvl:  # levels are visited in order: drop the ones passed
                pooled["counts"] -= level[pooled["level"]]
                pooled["users"] -= int(sizes[pooled["level"]])
                pooled["level"] += 1
            counts, users = (pooled["counts"], pooled["users"]) if complete else (level[lvl], int(sizes[lvl]))
            m = rows.shape[0]
            if m == 0 or users == 0:
                return np.zeros(m), np.zeros(m), np.full(m, np.inf)
            keys = bit_prefix_keys(_pack_rows(rows), bits, pr.hash_key, self.threads)
            est, var = self.count_estimates(counts, users, keys, pr.groups[lvl].k_prime)
            return est, var, np.full(m, self.null_stderr(counts, users))  # an empty key's

        return find_by_bit_prefixes([gr.shift for gr in pr.groups], pr.codec.max_length, estimate, select)

    def estimate(self, items: Any = None) -> np.ndarray:
        """Unbiased counts of the given items among all users (from the group that reports
        whole items), whether or not they are heavy hitters."""
        return self._item_estimates(items)[0]

    def variance(self, items: Any = None) -> np.ndarray:
        """The variances of :meth:`estimate` (see :meth:`group_estimates`)."""
        return self._item_estimates(items)[1]


class HeavyHittersConfiguration(Configuration, family="heavy_hitters", aggregator=HHAggregator, client=Client):
    """Base class of one heavy-hitters configuration. Subclasses (declared with
    ``name=...``) validate their options in ``_setup`` (which sets ``self.groups``) and
    implement ``_find``.

    Parameters
    ----------
    epsilon : float
        ε per user, in (0, 100].
    item_bits : int, optional
        Items are ints of this many bits (default 32 for ints).
    item_type : {"int", "str", "bytes"}, optional
        The items' type (strings and bytes up to ``max_length`` bytes).
    max_length : int, optional
        The longest string or bytes item, in [1, 255]. Up to 8 bytes, items are read as
        8·max_length-bit integers (0.4.0's form: no NUL byte). Above 8 bytes (``item_type``
        "str" by default, or "bytes"), items are byte strings with any bytes (UTF-8, embedded and trailing NUL),
        found exactly with no dictionary (docs/heavy_hitters.md, "Long strings"); a longer item
        is refused with a ValueError naming ``items`` and ``max_length``.
    long_items : {"refuse", "hash"}, default "refuse"
        What a longer item does: refused, or hashed (then name candidates to the aggregator;
        max_length <= 8 only).
    k : int, default 10
        Heavy hitters wanted, in [1, 2^16].
    g : int, optional
        Hash buckets, in [2, 2^16] (default round(e^ε + 1), at most 256).
    pool_key : int, optional
        The PUBLIC key of the hash pool, in [0, 2^256) (default: fresh and random).
    constant_time : bool, default False
        Integer items only (``item_type="int"``): the client's keep/flip by the constant-time
        randomized-response kernel; loss ApproxDP(ε, (1 + e^ε)·2^-64). Refused for str/bytes
        items, whose encoding takes time that depends on their length.
    **options
        The method's own options (docs/heavy_hitters.md).

    Raises
    ------
    TypeError
        For an option the method does not take.
    ValueError
        For an argument out of range, a state above 2^26 counters, or ``constant_time=True``
        where the client's time would depend on the item (str/bytes items, string_pem) or ε
        leaves no (ε, δ) guarantee with it.
    """

    _state_magic = _wire.HEAVY_HITTERS_STATE
    _reports_magic = _wire.HEAVY_HITTERS_REPORTS
    _header_key = "method"
    _label = "heavy-hitters "
    _noun = "method"
    report_fields = (ReportField("groups", PER_USER, np.int64, bound=lambda p: len(p.groups)),
                     ReportField("indices", PER_USER, np.int64),  # below its group's k′: _extra_row_mask
                     ReportField("values", PER_USER, np.int64, bound=lambda p: p.g))
    example_options: ClassVar[dict[str, Any]] = {"k_prime": 256}

    def __init__(self, epsilon: float, item_bits: Any = None, *, item_type: str | None = None,
                 max_length: Any = None, long_items: str = "refuse", k: Any = 10, g: Any = None,
                 pool_key: Any = None, **options: Any) -> None:
        self._init_epsilon(epsilon)
        self.codec: Any = _codec(item_type, item_bits, max_length, long_items)
        self.k = _count(k, "k", 1, 1 << 16)
        # g = round(e^ε + 1) (Wang et al. 2017, Eq. 11), at most 256 by default so that the state
        # (k′ x g counters per group) stays bounded at large ε; the variance this costs is far below
        # the group-sampling term there (docs/heavy_hitters.md)
        self.g = min(optimal_buckets(self.gamma), DEFAULT_MAX_G) if g is None else _count(g, "g", 2, 1 << 16)
        # the public pool's key: a fresh random one by default, recorded in params() (a fixed pool
        # would turn the collision terms into a fixed bias)
        key = secrets.randbits(256) if pool_key is None else integer(pool_key, "pool_key")
        if not 0 <= key < 1 << 256:
            raise ValueError("pool_key must be in [0, 2^256)")
        self.pool_key = key
        self.groups: list[Group] = []
        # the variants (the envelope's): constant-time kernels, then the row's own checks
        # (no heavy-hitters method declares daily collection: instantaneous_epsilon is refused naming who has it)
        self._init_variants(options.pop("constant_time", False), options.pop("instantaneous_epsilon", None),
                            f"heavy-hitters method {self.name!r}")
        self.kernels.check(self)
        if self.strings:
            self.hash_key = prefix_hash_key(self.pool_key)
        self.options: dict[str, Any] = self._setup(dict(options))
        if options.keys() - self.options.keys():
            raise TypeError(f"method {self.name!r} takes no option {sorted(options.keys() - self.options.keys())[0]!r}")
        self.privacy_loss()  # ValueError now (not at a client) when ε leaves no (ε, δ) guarantee
        cells = sum(gr.k_prime for gr in self.groups) * self.g
        if cells > MAX_STATE:
            raise ValueError(f"the aggregator would keep {cells} counters (more than 2^26); use a smaller k_prime")
        self._pool: np.ndarray | None = None

    # -- to override ---------------------------------------------------------------------------
    def _setup(self, options: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def _aux(self, items: np.ndarray) -> np.ndarray | None:
        """Public per-item values the groups of kind 1 need (Bitstogram's bucket), else None."""
        return None

    def _find(self, agg: HHAggregator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(items uint64, estimates, variances) of the tracked items, by decreasing estimate."""
        raise NotImplementedError

    def _item_group(self) -> int:
        """The group whose key is the whole item (default: the last)."""
        return len(self.groups) - 1

    def _group_keys(self, l: int, items: Any) -> np.ndarray:
        """The keys of group l for ``items`` (uint64; for strings, group l reports whole items)."""
        if self.strings:
            return complete_keys(items, self.hash_key, 1)
        gr = self.groups[l]
        x = np.ascontiguousarray(items, dtype=np.uint64)
        return x >> np.uint64(gr.shift)

    def max_candidates(self) -> int:
        """M: the most items one run of ``top``/``above`` can estimate at its last stage (its
        final candidates), whatever the data; the simultaneous intervals are over these M.

        Returns
        -------
        int
            At least 1.

        Raises
        ------
        NotImplementedError
            On the base class (each method states its own bound).
        """
        raise NotImplementedError

    def tracked(self) -> int:
        """How many items the protocol tracks to its last stage (the most ``top`` can return).

        Returns
        -------
        int
            At least ``k``.
        """
        return self.options.get("keep", 2 * self.k)

    # -- shared ---------------------------------------------------------------------------------
    @classmethod
    def example(cls, epsilon: float = 4.0, item_bits: int = 16) -> HeavyHittersConfiguration:
        """A small instance (16-bit items, k = 4 and the class's ``example_options``).

        Parameters
        ----------
        epsilon : float, default 4.0
            ε per user.
        item_bits : int, default 16
            Item width.

        Returns
        -------
        HeavyHittersConfiguration
            An instance of ``cls``.
        """
        return cls(epsilon, item_bits, k=4, **cls.example_options)

    def item_domain(self) -> tuple[str, int | None]:
        """``("int", 2^item_bits)`` for integer items; ``("str" | "bytes", max_length)`` for
        strings (None when longer items are hashed, ``long_items='hash'``). See
        Configuration.item_domain."""
        c = self.codec
        if c.item_type == "int":
            return ("int", 1 << int(c.item_bits))
        return (str(c.item_type), None if c.long_items == "hash" else int(c.length))

    def example_items(self, n: int, seed: int = 0) -> np.ndarray:
        """``n`` items: half of them four heavy items, the rest uniform (NumPy, seeded: test data only)."""
        gen = np.random.default_rng(seed)
        top = 1 << min(self.item_bits, 62)
        heavy = gen.integers(0, top, size=4, dtype=np.int64)
        x = gen.integers(0, top, size=n, dtype=np.int64)
        pick = gen.random(n) < 0.5
        x[pick] = heavy[gen.integers(0, 4, size=int(pick.sum()))]
        return x

    @property
    def item_bits(self) -> int:
        """The bits of an item (8 × max_length for strings)."""
        return self.codec.item_bits

    @property
    def strings(self) -> bool:
        """Items are byte strings of more than 8 bytes (not integers of item_bits)."""
        return isinstance(self.codec, _StringCodec)

    @property
    def key_bits(self) -> int:
        """B: the bits the method spells out: item_bits for integers; for strings 8 (max_length
        + 1), the bytes of x⊥ (prefix methods) or the padded bytes and the length byte (Bitstogram)."""
        return 8 * (self.codec.max_length + 1) if self.strings else self.item_bits

    @property
    def pool(self) -> np.ndarray:
        """The public hash seeds, uint64 (size, 4): row j = (a_lo, a_hi, b_lo, b_hi)."""
        if self._pool is None:
            size = max(gr.k_prime for gr in self.groups)
            self._pool = PublicStream(self.pool_key).words(POOL_STREAM, 0, 4 * size).reshape(size, 4)
            self._pool.setflags(write=False)
        return self._pool

    def params(self) -> dict[str, Any]:
        """Everything that must agree between clients, aggregators and serialised states."""
        return {"method": self.name, "epsilon": self.epsilon, "gamma": self.gamma, **self.codec.params(),
                "k": self.k, "g": self.g, "pool_key": self.pool_key, **self.options, **self._variant_params()}

    @classmethod
    def _construct(cls, params: dict[str, Any]) -> HeavyHittersConfiguration:
        params.pop("method")
        params.pop("gamma")
        eps = params.pop("epsilon")
        return cls(eps, **params)

    def aggregator(self, candidates: Sequence[Any] | None = None, *, threads: Any = None) -> HHAggregator:
        """An empty aggregator; ``candidates`` names items the protocol cannot spell out itself
        (long items hashed by ``long_items='hash'``); ``threads`` for the support sums of top/above.

        Parameters
        ----------
        candidates : sequence, optional
            Items to look up by their hash.
        threads : int, optional
            Worker threads.

        Returns
        -------
        HHAggregator
            With no reports.
        """
        return HHAggregator(self, candidates, threads=threads)

    def _reports(self, n: int, data: dict[str, np.ndarray]) -> Reports:
        return HHReports(self.name, self.fingerprint(), n, data)

    def _encode(self, items: Any) -> np.ndarray:
        return self.codec.encode(items)

    def _privatize(self, rng: Generator, x: Any, threads: int) -> dict[str, np.ndarray]:
        return self.kernels.client(self, rng, x, threads)

    def _fused_client(self, rng: Generator, x: Any, threads: int) -> dict[str, np.ndarray]:
        """The group, pool index, key, bucket and randomized response of every report in one C++
        pass (string items: string_pem.hpp's kernel)."""
        groups = [(sum(gr.weight for gr in self.groups[:i + 1]), gr.kind, gr.shift, gr.k_prime)
                  for i, gr in enumerate(self.groups)]
        if self.strings:  # group kinds: 0 = a prefix of `shift` bits of x⊥, 1 = padded bit `shift` (string_pem.hpp)
            gr_, j, v = _core.ldp.string_hh_privatize(native(rng), x.data, x.offsets, self._aux(x), groups, self.pool,
                                                      self.hash_key, self.codec.max_length, self.g,
                                                      self.gamma.numerator, self.gamma.denominator, threads)
            return {"groups": gr_, "indices": j, "values": v}
        gr_, j, v = _core.ldp.hh_privatize(native(rng), x, self._aux(x), groups, self.pool, self.g, self.gamma.numerator,
                                       self.gamma.denominator, threads)
        return {"groups": gr_, "indices": j, "values": v}

    def _branch_free_client(self, rng: Generator, x: np.ndarray, threads: int) -> dict[str, np.ndarray]:
        """hh_privatize's report law with a constant-time keep/flip (the row's ``rr``): the group l (probability
        weight_l / W) and the pool index j < k′_l drawn uniformly first (public in the report,
        independent of the item), then every user's key computed by both kinds' formulas
        (shifts, masks: no branch on the item), the bucket h_j(key) (a fixed sequence of
        multiplies, shifts and xors, hash_family64.hpp) and exact g-ary randomized response by
        the constant-time kernel (docs/security.md)."""
        n = x.shape[0]
        cum = np.cumsum([gr.weight for gr in self.groups])
        groups = np.searchsorted(cum, np.asarray(rng.integers(0, int(cum[-1]), size=n, threads=threads)), side="right")
        kp = np.array([gr.k_prime for gr in self.groups], dtype=np.int64)[groups]
        j = np.zeros(n, dtype=np.int64)
        for k in np.unique(kp):  # a uniform index below each group's k′ (groups sharing one k′ together)
            sel = kp == k
            j[sel] = rng.integers(0, int(k), size=int(sel.sum()), threads=threads)
        shift = np.array([gr.shift for gr in self.groups], dtype=np.uint64)[groups]
        kind = np.array([gr.kind for gr in self.groups], dtype=np.uint64)[groups]
        aux = self._aux(x)
        aux = np.zeros(n, dtype=np.uint64) if aux is None else np.asarray(aux, dtype=np.uint64)
        bit_key = (aux << np.uint64(1)) | ((x >> shift) & np.uint64(1))
        keys = (x >> shift) * (np.uint64(1) - kind) + bit_key * kind  # HeavyHitters::key, both kinds computed
        buckets = _core.ldp.hh_hash(self.pool, j, keys, self.g)
        values = self.kernels.rr(native(rng), buckets, self.g, self.gamma.numerator, self.gamma.denominator, threads)
        return {"groups": groups.astype(np.int64), "indices": j, "values": np.asarray(values, dtype=np.int64)}

    def _integer_items(self) -> None:
        """The constant-time row's check: integer items only (encoding and hashing a string take
        time that depends on its length)."""
        if self.codec.item_type != "int":
            raise ValueError(f"constant_time=True is not supported by heavy-hitters method {self.name!r} over "
                             f"{self.codec.item_type} items (encoding and hashing a string take time that depends on "
                             f"its length); it is supported over integer items (item_type='int') by "
                             f"{supporting_everywhere(self, 'constant_time')}")

    def _any_items(self) -> None:
        """The exact row takes every item type."""

    # the constant-time row: integer keys (a shift and a multiply-based hash) and the keep/flip by
    # the constant-time randomized-response kernel, one decision a report
    kernel_table = KernelTable(
        variable_time=Kernels(client=_fused_client, check=_any_items),
        constant_time=Kernels(client=_branch_free_client, rr=_core.randomized_response_constant_time,
                              check=_integer_items))

    def _extra_row_mask(self, data: dict[str, np.ndarray], n: int) -> np.ndarray:
        gr = np.clip(data["groups"], 0, len(self.groups) - 1)
        kp = np.array([g.k_prime for g in self.groups], dtype=np.int64)
        j = data["indices"]
        return (j >= 0) & (j < kp[gr])

    def _check_loaded_reports(self, arrays: dict[str, np.ndarray], n: int, what: str) -> None:
        try:
            check_arrays(self.report_fields, self, arrays, n, "heavy-hitters")
            _check_ranges(self, arrays, n)
        except ValueError as exc:
            raise ValueError(f"corrupt {what}: {exc}") from None

    def _pq(self) -> tuple[float, float, float]:
        """FLH's (p, q′, p − q′) over this configuration's g buckets (local_hashing_pq)."""
        return local_hashing_pq(self.gamma, self.g)

    def __repr__(self) -> str:
        extra = "".join(f", {k}={v!r}" for k, v in self.options.items()) + self._variant_repr()
        return (f"HeavyHitters({self.name!r}, epsilon={self.epsilon}, item_bits={self.item_bits}, "
                f"item_type={self.codec.item_type!r}, k={self.k}{extra})")


#: the family base's 0.7 name, a plain alias while dpnoise.distributed.spark imports it (to be
#: deprecation-warned like ``HHClient`` once it no longer does)
HHProtocol = HeavyHittersConfiguration


def _codec(item_type: Any, item_bits: Any, max_length: Any, long_items: Any) -> Any:
    """ItemCodec (integers, and str/bytes of at most 8 bytes: 0.4.0's encoding, unchanged), or
    _StringCodec for str/bytes of max_length > 8 bytes (item_type "str" by default, or "bytes";
    issue 22: every method takes strings up to max_length = 64 bytes)."""
    if item_type in (None, "str", "bytes") and max_length is not None and \
            integer(max_length, "max_length") > MAX_ITEM_BITS // 8:
        if item_bits is not None:
            raise TypeError("item_bits applies to integer items and max_length <= 8: longer str/bytes items are "
                            "bounded by max_length")
        if long_items != "refuse":
            raise ValueError("long_items='hash' applies to max_length <= 8 only: longer items are refused")
        return _StringCodec("str" if item_type is None else item_type, None, max_length)
    return ItemCodec(item_type, item_bits, max_length, long_items)


def methods() -> list[str]:
    """The names of the heavy-hitters methods.

    Returns
    -------
    list of str
        Sorted registered names.
    """
    return sorted(HeavyHittersConfiguration.registered())


def HeavyHitters(method: str, epsilon: float, item_bits: Any = None, **options: Any) -> HeavyHittersConfiguration:
    """A local-DP heavy-hitters protocol.

    Parameters
    ----------
    method : str
        One of :func:`methods` (``"pem"``, ``"treehist"``, ``"bitstogram"``).
    epsilon : float
        ε per user.
    item_bits : int, optional
        Items are ints of this many bits (default 32), or strings (``item_type``, ``max_length``).
    **options
        ``k`` (heavy hitters wanted), ``g``, ``pool_key`` and the method's options
        (docs/heavy_hitters.md).

    Returns
    -------
    HeavyHittersConfiguration

    Raises
    ------
    ValueError
        For an unknown method (and as the method's constructor).

    Examples
    --------
    >>> hh = dpnoise.ldp.HeavyHitters("pem", epsilon=4.0, item_bits=32)
    >>> items = np.repeat(np.array([7, 42, 1000, 123456]), 5000)  # four heavy items
    >>> agg = hh.aggregator().add(hh.client().privatize(items))
    >>> sorted(h.item for h in agg.top(4))
    [7, 42, 1000, 123456]
    """
    registry = HeavyHittersConfiguration.registered()
    if not isinstance(method, str) or method not in registry:
        raise ValueError(f"method must be one of {methods()}, got {method!r}")
    cls = registry[method]
    assert issubclass(cls, HeavyHittersConfiguration)  # the family's registry holds its methods only
    return cls(epsilon, item_bits, **options)
