"""What every mechanism shares: the generator, the optional budget, input checks, release()."""
from __future__ import annotations

import math
from typing import Any, Optional, Tuple

import numpy as np

from .._errors import InsecureGeneratorError
from .._validate import check_threads, positive, probability, real, shape_of
from ..accounting.budget import PrivacyBudget
from ..accounting.losses import PrivacyLoss
from ..generator import Generator, default_rng
from ._plan import GRID_BOUND, INTEGER_BOUND, ReleasePlan


# ε above this is no privacy at all, and e^ε overflows the accountants' arithmetic near 709
MAX_EPSILON = 100.0


def check_epsilon(value: Any) -> float:
    """ε must be a finite real in (0, MAX_EPSILON]."""
    eps = positive(value, "epsilon")
    if eps > MAX_EPSILON:
        raise ValueError(f"epsilon must be at most {MAX_EPSILON:g} (e^epsilon must stay representable), got {eps!r}")
    return eps


# ρ of the largest ε allowed: ε-DP implies (ε²/2)-zCDP (Bun & Steinke 2016, Prop. 1.4)
MAX_RHO = MAX_EPSILON**2 / 2


def check_rho(value: Any) -> float:
    """ρ (zCDP) must be a finite real in (0, MAX_RHO]."""
    rho = positive(value, "rho")
    if rho > MAX_RHO:
        raise ValueError(f"rho must be at most {MAX_RHO:g} (the zCDP of epsilon = {MAX_EPSILON:g}), got {rho!r}")
    return rho


def check_delta(value: Any) -> float:
    """δ must be in [0, 1)."""
    return probability(value, "delta", upper_open=True)


# The finest grid is 2^-1022 (outputs must be exact normal doubles); a real sensitivity below
# this bound would be widened by more than its own size on that grid.
MIN_REAL_SENSITIVITY = 2.0**-1000


def check_sensitivity(value: Any) -> float:
    """A real sensitivity: finite, at least 2^-1000."""
    v = positive(value, "sensitivity")
    if v < MIN_REAL_SENSITIVITY:
        raise ValueError(f"sensitivity must be at least 2^-1000 (the finest grid is 2^-1022), got {v!r}")
    return v


class Mechanism:
    """Base class: one release path for every mechanism.

    ``release(value)`` (and ``__call__``): (1) ``_prepare`` validates and prepares the input;
    everything that can fail fails here, before any budget or noise; (2) ``plan(shape, dtype)``
    builds the frozen :class:`~dpnoise.mechanisms.ReleasePlan`; (3) the bound budget is charged
    once with ``plan.loss`` (label: the mechanism's name); (4) ``plan.execute(rng, prepared)``
    draws the noise. Subclasses implement ``_prepare`` and ``plan`` (and ``accuracy``), never
    ``release``.

    The generator must be secure (``rng.is_secure``): a seeded generator repeats its noise,
    and anyone holding the seed subtracts it, so it is refused with
    :class:`dpnoise.InsecureGeneratorError` unless ``allow_insecure=True`` (tests only); such
    releases are charged with ``insecure=True`` in the budget's ledger.
    """

    epsilon: Optional[float]
    delta: Optional[float]

    def __init__(self, rng: Optional[Generator], budget: Optional[PrivacyBudget], *,
                 threads: Any = None, allow_insecure: bool = False):
        if rng is None:
            rng = default_rng()
        if not isinstance(rng, Generator):
            raise TypeError(f"rng must be a dpnoise.Generator (dpnoise.default_rng()), got {type(rng).__name__}")
        if budget is not None and not isinstance(budget, PrivacyBudget):
            raise TypeError(f"budget must be a dpnoise.accounting.PrivacyBudget, got {type(budget).__name__}")
        if not isinstance(allow_insecure, (bool, np.bool_)):
            raise TypeError(f"allow_insecure must be a bool, got {type(allow_insecure).__name__}")
        if not rng.is_secure and not allow_insecure:
            raise InsecureGeneratorError(
                "rng is not secure (seeded: its noise can be reproduced and subtracted); use "
                "dpnoise.default_rng() with no seed, or pass allow_insecure=True for tests")
        self.rng = rng
        self.budget = budget
        self.threads = check_threads(threads)
        self.allow_insecure = bool(allow_insecure)

    def _check_release_possible(self) -> None:
        """Called at the end of every constructor: a scalar (or one-record) plan must build, and
        the budget's accountant must be able to compose its loss, so that bad parameters fail
        here and a release cannot fail at the charge."""
        loss = self.plan(()).loss
        if self.budget is not None:
            self.budget.accountant.check_supported(loss)

    # -- the plan ---------------------------------------------------------------------------
    def plan(self, shape: Any = (), dtype: Any = None) -> ReleasePlan:  # pragma: no cover - abstract
        """The frozen plan of one release of a query of this shape (and dtype, for mechanisms
        whose grid depends on it); raises for anything that cannot be released."""
        raise NotImplementedError

    def privacy_loss(self, shape: Any = (), dtype: Any = None) -> PrivacyLoss:
        """The privacy loss one release of a query of this shape spends (``plan(shape).loss``);
        mechanisms whose loss does not depend on the shape ignore it."""
        return self.plan(shape, dtype).loss

    def accuracy(self, beta: float, shape: Any = ()) -> float:  # pragma: no cover - abstract
        raise NotImplementedError

    # -- the release path ----------------------------------------------------------------------
    def _prepare(self, value: Any) -> Tuple[Any, Tuple[int, ...], Any]:  # pragma: no cover
        """(prepared input, query shape, dtype for plan()); raises for bad input."""
        raise NotImplementedError

    def _charge(self, plan: ReleasePlan) -> None:
        if self.budget is None:
            return
        self.budget.spend(plan.loss, label=plan.mechanism, insecure=not self.rng.is_secure)

    def release(self, value: Any) -> Any:
        """The private answer for ``value`` (the true query result)."""
        prepared, shape, dtype = self._prepare(value)  # bad input fails here
        plan = self.plan(shape, dtype)  # and parameters that cannot serve this shape here
        self._charge(plan)  # once, before any noise; BudgetExceededError leaves all untouched
        return plan.execute(self.rng, prepared)

    def __call__(self, value: Any) -> Any:
        return self.release(value)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(epsilon={self.epsilon}, delta={self.delta})"


def normalise_shape(shape: Any) -> Tuple[int, ...]:
    """A query shape as a tuple of ints >= 0 (an int n means (n,), as NumPy's size=)."""
    if shape is None:
        raise TypeError("shape must be a tuple of ints (or an int), got NoneType")
    return shape_of(shape, "shape", lists=True)  # type: ignore[return-value]


def size_of(shape: Tuple[int, ...]) -> int:
    return int(np.prod(shape, dtype=np.int64))


def check_beta(beta: Any) -> float:
    b = real(beta, "beta")
    if not 0 < b < 1:
        raise ValueError(f"beta must be in (0, 1), got {b!r}")
    return b


def as_real_array(value: Any, name: str = "value") -> np.ndarray:
    """A float64 array of finite values (any numeric dtype or strides; no copy for float64).

    TypeError for non-numeric or complex input (a property of the type, not of the values);
    ValueError for NaN or infinity. That check does depend on the data: its exception reveals
    that some value is not finite (docs/security.md lists it). Integers are returned as int64
    (see :func:`integers_on_grid`), since above 2^53 a float cannot hold them exactly."""
    arr = np.asarray(value)
    if arr.dtype == object and _python_ints(arr):
        return as_integer_array(arr, name)
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_):
        raise TypeError(f"{name} must be numeric, got dtype {arr.dtype}")
    if np.issubdtype(arr.dtype, np.complexfloating):
        raise TypeError(f"{name} must be real, got dtype {arr.dtype}")
    if np.issubdtype(arr.dtype, np.integer) or arr.dtype == np.bool_:
        return clamped_integers(arr, INTEGER_BOUND)
    out = np.asarray(arr, dtype=np.float64)  # no copy when already float64
    # min and max separately (their sum can overflow); NaN propagates into both
    if out.size and not (math.isfinite(float(out.min())) and math.isfinite(float(out.max()))):
        raise ValueError(f"{name} must be finite (found NaN or infinity)")
    return out


def _python_ints(arr: np.ndarray) -> bool:
    """An object array of (Python) ints: NumPy's form for ints beyond int64."""
    return arr.size > 0 and all(
        isinstance(e, (int, np.integer)) and not isinstance(e, (bool, np.bool_)) for e in arr.flat)


def clamped_integers(arr: np.ndarray, bound: int) -> np.ndarray:
    """An integer (or bool) array as int64 clamped to [-bound, bound], without wrap-around for
    any integer dtype (uint64 above 2^63, int64's minimum, whose absolute value overflows)."""
    if arr.dtype == np.bool_:
        return arr.astype(np.int64)
    if arr.dtype == np.uint64:
        return np.minimum(arr, np.uint64(bound)).astype(np.int64)
    return np.clip(arr.astype(np.int64, copy=False), -bound, bound)


def as_integer_array(value: Any, name: str = "value", bound: int = INTEGER_BOUND) -> np.ndarray:
    """An int64 array clamped to [-bound, bound] (default 2^61: the clamp of the integer
    mechanisms). TypeError for non-integer dtypes, which does not depend on the values, except
    for Python ints beyond int64, which NumPy stores as objects: those are clamped too."""
    arr = np.asarray(value)
    if arr.dtype == object and _python_ints(arr):
        arr = np.array([max(-bound, min(bound, int(e))) for e in arr.flat], dtype=np.int64).reshape(arr.shape)
    if not (np.issubdtype(arr.dtype, np.integer) or arr.dtype == np.bool_):
        raise TypeError(f"{name} must be integers for this mechanism, got dtype {arr.dtype}")
    return clamped_integers(arr, bound)


def integers_on_grid(values: np.ndarray, k: int) -> np.ndarray:
    """int64 ``values`` as float64 multiples of 2^k (round(v / 2^k) · 2^k, ties to even),
    clamped to GRID_BOUND grid units: exact integer rounding, so an int above 2^53 is not first
    rounded to a double (double rounding could move it by more than half a grid step)."""
    v = values.astype(np.int64, copy=False)
    if k <= 0:  # integers are multiples of 2^k: clamp (exact in int64, then in float64)
        return clamp_to_grid(np.clip(v, -GRID_BOUND, GRID_BOUND).astype(np.float64), k)
    if k >= 62:  # |v| <= 2^61 < 2^(k-1): every value rounds to 0
        return np.zeros(v.shape)
    q = v >> k  # floor(v / 2^k)
    r = v - (q << k)
    half = np.int64(1) << np.int64(k - 1)
    up = (r > half) | ((r == half) & ((q & 1) == 1))
    g = np.clip(q + up, -GRID_BOUND, GRID_BOUND)
    return np.ldexp(g.astype(np.float64), k)


def clamp_to_grid(x: np.ndarray, k: int) -> np.ndarray:
    """Finite float64 ``x`` clamped to [-2^(52+k), 2^(52+k)] (GRID_BOUND grid units), exactly:
    the result rounds onto the grid inside GRID_BOUND, as _noisy_grid's clamp would, without
    NumPy overflow warnings in its scaling."""
    if 52 + k >= 1024:  # every finite double is within the bound
        return x
    lim = math.ldexp(1.0, 52 + k)
    return np.clip(x, -lim, lim)


# -- records outside a categorical mechanism's public domain ------------------------------------
OUT_OF_DOMAIN = ("clamp", "drop", "raise")
# The default: the only policy whose observable behaviour (no exception, same output shape) does
# not depend on the data; docs/security.md gives the reasoning.
DEFAULT_OUT_OF_DOMAIN = "clamp"


def check_out_of_domain(value: Any, *, drop: bool = True) -> str:
    """One of OUT_OF_DOMAIN ("drop" only where a dropped record cannot change the output's shape)."""
    allowed = OUT_OF_DOMAIN if drop else tuple(p for p in OUT_OF_DOMAIN if p != "drop")
    if not isinstance(value, str) or value not in allowed:
        extra = "" if drop else (" ('drop' is refused here: the output's length would reveal how many "
                                 "records were dropped)")
        raise ValueError(f"out_of_domain must be one of {allowed}, got {value!r}{extra}")
    return value


def out_of_domain_error(domain: str) -> ValueError:
    """The exception of out_of_domain='raise'; it names the public domain, never a value."""
    return ValueError(f"some records are outside {domain} (out_of_domain='raise'; this exception "
                      "reveals that such a record exists: use 'clamp' or 'drop' on private data)")
