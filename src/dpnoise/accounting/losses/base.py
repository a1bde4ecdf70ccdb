"""The base class of privacy-loss descriptors, their registry, and shared helpers.

A descriptor says what one release spends, in the richest form it has.

Each descriptor is an immutable value. Accountants ask it for the representation they need:

* ``pure_epsilon()``      ε of pure ε-DP, or None;
* ``approx_dp()``         one (ε, δ) pair for basic/advanced composition, or None;
* ``zcdp_rho()``          ρ of ρ-zCDP, or None;
* ``rdp(alpha)``          the Rényi-DP curve ε(α) at α > 1, or None;
* ``delta_for_epsilon``   the exact privacy profile δ(ε) (hockey-stick divergence) of one use,
                          the max over the two directions of the neighbouring relation;
* the privacy-loss distribution, through ``_loss_atoms`` (finitely many loss values) or
  ``_loss_tails`` (continuous), which the PLD accountant discretises.

Conventions. A *dominating pair* (P, Q) is the output distribution with the distinguishing
record (P) and without it (Q); the loss is L = log P(o)/Q(o) for o ~ P. "remove" is the direction
(P, Q), "add" is (Q, P). Additive-noise mechanisms are symmetric (both directions agree); Poisson
subsampling is not. The sensitivity is measured in the neighbouring relation of the accountant
the loss is composed in.
"""

import math
from typing import Any, Callable, ClassVar, Optional, Union

import numpy as np

from ... import _validate as check

Atoms = tuple[np.ndarray, np.ndarray, float]  # (losses, P-masses, P-mass at +inf loss)
Tails = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # P(L>e), Q(L>e), P(L<=e), Q(L<=e)

DIRECTIONS = ("remove", "add")


def _atoms_profile(atoms: Atoms, eps: np.ndarray) -> np.ndarray:
    """δ(ε) = P(L=∞) + Σ_{l_k > ε} p_k (1 - e^{ε - l_k}) for a finite loss distribution."""
    losses, masses, inf_mass = atoms
    eps = np.atleast_1d(np.asarray(eps, dtype=float))
    out = np.full(eps.shape, float(inf_mass))
    for i, e in enumerate(eps):
        sel = losses > e
        out[i] += float(np.sum(masses[sel] * -np.expm1(e - losses[sel])))
    return out


def _atoms_rdp(atoms: Atoms, alpha: float) -> float:
    """D_α(P‖Q) = log(Σ p_k e^{(α-1) l_k}) / (α-1)  (Mironov 2017, Def. 3), ∞ with an ∞-loss atom."""
    losses, masses, inf_mass = atoms
    if inf_mass > 0:
        return math.inf
    keep = masses > 0
    if not keep.any():
        return 0.0
    v = (alpha - 1.0) * losses[keep] + np.log(masses[keep])
    m = float(np.max(v))
    return max(0.0, (m + math.log(float(np.sum(np.exp(v - m))))) / (alpha - 1.0))


def _rr_atoms(epsilon: float, categories: int) -> Atoms:
    """k-ary randomized response (keep w.p. e^ε/(e^ε+k-1)): losses +ε, -ε and 0 (k > 2)."""
    # probabilities computed stably for large ε: p = 1/(1 + (k-1)e^{-ε}), q = e^{-ε} p
    k = categories
    p = 1.0 / (1.0 + (k - 1) * math.exp(-epsilon))
    q = math.exp(-epsilon) * p
    losses = [epsilon, -epsilon]
    masses = [p, q]
    if k > 2:
        losses.append(0.0)
        masses.append((k - 2) * q)
    order = np.argsort(losses)
    return np.asarray(losses, float)[order], np.asarray(masses, float)[order], 0.0


class PrivacyLoss:
    """Base class of all privacy-loss descriptors."""

    symmetric: ClassVar[bool] = True
    kind: ClassVar[str] = "loss"

    # ---- conversions; None means "this form does not apply" ----
    def repetitions(self) -> tuple["PrivacyLoss", int]:
        """(one use, m) when this loss is m identical uses composed (a batch, e.g. m selections);
        (self, 1) otherwise. The (ε, δ) accountants compose the m uses as m events, so that the
        advanced (optimal homogeneous) composition applies to them.

        Returns
        -------
        tuple of (PrivacyLoss, int)
            The loss of one use and the number m >= 1 of identical uses.
        """
        return self, 1

    def pure_epsilon(self) -> Optional[float]:
        """ε of the pure ε-DP guarantee of one release, if it has one.

        Returns
        -------
        float or None
            ε >= 0 (``math.inf`` for no finite bound), or None when the loss has no pure form.
        """
        return None

    def approx_dp(self) -> Optional[tuple[float, float]]:
        """One (ε, δ) pair the release satisfies, for basic and advanced composition.

        The default is (ε, 0) from :meth:`pure_epsilon`.

        Returns
        -------
        tuple of (float, float) or None
            (ε, δ), or None when the loss has no single (ε, δ) form.
        """
        eps = self.pure_epsilon()
        return None if eps is None else (eps, 0.0)

    def zcdp_rho(self) -> Optional[float]:
        """ρ of the ρ-zCDP guarantee of one release (Bun and Steinke 2016).

        The default converts a pure ε to ρ = ε²/2 (their Prop. 1.4).

        Returns
        -------
        float or None
            ρ >= 0, or None when the loss has no zCDP form.
        """
        eps = self.pure_epsilon()
        return None if eps is None else 0.5 * eps * eps  # ε-DP ⇒ ε²/2-zCDP (Bun–Steinke 2016, Prop. 1.4)

    def rdp(self, alpha: float) -> Optional[float]:
        """Rényi-DP ε(α) of one release (Mironov 2017), the max over both directions.

        Parameters
        ----------
        alpha : float
            The Rényi order, α > 1.

        Returns
        -------
        float or None
            ε(α) >= 0 (``math.inf`` when unbounded), or None when the loss has no RDP form.
        """
        atoms = [self._loss_atoms(d) for d in self._directions()]
        if any(a is None for a in atoms):
            rho = self.zcdp_rho()
            return None if rho is None else alpha * rho
        return max(_atoms_rdp(a, alpha) for a in atoms if a is not None)

    def has_profile(self) -> bool:
        """Whether the exact privacy profile δ(ε) (and so the PLD accountant) is available.

        Returns
        -------
        bool
            True when :meth:`delta_for_epsilon` can be evaluated.
        """
        d = self._directions()[0]
        return self._loss_atoms(d) is not None or self._loss_tails(np.zeros(1), d) is not None

    def delta_for_epsilon(self, epsilon: Union[float, np.ndarray]) -> Any:
        """The exact δ(ε) of one use (hockey-stick divergence, max over directions).

        Parameters
        ----------
        epsilon : float or array_like of float
            The ε values (any real).

        Returns
        -------
        float or numpy.ndarray
            δ(ε) in [0, 1]: a float for a scalar ``epsilon``, else a float64 array of its shape.

        Raises
        ------
        ValueError
            If ``epsilon`` holds a NaN, or the loss has no privacy profile (account for it
            with a 'zcdp' or 'rdp' accountant).
        """
        eps = np.atleast_1d(np.asarray(epsilon, dtype=float))
        if np.isnan(eps).any():
            raise ValueError("epsilon must not be NaN")
        out = np.zeros(eps.shape)
        for d in self._directions():
            prof = self._profile(eps, d)
            if prof is None:
                raise ValueError(f"{self!r} has no privacy profile; account for it with "
                                 "a 'zcdp' or 'rdp' accountant")
            out = np.maximum(out, prof)
        out = np.clip(out, 0.0, 1.0)
        return float(out[0]) if np.ndim(epsilon) == 0 else out

    def epsilon_for_delta(self, delta: float) -> float:
        """The least ε with δ(ε) <= delta for one use (bisection on the exact profile).

        Parameters
        ----------
        delta : float
            The target δ in [0, 1]. δ = 0 gives the pure ε (``math.inf`` without one).

        Returns
        -------
        float
            The least ε >= 0 (to a relative 1e-14), or ``math.inf`` above ε = 10^6.

        Raises
        ------
        ValueError
            If ``delta`` is not a probability, or the loss has no privacy profile.
        """
        delta = check.probability(delta, "delta")
        if delta == 0:  # only a pure guarantee reaches δ = 0 (a computed 0 may be underflow)
            pure = self.pure_epsilon()
            return math.inf if pure is None else pure
        if float(self.delta_for_epsilon(0.0)) <= delta:
            return 0.0
        hi = 1.0
        while float(self.delta_for_epsilon(hi)) > delta:
            hi *= 2.0
            if hi > 1e6:
                return math.inf
        lo = 0.0
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            if float(self.delta_for_epsilon(mid)) <= delta:
                hi = mid
            else:
                lo = mid
            if hi - lo <= 1e-14 * hi:
                break
        return hi

    # ---- the privacy-loss distribution (for the PLD accountant) ----
    def _directions(self) -> tuple[str, ...]:
        return ("remove",) if self.symmetric else DIRECTIONS

    def _loss_atoms(self, direction: str) -> Optional[Atoms]:
        return None

    def _loss_tails(self, eps: np.ndarray, direction: str) -> Optional[Tails]:
        return None

    def _profile(self, eps: np.ndarray, direction: str) -> Optional[np.ndarray]:
        atoms = self._loss_atoms(direction)
        if atoms is not None:
            return _atoms_profile(atoms, eps)
        tails = self._loss_tails(eps, direction)
        if tails is None:
            return None
        p_sf, q_sf, _, _ = tails
        with np.errstate(over="ignore", invalid="ignore"):
            out = p_sf - np.where(q_sf > 0, np.exp(eps + np.log(np.where(q_sf > 0, q_sf, 1.0))), 0.0)
        return np.maximum(out, 0.0)

    # ---- serialisation ----
    def to_dict(self) -> dict[str, Any]:
        """The descriptor as a JSON-able dict, ``{"type": class name, field: value, ...}``.

        :func:`loss_from_dict` rebuilds it (budget ledgers are stored this way).

        Returns
        -------
        dict
            The type name and the constructor's fields.

        Raises
        ------
        NotImplementedError
            On the base class, which has no fields.
        """
        raise NotImplementedError


_REGISTRY: dict[str, Callable[..., PrivacyLoss]] = {}


def _register(cls: Any) -> Any:
    _REGISTRY[cls.__name__] = cls
    return cls


def loss_from_dict(data: dict[str, Any]) -> PrivacyLoss:
    """Rebuild a descriptor from ``to_dict()`` output (used to reload budget ledgers).

    Parameters
    ----------
    data : dict
        ``{"type": class name, field: value, ...}``; nested losses (``PoissonSampled.loss``,
        ``WithinTotalVariation.loss``,
        ``Parallel.losses``) are dicts of the same form.

    Returns
    -------
    PrivacyLoss
        The rebuilt descriptor.

    Raises
    ------
    ValueError
        For a non-dict, an unknown type, or a missing, unexpected or bad field (naming the
        type and what is wrong).
    """
    if not isinstance(data, dict):
        raise ValueError(f"privacy-loss data must be a dict, got {type(data).__name__}")
    data = dict(data)
    name = data.pop("type", None)
    if name not in _REGISTRY:
        raise ValueError(f"unknown privacy-loss type {name!r}")
    try:
        if name in ("PoissonSampled", "WithinTotalVariation"):
            if "loss" not in data:
                raise ValueError("missing the field 'loss'")
            data["loss"] = loss_from_dict(data["loss"])
        if name == "Parallel":
            if "losses" not in data or not isinstance(data["losses"], list):
                raise ValueError("the field 'losses' must be a list")
            data["losses"] = tuple(loss_from_dict(d) for d in data["losses"])
        return _REGISTRY[name](**data)
    except TypeError as exc:  # a missing or unexpected field
        raise ValueError(f"invalid {name} data: {exc}") from None


def _fields(obj: Any, *names: str) -> dict[str, Any]:
    return {"type": type(obj).__name__, **{n: getattr(obj, n) for n in names}}


def _lse(v: np.ndarray) -> float:
    """log Σ e^v, stably."""
    m = float(np.max(v))
    return m + math.log(float(np.sum(np.exp(v - m))))


def _log_or_minus_inf(arg: np.ndarray) -> np.ndarray:
    """log(arg) where arg > 0, and -inf elsewhere (a threshold no loss value is below)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(arg > 0, np.log(np.where(arg > 0, arg, 1.0)), -np.inf)
