"""Numeric mean and sum oracles under local DP: ``MeanOracle(method, epsilon, bounds=(low, high))``.

Each user holds a number (or a vector of ``dimensions`` numbers, of which one uniformly chosen
coordinate is reported, as in Wang et al., ICDE 2019, §IV). The value is clipped to the bounds,
mapped exactly to t in [-1, 1] on a 2^-32 grid (randomized rounding, unbiased) and randomized
by one of the methods below (fresh Duchi-type bits skip the rounding and decide on the value's
exact position, with the same law: docs/ldp_numeric.md, "Duchi's bit, direct"):

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
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from ... import _core
from ..._validate import integer
from ...generator import Generator
from .._aggregator import Aggregator
from .._kernels import Kernels, KernelTable
from .._memo import memoised_reports
from .._privacy import supporting
from .._protocol import Client, Configuration, native
from .._reports import Reports
from .._schema import PACKED, PER_USER, ReportField
from ..longitudinal import alpha_point_round
from . import _formulas as F

MAX_DIMENSIONS = 1 << 20
MAX_POINTS = 1 << 24
# wire magics of the mean-oracle family (12 bytes, like dpnoise.ldp._wire's)
MEAN_STATE = b"DPNOISE-MNA\x00"
MEAN_REPORTS = b"DPNOISE-MNR\x00"


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


# The narrowest bounds taken: half their width, the scale of every estimate, is a normal double
# (an estimate on subnormal bounds would keep only a few of its bits, or none).
MIN_WIDTH = 2.0 ** -1021


def check_bounds(bounds: Any) -> tuple[float, float]:
    """(low, high): finite reals with low < high, high − low finite and at least ``MIN_WIDTH``
    (2^-1021 ≈ 4.5e-308).

    Parameters
    ----------
    bounds : tuple or list of two reals
        (low, high).

    Returns
    -------
    tuple of (float, float)
        The checked bounds.

    Raises
    ------
    TypeError
        If ``bounds`` is not a pair.
    ValueError
        For a non-finite bound, low >= high, an overflowing width, or a width below 2^-1021.
    """
    if not isinstance(bounds, (tuple, list)) or len(bounds) != 2:
        raise TypeError("bounds must be a pair (low, high)")
    low, high = _bound(bounds[0], "bounds[0] (low)"), _bound(bounds[1], "bounds[1] (high)")
    if not low < high:
        raise ValueError(f"bounds must satisfy low < high, got ({low!r}, {high!r})")
    if not math.isfinite(high - low):
        raise ValueError("bounds: high − low must be a finite double")
    if not high - low >= MIN_WIDTH:
        raise ValueError("bounds: high − low must be at least 2^-1021 (about 4.5e-308): narrower bounds make the "
                         "estimates subnormal doubles that keep few or no bits; measure the values in larger units")
    return low, high


# Bounds narrower than this are handed to the kernel scaled by a power of two. numeric_grid.hpp
# estimates the grid index with the double 2^32/(high − low), which overflows below a width of
# 2^32/DBL_MAX ≈ 2^-992; the kernel then corrects a zero estimate one unit at a time (up to 2^32
# steps, ~2.5 s per value; issue #33, item 5). Any threshold far above 2^-992 works: scaling is exact.
NARROW_WIDTH = 2.0 ** -960


def kernel_scale(low: float, high: float) -> int:
    """The power-of-two exponent k by which the exact kernel sees the bounds and the (clipped)
    values: 0 for bounds at least ``NARROW_WIDTH`` wide, else k with max(|low|, |high|)·2^k in
    [1, 2). Scaling by 2^k is exact here (no result is subnormal or overflows) and leaves the
    position u = (v − low)/(high − low) unchanged, so the reports are the same, bit for bit, as an
    exact kernel's on the unscaled bounds (docs/ldp_numeric.md, "Input grid").

    Parameters
    ----------
    low, high : float
        Checked bounds (``check_bounds``).

    Returns
    -------
    int
        k >= 0.
    """
    if high - low >= NARROW_WIDTH:
        return 0
    return 1 - math.frexp(max(abs(low), abs(high)))[1]


def check_fixed_point_bounds(low: float, high: float) -> None:
    """ValueError unless low·2^F and high·2^F are integers, F = 93 − E with max(|low|, |high|)
    < 2^E: the fixed-point grid of the constant-time input map (mean_mechanisms.hpp,
    InputGridCT), where every value in the bounds is held in 94 bits.

    Parameters
    ----------
    low, high : float
        Checked bounds.

    Raises
    ------
    ValueError
        For bounds with binary digits more than 93 bits below the larger one's magnitude.
    """
    shift = 93 - math.frexp(max(abs(low), abs(high)))[1]
    if any((Fraction(b) * Fraction(2) ** shift).denominator != 1 for b in (low, high)):
        raise ValueError("constant_time=True needs bounds whose binary digits lie within 93 bits below the larger "
                         f"bound's magnitude, not ({low!r}, {high!r}); shift or round the bounds, or use "
                         "constant_time=False")


def _fresh_only(config: MeanConfiguration) -> None:
    """The constant-time row's checks: it randomizes fresh reports only (no daily layer), over
    bounds its fixed-point grid holds (:func:`check_fixed_point_bounds`)."""
    if config.gamma1 is not None or config.points is not None:
        raise ValueError("constant_time=True covers the fresh randomizer only: it cannot be combined with "
                         "instantaneous_epsilon or points (daily collection is not constant-time)")
    check_fixed_point_bounds(config.low, config.high)


def _any_bounds(config: MeanConfiguration) -> None:
    """The exact row takes any checked bounds."""


# How the exact client reads its stream (mean_mechanisms.hpp, MeanLayout; docs/reproducibility.md):
# fresh reports draw Duchi's bit directly from the value (2, from 0.11.0); memoised answers keep
# the grid-first layout (1) of 0.3-0.10 forever, so that an upgraded device sends the permanent
# answers it sent before (a new draw would be a second sample of the same value). Same law.
FRESH_LAYOUT = 2
MEMO_LAYOUT = 1


def check_values(values: Any, dimensions: int) -> np.ndarray:
    """Float64, C-contiguous, shape (n,) (one dimension) or (n, dimensions). TypeError for
    non-numeric input; ValueError for NaN and ±inf (here, before any budget is charged; the
    kernel checks again). No message echoes a value.

    Parameters
    ----------
    values : array_like
        Integers or floats.
    dimensions : int
        The vector length k.

    Returns
    -------
    numpy.ndarray of float64
        Shape (n,) for k = 1, else (n, k).

    Raises
    ------
    TypeError
        For non-numeric input.
    ValueError
        For a shape that does not fit ``dimensions``, or NaN or infinite values.
    """
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
    out = np.ascontiguousarray(arr, dtype=np.float64)
    # here, not only in the kernel: a client's budget is charged after this check, before the kernel
    if arr.dtype.kind == "f" and not np.isfinite(out).all():
        raise ValueError("values must be finite: NaN and infinity are refused")
    return out


class MeanConfiguration(Configuration, family="mean"):
    """Base class of one mean-oracle configuration: ε, the bounds (low, high) and the vector
    length ``dimensions``. A method is a subclass declared with ``name=...`` that sets its C++
    ``kernel`` (mean_mechanisms.hpp's Method) and its ``method_fields``; build one with
    :func:`MeanOracle`.

    Report fields: ``bits`` (packed, Duchi's bit: 1 = +C), ``values`` (int64: Piecewise's z,
    or the hybrid's Duchi bit), ``kinds`` (packed: 1 = the hybrid user reported with Duchi),
    and ``coordinates`` (int64 in [0, dimensions), when dimensions > 1).

    Parameters
    ----------
    epsilon : float
        ε of each user's report, in (0, 100].
    bounds : tuple of (float, float), default (0.0, 1.0)
        (low, high): values are clipped to it; 2^-1021 <= high − low < ∞ (``check_bounds``).
    dimensions : int, default 1
        The vector length, in [1, 2^20] (each user reports one random coordinate).
    instantaneous_epsilon : float, optional
        Daily collection (``"bitmean"`` only): a fresh per-report layer at ε₁ over the bit at
        ``epsilon`` (then ε∞), which ``client(device_key=)`` memoises.
    points : int, optional
        Daily collection (``"bitmean"`` only, one dimension): the α-point rounding grid of
        memoising clients, in [2, 2^24] points on the bounds.
    constant_time : bool, default False
        True: clients run the constant-time kernel (exact/constant_time/mean_mechanisms.hpp;
        docs/security.md, "Constant-time mean oracles") and each report is charged
        (ε, (1 + e^ε)·2^-64). Not combinable with ``instantaneous_epsilon`` or ``points``; the
        bounds must have their binary digits within 93 bits below the larger one's magnitude.

    Raises
    ------
    TypeError, ValueError
        For a bad ε, bounds, dimensions, ``instantaneous_epsilon`` or ``points`` (a ValueError
        naming the methods that take the last two), or ``constant_time=True`` with daily
        collection or with bounds the constant-time grid cannot hold.
    """

    _state_magic = MEAN_STATE
    _reports_magic = MEAN_REPORTS
    _header_key = "method"
    _label = "mean-oracle "
    _noun = "method"
    kernel: ClassVar[int]
    method_fields: ClassVar[tuple[ReportField, ...]] = ()
    # every method: the exact kernel (narrow bounds scaled by 2^kernel_scale) and the constant-time
    # one (its fixed-point grid takes the bounds as they are: no scale), one decision a report
    kernel_table = KernelTable(
        variable_time=Kernels(mechanism=_core.ldp.MeanMechanismCore, scale=kernel_scale, check=_any_bounds),
        constant_time=Kernels(mechanism=_core.ldp.MeanMechanismConstantTimeCore, scale=lambda low, high: 0,
                              check=_fresh_only))

    def __init__(self, epsilon: float, bounds: tuple[float, float] = (0.0, 1.0), *, dimensions: int = 1,
                 instantaneous_epsilon: float | None = None, points: int | None = None,
                 constant_time: bool = False) -> None:
        self._init_epsilon(epsilon)
        self.low, self.high = check_bounds(bounds)
        k = integer(dimensions, "dimensions")
        if not 1 <= k <= MAX_DIMENSIONS:
            raise ValueError(f"dimensions must be in [1, 2^20], got {k}")
        self.dimensions = k
        self.points = self._check_points(points)
        # the variants (the envelope's): daily collection, a fresh bit flip at ε₁ over the
        # (memoisable) bit at ε = ε∞; constant-time kernels (then the row's own checks)
        self._init_variants(constant_time, instantaneous_epsilon, f"method {self.name!r}")
        self.kernels.check(self)
        self.mixes = self.kernel == F.HYBRID and F.hybrid_mixes(float(self.gamma))
        self._scale = self.kernels.scale(self.low, self.high)
        self.grid_z, self.grid_bits = self._mechanism.grid_z, self._mechanism.grid_bits
        coords = (ReportField("coordinates", PER_USER, np.int64, bound=lambda c: c.dimensions),) if k > 1 else ()
        self.report_fields = self.method_fields + coords

    # -- parameters ------------------------------------------------------------------------
    @property
    def method(self) -> str:
        """The method's name ("duchi", "bitmean", "piecewise", "hybrid")."""
        return self.name

    def params(self) -> dict[str, Any]:
        """Everything clients, aggregators and serialised states must agree on."""
        out = {"epsilon": self.epsilon, "gamma": self.gamma, "low": self.low, "high": self.high,
               "dimensions": self.dimensions}
        if self.points is not None:
            out["points"] = self.points
        out.update(self._variant_params())
        return out

    @classmethod
    def _construct(cls, params: dict[str, Any]) -> MeanConfiguration:
        variants = cls._variant_options(params)
        return cls(params.pop("epsilon"), (params.pop("low"), params.pop("high")), dimensions=params.pop("dimensions"),
                   points=params.pop("points", None), **variants)

    # -- daily collection ------------------------------------------------------------------------
    def _check_points(self, value: Any) -> int | None:
        """``points``: None, or an int in [2, 2^24] for a longitudinal method in one dimension."""
        if value is None:
            return None
        if not self.supports("daily"):
            raise ValueError(f"points (the alpha-point rounding grid of daily collection) is supported by the "
                             f"methods {supporting(self, 'daily')} only, not {self.name!r}")
        k = integer(value, "points")
        if not 2 <= k <= MAX_POINTS:
            raise ValueError(f"points must be in [2, 2^24], got {k}")
        if self.dimensions != 1:
            raise ValueError("points (memoised daily collection) needs dimensions=1")
        return k

    def _memoised(self, device_key: bytes, fingerprint: bytes, items: np.ndarray) -> dict[str, np.ndarray]:
        """With a device key each value is α-point rounded to the ``points`` grid (the device's α a
        PRF of its key) and the grid point's bit memoised as a PRF of (device key, grid index,
        configuration) (docs/ldp_numeric.md, "Daily collection")."""
        points = self.points
        assert points is not None  # _check_device_key refuses a device key without points=
        index = alpha_point_round(items, (self.low, self.high), points, device_key)
        data = memoised_reports(self, device_key, fingerprint, index, self.grid_values)
        if index.size:  # one packed byte per report (its bit 0) from the per-grid-point rows: repack
            data["bits"] = np.packbits(data["bits"] & 1, bitorder="little")
        return data

    def _check_device_key(self, device_key: Any) -> bytes:
        key = super()._check_device_key(device_key)
        if self.points is None:
            raise ValueError(f"device_key on {self.name!r} needs the configuration option points= (the grid that "
                             f"values are alpha-point rounded to before the memoised bit)")
        return key

    @property
    def estimator_epsilon(self) -> float:
        """The ε of the one Duchi bit the aggregator reads: γ, or with ``instantaneous_epsilon``
        the two layers in a row, 2 artanh(tanh(γ∞/2) tanh(γ₁/2)) (``_formulas.two_layer_epsilon``)."""
        if self.gamma1 is None:
            return float(self.gamma)
        return F.two_layer_epsilon(float(self.gamma), float(self.gamma1))

    def grid_values(self, indices: np.ndarray) -> np.ndarray:
        """The values of α-point rounding grid points: low + i (high − low)/(points − 1).

        Parameters
        ----------
        indices : numpy.ndarray of int64
            Grid indices in [0, points).

        Returns
        -------
        numpy.ndarray of float64
            Values in [low, high] (the last index gives ``high`` exactly).

        Raises
        ------
        ValueError
            Without ``points``.
        """
        if self.points is None:
            raise ValueError("this configuration has no points= grid")
        u = np.asarray(indices, dtype=np.float64) / (self.points - 1)
        return np.where(u >= 1.0, self.high, self.low + (self.high - self.low) * u)

    @classmethod
    def example(cls, epsilon: float = 2.0) -> MeanConfiguration:
        """A small instance: bounds (0, 10), one dimension."""
        return cls(epsilon, (0.0, 10.0))

    def item_domain(self) -> tuple[str, int | None]:
        """``("real", None)``: items are real values, clipped to the bounds (see
        Configuration.item_domain)."""
        return ("real", None)

    def example_items(self, n: int, seed: int = 0) -> np.ndarray:
        """``n`` values (NumPy, seeded: test data only): a skewed law over the bounds and a
        little beyond them (clipped)."""
        g = np.random.default_rng(seed)
        v = self.low + (self.high - self.low) * (g.beta(2.0, 5.0, size=(n, self.dimensions)) * 1.2 - 0.1)
        return v.reshape(n) if self.dimensions == 1 else v

    def contract_truth(self, values: Any) -> np.ndarray:
        """What :meth:`MeanAggregator.estimate` estimates for these values: the clipped values'
        mean per coordinate (used by the LDP contract suite).

        Parameters
        ----------
        values : array_like
            As clients take them.

        Returns
        -------
        numpy.ndarray of float64
            Shape (dimensions,).
        """
        v = np.clip(check_values(values, self.dimensions), self.low, self.high)
        return v.reshape(v.shape[0], self.dimensions).mean(axis=0)

    @property
    def half_width(self) -> float:
        """(high − low) / 2, the scale from [-1, 1] to the values' units."""
        return self.high / 2 - self.low / 2

    @property
    def midpoint(self) -> float:
        """(low + high) / 2."""
        return self.low / 2 + self.high / 2

    @property
    def c_tilde(self) -> float:
        """Piecewise's output bound C~ = Z/2^G >= (e^{ε/2} + 1)/(e^{ε/2} − 1)."""
        return self.grid_z / 2.0 ** self.grid_bits

    def worst_case_variance(self) -> float:
        """The paper's worst-case variance of one user's report, in the values' units
        (half_width² times the formula on [-1, 1]); for dimensions k, a coordinate's mean has
        about k times it per user.

        Returns
        -------
        float
            The variance, in squared value units.
        """
        return F.worst_case_variance(self.kernel, self.estimator_epsilon) * self.half_width ** 2

    def grid_worst_case_variance(self) -> float:
        """The implemented mechanism's worst case (values' units): Piecewise at C~ >= C plus the
        output rounding; within 1e-9 relative of worst_case_variance() for ε <= 10.

        Returns
        -------
        float
            The variance, in squared value units.
        """
        return F.grid_worst_case_variance(self.kernel, self.estimator_epsilon, self.c_tilde,
                                          self.grid_bits) * self.half_width ** 2

    # -- randomizer ----------------------------------------------------------------------------
    def _encode(self, items: Any) -> np.ndarray:
        return check_values(items, self.dimensions)

    def _kernel_bounds(self) -> tuple[float, float]:
        """(low, high) as the kernel sees them: times 2^k, k = ``kernel_scale`` (exact)."""
        return math.ldexp(self.low, self._scale), math.ldexp(self.high, self._scale)

    def _privatize(self, rng: Generator, values: np.ndarray, threads: int) -> dict[str, np.ndarray]:
        return self._randomize(rng, values, threads, FRESH_LAYOUT)

    def _privatize_permanent(self, rng: Generator, values: np.ndarray, threads: int) -> dict[str, np.ndarray]:
        """Memoised answers: the grid-first layout of every version since 0.3 (``MEMO_LAYOUT``)."""
        return self._randomize(rng, values, threads, MEMO_LAYOUT)

    @property
    def _mechanism(self) -> Any:
        """The selected kernel row's C++ mechanism (certified enclosures, output and input grids;
        exact or constant-time): built once, kept (not pickled: rebuilt where the configuration is
        used)."""
        mech = self.__dict__.get("_mechanism_core")
        if mech is None:
            mech = self.__dict__["_mechanism_core"] = self.kernels.mechanism(
                self.kernel, *self._kernel_bounds(), self.gamma.numerator, self.gamma.denominator, self.mixes)
        return mech

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_mechanism_core", None)
        return state

    def _randomize(self, rng: Generator, values: np.ndarray, threads: int, layout: int) -> dict[str, np.ndarray]:
        if self._scale:  # narrow bounds: clip, then scale exactly (values in the bounds stay normal or exact)
            values = np.ldexp(np.clip(values, self.low, self.high), self._scale)
        coords, bits, ints = self._mechanism.privatize(native(rng), values, self.dimensions, threads, layout)
        data = {"bits": bits, "values": ints, "kinds": bits, "coordinates": coords}
        return {f.name: data[f.name] for f in self.report_fields}

    def _instantaneous(self, rng: Generator, data: dict[str, np.ndarray], n: int,
                       threads: int) -> dict[str, np.ndarray]:
        """The per-report layer: each report's bit through binary randomized response at ε₁ (kept
        w.p. e^ε₁/(e^ε₁ + 1): Ding et al. 2017, §4's output perturbation with γ = 1/(e^ε₁ + 1)),
        exact: GRR's kernel over 2 categories."""
        g = self.gamma1
        bits = np.unpackbits(data["bits"], count=n, bitorder="little").astype(np.int64)
        out = _core.ldp.grr_privatize(native(rng), bits, 2, g.numerator, g.denominator, threads)
        return {**data, "bits": np.packbits(out.astype(np.uint8), bitorder="little")}

    def _extra_row_mask(self, data: dict[str, np.ndarray], n: int) -> np.ndarray:
        """Piecewise reports within [−Z, Z]; the hybrid's Duchi reports 0 or 1."""
        if "values" not in data:
            return np.ones(n, dtype=bool)
        v = np.asarray(data["values"]).reshape(n)
        ok = (v >= -self.grid_z) & (v <= self.grid_z)
        if "kinds" in data:
            duchi = np.unpackbits(data["kinds"], count=n, bitorder="little").astype(bool)
            ok = np.where(duchi, (v == 0) | (v == 1), ok)
        return ok

    def __repr__(self) -> str:
        dims = f", dimensions={self.dimensions}" if self.dimensions > 1 else ""
        dims += self._variant_repr()
        dims += f", points={self.points}" if self.points is not None else ""
        return f"MeanOracle({self.name!r}, epsilon={self.epsilon}, bounds=({self.low}, {self.high}){dims})"


def _limbs_to_int(limbs: np.ndarray, signed: bool) -> list[int]:
    out = []
    for row in limbs:
        v = sum(int(x) << (64 * i) for i, x in enumerate(row))
        if signed and v >= 1 << (64 * len(row) - 1):
            v -= 1 << (64 * len(row))
        out.append(v)
    return out


def _int_to_limbs(values: list[int], limbs: int) -> np.ndarray:
    mask = (1 << 64) - 1
    return np.array([[(v >> (64 * i)) & mask for i in range(limbs)] for v in values],
                    dtype=np.uint64).reshape(-1, limbs)


class MeanAggregator(Aggregator):
    """The server: ``add`` report batches, ``merge`` aggregators of the same configuration,
    ``to_bytes`` / ``from_bytes``, and :meth:`mean` / :meth:`sum` with their standard errors
    (``estimate()`` and ``stderr()`` are the mean and its standard error, per coordinate).

    State (exact integers, per coordinate): ``users``, ``duchi_users``, ``duchi_ones`` (int64),
    ``pm_sum`` (128-bit, 2 uint64 limbs) and ``pm_sum_squares`` (192-bit, 3 limbs)."""

    protocol: MeanConfiguration

    def _empty_state(self) -> dict[str, np.ndarray]:
        k = self.protocol.dimensions
        return {"users": np.zeros(k, np.int64), "duchi_users": np.zeros(k, np.int64),
                "duchi_ones": np.zeros(k, np.int64), "pm_sum": np.zeros((k, 2), np.uint64),
                "pm_sum_squares": np.zeros((k, 3), np.uint64)}

    def _check_batch(self, reports: Reports) -> None:
        """Nothing here: the C++ pass checks every value while it sums into scratch and the state
        changes only when the whole batch is valid."""

    def _ingest(self, reports: Reports) -> None:
        d, s, cfg = reports.data, self._state, self.protocol
        _core.ldp.mean_accumulate(s["users"], s["duchi_users"], s["duchi_ones"], s["pm_sum"], s["pm_sum_squares"],
                                  cfg.kernel, cfg.grid_z, d.get("coordinates"), d.get("bits", d.get("kinds")),
                                  d.get("values"), reports.n)

    def _merge_state(self, other: Aggregator) -> None:
        a, b = self._state, other._state
        merged = {k: a[k] + b[k] for k in ("users", "duchi_users", "duchi_ones")}
        for name, limbs, signed in (("pm_sum", 2, True), ("pm_sum_squares", 3, False)):
            merged[name] = _int_to_limbs([x + y for x, y in zip(_limbs_to_int(a[name], signed),
                                                                 _limbs_to_int(b[name], signed))], limbs)
        self._state = merged

    def _check_state(self, state: dict[str, np.ndarray], n: int) -> None:
        _check_state(self.protocol, state, n)

    # -- estimates ----------------------------------------------------------------------------
    def _moments(self) -> tuple[np.ndarray, np.ndarray]:
        def compute() -> Any:
            s = self._state
            mean, ss = F.moments(self.protocol.estimator_epsilon, self.protocol.grid_bits, s["users"], s["duchi_users"],
                                 s["duchi_ones"], _limbs_to_int(s["pm_sum"], True),
                                 _limbs_to_int(s["pm_sum_squares"], False))
            return np.stack([mean, ss])
        m = self._cached("moments", compute)
        return m[0], m[1]

    def _mean_t_variance(self) -> np.ndarray:
        cfg = self.protocol
        worst = F.grid_worst_case_variance(cfg.kernel, cfg.estimator_epsilon, cfg.c_tilde, cfg.grid_bits)
        return F.mean_variance(self._moments(), self._state["users"], worst)

    def _shape(self, x: np.ndarray) -> Any:
        return float(x[0]) if self.protocol.dimensions == 1 else np.array(x)

    def mean(self) -> Any:
        """Unbiased estimate of the mean of the clipped values (a float; an array per
        coordinate for vectors, nan for a coordinate no user reported). Not clipped to the
        bounds.

        Returns
        -------
        float or numpy.ndarray
            In the values' units.
        """
        t, _ = self._moments()
        return self._shape(self.protocol.midpoint + t * self.protocol.half_width)

    def mean_stderr(self) -> Any:
        """The standard error of :meth:`mean`: the reports' sample standard error (unbiased
        variance when every user holds the same value, larger when they differ), capped at the
        worst case sqrt(worst_case_variance / n) (docs/ldp_numeric.md).

        Returns
        -------
        float or numpy.ndarray
            Shaped as :meth:`mean`.
        """
        return self._shape(np.sqrt(self._mean_t_variance()) * self.protocol.half_width)

    def sum(self) -> Any:
        """Unbiased estimate of the sum of the clipped values over all ``n`` users.

        Returns
        -------
        float or numpy.ndarray
            Shaped as :meth:`mean`.
        """
        return self._shape(self.n * np.atleast_1d(self.mean()))

    def sum_stderr(self) -> Any:
        """The standard error of :meth:`sum` (n times :meth:`mean_stderr`).

        Returns
        -------
        float or numpy.ndarray
            Shaped as :meth:`mean`.
        """
        return self._shape(self.n * np.atleast_1d(self.mean_stderr()))

    # the envelope's estimate/variance/stderr: the mean per coordinate (no per-item queries)
    def estimate(self, items: Any = None) -> np.ndarray:
        """The mean per coordinate, as an array (see :meth:`mean`); ``items`` is not accepted."""
        _no_items(items)
        return np.atleast_1d(self.mean()).astype(np.float64)

    def variance(self, items: Any = None) -> np.ndarray:
        """The squared :meth:`mean_stderr` per coordinate (``items`` must be None)."""
        _no_items(items)
        return np.atleast_1d(self.mean_stderr()).astype(np.float64) ** 2

    def stderr(self, items: Any = None) -> np.ndarray:
        """:meth:`mean_stderr` per coordinate, as an array (``items`` must be None)."""
        _no_items(items)
        return np.atleast_1d(self.mean_stderr()).astype(np.float64)


def _no_items(items: Any) -> None:
    if items is not None:
        raise TypeError("a mean aggregator estimates means, not items: call estimate() with no argument")


MeanConfiguration.aggregator_class = MeanAggregator
MeanConfiguration.client_class = Client


class Duchi(MeanConfiguration, name="duchi"):
    """Duchi, Jordan & Wainwright (JASA 2018): one bit, ±C."""
    kernel = F.DUCHI_BIT
    method_fields = (ReportField("bits", PACKED, np.uint8),)


class BitMean(MeanConfiguration, name="bitmean"):
    """1BitMean (Ding, Kulkarni & Yekhanin, NeurIPS 2017): the same bit as Duchi's in one dimension.
    Supports daily collection (§3: α-point rounding to ``points`` and memoisation with
    ``client(device_key=)``; §4: ``instantaneous_epsilon``)."""
    kernel = F.DUCHI_BIT
    longitudinal = True
    method_fields = (ReportField("bits", PACKED, np.uint8),)


class Piecewise(MeanConfiguration, name="piecewise"):
    """The Piecewise mechanism (Wang et al., ICDE 2019, Alg. 2) on a dyadic output grid."""
    kernel = F.PIECEWISE
    method_fields = (ReportField("values", PER_USER, np.int64),)


class Hybrid(MeanConfiguration, name="hybrid"):
    """The hybrid mechanism (Wang et al., ICDE 2019, §III-C)."""
    kernel = F.HYBRID
    method_fields = (ReportField("kinds", PACKED, np.uint8), ReportField("values", PER_USER, np.int64))


def MeanOracle(method: str, epsilon: float, bounds: tuple[float, float] = (0.0, 1.0), *,
               dimensions: int = 1, instantaneous_epsilon: float | None = None,
               points: int | None = None, constant_time: bool = False) -> MeanConfiguration:
    """A local-DP mean and sum oracle.

    Parameters
    ----------
    method : {"duchi", "piecewise", "hybrid", "bitmean"}
        The randomizer (see the module docstring for the papers).
    epsilon : float
        ε per user, in [2^-50, 100]; the randomizers use the exact rational γ <= ε.
    bounds : (float, float)
        (low, high), finite with low < high and 2^-1021 <= high − low < ∞. Values are clipped
        to [low, high] before randomisation. Bounds narrower than 2^-960 are handed to the
        exact kernel scaled by a power of two (the same reports, bit for bit).
    dimensions : int, default 1
        Vector length k in [1, 2^20]; each user reports one uniformly chosen coordinate.
    instantaneous_epsilon : float, optional
        Daily collection, ``"bitmean"`` only: a fresh per-report flip of the bit at ε₁; then
        ``epsilon`` is the permanent ε∞ (docs/ldp_numeric.md, "Daily collection").
    points : int, optional
        ``"bitmean"`` in one dimension only: the grid of [2, 2^24] points on the bounds that
        memoising clients (``client(device_key=key)``) α-point round values to. Required for
        ``device_key``.
    constant_time : bool, default False
        True: the clients' randomizer (input grid, coordinate choice, bit or interval draw) runs
        in time and memory accesses independent of the values and of the random bits
        (docs/security.md, "Constant-time mean oracles"); ``privacy_loss()`` becomes
        ApproxDP(ε, (1 + e^ε)·2^-64). Refused with daily collection.

    Returns
    -------
    MeanConfiguration
        With ``client(rng=None, *, allow_insecure=False, budget=None, device_key=None)`` and
        ``aggregator()``.

    Raises
    ------
    ValueError, TypeError
        For a bad argument (the message names it); ``instantaneous_epsilon`` or ``points`` on a
        method other than ``"bitmean"`` is a ValueError naming the methods that take them.

    Examples
    --------
    >>> import dpnoise, numpy as np
    >>> oracle = dpnoise.ldp.MeanOracle("hybrid", 1.0, bounds=(0.0, 10.0))
    >>> agg = oracle.aggregator().add(oracle.client().privatize(np.full(1000, 3.0)))
    >>> agg.n
    1000
    """
    registry = MeanConfiguration.registered()
    if not isinstance(method, str) or method not in registry:
        raise ValueError(f"method must be one of {list(registry)}, got {method!r}")
    cls = registry[method]
    assert issubclass(cls, MeanConfiguration)  # the family's registry holds its methods only
    return cls(epsilon, bounds, dimensions=dimensions, instantaneous_epsilon=instantaneous_epsilon, points=points,
               constant_time=constant_time)


def _check_state(oracle: MeanConfiguration, state: dict[str, np.ndarray], n: int) -> None:
    users, du, do = state["users"], state["duchi_users"], state["duchi_ones"]
    bad = bool((users < 0).any() or (du < 0).any() or (do < 0).any() or (du > users).any() or (do > du).any())
    bad = bad or int(users.sum(dtype=object)) != n
    if oracle.kernel == F.DUCHI_BIT:  # every user is a Duchi user
        bad = bad or bool((du != users).any() or state["pm_sum"].any() or state["pm_sum_squares"].any())
    elif oracle.kernel == F.PIECEWISE:  # no Duchi user
        bad = bad or bool(du.any())
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
