"""Numeric mean and sum oracles under local DP: ``MeanOracle(method, epsilon, bounds=(low, high))``.

Each user holds a number (or a vector of ``dimensions`` numbers, of which one uniformly chosen
coordinate is reported, as in Wang et al., ICDE 2019, §IV). The value is clipped to the bounds,
mapped exactly to t in [-1, 1] on a 2^-32 grid (randomized rounding, unbiased) and randomized
by one of:

- ``"duchi"``: Duchi, Jordan & Wainwright (JASA 2018), one bit: ±C, C = (e^ε + 1)/(e^ε − 1);
- ``"bitmean"``: 1BitMean (Ding, Kulkarni & Yekhanin, NeurIPS 2017), the same bit read as
  P(1) = 1/(e^ε + 1) + (x/m)(e^ε − 1)/(e^ε + 1);
- ``"piecewise"``: Wang et al. (ICDE 2019), on a dyadic output grid (docs/ldp_numeric.md);
- ``"hybrid"``: Wang et al. (ICDE 2019): Piecewise with probability 1 − e^{−ε/2}, else Duchi.

All random decisions are exact (C++: cpp/include/dpnoise/ldp/mean_mechanisms.hpp). The server
keeps exact integer sums; ``mean()`` is unbiased for the clipped values' mean (not clipped to
the bounds) and ``mean_stderr()`` is the reports' sample standard error, capped at the worst case.

    oracle = dpnoise.ldp.MeanOracle("hybrid", epsilon=1.0, bounds=(0, 600))
    reports = oracle.client().privatize(minutes)
    agg = oracle.aggregator().add(reports)
    agg.mean(), agg.mean_stderr(), agg.sum(), agg.sum_stderr()
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Any, Dict, Optional, Tuple

import numpy as np

from ... import _core
from ..._validate import check_threads, integer
from ...accounting.losses import PrivacyLoss, PureDP
from ...generator import Generator
from .._protocol import MAX_REPORTS, _frame, _jsonable, _from_jsonable, _unframe, check_epsilon, client_rng, \
    exact_gamma
from . import _formulas as F

METHODS = ("duchi", "piecewise", "hybrid", "bitmean")
_KERNEL = {"duchi": 0, "bitmean": 0, "piecewise": 1, "hybrid": 2}  # mean_mechanisms.hpp's Method
MAX_DIMENSIONS = 1 << 20
NAME = "mean"
_STATE_MAGIC = b"DPNOISE-MEAN"
_REPORTS_MAGIC = b"DPNOISE-MNRP"


def _bound(value: Any, name: str) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    try:
        v = float(value)
    except OverflowError:
        raise ValueError(f"{name} must be a finite number") from None
    if not math.isfinite(v):
        raise ValueError(f"{name} must be a finite number, got {v!r}")
    return v + 0.0


def check_bounds(bounds: Any) -> Tuple[float, float]:
    """(low, high): finite reals with low < high and high − low finite."""
    if not isinstance(bounds, (tuple, list)) or len(bounds) != 2:
        raise TypeError("bounds must be a pair (low, high)")
    low, high = _bound(bounds[0], "bounds[0] (low)"), _bound(bounds[1], "bounds[1] (high)")
    if not low < high:
        raise ValueError(f"bounds must satisfy low < high, got ({low!r}, {high!r})")
    if not math.isfinite(high - low):
        raise ValueError("bounds: high − low must be a finite double")
    return low, high


def check_values(values: Any, dimensions: int) -> np.ndarray:
    """Float64, C-contiguous, shape (n,) (one dimension) or (n, dimensions). TypeError for
    non-numeric input; NaN and ±inf are refused by the kernel (ValueError). No message echoes
    a value."""
    try:
        arr = np.asarray(values)
    except (ValueError, TypeError):
        raise TypeError("values must be an array of real numbers") from None
    if arr.size == 0 and not isinstance(values, np.ndarray):
        arr = arr.astype(np.float64).reshape((0,) if dimensions == 1 else (0, dimensions))
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"values must be real numbers (integer or float), got dtype {arr.dtype}")
    want = "(n,)" if dimensions == 1 else f"(n, {dimensions})"
    if dimensions == 1 and arr.ndim == 0:
        arr = arr.reshape(1)
    if (dimensions == 1 and arr.ndim != 1) or (dimensions > 1 and (arr.ndim != 2 or arr.shape[1] != dimensions)):
        raise ValueError(f"values must have shape {want} for dimensions={dimensions}, got {arr.shape}")
    return np.ascontiguousarray(arr, dtype=np.float64)


class MeanOracle:
    """A local-DP mean/sum oracle configuration.

    Parameters
    ----------
    method : {"duchi", "piecewise", "hybrid", "bitmean"}
        The randomizer (see the module docstring for the papers).
    epsilon : float
        ε per user, in [2^-50, 100]; the randomizers use the exact rational γ <= ε.
    bounds : (float, float)
        (low, high). Values are clipped to [low, high] before randomisation.
    dimensions : int, default 1
        Vector length k; each user reports one uniformly chosen coordinate.

    Raises
    ------
    ValueError, TypeError
        For a bad argument (the message names it).

    Examples
    --------
    >>> import dpnoise, numpy as np
    >>> oracle = dpnoise.ldp.MeanOracle("hybrid", 1.0, bounds=(0.0, 10.0))
    >>> agg = oracle.aggregator().add(oracle.client().privatize(np.full(1000, 3.0)))
    >>> agg.n
    1000
    """

    name = NAME

    def __init__(self, method: str, epsilon: float, bounds: Tuple[float, float] = (0.0, 1.0), *,
                 dimensions: int = 1) -> None:
        if not isinstance(method, str) or method not in METHODS:
            raise ValueError(f"method must be one of {list(METHODS)}, got {method!r}")
        self.method = method
        self.epsilon = check_epsilon(epsilon)
        self.gamma = exact_gamma(self.epsilon)
        self.low, self.high = check_bounds(bounds)
        k = integer(dimensions, "dimensions")
        if not 1 <= k <= MAX_DIMENSIONS:
            raise ValueError(f"dimensions must be in [1, 2^20], got {k}")
        self.dimensions = k
        g = float(self.gamma)
        self.mixes = method == "hybrid" and F.hybrid_mixes(g)
        self.grid_z, self.grid_bits, _, _ = _core.ldp_mean_grid(
            _KERNEL[method], self.low, self.high, self.gamma.numerator, self.gamma.denominator, self.mixes)

    # -- parameters ------------------------------------------------------------------------
    def params(self) -> Dict[str, Any]:
        """Everything clients, aggregators and serialised states must agree on."""
        return {"method": self.method, "epsilon": self.epsilon, "gamma": self.gamma, "low": self.low,
                "high": self.high, "dimensions": self.dimensions}

    def fingerprint(self) -> Tuple[Tuple[str, Any], ...]:
        return tuple(sorted(self.params().items()))

    @classmethod
    def from_params(cls, params: Dict[str, Any]) -> "MeanOracle":
        """The oracle whose ``params()`` are exactly ``params`` (ValueError otherwise)."""
        p = dict(params)
        oracle = cls(p.pop("method"), p.pop("epsilon"), (p.pop("low"), p.pop("high")), dimensions=p.pop("dimensions"))
        if oracle.params() != params:
            raise ValueError("the parameters are incomplete or inconsistent")
        return oracle

    def privacy_loss(self) -> PrivacyLoss:
        """Each user's report is ε-LDP: PureDP(ε)."""
        return PureDP(self.epsilon)

    @property
    def half_width(self) -> float:
        return self.high / 2 - self.low / 2

    @property
    def midpoint(self) -> float:
        return self.low / 2 + self.high / 2

    @property
    def c_tilde(self) -> float:
        """Piecewise's output bound C~ = Z/2^G >= (e^{ε/2} + 1)/(e^{ε/2} − 1)."""
        return self.grid_z / 2.0 ** self.grid_bits

    def worst_case_variance(self) -> float:
        """The papers' worst-case variance of one user's report, in the values' units (half_width²
        times the formula on [-1, 1]); for dimensions k the mean of a coordinate has k times it."""
        return F.worst_case_variance(self.method, float(self.gamma)) * self.half_width ** 2

    def grid_worst_case_variance(self) -> float:
        """The implemented mechanism's worst case (in the values' units): Piecewise at C~ >= C plus
        the output rounding; >= worst_case_variance() by a relative 2^-50 or less for ε <= 40."""
        return F.grid_worst_case_variance(self.method, float(self.gamma), self.c_tilde,
                                          self.grid_bits) * self.half_width ** 2

    # -- report fields -----------------------------------------------------------------------
    def report_fields(self) -> Tuple[str, ...]:
        """The arrays a report batch holds: ``bits`` (uint8, packed, Duchi's bit), ``values``
        (int64: Piecewise's z, or the hybrid's Duchi bit), ``kinds`` (uint8 packed: 1 = the
        hybrid user reported with Duchi), ``coordinates`` (int64, when dimensions > 1)."""
        fields = {"duchi": ("bits",), "bitmean": ("bits",), "piecewise": ("values",),
                  "hybrid": ("kinds", "values")}[self.method]
        return fields + (("coordinates",) if self.dimensions > 1 else ())

    # -- randomizer ----------------------------------------------------------------------------
    def _privatize(self, rng: Generator, values: np.ndarray, threads: int) -> Dict[str, np.ndarray]:
        coords, bits, ints = _core.ldp_mean_privatize(
            rng._core, values, self.dimensions, _KERNEL[self.method], self.low, self.high, self.gamma.numerator,
            self.gamma.denominator, self.mixes, threads)
        data = {"bits": bits, "values": ints, "kinds": bits, "coordinates": coords}
        return {f: data[f] for f in self.report_fields()}

    def client(self, rng: Optional[Generator] = None, *, allow_insecure: bool = False) -> "MeanClient":
        """A randomizer; ``rng`` must be secure (the default) unless ``allow_insecure=True``."""
        return MeanClient(self, rng, allow_insecure=allow_insecure)

    def aggregator(self) -> "MeanAggregator":
        return MeanAggregator(self)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, MeanOracle) and other.fingerprint() == self.fingerprint()

    def __hash__(self) -> int:
        return hash((NAME, self.fingerprint()))

    def __repr__(self) -> str:
        dims = f", dimensions={self.dimensions}" if self.dimensions > 1 else ""
        return f"MeanOracle({self.method!r}, epsilon={self.epsilon}, bounds=({self.low}, {self.high}){dims})"


@dataclass(frozen=True)
class MeanReports:
    """A batch of mean-oracle reports: the configuration's fingerprint, the number of users and
    the arrays named by :meth:`MeanOracle.report_fields`."""

    protocol: str
    params: Tuple[Tuple[str, Any], ...]
    n: int
    data: Dict[str, np.ndarray] = field(compare=False)

    def __len__(self) -> int:
        return self.n

    def to_bytes(self) -> bytes:
        """Versioned, SHA-256-checked bytes (like an aggregator's state)."""
        header = {"protocol": self.protocol, "n": self.n, "params": _jsonable(dict(self.params))}
        return _frame(_REPORTS_MAGIC, header, sorted(self.data.items()))

    @classmethod
    def from_bytes(cls, blob: bytes) -> "MeanReports":
        """A batch written by :meth:`to_bytes`; ValueError for anything corrupt or truncated."""
        header, arrays = _unframe(blob, _REPORTS_MAGIC, "mean report batch")
        oracle = _oracle_of(header, "mean report batch")
        n = header.get("n")
        if not isinstance(n, int) or isinstance(n, bool) or not 0 <= n <= MAX_REPORTS:
            raise ValueError("corrupt mean report batch: bad number of reports")
        return cls(NAME, oracle.fingerprint(), n, arrays)


def _oracle_of(header: Dict[str, Any], what: str) -> MeanOracle:
    try:
        if header["protocol"] != NAME or not isinstance(header["params"], dict):
            raise ValueError("not a mean oracle")
        return MeanOracle.from_params(_from_jsonable(header["params"]))
    except (KeyError, TypeError, ValueError, IndexError, ZeroDivisionError, AttributeError, OverflowError,
            RecursionError) as exc:
        raise ValueError(f"corrupt {what}: unknown configuration or bad parameters ({type(exc).__name__})") from None


class MeanClient:
    """The randomizer side: ``privatize(values)`` -> :class:`MeanReports`."""

    def __init__(self, oracle: MeanOracle, rng: Optional[Generator], *, allow_insecure: bool = False) -> None:
        self.oracle = oracle
        self.rng = client_rng(rng, allow_insecure)

    def privatize(self, values: Any, *, threads: Optional[int] = None) -> MeanReports:
        """One ε-LDP report per user.

        Parameters
        ----------
        values : array_like of real numbers
            Shape (n,), or (n, dimensions) for vectors; clipped to the bounds.
        threads : int, optional
            Worker threads (the output does not depend on it).

        Raises
        ------
        TypeError
            Non-numeric ``values``.
        ValueError
            NaN or ±inf in ``values``, or the wrong shape.
        """
        t = check_threads(threads)
        arr = check_values(values, self.oracle.dimensions)
        data = self.oracle._privatize(self.rng, arr, t)
        return MeanReports(NAME, self.oracle.fingerprint(), int(arr.shape[0]), data)


def _limbs_to_int(limbs: np.ndarray, signed: bool) -> list:
    out = []
    for row in limbs:
        v = sum(int(x) << (64 * i) for i, x in enumerate(row))
        if signed and v >= 1 << (64 * len(row) - 1):
            v -= 1 << (64 * len(row))
        out.append(v)
    return out


def _int_to_limbs(values: list, limbs: int) -> np.ndarray:
    mask = (1 << 64) - 1
    return np.array([[(v >> (64 * i)) & mask for i in range(limbs)] for v in values], dtype=np.uint64).reshape(-1, limbs)


class MeanAggregator:
    """The server: ``add`` report batches, ``merge`` aggregators of the same configuration,
    ``to_bytes`` / ``from_bytes``, and ``mean`` / ``sum`` with their standard errors.

    State (exact integers, per coordinate): ``users``, ``duchi_users``, ``duchi_ones`` (int64),
    ``pm_sum`` (128-bit, 2 uint64 limbs) and ``pm_sum_squares`` (192-bit, 3 limbs)."""

    def __init__(self, oracle: MeanOracle) -> None:
        self.oracle = oracle
        self.n = 0
        k = oracle.dimensions
        self._state: Dict[str, np.ndarray] = {
            "users": np.zeros(k, np.int64), "duchi_users": np.zeros(k, np.int64), "duchi_ones": np.zeros(k, np.int64),
            "pm_sum": np.zeros((k, 2), np.uint64), "pm_sum_squares": np.zeros((k, 3), np.uint64)}

    def _same(self, what: str, protocol: str, fingerprint: Any) -> None:
        if protocol != NAME or fingerprint != self.oracle.fingerprint():
            raise ValueError(f"{what} come from a different configuration; this aggregator is {self.oracle!r}")

    def _check_room(self, more: int) -> None:
        if self.n + more > MAX_REPORTS:
            raise ValueError(f"an aggregator counts at most 2^62 reports; it has {self.n}, {more} more refused")

    def add(self, reports: MeanReports) -> "MeanAggregator":
        """Ingest a batch (checked whole first: a bad batch changes nothing). Returns self."""
        if not isinstance(reports, MeanReports):
            raise TypeError(f"reports must be dpnoise.ldp.numeric.MeanReports (from a MeanOracle client), got "
                            f"{type(reports).__name__}")
        self._same("reports", reports.protocol, reports.params)
        fields = self.oracle.report_fields()
        if set(reports.data) != set(fields):
            raise ValueError(f"mean reports must hold exactly the arrays {sorted(fields)}, got {sorted(reports.data)}")
        n = reports.n
        want = {"bits": (np.uint8, (n + 7) // 8), "kinds": (np.uint8, (n + 7) // 8), "values": (np.int64, n),
                "coordinates": (np.int64, n)}
        for name in fields:
            arr = reports.data[name]
            dtype, size = want[name]
            if not isinstance(arr, np.ndarray) or arr.dtype != dtype or arr.shape != (size,):
                raise ValueError(f"mean reports: {name!r} must be {np.dtype(dtype).name} of shape ({size},)")
        self._check_room(n)
        d = reports.data
        s = self._state
        _core.ldp_mean_accumulate(s["users"], s["duchi_users"], s["duchi_ones"], s["pm_sum"], s["pm_sum_squares"],
                                  _KERNEL[self.oracle.method], self.oracle.grid_z, d.get("coordinates"),
                                  d.get("bits", d.get("kinds")), d.get("values"), n)
        self.n += n
        return self

    def merge(self, other: "MeanAggregator") -> "MeanAggregator":
        """Add another aggregator's state (same configuration only). Returns self."""
        if not isinstance(other, MeanAggregator):
            raise TypeError(f"can only merge a MeanAggregator, got {type(other).__name__}")
        self._same("the other aggregator's reports", NAME, other.oracle.fingerprint())
        self._check_room(other.n)
        a, b = self._state, other._state
        merged = {k: a[k] + b[k] for k in ("users", "duchi_users", "duchi_ones")}
        merged["pm_sum"] = _int_to_limbs([x + y for x, y in zip(_limbs_to_int(a["pm_sum"], True),
                                                                 _limbs_to_int(b["pm_sum"], True))], 2)
        merged["pm_sum_squares"] = _int_to_limbs([x + y for x, y in zip(_limbs_to_int(a["pm_sum_squares"], False),
                                                                         _limbs_to_int(b["pm_sum_squares"], False))], 3)
        self._state = merged
        self.n += other.n
        return self

    # -- estimates ----------------------------------------------------------------------------
    def _moments(self) -> Tuple[np.ndarray, np.ndarray]:
        s = self._state
        return F.moments(float(self.oracle.gamma), self.oracle.grid_bits, s["users"], s["duchi_users"],
                         s["duchi_ones"], _limbs_to_int(s["pm_sum"], True), _limbs_to_int(s["pm_sum_squares"], False))

    def _shape(self, x: np.ndarray) -> Any:
        return float(x[0]) if self.oracle.dimensions == 1 else x

    def mean(self) -> Any:
        """Unbiased estimate of the mean of the clipped values (per coordinate for vectors; nan
        for a coordinate no user reported). Not clipped to the bounds."""
        t, _ = self._moments()
        return self._shape(self.oracle.midpoint + t * self.oracle.half_width)

    def mean_stderr(self) -> Any:
        """The standard error of :meth:`mean`: the reports' sample standard error (unbiased
        variance when every user holds the same value, larger when they differ), capped at the
        worst case sqrt(worst_case_variance / n)."""
        worst = F.grid_worst_case_variance(self.oracle.method, float(self.oracle.gamma), self.oracle.c_tilde,
                                           self.oracle.grid_bits)
        var = F.mean_variance(self._moments(), self._state["users"], worst)
        return self._shape(np.sqrt(var) * self.oracle.half_width)

    def sum(self) -> Any:
        """Unbiased estimate of the sum of the clipped values over all ``n`` users."""
        return self._shape(self.n * np.atleast_1d(self.mean()))

    def sum_stderr(self) -> Any:
        return self._shape(self.n * np.atleast_1d(self.mean_stderr()))

    # -- serialisation ---------------------------------------------------------------------------
    def to_bytes(self) -> bytes:
        """The state as versioned, SHA-256-checked bytes."""
        header = {"protocol": NAME, "params": _jsonable(self.oracle.params()), "n": self.n}
        return _frame(_STATE_MAGIC, header, sorted(self._state.items()))

    @classmethod
    def from_bytes(cls, blob: bytes) -> "MeanAggregator":
        """The aggregator written by :meth:`to_bytes`; ValueError for anything corrupt,
        truncated, tampered (inconsistent counts) or of another format."""
        header, state = _unframe(blob, _STATE_MAGIC, "mean aggregator state")
        oracle = _oracle_of(header, "mean aggregator state")
        n = header.get("n")
        if not isinstance(n, int) or isinstance(n, bool) or not 0 <= n <= MAX_REPORTS:
            raise ValueError("corrupt mean aggregator state: bad number of reports")
        agg = cls(oracle)
        empty = agg._state
        if set(state) != set(empty) or any(state[k].dtype != empty[k].dtype or state[k].shape != empty[k].shape
                                           for k in empty):
            raise ValueError("corrupt mean aggregator state: arrays do not match the configuration")
        _check_state(oracle, state, n)
        agg._state, agg.n = state, n
        return agg

    def __repr__(self) -> str:
        return f"MeanAggregator({self.oracle!r}, n={self.n})"


def _check_state(oracle: MeanOracle, state: Dict[str, np.ndarray], n: int) -> None:
    users, du, do = state["users"], state["duchi_users"], state["duchi_ones"]
    bad = (users < 0).any() or (du < 0).any() or (do < 0).any() or (du > users).any() or (do > du).any()
    bad = bad or int(users.sum(dtype=object)) != n
    if oracle.method in ("duchi", "bitmean"):
        bad = bad or (du != users).any() or state["pm_sum"].any() or state["pm_sum_squares"].any()
    elif oracle.method == "piecewise":
        bad = bad or du.any()
    if not bad:
        z = oracle.grid_z
        sums, squares = _limbs_to_int(state["pm_sum"], True), _limbs_to_int(state["pm_sum_squares"], False)
        for j, (s, q) in enumerate(zip(sums, squares)):
            p = int(users[j]) - int(du[j])
            # |Σz| <= p Z, Σz² <= p Z², and (Σz)² <= p Σz² (Cauchy–Schwarz)
            if abs(s) > p * z or q > p * z * z or s * s > p * q:
                bad = True
                break
    if bad:
        raise ValueError("corrupt mean aggregator state: counts and sums are inconsistent")
