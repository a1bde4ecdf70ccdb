"""What ε means: an attacker's posterior, and the least error any private mechanism must make."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._release.docs import docs_from_template
from .._validate import nonnegative, probability


def posterior_bounds(prior: Any, epsilon: float) -> tuple[float | np.ndarray, float | np.ndarray]:
    """How far an attacker's belief that a person is in the data can move after seeing an ε-DP
    output: p·e^-ε/(p·e^-ε + 1 - p) <= posterior <= p·e^ε/(p·e^ε + 1 - p) (Kasiviswanathan &
    Smith 2014, the Bayesian semantics of ε-DP; Bayes' rule with a likelihood ratio in
    [e^-ε, e^ε]). Works element-wise on arrays of priors.

    Parameters
    ----------
    prior : float or array_like
        Prior probabilities in [0, 1].
    epsilon : float
        ε >= 0.

    Returns
    -------
    (lower, upper)
        The posterior's bounds, same shape as ``prior``.

    Raises
    ------
    ValueError
        For a prior outside [0, 1] or a negative ε.

    Examples
    --------
    >>> from dpnoise.mechanisms import posterior_bounds
    >>> lo, hi = posterior_bounds(0.5, 1.0)
    >>> round(float(hi), 3)
    0.731
    """
    eps = nonnegative(epsilon, "epsilon")
    p = np.asarray(prior, dtype=float)
    if p.size and (np.isnan(p).any() or p.min() < 0 or p.max() > 1):
        raise ValueError("prior must be probabilities in [0, 1]")
    up = p * math.exp(eps) / (p * math.exp(eps) + 1 - p)
    lo = p * math.exp(-eps) / (p * math.exp(-eps) + 1 - p)
    if np.ndim(prior) == 0:
        return float(lo), float(up)
    return lo, up


# The numpydoc sections of the two error lower bounds below, written once.
_LOWER_BOUND_DOCS = """
    Parameters
    ----------
    epsilon : float
        ε >= 0.
    delta : float
        δ in [0, 1].
    {parameters}

    Returns
    -------
    float

    Raises
    ------
    ValueError
        For out-of-range arguments.

    Examples
    --------
    >>> from dpnoise.mechanisms import {name}
    >>> {name}{example}
    True
    """


@docs_from_template(_LOWER_BOUND_DOCS, example="(1.0, 0.0, 2.0) > 0",
                    parameters="diameter : float\n        The distance between the two query values.")
def error_lower_bound(epsilon: float, delta: float, diameter: float) -> float:
    """Any (ε, δ)-DP mechanism for a query whose values on two neighbouring inputs are
    ``diameter`` apart has expected error at least (1 - δ)·diam/(2(1 + e^ε)) on one of them
    (a two-point argument; docs/mechanisms.md, Lemma 2)."""
    eps = nonnegative(epsilon, "epsilon")
    d = probability(delta, "delta")
    diam = nonnegative(diameter, "diameter")
    return (1 - d) * diam / (2 * (1 + math.exp(eps)))


@docs_from_template(_LOWER_BOUND_DOCS, example="(1.0, 0.0, 10) >= 0",
                    parameters="size : int\n        Number of candidate answers.\n"
                               "    separation : float, default 1.0\n        Their pairwise distance.")
def discrete_error_lower_bound(epsilon: float, delta: float, size: int, separation: float = 1.0) -> float:
    """On m + 1 pairwise-neighbouring inputs whose query values are points at pairwise distance
    >= κ, a mechanism whose outputs are points of that domain has expected error at least
    (1 - δ)·κm/(m + e^ε), on average over the inputs and so at one of them (docs/mechanisms.md,
    Lemma 3; with real outputs the same holds with κ/2)."""
    eps = nonnegative(epsilon, "epsilon")
    d = probability(delta, "delta")
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 2:
        raise ValueError(f"size must be an int >= 2 (the number of domain points), got {size!r}")
    kappa = nonnegative(separation, "separation")
    m = size - 1
    return (1 - d) * kappa * m / (m + math.exp(eps))
