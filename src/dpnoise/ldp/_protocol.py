"""The one envelope every local-DP configuration shares: frequency oracles, heavy hitters and
whatever family comes next.

* :class:`Configuration` owns ε and its exact rational γ, ``params()``, ``fingerprint()``, the
  registry, ``privacy_loss()``, ``client()`` and ``aggregator()``. A family (frequency oracles,
  heavy hitters) is a subclass declared with ``family=...``; a protocol is a subclass of a
  family declared with its metadata as class arguments, registered by ``__init_subclass__``::

      class GRR(Protocol, name="grr", aggregator=GRRAggregator, cost_rank=0):
          report_fields = (ReportField("values", PER_USER, np.int64),)

* :class:`Reports` is one batch of randomized reports (the configuration's fingerprint, the
  number of users and the declared arrays).
* :class:`Client` turns items into reports; the configuration's ``_encode`` checks the items and
  its ``_privatize`` calls the C++ randomizer through :func:`native` (the one place that reaches
  into a :class:`dpnoise.Generator`).
* :class:`Aggregator` is the server: ``add`` (the declared arrays are checked from the schema,
  value ranges by the protocol's ``_check_batch``), ``merge``, ``to_bytes``/``from_bytes``
  (dpnoise.ldp._wire), and ``estimate``/``variance``/``stderr``. Results derived from the state
  are cached until the next change.

Model: google/differential-privacy ``cc/algorithms/algorithm.h`` (one AddEntry / Serialize /
Merge envelope for every aggregation) and boost-histogram's storages (metadata as class
arguments).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from fractions import Fraction
import hashlib
from typing import Any, ClassVar, Dict, List, NamedTuple, Optional, Tuple, Type

import numpy as np

from .. import _rational as R
from .._errors import InsecureGeneratorError
from .._validate import check_threads, positive
from ..accounting.losses import PrivacyLoss, PureDP
from ..generator import Generator, default_rng
from . import _wire
from ._schema import (
    PACKED, ROW, ReportField, check_arrays, check_values, concat_arrays, report_rows, reports_from_rows, value_masks,
)

# ε above this is no privacy at all (and e^ε overflows float arithmetic near 709)
MAX_EPSILON = 100.0
# ε below this cannot be held as an exact rational with the core's 62-bit parts (and its
# variance, ~4/ε² per user, would need more users than exist)
MIN_EPSILON = 2.0 ** -50
# the most reports one aggregator may count: sums of int64 counters stay far from overflow
MAX_REPORTS = R.MAX_PART


def check_epsilon(value: Any) -> float:
    """ε per user as a float in [2^-50, 100] (ValueError/TypeError naming ``epsilon``)."""
    try:
        eps = positive(value, "epsilon")
    except OverflowError:  # an int beyond the largest double
        raise ValueError(f"epsilon must be at most {MAX_EPSILON:g}") from None
    if eps > MAX_EPSILON:
        raise ValueError(f"epsilon must be at most {MAX_EPSILON:g}, got {eps!r}")
    if eps < MIN_EPSILON:
        raise ValueError(f"epsilon must be at least 2**-50, got {eps!r}")
    return eps


def exact_gamma(epsilon: float) -> Fraction:
    """ε as the exact rational the randomizers use, rounded down (toward more privacy) when its
    exact binary value does not fit the core's 62-bit parts."""
    fr = Fraction(epsilon)
    if fr.numerator <= R.MAX_PART and fr.denominator <= R.MAX_PART:
        return fr
    num, den = R.round_up(1 / fr, "1/epsilon")  # 1/ε rounded up: ε rounded down
    return Fraction(den, num)


def native(rng: Generator) -> Any:
    """The C++ generator behind a :class:`dpnoise.Generator`: the one boundary through which LDP
    randomizers reach the secret stream."""
    return rng._core


def client_rng(rng: Optional[Generator], allow_insecure: Any) -> Generator:
    """The generator a randomizer draws from: ``rng`` (default: a fresh secure one), which must
    be a dpnoise Generator and secure unless ``allow_insecure=True``."""
    if rng is None:
        rng = default_rng()
    if not isinstance(rng, Generator):
        raise TypeError(f"rng must be a dpnoise.Generator (dpnoise.default_rng()), got {type(rng).__name__}")
    if not isinstance(allow_insecure, (bool, np.bool_)):
        raise TypeError(f"allow_insecure must be a bool, got {type(allow_insecure).__name__}")
    if not rng.is_secure and not allow_insecure:
        raise InsecureGeneratorError(
            "rng is not secure (seeded: its randomness can be reproduced); use dpnoise.default_rng() "
            "with no seed, or pass allow_insecure=True for tests")
    return rng


def count_into(target: np.ndarray, cells: np.ndarray) -> None:
    """Add one to ``target.flat[c]`` for every c in ``cells``, in place: O(batch) for a small
    batch (np.add.at), one bincount over the state when the batch is large (faster there)."""
    flat = target.reshape(-1)
    if cells.size * 8 >= flat.size:
        flat += np.bincount(cells, minlength=flat.size)
    else:
        np.add.at(flat, cells, 1)


# ------------------------------------------------------------------------------------ Reports
@dataclass(frozen=True)
class Reports:
    """A batch of randomized reports.

    Attributes
    ----------
    protocol : str
        The configuration's registered name (``method`` is the same, for heavy hitters).
    params : tuple
        The configuration's fingerprint: reports are only added to an aggregator of the very
        same configuration.
    n : int
        The number of reports (one per user).
    data : dict of str to numpy.ndarray
        The arrays the configuration declares (``report_fields``).

    Reports reveal nothing beyond what the LDP guarantee allows; send them as they are, with
    :meth:`to_bytes` (versioned, SHA-256-checked).
    """

    protocol: str
    params: Tuple[Tuple[str, Any], ...]
    n: int
    data: Dict[str, np.ndarray] = field(compare=False)
    family: str = field(default="frequency", compare=False)
    #: rows a reader dropped as malformed (``from_arrow(..., on_malformed="skip")``), else 0
    skipped: int = field(default=0, compare=False)

    def __post_init__(self) -> None:
        n = self.n
        if isinstance(n, np.integer):
            n = int(n)
        if not isinstance(n, int) or isinstance(n, bool) or not 0 <= n <= MAX_REPORTS:
            raise TypeError(f"Reports.n must be an int in [0, 2^62], got {type(self.n).__name__}")
        object.__setattr__(self, "n", n)
        if not isinstance(self.data, dict) or not all(
                isinstance(k, str) and isinstance(v, np.ndarray) for k, v in self.data.items()):
            raise TypeError("Reports.data must be a dict of NumPy arrays by name")
        if self.family not in _FAMILIES:
            raise ValueError(f"Reports.family must be one of {sorted(_FAMILIES)}, got {self.family!r}")

    @property
    def method(self) -> str:
        """The configuration's name (the heavy-hitters spelling of ``protocol``)."""
        return self.protocol

    def __len__(self) -> int:
        return self.n

    def to_bytes(self) -> bytes:
        """The batch as bytes, to send from devices to a server: versioned and SHA-256-checked
        like an aggregator's state (see :meth:`Aggregator.to_bytes`)."""
        fam = _FAMILIES[self.family]
        header = {fam._header_key: self.protocol, "n": self.n, "params": _wire.jsonable(dict(self.params))}
        return _wire.frame(fam._reports_magic, header, sorted(self.data.items()))

    def configuration(self) -> "Configuration":
        """The configuration these reports were made for, rebuilt from their fingerprint."""
        return _FAMILIES[self.family].registered()[self.protocol].from_params(dict(self.params))

    @staticmethod
    def concat(batches: Any) -> "Reports":
        """One batch of all the reports of ``batches`` (packed bits are repacked across them).

        Raises
        ------
        ValueError
            For an empty list, or batches of different configurations (naming both).
        TypeError
            For anything that is not a Reports.
        """
        batches = list(batches)
        if not batches:
            raise ValueError("batches must hold at least one Reports")
        for b in batches:
            if not isinstance(b, Reports):
                raise TypeError(f"batches must hold dpnoise.ldp.Reports, got {type(b).__name__}")
        first = batches[0]
        for b in batches[1:]:
            if b.protocol != first.protocol or b.params != first.params or b.family != first.family:
                raise ValueError(f"batches of different configurations cannot be concatenated "
                                 f"({first.protocol!r} and {b.protocol!r}, or the same name with other parameters)")
        config = first.configuration()
        for b in batches:
            check_arrays(config.report_fields, config, b.data, b.n, config.name)
        counts = [b.n for b in batches]
        return config._reports(sum(counts), concat_arrays(config.report_fields, config, [b.data for b in batches],
                                                          counts))

    # -- compact per-device records --------------------------------------------------------------
    def to_records(self) -> List[bytes]:
        """One ``bytes`` per report, for devices that send one report each: a 16-byte header
        (``DR``, a format version, a reserved byte and 12 bytes of the configuration's id, a
        SHA-256 of its JSON) and the report's own fields in declared order (each value at its
        dtype's width, a row's bytes, a packed bit as one byte). No JSON per record."""
        config = self.configuration()
        rows = report_rows(config, self.data, self.n)
        cols = [np.full((self.n, 16), np.frombuffer(_record_header(config), np.uint8), dtype=np.uint8)]
        for f in config.report_fields:
            col = rows[f.name]
            if f.kind == ROW:
                cols.append(col)
            else:
                cols.append(np.ascontiguousarray(col.astype(f.dtype.newbyteorder("<") if f.kind != PACKED else np.int8,
                                                            copy=False)).view(np.uint8).reshape(self.n, -1))
        table = np.ascontiguousarray(np.concatenate(cols, axis=1)) if self.n else np.zeros((0, 16), np.uint8)
        width = table.shape[1]
        raw = table.tobytes()
        return [raw[i * width:(i + 1) * width] for i in range(self.n)]

    @staticmethod
    def from_records(records: Any, oracle: "Configuration") -> "Reports":
        """The batch of per-device records written by :meth:`to_records` (vectorised).

        Raises
        ------
        ValueError
            For a record of another configuration or format, a truncated or over-long record,
            or a packed bit other than 0/1 (naming the first bad position, never its content).
        TypeError
            For records that are not bytes, or an ``oracle`` that is not a configuration.
        """
        if not isinstance(oracle, Configuration):
            raise TypeError(f"oracle must be a dpnoise.ldp configuration, got {type(oracle).__name__}")
        if isinstance(records, (bytes, bytearray, memoryview)):
            raise TypeError("records must be a sequence of bytes (one per report), not one bytes object")
        records = list(records)
        n = len(records)
        width = 16 + sum(1 if f.kind == PACKED else (f.row_bytes(oracle) if f.kind == ROW else f.dtype.itemsize)
                         for f in oracle.report_fields)
        try:
            joined = b"".join(records)  # refuses anything that is not bytes-like
            lengths = np.fromiter(map(len, records), dtype=np.int64, count=n)
        except TypeError:
            raise TypeError("records must all be bytes") from None
        bad = np.flatnonzero(lengths != width)
        if bad.size:
            raise ValueError(f"record {int(bad[0])} has {int(lengths[bad[0]])} bytes; records of this configuration "
                             f"have {width} (truncated, or of another configuration)")
        table = np.frombuffer(joined, dtype=np.uint8).reshape(n, width)
        head = np.frombuffer(_record_header(oracle), dtype=np.uint8)
        wrong = np.flatnonzero((table[:, :16] != head).any(axis=1)) if n else np.zeros(0, np.int64)
        if wrong.size:
            raise ValueError(f"record {int(wrong[0])} is of another configuration or record format than "
                             f"{oracle!r}")
        rows: Dict[str, np.ndarray] = {}
        pos = 16
        for f in oracle.report_fields:
            if f.kind == ROW:
                k = f.row_bytes(oracle)
                rows[f.name] = table[:, pos:pos + k]
            elif f.kind == PACKED:
                k = 1
                bit = table[:, pos].view(np.int8)
                if n and not ((bit == 0) | (bit == 1)).all():
                    raise ValueError(f"record {int(np.flatnonzero((bit != 0) & (bit != 1))[0])}: a packed bit must be 0 or 1")
                rows[f.name] = bit
            else:
                k = f.dtype.itemsize
                rows[f.name] = np.ascontiguousarray(table[:, pos:pos + k]).view(f.dtype.newbyteorder("<")).reshape(n)
            pos += k
        return oracle.reports(reports_from_rows(oracle, rows, n), n)

    def to_arrow(self) -> Any:
        """The batch as a ``pyarrow.Table``, one row per report, flat primitive columns (see
        :func:`dpnoise.ldp.arrow.to_arrow`). Needs pyarrow."""
        from .arrow import to_arrow

        return to_arrow(self)

    @staticmethod
    def from_arrow(table: Any, oracle: "Configuration", on_malformed: str = "raise") -> "Reports":
        """Reports from a ``pyarrow.Table``, RecordBatch or list of them (see
        :func:`dpnoise.ldp.arrow.from_arrow`). Needs pyarrow."""
        from .arrow import from_arrow

        return from_arrow(table, oracle, on_malformed=on_malformed)

    @classmethod
    def from_bytes(cls, blob: bytes) -> "Reports":
        """A batch serialised by :meth:`to_bytes`.

        Raises
        ------
        ValueError
            For anything corrupt, truncated, of another format version or of an unknown
            configuration.
        TypeError
            If ``blob`` is not bytes.
        """
        fam = _family_of_magic(blob, "_reports_magic")
        what = f"{fam._label}report batch"
        header, arrays = _wire.unframe(blob, fam._reports_magic, what)
        config = fam._from_header(header, what)
        n = _wire.count_of(header, what, MAX_REPORTS)
        config._check_loaded_reports(arrays, n, what)
        return config._reports(n, arrays)


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


RECORD_MAGIC = b"DR"
RECORD_FORMAT = 1


def _record_header(config: "Configuration") -> bytes:
    """The 16-byte header of a per-device record: magic, format, a reserved byte and 12 bytes of
    SHA-256 of the configuration's JSON (its id)."""
    return RECORD_MAGIC + bytes([RECORD_FORMAT, 0]) + hashlib.sha256(config.to_json().encode()).digest()[:12]


# ------------------------------------------------------------------------------- Configuration
_FAMILIES: Dict[str, Type["Configuration"]] = {}


def _family_of_magic(blob: Any, attr: str) -> Type["Configuration"]:
    magic = _wire.magic_of(blob, tuple(getattr(f, attr) for f in _FAMILIES.values()))
    return next(f for f in _FAMILIES.values() if getattr(f, attr) == magic)


class Configuration:
    """Base of every LDP configuration (frequency oracle, heavy hitters, ...).

    A family subclasses it with ``family="..."`` (and its wire magics); a protocol subclasses a
    family with ``name="..."`` and optionally ``aggregator=``, ``client=``, ``cost_rank=``
    class arguments. Subclasses declare ``report_fields`` and implement ``_encode`` (check
    items), ``_privatize`` (the randomizer) and ``params``.
    """

    name: ClassVar[str] = ""
    family: ClassVar[str] = ""
    report_fields: ClassVar[Tuple[ReportField, ...]] = ()
    aggregator_class: ClassVar[Type["Aggregator"]]
    client_class: ClassVar[Type["Client"]]
    #: options that make a small instance, for tests, demos and benchmarks that iterate the registry
    example_options: ClassVar[Dict[str, Any]] = {}
    _registry: ClassVar[Dict[str, Type["Configuration"]]]
    _state_magic: ClassVar[bytes]
    _reports_magic: ClassVar[bytes]
    _header_key: ClassVar[str] = "protocol"
    _label: ClassVar[str] = ""
    _noun: ClassVar[str] = "protocol"

    def __init_subclass__(cls, *, family: Optional[str] = None, name: Optional[str] = None,
                          aggregator: Optional[Type["Aggregator"]] = None, client: Optional[Type["Client"]] = None,
                          cost_rank: Optional[int] = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if family is not None:
            cls.family = family
            cls._registry = {}
            _FAMILIES[family] = cls
        if aggregator is not None:
            cls.aggregator_class = aggregator
        if client is not None:
            cls.client_class = client
        if cost_rank is not None:
            cls.cost_rank = cost_rank  # type: ignore[attr-defined]
        if name is not None:
            cls.name = name
            cls._registry[name] = cls

    # -- shared ---------------------------------------------------------------------------------
    def _init_epsilon(self, epsilon: Any) -> None:
        self.epsilon = check_epsilon(epsilon)
        self.gamma = exact_gamma(self.epsilon)

    @classmethod
    def registered(cls) -> Dict[str, Type["Configuration"]]:
        """The registered configurations of this family, by name."""
        return dict(cls._registry)

    @staticmethod
    def families() -> Dict[str, Type["Configuration"]]:
        """Every family base (frequency oracles, heavy hitters, ...), by family name."""
        return dict(_FAMILIES)

    @classmethod
    def example(cls, epsilon: float = 2.0) -> "Configuration":
        """A small instance of this registered configuration (its ``example_options``), for
        tests, demos and benchmarks that iterate the registry."""
        raise NotImplementedError

    def example_items(self, n: int, seed: int = 0) -> Any:
        """``n`` items with a few frequent ones (a Zipf-like law), as this configuration's
        clients take them: for tests, demos and benchmarks."""
        raise NotImplementedError

    def params(self) -> Dict[str, Any]:
        """Everything that must agree between clients, aggregators and serialised states."""
        raise NotImplementedError

    def fingerprint(self) -> Tuple[Tuple[str, Any], ...]:
        """The parameters as a hashable, comparable tuple."""
        return tuple(sorted((k, v if not isinstance(v, np.ndarray) else v.tobytes()) for k, v in self.params().items()))

    def to_json(self) -> str:
        """The configuration as JSON text (family, name, exact parameters): what travels to
        executors, into Parquet metadata and anywhere a configuration must be rebuilt exactly.
        :meth:`from_json` is its inverse."""
        return json.dumps({"family": self.family, "name": self.name, "params": _wire.jsonable(self.params())},
                          sort_keys=True)

    @staticmethod
    def from_json(text: Any) -> "Configuration":
        """The configuration :meth:`to_json` wrote.

        Raises
        ------
        ValueError
            For text that is not such JSON, an unknown family or name, or parameters that are
            missing, extra or inconsistent.
        """
        if isinstance(text, (bytes, bytearray)):
            text = bytes(text).decode("utf-8", "replace")
        if not isinstance(text, str):
            raise TypeError(f"text must be str, got {type(text).__name__}")
        try:
            doc = json.loads(text)
            fam = _FAMILIES[doc["family"]]
        except (ValueError, KeyError, TypeError, RecursionError) as exc:
            raise ValueError(f"not a dpnoise LDP configuration ({type(exc).__name__})") from None
        return fam._from_header({fam._header_key: doc.get("name"), "params": doc.get("params")}, "configuration")

    def privacy_loss(self) -> PrivacyLoss:
        """Each user's report is ε-LDP: pure ε for that user's data."""
        return PureDP(self.epsilon)

    def client(self, rng: Optional[Generator] = None, *, allow_insecure: bool = False) -> "Client":
        """A randomizer. ``rng`` must be secure (the default) unless ``allow_insecure=True``."""
        return self.client_class(self, rng, allow_insecure=allow_insecure)

    def aggregator(self) -> "Aggregator":
        """An empty aggregator of this configuration."""
        return self.aggregator_class(self)

    def _reports(self, n: int, data: Dict[str, np.ndarray]) -> Reports:
        return Reports(self.name, self.fingerprint(), n, data, self.family)

    def reports(self, data: Dict[str, np.ndarray], n: int) -> Reports:
        """A :class:`Reports` batch of this configuration from its arrays.

        Parameters
        ----------
        data : dict of str to numpy.ndarray
            Exactly the declared ``report_fields`` (names, dtypes, shapes for ``n`` reports).
        n : int
            The number of reports.

        Raises
        ------
        ValueError
            If the arrays do not match the declared schema (value ranges are checked when the
            batch is added to an aggregator).
        """
        check_arrays(self.report_fields, self, data, n, self.name)
        return self._reports(n, data)

    def _encode(self, items: Any) -> np.ndarray:
        """The checked items as the array the randomizer takes."""
        raise NotImplementedError

    def _privatize(self, rng: Generator, items: np.ndarray, threads: int) -> Dict[str, np.ndarray]:
        raise NotImplementedError

    def valid_rows(self, data: Dict[str, np.ndarray], n: int) -> np.ndarray:
        """A boolean mask of the reports whose values this configuration accepts (every
        declared field's range, plus the configuration's own per-row rules), in one vectorised
        pass: O(batch), whatever the share of bad rows. ``data`` must match the schema."""
        ok = np.ones(n, dtype=bool)
        for m in value_masks(self.report_fields, self, data, n).values():
            ok &= m
        return ok & self._extra_row_mask(data, n)

    def _extra_row_mask(self, data: Dict[str, np.ndarray], n: int) -> np.ndarray:
        """Per-row rules beyond the declared fields' ranges (default: none)."""
        return np.ones(n, dtype=bool)

    def _check_loaded_reports(self, arrays: Dict[str, np.ndarray], n: int, what: str) -> None:
        """Checks of a loaded report batch (default: none; they are checked when added)."""

    @classmethod
    def _from_header(cls, header: Dict[str, Any], what: str) -> "Configuration":
        """The configuration a serialised header names, rebuilt from its parameters; ValueError
        for an unknown name or parameters that are missing, extra, malformed or inconsistent."""
        try:
            sub = cls._registry[header[cls._header_key]]
            if not isinstance(header["params"], dict):
                raise TypeError("params must be a JSON object")
            return sub.from_params(_wire.from_jsonable(header["params"]))
        except (KeyError, TypeError, ValueError, IndexError, ZeroDivisionError, AttributeError, OverflowError,
                RecursionError) as exc:
            raise ValueError(f"corrupt {what}: unknown {cls._noun} or bad parameters ({type(exc).__name__})") from None

    @classmethod
    def from_params(cls, params: Dict[str, Any]) -> "Configuration":
        """The configuration whose ``params()`` are exactly ``params``: a missing parameter is
        never filled with a default (a dropped public key would silently give another
        configuration). ValueError otherwise."""
        config = cls._construct(dict(params))
        if config.params() != params:
            raise ValueError("the parameters are incomplete or inconsistent (epsilon and its exact rational, "
                             "or an option filled with its default)")
        return config

    @classmethod
    def _construct(cls, params: Dict[str, Any]) -> "Configuration":
        raise NotImplementedError

    def __eq__(self, other: Any) -> bool:
        return type(other) is type(self) and other.fingerprint() == self.fingerprint()

    def __hash__(self) -> int:
        return hash((self.name, self.fingerprint()))


# -------------------------------------------------------------------------------------- Client
class Client:
    """The randomizer side of a configuration: ``privatize(items)`` -> :class:`Reports`.

    Parameters
    ----------
    protocol : Configuration
        The configuration to randomize for.
    rng : dpnoise.Generator, optional
        The secret generator (default: a fresh OS-keyed one). A seeded generator is refused
        unless ``allow_insecure=True``.
    """

    def __init__(self, protocol: Configuration, rng: Optional[Generator], *, allow_insecure: bool = False) -> None:
        self.protocol = protocol
        self.rng = client_rng(rng, allow_insecure)

    def privatize(self, items: Any, *, threads: Optional[int] = None) -> Reports:
        """One ε-LDP report per item (each item one user's value).

        Parameters
        ----------
        items : array_like
            One item per user, as the configuration takes them (see its ``_encode``).
        threads : int, optional
            Worker threads (the output does not depend on it).

        Returns
        -------
        Reports
        """
        t = check_threads(threads)
        x = self.protocol._encode(items)
        data = self.protocol._privatize(self.rng, x, t)
        return self.protocol._reports(int(x.shape[0]), data)


# ---------------------------------------------------------------------------------- Aggregator
class Aggregator:
    """The server side of a configuration: ``add`` report batches (streaming), ``merge`` other
    aggregators of the same configuration, serialise with ``to_bytes``/``from_bytes``, and
    estimate.

    Subclasses keep their state in named NumPy arrays (``_state``) and implement
    ``_empty_state``, ``_check_batch`` (value ranges; the arrays' names, dtypes and shapes are
    checked from the declared schema before it), ``_ingest`` and ``_estimate``. Anything derived
    from the state goes in ``self._cache``, which every change clears.
    """

    #: state arrays whose first axis may grow with the reports (e.g. packed columns)
    _growable: ClassVar[frozenset] = frozenset()

    def __init__(self, protocol: Configuration) -> None:
        self.protocol = protocol
        self.n = 0
        self._cache: Dict[str, Any] = {}
        self._state: Dict[str, np.ndarray] = self._empty_state()

    # -- to override -----------------------------------------------------------------------
    def _empty_state(self) -> Dict[str, np.ndarray]:
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

    def _check_state(self, state: Dict[str, np.ndarray], n: int) -> None:
        """Validate a loaded state beyond names, dtypes and shapes (ValueError if inconsistent
        with the configuration or with ``n``); default: nothing more to check."""

    def _merge_state(self, other: "Aggregator") -> None:
        """Default: states add up element-wise."""
        for k, v in other._state.items():
            self._state[k] = self._state[k] + v

    def _after_load(self) -> None:
        """Hook for configurations with more to check or derive once a state is loaded."""

    # -- shared --------------------------------------------------------------------------------
    def _same_protocol(self, what: str, name: str, fingerprint: Any) -> None:
        if name != self.protocol.name or fingerprint != self.protocol.fingerprint():
            raise ValueError(f"{what} come from a different configuration ({name!r}); this aggregator is "
                             f"{self.protocol!r}")

    def _changed(self) -> None:
        self._cache.clear()

    def add(self, reports: Reports) -> "Aggregator":
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

    def merge(self, other: "Aggregator") -> "Aggregator":
        """Add another aggregator's reports (same configuration only). Returns self.

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

    def _check_room(self, more: int) -> None:
        if self.n + more > MAX_REPORTS:
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
        terms use the clipped estimates as the counts)."""
        est = self._estimates()
        counts = np.clip(est, 0, self.n) if self.n else np.zeros(est.shape)
        var = self.protocol.variance(self.n, counts)
        return var if items is None else var[self.protocol._query(items)]

    def stderr(self, items: Any = None) -> np.ndarray:
        """The square root of :meth:`variance`: each estimate's standard error."""
        return np.sqrt(self.variance(items))

    def _records(self, idx: np.ndarray) -> List[HeavyHitter]:
        est = self._estimates()[idx]
        se = np.sqrt(np.maximum(self.variance()[idx], 0))
        return [HeavyHitter(int(i), float(e), float(s), float(e - Z95 * s), float(e + Z95 * s))
                for i, e, s in zip(idx, est, se)]

    def top(self, m: Any = 10) -> List[HeavyHitter]:
        """The m items with the largest estimates, largest first (ties: the smaller item), as
        HeavyHitter(item, estimate, stderr, ci_low, ci_high).

        The intervals are per item (normal, 95%): when many items are looked at, about 5% of
        the intervals miss their true count, and the largest estimates are biased upward by
        the selection itself (the winner's curse); widen to a Bonferroni level for a
        simultaneous statement.

        Raises
        ------
        ValueError
            If m is not in [1, domain_size].
        """
        from .._validate import integer

        d = self._estimates().size
        m = integer(m, "m")
        if not 1 <= m <= d:
            raise ValueError(f"m must be in [1, {d}] (domain_size), got {m}")
        est = self._estimates()
        idx = np.argpartition(-est, m - 1)[:m] if m < d else np.arange(d)
        idx = idx[np.lexsort((idx, -est[idx]))]
        return self._records(idx)

    def above(self, count: Any) -> List[HeavyHitter]:
        """The items whose estimate is at least ``count``, largest first (see :meth:`top` for
        what the intervals cover)."""
        if isinstance(count, (bool, np.bool_)) or not isinstance(count, (int, float, np.integer, np.floating)):
            raise TypeError(f"count must be a number, got {type(count).__name__}")
        c = float(count)
        if not np.isfinite(c):
            raise ValueError(f"count must be finite, got {count!r}")
        est = self._estimates()
        idx = np.flatnonzero(est >= c)
        idx = idx[np.lexsort((idx, -est[idx]))]
        return self._records(idx)

    # -- serialisation ---------------------------------------------------------------------------
    def to_bytes(self) -> bytes:
        """The state as bytes: magic, format version, a JSON header (configuration, parameters,
        n, array names/dtypes/shapes), the arrays, and a SHA-256 of everything before it."""
        cfg = self.protocol
        header = {cfg._header_key: cfg.name, "params": _wire.jsonable(cfg.params()), "n": self.n}
        return _wire.frame(cfg._state_magic, header, sorted(self._state.items()))

    @classmethod
    def _load(cls, blob: Any, **aggregator_options: Any) -> "Aggregator":
        fam = _family_of_magic(blob, "_state_magic")
        what = f"{fam._label}aggregator state"
        header, state = _wire.unframe(blob, fam._state_magic, what)
        config = fam._from_header(header, what)
        n = _wire.count_of(header, what, MAX_REPORTS)
        agg = config.aggregator(**aggregator_options)  # type: ignore[call-arg]
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
    def from_bytes(cls, blob: bytes) -> "Aggregator":
        """The aggregator serialised by :meth:`to_bytes`.

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
