"""Rounding real queries onto the grid 2^k (Mironov 2012's defence, as in DESIGN.md §3).

A real value x becomes the integer round(x / 2^k); integer noise is added in grid units and the
result is returned as the double (v + noise)·2^k, which is exact while |v + noise| <= 2^53.
Rounding moves each coordinate by at most half a grid step, so two neighbouring inputs whose
difference has norm Δ give grid values whose difference has L1 norm <= Δ/2^k + d and L2 norm
<= Δ/2^k + sqrt(d) (d coordinates); that is the widened sensitivity the noise is calibrated to.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._validate import real

EXACT_FLOAT = 2**53
# default grid: the rounding may widen the sensitivity by at most 1/1024 of itself
WIDENING = 1024
# Grid exponents a plan accepts: 2^k normal (so y·2^k is exact for every |y| <= 2^53) and
# 2^(53+k) finite (so y·2^k never overflows a double).
MIN_EXPONENT = -1022
MAX_EXPONENT = 970


def check_granularity(value: Any) -> int | None:
    """None, or the exponent k of a granularity that must be an exact power of two 2^k."""
    if value is None:
        return None
    g = real(value, "granularity")
    if not (g > 0 and math.isfinite(g)):
        raise ValueError(f"granularity must be a finite power of two > 0, got {g!r}")
    m, e = math.frexp(g)
    if m != 0.5:
        raise ValueError(f"granularity must be a power of two (2^k), got {g!r}")
    if not MIN_EXPONENT <= e - 1 <= MAX_EXPONENT:
        raise ValueError(f"granularity must be between 2^{MIN_EXPONENT} and 2^{MAX_EXPONENT} (outputs are "
                         f"exact doubles y·2^k for |y| <= 2^53), got 2^{e - 1}")
    return e - 1


def default_exponent(sensitivity: float, spread: float) -> int:
    """The largest k with 2^k · spread <= sensitivity / WIDENING (spread = d for L1, √d for L2),
    within [MIN_EXPONENT, MAX_EXPONENT]; computed on logarithms, so nothing underflows."""
    k = math.floor(math.log2(sensitivity) - math.log2(WIDENING) - math.log2(spread))
    return min(max(k, MIN_EXPONENT), MAX_EXPONENT)


def grid_units(value: float, k: int) -> float:
    """value / 2^k (exact unless it overflows, which the callers' limits exclude)."""
    if math.log2(value) - k > 1000:
        return math.inf
    return math.ldexp(value, -k)


def _times_power_of_two(x: np.ndarray, e: int) -> np.ndarray:
    """x * 2^e, exactly as np.ldexp: a product with a normal power of two is exact unless it
    overflows (inf, caught by the callers' range checks) or lands below 2^-1022, where it is
    still exact for the callers' values (multiples of 2^e with at most 53 significant bits) or,
    in to_grid, so small that it rounds to 0 either way. np.ldexp is several times slower."""
    if -1022 <= e <= 1023:
        with np.errstate(over="ignore", under="ignore"):
            return np.asarray(np.multiply(x, 2.0**e))
    with np.errstate(over="ignore", invalid="ignore"):
        return np.asarray(np.ldexp(x, e))


def to_grid(x: np.ndarray, k: int) -> np.ndarray:
    """round(x / 2^k) as int64 (ties to even); OverflowError if the result is not exact."""
    scaled = _times_power_of_two(x, -k)  # exact: multiplying by a power of two
    scaled = np.rint(scaled, out=scaled) if scaled.ndim else np.rint(scaled)
    if scaled.size and not (-EXACT_FLOAT / 2 <= scaled.min() and scaled.max() <= EXACT_FLOAT / 2):
        raise OverflowError(f"value is too large for the grid 2^{k}: at most 2^52 grid steps are supported")
    return scaled.astype(np.int64)


def from_grid(v: np.ndarray, k: int) -> np.ndarray:
    if v.size:
        lo, hi = int(v.min()), int(v.max())
        if not (-EXACT_FLOAT <= lo and hi <= EXACT_FLOAT):
            raise OverflowError("the noisy value does not fit exactly in a double (beyond 2^53 grid steps)")
        try:
            math.ldexp(float(max(-lo, hi)), k)
        except OverflowError:
            raise OverflowError(f"the noisy value times the grid 2^{k} overflows a double") from None
    return _times_power_of_two(v.astype(np.float64), k)  # int64 -> float64 is exact below 2^53


def round_up_short(x: float, bits: int = 21) -> float:
    """x rounded *up* to ``bits`` significant bits (relative change < 2^(1-bits)). Noise
    parameters with short mantissas keep the exact samplers on their 64-bit fast path."""
    if x <= 0:
        return x
    m, e = math.frexp(x)
    return math.ldexp(math.ceil(math.ldexp(m, bits)), e - bits)
