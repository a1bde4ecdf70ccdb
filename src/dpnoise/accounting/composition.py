"""Group privacy and parallel composition."""
from __future__ import annotations

from typing import Any

from .. import _validate as check
from .conversions import group_approx_dp
from .losses import (
    ZCDP,
    ApproxDP,
    DiscreteGaussian,
    DiscreteGaussianVector,
    DiscreteLaplace,
    Gaussian,
    Laplace,
    Parallel,
    PrivacyLoss,
    PureDP,
)


def group_privacy(loss: PrivacyLoss, k: int) -> PrivacyLoss:
    """The loss a release spends on a group of ``k`` records instead of one.

    * additive-noise mechanisms: the same noise with sensitivity kΔ (exact: a group moves the
      query by at most kΔ);
    * zCDP ρ → k²ρ (Bun & Steinke 2016, Prop. 1.9);
    * pure ε → kε, and (ε, δ) → (kε, k e^{(k-1)ε} δ) (hybrid argument of Dwork & Roth 2014, Thm 2.2);
    * anything else through its (ε, δ) form; an RDP-only loss raises ValueError.

    Parameters
    ----------
    loss : PrivacyLoss
        What the release spends on one record.
    k : int
        The group size (>= 1).

    Returns
    -------
    PrivacyLoss
        What it spends on a group of ``k`` (``loss`` itself for k = 1).

    Raises
    ------
    TypeError
        If ``loss`` is not a descriptor.
    ValueError
        For k < 1, or a loss with no ε, (ε, δ) or zCDP form.
    """
    if not isinstance(loss, PrivacyLoss):
        raise TypeError(f"loss must be a privacy-loss descriptor, got {type(loss).__name__}")
    k = check.count(k, "k")
    if k == 1:
        return loss
    if isinstance(loss, (Laplace, Gaussian)):
        return type(loss)(loss.scale if isinstance(loss, Laplace) else loss.sigma,
                          loss.sensitivity * k)
    if isinstance(loss, DiscreteLaplace):
        return DiscreteLaplace(loss.scale, loss.sensitivity * k)
    if isinstance(loss, DiscreteGaussian):
        # k neighbours move the same c coordinates by up to kΔ each (the L2 worst case)
        return DiscreteGaussian(loss.sigma, loss.sensitivity * k, loss.coordinates)
    if isinstance(loss, DiscreteGaussianVector):
        # k neighbours move the output by at most kΔ in L2 (triangle inequality)
        return DiscreteGaussianVector(loss.sigma, loss.l2_sensitivity * k, loss.dimension)
    if isinstance(loss, Parallel):
        return Parallel(tuple(group_privacy(x, k) for x in loss.losses))
    if isinstance(loss, ZCDP):
        return ZCDP(k * k * loss.rho)
    pure = loss.pure_epsilon()
    if pure is not None:
        return PureDP(k * pure)
    ed = loss.approx_dp()
    if ed is not None:
        return ApproxDP(*group_approx_dp(ed[0], ed[1], k))
    rho = loss.zcdp_rho()
    if rho is not None:
        return ZCDP(k * k * rho)
    raise ValueError(f"group privacy of {loss!r} is not supported (it has no ε, (ε, δ) or zCDP form)")


def parallel_composition(*losses: Any) -> Parallel:
    """The loss of releases on disjoint partitions of the data (one record affects one part):
    the worst of the parts (McSherry 2009, Thm 4). Accepts descriptors or one iterable of them.

    Parameters
    ----------
    *losses : PrivacyLoss or iterable of PrivacyLoss
        The loss of each part's release.

    Returns
    -------
    Parallel
        The combined descriptor.
    """
    if len(losses) == 1 and not isinstance(losses[0], PrivacyLoss):
        losses = tuple(losses[0])
    return Parallel(tuple(losses))
