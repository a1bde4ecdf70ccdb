"""The Gaussian mechanism on a grid (discrete Gaussian noise), and its calibrations."""
from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Callable

import numpy as np

from .._numeric import TargetNotMet, least_meeting
from .._release import constant_time as _ct, grid as _grid
from .._release.docs import docs_from_template, shared_docs
from .._release.plan import GRID_BOUND, INTEGER_BOUND, MAX_GAUSSIAN_SIGMA
from .._validate import MAX_PART, count as check_count, integer_sensitivity, positive, rate
from ..accounting.budget import PrivacyBudget
from ..accounting.conversions import zcdp_to_epsilon
from ..accounting.losses import (
    DiscreteGaussian,
    DiscreteGaussianVector,
    Gaussian,
    PoissonSampled,
    PrivacyLoss,
    PureDP,
)
from ..generator import Generator
from ._base import (
    Mechanism,
    as_integer_array,
    as_real_array,
    check_beta,
    check_delta,
    check_epsilon,
    check_rho,
    check_sensitivity,
    integers_on_grid,
    normalise_shape,
    size_of,
)
from ._calibrate import least_at_or_above, least_fitting_exponent
from ._plan import KEPT_FLOATS, NoisyGridPlan

CALIBRATIONS = ("analytic", "classic", "hall_rinaldo_wasserman")
MAX_SIGMA = MAX_GAUSSIAN_SIGMA  # σ in grid units: keeps the noisy grid values exact (see _plan)
# δ below this is refused: the accountants' discrete-Gaussian profile is not resolved below
# about 1e-20 (FFT rounding), so a calibration against it would be meaningless
MIN_DELTA = 1e-18


# The DP-SGD form (noise_multiplier=): the grid widens the sensitivity by at most 2^-17 of it,
# and σ stays at least 2^10 grid units (the smoothing width below is 10 grid units).
MULTIPLIER_WIDENING_BITS = 17
MIN_SUBSAMPLED_SIGMA_BITS = 10
SMOOTHING_WIDTH = 10.0


def check_noise_multiplier(value: Any) -> float:
    """z = σ/Δ of the DP-SGD form: a finite real > 0, at most 10^6 (no privacy is lost by a
    larger one, but σ in grid units must stay representable).

    Parameters
    ----------
    value : float
        The noise multiplier.

    Returns
    -------
    float
        z.

    Raises
    ------
    TypeError, ValueError
        For a non-real, non-finite, non-positive or too large value.
    """
    z = positive(value, "noise_multiplier")
    if z > 1e6:
        raise ValueError(f"noise_multiplier must be at most 1e6, got {z!r}")
    return z


def _smoothed_sigma(sigma: float) -> float:
    """σ_c = sqrt(σ² - a²), a = SMOOTHING_WIDTH, rounded down: the continuous Gaussian whose
    post-processing is pointwise within a factor R of the discrete Gaussian of σ, with
    log R <= d·4.1 e^{-2π²a²} < 10^-800 (CKS 2020's smoothing argument as in
    DiscreteGaussianVector; docs/ml.md). The accountant composes its Poisson-subsampled loss."""
    return math.nextafter(sigma * math.sqrt(1.0 - (SMOOTHING_WIDTH / sigma) ** 2), 0.0)


def check_gaussian_delta(value: Any) -> float:
    """δ for a Gaussian mechanism: in [MIN_DELTA, 1).

    Parameters
    ----------
    value : float
        δ.

    Returns
    -------
    float
        The checked δ.

    Raises
    ------
    ValueError
        For δ = 0 (give ``rho=`` instead), below MIN_DELTA, or not in [0, 1).
    """
    delta = check_delta(value)
    if delta == 0:
        raise ValueError("delta must be > 0 for the Gaussian mechanism (or give rho=)")
    if delta < MIN_DELTA:
        raise ValueError(f"delta must be at least {MIN_DELTA:g} for the Gaussian mechanisms "
                         f"(the privacy profile is not resolved below it), got {delta!r}")
    return delta


# The numpydoc sections of the σ calibrations below, written once (filled per function).
_SIGMA_DOCS = """
    Parameters
    ----------
    epsilon : float
        ε in {epsilon}.
    delta : float
        δ in [1e-18, 1).
    {sensitivity}

    Returns
    -------
    float
        {returns}

    Raises
    ------
    ValueError
        {raises}

    Examples
    --------
    >>> from dpnoise.mechanisms import {name}
    >>> {example}
    """
_L2_SENSITIVITY = "sensitivity : float, default 1.0\n        L2 sensitivity Δ."


@docs_from_template(_SIGMA_DOCS, epsilon="(0, 100]", sensitivity=_L2_SENSITIVITY,
                    returns="σ to relative precision 1e-14 (rounded up).",
                    raises="For out-of-range arguments, or no σ up to 1e300.",
                    example="round(analytic_gaussian_sigma(1.0, 1e-5), 3)\n    3.731")
def analytic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """The least σ for which N(0, σ²) with L2 sensitivity Δ is (ε, δ)-DP: the analytic Gaussian
    mechanism of Balle & Wang (2018, Thm 8 / Alg. 1), by bisection on the exact δ(ε)."""
    epsilon, delta = check_epsilon(epsilon), check_gaussian_delta(delta)
    sensitivity = check_sensitivity(sensitivity)

    def ok(s: float) -> bool:
        return float(Gaussian(s, sensitivity).delta_for_epsilon(epsilon)) <= delta

    try:
        return least_meeting(ok, sensitivity * max(1.0, math.sqrt(2 * math.log(1.25 / delta)) / epsilon), rel=1e-14)
    except TargetNotMet:
        raise ValueError(f"no sigma up to 1e300 meets (epsilon={epsilon!r}, delta={delta!r}) for "
                         f"sensitivity={sensitivity!r}: the sensitivity is too large") from None


@docs_from_template(_SIGMA_DOCS, epsilon="(0, 1)", sensitivity=_L2_SENSITIVITY,
                    returns="σ = sqrt(2 ln(1.25/δ)) Δ/ε.",
                    raises="For ε >= 1 (the theorem's range) or out-of-range arguments.",
                    example="round(classic_gaussian_sigma(0.5, 1e-5), 3)\n    9.69")
def classic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """σ = Δ·sqrt(2 ln(1.25/δ))/ε (Dwork & Roth 2014, Thm A.1; valid for ε < 1 only)."""
    epsilon, delta = check_epsilon(epsilon), check_gaussian_delta(delta)
    if epsilon >= 1:
        raise ValueError(f"the classic calibration holds only for epsilon < 1 (Dwork–Roth Thm A.1), "
                         f"got {epsilon}; use calibration='analytic'")
    return check_sensitivity(sensitivity) * math.sqrt(2 * math.log(1.25 / delta)) / epsilon


@docs_from_template(_SIGMA_DOCS, epsilon="(0, 1]", sensitivity=_L2_SENSITIVITY,
                    returns="σ = sqrt(2 ln(2/δ)) Δ/ε.",
                    raises="For ε > 1 or out-of-range arguments.",
                    example="round(hall_rinaldo_wasserman_sigma(1.0, 1e-5), 3)\n    4.941")
def hall_rinaldo_wasserman_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """σ = sqrt(2 ln(2/δ))·Δ/ε (Dwork, Kenthapadi, McSherry, Mironov & Naor 2006; restated as
    Hall, Rinaldo & Wasserman 2013, Prop. 3, with c(δ) = sqrt(2 ln(2/δ))); proved for ε <= 1."""
    epsilon, delta = check_epsilon(epsilon), check_gaussian_delta(delta)
    if epsilon > 1:
        raise ValueError(f"the hall_rinaldo_wasserman calibration is proved for epsilon <= 1 only, "
                         f"got {epsilon}; use calibration='analytic'")
    return check_sensitivity(sensitivity) * math.sqrt(2 * math.log(2 / delta)) / epsilon


_SIGMA: dict[str, Callable[[float, float, float], float]] = {
    "analytic": analytic_gaussian_sigma, "classic": classic_gaussian_sigma,
    "hall_rinaldo_wasserman": hall_rinaldo_wasserman_sigma}


def _least_meeting_profile(make_loss: Callable[[float], PrivacyLoss], epsilon: float, delta: float,
                           start: float) -> float:
    """The least σ >= ``start`` (a continuous calibration) meeting (ε, δ) on the privacy
    profile of make_loss(σ): ``start`` itself when it meets it (one profile evaluation, the usual
    case for one coordinate), else by steps doubling from start·2^-24 and bisection, in bounded
    time (about 40 evaluations). The search stays near ``start``: far above it the accountants'
    profile is not resolved below ~1e-20, so a wide bracket could be misled."""
    return least_at_or_above(lambda s: float(make_loss(s).delta_for_epsilon(epsilon)) <= delta,
                             start, rel=2.0**-22, what="sigma")


def _zcdp_sigma(sensitivity: float, epsilon: float, delta: float) -> float:
    """Least σ with ρ = Δ²/2σ² meeting (ε, δ) through the CKS 2020 conversion (Prop. 12): the
    vector calibration used before DiscreteGaussianVector (kept to compare against)."""
    return least_meeting(lambda s: zcdp_to_epsilon(sensitivity**2 / (2 * s * s), delta) <= epsilon,
                         sensitivity, rel=1e-9)


# Up to this many coordinates the exact c-fold profile of DiscreteGaussian is cheap enough to
# calibrate against (and to charge); beyond it, CKS 2020's multivariate bound
# (DiscreteGaussianVector, a proven upper bound: within 0.1% in δ at c = 1000).
EXACT_COORDINATES = 16


def discrete_gaussian_loss(sigma: float, sensitivity: int = 1, coordinates: int = 1) -> PrivacyLoss:
    """The loss of discrete Gaussian noise on outputs of which one neighbour moves c =
    ``coordinates``, each by at most Δ = ``sensitivity``: the exact profile (DiscreteGaussian)
    for c <= 16, else the proven vector bound with L2 sensitivity √c Δ (DiscreteGaussianVector).

    Parameters
    ----------
    sigma : float
        σ of the discrete Gaussian (grid units).
    sensitivity : int, default 1
        Integer shift Δ of each moved output.
    coordinates : int, default 1
        How many outputs one neighbour moves.

    Returns
    -------
    PrivacyLoss
        ``DiscreteGaussian`` or ``DiscreteGaussianVector``.

    Raises
    ------
    ValueError
        For a non-positive σ or sensitivity.

    Examples
    --------
    >>> from dpnoise.mechanisms import discrete_gaussian_loss
    >>> type(discrete_gaussian_loss(4.0)).__name__
    'DiscreteGaussian'
    """
    if coordinates <= EXACT_COORDINATES:
        return DiscreteGaussian(sigma, sensitivity, coordinates)
    return DiscreteGaussianVector(sigma, sensitivity * math.sqrt(coordinates), coordinates)


@docs_from_template(_SIGMA_DOCS, epsilon="(0, 100]",
                    sensitivity="sensitivity : int, default 1\n        Integer shift Δ of each moved output.\n"
                                "    coordinates : int, default 1\n        How many outputs one neighbour moves.",
                    returns="σ, rounded up to 21 significant bits.",
                    raises="For out-of-range arguments or a σ beyond 2^30.",
                    example="3.5 < discrete_gaussian_sigma(1.0, 1e-5) < 4.0\n    True")
def discrete_gaussian_sigma(epsilon: float, delta: float, sensitivity: int = 1,
                            coordinates: int = 1) -> float:
    """The least σ (rounded up to 21 significant bits) for which discrete Gaussian noise on c =
    ``coordinates`` outputs, each moved by at most Δ = ``sensitivity``, meets (ε, δ) on the
    profile of :func:`discrete_gaussian_loss` (CKS 2020, Thm 7 / Thm 14): bisection from the
    analytic σ of the continuous Gaussian with L2 sensitivity √c Δ (Balle & Wang 2018)."""
    epsilon, delta = check_epsilon(epsilon), check_gaussian_delta(delta)
    sensitivity = integer_sensitivity(sensitivity)
    coordinates = check_count(coordinates, "coordinates")
    sigma = analytic_gaussian_sigma(epsilon, delta, sensitivity * math.sqrt(coordinates))
    if sigma > MAX_SIGMA:
        raise ValueError(f"epsilon={epsilon}, delta={delta} with sensitivity={sensitivity} needs σ = "
                         f"{sigma:.3g}, beyond 2^30 (noisy values must stay exact): use a larger epsilon or delta")
    sigma = _least_meeting_profile(lambda s: discrete_gaussian_loss(s, sensitivity, coordinates),
                                   epsilon, delta, sigma)
    return _grid.round_up_short(sigma)


class GaussianMechanism(Mechanism[NoisyGridPlan]):
    """The Gaussian mechanism with L2 sensitivity Δ, on the discrete Gaussian over a grid.

    Real queries are rounded to 2^k (k from the sensitivity, or ``granularity``); the L2
    sensitivity in grid units widens to floor(Δ/2^k) + 1 for a scalar, Δ/2^k + sqrt(d) for d
    coordinates. σ comes from ``calibration``: ``"analytic"`` (Balle & Wang 2018, exact),
    ``"classic"`` (Dwork–Roth Thm A.1, ε < 1) or ``"hall_rinaldo_wasserman"`` (sqrt(2 ln(2/δ))Δ/ε,
    Dwork et al. 2006 / Hall, Rinaldo & Wasserman 2013 Prop. 3, ε <= 1); or give ``rho`` for
    ρ-zCDP (σ = Δ/sqrt(2ρ), CKS 2020 Thm 14). Then σ is raised, by bisection, to the least
    value whose exact discrete-Gaussian privacy profile meets (ε, δ): the one-dimensional
    profile for a scalar, CKS 2020's multivariate bound for a vector (``DiscreteGaussianVector``).
    The grid is coarsened when σ would pass 2^30 grid units.

    Clamp: each grid value is clamped to [-2^52, 2^52] grid units before the noise is added
    (1-Lipschitz: the sensitivity is unchanged), so no exception depends on the data's values.
    NaN or infinity raises ValueError before any charge (that does depend on the data;
    docs/security.md).

    Timing: the sampler's running time grows with |noise| (about 10 ns per unit of
    |noise|/sigma on the exact path; docs/security.md); ``constant_time=True`` removes that
    (the constant-time mode).

    The DP-SGD form: ``noise_multiplier`` z gives σ = z·Δ (effective σ/(zΔ) in [1, 1 + 2^-20])
    on a grid that widens Δ by at most max(2^-17, √d·z·2^-29) of it (d coordinates; √d·z·2^-19
    with ``constant_time=True``); ``sample_rate`` q then charges each call as
    one Poisson-subsampled Gaussian event (docs/ml.md). float32 input gives float32 output, and
    ``mech(x, out=buf)`` writes into ``buf`` (which may be ``x``), docs/security.md.

    Parameters
    ----------
    epsilon, delta : float, optional
        The (ε, δ)-DP target (δ in [1e-18, 1)); or give ``rho`` or ``noise_multiplier``.
    sensitivity : float, default 1.0
        L2 sensitivity Δ of the query (the clipping norm C in DP-SGD).
    calibration : {"analytic", "classic", "hall_rinaldo_wasserman"}
        How σ is computed from (ε, δ) before the exact-profile search.
    rho : float, optional
        ρ-zCDP target instead: σ = Δ/sqrt(2ρ).
    noise_multiplier : float, optional
        z > 0: σ = z·Δ (the DP-SGD form); not with epsilon, delta or rho.
    sample_rate : float, optional
        q in (0, 1], only with ``noise_multiplier``: each call is charged a Poisson-subsampled
        Gaussian event (the caller Poisson-samples the batch with rate q).
    granularity : float, optional
        The grid 2^k (a power of two); default: chosen from Δ and the query's size.
    constant_time : bool, default False
        Constant-time noise (docs/security.md): (ε, δ' + (1 + e^ε)·d·2^-64)-DP, δ' the exact
        profile's δ at ε, for d coordinates; σ at most 2^20 grid units; epsilon and delta only.
    rng : dpnoise.Generator, optional
        A secure generator (default ``dpnoise.default_rng()``).
    budget : dpnoise.accounting.PrivacyBudget, optional
        Charged once per release, before any noise.
    threads : int, optional
        Threads for the kernel (default 1).
    allow_insecure : bool, default False
        Accept a seeded generator (tests only).

    Raises
    ------
    TypeError
        For a missing or contradictory set of privacy parameters, or wrong types.
    ValueError
        For out-of-range parameters (ε, δ, ρ, z <= 0, q outside (0, 1], a σ beyond the grid).
    dpnoise.InsecureGeneratorError
        For a seeded generator without ``allow_insecure=True``.

    Examples
    --------
    >>> import numpy as np, dpnoise
    >>> mech = dpnoise.GaussianMechanism(noise_multiplier=1.1, sensitivity=1.0)
    >>> grad = np.zeros(1000, dtype=np.float32)
    >>> mech(grad, out=grad) is grad
    True
    >>> grad.dtype
    dtype('float32')
    """

    def __init__(self, epsilon: float | None = None, delta: float | None = None,
                 sensitivity: float = 1.0, *, calibration: str = "analytic",
                 rho: float | None = None, noise_multiplier: float | None = None,
                 sample_rate: float | None = None, granularity: float | None = None,
                 rng: Generator | None = None, budget: PrivacyBudget | None = None,
                 threads: int | None = None, allow_insecure: bool = False, constant_time: bool = False):
        super().__init__(rng, budget, threads=threads, allow_insecure=allow_insecure)
        self.constant_time = _ct.check_flag(constant_time)
        self._max_sigma = float(_ct.MAX_PARAMETER) if self.constant_time else MAX_SIGMA
        self.noise_multiplier: float | None = None
        self.sample_rate: float | None = None
        self.rho: float | None = None
        if noise_multiplier is not None:
            if epsilon is not None or delta is not None or rho is not None:
                raise TypeError("give noise_multiplier alone, not with epsilon, delta or rho")
            self.noise_multiplier = check_noise_multiplier(noise_multiplier)
            self.epsilon = self.delta = None
            if sample_rate is not None:
                self.sample_rate = rate(sample_rate, "sample_rate")
        elif sample_rate is not None:
            raise TypeError("sample_rate= needs noise_multiplier= (the DP-SGD form)")
        elif rho is None:
            if epsilon is None or delta is None:
                raise TypeError("GaussianMechanism needs epsilon and delta, or rho=")
            self.epsilon: float | None = check_epsilon(epsilon)
            self.delta: float | None = check_gaussian_delta(delta)
            if calibration not in CALIBRATIONS:
                raise ValueError(f"calibration must be one of {CALIBRATIONS}, got {calibration!r}")
            if calibration == "classic" and self.epsilon >= 1:
                raise ValueError(f"calibration='classic' holds only for epsilon < 1 (Dwork–Roth Thm A.1), "
                                 f"got epsilon={self.epsilon}; use calibration='analytic'")
            if calibration == "hall_rinaldo_wasserman" and self.epsilon > 1:
                raise ValueError(f"calibration='hall_rinaldo_wasserman' is proved for epsilon <= 1 only, "
                                 f"got epsilon={self.epsilon}; use calibration='analytic'")
        else:
            if epsilon is not None or delta is not None:
                raise TypeError("give either epsilon and delta, or rho, not both")
            self.rho = check_rho(rho)
            self.epsilon = self.delta = None
        self.calibration = calibration
        self.sensitivity = check_sensitivity(sensitivity)
        self.granularity_exponent = _grid.check_granularity(granularity)
        self._cache: dict[int, tuple[int, float, float, PrivacyLoss]] = {}
        self._check_release_possible()  # refuse bad parameters now

    def _what(self) -> str:
        if self.noise_multiplier is not None:
            return f"noise_multiplier={self.noise_multiplier}"
        if self.rho is not None:
            return f"rho={self.rho}"
        return f"epsilon={self.epsilon}, delta={self.delta}"

    def _formula_sigma(self, sens: float) -> float:
        """σ for a real L2 sensitivity from the calibration formula alone."""
        if self.rho is not None:
            return sens / math.sqrt(2 * self.rho)
        assert self.epsilon is not None and self.delta is not None
        return _SIGMA[self.calibration](self.epsilon, self.delta, sens)

    def _loss(self, sigma: float, sens: float, count: int) -> PrivacyLoss:
        if count == 1:
            return DiscreteGaussian(sigma, int(sens))
        # CKS 2020's multivariate discrete Gaussian, with the proven profile bound of the
        # accounting package (smoothing bound against Balle & Wang 2018, min with zCDP)
        return DiscreteGaussianVector(sigma, sens, count)

    def _sigma_units(self, sens: float, count: int) -> float:
        """σ in grid units for the widened sensitivity: the formula's σ (for ρ: exact, done),
        raised, if the discrete profile needs it, to the least σ meeting (ε, δ)."""
        sigma = self._formula_sigma(sens)
        if self.rho is not None:
            return sigma
        assert self.epsilon is not None and self.delta is not None
        # the formula's σ when it meets the profile, else the least σ that does (analytic: the
        # continuous σ is the start; classic/hall_rinaldo_wasserman: never below the formula)
        return _least_meeting_profile(lambda s: self._loss(s, sens, count), self.epsilon, self.delta, sigma)

    def _calibrate(self, count: int) -> tuple[int, float, float, PrivacyLoss]:
        """(k, L2 sensitivity in grid units, σ in grid units, loss) for ``count`` coordinates."""
        if count in self._cache:
            return self._cache[count]
        if self.noise_multiplier is not None:
            self._cache[count] = self._calibrate_multiplier(count)
            return self._cache[count]
        spread = math.sqrt(count)
        # the grid exponents the release accepts (constant time: a narrower range, _ct)
        lowest, highest = (_ct.MIN_EXPONENT, _ct.MAX_EXPONENT) if self.constant_time else \
            (_grid.MIN_EXPONENT, _grid.MAX_EXPONENT)
        k = self.granularity_exponent
        if k is None:
            k = _grid.default_exponent(self.sensitivity, spread)
            # start where σ_real ≈ σ(Δ)·(1 + 2/1024)·1.01 fits the sampler's range; the search
            # below coarsens the grid when the widening (√d grid units) or the profile needs more
            with np.errstate(over="ignore"):
                est = self._formula_sigma(self.sensitivity * (1 + 2 / _grid.WIDENING)) * 1.01
            if math.isfinite(est):
                k = max(k, math.ceil(math.log2(est / self._max_sigma)))
            else:
                k = highest
            k = min(max(k, lowest), highest)
        units = _grid.grid_units(self.sensitivity, k)
        if units + spread > MAX_PART:
            raise ValueError(f"granularity 2^{k} is too fine for sensitivity={self.sensitivity} "
                             f"(beyond 2^62 grid units)" + ("" if self.granularity_exponent is not None else
                                                            f"; no coarser grid is accepted (k <= {highest})"))
        tried: dict[int, tuple[float, float]] = {}

        def at(j: int) -> tuple[float, float]:
            """(widened L2 sensitivity, final σ) in grid units on the grid 2^j."""
            if j not in tried:
                u = _grid.grid_units(self.sensitivity, j)
                sens_j: float = math.floor(u) + 1 if count == 1 else u + spread
                tried[j] = (sens_j, _grid.round_up_short(self._sigma_units(sens_j, count)))
            return tried[j]

        sens, sigma = at(k)
        if sigma > self._max_sigma and self.granularity_exponent is None:
            # a coarser grid shrinks the widened sensitivity in grid units, hence the final σ
            # (monotone in k): the finest grid whose final σ fits, if any grid does
            found = least_fitting_exponent(lambda j: at(j)[1] <= self._max_sigma, k + 1, highest)
            k = highest if found is None else found
            sens, sigma = at(k)
            if sigma > self._max_sigma:  # not even the coarsest grid: the √d grid units it adds
                raise ValueError(f"{self._what()} needs σ above 2^{math.log2(self._max_sigma):.0f} grid units on "
                                 f"every grid for {count} coordinate(s) (σ = {sigma:.3g} on the coarsest, 2^{k}: "
                                 f"rounding widens the L2 sensitivity by up to √{count} grid units; noisy values must "
                                 f"stay exact{'; constant_time=True' if self.constant_time else ''}): use a larger "
                                 + ("rho" if self.rho is not None else "epsilon or delta"))
        if sigma > self._max_sigma:
            hint = "a coarser granularity or " if self.granularity_exponent is not None else ""
            raise ValueError(f"{self._what()} needs σ = {sigma:.3g} grid units on the grid 2^{k} for "
                             f"{count} coordinate(s), beyond 2^{math.log2(self._max_sigma):.0f} (noisy values "
                             f"must stay exact{'; constant_time=True' if self.constant_time else ''}): "
                             f"use {hint}a larger " + ("rho" if self.rho is not None else "epsilon or delta"))
        self._cache[count] = (k, sens, sigma, self._loss(sigma, sens, count))
        return self._cache[count]

    def _calibrate_multiplier(self, count: int) -> tuple[int, float, float, PrivacyLoss]:
        """The DP-SGD form: σ = z·Δ (rounded up to 21 significant bits in grid units, so the
        effective σ/(zΔ) is in [1, 1 + 2^-20], plus at most 2^-49 of upward float slack) on a grid
        fine enough that the widened L2 sensitivity Δ + √d·2^k exceeds Δ by at most 2^-17 of it
        (hence the charged ε moves by far less than 10^-3), within a final σ <= 2^30 grid units
        (2^20 with constant_time; which, for d > 2^26/z², bounds the widening by about
        √d·z·2^-29, resp. √d·z·2^-19, instead); σ >= 2^10 grid units always, which the
        subsampled loss below needs (docs/ml.md, "Accounting the discrete noise"). The range is
        checked on the rounded σ itself: z·Δ/2^k = 2^30 exactly rounds up past 2^30, so that grid
        is one step too fine (issue #33)."""
        z, sens_real = self.noise_multiplier, self.sensitivity
        assert z is not None
        spread = math.sqrt(count)
        target = Fraction(z) * Fraction(sens_real)  # σ in the query's units, exactly
        low, high = 2.0**MIN_SUBSAMPLED_SIGMA_BITS, self._max_sigma  # σ's range in grid units

        def sigma_at(j: int) -> float:
            """The final σ in grid units on the grid 2^j: z·Δ/2^j rounded up (never less noise)."""
            return _grid.round_up_short(float(target / Fraction(2) ** j) * (1 + 2**-50))

        k = self.granularity_exponent
        if k is None:
            lowest, highest = (_ct.MIN_EXPONENT, _ct.MAX_EXPONENT) if self.constant_time else \
                (_grid.MIN_EXPONENT, _grid.MAX_EXPONENT)
            # the grids whose *final* σ is in [2^10, 2^30 (2^20)]: k in [top, bottom], as σ falls
            # when k rises; first from logarithms (exact ones of the integers), then settled on
            # the rounded σ itself, which may pass 2^30 where z·Δ/2^k is exactly 2^30
            log_target = math.log2(target.numerator) - math.log2(target.denominator)
            top = math.ceil(log_target - math.log2(high))
            while sigma_at(top) > high:
                top += 1
            while sigma_at(top - 1) <= high:
                top -= 1
            bottom = math.floor(log_target - MIN_SUBSAMPLED_SIGMA_BITS)
            while sigma_at(bottom) < low:
                bottom -= 1
            while sigma_at(bottom + 1) >= low:
                bottom += 1
            # the grid that widens Δ by at most 2^-17 of it, within [top, bottom]
            k = math.floor(math.log2(sens_real) - MULTIPLIER_WIDENING_BITS - math.log2(spread))
            k = min(max(min(k, bottom), top, lowest), highest)
            if not top <= k <= bottom:
                raise ValueError(f"noise_multiplier={z} with sensitivity={sens_real}: no grid 2^k with k in "
                                 f"[{lowest}, {highest}] puts σ = z·Δ within [2^10, "
                                 f"2^{math.log2(high):.0f}] grid units"
                                 f"{' (constant_time=True)' if self.constant_time else ''}")
        units = _grid.grid_units(sens_real, k)
        if units + spread > MAX_PART:
            raise ValueError(f"granularity 2^{k} is too fine for sensitivity={sens_real} (beyond 2^62 grid units)"
                             + ("" if self.granularity_exponent is not None else
                                f": noise_multiplier={z} is too small for σ to reach 2^10 grid units "
                                "on a coarser grid"))
        sens: float = math.floor(units) + 1 if count == 1 else units + spread
        sigma = sigma_at(k)
        if not low <= sigma <= high:
            raise ValueError(f"noise_multiplier={z} with sensitivity={sens_real} needs σ = {sigma:.3g} grid units on "
                             f"the grid 2^{k}, outside [2^10, 2^{math.log2(high):.0f}]"
                             f"{' (constant_time=True)' if self.constant_time else ''}: choose another granularity")
        if self.sample_rate is None:
            loss = self._loss(sigma, sens, count)
        else:
            loss = PoissonSampled(Gaussian(_smoothed_sigma(sigma), sens), self.sample_rate)
        return k, sens, sigma, loss

    def plan(self, shape: Any = (), dtype: Any = None) -> NoisyGridPlan:
        """The plan for a real query of this shape (``dtype`` is ignored: integer inputs are
        rounded onto the same grid). An empty query spends nothing (PureDP(0))."""
        shape = normalise_shape(shape)
        d = size_of(shape)
        k, sens, sigma, loss = self._calibrate(max(d, 1))
        loss = loss if d else PureDP(0.0)
        if self.constant_time:
            loss = _ct.loss(loss, d, self.epsilon)
        return NoisyGridPlan(type(self).__name__, loss, shape, shape == (),
                             self.threads, "gaussian", sigma, k, sens, GRID_BOUND, self.constant_time)

    def grid(self, count: int = 1) -> tuple[int, float, float]:
        """(k, L2 sensitivity in grid units, σ in grid units) for ``count`` coordinates.

        Parameters
        ----------
        count : int, default 1
            Coordinates per release (the grid widens the L2 sensitivity by up to √count).

        Returns
        -------
        tuple of (int, float, float)
            Grid exponent k (values are multiples of 2^k), sensitivity and σ in grid units.
        """
        k, sens, sigma, _ = self._calibrate(max(int(count), 1))
        return k, sens, sigma

    @property
    def sigma(self) -> float:
        """σ of the noise for a scalar query, in the query's units."""
        k, _, s, _ = self._calibrate(1)
        return s * 2.0**k

    def accuracy(self, beta: float, shape: Any = (), dtype: Any = None) -> float:
        """Half-width w with P(some output is more than w from its (clamped) true value) <= beta:
        the discrete Gaussian is σ²-subgaussian (CKS 2020, Prop. 19), union bound over d outputs.

        Parameters
        ----------
        beta : float
            In (0, 1).
        shape : tuple of int, default ()
            The query's shape (d = its size).
        dtype : numpy.dtype, optional
            Ignored (one grid for every input dtype).

        Returns
        -------
        float
            w in the query's units, half a grid step of rounding included (0 for an empty query).
        """
        p = self.plan(shape)
        beta = check_beta(beta)
        if not p.size:
            return 0.0
        m = math.ceil(float(p.param) * math.sqrt(2 * math.log(2 * p.size / beta)))
        return (m + 0.5) * 2.0**p.k  # type: ignore[operator]

    def _prepare(self, value: Any) -> tuple[np.ndarray, tuple[int, ...], Any]:
        x = as_real_array(value, keep=KEPT_FLOATS, clamp=not self.constant_time)  # float32 stays float32
        k = self._plan_for(x.shape, None).k
        assert k is not None
        # floats go to the kernel as they are: it rounds and clamps to GRID_BOUND in one pass
        v = integers_on_grid(x, k) if x.dtype == np.int64 else x
        return v, x.shape, np.float64

    def _array_plan(self, shape: tuple[int, ...]) -> NoisyGridPlan | None:
        """Float arrays: the grid plan of their shape (as _prepare plans them)."""
        return None if self.constant_time else self._plan_for(shape, None)

    def _scalar_route(self, kind: type) -> tuple[str, Any] | None:
        """A float is one call on the grid (ints take the general path: exact rounding)."""
        if self.constant_time or kind not in (float, np.float64):
            return None
        return "real", self._plan_for((), None)

    def __repr__(self) -> str:
        if self.noise_multiplier is not None:
            q = "" if self.sample_rate is None else f", sample_rate={self.sample_rate}"
            return f"GaussianMechanism(noise_multiplier={self.noise_multiplier}, sensitivity={self.sensitivity}{q})"
        if self.rho is not None:
            return f"GaussianMechanism(rho={self.rho}, sensitivity={self.sensitivity})"
        return (f"GaussianMechanism(epsilon={self.epsilon}, delta={self.delta}, "
                f"sensitivity={self.sensitivity}, calibration={self.calibration!r})")


@shared_docs
class DiscreteGaussianMechanism(Mechanism[NoisyGridPlan]):
    """Discrete Gaussian noise for integer queries with integer L2 sensitivity Δ (CKS 2020):
    σ from the exact discrete-Gaussian profile (least σ meeting (ε, δ), by bisection), or from
    ``rho`` (σ = √c Δ/sqrt(2ρ)).

    ``coordinates`` = c: one neighbour moves up to c of the outputs, each by at most Δ (for
    example a histogram under replace-one neighbours moves two bins by 1, c = 2, Δ = 1). The
    guarantee then follows the exact profile of that shift (L2 sensitivity √c Δ), not the
    coarser single-output bound with sensitivity cΔ (for c > 16, CKS 2020's multivariate bound
    with L2 sensitivity √c Δ, ``DiscreteGaussianVector``, whose profile is fast to evaluate).
    The loss does not depend on the query's shape.

    Clamp: each value is clamped to [-2^61, 2^61] before the noise is added, so that no
    exception depends on the data's values.

    Timing: the sampler's running time grows with |noise| (about 10 ns per unit of
    |noise|/sigma on the exact path; docs/security.md); ``constant_time=True`` removes that
    (the constant-time mode).

    Parameters
    ----------
    epsilon, delta : float, optional
        The (ε, δ) target; or give ``rho``.
    sensitivity : int, default 1
        Integer shift Δ of each moved output.
    rho : float, optional
        ρ-zCDP target: σ = √c Δ/sqrt(2ρ).
    {constant_time}
    coordinates : int, default 1
        c, how many outputs one neighbour moves.
    {release_sections}

    Examples
    --------
    >>> import dpnoise
    >>> mech = dpnoise.DiscreteGaussianMechanism(rho=0.5)
    >>> mech([3, 4]).dtype
    dtype('int64')
    """

    def __init__(self, epsilon: float | None = None, delta: float | None = None,
                 sensitivity: int = 1, *, rho: float | None = None, coordinates: int = 1,
                 rng: Generator | None = None, budget: PrivacyBudget | None = None,
                 threads: int | None = None, allow_insecure: bool = False, constant_time: bool = False):
        super().__init__(rng, budget, threads=threads, allow_insecure=allow_insecure)
        self.constant_time = _ct.check_flag(constant_time)
        self.sensitivity = integer_sensitivity(sensitivity)
        self.coordinates = check_count(coordinates, "coordinates")
        l2 = self.sensitivity * math.sqrt(self.coordinates)
        if rho is not None:
            if epsilon is not None or delta is not None:
                raise TypeError("give either epsilon and delta, or rho, not both")
            self.rho: float | None = check_rho(rho)
            self.epsilon: float | None = None
            self.delta: float | None = None
            sigma = l2 / math.sqrt(2 * self.rho)
        else:
            if epsilon is None or delta is None:
                raise TypeError("DiscreteGaussianMechanism needs epsilon and delta, or rho=")
            self.epsilon, self.delta, self.rho = check_epsilon(epsilon), check_gaussian_delta(delta), None
            sigma = discrete_gaussian_sigma(self.epsilon, self.delta, self.sensitivity, self.coordinates)
        if not sigma <= MAX_SIGMA:
            raise ValueError(f"rho={self.rho} with sensitivity={self.sensitivity} needs σ = {sigma:.3g}, "
                             "beyond 2^30 (noisy values must stay exact): use a larger rho")
        self.sigma = _grid.round_up_short(sigma)
        self._loss = self._loss_for(self.sigma)
        self._check_release_possible()

    def _loss_for(self, sigma: float) -> PrivacyLoss:
        return discrete_gaussian_loss(sigma, self.sensitivity, self.coordinates)

    def plan(self, shape: Any = (), dtype: Any = None) -> NoisyGridPlan:
        """The plan for an integer query of this shape; the loss does not depend on the shape
        (an empty query spends nothing: PureDP(0))."""
        shape = normalise_shape(shape)
        loss = self._loss if size_of(shape) else PureDP(0.0)
        if self.constant_time:
            loss = _ct.loss(loss, size_of(shape), self.epsilon)
        return NoisyGridPlan(type(self).__name__, loss, shape, shape == (), self.threads, "gaussian",
                             self.sigma, None, self.sensitivity, INTEGER_BOUND, self.constant_time)

    def accuracy(self, beta: float, shape: Any = ()) -> float:
        """Half-width w with P(some output is more than w from its clamped value) <= beta
        (σ²-subgaussian, CKS 2020 Prop. 19; union bound)."""
        d = size_of(normalise_shape(shape))
        beta = check_beta(beta)
        if not d:
            return 0.0
        return float(math.ceil(self.sigma * math.sqrt(2 * math.log(2 * d / beta))))

    def _prepare(self, value: Any) -> tuple[np.ndarray, tuple[int, ...], Any]:
        v = as_integer_array(value, clamp=not self.constant_time)  # constant time: the kernel clamps
        return v, v.shape, np.int64

    def _scalar_route(self, kind: type) -> tuple[str, Any] | None:
        """An int is one call on the integer path (clamped as _prepare clamps it)."""
        if self.constant_time or kind not in (int, np.int64):
            return None
        return "integer", self._plan_for((), np.int64)
