"""Total variation β between two items' report laws, for the frequency oracles whose randomizer
is known: the parameter of the variation-ratio decomposition (Wang, Peng, Li, Wen, Li, Yu, Wang &
Yang, VLDB 2024, "Privacy Amplification via Shuffling: Unified, Simplified, and Tightened",
arXiv 2304.05007), used by the weighted clone bound (``_shuffle_clone._clone_bound(beta=...)``;
docs/accounting.md, "Configurations: total variation").
"""
from __future__ import annotations

from typing import Any

from ._shuffle_clone import _clone_bound


def variation_ratio_beta(configuration: Any) -> float | None:
    """β, the total variation between the report laws of any two distinct items, for a frequency
    oracle whose randomizer gives every pair the same one; None for the others (they get the
    generic bound). Each configuration states its own (``pair_total_variation``: GRR, unary
    encoding and Hadamard; local hashing's depends on whether the pair's hashes collide, so it has
    none).

    The decomposition behind the weighted clone bound needs β to BE the total variation: the
    bound is not monotone in β, so a larger β is not a valid substitute. The configurations
    compute it at the randomizer's own exact ε (``gamma``), in float: its relative error
    (~10^-15) moves the bound by orders of magnitude less than the 10^-7 relative charge every δ
    term already carries (docs/accounting.md, step 4).
    """
    if getattr(configuration, "family", "") != "frequency":
        return None
    state = getattr(configuration, "pair_total_variation", None)
    return None if state is None else state()


def variation_ratio_epsilon(epsilon0: float, n: int, delta: float, beta: float) -> float:
    """ε at ``delta`` of the weighted clone bound with total variation β (arguments checked by the
    caller), at most ε0; 0 for β = 0 (the reports do not depend on the items)."""
    if beta <= 0.0:
        return 0.0
    return _clone_bound(epsilon0, n, delta, beta=beta).epsilon(delta)
