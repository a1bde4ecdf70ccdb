"""The Laplace mechanism on a grid, and the discrete Laplace (geometric) mechanism for integers."""
from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from .._release import check_laplace_scale, constant_time as _ct, grid as _grid
from .._release.docs import shared_docs
from .._release.plan import GRID_BOUND, INTEGER_BOUND, MAX_LAPLACE_SCALE
from .._validate import MAX_PART, integer_sensitivity
from ..accounting.budget import PrivacyBudget
from ..accounting.losses import DiscreteLaplace, PrivacyLoss, PureDP
from ..generator import Generator
from ._base import (
    Mechanism,
    as_integer_array,
    as_real_array,
    check_beta,
    check_delta,
    check_epsilon,
    check_sensitivity,
    integers_on_grid,
    normalise_shape,
    size_of,
)
from ._calibrate import least_at_or_above, least_fitting_exponent
from ._plan import KEPT_FLOATS, NoisyGridPlan

# The accountants enumerate the Δ + 1 loss values of a discrete Laplace up to this Δ.
_MAX_PROFILE_SENSITIVITY = 10_000_000

def _float_down(x: Fraction) -> float:
    """The largest double <= x (a descriptor's scale rounded toward more privacy loss)."""
    f = float(x)
    return math.nextafter(f, 0.0) if Fraction(f) > x else f


def discrete_laplace_loss(scale: Fraction, sensitivity: int) -> PrivacyLoss:
    """The loss of discrete Laplace noise of this scale with this integer sensitivity: the exact
    DiscreteLaplace descriptor while the accountants can enumerate it, else its pure ε = Δ/t.

    Parameters
    ----------
    scale : fractions.Fraction
        t, the exact scale in grid units.
    sensitivity : int
        Δ in grid units.

    Returns
    -------
    PrivacyLoss
        DiscreteLaplace (scale rounded down) or PureDP (ε rounded up).
    """
    if sensitivity <= _MAX_PROFILE_SENSITIVITY:
        return DiscreteLaplace(_float_down(scale), sensitivity)
    return PureDP(float(Fraction(sensitivity) / scale) * (1 + 2**-50))  # rounded up


def discrete_laplace_scale(sensitivity: int, epsilon: float, delta: float = 0.0) -> Fraction:
    """Discrete Laplace scale (grid units) for an integer sensitivity Δ: t = Δ/ε for pure DP
    (Ghosh, Roughgarden & Sundararajan 2009; CKS 2020); with δ > 0, t = Δ/(ε - ln(1-δ)), which
    is (ε - ln(1-δ))-DP and hence (ε, δ)-DP (docs/mechanisms.md, Lemma 1), then confirmed on the
    exact profile (a bounded upward search covers float rounding).

    Parameters
    ----------
    sensitivity : int
        Integer L1 sensitivity Δ (grid units).
    epsilon : float
        ε > 0.
    delta : float, default 0.0
        δ in [0, 1).

    Returns
    -------
    fractions.Fraction
        The scale t in grid units (exact for δ = 0, rounded up otherwise).

    Raises
    ------
    ValueError
        When no scale up to 1e300 meets (ε, δ).

    Examples
    --------
    >>> from dpnoise.mechanisms import discrete_laplace_scale
    >>> discrete_laplace_scale(2, 0.5)
    Fraction(4, 1)
    """
    if delta == 0:
        return Fraction(sensitivity) / Fraction(epsilon)  # exact
    denom = epsilon - math.log1p(-delta)
    t = float(Fraction(sensitivity) / Fraction(denom) * Fraction(1 + 2**-40))  # float slack, upward
    if sensitivity <= _MAX_PROFILE_SENSITIVITY:
        t = least_at_or_above(
            lambda s: float(DiscreteLaplace(s, sensitivity).delta_for_epsilon(epsilon)) <= delta, t,
            what="the discrete Laplace scale")
    return Fraction(_grid.round_up_short(t * (1 + 2**-50)))


def discrete_laplace_half_width(scale: float, count: int, beta: float) -> int:
    """Least m with count · P(|X| > m) <= beta for X ~ DLap(scale): P(|X| > m) = 2r^{m+1}/(1+r).

    Parameters
    ----------
    scale : float
        t > 0, r = e^{-1/t}.
    count : int
        How many draws the union bound covers (0 gives 0).
    beta : float
        The total failure probability.

    Returns
    -------
    int
        m >= 0, in grid units.
    """
    if count == 0:
        return 0
    r = math.exp(-1.0 / scale)
    need = math.log(beta * (1 + r) / (2 * count)) / math.log(r)  # (m+1) >= need
    return max(0, math.ceil(need) - 1)


@shared_docs
class DiscreteLaplaceMechanism(Mechanism[NoisyGridPlan]):
    """Adds discrete Laplace noise P(x) ∝ exp(-|x|/t) to integer queries (L1 sensitivity Δ,
    an integer): t = Δ/ε gives ε-DP (Ghosh, Roughgarden & Sundararajan 2009; CKS 2020); with
    ``delta`` > 0, t = Δ/(ε - ln(1-δ)) (docs/mechanisms.md, Lemma 1). Scalars and arrays of any
    integer dtype; outputs int64.

    Clamp: each value is clamped to [-2^61, 2^61] before the noise is added (a 1-Lipschitz map,
    so the sensitivity is unchanged), so that no exception depends on the data's values.

    Timing: the sampler's running time grows with |noise| (about 10 ns per unit of
    |noise|/scale on the exact path; docs/security.md); ``constant_time=True`` removes that
    (the constant-time mode).

    Parameters
    ----------
    {epsilon_parameter}
    sensitivity : int, default 1
        Integer L1 sensitivity Δ (at most 2^62).
    {constant_time}
    delta : float, default 0.0
        δ in [0, 1): scale Δ/(ε - ln(1-δ)).
    {release_sections}

    Examples
    --------
    >>> import dpnoise
    >>> mech = dpnoise.DiscreteLaplaceMechanism(1.0)
    >>> isinstance(mech(41), int)
    True
    """

    epsilon: float  # always set (the base allows None for mechanisms calibrated otherwise)
    delta: float

    def __init__(self, epsilon: float, sensitivity: int = 1, *, delta: float = 0.0,
                 rng: Generator | None = None, budget: PrivacyBudget | None = None,
                 threads: int | None = None, allow_insecure: bool = False, constant_time: bool = False):
        super().__init__(rng, budget, threads=threads, allow_insecure=allow_insecure)
        self.constant_time = _ct.check_flag(constant_time)
        self.epsilon = check_epsilon(epsilon)
        self.delta = check_delta(delta)
        self.sensitivity = integer_sensitivity(sensitivity)
        if self.sensitivity > MAX_PART:
            raise ValueError(f"sensitivity must be at most 2^62, got {sensitivity!r}")
        self.scale = discrete_laplace_scale(self.sensitivity, self.epsilon, self.delta)
        check_laplace_scale(self.scale, f"epsilon={self.epsilon} with sensitivity={self.sensitivity}")
        self._loss = discrete_laplace_loss(self.scale, self.sensitivity)
        self._check_release_possible()

    def plan(self, shape: Any = (), dtype: Any = None) -> NoisyGridPlan:
        """The plan for an integer query of this shape (the loss does not depend on it: Δ is
        the L1 sensitivity of the whole query). An empty query spends nothing (PureDP(0))."""
        shape = normalise_shape(shape)
        loss = self._loss if size_of(shape) else PureDP(0.0)
        if self.constant_time:
            loss = _ct.loss(loss, size_of(shape))
        return NoisyGridPlan(type(self).__name__, loss, shape, shape == (), self.threads,
                             "laplace", self.scale, None, self.sensitivity, INTEGER_BOUND, self.constant_time)

    def accuracy(self, beta: float, shape: Any = ()) -> float:
        """Half-width w with P(some of the outputs is more than w from its clamped value)
        <= beta (exact tail, union bound over the coordinates)."""
        d = size_of(normalise_shape(shape))
        return float(discrete_laplace_half_width(float(self.scale), d, check_beta(beta)))

    def _prepare(self, value: Any) -> tuple[np.ndarray, tuple[int, ...], Any]:
        v = as_integer_array(value, clamp=not self.constant_time)  # constant time: the kernel clamps
        return v, v.shape, np.int64

    def _scalar_route(self, kind: type) -> tuple[str, Any] | None:
        """An int is one call on the integer path (clamped as _prepare clamps it)."""
        if self.constant_time or kind not in (int, np.int64):
            return None
        return "integer", self._plan_for((), np.int64)


class GeometricMechanism(DiscreteLaplaceMechanism):
    """The geometric mechanism (Ghosh et al. 2009): another name for the discrete Laplace one.

    Timing: the sampler's running time grows with |noise| (about 10 ns per unit of
    |noise|/scale on the exact path; docs/security.md); ``constant_time=True`` removes that
    (the constant-time mode).

    Parameters and behaviour: see :class:`DiscreteLaplaceMechanism`.

    Examples
    --------
    >>> import dpnoise
    >>> isinstance(dpnoise.GeometricMechanism(0.5)(10), int)
    True
    """


@shared_docs
class LaplaceMechanism(Mechanism[NoisyGridPlan]):
    """The Laplace mechanism f(x) + Lap(Δ/ε), made safe against floating-point attacks.

    The query value is rounded to the grid 2^k (chosen from the sensitivity so that the rounding
    widens it by at most 1/1024, or ``granularity`` = 2^k), discrete Laplace noise is added in
    grid units with the widened integer sensitivity floor(Δ/2^k) + d (d coordinates, L1), and the
    output is the exact double (v + noise)·2^k. No floating-point operation depends on the noise
    (Mironov 2012). Integer inputs with an integral sensitivity and no granularity use the grid 1
    directly and return integers. With ``delta`` > 0: scale Δ/(ε - ln(1-δ)) (docs/mechanisms.md,
    Lemma 1). The grid is coarsened (k raised) when ε is so small that the scale in grid units
    would pass 2^44.

    Clamp: each grid value is clamped to [-2^52, 2^52] grid units (integer path: [-2^61, 2^61])
    before the noise is added, a 1-Lipschitz map that keeps the sensitivity, so that no
    exception depends on the data's values (|x| beyond 2^(52+k) is released as ±2^(52+k) plus
    noise). NaN or infinity raises ValueError before any charge: that exception does depend on
    the data (docs/security.md).

    Timing: the sampler's running time grows with |noise| (about 10 ns per unit of
    |noise|/scale on the exact path; docs/security.md); ``constant_time=True`` removes that
    (the constant-time mode).

    float32 input gives float32 output (the float64 release rounded once; docs/security.md),
    and ``mech(x, out=buf)`` writes into ``buf``, which may be ``x`` itself.

    Parameters
    ----------
    {epsilon_parameter}
    sensitivity : float, default 1.0
        L1 sensitivity Δ of the whole query (at least 2^-1000).
    {constant_time}
    delta : float, default 0.0
        δ in [0, 1): scale Δ/(ε - ln(1-δ)).
    granularity : float, optional
        The grid 2^k (a power of two); default: chosen from Δ and the query's size.
    {release_sections}

    Examples
    --------
    >>> import numpy as np, dpnoise
    >>> mech = dpnoise.LaplaceMechanism(1.0, sensitivity=1.0)
    >>> x = np.array([10.5, 20.25], dtype=np.float32)
    >>> mech(x).dtype
    dtype('float32')
    >>> mech(x, out=x) is x
    True
    """

    epsilon: float  # always set (the base allows None for mechanisms calibrated otherwise)
    delta: float

    def __init__(self, epsilon: float, sensitivity: float = 1.0, *, delta: float = 0.0,
                 granularity: float | None = None, rng: Generator | None = None,
                 budget: PrivacyBudget | None = None, threads: int | None = None,
                 allow_insecure: bool = False, constant_time: bool = False):
        super().__init__(rng, budget, threads=threads, allow_insecure=allow_insecure)
        self.constant_time = _ct.check_flag(constant_time)
        self._max_scale = _ct.MAX_PARAMETER if self.constant_time else MAX_LAPLACE_SCALE
        self.epsilon = check_epsilon(epsilon)
        self.delta = check_delta(delta)
        self.sensitivity = check_sensitivity(sensitivity)
        self.granularity_exponent = _grid.check_granularity(granularity)
        self._integral = self.granularity_exponent is None and self.sensitivity == int(self.sensitivity) \
            and self.sensitivity <= MAX_PART
        self._cache: dict[tuple[int, bool], tuple[int | None, int, Fraction]] = {}
        self._check_release_possible()  # refuse bad parameters now
        if self._integral and self.constant_time:  # the integer path's plan too
            self.plan((), np.int64)

    def _calibrate(self, count: int, integer: bool) -> tuple[int | None, int, Fraction]:
        key = (count, integer)
        if key not in self._cache:
            what = f"epsilon={self.epsilon} with sensitivity={self.sensitivity} over {count} coordinates"
            # the grid exponents the release accepts (constant time: a narrower range)
            lowest, highest = (_ct.MIN_EXPONENT, _ct.MAX_EXPONENT) if self.constant_time else \
                (_grid.MIN_EXPONENT, _grid.MAX_EXPONENT)
            if integer:
                k: int | None = None
                sens = int(self.sensitivity)  # integer query, integer sensitivity: no rounding
            else:
                k = self.granularity_exponent
                if k is None:
                    k = _grid.default_exponent(self.sensitivity, count)
                    # keep Δ/2^k/ε within half the scale limit: coarsen the grid for tiny ε
                    need = math.log2(self.sensitivity) - math.log2(self.epsilon) - math.log2(self._max_scale / 2)
                    k = min(max(k, math.ceil(need), lowest), highest)
                units = _grid.grid_units(self.sensitivity, k)
                if units + count > MAX_PART:
                    raise ValueError(f"granularity 2^{k} is too fine for sensitivity={self.sensitivity} "
                                     f"over {count} coordinates (beyond 2^62 grid units)")
                sens = math.floor(units) + count
            scale = discrete_laplace_scale(sens, self.epsilon, self.delta)
            if k is not None and self.granularity_exponent is None and scale > self._max_scale:
                # the widening (+count grid units) pushed the scale past the limit: a coarser grid
                # shrinks Δ in grid units, hence the scale (monotone in k), so take the finest
                # grid whose final scale fits, if any grid does
                def sens_at(j: int) -> int:
                    return math.floor(_grid.grid_units(self.sensitivity, j)) + count

                found = least_fitting_exponent(
                    lambda j: discrete_laplace_scale(sens_at(j), self.epsilon, self.delta) <= self._max_scale,
                    k + 1, highest)
                k = highest if found is None else found
                sens = sens_at(k)
                scale = discrete_laplace_scale(sens, self.epsilon, self.delta)
            check_laplace_scale(scale, what + ("" if k is None else f" on the grid 2^{k}"))
            self._cache[key] = (k, sens, scale)
        return self._cache[key]

    def plan(self, shape: Any = (), dtype: Any = None) -> NoisyGridPlan:
        """The plan for a query of this shape; ``dtype`` an integer dtype selects the integer
        path (grid 1, integer output) when the sensitivity is integral and no granularity is
        given. An empty query spends nothing (its loss is PureDP(0))."""
        shape = normalise_shape(shape)
        integer = self._integral and _is_integer_dtype(dtype)
        d = size_of(shape)
        k, sens, scale = self._calibrate(max(d, 1), integer)
        loss = discrete_laplace_loss(scale, sens) if d else PureDP(0.0)
        if self.constant_time:
            loss = _ct.loss(loss, d)
        return NoisyGridPlan(type(self).__name__, loss, shape, shape == (), self.threads, "laplace",
                             scale, k, sens, INTEGER_BOUND if k is None else GRID_BOUND, self.constant_time)

    def grid(self, count: int = 1, integer: bool = False) -> tuple[int | None, int, Fraction]:
        """(k, widened sensitivity in grid units, discrete Laplace scale) for ``count`` coordinates.

        Parameters
        ----------
        count : int, default 1
            Coordinates per release.
        integer : bool, default False
            The integer path (k is None when the sensitivity is integral).

        Returns
        -------
        tuple of (int or None, int, fractions.Fraction)
            k, Δ in grid units and the exact scale t.
        """
        p = self.plan((count,), np.int64 if integer else np.float64)
        return p.k, int(p.sensitivity), Fraction(p.param)

    def accuracy(self, beta: float, shape: Any = (), dtype: Any = None) -> float:
        """Half-width w with P(some output is more than w from its (clamped) true value) <= beta,
        rounding included (Dwork–Roth Thm 3.8 gives ln(d/β)·Δ/ε for the continuous mechanism).

        Parameters
        ----------
        beta : float
            The probability that some output misses, in (0, 1).
        shape : tuple of int, default ()
            The query's shape; its size is the number of outputs.
        dtype : numpy.dtype, optional
            An integer dtype selects the integer path (no rounding term).

        Returns
        -------
        float
            The half-width, in the query's units.
        """
        p = self.plan(shape, dtype)
        w = discrete_laplace_half_width(float(p.param), p.size, check_beta(beta))
        if p.k is None:
            return float(w)
        return (w + 0.5) * 2.0**p.k if p.size else 0.0

    def _prepare(self, value: Any) -> tuple[np.ndarray, tuple[int, ...], Any]:
        x = as_real_array(value, keep=KEPT_FLOATS, clamp=not self.constant_time)  # float32 stays float32
        if x.dtype == np.int64 and self._integral:
            return x, x.shape, np.int64
        k = self._plan_for(x.shape, np.float64).k
        assert k is not None
        # floats go to the kernel as they are: it rounds and clamps to GRID_BOUND in one pass
        v = integers_on_grid(x, k) if x.dtype == np.int64 else x
        return v, x.shape, np.float64

    def _array_plan(self, shape: tuple[int, ...]) -> NoisyGridPlan | None:
        """Float arrays: the grid plan of their shape (as _prepare plans them)."""
        return None if self.constant_time else self._plan_for(shape, np.float64)

    def _scalar_route(self, kind: type) -> tuple[str, Any] | None:
        """A float is one call on the grid; an int one call on the integer path when the
        sensitivity is integral (else the general path rounds it onto the grid exactly)."""
        if self.constant_time:
            return None
        if kind in (float, np.float64):
            return "real", self._plan_for((), np.float64)
        if kind in (int, np.int64) and self._integral:
            return "integer", self._plan_for((), np.int64)
        return None


def _is_integer_dtype(dtype: Any) -> bool:
    if dtype is None:
        return False
    dt = np.dtype(dtype)
    return bool(np.issubdtype(dt, np.integer) or dt == np.bool_)
