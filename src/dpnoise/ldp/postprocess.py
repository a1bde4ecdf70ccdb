"""Optional post-processing of frequency-oracle estimates: never applied silently, each its own call.

The estimates an aggregator returns are unbiased but can be negative and need not sum to the
number of users. These functions trade that unbiasedness for consistency (Wang, Lopuhaä-Zwakenberg,
Li, Škorić & Li, "Locally Differentially Private Frequency Estimation with Consistency", NDSS 2020):

* :func:`clip_nonnegative` — "Base-Pos": negative estimates become 0 (sum not fixed);
* :func:`norm_sub` — "Norm-Sub": negatives become 0 and one shift δ is subtracted from the
  positive estimates (repeatedly, as more reach 0) so that they sum to ``total``;
* :func:`project_simplex` — the Euclidean projection onto {y ≥ 0, Σ y = total}, the closest
  consistent vector (Duchi, Shalev-Shwartz, Singer & Chandra, ICML 2008, Fig. 1).

Norm-Sub and the projection agree whenever the positive estimates sum to more than ``total``
(the usual case at scale); when they sum to less, Norm-Sub raises only the items it kept
positive while the projection may also raise items whose estimate was slightly negative.

Post-processing uses only the released estimates, so it costs no privacy; the protocols'
``variance()`` and ``stderr()`` describe the raw estimates, not these.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["clip_nonnegative", "norm_sub", "project_simplex"]


def _estimates(values: Any) -> np.ndarray:
    try:
        arr = np.asarray(values)
    except Exception as exc:  # ragged or otherwise not array-like
        raise TypeError(f"estimates must be a 1-D array of numbers: {exc}") from None
    if arr.dtype == bool or not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
        raise TypeError(f"estimates must be a 1-D array of integers or floats, got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise ValueError(f"estimates must be 1-D, got shape {arr.shape}")
    out = arr.astype(np.float64)
    if not np.all(np.isfinite(out)):
        raise ValueError("estimates must be finite (no NaN or infinity)")
    return out


def _total(total: Any, estimates: np.ndarray) -> float:
    if isinstance(total, bool) or not isinstance(total, (int, float, np.integer, np.floating)):
        raise TypeError(f"total must be a number (the number of users), got {type(total).__name__}")
    try:
        t = float(total)
    except OverflowError:  # an int beyond float range
        raise ValueError("total must be finite and non-negative (it does not fit a float)") from None
    if not math.isfinite(t) or t < 0:
        raise ValueError(f"total must be finite and non-negative, got {total!r}")
    if t > 0 and estimates.size == 0:
        raise ValueError("total must be 0 when there are no estimates")
    return t


def clip_nonnegative(estimates: Any) -> np.ndarray:
    """Negative estimates set to 0 ("Base-Pos", Wang et al. 2020 §4.1). Returns a new float64
    array; biased upward for rare items, the sum is not fixed.

    Parameters
    ----------
    estimates : array_like
        Count estimates (e.g. ``agg.estimate()``), finite.

    Returns
    -------
    numpy.ndarray of float64
        Same shape, no negative entry.
    """
    return np.maximum(_estimates(estimates), 0.0)


def _project(x: np.ndarray, t: float) -> np.ndarray:
    """The projection of non-empty ``x`` onto {y ≥ 0, Σ y = t}, t > 0 (Duchi et al. 2008, Fig. 1).

    Computed relative to the largest estimate m (θ − m from the estimates minus m), so that the
    first candidate k = 1 is exact in floating point, (m − m) − ((m − m) − t) = t > 0, even when
    t is far below the spacing of floats near m (or m + t overflows)."""
    rel = np.sort(x)[::-1] - x.max()              # <= 0, the first entry exactly 0
    with np.errstate(over="ignore", invalid="ignore"):  # differences beyond float range
        theta = (np.cumsum(rel) - t) / np.arange(1, x.size + 1)
        ok = np.nonzero(rel - theta > 0)[0]
        rho = int(ok[-1]) if ok.size else 0       # k = 1 always qualifies (see above)
        return np.maximum((x - x.max()) - theta[rho], 0.0)


def norm_sub(estimates: Any, total: float) -> np.ndarray:
    """Norm-Sub (Wang et al. 2020 §4.3): set negative estimates to 0, then add one common shift
    to the positive ones so that they sum to ``total`` (the number of users, ``agg.n``), and
    repeat while the shift pushes some of them to 0 or below.

    The kept set is always a prefix of the positive estimates sorted in decreasing order, so the
    fixed point is the simplex projection of the positive estimates alone: O(d log d).
    ``total`` is normally ``agg.n``.

    Parameters
    ----------
    estimates : array_like
        Finite count estimates.
    total : float
        The sum the output must have (>= 0).

    Returns
    -------
    numpy.ndarray of float64
        Non-negative, summing to ``total`` (zeros where estimates were <= 0).

    Raises
    ------
    ValueError
        For non-finite input or a bad total, or when no estimate is positive (use
        :func:`project_simplex`).
    """
    x = _estimates(estimates)
    t = _total(total, x)
    out = np.zeros_like(x)
    if x.size == 0 or t == 0:
        return out
    positive = x > 0
    if not positive.any():
        raise ValueError("no estimate is positive, so Norm-Sub has nothing to rescale; use "
                         "project_simplex (which spreads the total over the largest estimates)")
    out[positive] = _project(x[positive], t)
    return out


def project_simplex(estimates: Any, total: float) -> np.ndarray:
    """The Euclidean projection of the estimates onto {y : y ≥ 0, Σ y = total}: the consistent
    vector closest to them (Duchi et al. 2008, Fig. 1: y = max(x − θ, 0) with θ chosen so that
    the sum is ``total``, normally ``agg.n``). O(d log d).

    Parameters
    ----------
    estimates : array_like
        Finite count estimates.
    total : float
        The simplex's sum (>= 0).

    Returns
    -------
    numpy.ndarray of float64
        The projection.
    """
    x = _estimates(estimates)
    t = _total(total, x)
    if x.size == 0 or t == 0:  # the simplex of total 0 is {0}
        return np.zeros_like(x)
    return _project(x, t)
