"""Private histograms: counts over public bins plus integer noise."""
from __future__ import annotations

import math
from typing import Any, Optional, Sequence, Union

import numpy as np

from ..accounting.budget import PrivacyBudget
from ..accounting.losses import PrivacyLoss
from ..generator import Generator
from ._base import Mechanism, check_beta, check_delta, check_epsilon
from .gaussian import DiscreteGaussianMechanism
from .laplace import DiscreteLaplaceMechanism

NOISES = ("laplace", "geometric", "gaussian")


class Histogram(Mechanism):
    """Counts of the data in public bins, released with discrete noise.

    Sensitivity (lecture seed 000; Dwork–Roth §3.3): one record changes one count by 1 under
    add/remove neighbours (L1 = L2 = 1); under replace-one it moves from one bin to another, so
    L1 = 2 for the discrete Laplace/geometric noise, and the discrete Gaussian is calibrated to
    the exact profile of two counts each moving by 1 (L2 sensitivity √2; ``coordinates=2`` of
    ``DiscreteGaussian``).

    Bins are given once and must not depend on the data: ``bins`` as an int needs ``range``
    (NumPy would otherwise take the range from the data, which leaks it), or give the edges;
    or ``categories=k`` for integer category indices 0..k-1.
    """

    def __init__(self, epsilon: float, *, delta: float = 0.0, neighbours: str = "add_remove",
                 noise: str = "laplace", bins: Union[int, Sequence[float], None] = None,
                 range: Optional[Sequence[float]] = None, categories: Optional[int] = None,
                 rng: Optional[Generator] = None, budget: Optional[PrivacyBudget] = None):
        super().__init__(rng, budget)
        if neighbours not in ("add_remove", "replace"):
            raise ValueError(f"neighbours must be 'add_remove' or 'replace', got {neighbours!r}")
        if noise not in NOISES:
            raise ValueError(f"noise must be one of {NOISES}, got {noise!r}")
        self.epsilon = check_epsilon(epsilon)
        self.delta = check_delta(delta)
        self.neighbours, self.noise = neighbours, noise
        # L1 sensitivity (for the Laplace/geometric noise); the Gaussian uses 2 coordinates by 1
        self.sensitivity = 1 if neighbours == "add_remove" else 2
        if (bins is None) == (categories is None):
            raise TypeError("give either bins= (with range= for an int) or categories=")
        if categories is not None:
            if isinstance(categories, bool) or not isinstance(categories, (int, np.integer)) or categories < 1:
                raise ValueError(f"categories must be a positive int, got {categories!r}")
            self.edges = None
            self.categories = int(categories)
        else:
            if isinstance(bins, (int, np.integer)):
                if range is None:
                    raise ValueError("bins as an int needs range=(low, high): a data-dependent range leaks")
                lo, hi = (float(v) for v in range)
                if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi) or bins < 1:
                    raise ValueError(f"range must be finite with low < high and bins >= 1, got {range}, {bins}")
                self.edges = np.linspace(lo, hi, int(bins) + 1)
            else:
                self.edges = np.asarray(bins, dtype=float)
                if self.edges.ndim != 1 or self.edges.size < 2 or not np.all(np.diff(self.edges) > 0) \
                        or not np.all(np.isfinite(self.edges)):
                    raise ValueError("bins must be finite, strictly increasing edges")
            self.categories = self.edges.size - 1
        if noise == "gaussian":
            if self.delta == 0:
                raise ValueError("noise='gaussian' needs delta > 0")
            self._inner: Mechanism = DiscreteGaussianMechanism(
                self.epsilon, self.delta, 1, coordinates=1 if neighbours == "add_remove" else 2, rng=self.rng)
        else:
            self._inner = DiscreteLaplaceMechanism(self.epsilon, self.sensitivity, delta=self.delta, rng=self.rng)

    def privacy_loss(self) -> PrivacyLoss:
        return self._inner.privacy_loss()

    def accuracy(self, beta: float) -> float:
        """Half-width holding for all k counts at once with probability 1 - beta."""
        return self._inner.accuracy(check_beta(beta), self.categories)  # type: ignore[call-arg]

    def counts(self, data: Any) -> np.ndarray:
        """The exact (non-private) counts; for tests and for comparison only."""
        x = np.asarray(data)
        if self.edges is None:
            if not np.issubdtype(x.dtype, np.integer):
                raise TypeError(f"data must be category indices, got dtype {x.dtype}")
            x = x.reshape(-1)
            if x.size and (x.min() < 0 or x.max() >= self.categories):
                raise ValueError(f"data must be in [0, {self.categories})")
            return np.bincount(x, minlength=self.categories).astype(np.int64)
        xf = np.asarray(x, dtype=float).reshape(-1)
        if xf.size and not np.all(np.isfinite(xf)):
            raise ValueError("data must be finite")
        return np.histogram(xf, bins=self.edges)[0].astype(np.int64)

    def _prepare(self, data: Any) -> np.ndarray:
        return self.counts(data)

    def _release(self, counts: np.ndarray) -> np.ndarray:
        return self._inner._release((counts, False))
