"""The Laplace and discrete Laplace mechanisms."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ... import _validate as check
from .base import Atoms, PrivacyLoss, Tails, _fields, _register


@_register
@dataclass(frozen=True)
class Laplace(PrivacyLoss):
    """The Laplace mechanism: noise density ∝ exp(-|x|/scale), L1 sensitivity Δ.
    Pure (Δ/scale)-DP (Dwork–Roth Thm 3.6); exact RDP from Mironov 2017 (Table II); its loss
    has atoms ±Δ/b and a uniform-in-exponent middle part (closed form below).

    Parameters
    ----------
    scale : float
        The noise scale b > 0.
    sensitivity : float, default 1.0
        The L1 sensitivity Δ > 0 (Δ/b is limited so that the loss stays finite in float64).
    """

    scale: float
    sensitivity: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "scale", check.positive(self.scale, "scale"))
        object.__setattr__(self, "sensitivity", check.positive(self.sensitivity, "sensitivity"))
        check.loss_ratio(self.sensitivity, self.scale, "sensitivity", "scale")

    @property
    def _a(self) -> float:
        return self.sensitivity / self.scale

    def pure_epsilon(self) -> float:
        """ε = Δ/b."""
        return self._a

    def rdp(self, alpha: float) -> float:
        """The exact Rényi divergence of order α (Mironov 2017, Table II), at most Δ/b."""
        # Mironov 2017, Table II: 1/(α-1) log( α/(2α-1) e^{(α-1)a} + (α-1)/(2α-1) e^{-αa} )
        a = self._a
        t1 = math.log(alpha / (2 * alpha - 1)) + (alpha - 1) * a
        t2 = math.log((alpha - 1) / (2 * alpha - 1)) - alpha * a
        m = max(t1, t2)
        return min(a, (m + math.log(math.exp(t1 - m) + math.exp(t2 - m))) / (alpha - 1))

    def _loss_tails(self, eps: np.ndarray, direction: str) -> Tails:
        # P = Lap(Δ, b), Q = Lap(0, b); L = (|x| - |x-Δ|)/b ∈ [-a, a] with atoms at ±a.
        a = self._a
        e = np.asarray(eps, dtype=float)
        mid = (e >= -a) & (e < a)
        em = np.where(mid, e, 0.0)
        p_sf = np.where(e < -a, 1.0, np.where(mid, 1.0 - 0.5 * np.exp(-(a - em) / 2), 0.0))
        q_sf = np.where(e < -a, 1.0, np.where(mid, 0.5 * np.exp(-(a + em) / 2), 0.0))
        p_cdf = np.where(e < -a, 0.0, np.where(mid, 0.5 * np.exp(-(a - em) / 2), 1.0))
        q_cdf = np.where(e < -a, 0.0, np.where(mid, 1.0 - 0.5 * np.exp(-(a + em) / 2), 1.0))
        return p_sf, q_sf, p_cdf, q_cdf

    def _profile(self, eps: np.ndarray, direction: str) -> np.ndarray:
        # δ(ε) = 1 - e^{(ε-a)/2} on [-a, a]; 1 - e^ε below; 0 above (derived from the tails above)
        a = self._a
        e = np.asarray(eps, dtype=float)
        return np.where(e >= a, 0.0, np.where(e <= -a, -np.expm1(np.minimum(e, 0.0)),
                                              -np.expm1(np.minimum((e - a) / 2, 0.0))))

    def _logpdf_pair(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        b = self.scale
        return -np.abs(x - self.sensitivity) / b, -np.abs(x) / b

    def _integration_window(self, alpha: float) -> tuple[float, float, float]:
        b = self.scale
        return -60 * b, self.sensitivity + 60 * b, min(b, self.sensitivity) / 200

    def to_dict(self) -> dict[str, Any]:
        """``{"type": "Laplace", "scale": b, "sensitivity": Δ}``."""
        return _fields(self, "scale", "sensitivity")


@_register
@dataclass(frozen=True)
class DiscreteLaplace(PrivacyLoss):
    """Discrete Laplace on Z, P(x) ∝ exp(-|x|/scale), integer sensitivity Δ: (Δ/scale)-DP
    (Ghosh, Roughgarden & Sundararajan 2009; CKS 2020 §2). Its loss takes Δ+1 values exactly.

    Parameters
    ----------
    scale : float
        The scale t > 0 (in integer units).
    sensitivity : int, default 1
        The integer L1 sensitivity Δ in [1, 10^7].

    Raises
    ------
    ValueError
        For a non-positive scale, a sensitivity outside [1, 10^7], or Δ/t too large.
    """

    scale: float
    sensitivity: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "scale", check.positive(self.scale, "scale"))
        object.__setattr__(self, "sensitivity", check.integer_sensitivity(self.sensitivity))
        if self.sensitivity > 10_000_000:
            raise ValueError("sensitivity of a discrete mechanism is limited to 10^7 (grid units)")
        check.loss_ratio(self.sensitivity, self.scale, "sensitivity", "scale")

    def pure_epsilon(self) -> float:
        """ε = Δ/t."""
        return self.sensitivity / self.scale

    def _loss_atoms(self, direction: str) -> Atoms:
        # P = DLap centred at Δ, Q = DLap at 0; L(x) = (|x| - |x-Δ|)/t.
        t, d = self.scale, self.sensitivity
        r = math.exp(-1.0 / t)
        c = (1 - r) / (1 + r)  # pmf at the mode
        x = np.arange(1, d, dtype=float)
        losses = np.concatenate([[-d / t], (2 * x - d) / t, [d / t]])
        masses = np.concatenate([[math.exp(-d / t) / (1 + r)], c * np.exp(-(d - x) / t), [1 / (1 + r)]])
        return losses, masses, 0.0

    def to_dict(self) -> dict[str, Any]:
        """``{"type": "DiscreteLaplace", "scale": t, "sensitivity": Δ}``."""
        return _fields(self, "scale", "sensitivity")
