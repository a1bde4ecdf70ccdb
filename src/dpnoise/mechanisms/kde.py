"""A private kernel density estimate by the Gaussian-process mechanism (Hall, Rinaldo &
Wasserman 2013, §4)."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._release.docs import shared_docs
from .._validate import real
from ..accounting.budget import PrivacyBudget
from ..accounting.losses import Gaussian, PureDP
from ..generator import Generator
from ._base import (
    Mechanism,
    as_real_array,
    check_beta,
    check_delta,
    check_epsilon,
    normalise_shape,
)
from ._plan import GaussianProcessPlan

# log of the kernel's normalising constant (2πh²)^{d/2} must stay in this range (no overflow)
_MAX_LOG_NORM = 600.0


@shared_docs
class PrivateKDE(Mechanism[GaussianProcessPlan]):
    """Gaussian-kernel density estimate released with the Gaussian-process mechanism of Hall,
    Rinaldo & Wasserman (2013, Prop. 3 and §4.1 on kernel density estimation):

        f̃ = f + sqrt(2 ln(2/δ))·Δ/ε · G,   Δ = sqrt(2) / (n (2πh²)^{d/2}),

    with G a Gaussian process with covariance K(x, y) = exp(-|x - y|²/(2h²)), evaluated on the
    public ``grid`` (m points, shape (m,) or (m, d)). Neighbours: replace one of n records (n is
    public: the number of rows of the data is not protected). The calibration is proved for
    ε <= 1, which is enforced.

    Floating point: the density estimate itself (kernel sums over the data), the Cholesky factor
    of the kernel matrix and the product L·z are float64 computations. The randomness z is exact
    (discrete Gaussian with σ = 2^20 on the grid 2^-20, through the generator's noisy-grid
    kernel), but because the secret-dependent f is a float computation, this mechanism does NOT
    have the floating-point-attack protection of the grid-based Laplace and Gaussian mechanisms;
    treat its guarantee as that of a careful float implementation.

    Timing: the sampler's running time grows with |noise| (docs/security.md); there is no
    constant-time mode yet.

    Parameters
    ----------
    epsilon, delta : float
        The (ε, δ) target.
    bandwidth : float
        The Gaussian kernel's bandwidth h > 0.
    grid : array_like
        The public evaluation points, (m,) or (m, d).
    {release_sections}

    Examples
    --------
    >>> import numpy as np, dpnoise
    >>> kde = dpnoise.PrivateKDE(1.0, 1e-5, 0.5, np.linspace(-1, 1, 5))
    >>> kde(np.zeros(100)).shape
    (5,)
    """

    epsilon: float  # always set (the base allows None for mechanisms calibrated otherwise)
    delta: float

    def __init__(self, epsilon: float, delta: float, bandwidth: float, grid: Any, *,
                 rng: Generator | None = None, budget: PrivacyBudget | None = None,
                 threads: int | None = None, allow_insecure: bool = False):
        super().__init__(rng, budget, threads=threads, allow_insecure=allow_insecure)
        self.epsilon = check_epsilon(epsilon)
        if self.epsilon > 1:
            raise ValueError(f"epsilon must be <= 1 for the Gaussian-process mechanism "
                             f"(Hall, Rinaldo & Wasserman 2013, Prop. 3), got {self.epsilon}")
        self.delta = check_delta(delta)
        if self.delta == 0:
            raise ValueError("delta must be > 0")
        h = real(bandwidth, "bandwidth")
        if not (math.isfinite(h) and h > 0):
            raise ValueError(f"bandwidth must be a finite number > 0, got {bandwidth!r}")
        g = as_real_array(grid, "grid").astype(np.float64)
        if g.ndim == 1:
            g = g[:, None]
        if g.ndim != 2 or g.shape[0] < 1 or g.shape[1] < 1:
            raise ValueError("grid must have shape (m,) or (m, d) with m, d >= 1")
        d = g.shape[1]
        # log (2πh²)^{d/2}, computed on logarithms (h² itself may underflow or overflow)
        self._log_norm = d * (math.log(h) + 0.5 * math.log(2 * math.pi))
        if not (abs(self._log_norm) <= _MAX_LOG_NORM and 1e-150 <= h <= 1e150):
            raise ValueError(f"bandwidth={h!r} is out of range for a grid of dimension {d}: the kernel's "
                             "normalising constant (2πh²)^(d/2) must be between e^-600 and e^600")
        self.bandwidth = h
        self.grid = g
        if not math.isfinite(self.noise_scale(1)):  # the largest scale (one record): parameters, not data
            raise ValueError(f"epsilon={self.epsilon!r} and delta={self.delta!r} give an infinite noise scale "
                             f"for bandwidth={h!r}: use a larger epsilon or delta")
        sq = np.sum((g[:, None, :] - g[None, :, :]) ** 2, axis=-1)
        cov = np.exp(-sq / (2 * h * h))
        jitter = 1e-10
        while True:  # at most ~11 rounds: cov + I is positive definite
            try:
                self._chol = np.linalg.cholesky(cov + jitter * np.eye(len(g)))
                break
            except np.linalg.LinAlgError:
                jitter *= 10
        self._check_release_possible()

    @staticmethod
    def _records(shape: Any) -> int:
        shape = normalise_shape(shape)
        n = shape[0] if shape else 1
        if n < 1:
            raise ValueError("data must have at least one record (n >= 1)")
        return n

    def sensitivity(self, n: int) -> float:
        """Δ = sqrt(2) / (n (2πh²)^{d/2}) (HRW 2013, §4.1), on logarithms.

        Parameters
        ----------
        n : int or tuple of int
            The number of records (or the data's shape).

        Returns
        -------
        float
            The RKHS sensitivity of the density.
        """
        return math.exp(0.5 * math.log(2) - math.log(self._records(n)) - self._log_norm)

    def noise_scale(self, n: int) -> float:
        """σ = sqrt(2 ln(2/δ)) Δ(n)/ε, the noise scale of the Gaussian process.

        Parameters
        ----------
        n : int or tuple of int
            As for :meth:`sensitivity`.

        Returns
        -------
        float
            σ, in density units.
        """
        return math.sqrt(2 * math.log(2 / self.delta)) * self.sensitivity(n) / self.epsilon

    def plan(self, shape: Any = (), dtype: Any = None) -> GaussianProcessPlan:
        """The plan for data of this shape ((n,) or (n, d); an int n means n records): on any
        finite grid a Gaussian mechanism with Mahalanobis sensitivity Δ(n)."""
        n = self._records(shape)
        scale = self.noise_scale(n)
        loss = Gaussian(scale, self.sensitivity(n)) if scale > 0 else PureDP(0.0)
        return GaussianProcessPlan(type(self).__name__, loss, normalise_shape(shape), False,
                                   self.threads, scale, self._chol)

    def accuracy(self, beta: float, shape: Any = ()) -> float:
        """Half-width over all m grid points with probability 1 - beta (each G(x) ~ N(0, 1))."""
        m = self.grid.shape[0]
        return self.noise_scale(self._records(shape)) * math.sqrt(2 * math.log(2 * m / check_beta(beta)))

    def density(self, data: Any) -> np.ndarray:
        """The non-private kernel density estimate on the grid.

        Parameters
        ----------
        data : array_like
            Shape (n,) or (n, d), n >= 1, d the grid's dimension.

        Returns
        -------
        numpy.ndarray of float64
            The density at each of the m grid points.

        Raises
        ------
        ValueError
            For data of another shape.
        """
        x = as_real_array(data, "data").astype(np.float64)
        if x.ndim == 1:
            x = x[:, None]
        if x.ndim != 2 or x.shape[1] != self.grid.shape[1] or x.shape[0] < 1:
            raise ValueError(f"data must have shape (n,) or (n, {self.grid.shape[1]}) with n >= 1")
        h = self.bandwidth
        out = np.zeros(self.grid.shape[0])
        for start in range(0, x.shape[0], 4096):
            chunk = x[start:start + 4096]
            sq = np.sum((self.grid[:, None, :] - chunk[None, :, :]) ** 2, axis=-1)
            out += np.exp(-sq / (2 * h * h)).sum(axis=1)
        return out / math.exp(math.log(x.shape[0]) + self._log_norm)

    def _prepare(self, data: Any) -> tuple[np.ndarray, tuple[int, ...], Any]:
        f = self.density(data)
        return f, np.shape(data), np.float64
