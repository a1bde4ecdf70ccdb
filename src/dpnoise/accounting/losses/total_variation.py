"""A release whose output law is within a total variation of another loss's release (the
constant-time samplers: docs/security.md, "Privacy statement")."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ... import _validate as check
from .base import Atoms, PrivacyLoss, Tails, _register

# (1 + e^ε)·η is rounded up by this factor (the float product has a relative error < 2^-50)
_ROUND_UP = 1 + 2.0**-40


def _transfer_delta(epsilon: float, total_variation: float) -> float:
    """(1 + e^ε)·η rounded up, at most 1 (1 when e^ε overflows): the δ that a total variation η
    adds at ε (the transfer in the class docstring)."""
    if total_variation == 0:
        return 0.0
    if epsilon > 700:
        return 1.0
    return min(1.0, (1.0 + math.exp(epsilon)) * total_variation * _ROUND_UP)


@_register
@dataclass(frozen=True)
class WithinTotalVariation(PrivacyLoss):
    """A release M' whose output law is, on every input, within total variation η of that of a
    release M spending ``loss`` (given the same history: a constant-time sampler against the
    exact one, docs/security.md).

    Transfer (coupling; proof in docs/security.md): if M is (ε, δ)-DP then M' is
    (ε, δ + (1 + e^ε)·η)-DP, for every ε. Composition: k such releases, adaptively chosen,
    are within total variation Σ η_i of their exact versions (hybrid argument), so the
    accountants compose the exact losses by any method (zCDP, RDP, PLD, ...) and add
    (1 + e^ε)·Σ η_i to the composition's δ at the end (``Accountant``). Alone, this descriptor
    has the transferred profile and single (ε, δ) point, and no zCDP, RDP or PLD form (the
    coupling says nothing about Rényi divergences of M').

    Parameters
    ----------
    loss : PrivacyLoss
        The loss of the exact release (not itself a WithinTotalVariation).
    total_variation : float
        η in [0, 1).

    Raises
    ------
    TypeError
        If ``loss`` is not a privacy-loss descriptor.
    ValueError
        For a nested WithinTotalVariation or η outside [0, 1).

    Examples
    --------
    >>> from dpnoise.accounting import Accountant, DiscreteGaussian, WithinTotalVariation
    >>> loss = WithinTotalVariation(DiscreteGaussian(4.0), 2.0**-64)
    >>> Accountant("zcdp").compose(loss, 10).get_delta(5.0) > 0
    True
    """

    loss: PrivacyLoss
    total_variation: float

    def __post_init__(self) -> None:
        if not isinstance(self.loss, PrivacyLoss):
            raise TypeError(f"loss must be a privacy-loss descriptor, got {type(self.loss).__name__}")
        if isinstance(self.loss, WithinTotalVariation):
            raise ValueError("loss must not itself be a WithinTotalVariation (add the total variations)")
        tv = check.probability(self.total_variation, "total_variation")
        if tv >= 1:
            raise ValueError(f"total_variation must be < 1, got {tv!r}")
        object.__setattr__(self, "total_variation", tv)

    def pure_epsilon(self) -> float | None:
        """The exact loss's ε when η = 0, else None (η > 0 leaves no pure guarantee)."""
        return self.loss.pure_epsilon() if self.total_variation == 0 else None

    def approx_dp(self) -> tuple[float, float] | None:
        """(ε, δ + (1 + e^ε)·η) from the exact loss's (ε, δ) point, or None without one."""
        ed = self.loss.approx_dp()
        if ed is None:
            return None
        return ed[0], min(1.0, ed[1] + _transfer_delta(ed[0], self.total_variation))

    def zcdp_rho(self) -> float | None:
        """The exact loss's ρ when η = 0, else None (composed by the accountants instead)."""
        return self.loss.zcdp_rho() if self.total_variation == 0 else None

    def rdp(self, alpha: float) -> float | None:
        """The exact loss's ε(α) when η = 0, else None (composed by the accountants instead)."""
        return self.loss.rdp(alpha) if self.total_variation == 0 else None

    def _directions(self) -> tuple[str, ...]:
        return self.loss._directions()

    def _loss_atoms(self, direction: str) -> Atoms | None:
        # with η > 0 the loss distribution of M' is unknown: no PLD of this descriptor alone
        return self.loss._loss_atoms(direction) if self.total_variation == 0 else None

    def _loss_tails(self, eps: np.ndarray, direction: str) -> Tails | None:
        return self.loss._loss_tails(eps, direction) if self.total_variation == 0 else None

    def delta_for_epsilon(self, epsilon: float | np.ndarray) -> Any:
        """δ(ε) + (1 + e^ε)·η, δ the exact loss's profile (at most 1)."""
        base = self.loss.delta_for_epsilon(epsilon)
        if np.ndim(base) == 0:
            return min(1.0, float(base) + _transfer_delta(max(float(epsilon), 0.0), self.total_variation))
        eps = np.maximum(np.asarray(epsilon, dtype=float), 0.0)
        add = np.array([_transfer_delta(float(e), self.total_variation) for e in eps.ravel()])
        return np.minimum(1.0, base + add.reshape(eps.shape))

    def to_dict(self) -> dict[str, Any]:
        """``{"type": "WithinTotalVariation", "loss": {...}, "total_variation": η}``."""
        return {"type": type(self).__name__, "loss": self.loss.to_dict(), "total_variation": self.total_variation}
