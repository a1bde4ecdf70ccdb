"""The Laplace mechanism on a grid, and the discrete Laplace (geometric) mechanism for integers."""
from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Dict, Optional, Tuple

import numpy as np

from .._validate import integer_sensitivity
from ..accounting.budget import PrivacyBudget
from ..accounting.losses import DiscreteLaplace
from ..generator import Generator
from . import _grid
from ._base import (
    Mechanism, add_checked, as_integer_array, as_real_array, check_beta, check_delta,
    check_epsilon, check_sensitivity,
)


def _scale_for(sensitivity: int, epsilon: float, delta: float) -> Fraction:
    """Discrete Laplace scale (grid units) for an integer sensitivity: Δ/ε for pure DP; with
    δ > 0 the thesis seed's b >= Δ/(ε - ln(1-δ)) (003, Example on the (ε,δ) Laplace mechanism),
    then checked against the exact profile of the discrete Laplace and raised until it holds."""
    if delta == 0:
        return Fraction(sensitivity) / Fraction(epsilon)  # exact
    denom = epsilon - math.log1p(-delta)
    t = Fraction(sensitivity) / Fraction(denom) * Fraction(1 + 2**-40)  # float slack, upward
    while float(DiscreteLaplace(float(t), sensitivity).delta_for_epsilon(epsilon)) > delta:
        t *= Fraction(1001, 1000)
    return Fraction(_grid.round_up_short(float(t) * (1 + 2**-50)))


def _half_width(scale: float, count: int, beta: float) -> int:
    """Least m with count · P(|X| > m) <= beta for X ~ DLap(scale): P(|X| > m) = 2r^{m+1}/(1+r)."""
    r = math.exp(-1.0 / scale)
    need = math.log(beta * (1 + r) / (2 * count)) / math.log(r)  # (m+1) >= need
    return max(0, math.ceil(need) - 1)


class DiscreteLaplaceMechanism(Mechanism):
    """Adds discrete Laplace noise P(x) ∝ exp(-|x|/t) to integer queries (L1 sensitivity Δ,
    an integer): t = Δ/ε gives ε-DP (Ghosh, Roughgarden & Sundararajan 2009; CKS 2020); with
    delta > 0 the thesis' (ε, δ) calibration. Scalars and arrays; outputs int64."""

    def __init__(self, epsilon: float, sensitivity: int = 1, *, delta: float = 0.0,
                 rng: Optional[Generator] = None, budget: Optional[PrivacyBudget] = None,
                 threads: Optional[int] = None):
        super().__init__(rng, budget)
        self.epsilon = check_epsilon(epsilon)
        self.delta = check_delta(delta)
        self.sensitivity = integer_sensitivity(sensitivity)
        self.threads = threads
        self.scale = _scale_for(self.sensitivity, self.epsilon, self.delta)

    def privacy_loss(self) -> DiscreteLaplace:
        return DiscreteLaplace(float(self.scale), self.sensitivity)

    def accuracy(self, beta: float, count: int = 1) -> float:
        """Half-width w with P(max over ``count`` outputs of |noise| > w) <= beta (exact tail)."""
        return float(_half_width(float(self.scale), int(count), check_beta(beta)))

    def _prepare(self, value: Any) -> Tuple[np.ndarray, bool]:
        return as_integer_array(value), np.ndim(value) == 0

    def _release(self, prepared: Tuple[np.ndarray, bool]) -> Any:
        v, scalar = prepared
        noise = self.rng.discrete_laplace(self.scale, v.shape, threads=self.threads)
        out = add_checked(v, np.asarray(noise))
        return int(out) if scalar else out


class GeometricMechanism(DiscreteLaplaceMechanism):
    """The geometric mechanism (Ghosh et al. 2009): another name for the discrete Laplace one."""


class LaplaceMechanism(Mechanism):
    """The Laplace mechanism f(x) + Lap(Δ/ε), made safe against floating-point attacks.

    The query value is rounded to the grid 2^k (chosen from the sensitivity so that the rounding
    widens it by at most 1/1024, or ``granularity`` = 2^k), discrete Laplace noise is added in
    grid units with the widened integer sensitivity floor(Δ/2^k) + d (d coordinates, L1), and the
    output is the exact double (v + noise)·2^k. No floating-point operation depends on the noise
    (Mironov 2012). Integer inputs with an integral sensitivity and no granularity use the grid 1
    directly and return integers. With ``delta > 0``: b >= Δ/(ε - ln(1-δ)) (thesis seed 003).
    """

    def __init__(self, epsilon: float, sensitivity: float = 1.0, *, delta: float = 0.0,
                 granularity: Optional[float] = None, rng: Optional[Generator] = None,
                 budget: Optional[PrivacyBudget] = None, threads: Optional[int] = None):
        super().__init__(rng, budget)
        self.epsilon = check_epsilon(epsilon)
        self.delta = check_delta(delta)
        self.sensitivity = check_sensitivity(sensitivity)
        self.granularity_exponent = _grid.check_granularity(granularity)
        self.threads = threads
        self._cache: Dict[Tuple[int, bool], Tuple[int, int, Fraction]] = {}

    def grid(self, count: int = 1, integer: bool = False) -> Tuple[int, int, Fraction]:
        """(k, widened sensitivity in grid units, discrete Laplace scale) for ``count`` coordinates."""
        key = (count, integer)
        if key not in self._cache:
            if integer and self.granularity_exponent is None and self.sensitivity == int(self.sensitivity):
                k, sens = 0, int(self.sensitivity)  # integer query, integer sensitivity: no rounding
            else:
                k = self.granularity_exponent
                if k is None:
                    k = _grid.default_exponent(self.sensitivity, count)
                sens = math.floor(self.sensitivity / 2.0**k) + count
            self._cache[key] = (k, sens, _scale_for(sens, self.epsilon, self.delta))
        return self._cache[key]

    def privacy_loss(self, shape: Tuple[int, ...] = (), integer: bool = False) -> DiscreteLaplace:
        """The loss of one release of a query with this shape (exact: discrete Laplace in grid units)."""
        _, sens, scale = self.grid(int(np.prod(shape, dtype=np.int64)), integer)
        return DiscreteLaplace(float(scale), sens)

    def accuracy(self, beta: float, shape: Tuple[int, ...] = ()) -> float:
        """Half-width w with P(some output is more than w from the true value) <= beta, rounding
        included (Dwork–Roth Thm 3.8 gives ln(d/β)·Δ/ε for the continuous mechanism)."""
        d = int(np.prod(shape, dtype=np.int64))
        k, _, scale = self.grid(d)
        return (_half_width(float(scale), d, check_beta(beta)) + 0.5) * 2.0**k

    def _prepare(self, value: Any) -> Tuple[np.ndarray, bool, bool]:
        arr = np.asarray(value)
        integer = np.issubdtype(arr.dtype, np.integer) and self.granularity_exponent is None \
            and self.sensitivity == int(self.sensitivity)
        x = as_integer_array(arr) if integer else as_real_array(arr)
        k, _, _ = self.grid(max(1, x.size), integer)
        v = x if integer else _grid.to_grid(x, k)
        return v, integer, np.ndim(value) == 0

    def release(self, value: Any) -> Any:
        v, integer, scalar = prepared = self._prepare(value)
        if self.budget is not None:
            self.budget.spend(self.privacy_loss(v.shape or (1,), integer), label="LaplaceMechanism")
        return self._release(prepared)

    def _release(self, prepared: Tuple[np.ndarray, bool, bool]) -> Any:
        v, integer, scalar = prepared
        k, _, scale = self.grid(max(1, v.size), integer)
        noise = np.asarray(self.rng.discrete_laplace(scale, v.shape, threads=self.threads))
        out = add_checked(v, noise)
        if integer:
            return int(out) if scalar else out
        res = _grid.from_grid(out, k)
        return float(res) if scalar else res
