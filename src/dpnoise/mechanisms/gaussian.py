"""The Gaussian mechanism on a grid (discrete Gaussian noise), and its calibrations."""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Dict, Optional, Tuple, Union

import numpy as np

from ..accounting._numeric import least_meeting
from .._validate import count as check_count, integer_sensitivity, nonnegative
from ..accounting.budget import PrivacyBudget
from ..accounting.conversions import zcdp_to_epsilon
from ..accounting.losses import ZCDP, DiscreteGaussian, Gaussian
from ..generator import Generator
from . import _grid
from ._base import (
    Mechanism, add_checked, as_integer_array, as_real_array, check_beta, check_delta,
    check_epsilon, check_sensitivity,
)

CALIBRATIONS = ("analytic", "classic", "seed")
MAX_SIGMA = 2.0**30  # the sampler takes σ up to 2^31 grid units


def analytic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """The least σ for which N(0, σ²) with L2 sensitivity Δ is (ε, δ)-DP: the analytic Gaussian
    mechanism of Balle & Wang (2018, Thm 8 / Alg. 1), by bisection on the exact δ(ε)."""
    epsilon, delta = check_epsilon(epsilon), check_delta(delta)
    sensitivity = check_sensitivity(sensitivity)
    if delta == 0:
        raise ValueError("delta must be > 0 for the Gaussian mechanism")

    def ok(s: float) -> bool:
        return float(Gaussian(s, sensitivity).delta_for_epsilon(epsilon)) <= delta

    return least_meeting(ok, sensitivity * max(1.0, math.sqrt(2 * math.log(1.25 / delta)) / epsilon), rel=1e-14)


def classic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """σ = Δ·sqrt(2 ln(1.25/δ))/ε (Dwork & Roth 2014, Thm A.1; valid for ε < 1 only)."""
    epsilon, delta = check_epsilon(epsilon), check_delta(delta)
    if epsilon >= 1:
        raise ValueError(f"the classic calibration holds only for epsilon < 1 (Dwork–Roth Thm A.1), "
                         f"got {epsilon}; use calibration='analytic'")
    if delta == 0:
        raise ValueError("delta must be > 0 for the Gaussian mechanism")
    return check_sensitivity(sensitivity) * math.sqrt(2 * math.log(1.25 / delta)) / epsilon


def seed_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """σ = c(δ)·Δ/ε with c(δ) = sqrt(2 ln(2/δ)) (thesis seed 003, Thm 6.2; proved for ε <= 1)."""
    epsilon, delta = check_epsilon(epsilon), check_delta(delta)
    if epsilon > 1:
        raise ValueError(f"the seed calibration is proved for epsilon <= 1 only, got {epsilon}; "
                         "use calibration='analytic'")
    if delta == 0:
        raise ValueError("delta must be > 0 for the Gaussian mechanism")
    return check_sensitivity(sensitivity) * math.sqrt(2 * math.log(2 / delta)) / epsilon


_SIGMA = {"analytic": analytic_gaussian_sigma, "classic": classic_gaussian_sigma,
          "seed": seed_gaussian_sigma}


def _zcdp_sigma(sensitivity: float, epsilon: float, delta: float) -> float:
    """Least σ with ρ = Δ²/2σ² meeting (ε, δ) through the CKS 2020 conversion."""
    return least_meeting(lambda s: zcdp_to_epsilon(sensitivity**2 / (2 * s * s), delta) <= epsilon,
                         sensitivity, rel=1e-9)


def _meeting_discrete_profile(sigma: float, shape: DiscreteGaussian, epsilon: float, delta: float) -> float:
    """σ (from a continuous-Gaussian calibration) raised in steps of 10^-6 until the discrete
    Gaussian ``shape`` (its sensitivity and coordinates) with that σ meets (ε, δ) on its exact
    profile; the discrete Gaussian is within a hair of the continuous one, so few steps run."""
    while float(dataclasses.replace(shape, sigma=sigma).delta_for_epsilon(epsilon)) > delta:
        sigma *= 1 + 1e-6
    return sigma


class GaussianMechanism(Mechanism):
    """The Gaussian mechanism with L2 sensitivity Δ, on the discrete Gaussian over a grid.

    Real queries are rounded to 2^k (k from the sensitivity, or ``granularity``); the L2
    sensitivity in grid units widens to Δ/2^k + sqrt(d). σ comes from ``calibration``:
    ``"analytic"`` (Balle & Wang 2018, exact), ``"classic"`` (Dwork–Roth, ε < 1) or ``"seed"``
    (the thesis' sqrt(2 ln(2/δ))·Δ/ε, ε <= 1); or give ``rho`` for ρ-zCDP (σ = Δ/sqrt(2ρ), CKS
    2020 Thm 14). For a scalar the (ε, δ) claim is then checked on the exact discrete-Gaussian
    profile (σ is raised if needed); for a vector of d > 1 values the guarantee is taken through
    zCDP (CKS Thm 14 + Prop. 12), and σ is raised to what that conversion needs.
    """

    def __init__(self, epsilon: Optional[float] = None, delta: Optional[float] = None,
                 sensitivity: float = 1.0, *, calibration: str = "analytic",
                 rho: Optional[float] = None, granularity: Optional[float] = None,
                 rng: Optional[Generator] = None, budget: Optional[PrivacyBudget] = None,
                 threads: Optional[int] = None):
        super().__init__(rng, budget)
        if rho is None:
            if epsilon is None or delta is None:
                raise TypeError("GaussianMechanism needs epsilon and delta, or rho=")
            self.epsilon: Optional[float] = check_epsilon(epsilon)
            self.delta: Optional[float] = check_delta(delta)
            if self.delta == 0:
                raise ValueError("delta must be > 0 for the Gaussian mechanism (or give rho=)")
            if calibration not in CALIBRATIONS:
                raise ValueError(f"calibration must be one of {CALIBRATIONS}, got {calibration!r}")
            self.rho: Optional[float] = None
        else:
            if epsilon is not None or delta is not None:
                raise TypeError("give either epsilon and delta, or rho, not both")
            self.rho = nonnegative(rho, "rho")
            if self.rho == 0:
                raise ValueError("rho must be > 0")
            self.epsilon = self.delta = None
        self.calibration = calibration
        self.sensitivity = check_sensitivity(sensitivity)
        self.granularity_exponent = _grid.check_granularity(granularity)
        self.threads = threads
        self._cache: Dict[int, Tuple[int, float, float]] = {}

    def _sigma_estimate(self, sens: float, count: int) -> float:
        """σ for a real L2 sensitivity from the calibration formula alone (no discrete check)."""
        if self.rho is not None:
            return sens / math.sqrt(2 * self.rho)
        assert self.epsilon is not None and self.delta is not None
        sigma = _SIGMA[self.calibration](self.epsilon, self.delta, sens)
        return sigma if count == 1 else max(sigma, _zcdp_sigma(sens, self.epsilon, self.delta))

    def _sigma_units(self, sens: float, count: int) -> float:
        """σ in grid units for the widened sensitivity (an integer when count == 1)."""
        sigma = self._sigma_estimate(sens, count)
        if count == 1 and self.rho is None:
            # the scalar claim is checked on the exact discrete-Gaussian profile
            assert self.epsilon is not None and self.delta is not None
            sigma = _meeting_discrete_profile(sigma, DiscreteGaussian(1.0, int(sens)), self.epsilon, self.delta)
        return sigma

    def grid(self, count: int = 1) -> Tuple[int, float, float]:
        """(k, L2 sensitivity in grid units, σ in grid units) for ``count`` coordinates."""
        if count not in self._cache:
            spread = math.sqrt(count)
            k = self.granularity_exponent
            if k is None:
                k = _grid.default_exponent(self.sensitivity, spread)
                # keep σ within the sampler's range: σ_real ≈ σ(Δ)·(1 + 1/1024), and the
                # discrete check raises it by far less than the 1/1000 added here
                est = self._sigma_estimate(self.sensitivity * (1 + 2 / _grid.WIDENING), count) * 1.001
                k = max(k, math.ceil(math.log2(est / MAX_SIGMA)))
            if count == 1:
                sens: float = math.floor(self.sensitivity / 2.0**k) + 1
            else:
                sens = self.sensitivity / 2.0**k + spread
            sigma = _grid.round_up_short(self._sigma_units(sens, count))
            if sigma > MAX_SIGMA:
                raise ValueError(f"granularity 2^{k} is too fine for this noise (σ = {sigma:.3g} "
                                 "grid units, at most 2^30); choose a coarser granularity")
            self._cache[count] = (k, sens, sigma)
        return self._cache[count]

    @property
    def sigma(self) -> float:
        """σ of the noise for a scalar query, in the query's units."""
        k, _, s = self.grid(1)
        return s * 2.0**k

    def privacy_loss(self, shape: Tuple[int, ...] = ()) -> Union[DiscreteGaussian, ZCDP]:
        count = int(np.prod(shape, dtype=np.int64))
        k, sens, sigma = self.grid(count)
        if count == 1:
            return DiscreteGaussian(sigma, int(sens))
        return ZCDP(sens**2 / (2 * sigma**2))

    def accuracy(self, beta: float, shape: Tuple[int, ...] = ()) -> float:
        """Half-width w with P(some output is more than w from the true value) <= beta: the
        discrete Gaussian is σ²-subgaussian (CKS 2020, Prop. 19), union bound over d outputs."""
        d = int(np.prod(shape, dtype=np.int64))
        k, _, sigma = self.grid(d)
        m = math.ceil(sigma * math.sqrt(2 * math.log(2 * d / check_beta(beta))))
        return (m + 0.5) * 2.0**k

    def _prepare(self, value: Any) -> Tuple[np.ndarray, bool]:
        x = as_real_array(value)
        k, _, _ = self.grid(max(1, x.size))
        return _grid.to_grid(x, k), np.ndim(value) == 0

    def release(self, value: Any) -> Any:
        prepared = self._prepare(value)
        if self.budget is not None:
            self.budget.spend(self.privacy_loss(prepared[0].shape or (1,)), label="GaussianMechanism")
        return self._release(prepared)

    def _release(self, prepared: Tuple[np.ndarray, bool]) -> Any:
        v, scalar = prepared
        k, _, sigma = self.grid(max(1, v.size))
        noise = np.asarray(self.rng.discrete_gaussian(sigma, v.shape, threads=self.threads))
        res = _grid.from_grid(add_checked(v, noise), k)
        return float(res) if scalar else res

    def __repr__(self) -> str:
        if self.rho is not None:
            return f"GaussianMechanism(rho={self.rho}, sensitivity={self.sensitivity})"
        return (f"GaussianMechanism(epsilon={self.epsilon}, delta={self.delta}, "
                f"sensitivity={self.sensitivity}, calibration={self.calibration!r})")


class DiscreteGaussianMechanism(Mechanism):
    """Discrete Gaussian noise for integer queries with integer L2 sensitivity Δ (CKS 2020):
    σ from the exact discrete-Gaussian profile (least σ meeting (ε, δ)), or from ``rho``.

    ``coordinates`` = c: one neighbour moves up to c of the outputs, each by at most Δ (for
    example a histogram under replace-one neighbours moves two bins by 1, c = 2, Δ = 1). The
    guarantee then follows the exact profile of that shift (L2 sensitivity √c Δ), not the
    coarser single-output bound with sensitivity cΔ."""

    def __init__(self, epsilon: Optional[float] = None, delta: Optional[float] = None,
                 sensitivity: int = 1, *, rho: Optional[float] = None, coordinates: int = 1,
                 rng: Optional[Generator] = None, budget: Optional[PrivacyBudget] = None,
                 threads: Optional[int] = None):
        super().__init__(rng, budget)
        self.sensitivity = integer_sensitivity(sensitivity)
        self.coordinates = check_count(coordinates, "coordinates")
        self.threads = threads
        l2 = self.sensitivity * math.sqrt(self.coordinates)
        if rho is not None:
            if epsilon is not None or delta is not None:
                raise TypeError("give either epsilon and delta, or rho, not both")
            self.rho: Optional[float] = nonnegative(rho, "rho")
            if self.rho == 0:
                raise ValueError("rho must be > 0")
            self.epsilon: Optional[float] = None
            self.delta: Optional[float] = None
            self.sigma = l2 / math.sqrt(2 * self.rho)
        else:
            if epsilon is None or delta is None:
                raise TypeError("DiscreteGaussianMechanism needs epsilon and delta, or rho=")
            self.epsilon, self.delta, self.rho = check_epsilon(epsilon), check_delta(delta), None
            if self.delta == 0:
                raise ValueError("delta must be > 0 for the Gaussian mechanism (or give rho=)")
            self.sigma = _meeting_discrete_profile(analytic_gaussian_sigma(self.epsilon, self.delta, l2),
                                                   self._loss(1.0), self.epsilon, self.delta)
        self.sigma = _grid.round_up_short(self.sigma)

    def _loss(self, sigma: float) -> DiscreteGaussian:
        return DiscreteGaussian(sigma, self.sensitivity, self.coordinates)

    def privacy_loss(self) -> DiscreteGaussian:
        return self._loss(self.sigma)

    def accuracy(self, beta: float, count: int = 1) -> float:
        return float(math.ceil(self.sigma * math.sqrt(2 * math.log(2 * count / check_beta(beta)))))

    def _prepare(self, value: Any) -> Tuple[np.ndarray, bool]:
        return as_integer_array(value), np.ndim(value) == 0

    def _release(self, prepared: Tuple[np.ndarray, bool]) -> Any:
        v, scalar = prepared
        noise = np.asarray(self.rng.discrete_gaussian(self.sigma, v.shape, threads=self.threads))
        out = add_checked(v, noise)
        return int(out) if scalar else out
