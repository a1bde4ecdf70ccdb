"""``constant_time=True`` on the mechanisms: the range checks, the privacy statement and the
input conversion every constant-time release shares (docs/security.md, "Constant-time
sampling").

* **Range.** The constant-time samplers take a discrete Laplace scale or a discrete Gaussian σ
  of at most 2^20 grid units, and the grid kernel a grid exponent k in [-1000, 960]; a plan
  outside that range is refused with a ValueError naming it, before any charge. There is never
  a fallback to the variable-time samplers.
* **Privacy.** Each constant-time draw has a law within total variation τ <= 2^-64 of the exact
  one. Coupling each of the d draws of a release with an exact draw, the release equals the
  exact mechanism's except with probability at most d·τ, so an (ε, δ)-DP exact release is
  (ε, δ + (1 + e^ε)·d·τ)-DP (for every event S: P'(S) <= P(S) + dτ <= e^ε P(S') + δ + dτ <=
  e^ε (P'(S') + dτ) + δ + dτ). The plan charges that as ``ApproxDP(ε, δ')`` when the
  mechanism has a pure ε or an (ε, δ) target; a ρ (or noise-multiplier) target has no ε to
  state it at, so its plan charges ``WithinTotalVariation(exact loss, d·τ)``, which every
  accountant composes exactly (zCDP, RDP, PLD) and turns into δ + (1 + e^ε)·Σ d·τ when read.
* **No branch on values.** Integer inputs are converted to int64 by dtype only (uint64 values
  of 2^63 and above saturate by masks, not by a comparison); the kernels clamp by masks.
"""
from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from ..accounting.losses import ApproxDP, PrivacyLoss, WithinTotalVariation

# The total-variation bound of one constant-time draw (Laplace < 2^-65, Gaussian <= 2^-66,
# randomized response < 2^-119: docs/security.md), used uniformly.
TV_PER_DRAW = 2.0**-64
# The largest noise parameter (grid units) of the constant-time samplers.
MAX_PARAMETER = 1 << 20
# The grid exponents noisy_grid_constant_time accepts (2^-k, 2^k and (2^52 + 2^40) 2^k finite).
MIN_EXPONENT, MAX_EXPONENT = -1000, 960
_INT64_MAX = np.int64(np.iinfo(np.int64).max)


def check_flag(value: Any) -> bool:
    """``constant_time`` must be a bool (TypeError otherwise: a truthy string is no opt-in)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"constant_time must be True or False, got {type(value).__name__}")
    return bool(value)


def check_parameter(law: str, param: Any, what: str) -> None:
    """ValueError naming the range when a scale (law "laplace") or σ ("gaussian") in grid units
    passes 2^20; ``what`` says which parameters asked for it."""
    if param > MAX_PARAMETER:
        name = "discrete Laplace scale" if law == "laplace" else "discrete Gaussian sigma"
        raise ValueError(f"constant_time=True supports a {name} of at most 2^20 grid units; {what} needs "
                         f"{float(param):.6g}: use a larger epsilon (or delta), a coarser granularity, or "
                         "constant_time=False")


def check_exponent(k: int | None) -> None:
    """ValueError unless the grid exponent is None (integers) or in [-1000, 960]."""
    if k is not None and not MIN_EXPONENT <= k <= MAX_EXPONENT:
        raise ValueError(f"constant_time=True supports grid exponents k in [{MIN_EXPONENT}, {MAX_EXPONENT}] "
                         f"(the grid 2^{k} is outside): choose another granularity")


def loss(base: PrivacyLoss, draws: int, epsilon: float | None = None) -> PrivacyLoss:
    """The loss of a constant-time release of ``draws`` noise values whose exact version spends
    ``base``: ApproxDP(ε, δ + (1 + e^ε)·draws·2^-64), ε the base's pure ε, else ``epsilon``
    with δ = base.delta_for_epsilon(ε); without either (a ρ or noise-multiplier target),
    WithinTotalVariation(base, draws·2^-64). ``base`` itself when nothing is drawn. ValueError when
    the added term leaves no guarantee (δ' >= 1, ε beyond about 40). Remembered for hashable
    (frozen) losses: a plan is built on every release, and a discrete Gaussian's exact profile
    takes milliseconds."""
    try:
        return _cached_loss(base, draws, epsilon)
    except TypeError:  # an unhashable loss
        return _loss(base, draws, epsilon)


def _loss(base: PrivacyLoss, draws: int, epsilon: float | None) -> PrivacyLoss:
    if draws == 0:
        return base
    eps = base.pure_epsilon()
    if eps is None:
        if epsilon is None:  # no ε to state (ε, δ') at: the accountants add the term when read
            return WithinTotalVariation(base, draws * TV_PER_DRAW)
        eps, delta = float(epsilon), float(base.delta_for_epsilon(epsilon))
    else:
        delta = 0.0
    extra = (1.0 + math.exp(eps)) * draws * TV_PER_DRAW * (1 + 2**-40)  # rounded up
    if not delta + extra < 1:
        raise ValueError(f"constant_time=True adds delta = (1 + e^epsilon)·{draws}·2^-64 = {extra:.3g} at "
                         f"epsilon = {eps:g}: no (epsilon, delta) guarantee is left; use a smaller epsilon")
    return ApproxDP(eps, delta + extra)


_cached_loss = functools.lru_cache(maxsize=256)(_loss)


def integers(arr: np.ndarray) -> np.ndarray:
    """An integer (or bool) array as int64 without a comparison on its values: a cast, and for
    uint64 a saturation of the values >= 2^63 (top bit set) to 2^63 - 1 by masks. The kernels
    then clamp by masks (noisy_release.hpp, constant_time/randomized_response.hpp)."""
    if arr.dtype == np.uint64:
        v = arr.view(np.int64)
        top = v >> np.int64(63)  # -1 where the value is >= 2^63, else 0
        return (v & ~top) | (_INT64_MAX & top)
    return arr.astype(np.int64, copy=False)


__all__ = ["MAX_EXPONENT", "MAX_PARAMETER", "MIN_EXPONENT", "TV_PER_DRAW", "check_exponent", "check_flag",
           "check_parameter", "integers", "loss"]
