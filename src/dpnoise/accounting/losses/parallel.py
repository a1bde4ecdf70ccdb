"""Parallel composition over disjoint partitions."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from .base import PrivacyLoss, _register


@_register
@dataclass(frozen=True)
class Parallel(PrivacyLoss):
    """Parallel composition over disjoint partitions: one record touches one partition, so the
    release is as private as its least private part (McSherry 2009, Thm 4): every conversion is
    the maximum over the parts (profiles too, so the PLD accountant gets a valid dominating curve).
    Under replace-one neighbours this assumes the partition of a record does not change.

    Parameters
    ----------
    losses : sequence of PrivacyLoss
        The loss of each partition's release (at least one).

    Raises
    ------
    TypeError
        For an empty sequence or an element that is not a privacy-loss descriptor.
    """

    losses: tuple[PrivacyLoss, ...]
    symmetric: ClassVar[bool] = False

    def __post_init__(self) -> None:
        losses = tuple(self.losses)
        if not losses or not all(isinstance(x, PrivacyLoss) for x in losses):
            raise TypeError("losses must be a non-empty sequence of privacy-loss descriptors")
        object.__setattr__(self, "losses", losses)

    def _max(self, values: Sequence[float | None]) -> float | None:
        return None if any(v is None for v in values) else max(v for v in values if v is not None)

    def pure_epsilon(self) -> float | None:
        """The largest part's ε (None if a part has none)."""
        return self._max([x.pure_epsilon() for x in self.losses])

    def approx_dp(self) -> tuple[float, float] | None:
        """(max ε, max δ) over the parts (None if a part has no (ε, δ) form)."""
        pairs = [x.approx_dp() for x in self.losses]
        if any(p is None for p in pairs):
            return None
        return max(p[0] for p in pairs if p), max(p[1] for p in pairs if p)

    def zcdp_rho(self) -> float | None:
        """The largest part's ρ (None if a part has none)."""
        return self._max([x.zcdp_rho() for x in self.losses])

    def rdp(self, alpha: float) -> float | None:
        """The largest part's ε(α) (None if a part has none)."""
        return self._max([x.rdp(alpha) for x in self.losses])

    def _profile(self, eps: np.ndarray, direction: str) -> np.ndarray | None:
        out = np.zeros(np.shape(eps))
        for x in self.losses:
            d = direction if not x.symmetric else "remove"
            p = x._profile(eps, d)
            if p is None:
                return None
            out = np.maximum(out, p)
        return out

    def has_profile(self) -> bool:
        """True when every part has a privacy profile."""
        return all(x.has_profile() for x in self.losses)

    def to_dict(self) -> dict[str, Any]:
        """``{"type": "Parallel", "losses": [each part's dict]}``."""
        return {"type": "Parallel", "losses": [x.to_dict() for x in self.losses]}
