"""The shape the heavy-hitters protocols share: a configuration (``HHProtocol``), a client
(``HHClient``), report batches (``HHReports``) and an aggregator (``HHAggregator``) that keeps
sufficient statistics only, merges, serialises and finds the heavy hitters (``top``, ``above``).

Every protocol is a list of G groups, each an FLH-style frequency oracle over 64-bit keys
derived from the item (a prefix of it, or a (bucket, bit) pair): see
cpp/include/dpnoise/ldp/heavy_hitters.hpp. A user's client draws its group at random (secret
generator, independent of the item), so each user sends ONE report and spends the whole ε on
it: the protocol is ε-LDP (``privacy_loss()`` is ``PureDP(ε)``).

Aggregator state: for group l, counts[l][j][y] = the number of reports (l, j, y): k′_l x g
int64 per group, independent of the number of users and of 2^item_bits. Estimates (docs/heavy_hitters.md):
for a key x of group l with n_l users, C(x) = Σ_j counts[l][j][h_j(x)],
    ĉ_l(x) = (C(x) − n_l/g)/(p − 1/g)      (Wang et al. 2017, USENIX Security, Eq. 3; OLH's estimator)
and the count among ALL n users is ĉ(x) = ĉ_l(x) · n/n_l.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar, Dict, List, NamedTuple, Optional, Sequence, Tuple, Type

import numpy as np

from ... import _core
from ..._validate import check_threads, integer
from ...accounting.losses import PrivacyLoss, PureDP
from ...bit_generator import PublicStream
from ...generator import Generator
from .._protocol import (
    MAX_REPORTS, _frame, _from_jsonable, _jsonable, _unframe, check_epsilon, client_rng, exact_gamma,
)
from ..local_hashing import optimal_buckets
from ._items import ItemCodec

_REPORTS_MAGIC = b"DPNOISE-HHR\x00"
_STATE_MAGIC = b"DPNOISE-HHA\x00"
POOL_STREAM = 0x48485031      # "HHP1": the public pool, seed j = words 4j .. 4j+3
MAX_POOL = 1 << 20
MAX_STATE = 1 << 26           # counters of one aggregator (512 MiB)
DEFAULT_MAX_G = 256
Z95 = 1.959963984540054       # the 0.975 quantile of the standard normal
_REGISTRY: Dict[str, Type["HHProtocol"]] = {}


def register(cls: Type["HHProtocol"]) -> Type["HHProtocol"]:
    _REGISTRY[cls.name] = cls
    return cls


def methods() -> List[str]:
    """The names of the heavy-hitters methods."""
    return sorted(_REGISTRY)


class HeavyHitter(NamedTuple):
    """One found item: its unbiased count estimate over all users, the standard error and a
    normal 95% confidence interval estimate ± 1.96 stderr."""

    item: Any
    estimate: float
    stderr: float
    ci_low: float
    ci_high: float


@dataclass(frozen=True)
class Group:
    """One frequency oracle of a protocol: users join it with probability weight/W; its key is
    item >> shift (kind 0) or 2 bucket(item) + bit ``shift`` of the item (kind 1)."""

    weight: int
    kind: int
    shift: int
    k_prime: int


def _count(value: Any, name: str, lo: int, hi: int) -> int:
    v = integer(value, name)
    if not lo <= v <= hi:
        raise ValueError(f"{name} must be in [{lo}, {hi}], got {v}")
    return v


class HHProtocol:
    """Base class of one heavy-hitters configuration. Subclasses set ``name``, validate their
    options in ``_setup`` (which sets ``self.groups``) and implement ``_find``."""

    name: ClassVar[str] = ""

    def __init__(self, epsilon: float, item_bits: Any = None, *, item_type: Optional[str] = None,
                 max_length: Any = None, long_items: str = "refuse", k: Any = 10, g: Any = None,
                 pool_key: Any = 0, **options: Any) -> None:
        self.epsilon = check_epsilon(epsilon)
        self.gamma = exact_gamma(self.epsilon)
        self.codec = ItemCodec(item_type, item_bits, max_length, long_items)
        self.k = _count(k, "k", 1, 1 << 16)
        # g = round(e^ε + 1) (Wang et al. 2017, Eq. 11), at most 256 by default so that the state
        # (k′ x g counters per group) stays bounded at large ε; the variance this costs is far below
        # the group-sampling term there (docs/heavy_hitters.md)
        self.g = min(optimal_buckets(self.gamma), DEFAULT_MAX_G) if g is None else _count(g, "g", 2, 1 << 16)
        key = integer(pool_key, "pool_key")
        if not 0 <= key < 1 << 256:
            raise ValueError("pool_key must be in [0, 2^256)")
        self.pool_key = key
        self.groups: List[Group] = []
        self.options: Dict[str, Any] = self._setup(dict(options))
        if options.keys() - self.options.keys():
            raise TypeError(f"method {self.name!r} takes no option {sorted(options.keys() - self.options.keys())[0]!r}")
        cells = sum(gr.k_prime for gr in self.groups) * self.g
        if cells > MAX_STATE:
            raise ValueError(f"the aggregator would keep {cells} counters (more than 2^26); use a smaller k_prime")
        self._pool: Optional[np.ndarray] = None

    # -- to override ---------------------------------------------------------------------------
    def _setup(self, options: Dict[str, Any]) -> Dict[str, Any]:
        raise NotImplementedError

    def _aux(self, items: np.ndarray) -> Optional[np.ndarray]:
        """Public per-item values the groups of kind 1 need (Bitstogram's bucket), else None."""
        return None

    def _find(self, agg: "HHAggregator") -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(items uint64, estimates, variances) of the tracked items, by decreasing estimate."""
        raise NotImplementedError

    def tracked(self) -> int:
        """How many items the protocol tracks to its last stage (the most ``top`` can return)."""
        return self.options.get("keep", 2 * self.k)

    # -- shared ---------------------------------------------------------------------------------
    @property
    def item_bits(self) -> int:
        return self.codec.item_bits

    @property
    def pool(self) -> np.ndarray:
        """The public hash seeds, uint64 (size, 4): row j = (a_lo, a_hi, b_lo, b_hi)."""
        if self._pool is None:
            size = max(gr.k_prime for gr in self.groups)
            self._pool = PublicStream(self.pool_key).words(POOL_STREAM, 0, 4 * size).reshape(size, 4)
            self._pool.setflags(write=False)
        return self._pool

    def params(self) -> Dict[str, Any]:
        """Everything that must agree between clients, aggregators and serialised states."""
        return {"method": self.name, "epsilon": self.epsilon, "gamma": self.gamma, **self.codec.params(),
                "k": self.k, "g": self.g, "pool_key": self.pool_key, **self.options}

    def fingerprint(self) -> Tuple[Tuple[str, Any], ...]:
        return tuple(sorted(self.params().items()))

    def privacy_loss(self) -> PrivacyLoss:
        """Each user sends one report, ε-LDP: PureDP(ε) per user (its group is chosen
        independently of the item, so it reveals nothing)."""
        return PureDP(self.epsilon)

    def client(self, rng: Optional[Generator] = None, *, allow_insecure: bool = False) -> "HHClient":
        return HHClient(self, rng, allow_insecure=allow_insecure)

    def aggregator(self, candidates: Optional[Sequence[Any]] = None, *, threads: Any = None) -> "HHAggregator":
        """An empty aggregator; ``candidates`` names items the protocol cannot spell out itself
        (long items hashed by ``long_items='hash'``); ``threads`` for the support sums of top/above."""
        return HHAggregator(self, candidates, threads=threads)

    def _pq(self) -> Tuple[float, float, float]:
        """p = e^γ/(e^γ + g − 1), q′ = 1/g and p − q′ = (g − 1)(e^γ − 1)/(g (e^γ + g − 1)), the
        difference through expm1 so that a tiny ε does not cancel to 0 (Wang et al. 2017, §4.4)."""
        em1 = math.expm1(float(self.gamma))
        g = self.g
        return (1 + em1) / (em1 + g), 1.0 / g, (g - 1) * em1 / (g * (em1 + g))

    def group_estimates(self, agg: "HHAggregator", l: int, keys: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """Unbiased counts of ``keys`` (group l) among ALL users, and their variances.

        ĉ_l = (C − n_l/g)/(p − q′), q′ = 1/g (Wang et al. 2017, Eq. 3); ĉ = ĉ_l n/n_l. Variance,
        with c_l = clip(ĉ_l, 0, n_l) and c = clip(ĉ, 0, n) standing for the true counts:
          (n/n_l)² [ n_l q′(1−q′)/(p−q′)² + c_l(1−p−q′)/(p−q′)             (Wang et al. 2017, Eq. 3)
                     + Σ_{y≠x} c_l(y)(c_l(y)−1)/((g−1)k′_l)                 (FLH pool term, docs/ldp_hashing.md)
                     + n_l (c/n)(1 − c/n)(n − n_l)/(n − 1) ]                (sampling the group: hypergeometric)
        The pool sum runs over the keys estimated here only (the others are unknown): a lower bound."""
        keys = np.ascontiguousarray(keys, dtype=np.uint64)
        counts = agg._state[f"counts_{l:03d}"]
        n_l = int(agg._group_sizes()[l])
        n = agg.n
        if n_l == 0:
            raise ValueError(f"too few reports: group {l} of method {self.name!r} has none (n = {n})")
        p, q, d = self._pq()
        support = _core.ldp.hh_support(counts, self.pool, keys, agg.threads).astype(np.float64)
        est_l = (support - n_l * q) / d
        scale = n / n_l
        c_l = np.clip(est_l, 0, n_l)
        c = np.clip(est_l * scale, 0, n)
        pairs = c_l * np.maximum(c_l - 1, 0)
        pool_term = (pairs.sum() - pairs) / ((self.g - 1) * self.groups[l].k_prime)
        sampling = n_l * (c / n) * (1 - c / n) * (n - n_l) / max(n - 1, 1)
        var_l = n_l * q * (1 - q) / d ** 2 + c_l * (1 - p - q) / d + pool_term + sampling
        return est_l * scale, var_l * scale ** 2

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, HHProtocol) and other.fingerprint() == self.fingerprint()

    def __hash__(self) -> int:
        return hash(self.fingerprint())

    def __repr__(self) -> str:
        extra = "".join(f", {k}={v!r}" for k, v in self.options.items())
        return (f"HeavyHitters({self.name!r}, epsilon={self.epsilon}, item_bits={self.item_bits}, "
                f"item_type={self.codec.item_type!r}, k={self.k}{extra})")

    @classmethod
    def from_params(cls, params: Dict[str, Any]) -> "HHProtocol":
        p = dict(params)
        method = p.pop("method")
        gamma = p.pop("gamma")
        eps = p.pop("epsilon")
        proto = _REGISTRY[method](eps, **p)
        if proto.gamma != gamma or proto.params() != {**params}:
            raise ValueError("inconsistent parameters")
        return proto


def _protocol_of(header: Dict[str, Any], what: str) -> HHProtocol:
    try:
        params = _from_jsonable(header["params"])
        return HHProtocol.from_params(params)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError, RecursionError,
            ZeroDivisionError) as exc:
        raise ValueError(f"corrupt {what}: unknown method or bad parameters ({type(exc).__name__})") from None


def _check_report_arrays(pr: "HHProtocol", d: Dict[str, np.ndarray], n: int) -> Tuple[np.ndarray, ...]:
    """The (groups, indices, values) arrays of a batch of ``n`` reports of ``pr``, checked:
    exactly these names, int64, one per user, groups in range, pool indices below their group's
    k′, values below g (ValueError otherwise)."""
    if set(d) != {"groups", "indices", "values"}:
        raise ValueError("heavy-hitters reports must hold exactly 'groups', 'indices' and 'values'")
    arrays = []
    for name in ("groups", "indices", "values"):
        a = d.get(name)
        if not isinstance(a, np.ndarray) or a.dtype != np.int64 or a.shape != (n,):
            raise ValueError(f"heavy-hitters reports must hold {name!r}: int64, one per user")
        arrays.append(a)
    gr, j, v = arrays
    G = len(pr.groups)
    if n:
        if int(gr.min()) < 0 or int(gr.max()) >= G:
            raise ValueError(f"report groups must be in [0, {G})")
        kp = np.array([g.k_prime for g in pr.groups], dtype=np.int64)
        if int(j.min()) < 0 or bool(np.any(j >= kp[gr])):
            raise ValueError("report pool indices must be below their group's k_prime")
        if int(v.min()) < 0 or int(v.max()) >= pr.g:
            raise ValueError(f"report values must be buckets in [0, {pr.g}) (g)")
    return gr, j, v


@dataclass(frozen=True)
class HHReports:
    """A batch of heavy-hitters reports: the configuration's fingerprint, the number of users
    and int64 arrays ``groups``, ``indices`` (pool index) and ``values`` (bucket after g-ary
    randomized response), one entry per user."""

    method: str
    params: Tuple[Tuple[str, Any], ...]
    n: int
    data: Dict[str, np.ndarray] = field(compare=False)

    def __len__(self) -> int:
        return self.n

    def to_bytes(self) -> bytes:
        """Versioned, SHA-256-checked bytes (``from_bytes`` refuses anything corrupt)."""
        header = {"method": self.method, "n": self.n, "params": _jsonable(dict(self.params))}
        return _frame(_REPORTS_MAGIC, header, sorted(self.data.items()))

    @classmethod
    def from_bytes(cls, blob: bytes) -> "HHReports":
        header, arrays = _unframe(blob, _REPORTS_MAGIC, "heavy-hitters report batch")
        proto = _protocol_of(header, "heavy-hitters report batch")
        n = header.get("n")
        if not isinstance(n, int) or isinstance(n, bool) or not 0 <= n <= MAX_REPORTS:
            raise ValueError("corrupt heavy-hitters report batch: bad number of reports")
        if set(arrays) != {"groups", "indices", "values"}:
            raise ValueError("corrupt heavy-hitters report batch: arrays do not match the method")
        try:
            _check_report_arrays(proto, arrays, n)
        except ValueError as exc:
            raise ValueError(f"corrupt heavy-hitters report batch: {exc}") from None
        return cls(proto.name, proto.fingerprint(), n, arrays)


class HHClient:
    """The randomizer: ``privatize(items)`` -> :class:`HHReports` (one report per item)."""

    def __init__(self, protocol: HHProtocol, rng: Optional[Generator], *, allow_insecure: bool = False) -> None:
        self.protocol = protocol
        self.rng = client_rng(rng, allow_insecure)

    def privatize(self, items: Any, *, threads: Optional[int] = None) -> HHReports:
        """One ε-LDP report per item: ints in [0, 2^item_bits) (any integer array or sequence),
        or str/bytes for a string configuration."""
        t = check_threads(threads)
        pr = self.protocol
        x = pr.codec.encode(items)
        groups = [(sum(gr.weight for gr in pr.groups[:i + 1]), gr.kind, gr.shift, gr.k_prime)
                  for i, gr in enumerate(pr.groups)]
        gr_, j, v = _core.ldp.hh_privatize(self.rng._core, x, pr._aux(x), groups, pr.pool, pr.g, pr.gamma.numerator,
                                       pr.gamma.denominator, t)
        return HHReports(pr.name, pr.fingerprint(), int(x.size), {"groups": gr_, "indices": j, "values": v})


class HHAggregator:
    """The server side: ``add`` report batches, ``merge`` aggregators of the same configuration,
    ``to_bytes``/``from_bytes``, and ``top(m)`` / ``above(count)``: the heavy hitters with
    estimates, standard errors and 95% confidence intervals. State: counts per group (k′_l x g
    int64), independent of the number of users and of the domain."""

    def __init__(self, protocol: HHProtocol, candidates: Optional[Sequence[Any]] = None, *, threads: Any = None) -> None:
        self.protocol = protocol
        self.threads = check_threads(threads)
        self._candidates = protocol.codec.candidate_map(candidates)
        self.n = 0
        self._state: Dict[str, np.ndarray] = {
            f"counts_{l:03d}": np.zeros((gr.k_prime, protocol.g), dtype=np.int64) for l, gr in enumerate(protocol.groups)}
        self._found: Optional[Tuple[np.ndarray, np.ndarray, np.ndarray]] = None

    def _group_sizes(self) -> np.ndarray:
        return np.array([int(self._state[f"counts_{l:03d}"].sum(dtype=object)) for l in range(len(self.protocol.groups))])

    def _same(self, what: str, method: str, fingerprint: Any) -> None:
        if method != self.protocol.name or fingerprint != self.protocol.fingerprint():
            raise ValueError(f"{what} come from a different configuration ({method!r}); this aggregator is "
                             f"{self.protocol!r}")

    def add(self, reports: HHReports) -> "HHAggregator":
        """Ingest a batch; a rejected batch leaves the aggregator unchanged. Returns self."""
        if not isinstance(reports, HHReports):
            raise TypeError(f"reports must be dpnoise.ldp.HHReports (from a heavy-hitters client), got "
                            f"{type(reports).__name__}")
        self._same("reports", reports.method, reports.params)
        pr = self.protocol
        gr, j, v = _check_report_arrays(pr, reports.data, reports.n)
        G = len(pr.groups)
        if self.n + reports.n > MAX_REPORTS:
            raise ValueError(f"an aggregator counts at most 2^62 reports; it has {self.n}, {reports.n} more refused")
        sizes = [g.k_prime * pr.g for g in pr.groups]
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        cells = np.bincount(offsets[gr] + j * pr.g + v, minlength=int(offsets[-1]))
        new = {f"counts_{l:03d}": self._state[f"counts_{l:03d}"] + cells[offsets[l]:offsets[l + 1]].reshape(-1, pr.g)
               for l in range(G)}
        self._state = new
        self.n += reports.n
        self._found = None
        return self

    def merge(self, other: "HHAggregator") -> "HHAggregator":
        """Add another aggregator's reports (same configuration only, else ValueError). Returns self."""
        if not isinstance(other, HHAggregator):
            raise TypeError(f"can only merge an HHAggregator, got {type(other).__name__}")
        self._same("the other aggregator's reports", other.protocol.name, other.protocol.fingerprint())
        if self.n + other.n > MAX_REPORTS:
            raise ValueError(f"an aggregator counts at most 2^62 reports; it has {self.n}, {other.n} more refused")
        self._state = {k: v + other._state[k] for k, v in self._state.items()}
        self.n += other.n
        self._found = None
        return self

    def to_bytes(self) -> bytes:
        """Magic, format version, JSON header (parameters, n), the count arrays, SHA-256."""
        header = {"method": self.protocol.name, "params": _jsonable(self.protocol.params()), "n": self.n}
        return _frame(_STATE_MAGIC, header, sorted(self._state.items()))

    @classmethod
    def from_bytes(cls, blob: bytes, candidates: Optional[Sequence[Any]] = None) -> "HHAggregator":
        """An aggregator serialised by ``to_bytes``: ValueError for anything corrupt, truncated,
        of another format or inconsistent (counts that do not add up to n)."""
        header, state = _unframe(blob, _STATE_MAGIC, "heavy-hitters aggregator state")
        proto = _protocol_of(header, "heavy-hitters aggregator state")
        n = header.get("n")
        if not isinstance(n, int) or isinstance(n, bool) or not 0 <= n <= MAX_REPORTS:
            raise ValueError("corrupt heavy-hitters aggregator state: bad number of reports")
        agg = cls(proto, candidates)
        if set(state) != set(agg._state):
            raise ValueError("corrupt heavy-hitters aggregator state: arrays do not match the method")
        for k, v in state.items():
            if v.dtype != np.int64 or v.shape != agg._state[k].shape or (v.size and int(v.min()) < 0):
                raise ValueError(f"corrupt heavy-hitters aggregator state: array {k!r} does not match the method")
            if v.size and int(v.max()) > n:
                raise ValueError("corrupt heavy-hitters aggregator state: a counter exceeds n")
        # Python ints: a forged state cannot wrap the int64 sum around to n
        if sum(int(v.sum(dtype=object)) for v in state.values()) != n:
            raise ValueError("corrupt heavy-hitters aggregator state: the counts do not add up to n")
        agg._state = state
        agg.n = n
        return agg

    # -- results ------------------------------------------------------------------------------
    def _results(self) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self._found is None:
            if self.n == 0:
                self._found = (np.zeros(0, np.uint64), np.zeros(0), np.zeros(0))
            else:
                items, est, var = self.protocol._find(self)
                order = np.argsort(-est, kind="stable")[: self.protocol.tracked()]
                self._found = (items[order], est[order], var[order])
        return self._found

    def _rows(self, idx: np.ndarray, decode: bool) -> List[HeavyHitter]:
        items, est, var = self._results()
        names = self.protocol.codec.decode(items[idx], self._candidates, decode)
        se = np.sqrt(np.maximum(var[idx], 0))
        return [HeavyHitter(nm, float(e), float(s), float(e - Z95 * s), float(e + Z95 * s))
                for nm, e, s in zip(names, est[idx], se)]

    def top(self, m: Any = None, *, decode: bool = True) -> List[HeavyHitter]:
        """The m (default k) items with the largest estimated counts, largest first, as
        HeavyHitter(item, estimate, stderr, ci_low, ci_high). ValueError if m exceeds what the
        protocol tracks (``protocol.tracked()``)."""
        m = self.protocol.k if m is None else integer(m, "m")
        if not 1 <= m <= self.protocol.tracked():
            raise ValueError(f"m must be in [1, {self.protocol.tracked()}] (the items this configuration tracks; "
                             f"raise k or keep), got {m}")
        items = self._results()[0]
        return self._rows(np.arange(min(m, items.size)), decode)

    def above(self, count: Any, *, decode: bool = True) -> List[HeavyHitter]:
        """The tracked items whose estimated count is at least ``count``, largest first."""
        if isinstance(count, (bool, np.bool_)) or not isinstance(count, (int, float, np.integer, np.floating)):
            raise TypeError(f"count must be a number, got {type(count).__name__}")
        c = float(count)
        if not math.isfinite(c):
            raise ValueError(f"count must be finite, got {count!r}")
        est = self._results()[1]
        return self._rows(np.flatnonzero(est >= c), decode)

    def __repr__(self) -> str:
        return f"HHAggregator({self.protocol!r}, n={self.n})"


def HeavyHitters(method: str, epsilon: float, item_bits: Any = None, **options: Any) -> HHProtocol:
    """A local-DP heavy-hitters protocol: ``method`` one of ``"pem"``, ``"treehist"``,
    ``"bitstogram"``; ε per user; items of ``item_bits`` bits (ints) or strings (``item_type``,
    ``max_length``); ``k`` the number of heavy hitters wanted; see docs/heavy_hitters.md."""
    if not isinstance(method, str) or method not in _REGISTRY:
        raise ValueError(f"method must be one of {methods()}, got {method!r}")
    return _REGISTRY[method](epsilon, item_bits, **options)
