"""Calibration: the least noise that meets an (ε, δ) target under an accountant."""
from __future__ import annotations

from typing import Any, Callable

from .. import _validate as check
from .._numeric import TargetNotMet, least_meeting
from .accountant import Accountant
from .losses import (
    DiscreteGaussian,
    DiscreteLaplace,
    Gaussian,
    Laplace,
    PoissonSampled,
    PrivacyLoss,
    PureDP,
    RandomizedResponse,
)

# (scale or sigma, sensitivity) -> the loss of one use
_NOISE: dict[str, Callable[[Any, Any], PrivacyLoss]] = {
    "laplace": Laplace,
    "discrete_laplace": DiscreteLaplace,
    "gaussian": Gaussian,
    "discrete_gaussian": DiscreteGaussian,
}
# Calibration targets the float analysis resolves reliably: below 1e-9 the discretised and
# closed-form conversions lose relative precision, above 1e4 there is no privacy to speak of.
EPSILON_RANGE = (1e-9, 1e4)
MIN_SAMPLING_RATE = 1e-9
_EPSILON = ("pure", "randomized_response")  # these return the largest ε per use
FAMILIES = tuple(_NOISE) + _EPSILON


def calibrate(family: str, epsilon: float, delta: float = 0.0, count: int = 1,
              accountant: str = "pld", *, sensitivity: float = 1.0,
              sampling_rate: float | None = None, neighbours: str = "add_remove",
              categories: int = 2, rtol: float = 1e-6) -> float:
    """The least noise parameter such that ``count`` uses meet (epsilon, delta).

    family: ``"laplace"`` / ``"discrete_laplace"`` (returns the scale), ``"gaussian"`` /
    ``"discrete_gaussian"`` (returns σ), ``"pure"`` / ``"randomized_response"`` (returns the
    largest ε per use). With ``sampling_rate`` each use runs on a Poisson subsample.

    Bisection (in log scale, to relative width ``rtol``) on the accountant's ε; the returned
    value is the end of the bracket that meets the target, so it never spends more than asked.

    Parameters
    ----------
    family : str
        The noise (or guarantee) to calibrate, as listed above.
    epsilon : float
        Target total ε in [1e-9, 1e4].
    delta : float, default 0.0
        Target total δ in [0, 1].
    count : int, default 1
        How many uses are composed.
    accountant : str, default "pld"
        The accountant kind that composes them.
    sensitivity : float, default 1.0
        The sensitivity Δ in [1e-150, 1e150] (an integer for the discrete families).
    sampling_rate : float, optional
        Poisson sampling probability per use, in [1e-9, 1].
    neighbours : {"add_remove", "replace"}, default "add_remove"
        The neighbouring relation.
    categories : int, default 2
        k for ``"randomized_response"``.
    rtol : float, default 1e-6
        Relative width of the final bisection bracket.

    Returns
    -------
    float
        The scale, σ or per-use ε (see above), on the side that meets the target.

    Raises
    ------
    ValueError
        For an out-of-range argument, an accountant that cannot compose the family, or when no
        parameter meets the target (e.g. δ = 0 with Gaussian noise).
    OverflowError
        For a sensitivity outside [1e-150, 1e150].

    Examples
    --------
    >>> from dpnoise.accounting import calibrate
    >>> round(calibrate("laplace", epsilon=1.0), 6)
    1.0
    """
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {FAMILIES}, got {family!r}")
    epsilon = check.positive(epsilon, "epsilon")
    if not EPSILON_RANGE[0] <= epsilon <= EPSILON_RANGE[1]:
        raise ValueError(f"epsilon must be in [{EPSILON_RANGE[0]:g}, {EPSILON_RANGE[1]:g}] for "
                         f"calibration, got {epsilon!r}")
    delta = check.probability(delta, "delta")
    count = check.count(count)
    sensitivity = check.positive(sensitivity, "sensitivity")
    if not 1e-150 <= sensitivity <= 1e150:
        raise OverflowError(f"sensitivity must be in [1e-150, 1e150], got {sensitivity!r}")
    rate = None if sampling_rate is None else check.rate(sampling_rate, "sampling_rate")
    if rate is not None and rate < MIN_SAMPLING_RATE:
        raise ValueError(f"sampling_rate must be >= {MIN_SAMPLING_RATE:g} for calibration, "
                         f"got {rate!r}")
    rtol = check.positive(rtol, "rtol")
    if family in ("discrete_laplace", "discrete_gaussian"):
        check.integer_sensitivity(sensitivity)

    def make(v: float) -> PrivacyLoss:
        if family == "pure":
            base: PrivacyLoss = PureDP(v)
        elif family == "randomized_response":
            base = RandomizedResponse(v, categories)
        else:
            base = _NOISE[family](v, sensitivity)
        return base if rate is None else PoissonSampled(base, rate)

    def meets(v: float) -> bool:
        acc = Accountant(accountant, neighbours).compose(make(v), count)
        return acc.get_epsilon(delta) <= epsilon

    Accountant(accountant, neighbours).check_supported(make(1.0))
    if family in _NOISE:
        # more noise = more private: the least parameter that meets the target
        try:
            return least_meeting(meets, sensitivity / epsilon, rel=rtol, limit=1e300)
        except TargetNotMet:
            raise ValueError(f"no {family} noise meets epsilon={epsilon}, delta={delta} "
                             f"with the {accountant!r} accountant") from None
    # ε per use: the largest that meets, i.e. the least u = 1/ε with meets(1/u) (capped at
    # ε = 10^6, beyond which every target is met)
    try:
        u = least_meeting(lambda u: u >= 1e-6 and meets(1.0 / u), count / epsilon, rel=rtol,
                          limit=1e300)
    except TargetNotMet:
        raise ValueError(f"no per-use epsilon meets epsilon={epsilon}, delta={delta} "
                         f"with the {accountant!r} accountant") from None
    return 1.0 / u


def least_sigma(make_loss: Callable[[float], PrivacyLoss], epsilon: float, delta: float, *,
                start: float, rtol: float = 1e-9) -> float:
    """The least σ (to relative precision ``rtol``, rounded UP) such that one use of
    ``make_loss(σ)`` is (epsilon, delta)-DP by its privacy profile:
    ``make_loss(σ).delta_for_epsilon(epsilon) <= delta``.

    ``make_loss`` must be monotone (more σ, never less private). Bounded time: σ is bracketed by
    repeated squaring of the ratio to ``start`` (at most ~11 steps each way up to 10^±300) and
    the bracket is bisected in log σ, so about log2(log(hi/lo)/rtol) + 22 profile evaluations
    (~35 for rtol = 1e-9). The returned σ always meets the target.

    Parameters
    ----------
    make_loss : callable
        σ -> PrivacyLoss, monotone in σ.
    epsilon : float
        Target ε >= 0.
    delta : float
        Target δ in [0, 1] (0: only a pure guarantee meets it).
    start : float
        A first guess of σ (> 0).
    rtol : float, default 1e-9
        Relative precision, in (0, 1).

    Returns
    -------
    float
        The least σ found that meets the target.

    Raises
    ------
    TypeError
        If ``make_loss`` is not callable or does not return a descriptor.
    ValueError
        For a bad argument, or when no σ up to 1e300 meets the target (e.g. delta = 0 for a
        Gaussian).
    """
    if not callable(make_loss):
        raise TypeError("make_loss must be a callable sigma -> privacy-loss descriptor")
    epsilon = check.nonnegative(epsilon, "epsilon")
    delta = check.probability(delta, "delta")
    start = check.positive(start, "start")
    rtol = check.positive(rtol, "rtol")
    if rtol >= 1:
        raise ValueError(f"rtol must be < 1, got {rtol!r}")

    def meets(sigma: float) -> bool:
        loss = make_loss(sigma)
        if not isinstance(loss, PrivacyLoss):
            raise TypeError(f"make_loss must return a privacy-loss descriptor, "
                            f"got {type(loss).__name__}")
        if delta == 0:  # only a pure guarantee; a computed δ of 0 may be floating underflow
            pure = loss.pure_epsilon()
            return pure is not None and pure <= epsilon
        return float(loss.delta_for_epsilon(epsilon)) <= delta

    try:
        return least_meeting(meets, start, rel=rtol, limit=1e300)
    except TargetNotMet:
        raise ValueError(f"no sigma up to 1e300 meets epsilon={epsilon}, delta={delta}") from None
