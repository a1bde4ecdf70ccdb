"""Calibration: the least noise that meets an (ε, δ) target under an accountant."""
from __future__ import annotations

import math
from typing import Callable, Optional

from .. import _validate as check
from ._numeric import TargetNotMet, least_meeting
from .accountant import Accountant
from .losses import (
    DiscreteGaussian, DiscreteLaplace, Gaussian, Laplace, PoissonSampled, PrivacyLoss, PureDP,
    RandomizedResponse,
)

_NOISE = {
    "laplace": lambda v, s: Laplace(v, s),
    "discrete_laplace": lambda v, s: DiscreteLaplace(v, s),
    "gaussian": lambda v, s: Gaussian(v, s),
    "discrete_gaussian": lambda v, s: DiscreteGaussian(v, s),
}
_EPSILON = ("pure", "randomized_response")  # these return the largest ε per use
FAMILIES = tuple(_NOISE) + _EPSILON


def calibrate(family: str, epsilon: float, delta: float = 0.0, count: int = 1,
              accountant: str = "pld", *, sensitivity: float = 1.0,
              sampling_rate: Optional[float] = None, neighbours: str = "add_remove",
              categories: int = 2, rtol: float = 1e-6) -> float:
    """The least noise parameter such that ``count`` uses meet (epsilon, delta).

    family: ``"laplace"`` / ``"discrete_laplace"`` (returns the scale), ``"gaussian"`` /
    ``"discrete_gaussian"`` (returns σ), ``"pure"`` / ``"randomized_response"`` (returns the
    largest ε per use). With ``sampling_rate`` each use runs on a Poisson subsample.

    Bisection (in log scale, to relative width ``rtol``) on the accountant's ε; the returned
    value is the end of the bracket that meets the target, so it never spends more than asked.
    Raises ValueError when no parameter meets the target (e.g. δ = 0 with Gaussian noise).
    """
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {FAMILIES}, got {family!r}")
    epsilon = check.positive(epsilon, "epsilon")
    delta = check.probability(delta, "delta")
    count = check.count(count)
    sensitivity = check.positive(sensitivity, "sensitivity")
    rate = None if sampling_rate is None else check.rate(sampling_rate, "sampling_rate")
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
            return least_meeting(meets, sensitivity / epsilon, rel=rtol, limit=1e12 * sensitivity / epsilon)
        except TargetNotMet:
            raise ValueError(f"no {family} noise meets epsilon={epsilon}, delta={delta} "
                             f"with the {accountant!r} accountant") from None
    # ε per use: the largest that meets, i.e. the least u = 1/ε with meets(1/u) (capped at
    # ε = 10^6, beyond which every target is met)
    try:
        u = least_meeting(lambda u: u >= 1e-6 and meets(1.0 / u), count / epsilon, rel=rtol,
                          limit=1e12 / epsilon)
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
    Raises ValueError when no σ up to 1e300 does (e.g. delta = 0 for a Gaussian).
    """
    if not callable(make_loss):
        raise TypeError("make_loss must be a callable sigma -> privacy-loss descriptor")
    epsilon = check.nonnegative(epsilon, "epsilon")
    delta = check.probability(delta, "delta")
    start = check.positive(start, "start")
    rtol = check.positive(rtol, "rtol")
    if rtol >= 1:
        raise ValueError(f"rtol must be < 1, got {rtol!r}")

    def meets(log_sigma: float) -> bool:
        loss = make_loss(math.exp(log_sigma))
        if not isinstance(loss, PrivacyLoss):
            raise TypeError(f"make_loss must return a privacy-loss descriptor, "
                            f"got {type(loss).__name__}")
        if delta == 0:  # only a pure guarantee; a computed δ of 0 may be floating underflow
            pure = loss.pure_epsilon()
            return pure is not None and pure <= epsilon
        return float(loss.delta_for_epsilon(epsilon)) <= delta

    log_max, log_min = math.log(1e300), math.log(1e-300)
    x0 = math.log(start)
    if meets(x0):
        hi, step = x0, 1.0
        lo = x0 - step
        while lo > log_min and meets(lo):
            hi = lo
            step *= 2.0
            lo = max(log_min, x0 - step)
        if lo <= log_min and meets(lo):
            return math.exp(lo)
    else:
        lo, step = x0, 1.0
        hi = x0 + step
        while not meets(hi):
            lo = hi
            if hi >= log_max:
                raise ValueError(f"no sigma up to 1e300 meets epsilon={epsilon}, delta={delta}")
            step *= 2.0
            hi = min(log_max, x0 + step)
    # invariant: meets(hi), not meets(lo); widths in log σ are relative widths in σ
    tol = math.log1p(rtol)
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        if meets(mid):
            hi = mid
        else:
            lo = mid
    return math.exp(hi)
