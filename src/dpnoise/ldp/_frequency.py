"""The frequency-oracle family: a configuration over items in [0, domain_size), and the
:func:`FrequencyOracle` factory over its registry.

A protocol module subclasses :class:`FrequencyConfiguration` with its metadata as class arguments::

    class GRR(FrequencyConfiguration, name="grr", aggregator=GRRAggregator, cost_rank=0):
        report_fields = (ReportField("values", PER_USER, np.int64),)
        def _privatize(self, rng, items, threads): ...
        def variance_per_user(self): ...

    fo = dpnoise.ldp.FrequencyOracle("grr", epsilon=2.0, domain_size=100)
    reports = fo.client().privatize(items)
    agg = fo.aggregator(); agg.add(reports); agg.estimate(); agg.stderr()
"""
from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from .._validate import integer
from . import _wire
from ._aggregator import Z95, Aggregator, HeavyHitter
from ._protocol import Client, Configuration

MAX_DOMAIN = 1 << 40


def check_domain_size(value: Any) -> int:
    """d as an int in [2, 2^40] (ValueError/TypeError naming ``domain_size``)."""
    d = integer(value, "domain_size")
    if d < 2:
        raise ValueError(f"domain_size must be at least 2, got {d}")
    if d > MAX_DOMAIN:
        raise ValueError(f"domain_size must be at most 2^40, got {d}")
    return d


def check_items(items: Any, domain_size: int, name: str = "items") -> np.ndarray:
    """A 1-D int64 array of items in [0, domain_size): TypeError for a non-integer dtype (bool
    included), ValueError (naming the range, never a value) for items outside it."""
    if type(items) is list and len(items) == 1 and type(items[0]) is int:  # one user's item: the checks below, at once
        if not 0 <= items[0] < domain_size:
            raise ValueError(f"{name} must be in [0, {domain_size}) (domain_size)")
        return np.array(items, dtype=np.int64)
    if isinstance(items, (list, tuple)):
        if any(isinstance(v, (bool, np.bool_)) for v in items):
            raise TypeError(f"{name} must be integers, not bool")
        if items and all(isinstance(v, (int, np.integer)) for v in items):
            # Python ints read exactly: one beyond int64 is out of range like any other, never a
            # different exception chosen by NumPy's dtype inference (issue 23, defect 6's kind)
            # every item is compared (no early exit at the first bad one, whose position the
            # time to the error would otherwise reveal) and the outcome is branched on once
            if sum(0 <= int(v) < domain_size for v in items) != len(items):
                raise ValueError(f"{name} must be in [0, {domain_size}) (domain_size)")
            return np.array(items, dtype=np.int64)
    arr = np.asarray(items)
    if arr.size == 0 and not isinstance(items, np.ndarray):
        arr = arr.astype(np.int64)  # an empty list or tuple is an empty batch, not float64
    if arr.dtype.kind not in "iu":  # not bool, object, float, timedelta (a NumPy integer subtype) ...
        raise TypeError(f"{name} must be integers, got dtype {arr.dtype}")
    if arr.ndim != 1:
        arr = arr.reshape(-1) if arr.ndim == 0 else arr
        if arr.ndim != 1:
            raise ValueError(f"{name} must be a 1-D array, got {arr.ndim}-D")
    if arr.size:
        lo, hi = arr.min(), arr.max()
        if (np.issubdtype(arr.dtype, np.signedinteger) and int(lo) < 0) or int(hi) >= domain_size:
            raise ValueError(f"{name} must be in [0, {domain_size}) (domain_size)")
    return arr.astype(np.int64, copy=False)


class FrequencyAggregator(Aggregator):
    """The aggregator base of the frequency oracles: the envelope's, and the ranking of the
    domain's items by their estimates (:meth:`top`, :meth:`above`)."""

    def _records(self, idx: np.ndarray) -> list[HeavyHitter]:
        est = self._estimates()[idx]
        se = np.sqrt(np.maximum(self.variance()[idx], 0))
        return [HeavyHitter(int(i), float(e), float(s), float(e - Z95 * s), float(e + Z95 * s))
                for i, e, s in zip(idx, est, se)]

    def top(self, m: Any = 10) -> list[HeavyHitter]:
        """The m items with the largest estimates, largest first (ties: the smaller item), as
        HeavyHitter(item, estimate, stderr, ci_low, ci_high).

        The intervals are per item (normal, 95%): when many items are looked at, about 5% of
        the intervals miss their true count, and the largest estimates are biased upward by
        the selection itself (the winner's curse); widen to a Bonferroni level for a
        simultaneous statement.

        Parameters
        ----------
        m : int, default 10
            How many items.

        Returns
        -------
        list of HeavyHitter
            m records, largest estimate first.

        Raises
        ------
        ValueError
            If m is not in [1, domain_size].
        """
        d = self._estimates().size
        m = integer(m, "m")
        if not 1 <= m <= d:
            raise ValueError(f"m must be in [1, {d}] (domain_size), got {m}")
        est = self._estimates()
        idx = np.argpartition(-est, m - 1)[:m] if m < d else np.arange(d)
        idx = idx[np.lexsort((idx, -est[idx]))]
        return self._records(idx)

    def above(self, count: Any) -> list[HeavyHitter]:
        """The items whose estimate is at least ``count``, largest first (see :meth:`top` for
        what the intervals cover).

        Parameters
        ----------
        count : float
            The threshold, in users.

        Returns
        -------
        list of HeavyHitter
            Possibly empty, largest estimate first.

        Raises
        ------
        TypeError
            If ``count`` is not a number (bool included).
        ValueError
            If ``count`` is NaN or infinite.
        """
        if isinstance(count, (bool, np.bool_)) or not isinstance(count, (int, float, np.integer, np.floating)):
            raise TypeError(f"count must be a number, got {type(count).__name__}")
        c = float(count)
        if not np.isfinite(c):
            raise ValueError(f"count must be finite, got {count!r}")
        est = self._estimates()
        idx = np.flatnonzero(est >= c)
        idx = idx[np.lexsort((idx, -est[idx]))]
        return self._records(idx)


class FrequencyConfiguration(Configuration, family="frequency"):
    """Base class of one frequency-oracle configuration: ε, the domain size d and the
    protocol's options. Protocols declare ``report_fields``, implement ``_privatize`` (the
    client), ``variance_per_user`` (the estimator's variance formula) and name their aggregator
    in the class arguments; ``cost_rank`` and ``variance_formula`` make them candidates of
    :func:`dpnoise.ldp.recommend`.

    Parameters
    ----------
    epsilon : float
        ε of each user's report, in (0, 100].
    domain_size : int
        d, the number of possible items (items are 0 .. d-1).
    **options
        The protocol's own options (a TypeError names one it does not take).

    Raises
    ------
    ValueError
        For a bad ε or domain size, or ``constant_time=True`` on a protocol without a
        constant-time client.
    TypeError
        For an option the protocol does not take, or a ``constant_time`` that is not a bool.
    """

    _state_magic = _wire.FREQUENCY_STATE
    _reports_magic = _wire.FREQUENCY_REPORTS
    _header_key = "protocol"
    cost_rank: ClassVar[int | None] = None

    def __init__(self, epsilon: float, domain_size: int, **options: Any) -> None:
        self._init_epsilon(epsilon)
        self.domain_size = check_domain_size(domain_size)
        # the variants (the envelope's): daily collection, a fresh per-report layer at ε₁ over the
        # (memoisable) answer at ε; constant-time kernels (the class's kernel table), both layers
        self._init_variants(options.pop("constant_time", False), options.pop("instantaneous_epsilon", None),
                            f"protocol {self.name!r}")
        self.options = self._check_options(options)

    # -- to override -----------------------------------------------------------------------
    def _check_options(self, options: dict[str, Any]) -> dict[str, Any]:
        """Validate protocol options (default: none accepted)."""
        if options:
            raise TypeError(f"protocol {self.name!r} takes no option {sorted(options)[0]!r}")
        return {}

    def pair_total_variation(self) -> float | None:
        """The total variation between the report laws of two distinct items, when every pair has
        the same one (the β of the shuffle model's variation-ratio bound, docs/accounting.md);
        None when it depends on the pair or is not known (the default), or with a daily layer.

        Returns
        -------
        float or None
            β in [0, 1), computed at the randomizer's exact ε (``gamma``), or None.
        """
        if self.gamma1 is not None:  # two layers: not one randomizer's law
            return None
        return self._item_pair_variation() if self.domain_size >= 2 else 0.0  # d = 1: no pair

    def _item_pair_variation(self) -> float | None:
        """The protocol's β for d >= 2, one layer (see pair_total_variation); None: not known."""
        return None

    def variance_per_user(self) -> float:
        """The variance of one user's contribution to an item's count estimate, for an item the
        user does not hold (the protocol's formula; Wang et al. 2017, Table 1, and the papers
        cited by each protocol).

        Returns
        -------
        float
            The variance, in squared users per user.

        Raises
        ------
        NotImplementedError
            On the base class.
        """
        raise NotImplementedError

    @staticmethod
    def variance_formula(epsilon: float, d: int) -> float:
        """The per-user variance :func:`dpnoise.ldp.recommend` compares (protocols with a
        ``cost_rank`` define it).

        Parameters
        ----------
        epsilon : float
            ε of each report.
        d : int
            The domain size.

        Returns
        -------
        float
            The per-user variance of one item's count estimate.

        Raises
        ------
        NotImplementedError
            On the base class.
        """
        raise NotImplementedError

    def variance(self, n: int, counts: np.ndarray | None = None) -> np.ndarray:
        """Per-item variance of the count estimate over ``n`` users (terms that depend on the
        true count are added by protocols where they matter, from ``counts``).

        Parameters
        ----------
        n : int
            The number of reports.
        counts : numpy.ndarray, optional
            The items' (estimated) counts, shape (d,), for count-dependent terms.

        Returns
        -------
        numpy.ndarray
            float64 variances, shape (d,).
        """
        return np.full(self.domain_size, n * self.variance_per_user())

    def cost_units(self, n: int) -> tuple[float, float]:
        """(client, server) work for n reports, in the protocol's own units (calibrated into
        seconds by :func:`dpnoise.ldp.compare`); the server's includes one full estimate.
        Default: one unit a report, and one an item.

        Parameters
        ----------
        n : int
            The number of reports.

        Returns
        -------
        tuple of (float, float)
            (client units, server units).
        """
        return float(n), float(n + self.domain_size)

    def state_bytes(self) -> int:
        """The bytes of one aggregator's state (default: one int64 an item).

        Returns
        -------
        int
            Bytes.
        """
        return 8 * self.domain_size

    # -- shared --------------------------------------------------------------------------------
    @classmethod
    def example(cls, epsilon: float = 2.0, domain_size: int = 64) -> FrequencyConfiguration:
        """A small instance (d = 64 and the class's ``example_options``).

        Parameters
        ----------
        epsilon : float, default 2.0
            ε.
        domain_size : int, default 64
            d.

        Returns
        -------
        FrequencyConfiguration
            An instance of ``cls``.
        """
        return cls(epsilon, domain_size, **cls.example_options)

    def item_domain(self) -> tuple[str, int | None]:
        """``("int", d)``: items are integers in [0, d) (see Configuration.item_domain)."""
        return ("int", int(self.domain_size))

    def example_items(self, n: int, seed: int = 0) -> np.ndarray:
        """``n`` items in [0, d) drawn from a Zipf(1.1) law (NumPy, seeded: test data only)."""
        ranks = np.arange(1, self.domain_size + 1, dtype=np.float64)
        p = ranks ** -1.1
        return np.random.default_rng(seed).choice(self.domain_size, size=n, p=p / p.sum()).astype(np.int64)

    def _encode(self, items: Any) -> np.ndarray:
        return check_items(items, self.domain_size)

    def _query(self, items: Any) -> np.ndarray:
        return check_items(items, self.domain_size)

    def params(self) -> dict[str, Any]:
        """Everything that must agree between clients, aggregators and serialised states."""
        return {"epsilon": self.epsilon, "gamma": self.gamma, "domain_size": self.domain_size, **self.options,
                **self._variant_params()}

    @classmethod
    def _construct(cls, params: dict[str, Any]) -> FrequencyConfiguration:
        eps = params.pop("epsilon")
        params.pop("gamma")
        d = params.pop("domain_size")
        return cls(eps, d, **cls._variant_options(params), **params)

    def __repr__(self) -> str:
        opts = "".join(f", {k}={v!r}" for k, v in self.options.items() if not isinstance(v, (bytes, np.ndarray)))
        opts += self._variant_repr()
        return f"FrequencyOracle({self.name!r}, epsilon={self.epsilon}, domain_size={self.domain_size}{opts})"


FrequencyConfiguration.client_class = Client
#: the family base's 0.7 name, a plain alias while dpnoise.distributed.spark imports it (to be
#: deprecation-warned like ``register`` once it no longer does)
Protocol = FrequencyConfiguration


def register(cls: type[Configuration]) -> type[Configuration]:
    """Deprecated (``dpnoise.ldp.register`` warns; removed in the next release): the class
    decorator kept for protocols written before class arguments: register ``cls`` in its family
    by its ``name`` (``class P(FrequencyConfiguration, name="...")`` does this by itself).

    Parameters
    ----------
    cls : type
        A configuration class with a ``name``.

    Returns
    -------
    type
        ``cls``.
    """
    cls._registry[cls.name] = cls
    return cls


def protocols() -> list[str]:
    """The names of the registered frequency-oracle protocols.

    Returns
    -------
    list of str
        Sorted.
    """
    return sorted(FrequencyConfiguration.registered())


def FrequencyOracle(protocol: str, epsilon: float, domain_size: int, **options: Any) -> FrequencyConfiguration:
    """A local-DP frequency oracle.

    Parameters
    ----------
    protocol : str
        One of :func:`protocols` (the registered protocols; docs/ldp.md describes each).
    epsilon : float
        ε per user, in [2^-50, 100].
    domain_size : int
        Items are in [0, domain_size).
    **options
        FrequencyConfiguration options (see each protocol's class), and for daily collection (the protocols
        whose class declares ``longitudinal``) ``instantaneous_epsilon=ε₁``: a fresh
        per-report layer at ε₁ over the permanent answer, which is then at ``epsilon`` (ε∞)
        and memoised by clients made with ``client(device_key=...)`` (docs/ldp.md, "Daily
        collection"); the aggregator debiases both layers. ``constant_time=True`` (the protocols whose
        kernel table has a constant-time row, ``cls.supports("constant_time")``): the keep/flip decisions by constant-time kernels, each
        report (ε, (1 + e^ε)·m·2^-64)-LDP with m the draws per report (1; SUE/OUE: d; dBitFlip:
        b; CMS: width + 1; HCMS: 2) (docs/security.md, "Constant-time sampling"); with
        ``instantaneous_epsilon`` too, both layers by constant-time kernels and the loss a
        ``WithinTotalVariation`` of the two-layer loss (docs/ldp.md, "Daily collection").

    Returns
    -------
    FrequencyConfiguration

    Raises
    ------
    ValueError
        For an unknown protocol or a bad parameter (TypeError for an unknown option), and for
        ``constant_time=True`` on another protocol.

    Examples
    --------
    >>> fo = dpnoise.ldp.FrequencyOracle("grr", epsilon=2.0, domain_size=100)
    >>> agg = fo.aggregator().add(fo.client().privatize([3, 5, 5]))
    """
    registry = FrequencyConfiguration.registered()
    if not isinstance(protocol, str) or protocol not in registry:
        raise ValueError(f"protocol must be one of {protocols()}, got {protocol!r}")
    cls = registry[protocol]
    assert issubclass(cls, FrequencyConfiguration)  # the family's registry holds its protocols only
    return cls(epsilon, domain_size, **options)
