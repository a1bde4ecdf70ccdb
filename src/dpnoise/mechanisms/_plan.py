"""The mechanisms' release plans (the base class and the release steps: dpnoise/_release/).

Execution draws all noise through ``Generator._noisy_grid`` or ``Generator._randomized_response``
(the fused kernels) and cannot fail on valid prepared input, except for the documented
data-independent overflow of ``_noisy_grid`` whose probability the plan keeps below 2^-90.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Optional, Union

import numpy as np

from .._release.plan import (  # noqa: F401  (re-exported: the mechanisms' public plan names)
    GRID_BOUND, INTEGER_BOUND, MAX_GAUSSIAN_SIGMA, MAX_LAPLACE_SCALE, STANDARD_EXPONENT, ReleasePlan,
)


@dataclass(frozen=True)
class NoisyGridPlan(ReleasePlan):
    """Noise added on a grid: ``law`` "laplace" (``param`` = the discrete Laplace scale, an exact
    Fraction, grid units) or "gaussian" (``param`` = sigma, grid units); ``k`` the grid exponent
    (None: integer query, integer output); ``sensitivity`` the widened sensitivity in grid units
    the noise is calibrated to (L1 for Laplace, L2 for Gaussian); ``bound`` the clamp."""

    law: str
    param: Union[Fraction, float]
    k: Optional[int]
    sensitivity: Union[int, float]
    bound: int

    @property
    def clamp(self) -> float:
        """The clamp in the query's units: inputs beyond ±clamp are released as ±clamp + noise."""
        return float(self.bound) if self.k is None else math.ldexp(float(self.bound), self.k)

    def execute(self, rng: Any, prepared: np.ndarray) -> Any:
        out = rng._noisy_grid(prepared, law=self.law, param=self.param, k=self.k, bound=self.bound,
                              threads=self.threads)
        if self.scalar:
            return int(out.reshape(-1)[0]) if self.k is None else float(out.reshape(-1)[0])
        return out


@dataclass(frozen=True)
class RandomizedResponsePlan(ReleasePlan):
    """k-ary randomized response with the exact rational ``gamma`` (the ε the sampler uses)."""

    categories: int
    gamma: Fraction

    def execute(self, rng: Any, prepared: np.ndarray) -> Any:
        out = rng._randomized_response(prepared, self.categories, self.gamma, threads=self.threads)
        return int(out.reshape(-1)[0]) if self.scalar else out


@dataclass(frozen=True)
class GaussianProcessPlan(ReleasePlan):
    """The Gaussian-process mechanism on m public points: f + scale · L z, with L the Cholesky
    factor of the kernel matrix and z ~ N(0, I) drawn as discrete Gaussian(2^20)·2^-20."""

    scale: float
    factor: np.ndarray = dataclasses.field(compare=False, repr=False)

    def execute(self, rng: Any, prepared: np.ndarray) -> np.ndarray:
        m = self.factor.shape[0]
        z = rng._noisy_grid(np.zeros(m), law="gaussian", param=float(1 << STANDARD_EXPONENT),
                            k=-STANDARD_EXPONENT, bound=GRID_BOUND, threads=self.threads)
        return prepared + self.scale * (self.factor @ z)


__all__ = ["GaussianProcessPlan", "NoisyGridPlan", "RandomizedResponsePlan", "ReleasePlan"]
