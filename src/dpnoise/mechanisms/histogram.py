"""Private histograms: counts over public bins plus integer noise."""
from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._rational import _magnitude
from .._release.docs import shared_docs
from .._release.plan import INTEGER_BOUND, MAX_LAPLACE_SCALE
from .._validate import MAX_PART, count as check_count, neighbours as check_neighbours, real
from ..accounting.budget import PrivacyBudget
from ..generator import Generator
from ._base import (
    DEFAULT_OUT_OF_DOMAIN,
    Mechanism,
    as_integer_array,
    as_real_array,
    check_beta,
    check_delta,
    check_epsilon,
    check_out_of_domain,
    out_of_domain_error,
)
from ._plan import NoisyGridPlan
from .gaussian import MAX_SIGMA, check_gaussian_delta, discrete_gaussian_loss, discrete_gaussian_sigma
from .laplace import discrete_laplace_half_width, discrete_laplace_loss, discrete_laplace_scale

NOISES = ("laplace", "geometric", "gaussian")
MAX_BINS = 1 << 27  # the counts are held in memory (8 bytes each)


@shared_docs
class Histogram(Mechanism[NoisyGridPlan]):
    """Counts of the data in public bins, released with discrete noise.

    Sensitivity (Dwork & Roth 2014, §3.3): one record changes one count by 1 under add/remove
    neighbours (L1 = L2 = 1); under replace-one it moves from one bin to another, so L1 = 2 for
    the discrete Laplace/geometric noise, and the discrete Gaussian is calibrated to the exact
    profile of two counts each moving by 1 (L2 sensitivity √2; ``coordinates=2`` of
    ``DiscreteGaussian``).

    Bins are given once and must not depend on the data: ``bins`` as an int needs ``range``
    (NumPy would otherwise take the range from the data, which leaks it), or give the edges;
    or ``categories=k`` for integer category indices 0..k-1.

    Records outside the bins: ``out_of_domain="clamp"`` (the default) counts them in the
    nearest end bin (category 0 or k - 1; the first or last bin); ``"drop"`` leaves them out;
    both are per-record maps that keep the sensitivity. ``"raise"`` refuses the input before
    any charge, which reveals that such a record exists (docs/security.md). NaN or infinity in
    float data raises ValueError (also data-dependent, also before any charge).

    Timing: the sampler's running time grows with |noise| (docs/security.md); there is no
    constant-time mode yet.

    Parameters
    ----------
    {epsilon_parameter}
    delta : float, default 0.0
        δ (Gaussian noise needs δ > 0).
    neighbours : {"add_remove", "replace"}
        The neighbouring relation (replace moves two counts).
    noise : {"laplace", "gaussian"}
        Discrete Laplace or discrete Gaussian noise on the counts.
    bins, range : optional
        Bins of real records (as ``numpy.histogram``).
    categories : int, optional
        Integer records in [0, categories).
    out_of_domain : {"clamp", "drop", "raise"}
        Records outside the public domain (default "clamp", docs/security.md).
    {release_sections}

    Examples
    --------
    >>> import dpnoise
    >>> h = dpnoise.Histogram(1.0, categories=3)
    >>> h([0, 1, 1, 2]).shape
    (3,)
    """

    epsilon: float  # always set (the base allows None for mechanisms calibrated otherwise)
    delta: float

    def __init__(self, epsilon: float, *, delta: float = 0.0, neighbours: str = "add_remove",
                 noise: str = "laplace", bins: int | Sequence[float] | None = None,
                 range: Sequence[float] | None = None, categories: int | None = None,
                 out_of_domain: str = DEFAULT_OUT_OF_DOMAIN, rng: Generator | None = None,
                 budget: PrivacyBudget | None = None, threads: int | None = None,
                 allow_insecure: bool = False):
        super().__init__(rng, budget, threads=threads, allow_insecure=allow_insecure)
        self.neighbours = check_neighbours(neighbours)
        if noise not in NOISES:
            raise ValueError(f"noise must be one of {NOISES}, got {noise!r}")
        self.noise = noise
        self.epsilon = check_epsilon(epsilon)
        self.delta = check_delta(delta)
        self.out_of_domain = check_out_of_domain(out_of_domain)
        # L1 sensitivity (for the Laplace/geometric noise); the Gaussian uses 2 coordinates by 1
        self.sensitivity = 1 if self.neighbours == "add_remove" else 2
        if (bins is None) == (categories is None):
            raise TypeError("give either bins= (with range= for an int) or categories=")
        if categories is not None:
            self.categories = check_count(categories, "categories")
            self.edges: np.ndarray | None = None
        else:
            self.edges = _edges(bins, range)
            self.categories = self.edges.size - 1
        if self.categories > MAX_BINS:
            raise ValueError(f"at most 2^27 bins or categories are supported, got {self.categories}")
        if noise == "gaussian":
            if self.delta == 0:
                raise ValueError("noise='gaussian' needs delta > 0")
            check_gaussian_delta(self.delta)
            coordinates = 1 if self.neighbours == "add_remove" else 2
            self._param: Any = discrete_gaussian_sigma(self.epsilon, self.delta, 1, coordinates)
            self._loss: Any = discrete_gaussian_loss(self._param, 1, coordinates)
            self._law, self._plan_sensitivity = "gaussian", math.sqrt(coordinates)
            if self._param > MAX_SIGMA:  # pragma: no cover - discrete_gaussian_sigma refuses first
                raise ValueError("epsilon is too small for this histogram")
        else:
            self._param = discrete_laplace_scale(self.sensitivity, self.epsilon, self.delta)
            if self._param > MAX_LAPLACE_SCALE:
                raise ValueError(f"epsilon={self.epsilon} needs discrete Laplace noise of scale "
                                 f"{_magnitude(self._param)}, beyond 2^44: use a larger epsilon")
            self._loss = discrete_laplace_loss(self._param, self.sensitivity)
            self._law, self._plan_sensitivity = "laplace", self.sensitivity
        self._check_release_possible()

    def plan(self, shape: Any = (), dtype: Any = None) -> NoisyGridPlan:
        """The plan of one histogram release: noise on the k counts; the loss does not depend on
        the data's shape (one record moves at most the counts the sensitivity says)."""
        return NoisyGridPlan(type(self).__name__, self._loss, (self.categories,), False, self.threads,
                             self._law, self._param, None, self._plan_sensitivity, INTEGER_BOUND)

    def accuracy(self, beta: float, shape: Any = ()) -> float:
        """Half-width holding for all k counts at once with probability 1 - beta."""
        beta = check_beta(beta)
        k = self.categories
        if self._law == "laplace":
            return float(discrete_laplace_half_width(float(self._param), k, beta))
        return float(math.ceil(self._param * math.sqrt(2 * math.log(2 * k / beta))))

    def counts(self, data: Any) -> np.ndarray:
        """The exact (non-private) counts, after the out-of-domain policy; for tests and for
        comparison only.

        Parameters
        ----------
        data : array_like
            Category indices, or reals when the histogram has ``edges``.

        Returns
        -------
        numpy.ndarray of int64
            One count per bin.

        Raises
        ------
        TypeError
            For non-integer data without edges.
        ValueError
            For out-of-domain data under ``out_of_domain="raise"``.
        """
        if self.edges is None:
            try:
                x = as_integer_array(data, "data", bound=MAX_PART).reshape(-1)
            except TypeError:
                raise TypeError(f"data must be category indices (integers), got dtype "
                                f"{np.asarray(data).dtype}") from None
            k = self.categories
            if x.size and (x.min() < 0 or x.max() >= k):
                if self.out_of_domain == "raise":
                    raise out_of_domain_error(f"[0, {k})")
                x = np.clip(x, 0, k - 1) if self.out_of_domain == "clamp" else x[(x >= 0) & (x < k)]
            return np.bincount(x, minlength=k).astype(np.int64)
        xf = as_real_array(data, "data").reshape(-1).astype(np.float64)
        lo, hi = float(self.edges[0]), float(self.edges[-1])
        if xf.size and (xf.min() < lo or xf.max() > hi):
            if self.out_of_domain == "raise":
                raise out_of_domain_error(f"the bins' range [{lo!r}, {hi!r}]")
            if self.out_of_domain == "clamp":
                xf = np.clip(xf, lo, hi)
            # "drop": np.histogram leaves values outside [lo, hi] out
        return np.histogram(xf, bins=self.edges)[0].astype(np.int64)

    def _prepare(self, data: Any) -> tuple[np.ndarray, tuple[int, ...], Any]:
        c = self.counts(data)
        return c, c.shape, np.int64


def _edges(bins: Any, range: Any) -> np.ndarray:
    """Strictly increasing, finite bin edges with non-zero width, from bins= and range=."""
    if isinstance(bins, (bool, np.bool_)):
        raise TypeError("bins must be an int (with range=) or a sequence of edges, got bool")
    if isinstance(bins, (int, np.integer)):
        if range is None:
            raise ValueError("bins as an int needs range=(low, high): a data-dependent range leaks")
        if not 1 <= bins <= MAX_BINS:
            raise ValueError(f"bins must be between 1 and 2^27, got {bins}")
        if isinstance(range, (str, bytes)) or not hasattr(range, "__len__") or len(range) != 2:
            raise ValueError(f"range must be a pair (low, high), got {range!r}")
        lo, hi = real(range[0], "range"), real(range[1], "range")
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi and math.isfinite(hi - lo)):
            raise ValueError(f"range must be finite with low < high and a finite width, got {range!r}")
        edges = np.linspace(lo, hi, int(bins) + 1)
        if not np.all(np.diff(edges) > 0):
            raise ValueError(f"range {range!r} is too narrow for {bins} bins of non-zero width in float64")
        return edges
    if range is not None:
        raise TypeError("range= goes with bins as an int; with explicit edges leave it out")
    if isinstance(bins, (str, bytes, numbers.Number)):
        raise TypeError(f"bins must be an int (with range=) or a sequence of edges, got {type(bins).__name__}")
    try:
        edges = np.asarray(bins, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError("bins must be an int (with range=) or a sequence of real edges") from None
    if edges.ndim != 1 or edges.size < 2 or not np.all(np.isfinite(edges)) or not np.all(np.diff(edges) > 0):
        raise ValueError("bins must be finite, strictly increasing edges (at least two)")
    if edges.size - 1 > MAX_BINS:
        raise ValueError("at most 2^27 bins are supported")
    return edges
