"""What every mechanism shares: the generator, the optional budget, input checks, release()."""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .._validate import MAX_PART, positive, probability, real
from ..accounting.budget import PrivacyBudget
from ..accounting.losses import PrivacyLoss
from ..generator import Generator, default_rng


def check_epsilon(value: Any) -> float:
    """ε must be a finite real > 0."""
    return positive(value, "epsilon")


def check_delta(value: Any) -> float:
    """δ must be in [0, 1)."""
    return probability(value, "delta", upper_open=True)


def check_sensitivity(value: Any) -> float:
    return positive(value, "sensitivity")


class Mechanism:
    """Base class. Subclasses set ``epsilon``, ``delta`` and implement ``privacy_loss``,
    ``accuracy`` and ``_release``; ``release`` (and ``__call__``) validates the input, charges the
    bound budget *before* any noise is drawn, then calls ``_release``."""

    epsilon: Optional[float]
    delta: Optional[float]

    def __init__(self, rng: Optional[Generator], budget: Optional[PrivacyBudget]):
        if rng is None:
            rng = default_rng()
        if not isinstance(rng, Generator):
            raise TypeError(f"rng must be a dpnoise.Generator (dpnoise.default_rng()), got {type(rng).__name__}")
        if budget is not None and not isinstance(budget, PrivacyBudget):
            raise TypeError(f"budget must be a dpnoise.accounting.PrivacyBudget, got {type(budget).__name__}")
        self.rng = rng
        self.budget = budget

    def privacy_loss(self) -> PrivacyLoss:  # pragma: no cover - abstract
        raise NotImplementedError

    def accuracy(self, beta: float) -> float:  # pragma: no cover - abstract
        raise NotImplementedError

    def _prepare(self, value: Any) -> Any:
        return value

    def _release(self, prepared: Any) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def release(self, value: Any) -> Any:
        """The private answer for ``value`` (the true query result)."""
        prepared = self._prepare(value)  # bad input fails here, before any budget or noise
        if self.budget is not None:
            self.budget.spend(self.privacy_loss(), label=type(self).__name__)
        return self._release(prepared)

    def __call__(self, value: Any) -> Any:
        return self.release(value)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(epsilon={self.epsilon}, delta={self.delta})"


def check_beta(beta: Any) -> float:
    b = real(beta, "beta")
    if not 0 < b < 1:
        raise ValueError(f"beta must be in (0, 1), got {b!r}")
    return b


def as_real_array(value: Any, name: str = "value") -> np.ndarray:
    """A float64 array of finite values (any dtype/strides accepted; ints converted exactly
    only below 2^53, which is checked)."""
    arr = np.asarray(value)
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_):
        raise TypeError(f"{name} must be numeric, got dtype {arr.dtype}")
    if np.issubdtype(arr.dtype, np.complexfloating):
        raise TypeError(f"{name} must be real, got dtype {arr.dtype}")
    if np.issubdtype(arr.dtype, np.integer) and arr.size and np.max(np.abs(arr.astype(np.float64))) >= 2.0**53:
        raise OverflowError(f"{name} has integers beyond 2^53, which a float grid cannot hold exactly")
    out = np.asarray(arr, dtype=np.float64)  # no copy when already float64
    if out.size and not np.isfinite(out.min() + out.max()):
        raise ValueError(f"{name} must be finite (found NaN or infinity)")
    return out


def as_integer_array(value: Any, name: str = "value") -> np.ndarray:
    arr = np.asarray(value)
    if not (np.issubdtype(arr.dtype, np.integer) or arr.dtype == np.bool_):
        raise TypeError(f"{name} must be integers for this mechanism, got dtype {arr.dtype}")
    if arr.dtype == np.uint64 and arr.size and int(arr.max()) > MAX_PART:
        raise OverflowError(f"{name} is too large (limit 2^62)")
    out = arr.astype(np.int64)
    if out.size and int(np.max(np.abs(out))) > MAX_PART:
        raise OverflowError(f"{name} is too large (limit 2^62)")
    return out


def add_checked(values: np.ndarray, noise: np.ndarray, name: str = "value") -> np.ndarray:
    """values + noise in int64, refusing anything past 2^62 instead of wrapping."""
    if noise.size and not (-MAX_PART <= int(noise.min()) and int(noise.max()) <= MAX_PART):
        raise OverflowError("noise beyond 2^62 grid units: the scale is too large for this grid")
    out = np.add(values, noise, out=noise)  # both within 2^62 in magnitude: no int64 overflow
    if out.size and not (-MAX_PART <= int(out.min()) and int(out.max()) <= MAX_PART):
        raise OverflowError(f"{name} plus noise does not fit (beyond 2^62 grid units)")
    return out
