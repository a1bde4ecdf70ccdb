"""k-ary randomized response."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ... import _validate as check
from .base import Atoms, PrivacyLoss, _fields, _register, _rr_atoms


@_register
@dataclass(frozen=True)
class RandomizedResponse(PrivacyLoss):
    """k-ary randomized response keeping the true value with probability e^ε/(e^ε + k - 1)
    (Warner 1965; Kairouz, Oh & Viswanath 2016 for k > 2): ε-DP, loss values ±ε and 0.

    Parameters
    ----------
    epsilon : float
        ε >= 0.
    categories : int, default 2
        The number k >= 2 of possible values.

    Raises
    ------
    ValueError
        For a negative ε or k < 2.
    """

    epsilon: float
    categories: int = 2

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check.nonnegative(self.epsilon, "epsilon"))
        k = check.integer(self.categories, "categories")
        if k < 2:
            raise ValueError(f"categories must be >= 2, got {k}")
        object.__setattr__(self, "categories", int(k))

    def pure_epsilon(self) -> float:
        """The given ε."""
        return self.epsilon

    def _loss_atoms(self, direction: str) -> Atoms:
        return _rr_atoms(self.epsilon, self.categories)

    def to_dict(self) -> dict[str, Any]:
        """``{"type": "RandomizedResponse", "epsilon": ε, "categories": k}``."""
        return _fields(self, "epsilon", "categories")
