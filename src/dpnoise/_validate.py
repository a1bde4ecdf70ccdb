"""Argument checks at the public boundary, in one place; every message names the argument.

Also the one source of the core's integer limit (``MAX_PART`` = 2^62: numerators, denominators,
grid values and noise all stay within it, so int64 arithmetic on them never wraps).
"""
from __future__ import annotations

import math
import numbers
from typing import Any, Union

import numpy as np

# The C++ core takes numerators and denominators up to 2^62 and keeps grid values and noise
# within +-2^62, so a sum of two of them never wraps in int64.
MAX_PART = 1 << 62

Size = Union[None, int, tuple[int, ...]]


def real(value: Any, name: str) -> float:
    """A finite-or-infinite real as float; TypeError for non-numbers, ValueError for NaN."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} ({value!r})")
    try:
        v = float(value)
    except OverflowError:  # an int or Fraction beyond the largest double
        raise OverflowError(f"{name} is too large (beyond the largest double)") from None
    if math.isnan(v):
        raise ValueError(f"{name} must not be NaN")
    return v


# ε above this is no privacy at all, and e^ε overflows the accountants' arithmetic near 709
MAX_EPSILON = 100.0


def check_epsilon(value: Any, name: str = "epsilon", *, minimum: float | None = None,
                  maximum: float | None = None) -> float:
    """ε as a float: a finite real > 0 (or >= ``minimum``), at most ``maximum``.

    Parameters
    ----------
    value : real
        The privacy parameter.
    name : str, optional
        The argument's name in error messages.
    minimum : float, optional
        The least accepted value (inclusive); None: any value > 0.
    maximum : float, optional
        The largest accepted value (inclusive); None: ``MAX_EPSILON`` = 100.

    Returns
    -------
    float

    Raises
    ------
    TypeError
        For a non-real (bools included).
    ValueError
        For NaN, infinity, a value <= 0, below ``minimum`` or above ``maximum`` (an int too
        large for a double is "above ``maximum``" too: the exception type never depends on the
        magnitude).

    Examples
    --------
    >>> check_epsilon(0.5)
    0.5
    >>> check_epsilon(2.0**-60, minimum=2.0**-50)
    Traceback (most recent call last):
    ...
    ValueError: epsilon must be at least 8.88178e-16, got 8.673617379884035e-19
    """
    top = MAX_EPSILON if maximum is None else float(maximum)
    try:
        eps = positive(value, name)
    except OverflowError:  # an int or Fraction beyond the largest double
        raise ValueError(f"{name} must be at most {top:g}") from None
    if eps > top:
        raise ValueError(f"{name} must be at most {top:g}, got {eps!r}")
    if minimum is not None and eps < minimum:
        raise ValueError(f"{name} must be at least {float(minimum):g}, got {eps!r}")
    return eps


def nonnegative(value: Any, name: str) -> float:
    """A finite real >= 0 (-0.0 is read as 0)."""
    v = real(value, name)
    if math.isinf(v):
        raise ValueError(f"{name} must be finite, got {v!r}")
    if v < 0:
        raise ValueError(f"{name} must be >= 0, got {v!r}")
    return v + 0.0  # turns -0.0 into 0.0


def positive(value: Any, name: str) -> float:
    """A finite real > 0."""
    v = real(value, name)
    if math.isinf(v):
        raise ValueError(f"{name} must be finite, got {v!r}")
    if not v > 0:
        raise ValueError(f"{name} must be > 0, got {v!r}")
    return v


def probability(value: Any, name: str, *, upper_open: bool = False) -> float:
    """A real in [0, 1] (or [0, 1) with upper_open)."""
    v = real(value, name)
    if not 0.0 <= v <= 1.0 or (upper_open and v == 1.0):
        bound = "[0, 1)" if upper_open else "[0, 1]"
        raise ValueError(f"{name} must be in {bound}, got {v!r}")
    return v + 0.0


def rate(value: Any, name: str = "rate") -> float:
    """A sampling rate in (0, 1]."""
    v = real(value, name)
    if not 0.0 < v <= 1.0:
        raise ValueError(f"{name} must be in (0, 1], got {v!r}")
    return v


def integer(value: Any, name: str) -> int:
    """An int (Python or NumPy integer); bools and floats are refused, even integral ones."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    return int(value)


def integer_at_least(value: Any, name: str, low: int, what: str) -> int:
    """An int (as :func:`integer`) that is at least ``low``; ``what`` states the bound in the
    ValueError's message (e.g. ">= 1")."""
    n = integer(value, name)
    if n < low:
        raise ValueError(f"{name} must be {what}, got {n}")
    return n


def count(value: Any, name: str = "count") -> int:
    """An integer in [1, 2^62] (bools and floats are refused, even integral ones). Counts feed
    float arithmetic (composition, calibration): beyond 2^62 they would overflow it, and no
    analysis of that many uses is meaningful."""
    n = integer_at_least(value, name, 1, ">= 1")
    if n > MAX_PART:
        raise OverflowError(f"{name} must be at most 2^62, got a number of {len(str(n))} digits")
    return n


def integer_sensitivity(value: Any, name: str = "sensitivity") -> int:
    """Discrete mechanisms shift integer outputs: the sensitivity must be a positive integer."""
    v = positive(value, name)
    if v != math.floor(v):
        raise ValueError(f"{name} of a discrete mechanism must be a positive integer, got {v!r}")
    return int(v)


def neighbours(value: Any) -> str:
    if value not in ("add_remove", "replace"):
        raise ValueError(f"neighbours must be 'add_remove' or 'replace', got {value!r}")
    return str(value)


# -- the arguments every sampling call shares: size and threads --------------------------------

# The most OS threads one call asks for. It is a cap on the wish, not a promise: when the system
# refuses to create a thread (address-space or process limits), the C++ core runs the remaining
# work on the threads it has (cpp/include/dpnoise/parallel.hpp), with the same output.
MAX_THREADS = 4096

# The most elements one request may hold: 2^59, so that the bytes of a 64-bit output
# (8 * count <= 2^62) fit NumPy's intp and the C++ size_t arithmetic with room to spare. A request
# below the limit that does not fit in memory raises MemoryError when its output is allocated.
MAX_SIZE = 1 << 59


def check_threads(threads: Any) -> int:
    """None means 1; otherwise an int in [1, MAX_THREADS]."""
    if threads is None:
        return 1
    n = integer(threads, "threads")
    if not 1 <= n <= MAX_THREADS:
        raise ValueError(f"threads must be between 1 and {MAX_THREADS}, got {n}")
    return n


def _check_count(size: Any, name: str = "size") -> int:
    n = integer_at_least(size, name, 0, "non-negative")
    if n > MAX_SIZE:
        raise ValueError(f"{name} must be at most 2**59 elements, got {n}")
    return n


def shape_of(size: Size, name: str = "size", *, lists: bool = False) -> tuple[int, ...] | None:
    """The output shape for ``size`` (None stays None: the caller returns a scalar).

    ``size`` is an int or a tuple of ints (also a list when ``lists``), each >= 0; the element
    count (their product, computed exactly) must be at most MAX_SIZE = 2^59, else ValueError
    naming ``name``. TypeError for anything else (bools included).
    """
    if size is None:
        return None
    if isinstance(size, tuple) or (lists and isinstance(size, list)):
        shape = tuple(_check_count(s, name) for s in size)
    elif isinstance(size, (int, np.integer)) and not isinstance(size, (bool, np.bool_)):
        shape = (_check_count(size, name),)
    else:
        raise TypeError(f"{name} must be an int, a tuple of ints or None, got {type(size).__name__}")
    total = math.prod(shape)  # exact (Python ints): no int64 wrap-around
    if total > MAX_SIZE:
        raise ValueError(f"{name} {shape} holds {total} elements, more than the limit 2**59")
    return shape


def count_of(shape: tuple[int, ...] | None) -> int:
    """Number of samples a shape holds (a scalar request is one sample); ValueError naming size
    when it exceeds MAX_SIZE (shapes from :func:`shape_of` never do)."""
    if shape is None:
        return 1
    total = math.prod(int(s) for s in shape)
    if total > MAX_SIZE:
        raise ValueError(f"size {tuple(shape)} holds {total} elements, more than the limit 2**59")
    return total


# -- accounting: a privacy-loss ratio (sensitivity / noise scale) the float analysis can hold ----

MAX_LOSS_RATIO = 1e6


def loss_ratio(sensitivity: float, scale: float, sensitivity_name: str, scale_name: str) -> None:
    """OverflowError unless sensitivity/scale <= MAX_LOSS_RATIO (a per-release ε of 10^6 or a
    zCDP ρ of 5·10^11 is no privacy, and beyond it the loss arithmetic overflows)."""
    if not sensitivity <= MAX_LOSS_RATIO * scale:
        raise OverflowError(f"{sensitivity_name}/{scale_name} must be <= {MAX_LOSS_RATIO:g}, got "
                            f"{sensitivity_name}={sensitivity!r}, {scale_name}={scale!r}")
