"""What ε means: an attacker's posterior, and the least error any private mechanism must make."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._validate import nonnegative, probability


def posterior_bounds(prior: Any, epsilon: float):
    """How far an attacker's belief that a person is in the data can move after seeing an ε-DP
    output: p·e^-ε/(p·e^-ε + 1 - p) <= posterior <= p·e^ε/(p·e^ε + 1 - p) (introduction seed
    002, §2.3; Kasiviswanathan & Smith 2014). Works element-wise on arrays of priors."""
    eps = nonnegative(epsilon, "epsilon")
    p = np.asarray(prior, dtype=float)
    if p.size and (np.isnan(p).any() or p.min() < 0 or p.max() > 1):
        raise ValueError("prior must be probabilities in [0, 1]")
    up = p * math.exp(eps) / (p * math.exp(eps) + 1 - p)
    lo = p * math.exp(-eps) / (p * math.exp(-eps) + 1 - p)
    if np.ndim(prior) == 0:
        return float(lo), float(up)
    return lo, up


def error_lower_bound(epsilon: float, delta: float, diameter: float) -> float:
    """Any (ε, δ)-DP mechanism on a domain of this diameter has expected error at least
    (1 - δ)·diam/(2(1 + e^ε)) (thesis seed 003, Thm 5.3)."""
    eps = nonnegative(epsilon, "epsilon")
    d = probability(delta, "delta")
    diam = nonnegative(diameter, "diameter")
    return (1 - d) * diam / (2 * (1 + math.exp(eps)))


def discrete_error_lower_bound(epsilon: float, delta: float, size: int, separation: float = 1.0) -> float:
    """On a discrete domain of m + 1 points at pairwise distance >= κ, the expected error is at
    least (1 - δ)·κm/(m + e^ε) (thesis seed 003, Thm 5.5)."""
    eps = nonnegative(epsilon, "epsilon")
    d = probability(delta, "delta")
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 2:
        raise ValueError(f"size must be an int >= 2 (the number of domain points), got {size!r}")
    kappa = nonnegative(separation, "separation")
    m = size - 1
    return (1 - d) * kappa * m / (m + math.exp(eps))
