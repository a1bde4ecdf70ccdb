"""Shuffle-model accounting: the central (ε, δ) of n shuffled ε0-LDP reports.

The public function and its checks; each bound has its own module (docs/accounting.md,
"Shuffle-model accounting", states and proves them):

* ``_shuffle_clone``: the **clone bound** (Feldman, McMillan & Talwar 2021, "Hiding Among the
  Clones", Thm 3.2) for any ε0-LDP randomizer, and its weighted form for a randomizer whose two
  items' report laws are at total variation <= β (k-ary randomized response, unary encoding,
  local hashing, Hadamard; β from ``_shuffle_variation``);
* ``_shuffle_binary``: binary randomized response, the worst case over every dataset bounded;
* ``_shuffle_numerics``: binomial windows, pmfs and the bisection, every one erring upward.

This module also keeps the two-mixture value of binary randomized response for the pair "every
other user holds the same bit" (a lower bound on the worst case, used by the tests).
"""
from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from .. import _validate as check
from ._shuffle_binary import binary_rr_worst_epsilon

# re-exported: losses/shuffled.py imports the clone bound from here
from ._shuffle_clone import _clone_bound as _clone_bound, _clone_bound_epsilon, _CloneBound as _CloneBound
from ._shuffle_numerics import _REL_TOL, _binomial_pmf, _least_epsilon, _window
from ._shuffle_variation import variation_ratio_beta, variation_ratio_epsilon

# largest ε0 accepted (as elsewhere in the library: e^ε0 must stay far from overflow)
_MAX_EPSILON0 = check.MAX_EPSILON
# the largest n accepted (counts feed float arithmetic; beyond 2^62 it is meaningless)
_MAX_N = check.MAX_PART
# beyond this n the bounds are evaluated at _N_CAP: every bound here only decreases with n (one
# more report is one more independent clone or coin, a post-processing), so the value at
# _N_CAP is valid for every larger n, and its windows stay below _MAX_WINDOW points
_N_CAP = 10**10


# --------------------------------------------------------------------------- validation
def _check_args(epsilon0: Any, n: Any, delta: Any) -> tuple[float, int, float]:
    eps0 = check.real(epsilon0, "epsilon0")
    if not eps0 > 0 or math.isinf(eps0):
        raise ValueError(f"epsilon0 must be a finite real > 0, got {eps0!r}")
    if eps0 > _MAX_EPSILON0:
        raise ValueError(f"epsilon0 must be at most {_MAX_EPSILON0:g}, got {eps0!r}")
    n = check.integer(n, "n")
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if n > _MAX_N:
        raise ValueError("n must be at most 2^62")
    d = check.real(delta, "delta")
    if not 0.0 < d < 1.0:
        raise ValueError(f"delta must be in (0, 1), got {d!r}")
    return eps0, n, d


# --------------------------------------------------------------------------- binary RR, exact
def _binary_rr_delta_curve(epsilon0: float, n: int, delta: float):  # type: ignore[no-untyped-def]
    """δ(ε) of binary randomized response at ε0 shuffled among n users, the other n - 1 holding
    the same bit: the count of ones is C + B with C ~ Bin(n-1, q), B ~ Bern(p) or Bern(q)
    (p = e^ε0/(e^ε0+1), q = 1 - p), two binomial mixtures compared exactly (both directions).
    Returns a function of ε."""
    p = 1.0 / (1.0 + math.exp(-epsilon0))
    q = 1.0 / (1.0 + math.exp(epsilon0))
    m = n - 1
    tail = min(1e-6 * delta, 1e-40)
    if m == 0:
        lo, s, out = 0, np.ones(1), 0.0
    else:
        lo, hi, b_lo, b_hi = _window(m, q, tail)
        s = _binomial_pmf(m, -epsilon0, lo, hi)  # log(q/p) = -ε0
        out = b_lo + b_hi
    s1 = np.concatenate([[0.0], s])  # s(c-1) at c = lo..hi+1
    s0 = np.concatenate([s, [0.0]])
    P = p * s1 + q * s0  # the differing user holds 1
    Q = q * s1 + p * s0  # ... holds 0
    P = np.maximum(P, 0.0)
    Q = np.maximum(Q, 0.0)

    def curve(eps: float) -> float:
        e = math.exp(eps)
        up = float(np.sum(np.maximum(P - e * Q, 0.0)))
        down = float(np.sum(np.maximum(Q - e * P, 0.0)))
        return max(up, down) * (1 + _REL_TOL) + out

    return curve


def _binary_rr_epsilon(epsilon0: float, n: int, delta: float) -> float:
    """ε at ``delta`` of :func:`_binary_rr_delta_curve` (bisection, the checked end), at most ε0."""
    return _least_epsilon(_binary_rr_delta_curve(epsilon0, n, delta), delta, epsilon0)


# --------------------------------------------------------------------------- closed form
def _fmt21_closed_form(epsilon0: float, n: int, delta: float) -> float | None:
    """FMT21 Thm 3.1: for ε0 <= log(n/(16 log(2/δ))), the shuffle is (ε, δ)-DP with
    ε = log(1 + (e^ε0 - 1)/(e^ε0 + 1)·(8√(e^ε0 log(4/δ))/√n + 8e^ε0/n)); None outside that range."""
    if n < 16 * math.log(2 / delta) or epsilon0 > math.log(n / (16 * math.log(2 / delta))):
        return None
    e0 = math.exp(epsilon0)
    return math.log1p((e0 - 1) / (e0 + 1) * (8 * math.sqrt(e0 * math.log(4 / delta)) / math.sqrt(n) + 8 * e0 / n))


# --------------------------------------------------------------------------- public
def _configuration_kind(configuration: Any, epsilon0: float) -> int | None:
    """The domain size d when ``configuration`` is plain k-ary randomized response at ε0 (its
    structure is used), None for any other configuration that is pure ε0-LDP (generic bound).
    ValueError naming ``configuration`` otherwise."""
    from ..ldp._protocol import Configuration  # lazy: ldp imports accounting

    if not isinstance(configuration, Configuration):
        raise TypeError(f"configuration must be an LDP configuration (dpnoise.ldp), got {type(configuration).__name__}")
    loss = configuration.privacy_loss()
    pure = loss.pure_epsilon()
    if pure is None:
        raise ValueError(f"configuration {configuration!r} is not pure ε-LDP per report ({type(loss).__name__}); "
                         "the shuffle bounds need pure ε0-LDP reports")
    if pure > epsilon0 * (1 + 1e-12):
        raise ValueError(f"configuration has ε = {pure} per report, more than epsilon0 = {epsilon0}")
    d = getattr(configuration, "domain_size", None)
    if (getattr(configuration, "name", "") == "grr" and getattr(configuration, "family", "") == "frequency"
            and not getattr(configuration, "options", {}) and getattr(configuration, "gamma1", None) is None
            and pure == epsilon0 and d is not None):
        return int(d)
    return None


def shuffle_amplification(epsilon0: float, n: int, delta: float, *, configuration: Any = None) -> float:
    """The central ε of n shuffled ε0-LDP reports at δ: an upper bound.

    Without a configuration, the numerical clone bound of Feldman, McMillan & Talwar (FOCS 2021,
    Thm 3.2) for any ε0-LDP randomizer, evaluated with its numerical error bounded upward. With a
    configuration whose randomizer is known, the smallest of the bounds that hold for it:

    * binary randomized response (``FrequencyOracle("grr", ..., domain_size=2)`` at ε0): the worst
      case over every dataset, bounded within about 1% above it (n up to 2·10^8; beyond, the
      value at 2·10^8 or the clone bound);
    * k-ary randomized response, unary encoding ("oue", "sue"), local hashing ("olh", "flh") and
      "hadamard": the clone bound weighted by the total variation β between two items' report
      laws (the decomposition of Wang et al., VLDB 2024, with the differing user's leftover split
      off: their merged pair is not an upper bound over every dataset).

    Other configurations (and those with a daily layer) get the generic bound. The result is at
    most ε0 (shuffling never makes privacy worse). docs/accounting.md, "Shuffle-model accounting",
    states the theorems and their range.

    Parameters
    ----------
    epsilon0 : float
        ε0 of each report, in (0, 100].
    n : int
        The number of shuffled reports, one per user, n >= 1.
    delta : float
        δ of the central guarantee, in (0, 1).
    configuration : dpnoise.ldp.Configuration, optional
        The LDP configuration that made the reports (its ε per report must be at most ``epsilon0``;
        a configuration that is not pure ε-LDP per report, e.g. ``constant_time=True``, is refused).

    Returns
    -------
    float
        ε in [0, ε0] such that the shuffled reports are (ε, δ)-DP (neighbouring datasets differ in
        one user's data).

    Raises
    ------
    ValueError
        For ε0 not in (0, 100], n < 1, δ not in (0, 1) (NaN included), or a configuration as above.
    TypeError
        For a non-real ε0 or δ, a non-integer n, or a configuration that is not an LDP one.

    Warns
    -----
    UserWarning
        When the bound gives no amplification (n = 1, or too few clones for δ): ε0 is returned.

    Examples
    --------
    >>> from dpnoise.accounting import shuffle_amplification
    >>> round(shuffle_amplification(1.0, 10**6, 1e-8), 3) < 0.02
    True
    """
    eps0, n, delta = _check_args(epsilon0, n, delta)
    d = None if configuration is None else _configuration_kind(configuration, eps0)
    beta = None if configuration is None else variation_ratio_beta(configuration)
    m = min(n, _N_CAP)
    # every bound below holds; the smallest is returned
    eps = _clone_bound_epsilon(eps0, m, delta)
    if d is not None:
        eps = min(eps, _clone_bound_epsilon(eps0, m, delta, domain_size=d))
    if beta is not None and d is None:  # for GRR it is the weighted clone bound above
        eps = min(eps, variation_ratio_epsilon(eps0, m, delta, beta))
    if d == 2:  # binary randomized response: the worst case over every dataset, bounded
        eps = min(eps, binary_rr_worst_epsilon(eps0, m, delta))
    if eps >= eps0:
        warnings.warn(f"shuffling {n} reports gives no amplification at delta={delta:g} under this bound; "
                      f"returning epsilon0={eps0:g} (the reports' own guarantee)", UserWarning, stacklevel=2)
        return eps0
    return eps
