"""Choosing a frequency oracle: the per-user variance formulas of the literature and
:func:`recommend`, which weighs them over every registered protocol that declares a cost
(class members ``cost_rank`` and ``variance_formula``; no protocol is named here)."""
from __future__ import annotations

import math
from typing import Any, List, Tuple


def grr_variance(epsilon: float, d: int) -> float:
    """k-ary randomized response: (e^ε + d − 2)/(e^ε − 1)² (Wang et al. 2017, Eq. 2)."""
    em1 = math.expm1(epsilon)  # e^ε − 1, accurate for small ε
    return (em1 + d - 1) / em1 ** 2


def olh_variance(epsilon: float, d: int = 0) -> float:
    """OUE and OLH: 4e^ε/(e^ε − 1)² (Wang et al. 2017, Eqs. 7 and 12)."""
    em1 = math.expm1(epsilon)
    return 4 * (em1 + 1) / em1 ** 2


def one_bit_variance(epsilon: float, d: int = 0) -> float:
    """One kept-or-flipped ±1 bit per user (Hadamard, Z): ((e^ε + 1)/(e^ε − 1))²."""
    em1 = math.expm1(epsilon)
    return ((em1 + 2) / em1) ** 2


def recommend(epsilon: float, domain_size: int) -> str:
    """The name of the registered frequency oracle with the least variance per user at (ε, d).

    Parameters
    ----------
    epsilon : float
        ε per user.
    domain_size : int
        d, the number of items.

    Returns
    -------
    str
        A protocol name for :func:`dpnoise.ldp.FrequencyOracle`. Ties go to the cheaper protocol
        (its ``cost_rank``): GRR when d < 3e^ε + 2 (Wang et al. 2017, §5), else OLH.

    Raises
    ------
    ValueError
        For a bad ε or d, or when no registered protocol supports the domain.

    Examples
    --------
    >>> dpnoise.ldp.recommend(1.0, 10)
    'grr'
    """
    from ._frequency import Protocol, check_domain_size
    from ._protocol import check_epsilon

    eps = check_epsilon(epsilon)
    d = check_domain_size(domain_size)
    candidates: List[Tuple[float, int, str]] = []
    for cls in Protocol.registered().values():
        rank: Any = getattr(cls, "cost_rank", None)
        if rank is None:
            continue
        try:  # a protocol may not support this domain (unary: d bits per report; hashing: 32-bit keys)
            cls(eps, d)
        except ValueError:
            continue
        candidates.append((cls.variance_formula(eps, d), rank, cls.name))
    if not candidates:
        raise ValueError(f"no registered frequency-oracle protocol supports domain_size={d}")
    return min(candidates)[2]
