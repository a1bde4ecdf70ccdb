"""Selection of one candidate by report-noisy-max (three methods)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict

from ... import _validate as check
from .base import Atoms, PrivacyLoss, _atoms_rdp, _fields, _register, _rr_atoms


_NOISY_MAX_METHODS = ("laplace", "permute_and_flip", "exponential_mechanism")


@_register
@dataclass(frozen=True)
class ReportNoisyMax(PrivacyLoss):
    """Selection of one candidate by report-noisy-max, calibrated for ε with scores of
    sensitivity 1.

    All three methods are then ε-DP: Laplace noise (Dwork & Roth 2014, Claim 3.9),
    permute-and-flip (McKenna & Sheldon 2020) and the exponential mechanism (McSherry &
    Talwar 2007). The exponential mechanism is moreover ε-bounded-range, hence
    ε²/8-zCDP (Cesar & Rogers 2021, Lemma 3.2), which the zCDP and RDP accountants use. The PLD
    accountant uses the pure-DP worst case (randomized response)."""

    epsilon: float
    method: str = "exponential_mechanism"

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check.nonnegative(self.epsilon, "epsilon"))
        if self.method not in _NOISY_MAX_METHODS:
            raise ValueError(f"method must be one of {_NOISY_MAX_METHODS}, got {self.method!r}")

    def pure_epsilon(self) -> float:
        return self.epsilon

    def zcdp_rho(self) -> float:
        if self.method == "exponential_mechanism":
            return self.epsilon**2 / 8
        return self.epsilon**2 / 2

    def rdp(self, alpha: float) -> float:
        tight = _atoms_rdp(_rr_atoms(self.epsilon, 2), alpha)
        return min(tight, alpha * self.zcdp_rho())

    def _loss_atoms(self, direction: str) -> Atoms:
        return _rr_atoms(self.epsilon, 2)

    def to_dict(self) -> Dict[str, Any]:
        return _fields(self, "epsilon", "method")
