"""The server side of every LDP configuration: :class:`Aggregator` (add, merge, to_bytes,
from_bytes, estimate, variance, stderr; ``top`` and ``above`` are the ranking families'), and the :class:`HeavyHitter` records its
results come in. Model: google/differential-privacy ``cc/algorithms/algorithm.h`` (one AddEntry /
Serialize / Merge envelope for every aggregation)."""
from __future__ import annotations

from typing import Any, ClassVar, NamedTuple

import numpy as np

from . import _wire
from ._registry import family_of_magic
from ._reports import Reports
from ._schema import check_arrays, check_values


def count_into(target: np.ndarray, cells: np.ndarray) -> None:
    """Add one to ``target.flat[c]`` for every c in ``cells``, in place: O(batch) for a small
    batch (np.add.at), one bincount over the state when the batch is large (faster there)."""
    flat = target.reshape(-1)
    if cells.size <= 8:  # a device's few reports: no ufunc machinery
        for c in cells.ravel().tolist():
            flat[c] += 1
    elif cells.size * 8 >= flat.size:
        flat += np.bincount(cells, minlength=flat.size)
    else:
        np.add.at(flat, cells, 1)


Z95 = 1.959963984540054       # the 0.975 quantile of the standard normal


class HeavyHitter(NamedTuple):
    """One item with its unbiased count estimate over all users, the standard error and a
    normal 95% confidence interval estimate ± 1.96 stderr (per item: over many items about 5%
    of the intervals miss their true count)."""

    item: Any
    estimate: float
    stderr: float
    ci_low: float
    ci_high: float


class Aggregator:
    """The server side of a configuration: ``add`` report batches (streaming), ``merge`` other
    aggregators of the same configuration, serialise with ``to_bytes``/``from_bytes``, and
    estimate.

    Subclasses keep their state in named NumPy arrays (``_state``) and implement
    ``_empty_state``, ``_check_batch`` (value ranges; the arrays' names, dtypes and shapes are
    checked from the declared schema before it), ``_ingest`` and ``_estimate``. Anything derived
    from the state goes in ``self._cache``, which every change clears.

    Parameters
    ----------
    protocol : Configuration
        The configuration whose reports it counts (``config.aggregator()`` makes one).
    """

    #: state arrays whose first axis may grow with the reports (e.g. packed columns)
    _growable: ClassVar[frozenset[str]] = frozenset()
    #: when the state is a count table over report fields: (state array, the per-user fields
    #: that index it, a 0/1 sign field (1 adds -1) or None); used by ``_add_counts``
    _count_table: ClassVar[Any] = None

    def __init__(self, protocol: Any) -> None:
        self.protocol = protocol
        self.n = 0
        self._cache: dict[str, Any] = {}
        self._state: dict[str, np.ndarray] = self._empty_state()

    # -- to override -----------------------------------------------------------------------
    def _empty_state(self) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def _check_batch(self, reports: Reports) -> None:
        """Raise ValueError for report values out of range; called before the state changes.
        Default: the declared fields' ranges and the configuration's per-row rules."""
        check_values(self.protocol.report_fields, self.protocol, reports.data, reports.n, self.protocol.name)
        if reports.n and not self.protocol._extra_row_mask(reports.data, reports.n).all():
            raise ValueError(f"{self.protocol.name} reports: some rows break the configuration's rules")

    def _ingest(self, reports: Reports) -> None:
        raise NotImplementedError

    def _estimate(self) -> np.ndarray:
        """Unbiased count estimates (float64) for every item."""
        raise NotImplementedError

    def _check_state(self, state: dict[str, np.ndarray], n: int) -> None:
        """Validate a loaded state beyond names, dtypes and shapes (ValueError if inconsistent
        with the configuration or with ``n``); default: nothing more to check."""

    def _merge_state(self, other: Aggregator) -> None:
        """Default: states add up element-wise."""
        for k, v in other._state.items():
            self._state[k] = self._state[k] + v

    def _after_load(self) -> None:
        """Hook for configurations with more to check or derive once a state is loaded."""

    # -- shared --------------------------------------------------------------------------------
    def _same_protocol(self, what: str, name: str, fingerprint: Any) -> None:
        mine = self.__dict__.get("_fingerprint")
        if mine is None:  # the configuration is complete once it has an aggregator: keep it
            mine = self.__dict__["_fingerprint"] = self.protocol.fingerprint()
        if name != self.protocol.name or (fingerprint is not mine and fingerprint != mine):
            raise ValueError(f"{what} come from a different configuration ({name!r}); this aggregator is "
                             f"{self.protocol!r}")

    def _changed(self) -> None:
        self._cache.clear()

    def add(self, reports: Reports) -> Aggregator:
        """Ingest a batch; a rejected batch leaves the aggregator unchanged.

        Parameters
        ----------
        reports : Reports
            From a client of the same configuration (or ``Reports.from_bytes``).

        Returns
        -------
        Aggregator
            self.

        Raises
        ------
        TypeError
            If ``reports`` is not a Reports.
        ValueError
            For reports of another configuration, arrays that do not match the declared
            schema, values out of range, or more than 2^62 reports in all.
        """
        if not isinstance(reports, Reports):
            raise TypeError(f"reports must be dpnoise.ldp.Reports (from a client's privatize), got "
                            f"{type(reports).__name__}")
        self._same_protocol("reports", reports.protocol, reports.params)
        check_arrays(self.protocol.report_fields, self.protocol, reports.data, reports.n, self.protocol.name)
        self._check_room(reports.n)
        self._check_batch(reports)
        self._changed()
        self._ingest(reports)
        self.n += reports.n
        return self

    def merge(self, other: Aggregator) -> Aggregator:
        """Add another aggregator's reports (same configuration only). Returns self.

        Parameters
        ----------
        other : Aggregator
            Of the same configuration; it is not changed.

        Returns
        -------
        Aggregator
            self.

        Raises
        ------
        TypeError
            If ``other`` is not an Aggregator.
        ValueError
            For another configuration, ``other`` being this very aggregator (its counts would
            double), or more than 2^62 reports in all.
        """
        if not isinstance(other, Aggregator):
            raise TypeError(f"can only merge an Aggregator, got {type(other).__name__}")
        if other is self:
            raise ValueError("cannot merge an aggregator into itself (every count would double); merge a copy "
                             "made with from_bytes(to_bytes()) if that is really meant")
        self._same_protocol("the other aggregator's reports", other.protocol.name, other.protocol.fingerprint())
        self._check_room(other.n)
        self._changed()
        self._merge_state(other)
        self.n += other.n
        return self

    def _add_counts(self, rows: dict[str, np.ndarray], counts: np.ndarray) -> None:
        """Add ``counts[i]`` reports equal to row i of ``rows`` (one value per user per field,
        every row already valid), exactly in int64: what ``add`` of those reports gives, in
        O(rows) (e.g. from a Spark ``groupBy(...).count()``). Only with ``_count_table``."""
        name, index, sign = self._count_table
        counts = np.asarray(counts, dtype=np.int64)
        total = int(counts.sum(dtype=object))
        self._check_room(total)
        cells = np.ravel_multi_index(tuple(np.asarray(rows[f], dtype=np.int64) for f in index),
                                     self._state[name].shape)
        step = counts if sign is None else np.where(np.asarray(rows[sign]) == 1, -counts, counts)
        self._changed()
        np.add.at(self._state[name].reshape(-1), cells, step)
        self.n += total

    def _check_room(self, more: int) -> None:
        if self.n + more > _wire.MAX_REPORTS:
            raise ValueError(f"an aggregator counts at most 2^62 reports; it has {self.n}, {more} more refused")

    def _cached(self, key: str, compute: Any) -> Any:
        """``compute()`` once per state (read-only if an array)."""
        value = self._cache.get(key)
        if value is None:
            value = compute()
            if isinstance(value, np.ndarray):
                value.flags.writeable = False
            self._cache[key] = value
        return value

    def _estimates(self) -> np.ndarray:
        """All estimates, computed once per state: estimate, variance and stderr share them."""
        return self._cached("estimates", lambda: np.asarray(self._estimate(), dtype=np.float64))

    def estimate(self, items: Any = None) -> np.ndarray:
        """Unbiased estimates of how many users hold each item.

        Parameters
        ----------
        items : array_like, optional
            The items to estimate (default: every item of the domain).

        Returns
        -------
        numpy.ndarray
            float64 estimates (they may be negative or exceed n: unbiased, not clipped).
        """
        if items is None:
            return self._estimates().copy()
        idx = self.protocol._query(items)
        if "estimates" not in self._cache and type(self)._estimate_items is not Aggregator._estimate_items:
            return self._estimate_items(idx)  # only the requested items: O(|items|), not O(d)
        return self._estimates()[idx]

    def _estimate_items(self, items: np.ndarray) -> np.ndarray:
        """Estimates of the given (checked) items only; protocols that can do better than
        computing all d override it."""
        return self._estimates()[items]

    def variance(self, items: Any = None) -> np.ndarray:
        """Per-item variance of the estimates, from the configuration's formula (count-dependent
        terms use the clipped estimates as the counts, or the unbiased ones where that states more).

        Parameters
        ----------
        items : array_like, optional
            The items (default: every item of the domain).

        Returns
        -------
        numpy.ndarray
            float64 variances, in squared users.
        """
        var = self._plug_in_variance(self._estimates())
        return var if items is None else var[self.protocol._query(items)]

    def _plug_in_variance(self, est: np.ndarray) -> np.ndarray:
        """The configuration's variance at the estimates ``est`` as the counts: clipped to [0, n],
        or unclipped below where that states more (a count term that lowers the variance,
        Hadamard's −c(x) or GRR's at large ε: clipped at 0, a rare item's E ĉ > 0 took ~18% off
        its stated variance at n = 5, ε = 4; the unbiased ĉ keeps the term unbiased)."""
        if not self.n:
            return self.protocol.variance(self.n, np.zeros(est.shape))
        return np.maximum(self.protocol.variance(self.n, np.clip(est, 0, self.n)),
                          self.protocol.variance(self.n, np.minimum(est, self.n)))

    def stderr(self, items: Any = None) -> np.ndarray:
        """The square root of :meth:`variance`: each estimate's standard error.

        Parameters
        ----------
        items : array_like, optional
            As for :meth:`variance`.

        Returns
        -------
        numpy.ndarray
            float64 standard errors, in users.
        """
        return np.sqrt(self.variance(items))

    # -- serialisation ---------------------------------------------------------------------------
    def to_bytes(self) -> bytes:
        """The state as bytes: magic, format version, a JSON header (configuration, parameters,
        n, array names/dtypes/shapes), the arrays, and a SHA-256 of everything before it.

        Returns
        -------
        bytes
            Loadable with :meth:`from_bytes` by any dpnoise of the same format version.
        """
        cfg = self.protocol
        header = {cfg._header_key: cfg.name, "params": _wire.jsonable(cfg.params()), "n": self.n}
        return _wire.frame(cfg._state_magic, header, sorted(self._state.items()))

    @classmethod
    def _load(cls, blob: Any, **aggregator_options: Any) -> Aggregator:
        fam = family_of_magic(blob, "_state_magic")
        what = f"{fam._label}aggregator state"
        header, state = _wire.unframe(blob, fam._state_magic, what)
        config = fam._from_header(header, what)
        n = _wire.count_of(header, what, _wire.MAX_REPORTS)
        agg = config.aggregator(**aggregator_options)
        if cls is not Aggregator and not isinstance(agg, cls):
            raise ValueError(f"the state is of {fam._noun} {config.name!r}, not a {cls.__name__}")
        empty = agg._state
        if set(state) != set(empty):
            raise ValueError(f"corrupt {what}: arrays do not match the {fam._noun}")
        for name, arr in state.items():
            want = empty[name]
            same_shape = arr.shape == want.shape or (
                name in agg._growable and arr.ndim == want.ndim and arr.shape[1:] == want.shape[1:])
            if arr.dtype != want.dtype or not same_shape:
                raise ValueError(f"corrupt {what}: array {name!r} does not match the {fam._noun}")
        agg._check_state(state, n)
        agg._state = state
        agg.n = n
        agg._changed()
        agg._after_load()
        return agg

    @classmethod
    def from_bytes(cls, blob: bytes) -> Aggregator:
        """The aggregator serialised by :meth:`to_bytes`.

        Parameters
        ----------
        blob : bytes
            A state written by :meth:`to_bytes` (of any format version this dpnoise reads).

        Returns
        -------
        Aggregator
            Of the configuration recorded in the blob (and of ``cls``).

        Raises
        ------
        ValueError
            For anything corrupt, truncated, of another format version, of an unknown
            configuration, or inconsistent with it. Arrays must have the configuration's names
            and dtypes, and its shapes except along the axes it declares growable.
        TypeError
            If ``blob`` is not bytes.
        """
        return cls._load(blob)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.protocol!r}, n={self.n})"
