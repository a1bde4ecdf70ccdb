"""n ε0-LDP reports passed through a shuffler: one collection round in the shuffle model."""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

from .base import Atoms, PrivacyLoss, _register


@_register
@dataclass(frozen=True)
class ShuffledReports(PrivacyLoss):
    """One round of n ε0-LDP reports, one per user, shuffled before the server sees them
    (:func:`dpnoise.accounting.shuffle_amplification`; docs/accounting.md, "Shuffle-model
    accounting"). Neighbouring datasets differ in one user's data, n fixed (replace-one): compose
    it in an ``Accountant(..., neighbours="replace")``.

    Forms: the pure ε0 (each report's own guarantee survives shuffling); the (ε, δ) point of
    :func:`shuffle_amplification` at ``delta`` (basic and advanced composition); and the
    privacy-loss distribution of the clone pair of Feldman, McMillan & Talwar (2021, Thm 3.2),
    which dominates the shuffled reports at every ε (PLD and RDP accountants; with a k-ary
    randomized-response configuration, GRR's clone pair).

    Parameters
    ----------
    epsilon0 : float
        ε0 of each report, in (0, 100].
    n : int
        The number of shuffled reports, >= 1.
    delta : float
        δ of the (ε, δ) point, in (0, 1).
    configuration : str or dpnoise.ldp.Configuration, optional
        The LDP configuration of the reports (kept as its JSON text, ``Configuration.to_json``).

    Raises
    ------
    ValueError, TypeError
        As :func:`shuffle_amplification`, or for configuration text that is not a configuration.

    Examples
    --------
    >>> from dpnoise.accounting import Accountant, ShuffledReports
    >>> day = ShuffledReports(epsilon0=2.0, n=10**6, delta=1e-9)
    >>> month = Accountant("advanced", neighbours="replace").compose(day, 30)
    >>> month.get_epsilon(1e-6) < 0.5
    True
    """

    epsilon0: float
    n: int
    delta: float
    configuration: str | None = None
    _epsilon: float = field(init=False, repr=False, compare=False, default=math.nan)
    _atoms: Atoms | None = field(init=False, repr=False, compare=False, default=None)

    def __post_init__(self) -> None:
        from ..shuffle import _check_args, _configuration_kind

        eps0, n, delta = _check_args(self.epsilon0, self.n, self.delta)
        object.__setattr__(self, "epsilon0", eps0)
        object.__setattr__(self, "n", n)
        object.__setattr__(self, "delta", delta)
        config: Any = self.configuration
        if config is not None:
            from ...ldp._protocol import Configuration

            if isinstance(config, str):
                config = Configuration.from_json(config)
            _configuration_kind(config, eps0)  # refuses what the bounds do not cover
            object.__setattr__(self, "configuration", config.to_json())

    def _config(self) -> Any:
        if self.configuration is None:
            return None
        from ...ldp._protocol import Configuration

        return Configuration.from_json(self.configuration)

    def shuffled_epsilon(self) -> float:
        """ε of :func:`shuffle_amplification` at ``delta`` (computed once).

        Returns
        -------
        float
            ε in [0, ε0].
        """
        if math.isnan(self._epsilon):
            from ..shuffle import shuffle_amplification

            with warnings.catch_warnings():  # no amplification: ε0 is the value, no news here
                warnings.simplefilter("ignore", UserWarning)
                eps = shuffle_amplification(self.epsilon0, self.n, self.delta, configuration=self._config())
            object.__setattr__(self, "_epsilon", eps)
        return self._epsilon

    def pure_epsilon(self) -> float:
        """ε0: a report is ε0-DP for its user, and the shuffle is a post-processing."""
        return self.epsilon0

    def approx_dp(self) -> tuple[float, float]:
        """(ε, δ) with ε from :func:`shuffle_amplification`; (ε0, 0) when that is no better."""
        eps = self.shuffled_epsilon()
        return (self.epsilon0, 0.0) if eps >= self.epsilon0 else (eps, self.delta)

    def _loss_atoms(self, direction: str) -> Atoms | None:
        if self._atoms is None:
            object.__setattr__(self, "_atoms", self._clone_atoms())
        return self._atoms

    def _clone_atoms(self) -> Atoms:
        from ..shuffle import _N_CAP, _clone_bound, _configuration_kind

        config = self._config()
        d = None if config is None else _configuration_kind(config, self.epsilon0)
        n = min(self.n, _N_CAP)  # the pairs only improve with n: the one at the cap dominates
        generic = _clone_bound(self.epsilon0, n, self.delta)
        if d is None:
            return generic.atoms()
        # both pairs dominate: keep the tighter at the (ε, δ) point (GRR's for e^ε0 > d - 1)
        grr = _clone_bound(self.epsilon0, n, self.delta, domain_size=d)
        return grr.atoms() if grr.epsilon(self.delta) <= generic.epsilon(self.delta) else generic.atoms()

    def to_dict(self) -> dict[str, Any]:
        """``{"type": "ShuffledReports", "epsilon0": ε0, "n": n, "delta": δ, "configuration": JSON or None}``."""
        return {"type": type(self).__name__, "epsilon0": self.epsilon0, "n": self.n, "delta": self.delta,
                "configuration": self.configuration}
