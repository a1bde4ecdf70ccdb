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
    """β, the total variation between the report laws of any two distinct items, for a plain
    frequency oracle (no daily layer) whose randomizer gives every pair the same total variation;
    None for the others (they get the generic bound).

    The decomposition behind the weighted clone bound needs β to BE the total variation: the
    bound is not monotone in β, so a larger β is not a valid substitute. β is therefore computed
    at the randomizer's own exact ε (``configuration.gamma``), in float: its relative error
    (~10^-15) moves the bound by orders of magnitude less than the 10^-7 relative charge every δ
    term already carries (docs/accounting.md, step 4).

    * "grr" (d items): (e^γ - 1)/(e^γ + d - 1) (k-ary randomized response; Kairouz, Oh &
      Viswanath 2016): the two items' laws differ on their two outputs only.
    * "oue", "sue": p1 - q1 (Wang, Blocki, Li & Jha 2017, §4.3): two items' reports differ in the
      laws of two independent bits, (Bern(p1), Bern(q1)) against (Bern(q1), Bern(p1)).
    * "hadamard": (e^γ - 1)/(2(e^γ + 1)) for D >= 2 rows: the row j is uniform and independent of
      the item; two distinct columns of a Sylvester–Hadamard matrix differ in exactly D/2 rows,
      where the bit is binary randomized response of opposite values (Bassily & Smith 2015, §4).
    * "olh", "flh": None. Two items' total variation is (e^γ - 1)/(e^γ + g - 1) times
      Pr[their hashes differ], which depends on the pair; the constant would be an overestimate,
      which the decomposition does not allow.
    """
    if getattr(configuration, "family", "") != "frequency" or getattr(configuration, "gamma1", None) is not None:
        return None
    name = getattr(configuration, "name", "")
    eps = float(configuration.gamma)  # the randomizer's exact ε
    em1 = math.expm1(eps)
    if name == "grr":
        beta = em1 / (em1 + configuration.domain_size)
    elif name in ("oue", "hadamard"):
        beta = em1 / (2.0 * (em1 + 2.0)) if configuration.domain_size >= 2 else 0.0
    elif name == "sue":
        beta = math.tanh(eps / 4.0)  # (e^{ε/2} - 1)/(e^{ε/2} + 1)
    else:
        return None
    return beta


def variation_ratio_epsilon(epsilon0: float, n: int, delta: float, beta: float) -> float:
    """ε at ``delta`` of the weighted clone bound with total variation β (arguments checked by the
    caller), at most ε0; 0 for β = 0 (the reports do not depend on the items)."""
    if beta <= 0.0:
        return 0.0
    return _clone_bound(epsilon0, n, delta, beta=beta).epsilon(delta)
