"""Score matrices as the selection kernels read them: checked, viewed as 2-D, never copied.

``prepare_scores`` validates a score vector or matrix before any budget is charged or any noise
drawn, and returns a 2-D *view* (one candidate set per row) that the C++ kernels read with its
own dtype and strides. Real scores are rounded by the kernel to the grid 2^k chosen here, with
the sensitivity widened by the rounding; integer scores are used as they are (clamped to
±2^61, a 1-Lipschitz map).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from .. import _rational as R
from .._release import grid as _grid
from .._release.validate import finite_reals, numeric_array
from .._validate import integer

# The kernels index candidates with 32 bits (select/score_rows.hpp): at most 2^32 - 1 per set.
MAX_CANDIDATES = (1 << 32) - 1
# dtypes the kernels read directly; other real dtypes (float16, longdouble) are converted to
# float64 first (a copy, which NumPy's own reductions would make anyway)
_DIRECT_REAL = (np.dtype(np.float32), np.dtype(np.float64))
# every dtype the kernels read in place, as it is (native byte order): the one-call route
DIRECT_DTYPES = frozenset(np.dtype(t) for t in (np.float32, np.float64, np.bool_, np.int8, np.int16, np.int32,
                                                 np.int64, np.uint8, np.uint16, np.uint32, np.uint64))


@dataclass(frozen=True)
class ScoreLayout:
    """What a release needs to know of the scores' shape: rows (candidate sets), columns
    (candidates per set), whether the input was one vector, and whether they are real."""

    rows: int
    columns: int
    vector: bool
    real: bool


def check_axis(axis: Any, ndim: int) -> int:
    """``axis`` as a non-negative int for an array of ``ndim`` (1 or 2) dimensions."""
    a = integer(axis, "axis")
    if not -ndim <= a < ndim:
        raise ValueError(f"axis must be in [{-ndim}, {ndim - 1}] for {ndim}-D scores, got {a}")
    return a % ndim


def check_k(k: Any, columns: int | None = None) -> int:
    """k >= 1 an int, at most the number of candidates when that is known."""
    kk = integer(k, "k")
    if kk < 1:
        raise ValueError(f"k must be >= 1, got {kk}")
    if columns is not None and kk > columns:
        raise ValueError(f"k must be at most the number of candidates ({columns}), got {kk}")
    return kk


def score_array(scores: Any) -> np.ndarray:
    """``scores`` as an integer, bool or real NumPy array (no copy for those), or TypeError.

    The dtype follows the elements' types, never their magnitudes (``numeric_array``: Python
    ints are converted exactly and clamped as the integer path clamps them); reals other than
    float32/float64 are checked finite on their own dtype, then converted (longdouble clamped to
    the largest double first), so only NaN and infinity raise."""
    arr = numeric_array(scores, "scores")
    if np.issubdtype(arr.dtype, np.floating) and arr.dtype not in _DIRECT_REAL:
        arr = finite_reals(arr, "scores")
    if not arr.dtype.isnative:
        arr = arr.astype(arr.dtype.newbyteorder("="))
    return arr


def prepare_scores(scores: Any, axis: Any) -> tuple[np.ndarray, ScoreLayout, tuple[int, ...]]:
    """(2-D view with candidates along axis 1, layout, the input's shape). Raises for a 0-D or >2-D array, an empty
    axis, or NaN/infinity (that last check depends on the data: the exception reveals that some
    score is not finite, docs/security.md)."""
    arr = score_array(scores)
    if arr.ndim not in (1, 2):
        raise ValueError(f"scores must be a 1-D vector or a 2-D matrix (one candidate set per row), "
                         f"got {arr.ndim}-D")
    ax = check_axis(axis, arr.ndim)
    view = arr[np.newaxis, :] if arr.ndim == 1 else (arr if ax == 1 else arr.T)
    rows, columns = view.shape
    if columns == 0:
        raise ValueError("scores has no candidates along axis (a zero-size axis)")
    if rows == 0:
        raise ValueError("scores has no candidate sets (a zero-size axis)")
    check_candidates(columns)
    real = bool(np.issubdtype(view.dtype, np.floating))
    # min and max need no temporary array, and NaN propagates into both
    if real and not (math.isfinite(float(view.min())) and math.isfinite(float(view.max()))):
        raise ValueError("scores must be finite (found NaN or infinity)")
    return view, ScoreLayout(rows, columns, arr.ndim == 1, real), tuple(arr.shape)


def check_candidates(columns: int, what: str = "scores: candidates per set") -> None:
    """ValueError for more than MAX_CANDIDATES candidates (a property of the shape, checked
    before any charge, so that the C++ kernel's own limit is never reached after it)."""
    if columns > MAX_CANDIDATES:
        raise ValueError(f"{what} must be at most 2^32 - 1, got {columns}")


def layout_of(shape: tuple[int, ...], axis: int, real: bool) -> ScoreLayout:
    """The layout of scores of this shape without the data (for plans and privacy_loss)."""
    if len(shape) not in (1, 2):
        raise ValueError(f"scores must be a 1-D vector or a 2-D matrix, got shape {shape}")
    ax = check_axis(axis, len(shape))
    if len(shape) == 1:
        check_candidates(shape[0])
        return ScoreLayout(1, shape[0], True, real)
    rows, columns = (shape[0], shape[1]) if ax == 1 else (shape[1], shape[0])
    check_candidates(columns)
    return ScoreLayout(rows, columns, False, real)


def grid_for(sensitivity: float) -> tuple[int, int]:
    """(k, widened sensitivity in grid units) for real scores: the grid 2^k with 2^k <=
    sensitivity/1024 (mechanisms/_grid.py), so rounding each score to the nearest multiple moves
    it by at most 2^(k-1) and a difference of at most Δ becomes one of at most Δ/2^k + 1 grid
    units: an integer, hence at most floor(Δ/2^k) + 1."""
    k = _grid.default_exponent(sensitivity, 1)
    units = _grid.grid_units(sensitivity, k)
    return k, math.floor(units) + 1


def selection_gamma(epsilon: float, sensitivity: Any, monotonic: bool) -> tuple[int, int]:
    """gamma = ε/(2Δ), or ε/Δ for monotone scores, as (num, den) with parts <= 2^62, rounded
    down (toward more noise) when the exact value does not fit."""
    gamma = Fraction(epsilon) / (Fraction(sensitivity) * (1 if monotonic else 2))
    scale_num, scale_den = R.round_up(1 / gamma, "2 sensitivity / epsilon")  # 1/gamma rounded up
    return scale_den, scale_num
