"""The one envelope every local-DP configuration shares: frequency oracles, heavy hitters and
whatever family comes next.

* :class:`Configuration` owns ε and its exact rational γ, ``params()``, ``fingerprint()``, the
  registry, ``privacy_loss()``, ``client()`` and ``aggregator()``. A family (frequency oracles,
  heavy hitters) is a subclass declared with ``family=...``; a protocol is a subclass of a
  family declared with its metadata as class arguments, registered by ``__init_subclass__``::

      class GRR(FrequencyConfiguration, name="grr", aggregator=GRRAggregator, cost_rank=0):
          report_fields = (ReportField("values", PER_USER, np.int64),)

* :class:`Reports` is one batch of randomized reports (the configuration's fingerprint, the
  number of users and the declared arrays).
* :class:`Client` turns items into reports; the configuration's ``_encode`` checks the items and
  its ``_privatize`` calls the C++ randomizer through :func:`native` (the one place that reaches
  into a :class:`dpnoise.Generator`).
* :class:`Aggregator` (dpnoise.ldp._aggregator) is the server; :class:`Reports`
  (dpnoise.ldp._reports) a batch of reports; the family registry is dpnoise.ldp._registry.

Model: google/differential-privacy ``cc/algorithms/algorithm.h`` (one AddEntry / Serialize /
Merge envelope for every aggregation) and boost-histogram's storages (metadata as class
arguments).
"""
from __future__ import annotations

import json
from typing import Any, ClassVar

import numpy as np

from .._validate import check_threads
from ..accounting.losses import PrivacyLoss
from ..generator import Generator, secure_generator
from . import _wire
from ._aggregator import Aggregator
from ._kernels import Kernels, KernelTable
from ._memo import check_device_key, check_device_keys, memo_fingerprint, memoised_batch, memoised_reports
from ._privacy import (
    check_budget,
    check_constant_time,
    check_epsilon,
    check_instantaneous,
    exact_gamma,
    report_loss,
    supporting,
)
from ._registry import FAMILIES, from_json
from ._reports import Reports
from ._schema import ReportField, check_arrays, value_masks


def native(rng: Generator) -> Any:
    """The C++ generator behind a :class:`dpnoise.Generator`: the one boundary through which LDP
    randomizers reach the secret stream."""
    return rng._core


class Configuration:
    """Base of every LDP configuration (frequency oracle, heavy hitters, ...).

    A family subclasses it with ``family="..."`` (and its wire magics); a protocol subclasses a
    family with ``name="..."`` and optionally ``aggregator=``, ``client=``, ``cost_rank=``
    class arguments. Subclasses declare ``report_fields`` and implement ``_encode`` (check
    items), ``_privatize`` (the randomizer) and ``params``.
    """

    name: ClassVar[str] = ""
    family: ClassVar[str] = ""
    #: declared on the class; a configuration whose fields depend on its options (the mean
    #: oracles' coordinates) sets its own on the instance
    report_fields: tuple[ReportField, ...] = ()
    aggregator_class: ClassVar[type[Aggregator]]
    client_class: ClassVar[type[Client]]
    #: options that make a small instance, for tests, demos and benchmarks that iterate the registry
    example_options: ClassVar[dict[str, Any]] = {}
    _registry: ClassVar[dict[str, type[Configuration]]]
    _state_magic: ClassVar[bytes]
    _reports_magic: ClassVar[bytes]
    _header_key: ClassVar[str] = "protocol"
    _label: ClassVar[str] = ""
    _noun: ClassVar[str] = "protocol"
    #: supports daily collection: ``client(device_key=)`` and ``instantaneous_epsilon=``
    longitudinal: ClassVar[bool] = False
    #: the class's kernels, one row per variant (dpnoise.ldp._kernels): the envelope picks the
    #: row (``kernels``); a class without a constant-time row refuses ``constant_time=True``
    kernel_table: ClassVar[KernelTable] = KernelTable()
    #: a frequency oracle's rank among tied variances (dpnoise.ldp._choose), from ``cost_rank=``
    cost_rank: ClassVar[int | None]
    #: the variants of this instance (set by ``_init_variants``): constant-time kernels, and
    #: daily collection's per-report layer at ε₁ (its exact rational γ₁)
    constant_time: bool = False
    instantaneous_epsilon: float | None = None
    gamma1: Any = None

    def __init_subclass__(cls, *, family: str | None = None, name: str | None = None,
                          aggregator: type[Aggregator] | None = None, client: type[Client] | None = None,
                          cost_rank: int | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if family is not None:
            cls.family = family
            cls._registry = {}
            FAMILIES[family] = cls
        if aggregator is not None:
            cls.aggregator_class = aggregator
        if client is not None:
            cls.client_class = client
        if cost_rank is not None:
            cls.cost_rank = cost_rank
        if name is not None:
            cls.name = name
            cls._registry[name] = cls

    # -- shared ---------------------------------------------------------------------------------
    def _init_epsilon(self, epsilon: Any) -> None:
        self.epsilon = check_epsilon(epsilon)
        self.gamma = exact_gamma(self.epsilon)

    def _init_variants(self, constant_time: Any, instantaneous_epsilon: Any, what: str) -> None:
        """Check and set the instance's variants: daily collection (``instantaneous_epsilon``,
        for a class declaring ``longitudinal``) and ``constant_time`` (for a class whose kernel
        table has a constant-time row); ValueError naming the argument and the configurations
        that support it otherwise (``what`` names this one)."""
        self.instantaneous_epsilon, self.gamma1 = check_instantaneous(self, instantaneous_epsilon)
        self.constant_time = check_constant_time(self, constant_time, what)

    @classmethod
    def supports(cls, variant: str) -> bool:
        """Whether this configuration class supports a variant, as its class declares it.

        Parameters
        ----------
        variant : {"daily", "constant_time"}
            Daily collection (``instantaneous_epsilon=``, ``client(device_key=)``), or
            constant-time kernels (``constant_time=True``).

        Returns
        -------
        bool

        Raises
        ------
        ValueError
            For another variant.
        """
        if variant == "daily":
            return bool(cls.longitudinal)
        if variant == "constant_time":
            return cls.kernel_table.has("constant_time")
        raise ValueError(f"variant must be 'daily' or 'constant_time', got {variant!r}")

    @property
    def kernels(self) -> Kernels:
        """The row of the class's kernel table this instance's variant selects."""
        table = self.kernel_table
        row = table.constant_time if self.constant_time else table.variable_time  # (table.row, inlined)
        assert row is not None  # constant_time=True is refused where the table has no such row
        return row

    def _variant_params(self) -> dict[str, Any]:
        """The variants' part of ``params()``, recorded only when set (older blobs and params keep
        matching): ``constant_time``, and ε₁ with its exact rational γ₁."""
        out: dict[str, Any] = {"constant_time": True} if self.constant_time else {}
        if self.gamma1 is not None:
            out.update(instantaneous_epsilon=self.instantaneous_epsilon, instantaneous_gamma=self.gamma1)
        return out

    @staticmethod
    def _variant_options(params: dict[str, Any]) -> dict[str, Any]:
        """The variants' constructor arguments, popped from a ``params()`` dict (γ₁ dropped: the
        constructor derives it from ε₁ and ``from_params`` compares the two)."""
        params.pop("instantaneous_gamma", None)
        return {"constant_time": params.pop("constant_time", False),
                "instantaneous_epsilon": params.pop("instantaneous_epsilon", None)}

    def _variant_repr(self) -> str:
        """The variants as constructor arguments, for ``repr``."""
        out = ", constant_time=True" if self.constant_time else ""
        return out + (f", instantaneous_epsilon={self.instantaneous_epsilon}" if self.gamma1 is not None else "")

    @classmethod
    def registered(cls) -> dict[str, type[Configuration]]:
        """The registered configurations of this family, by name.

        Returns
        -------
        dict of str to type
            A copy of the family's registry.
        """
        return dict(cls._registry)

    @staticmethod
    def families() -> dict[str, type[Configuration]]:
        """Every family base (frequency oracles, heavy hitters, ...), by family name.

        Returns
        -------
        dict of str to type
            A copy.
        """
        return dict(FAMILIES)

    @classmethod
    def example(cls, epsilon: float = 2.0) -> Configuration:
        """A small instance of this registered configuration (its ``example_options``), for
        tests, demos and benchmarks that iterate the registry.

        Parameters
        ----------
        epsilon : float, default 2.0
            The instance's ε.

        Returns
        -------
        Configuration
            An instance of ``cls``.

        Raises
        ------
        NotImplementedError
            On a family base.
        """
        raise NotImplementedError

    def item_domain(self) -> tuple[str, int | None]:
        """What one item of this configuration is, for readers that check items outside Python
        (Spark's ``privatize_column`` checks a column in one Spark aggregate before any job).

        Returns
        -------
        (kind, bound)
            ``("int", d)``: integers in [0, d); ``("str", m)`` or ``("bytes", m)``: strings of at
            most m bytes (``m`` None: any length); ``("real", None)``: real values.

        Raises
        ------
        NotImplementedError
            On a family base.
        """
        raise NotImplementedError

    def example_items(self, n: int, seed: int = 0) -> Any:
        """``n`` items with a few frequent ones (a Zipf-like law), as this configuration's
        clients take them: for tests, demos and benchmarks.

        Parameters
        ----------
        n : int
            How many items.
        seed : int, default 0
            NumPy seed (test data, never privacy noise).

        Returns
        -------
        numpy.ndarray or list
            ``n`` items of the kind ``client().privatize`` takes.

        Raises
        ------
        NotImplementedError
            On a family base.
        """
        raise NotImplementedError

    def params(self) -> dict[str, Any]:
        """Everything that must agree between clients, aggregators and serialised states.

        Returns
        -------
        dict of str to Any
            ε, its exact γ and the configuration's options and public keys.

        Raises
        ------
        NotImplementedError
            On a family base.
        """
        raise NotImplementedError

    def fingerprint(self) -> tuple[tuple[str, Any], ...]:
        """The parameters as a hashable, comparable tuple.

        Returns
        -------
        tuple of (str, Any)
            Sorted ``params()`` items (arrays as bytes).
        """
        return tuple(sorted((k, v if not isinstance(v, np.ndarray) else v.tobytes()) for k, v in self.params().items()))

    def to_json(self) -> str:
        """The configuration as JSON text (family, name, exact parameters): what travels to
        executors, into Parquet metadata and anywhere a configuration must be rebuilt exactly.
        :meth:`from_json` is its inverse.

        Returns
        -------
        str
            Sorted-key JSON.
        """
        return json.dumps({"family": self.family, "name": self.name, "params": _wire.jsonable(self.params())},
                          sort_keys=True)

    @staticmethod
    def from_json(text: Any) -> Configuration:
        """The configuration :meth:`to_json` wrote.

        Parameters
        ----------
        text : str
            JSON text.

        Returns
        -------
        Configuration
            The same configuration (equal ``fingerprint()``).

        Raises
        ------
        ValueError
            For text that is not such JSON, an unknown family or name, or parameters that are
            missing, extra or inconsistent.
        """
        return from_json(text)

    def privacy_loss(self) -> PrivacyLoss:
        """What one report is charged, by one rule for every family
        (dpnoise.ldp._privacy.report_loss): ``PureDP(ε)``; with ``instantaneous_epsilon`` a
        ``dpnoise.ldp.longitudinal.LongitudinalDP`` stating both layers (ε∞ = ``epsilon``
        for all reports of one item together, min(ε₁, ε∞) per report); with ``constant_time=True``
        widened by the total variation of the kernel row's decisions, m∞ (and m₁) per report:
        ``ApproxDP(ε, (1 + e^ε)·m∞·2^-64)``, or ``WithinTotalVariation(LongitudinalDP(...),
        (m∞ + m₁)·2^-64)`` with both variants.

        Returns
        -------
        dpnoise.accounting.PrivacyLoss
            PureDP, LongitudinalDP, ApproxDP or WithinTotalVariation.
        """
        row = self.kernels
        draws = (row.draws(self), row.instantaneous_draws(self)) if self.constant_time else None
        return report_loss(self.epsilon, self.instantaneous_epsilon, draws)

    def client(self, rng: Generator | None = None, *, allow_insecure: bool = False, budget: Any = None,
               device_key: Any = None) -> Client:
        """A randomizer.

        Parameters
        ----------
        rng : dpnoise.Generator, optional
            The secret generator (default: a fresh OS-keyed one); a seeded one is refused unless
            ``allow_insecure=True``.
        allow_insecure : bool
            Accept a seeded generator (tests only).
        budget : dpnoise.accounting.PrivacyBudget, optional
            Charged :meth:`privacy_loss` once per report, before any randomness is drawn (and
            nothing when the items are refused).
        device_key : bytes, optional
            32 secret bytes of one device: its permanent randomisation is memoised as a PRF of
            (device key, item, configuration), so reporting the same item every day reveals no
            more than one report at ε∞ (docs/ldp.md, "Daily collection"). Only the protocols
            with ``longitudinal`` support it.

        Returns
        -------
        Client

        Raises
        ------
        TypeError
            For an ``rng``, ``budget`` or ``device_key`` of the wrong type.
        ValueError
            For a ``device_key`` that is not 32 bytes, or one given to a configuration that
            cannot memoise.
        """
        key = None if device_key is None else self._check_device_key(device_key)
        client = self.client_class(self, rng, allow_insecure=allow_insecure)
        client.budget = check_budget(budget, self.privacy_loss())
        client.device_key = key
        client.memo_fingerprint = None if key is None else memo_fingerprint(self)
        return client

    def _check_device_key(self, device_key: Any) -> bytes:
        key = check_device_key(device_key)
        if not self.supports("daily"):
            raise ValueError(f"device_key (memoised daily collection) is supported by the protocols "
                             f"{supporting(self, 'daily')} only, not {self.name!r}")
        return key

    def _memo_rows_kernel(self, keys: np.ndarray, fingerprint: bytes, person: bytes, items: np.ndarray,
                          threads: int) -> dict[str, np.ndarray] | None:
        """The permanent answers of memoised rows from a C++ keyed-row kernel; None (the default:
        the per-row generator path of longitudinal.memoised_batch) where there is none."""
        return None

    def _instantaneous(self, rng: Generator, data: dict[str, np.ndarray], n: int,
                       threads: int) -> dict[str, np.ndarray]:
        """The per-report layer at γ₁ over the ``n`` (permanent) answers ``data``: called by the
        envelope only for a configuration with ``instantaneous_epsilon`` (daily collection), so a
        class declaring ``longitudinal`` implements it."""
        raise NotImplementedError

    def _memoised(self, device_key: bytes, fingerprint: bytes, items: np.ndarray) -> dict[str, np.ndarray]:
        """One device's permanent answers for the checked ``items`` (dpnoise.ldp._memo); a family
        whose PRF input is not the item (the mean oracles' rounded grid index) overrides it."""
        return memoised_reports(self, device_key, fingerprint, items)

    def aggregator(self) -> Aggregator:
        """An empty aggregator of this configuration.

        Returns
        -------
        Aggregator
            With no reports.
        """
        return self.aggregator_class(self)

    def _reports(self, n: int, data: dict[str, np.ndarray]) -> Reports:
        return Reports(self.name, self._kept_fingerprint(), n, data, self.family)

    def _kept_fingerprint(self) -> tuple[tuple[str, Any], ...]:
        """fingerprint(), kept once the configuration makes reports (it is complete by then)."""
        fingerprint = self.__dict__.get("_reports_fingerprint")
        if fingerprint is None:
            fingerprint = self.__dict__["_reports_fingerprint"] = self.fingerprint()
        return fingerprint

    def _client_reports(self, n: int, data: dict[str, np.ndarray]) -> Reports:
        """The batch this configuration's own client just randomized: ``n`` an int and ``data``
        the kernels' arrays, right by construction, so not checked again one call at a time
        (families with their own ``_reports`` keep it)."""
        if type(self)._reports is not Configuration._reports:
            return self._reports(n, data)
        return Reports._made(self.name, self._kept_fingerprint(), n, data, self.family)

    def reports(self, data: dict[str, np.ndarray], n: int) -> Reports:
        """A :class:`Reports` batch of this configuration from its arrays.

        Parameters
        ----------
        data : dict of str to numpy.ndarray
            Exactly the declared ``report_fields`` (names, dtypes, shapes for ``n`` reports).
        n : int
            The number of reports.

        Returns
        -------
        Reports
            The batch (the arrays are not copied).

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

    def _privatize(self, rng: Generator, items: np.ndarray, threads: int) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def _privatize_permanent(self, rng: Generator, items: np.ndarray, threads: int) -> dict[str, np.ndarray]:
        """The randomizer of memoised (permanent) answers, on a device's PRF stream
        (dpnoise.ldp._memo). It must draw the same answer from the same stream in every version,
        or an upgraded device would send a second, independent permanent answer for an item it
        reported before. Default: ``_privatize``; a protocol whose fresh randomizer changes how it
        reads its stream keeps the old reader here (the mean oracles: docs/reproducibility.md)."""
        return self._privatize(rng, items, threads)

    def valid_rows(self, data: dict[str, np.ndarray], n: int) -> np.ndarray:
        """A boolean mask of the reports whose values this configuration accepts (every
        declared field's range, plus the configuration's own per-row rules), in one vectorised
        pass: O(batch), whatever the share of bad rows. ``data`` must match the schema.

        Parameters
        ----------
        data : dict of str to numpy.ndarray
            The report arrays.
        n : int
            The number of reports.

        Returns
        -------
        numpy.ndarray of bool
            Shape (n,): True for a valid report.
        """
        ok = np.ones(n, dtype=bool)
        for m in value_masks(self.report_fields, self, data, n).values():
            ok &= m
        return ok & self._extra_row_mask(data, n)

    def _extra_row_mask(self, data: dict[str, np.ndarray], n: int) -> np.ndarray:
        """Per-row rules beyond the declared fields' ranges (default: none)."""
        return np.ones(n, dtype=bool)

    def _check_loaded_reports(self, arrays: dict[str, np.ndarray], n: int, what: str) -> None:
        """Checks of a loaded report batch (default: none; they are checked when added)."""

    @classmethod
    def _from_header(cls, header: dict[str, Any], what: str) -> Configuration:
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
    def from_params(cls, params: dict[str, Any]) -> Configuration:
        """The configuration whose ``params()`` are exactly ``params``: a missing parameter is
        never filled with a default (a dropped public key would silently give another
        configuration). ValueError otherwise.

        Parameters
        ----------
        params : dict
            A ``params()`` dict.

        Returns
        -------
        Configuration
            The configuration, of class ``cls``.

        Raises
        ------
        ValueError
            If parameters are missing, extra or inconsistent.
        """
        config = cls._construct(dict(params))
        if config.params() != params:
            raise ValueError("the parameters are incomplete or inconsistent (epsilon and its exact rational, "
                             "or an option filled with its default)")
        return config

    @classmethod
    def _construct(cls, params: dict[str, Any]) -> Configuration:
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

    budget: Any = None
    device_key: bytes | None = None
    memo_fingerprint: bytes | None = None

    def __init__(self, protocol: Configuration, rng: Generator | None, *, allow_insecure: bool = False) -> None:
        self.protocol = protocol
        self.rng = secure_generator(rng, allow_insecure)

    def _charge(self, n: int) -> None:
        """Charge the bound budget for n reports: after every check, before any randomness."""
        if self.budget is not None and n:
            self.budget.spend(self.protocol.privacy_loss(), count=n, label=f"ldp {self.protocol.name}",
                              insecure=not self.rng.is_secure)

    def _randomize(self, x: np.ndarray, threads: int, keys: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """The report arrays of the checked items, daily collection's one code path for every
        family: the permanent layer (memoised with the client's device key or one key per row,
        else fresh), then, with ``instantaneous_epsilon``, the per-report layer over it."""
        config = self.protocol
        if keys is not None:
            data = memoised_batch(config, keys, memo_fingerprint(config), x, threads)
        elif self.device_key is not None:
            assert self.memo_fingerprint is not None  # client() sets it with device_key
            data = config._memoised(self.device_key, self.memo_fingerprint, x)
        else:
            data = config._privatize(self.rng, x, threads)
        return data if config.gamma1 is None else config._instantaneous(self.rng, data, int(x.shape[0]), threads)

    def privatize(self, items: Any, *, threads: int | None = None, device_keys: Any = None) -> Reports:
        """One ε-LDP report per item (each item one user's value).

        Parameters
        ----------
        items : array_like
            One item per user, as the configuration takes them (see its ``_encode``).
        threads : int, optional
            Worker threads (the output does not depend on it).
        device_keys : uint8 array (len(items), 32) or sequence of bytes, optional
            Daily collection for many devices at once (a server-side simulation, a gateway):
            row i is memoised with key i, the same report as
            ``client(device_key=keys[i]).privatize([items[i]])`` (docs/ldp.md, "Daily collection").

        Returns
        -------
        Reports

        Raises
        ------
        TypeError, ValueError
            For items the configuration does not take, or ``device_keys`` that are not one 32-byte
            key per item or given where memoising is not supported (nothing is charged).
        dpnoise.BudgetExceededError
            When the client's budget cannot pay for ``len(items)`` reports (nothing is drawn).
        """
        t = check_threads(threads)
        x = self.protocol._encode(items)
        keys = None if device_keys is None else check_device_keys(self, device_keys, int(x.shape[0]))
        self._charge(int(x.shape[0]))
        return self.protocol._client_reports(int(x.shape[0]), self._randomize(x, t, keys))
