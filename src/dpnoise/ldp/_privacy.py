"""Privacy of one LDP report, for every configuration family: the ε/γ checks, the variant
checks (which protocols support daily collection or constant time, read from their
declarations) and the privacy-loss rule, written once.

The loss of one report (:func:`report_loss`):

* one layer at ε: ``PureDP(ε)``;
* daily collection, a permanent answer at ε∞ (``epsilon``) and a fresh layer at ε₁
  (``instantaneous_epsilon``): :class:`LongitudinalDP`, min(ε₁, ε∞) per report and ε∞ for all
  reports of one item together (Erlingsson, Pihur & Korolova, CCS 2014, §4);
* with constant-time kernels, m decisions a report, each within total variation 2^-64 of the
  exact one: one layer ``ApproxDP(ε, (1 + e^ε)·m·2^-64)`` (_release/constant_time.py), two
  layers ``WithinTotalVariation(LongitudinalDP, (m∞ + m₁)·2^-64)`` (:func:`constant_time_loss`).

The envelope core (dpnoise.ldp._protocol) imports only this module of the daily-collection
machinery; the two-layer channel algebra is dpnoise.ldp._channels, memoisation
dpnoise.ldp._memo.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from .. import _rational as R
from .._release import constant_time as _ct
from .._validate import MAX_EPSILON, MAX_PART, check_epsilon as _check_epsilon
from ..accounting.budget import PrivacyBudget
from ..accounting.losses import PrivacyLoss, PureDP, WithinTotalVariation

# ε below this cannot be held as an exact rational with the core's 62-bit parts (and its
# variance, ~4/ε² per user, would need more users than exist)
MIN_EPSILON = 2.0 ** -50


def check_epsilon(value: Any, name: str = "epsilon") -> float:
    """ε per user as a float in [2^-50, 100] (ValueError/TypeError naming ``name``): the
    library's one ε check (dpnoise._validate) with the LDP range."""
    return _check_epsilon(value, name, minimum=MIN_EPSILON, maximum=MAX_EPSILON)


def exact_gamma(epsilon: float) -> Fraction:
    """ε as the exact rational the randomizers use, rounded down (toward more privacy) when its
    exact binary value does not fit the core's 62-bit parts."""
    fr = Fraction(epsilon)
    if fr.numerator <= MAX_PART and fr.denominator <= MAX_PART:
        return fr
    num, den = R.round_up(1 / fr, "1/epsilon")  # 1/ε rounded up: ε rounded down
    return Fraction(den, num)


@dataclass(frozen=True)
class LongitudinalDP(PureDP):
    """The privacy loss of a two-layer (memoised) configuration.

    ``epsilon`` is what one report is charged, min(ε₁, ε∞) (each report is ε₁-LDP about the
    permanent answer, an ε∞-LDP one, so a budget composing one charge per report is sound);
    ``permanent_epsilon`` (ε∞) bounds all reports of one item together, however many
    (RAPPOR, Erlingsson et al. 2014, §4). A budget ledger records it as ``PureDP(epsilon)``.

    Parameters
    ----------
    epsilon : float
        What one report costs: min(ε₁, ε∞).
    permanent_epsilon : float
        ε∞, the bound on all reports of one item together.
    instantaneous_epsilon : float
        ε₁ again, under its own name.
    """

    permanent_epsilon: float = 0.0
    instantaneous_epsilon: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """The ledger entry: ``PureDP(epsilon)``, what one report is charged.

        Returns
        -------
        dict
            ``{"type": "PureDP", "epsilon": ε₁}``.
        """
        return {"type": "PureDP", "epsilon": self.epsilon}


def constant_time_loss(loss: LongitudinalDP, permanent_draws: int, instantaneous_draws: int) -> PrivacyLoss:
    """What one report of a two-layer constant-time configuration is charged:
    ``WithinTotalVariation(loss, η)``, η = (m∞ + m₁)·2^-64, m∞ and m₁ the constant-time decisions
    of the permanent and the per-report layer (each within total variation 2^-64 of exact:
    _release/constant_time.py).

    Proof (docs/security.md, "Daily collection in constant time"). Exact: the permanent answer
    A ~ R∞(x) once, report t is Y_t ~ R₁(A). Constant time: A' ~ R'∞(x), Y'_t ~ R'₁(A') with
    TV(R'∞(x), R∞(x)) <= m∞τ and TV(R'₁(a), R₁(a)) <= m₁τ for every a (τ = 2^-64, the PRF
    taken as a random function). Hybrids swapping one layer's draw at a time (the permanent
    draw once, then each report's) bound the total variation between any constant-time and
    exact transcript of T reports, other releases interleaved adaptively, by m∞τ + T·m₁τ <=
    T·η: so charging η with every report covers it, and the accountants add (1 + e^ε)·Ση to the
    exact composition's δ (WithinTotalVariation; Dwork & Roth 2014, Prop. 2.1 for the
    post-processing, the coupling lemma for TV). The exact transcript is charged ``loss`` per
    report as without constant time.

    Parameters
    ----------
    loss : LongitudinalDP
        The exact two-layer configuration's per-report loss.
    permanent_draws, instantaneous_draws : int
        m∞ and m₁.

    Returns
    -------
    WithinTotalVariation
        ``loss`` within total variation (m∞ + m₁)·2^-64.
    """
    return WithinTotalVariation(loss, (permanent_draws + instantaneous_draws) * 2.0**-64)


def report_loss(epsilon: float, instantaneous_epsilon: float | None,
                draws: tuple[int, int] | None = None) -> PrivacyLoss:
    """The privacy loss one report is charged, for every family (the rule in this module's
    docstring): ``PureDP(ε)``, or with ``instantaneous_epsilon`` a :class:`LongitudinalDP`; with
    ``draws`` = (m∞, m₁), the constant-time decisions of the two layers (m₁ unused for one
    layer), widened by their total variation."""
    if instantaneous_epsilon is None:
        loss: PrivacyLoss = PureDP(epsilon)
        return loss if draws is None else _ct.loss(loss, draws[0])
    layered = LongitudinalDP(min(instantaneous_epsilon, epsilon), permanent_epsilon=epsilon,
                             instantaneous_epsilon=instantaneous_epsilon)
    return layered if draws is None else constant_time_loss(layered, *draws)


def supporting(config: Any, variant: str) -> list[str]:
    """The registered configurations of ``config``'s family that declare ``variant``
    (``"daily"`` or ``"constant_time"``); for a family with none, those of every family."""
    own = sorted(n for n, c in config.registered().items() if c.supports(variant))
    return own or sorted(n for base in config.families().values() for n, c in base.registered().items()
                         if c.supports(variant))


def check_instantaneous(config: Any, value: Any) -> tuple[float | None, Any]:
    """(ε₁, its exact rational γ₁) for ``instantaneous_epsilon`` (None, None when absent);
    ValueError naming the argument and the protocols that support it for other protocols."""
    if value is None:
        return None, None
    if not config.supports("daily"):
        raise ValueError(f"instantaneous_epsilon is supported by the protocols {supporting(config, 'daily')} only, "
                         f"not {config.name!r}")
    eps1 = check_epsilon(value, "instantaneous_epsilon")
    return eps1, exact_gamma(eps1)


def supporting_everywhere(config: Any, variant: str) -> str:
    """The configurations of every family that declare ``variant``, as text for a message."""
    parts = []
    for family, base in sorted(config.families().items()):
        names = sorted(n for n, c in base.registered().items() if c.supports(variant))
        if names:
            parts.append(f"{family.replace('_', ' ')}: {', '.join(repr(n) for n in names)}")
    return "; ".join(parts)


def check_constant_time(config: Any, value: Any, what: str) -> bool:
    """``constant_time`` as a bool (TypeError naming it otherwise); True on a configuration whose
    class declares no constant-time kernels is a ValueError naming those that do."""
    flag = _ct.check_flag(value)
    if flag and not config.supports("constant_time"):
        raise ValueError(f"constant_time=True is not supported by {what}; it is supported by the configurations "
                         f"whose kernel tables have a constant-time row ({supporting_everywhere(config, 'constant_time')})")
    return flag


def check_budget(budget: Any, loss: Any) -> PrivacyBudget | None:
    """``budget`` (None or a :class:`dpnoise.accounting.PrivacyBudget` whose accountant can
    compose ``loss``), checked when the client is made."""
    if budget is None:
        return None
    if not isinstance(budget, PrivacyBudget):
        raise TypeError(f"budget must be a dpnoise.accounting.PrivacyBudget, got {type(budget).__name__}")
    budget.accountant.check_supported(loss)
    if budget.delta == 0 and loss.pure_epsilon() is None:  # e.g. constant_time=True: δ > 0 per report
        raise ValueError(f"budget has delta = 0 but each report spends {loss!r}, which has a delta term "
                         "(constant_time=True): give the PrivacyBudget a delta > 0")
    exact = loss.loss if isinstance(loss, WithinTotalVariation) else loss
    if isinstance(exact, LongitudinalDP) and exact.epsilon < exact.instantaneous_epsilon \
            and budget.accountant.kind != "basic":
        # a report charged ε∞ < ε₁ is, given the reports before it, only known to be
        # min(ε₁, 2ε∞)-DP (its law is a mixture over the posterior of the permanent answer, whose
        # ratio between two items is at most e^(2ε∞)); the charge is sound for the pointwise sum
        # of pure losses (basic composition: all reports of an item <= ε∞ together) but not shown
        # for accountants composing per-step conditional bounds (advanced, zCDP, RDP, PLD)
        raise ValueError(f"budget: the {budget.accountant.kind!r} accountant cannot compose reports charged "
                         f"epsilon = {exact.permanent_epsilon:g} (below instantaneous_epsilon = "
                         f"{exact.instantaneous_epsilon:g}); use accountant='basic' or instantaneous_epsilon <= epsilon")
    return budget
