"""Poisson subsampling of another loss (privacy amplification by sampling)."""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ... import _validate as check
from .base import (
    DIRECTIONS,
    Atoms,
    PrivacyLoss,
    Tails,
    _atoms_profile,
    _atoms_rdp,
    _log_or_minus_inf,
    _lse,
    _register,
)
from .guarantees import RDP, ZCDP
from .parallel import Parallel


@_register
@dataclass(frozen=True)
class PoissonSampled(PrivacyLoss):
    """``loss`` run on a Poisson subsample (each record kept independently with probability
    ``rate``), under add/remove neighbours.

    remove: P' = (1-q)Q + qP vs Q, whose loss is log(1 - q + q e^L);  add: Q vs P'.
    Profile: δ'(ε) = q δ(log(1 + (e^ε - 1)/q)) for remove (Balle, Barthe & Gaboardi 2018, Thm 8
    in profile form; Zhu, Dong & Wang 2022, Prop. 30), computed here from the loss distribution.
    Pure/approximate DP: (log(1 + q(e^ε - 1)), qδ) (BBG 2018). RDP: numerical integration of
    E_Q[(P'/Q)^α] and E_Q[(Q/P')^{α-1}] (Mironov, Talwar & Zhang 2019, §3), max of both.

    Parameters
    ----------
    loss : PrivacyLoss
        The loss of the mechanism run on the subsample: one with a loss distribution or a pure
        or approximate DP guarantee.
    rate : float
        The sampling probability q in (0, 1].

    Raises
    ------
    TypeError
        If ``loss`` is not a privacy-loss descriptor.
    ValueError
        For a zCDP, RDP, parallel or already subsampled ``loss``, or a rate outside (0, 1].
    """

    loss: PrivacyLoss
    rate: float
    symmetric: ClassVar[bool] = False

    def __post_init__(self) -> None:
        if not isinstance(self.loss, PrivacyLoss):
            raise TypeError(f"loss must be a privacy-loss descriptor, got {type(self.loss).__name__}")
        if isinstance(self.loss, (PoissonSampled, ZCDP, RDP, Parallel)):
            raise ValueError(f"PoissonSampled needs a mechanism with a known loss distribution or "
                             f"pure/approximate DP, not {type(self.loss).__name__}")
        object.__setattr__(self, "rate", check.rate(self.rate))

    def _amplify(self, eps: float) -> float:
        return math.log1p(self.rate * math.expm1(eps))

    def pure_epsilon(self) -> float | None:
        """log(1 + q(e^ε - 1)) of the inner ε (Balle, Barthe & Gaboardi 2018)."""
        e = self.loss.pure_epsilon()
        return None if e is None else self._amplify(e)

    def approx_dp(self) -> tuple[float, float] | None:
        """(log(1 + q(e^ε - 1)), qδ) of the inner (ε, δ) (Balle, Barthe & Gaboardi 2018)."""
        ed = self.loss.approx_dp()
        return None if ed is None else (self._amplify(ed[0]), self.rate * ed[1])

    def zcdp_rho(self) -> None:
        """None: no closed-form zCDP amplification by subsampling."""
        return None  # subsampling does not amplify zCDP in closed form; use 'rdp' or 'pld'

    def rdp(self, alpha: float) -> float | None:
        """ε(α) of the subsampled pair, exact from atoms or by numerical integration."""
        base_atoms = self.loss._loss_atoms("remove")
        if base_atoms is not None:
            return max(_atoms_rdp(a, alpha) for a in (self._loss_atoms(d) for d in DIRECTIONS)
                       if a is not None)
        if not hasattr(self.loss, "_logpdf_pair"):
            return None
        return self._rdp_numeric(alpha)

    def _rdp_numeric(self, alpha: float) -> float:
        # E_Q[(P'/Q)^α] (remove) and E_{P'}[(Q/P')^α] = E_Q[(P'/Q)^{1-α}] (add) on a trapezoid grid
        # (Mironov, Talwar & Zhang 2019, §3). With u = log P'/Q, a = log Q + log w and
        # b = log P' + log w on the grid: remove = lse(a + αu), add = lse(b - αu). u, a, b do not
        # depend on α, so they are computed once per grid (_integration_grid) and each order
        # costs two weighted sums.
        grid = _integration_grid(self.loss, self.rate, alpha)
        u, a, b, lz = grid if grid is not None else _integration_terms(
            self.loss, self.rate, *self.loss._integration_window(alpha))  # type: ignore[attr-defined]
        rem = _lse(a + alpha * u) - lz
        add = _lse(b - alpha * u) - lz
        return max(0.0, rem / (alpha - 1), add / (alpha - 1))

    def _loss_atoms(self, direction: str) -> Atoms | None:
        base = self.loss._loss_atoms("remove")
        if base is None:
            return None
        losses, p, p_inf = base
        q = self.rate
        qmass = p * np.exp(-losses)  # Q-masses of the base atoms; Q(∞-loss atom) = 0
        mix = (1 - q) * qmass + q * p  # P' masses on the base atoms
        with np.errstate(divide="ignore"):
            new_loss = np.log1p(q * np.expm1(losses))  # log(P'/Q)
        if direction == "remove":
            keep = mix > 0
            return new_loss[keep], mix[keep], q * p_inf
        # add: the pair (Q, P'); the ∞ atom of P carries no Q mass, so it vanishes here, but Q's
        # mass where P = 0 (1 - ΣQ, e.g. δ for (ε, δ)-DP) has P' = (1-q)Q: loss -log(1-q)
        keep = qmass > 0
        add_loss, add_mass = -new_loss[keep], qmass[keep]
        missing = max(0.0, 1.0 - float(np.sum(add_mass))) if p_inf > 0 else 0.0
        inf_add = 0.0
        if missing > 0:
            if q < 1:
                add_loss = np.append(add_loss, -math.log1p(-q))
                add_mass = np.append(add_mass, missing)
            else:
                inf_add = missing
        order = np.argsort(add_loss)
        return add_loss[order], add_mass[order], inf_add

    def _loss_tails(self, eps: np.ndarray, direction: str) -> Tails | None:
        q = self.rate
        e = np.asarray(eps, dtype=float)
        if direction == "remove":
            # {log(1-q+q e^L) > ε} = {L > g}, g = log((e^ε - 1 + q)/q)
            t = self.loss._loss_tails(_log_or_minus_inf(np.expm1(e) / q + 1.0), "remove")
            if t is None:
                return None
            p_sf, q_sf, p_cdf, q_cdf = t
            return ((1 - q) * q_sf + q * p_sf, q_sf, (1 - q) * q_cdf + q * p_cdf, q_cdf)
        # add: pair (Q, P'), loss -log(1-q+q e^L) > ε  <=>  L < g2, g2 = log((e^-ε - 1 + q)/q)
        t = self.loss._loss_tails(_log_or_minus_inf(np.expm1(-e) / q + 1.0), "remove")
        if t is None:
            return None
        p_sf, q_sf, p_cdf, q_cdf = t
        return (q_cdf, (1 - q) * q_cdf + q * p_cdf, q_sf, (1 - q) * q_sf + q * p_sf)

    def _profile(self, eps: np.ndarray, direction: str) -> np.ndarray | None:
        if self.loss._loss_atoms("remove") is not None:
            atoms = self._loss_atoms(direction)
            assert atoms is not None
            return _atoms_profile(atoms, eps)
        q = self.rate
        e = np.asarray(eps, dtype=float)
        if direction == "remove":
            # δ'(ε) = q δ(log(1 + (e^ε-1)/q)) where that is defined, else 1 - e^ε
            arg = np.expm1(e) / q + 1.0
            ok = arg > 0
            inner = np.log(np.where(ok, arg, 1.0))
            base = self.loss._profile(inner, "remove")
            if base is None:
                return None
            return np.where(ok, q * base, -np.expm1(np.minimum(e, 0)))
        # add: δ'(ε) = (1 - e^ε(1-q)) δ_add(log(e^ε q / (1 - e^ε(1-q)))) while 1 - e^ε(1-q) > 0
        c = -np.expm1(e + math.log1p(-q)) if q < 1 else np.ones_like(e)
        ok = c > 0
        inner = np.where(ok, e + math.log(q) - np.log(np.where(ok, c, 1.0)), 0.0)
        base = self.loss._profile(inner, "add" if not self.loss.symmetric else "remove")
        if base is None:
            return None
        return np.where(ok, c * base, 0.0)

    def to_dict(self) -> dict[str, Any]:
        """``{"type": "PoissonSampled", "loss": inner dict, "rate": q}``."""
        return {"type": "PoissonSampled", "loss": self.loss.to_dict(), "rate": self.rate}


# Grids of _integration_grid are kept up to this many points (three float64 arrays each); a
# larger grid (an order in the thousands) is computed for its order alone, as before.
_CACHED_GRID_POINTS = 1 << 18


def _integration_terms(loss: PrivacyLoss, rate: float, lo: float, hi: float,
                       dx: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """(u, a, b, log Z) on the trapezoid grid of [lo, hi] at step about dx: u = log P'/Q with
    P' = (1-q)Q + qP, a = log Q + log w, b = log P' + log w (w the trapezoid weights) and Z the
    grid's mass of Q, which normalises both sums (it cancels the grid's density scale)."""
    n = int(min(max((hi - lo) / dx, 4000), 2_000_000))
    x = np.linspace(lo, hi, n + 1)
    step = x[1] - x[0]
    lp, lq = loss._logpdf_pair(x)  # type: ignore[attr-defined]
    # log P'(x) = log((1-q) Q + q P)
    lmix = np.logaddexp(math.log1p(-rate) + lq, math.log(rate) + lp) if rate < 1 else lp
    lw = np.full(x.shape, math.log(step))
    lw[0] = lw[-1] = math.log(step / 2)  # trapezoid rule
    a = lq + lw
    b = lmix + lw
    u = lmix - lq
    for arr in (u, a, b):
        arr.setflags(write=False)
    return u, a, b, _lse(a)


def _integration_grid(loss: PrivacyLoss, rate: float,
                      alpha: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, float] | None:
    """The α-independent terms of the RDP integral for every order up to the power of two
    B >= α: the grid of order B, when it contains the window of order α at a step no coarser
    than α's (a wider window only adds terms of the positive integrand, whose mass beyond the
    window of α is negligible) and is small enough to keep; None otherwise."""
    bucket = 2.0 ** max(1, math.ceil(math.log2(alpha)))
    lo_b, hi_b, dx_b = loss._integration_window(bucket)  # type: ignore[attr-defined]
    lo, hi, dx = loss._integration_window(alpha)  # type: ignore[attr-defined]
    if not (lo_b <= lo and hi <= hi_b and dx_b <= dx) or (hi_b - lo_b) / dx_b > _CACHED_GRID_POINTS:
        return None
    return _cached_terms(loss, rate, lo_b, hi_b, dx_b)


@functools.lru_cache(maxsize=8)
def _cached_terms(loss: PrivacyLoss, rate: float, lo: float, hi: float,
                  dx: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    return _integration_terms(loss, rate, lo, hi, dx)
