"""Release step 1, validate: the checks and input conversions every release shares.

Mechanisms and selection both use these, so that an input is read the same way (the same
clamps, the same exception types) whichever release path serves it.
"""
from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from .._rational import _magnitude
from .._validate import MAX_EPSILON, positive, probability, real, shape_of
from .buffers import as_array
from .constant_time import integers as _ct_integers
from .plan import GRID_BOUND, INTEGER_BOUND, MAX_LAPLACE_SCALE

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


def check_laplace_scale(scale: Fraction, what: str) -> None:
    """ValueError (naming ``what``) when a discrete Laplace scale passes MAX_LAPLACE_SCALE."""
    if scale > MAX_LAPLACE_SCALE:
        raise ValueError(f"{what} needs discrete Laplace noise of scale {_magnitude(scale)} grid units, "
                         f"beyond 2^44 (noisy values must stay exact): use a larger epsilon")


def normalise_shape(shape: Any) -> tuple[int, ...]:
    """A query shape as a tuple of ints >= 0 (an int n means (n,), as NumPy's size=)."""
    if shape is None:
        raise TypeError("shape must be a tuple of ints (or an int), got NoneType")
    return shape_of(shape, "shape", lists=True)  # type: ignore[return-value]


def size_of(shape: tuple[int, ...]) -> int:
    return int(np.prod(shape, dtype=np.int64))


def check_beta(beta: Any) -> float:
    b = real(beta, "beta")
    if not 0 < b < 1:
        raise ValueError(f"beta must be in (0, 1), got {b!r}")
    return b


def numeric_array(value: Any, name: str = "value", bound: int = INTEGER_BOUND) -> np.ndarray:
    """``value`` as a real NumPy array whose dtype follows the *types* of its elements, never
    their magnitudes (no copy for an ndarray).

    NumPy infers float64 for ``[2**63, -1]`` and object for ``[2**64, 1]``, while ``[5, 6]`` is
    int64: left alone, the size of a private value would pick the release path (the real grid
    or the integers) or the exception. A list, tuple or scalar whose elements are all ints
    (Python or NumPy, bools included) is therefore converted exactly here, each clamped to
    [-bound, bound] (default 2^61) as the integer path clamps it; so is an object array of ints.

    Raises
    ------
    TypeError
        For non-numeric dtypes (objects, strings, datetime64, timedelta64) and complex numbers:
        a property of the type, not of the values.
    """
    value = as_array(value, name)  # a DLPack tensor (CPU) as a NumPy view
    arr = np.asarray(value)
    if arr.size and (arr.dtype == object or (arr.dtype.kind == "f" and not isinstance(value, np.ndarray))):
        objs = arr if arr.dtype == object else np.asarray(value, dtype=object)
        if _python_ints(objs):
            arr = np.array([max(-bound, min(bound, int(e))) for e in objs.flat], dtype=np.int64).reshape(objs.shape)
    if arr.dtype.kind in "mM":  # NumPy counts timedelta64 among the integers: refuse it by name
        raise TypeError(f"{name} must be numeric, got dtype {arr.dtype} (datetimes and durations are refused)")
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_):
        raise TypeError(f"{name} must be numeric, got dtype {arr.dtype}")
    if np.issubdtype(arr.dtype, np.complexfloating):
        raise TypeError(f"{name} must be real, got dtype {arr.dtype}")
    return arr


_DBL_MAX = float(np.finfo(np.float64).max)


def finite_reals(arr: np.ndarray, name: str, keep: tuple[Any, ...] = (np.float64,)) -> np.ndarray:
    """A real array checked finite, then as float64 unless its dtype is in ``keep``.

    The check runs on the input's own dtype, before any conversion, and a wider float
    (longdouble) is clamped to the largest double first, so a finite value never becomes
    infinity: only NaN and infinity raise (ValueError; that exception depends on the data and
    docs/security.md lists it). The clamp is 1-Lipschitz and far beyond every grid's clamp.
    """
    # min and max separately (their sum can overflow); NaN propagates into both
    if arr.size and not (np.isfinite(arr.min()) and np.isfinite(arr.max())):
        raise ValueError(f"{name} must be finite (found NaN or infinity)")
    if arr.dtype in keep:
        return arr
    if arr.dtype.itemsize > 8:
        arr = np.clip(arr, -_DBL_MAX, _DBL_MAX)
    return np.asarray(arr, dtype=np.float64)


def as_real_array(value: Any, name: str = "value", keep: tuple[Any, ...] = (np.float64,),
                  clamp: bool = True) -> np.ndarray:
    """A float64 array of finite values (any numeric dtype or strides; no copy for float64, nor
    for the other float dtypes in ``keep``, e.g. float32 for mechanisms that keep it).

    TypeError for non-numeric or complex input (a property of the type, not of the values);
    ValueError for NaN or infinity. That check does depend on the data: its exception reveals
    that some value is not finite (docs/security.md lists it). Integers are returned as int64
    (see :func:`integers_on_grid`), since above 2^53 a float cannot hold them exactly, clamped
    to ±2^61 unless ``clamp`` is False (constant-time releases: the kernel clamps by masks)."""
    arr = numeric_array(value, name)
    if np.issubdtype(arr.dtype, np.integer) or arr.dtype == np.bool_:
        return clamped_integers(arr, INTEGER_BOUND) if clamp else _ct_integers(arr)
    return finite_reals(arr, name, keep)


def _python_ints(arr: np.ndarray) -> bool:
    """An object array of ints (Python or NumPy, bools included)."""
    return arr.size > 0 and all(isinstance(e, (int, np.integer, np.bool_)) for e in arr.flat)


def clamped_integers(arr: np.ndarray, bound: int) -> np.ndarray:
    """An integer (or bool) array as int64 clamped to [-bound, bound], without wrap-around for
    any integer dtype (uint64 above 2^63, int64's minimum, whose absolute value overflows)."""
    if arr.dtype == np.bool_:
        return arr.astype(np.int64)
    if arr.dtype == np.uint64:
        return np.minimum(arr, np.uint64(bound)).astype(np.int64)
    return np.clip(arr.astype(np.int64, copy=False), -bound, bound)


def as_integer_array(value: Any, name: str = "value", bound: int = INTEGER_BOUND,
                     clamp: bool = True) -> np.ndarray:
    """An int64 array clamped to [-bound, bound] (default 2^61: the clamp of the integer
    mechanisms). TypeError for non-integer dtypes, which does not depend on the values, except
    for Python ints beyond int64, which NumPy stores as objects: those are clamped too.
    ``clamp=False`` (constant-time releases): int64 by a cast and masks only, no comparison on
    the values; the kernel clamps (dpnoise._release.constant_time.integers)."""
    arr = numeric_array(value, name, bound)
    if not (np.issubdtype(arr.dtype, np.integer) or arr.dtype == np.bool_):
        raise TypeError(f"{name} must be integers for this mechanism, got dtype {arr.dtype}")
    return clamped_integers(arr, bound) if clamp else _ct_integers(arr)


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
