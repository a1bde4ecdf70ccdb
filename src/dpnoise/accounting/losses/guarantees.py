"""Plain guarantees: pure ε-DP, (ε, δ)-DP, ρ-zCDP and a Rényi-DP curve."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ... import _validate as check
from .base import Atoms, PrivacyLoss, _fields, _register, _rr_atoms


@_register
@dataclass(frozen=True)
class PureDP(PrivacyLoss):
    """ε-differential privacy. Its worst case is binary randomized response (Kairouz, Oh &
    Viswanath 2015), which is the privacy-loss distribution the PLD accountant uses.

    Parameters
    ----------
    epsilon : float
        ε >= 0 (``math.inf`` allowed).
    """

    epsilon: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check.nonnegative(self.epsilon, "epsilon"))

    def pure_epsilon(self) -> float:
        """The given ε."""
        return self.epsilon

    def _loss_atoms(self, direction: str) -> Atoms:
        return _rr_atoms(self.epsilon, 2)

    def to_dict(self) -> dict[str, Any]:
        """``{"type": "PureDP", "epsilon": ε}``."""
        return _fields(self, "epsilon")


@_register
@dataclass(frozen=True)
class ApproxDP(PrivacyLoss):
    """(ε, δ)-differential privacy; dominated by randomized response with an extra δ atom of
    infinite loss (Kairouz, Oh & Viswanath 2015, Thm 2.1).

    Parameters
    ----------
    epsilon, delta : float
        ε >= 0 and δ in [0, 1].
    """

    epsilon: float
    delta: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check.nonnegative(self.epsilon, "epsilon"))
        object.__setattr__(self, "delta", check.probability(self.delta, "delta"))

    def pure_epsilon(self) -> float | None:
        """ε when δ = 0, else None."""
        return self.epsilon if self.delta == 0 else None

    def approx_dp(self) -> tuple[float, float]:
        """The given (ε, δ)."""
        return self.epsilon, self.delta

    def zcdp_rho(self) -> float | None:
        """ε²/2 when δ = 0 (Bun and Steinke 2016, Prop. 1.4), else None."""
        return 0.5 * self.epsilon**2 if self.delta == 0 else None

    def _loss_atoms(self, direction: str) -> Atoms:
        losses, masses, _ = _rr_atoms(self.epsilon, 2)
        return losses, masses * (1.0 - self.delta), self.delta

    def to_dict(self) -> dict[str, Any]:
        """``{"type": "ApproxDP", "epsilon": ε, "delta": δ}``."""
        return _fields(self, "epsilon", "delta")


@_register
@dataclass(frozen=True)
class ZCDP(PrivacyLoss):
    """ρ-zero-concentrated DP (Bun & Steinke 2016): Rényi divergence <= αρ for every α > 1.

    Parameters
    ----------
    rho : float
        ρ >= 0.
    """

    rho: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "rho", check.nonnegative(self.rho, "rho"))

    def approx_dp(self) -> None:
        """None: zCDP has no single (ε, δ) pair (accountants convert it at the end)."""
        return None

    def zcdp_rho(self) -> float:
        """The given ρ."""
        return self.rho

    def rdp(self, alpha: float) -> float:
        """αρ, the zCDP bound on the Rényi divergence of order α."""
        return alpha * self.rho

    def to_dict(self) -> dict[str, Any]:
        """``{"type": "ZCDP", "rho": ρ}``."""
        return _fields(self, "rho")


@_register
@dataclass(frozen=True)
class RDP(PrivacyLoss):
    """A Rényi-DP curve given at finitely many orders (Mironov 2017). Between orders the value at
    the next larger order is used (the curve is non-decreasing in α, so this is an upper bound);
    beyond the largest order nothing is claimed (∞).

    Parameters
    ----------
    orders : tuple of float
        The Rényi orders α, each finite and > 1 (stored sorted).
    epsilons : tuple of float
        ε(α) >= 0 at each order (``math.inf`` allowed), as many as ``orders``.

    Raises
    ------
    ValueError
        For empty or unequal-length sequences, an order not in (1, ∞), or a negative ε.
    """

    orders: tuple[float, ...]
    epsilons: tuple[float, ...]

    def __post_init__(self) -> None:
        orders = tuple(check.real(a, "orders") for a in self.orders)
        eps = tuple(check.nonnegative(e, "epsilons") if e != math.inf else math.inf
                    for e in (check.real(v, "epsilons") for v in self.epsilons))
        if len(orders) == 0 or len(orders) != len(eps):
            raise ValueError("orders and epsilons must be non-empty and of equal length")
        if any(not a > 1 or math.isinf(a) for a in orders):
            raise ValueError("every RDP order must be finite and > 1")
        idx = np.argsort(orders)
        object.__setattr__(self, "orders", tuple(orders[i] for i in idx))
        object.__setattr__(self, "epsilons", tuple(eps[i] for i in idx))

    def approx_dp(self) -> None:
        """None: a Rényi curve is converted to (ε, δ) only at the end of an accounting."""
        return None

    def zcdp_rho(self) -> None:
        """None: a finite set of orders does not give a zCDP ρ."""
        return None

    def rdp(self, alpha: float) -> float:
        """ε at the least stored order >= ``alpha`` (an upper bound), ``math.inf`` beyond them."""
        i = int(np.searchsorted(np.asarray(self.orders), alpha, side="left"))
        return math.inf if i >= len(self.orders) else self.epsilons[i]

    def to_dict(self) -> dict[str, Any]:
        """``{"type": "RDP", "orders": [...], "epsilons": [...]}``."""
        return {"type": "RDP", "orders": list(self.orders), "epsilons": list(self.epsilons)}
