"""Total variation β between two items' report laws, for the frequency oracles whose randomizer
is known: the parameter of the variation-ratio decomposition (Wang, Peng, Li, Wen, Li, Yu, Wang &
Yang, VLDB 2024, "Privacy Amplification via Shuffling: Unified, Simplified, and Tightened",
arXiv 2304.05007), used by the weighted clone bound (``_shuffle_clone._clone_bound(beta=...)``;
docs/accounting.md, "Configurations: total variation").
"""
from __future__ import annotations

import math
from typing import Any

from ._shuffle_clone import _clone_bound


def variation_ratio_beta(configuration: Any) -> float | None:
    """β, an upper bound on the total variation between the report laws of two distinct items,
    for a plain frequency oracle (no daily layer) whose randomizer is known; None for the others
    (they get the generic bound). β is evaluated at the configuration's ε (its randomizer runs at
    the exact γ <= ε, and every β here increases with ε), rounded up.

    * "grr" (d items): (e^ε - 1)/(e^ε + d - 1) (k-ary randomized response; Kairouz, Oh &
      Viswanath 2016): the two items' laws differ on their two outputs only.
    * "oue", "sue": p1 - q1 (Wang, Blocki, Li & Jha 2017, §4.3): two items' reports differ in the
      laws of two independent bits, (Bern(p1), Bern(q1)) against (Bern(q1), Bern(p1)).
    * "olh", "flh" (g buckets): (e^ε - 1)/(e^ε + g - 1): the seed's law does not depend on the
      item, and given it the two laws are g-ary randomized response of two buckets (equal or not).
    * "hadamard": (e^ε - 1)/(2(e^ε + 1)) for D >= 2 rows: the row j is uniform and independent of
      the item; two distinct columns of a Sylvester–Hadamard matrix differ in exactly D/2 rows,
      where the bit is binary randomized response of opposite values (Bassily & Smith 2015, §4).
    """
    if getattr(configuration, "family", "") != "frequency" or getattr(configuration, "gamma1", None) is not None:
        return None
    name = getattr(configuration, "name", "")
    eps = float(configuration.epsilon)
    em1 = math.expm1(eps)
    if name == "grr":
        beta = em1 / (em1 + configuration.domain_size)
    elif name in ("oue", "hadamard"):
        beta = em1 / (2.0 * (em1 + 2.0)) if configuration.domain_size >= 2 else 0.0
    elif name == "sue":
        beta = math.tanh(eps / 4.0)  # (e^{ε/2} - 1)/(e^{ε/2} + 1)
    elif name in ("olh", "flh"):
        beta = em1 / (em1 + configuration.options["g"])
    else:
        return None
    return beta * (1 + 1e-12)  # a few roundings, upward (a larger β is also a valid bound)


def variation_ratio_epsilon(epsilon0: float, n: int, delta: float, beta: float) -> float:
    """ε at ``delta`` of the weighted clone bound with total variation β (arguments checked by the
    caller), at most ε0; 0 for β = 0 (the reports do not depend on the items)."""
    if beta <= 0.0:
        return 0.0
    return _clone_bound(epsilon0, n, delta, beta=beta).epsilon(delta)
