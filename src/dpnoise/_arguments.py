"""Validation of the arguments every sampling call shares: ``size`` and ``threads``."""
from __future__ import annotations

from typing import Any, Optional, Tuple, Union

import numpy as np

Size = Union[None, int, Tuple[int, ...]]


def check_threads(threads: Any) -> int:
    """None means 1; otherwise an int in [1, 4096]."""
    if threads is None:
        return 1
    if isinstance(threads, (bool, np.bool_)) or not isinstance(threads, (int, np.integer)):
        raise TypeError(f"threads must be a positive int or None, got {type(threads).__name__}")
    if not 1 <= int(threads) <= 4096:
        raise ValueError(f"threads must be between 1 and 4096, got {threads!r}")
    return int(threads)


def _check_count(size: Any) -> int:
    if isinstance(size, (bool, np.bool_)) or not isinstance(size, (int, np.integer)):
        raise TypeError(f"size must be an int, a tuple of ints or None, got {type(size).__name__}")
    if int(size) < 0:
        raise ValueError(f"size must be non-negative, got {size!r}")
    return int(size)


def shape_of(size: Size) -> Optional[Tuple[int, ...]]:
    """The output shape for ``size`` (None stays None: the caller returns a scalar)."""
    if size is None:
        return None
    if isinstance(size, tuple):
        return tuple(_check_count(s) for s in size)
    return (_check_count(size),)


def count_of(shape: Optional[Tuple[int, ...]]) -> int:
    """Number of samples a shape holds (a scalar request is one sample)."""
    return 1 if shape is None else int(np.prod(shape, dtype=np.int64))
