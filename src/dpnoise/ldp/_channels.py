"""Channel algebra of the frequency oracles: the per-user variance formulas of the literature
(what the protocols state and :func:`dpnoise.ldp.recommend` compares) and the composition of the
permanent and the instantaneous randomizer of daily collection (two channels in a row).

Formulas only: no configuration, registry or kernel is imported here, so every protocol module
and the recommender (dpnoise.ldp._choose) can use them."""
from __future__ import annotations

import math
from typing import Any, Callable

Channel = tuple[float, float, float]


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


def oue_bit(gamma: Any) -> Channel:
    """(p, q, p − q) of optimized unary encoding's bit at γ: p = 1/2, q = 1/(e^γ + 1) (Wang,
    Blocki, Li & Jha 2017, §4.3), p − q = (e^γ − 1)/(2(e^γ + 1)) from expm1 (accurate for small ε)."""
    em1 = math.expm1(float(gamma))
    return 0.5, 1.0 / (em1 + 2.0), em1 / (2.0 * (em1 + 2.0))


def sue_bit(gamma: Any) -> Channel:
    """(p, q, p − q) of symmetric unary encoding's bit at γ (basic RAPPOR; Erlingsson, Pihur &
    Korolova 2014): p = e^{γ/2}/(e^{γ/2} + 1), q = 1 − p, p − q = (h − 1)/(h + 1), h − 1 = expm1(γ/2)."""
    hm1 = math.expm1(float(gamma) / 2)
    return (hm1 + 1.0) / (hm1 + 2.0), 1.0 / (hm1 + 2.0), hm1 / (hm1 + 2.0)


def symmetric_two_layers(p_perm: float, gap_perm: float, p_inst: float, gap_inst: float,
                         k: int) -> Channel:
    """(P, Q, P − Q) of two k-ary symmetric channels in a row (keep probabilities p, the others
    (1 − p)/(k − 1) each): P = p∞ p₁ + (1 − p∞)(1 − p₁)/(k − 1), Q = (1 − P)/(k − 1), and
    P − Q = (p∞ − q∞)(p₁ − q₁) (the product of the two channels' gaps, accurate for small ε)."""
    P = p_perm * p_inst + (1 - p_perm) * (1 - p_inst) / (k - 1)
    return P, (1 - P) / (k - 1), gap_perm * gap_inst


def binary_two_layers(perm: Channel, inst: Channel) -> Channel:
    """(P, Q, P − Q) of a bit through two channels (p = P(1 | 1), q = P(1 | 0) each):
    P = p∞ p₁ + (1 − p∞) q₁, Q = q∞ p₁ + (1 − q∞) q₁, P − Q = (p∞ − q∞)(p₁ − q₁)
    (RAPPOR, Erlingsson et al. 2014, §3, q* and p*)."""
    p, q, gap = perm
    p1, q1, gap1 = inst
    return p * p1 + (1 - p) * q1, q * p1 + (1 - q) * q1, gap * gap1


def symmetric_layers(k: int) -> Callable[[Channel, Channel], Channel]:
    """:func:`symmetric_two_layers` of k-ary channels, as a composition of two (p, q, p − q)."""
    return lambda perm, inst: symmetric_two_layers(perm[0], perm[2], inst[0], inst[2], k)


def layered(config: Any, channel: Callable[[Any], Channel],
            compose: Callable[[Channel, Channel], Channel] = binary_two_layers) -> Channel:
    """(p, q, p − q) of a report given the item: ``channel`` at the configuration's γ, composed
    (``compose``) with ``channel`` at γ₁ when the configuration collects daily
    (``instantaneous_epsilon``): the one place a protocol's estimator meets the second layer."""
    perm = channel(config.gamma)
    return perm if config.gamma1 is None else compose(perm, channel(config.gamma1))


def local_pq(gamma: Any, g: int) -> tuple[float, float]:
    """(keep, each other) probabilities of g-ary randomized response at γ: e^γ/(e^γ + g − 1) and
    1/(e^γ + g − 1) (Kairouz, Oh & Viswanath 2016)."""
    e = math.exp(float(gamma))
    return e / (e + g - 1), 1.0 / (e + g - 1)
