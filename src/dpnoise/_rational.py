"""Turn user parameters into the exact rationals the C++ samplers take.

Every float is an exact dyadic rational (``Fraction(x)`` is exact), so a float parameter is
used at its exact value whenever numerator and denominator fit the core's limits (2^62).
Otherwise it is rounded *toward more noise*: scales and variances are rounded up, never down.
This module is the one place where user input is validated and converted.
"""
from __future__ import annotations

import decimal
import math
import numbers
from fractions import Fraction
from typing import Any, Callable

import numpy as np

from dpnoise._validate import MAX_PART

# The discrete Gaussian's acceptance test stays in fast 128-bit arithmetic when
# num * den of the variance is at most 2^96; a variance that must be rounded anyway is
# rounded (up) to meet this too. Exact variances are never changed.
MAX_VARIANCE_PRODUCT = 1 << 96

Pair = tuple[int, int]


def to_fraction(value: Any, name: str) -> Fraction:
    """The exact value of a real parameter, or TypeError/ValueError naming ``name``."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a real number, not bool ({value!r})")
    if isinstance(value, Fraction):
        return value
    if isinstance(value, (int, np.integer)):
        return Fraction(int(value))
    if isinstance(value, (float, np.floating)):
        v = float(value)
        if math.isnan(v):
            raise ValueError(f"{name} must not be NaN")
        if math.isinf(v):
            raise ValueError(f"{name} must be finite, got {v!r}")
        return Fraction(v)  # exact: a double is a dyadic rational
    if isinstance(value, numbers.Rational):
        return Fraction(int(value.numerator), int(value.denominator))  # Integral -> int: exact
    if isinstance(value, (numbers.Real, decimal.Decimal)):  # Decimal is not a numbers.Real
        if isinstance(value, decimal.Decimal) and value.is_nan():
            raise ValueError(f"{name} must not be NaN")
        try:
            return Fraction(value)  # type: ignore[arg-type]
        except (ValueError, OverflowError) as exc:
            raise ValueError(f"{name} must be finite, got {value!r}") from exc
    raise TypeError(
        f"{name} must be an int, float or fractions.Fraction, got {type(value).__name__}"
    )


def _show(value: Any) -> str:
    return str(value) if isinstance(value, Fraction) else repr(value)


def nonnegative(value: Any, name: str) -> Fraction:
    fr = to_fraction(value, name)
    if fr < 0:
        raise ValueError(f"{name} must be >= 0, got {_show(value)}")
    return fr


def round_up(fr: Fraction, name: str, max_product: int | None = None) -> Pair:
    """(num, den) with num/den >= fr and num, den <= 2^62 (and num*den <= max_product).

    Exact when fr already fits; otherwise the smallest dyadic num/2^k above fr with the
    largest k that fits (relative error below 2^-60 for values in [2^-60, 2^60]).
    """
    p, q = fr.numerator, fr.denominator
    if p == 0:
        return 0, 1
    if p <= MAX_PART and q <= MAX_PART and (max_product is None or p * q <= max_product):
        return p, q
    for k in range(62, -1, -1):
        num = -((-p << k) // q)  # ceil(p 2^k / q)
        if num <= MAX_PART and (max_product is None or num << k <= max_product):
            return num, 1 << k
    raise OverflowError(f"{name} is too large (at most about 2^62 is supported), got about {_magnitude(fr)}")


def _magnitude(fr: Fraction) -> str:
    """fr in scientific notation without converting it to a float (which may overflow)."""
    try:
        return f"{float(fr):.6g}"
    except OverflowError:
        digits = len(str(abs(fr.numerator) // fr.denominator))
        return f"1e{digits - 1}" if fr > 0 else f"-1e{digits - 1}"


def round_nearest_probability(fr: Fraction, name: str) -> Pair:
    """(num, den) for a probability: exact when den <= 2^62, else the nearest multiple of 2^-62."""
    if fr < 0 or fr > 1:
        raise ValueError(f"{name} must be in [0, 1], got {_magnitude(fr)}")
    if fr.denominator <= MAX_PART:
        return fr.numerator, fr.denominator
    return round(fr * MAX_PART), MAX_PART


def scale_pair(value: Any, name: str) -> Pair:
    return round_up(nonnegative(value, name), name)


def variance_pair(value: Any, name: str) -> Pair:
    return round_up(nonnegative(value, name), name, MAX_VARIANCE_PRODUCT)


def sigma_to_variance_pair(value: Any, name: str) -> Pair:
    sigma = nonnegative(value, name)
    if sigma * sigma > MAX_PART:
        raise OverflowError(f"{name} is too large: sigma^2 must be at most 2^62 (sigma <= 2^31), "
                            f"got sigma = {_magnitude(sigma)}")
    return round_up(sigma * sigma, name, MAX_VARIANCE_PRODUCT)


def probability_pair(value: Any, name: str) -> Pair:
    return round_nearest_probability(to_fraction(value, name), name)


def gamma_pair(value: Any, name: str) -> Pair:
    return round_up(nonnegative(value, name), name)


def _as_array(values: Any, name: str) -> np.ndarray:
    try:
        return np.asarray(values)
    except (ValueError, TypeError) as exc:  # ragged nesting
        raise ValueError(f"{name} must be a real number or a rectangular array of real numbers") from exc


def parameter_array(values: Any, name: str) -> np.ndarray:
    """``values`` as an array of real numbers (object arrays for Fractions, Decimals and ints
    beyond int64), or TypeError naming ``name``."""
    arr = _as_array(values, name)
    if arr.dtype == np.bool_:
        raise TypeError(f"{name} must contain real numbers, not bool")
    if arr.dtype.kind not in "iufO":
        raise TypeError(f"{name} must contain real numbers, got dtype {arr.dtype}")
    return arr


def parameter_table(values: Any, name: str, convert: Callable[[Any, str], Pair],
                    ) -> tuple[tuple[int, ...], np.ndarray, np.ndarray, np.ndarray]:
    """Convert an array-like parameter. Returns (shape, nums, dens, index) where element i of
    the flattened parameter uses nums[index[i]] / dens[index[i]]. Only distinct values are
    converted, so large arrays with few distinct values are cheap."""
    arr = _as_array(values, name)
    if arr.dtype == np.bool_:
        raise TypeError(f"{name} must contain real numbers, not bool")
    if arr.dtype.kind not in "iufO":
        raise TypeError(f"{name} must contain real numbers, got dtype {arr.dtype}")
    flat = arr.reshape(-1)
    if arr.dtype.kind == "O":
        # Objects (Fractions, Python ints beyond int64): convert each distinct one.
        cache: dict[tuple[type, Any], int] = {}
        pairs: list[Pair] = []
        index = np.empty(flat.shape[0], dtype=np.int64)
        for i, v in enumerate(flat):
            if isinstance(v, decimal.Decimal) and v.is_nan():  # a signalling NaN cannot be hashed
                raise ValueError(f"{name} must not be NaN")
            key = (type(v), v)
            if key not in cache:
                cache[key] = len(pairs)
                pairs.append(convert(v, name))
            index[i] = cache[key]
    else:
        if arr.dtype.kind == "f" and flat.size and not np.isfinite(flat).all():
            bad = flat[~np.isfinite(flat)][0]
            raise ValueError(f"{name} must be finite, got {bad!r}")
        uniques, inverse = np.unique(flat, return_inverse=True)
        pairs = [convert(v.item(), name) for v in uniques]
        index = inverse.astype(np.int64).reshape(-1)
    nums = np.array([p[0] for p in pairs], dtype=np.uint64)
    dens = np.array([p[1] for p in pairs], dtype=np.uint64)
    return arr.shape, nums, dens, index
