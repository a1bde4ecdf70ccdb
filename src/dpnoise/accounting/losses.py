"""Privacy-loss descriptors: what one release spends, in the richest form it has.

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
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Dict, Optional, Sequence, Tuple

import numpy as np

from .. import _validate as check
from ._numeric import log_normal_cdf, normal_cdf, normal_sf

Atoms = Tuple[np.ndarray, np.ndarray, float]  # (losses, P-masses, P-mass at +inf loss)
Tails = Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # P(L>e), Q(L>e), P(L<=e), Q(L<=e)

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
    def pure_epsilon(self) -> Optional[float]:
        return None

    def approx_dp(self) -> Optional[Tuple[float, float]]:
        eps = self.pure_epsilon()
        return None if eps is None else (eps, 0.0)

    def zcdp_rho(self) -> Optional[float]:
        eps = self.pure_epsilon()
        return None if eps is None else 0.5 * eps * eps  # ε-DP ⇒ ε²/2-zCDP (Bun–Steinke 2016, Prop. 1.4)

    def rdp(self, alpha: float) -> Optional[float]:
        """Rényi-DP ε(α) for α > 1 (max over both directions), or None."""
        atoms = [self._loss_atoms(d) for d in self._directions()]
        if any(a is None for a in atoms):
            rho = self.zcdp_rho()
            return None if rho is None else alpha * rho
        return max(_atoms_rdp(a, alpha) for a in atoms if a is not None)

    def has_profile(self) -> bool:
        d = self._directions()[0]
        return self._loss_atoms(d) is not None or self._loss_tails(np.zeros(1), d) is not None

    def delta_for_epsilon(self, epsilon: float | np.ndarray) -> Any:
        """The exact δ(ε) of one use (hockey-stick divergence, max over directions)."""
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
        """The least ε with δ(ε) <= delta for one use (bisection on the exact profile)."""
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
    def _directions(self) -> Tuple[str, ...]:
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
    def to_dict(self) -> Dict[str, Any]:
        raise NotImplementedError


_REGISTRY: Dict[str, Callable[..., PrivacyLoss]] = {}


def _register(cls: Any) -> Any:
    _REGISTRY[cls.__name__] = cls
    return cls


def loss_from_dict(data: Dict[str, Any]) -> PrivacyLoss:
    """Rebuild a descriptor from ``to_dict()`` output (used to reload budget ledgers).
    ValueError (naming the type and what is wrong) for unknown types and missing or bad fields."""
    if not isinstance(data, dict):
        raise ValueError(f"privacy-loss data must be a dict, got {type(data).__name__}")
    data = dict(data)
    name = data.pop("type", None)
    if name not in _REGISTRY:
        raise ValueError(f"unknown privacy-loss type {name!r}")
    try:
        if name == "PoissonSampled":
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


def _fields(obj: Any, *names: str) -> Dict[str, Any]:
    return {"type": type(obj).__name__, **{n: getattr(obj, n) for n in names}}


# ------------------------------------------------------------------ plain guarantees
@_register
@dataclass(frozen=True)
class PureDP(PrivacyLoss):
    """ε-differential privacy. Its worst case is binary randomized response (Kairouz, Oh &
    Viswanath 2015), which is the privacy-loss distribution the PLD accountant uses."""

    epsilon: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check.nonnegative(self.epsilon, "epsilon"))

    def pure_epsilon(self) -> float:
        return self.epsilon

    def _loss_atoms(self, direction: str) -> Atoms:
        return _rr_atoms(self.epsilon, 2)

    def to_dict(self) -> Dict[str, Any]:
        return _fields(self, "epsilon")


@_register
@dataclass(frozen=True)
class ApproxDP(PrivacyLoss):
    """(ε, δ)-differential privacy; dominated by randomized response with an extra δ atom of
    infinite loss (Kairouz, Oh & Viswanath 2015, Thm 2.1)."""

    epsilon: float
    delta: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check.nonnegative(self.epsilon, "epsilon"))
        object.__setattr__(self, "delta", check.probability(self.delta, "delta"))

    def pure_epsilon(self) -> Optional[float]:
        return self.epsilon if self.delta == 0 else None

    def approx_dp(self) -> Tuple[float, float]:
        return self.epsilon, self.delta

    def zcdp_rho(self) -> Optional[float]:
        return 0.5 * self.epsilon**2 if self.delta == 0 else None

    def _loss_atoms(self, direction: str) -> Atoms:
        losses, masses, _ = _rr_atoms(self.epsilon, 2)
        return losses, masses * (1.0 - self.delta), self.delta

    def to_dict(self) -> Dict[str, Any]:
        return _fields(self, "epsilon", "delta")


@_register
@dataclass(frozen=True)
class ZCDP(PrivacyLoss):
    """ρ-zero-concentrated DP (Bun & Steinke 2016): Rényi divergence <= αρ for every α > 1."""

    rho: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "rho", check.nonnegative(self.rho, "rho"))

    def approx_dp(self) -> None:
        return None

    def zcdp_rho(self) -> float:
        return self.rho

    def rdp(self, alpha: float) -> float:
        return alpha * self.rho

    def to_dict(self) -> Dict[str, Any]:
        return _fields(self, "rho")


@_register
@dataclass(frozen=True)
class RDP(PrivacyLoss):
    """A Rényi-DP curve given at finitely many orders (Mironov 2017). Between orders the value at
    the next larger order is used (the curve is non-decreasing in α, so this is an upper bound);
    beyond the largest order nothing is claimed (∞)."""

    orders: Tuple[float, ...]
    epsilons: Tuple[float, ...]

    def __post_init__(self) -> None:
        orders = tuple(check.real(a, "orders") for a in self.orders)
        eps = tuple(check.nonnegative(e, "epsilons") if e != math.inf else math.inf
                    for e in (check.real(v, "epsilons") for v in self.epsilons))
        if len(orders) == 0 or len(orders) != len(eps):
            raise ValueError("orders and epsilons must be non-empty and of equal length")
        if any(not a > 1 or math.isinf(a) for a in orders):
            raise ValueError("every RDP order must be finite and > 1")
        idx = np.argsort(orders)
        object.__setattr__(self, "orders", tuple(orders[i] for i in idx))
        object.__setattr__(self, "epsilons", tuple(eps[i] for i in idx))

    def approx_dp(self) -> None:
        return None

    def zcdp_rho(self) -> None:
        return None

    def rdp(self, alpha: float) -> float:
        i = int(np.searchsorted(np.asarray(self.orders), alpha, side="left"))
        return math.inf if i >= len(self.orders) else self.epsilons[i]

    def to_dict(self) -> Dict[str, Any]:
        return {"type": "RDP", "orders": list(self.orders), "epsilons": list(self.epsilons)}


# ------------------------------------------------------------------ additive noise
@_register
@dataclass(frozen=True)
class Laplace(PrivacyLoss):
    """The Laplace mechanism: noise density ∝ exp(-|x|/scale), L1 sensitivity Δ.
    Pure (Δ/scale)-DP (Dwork–Roth Thm 3.6); exact RDP from Mironov 2017 (Table II); its loss
    has atoms ±Δ/b and a uniform-in-exponent middle part (closed form below)."""

    scale: float
    sensitivity: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "scale", check.positive(self.scale, "scale"))
        object.__setattr__(self, "sensitivity", check.positive(self.sensitivity, "sensitivity"))
        check.loss_ratio(self.sensitivity, self.scale, "sensitivity", "scale")

    @property
    def _a(self) -> float:
        return self.sensitivity / self.scale

    def pure_epsilon(self) -> float:
        return self._a

    def rdp(self, alpha: float) -> float:
        # Mironov 2017, Table II: 1/(α-1) log( α/(2α-1) e^{(α-1)a} + (α-1)/(2α-1) e^{-αa} )
        a = self._a
        t1 = math.log(alpha / (2 * alpha - 1)) + (alpha - 1) * a
        t2 = math.log((alpha - 1) / (2 * alpha - 1)) - alpha * a
        m = max(t1, t2)
        return min(a, (m + math.log(math.exp(t1 - m) + math.exp(t2 - m))) / (alpha - 1))

    def _loss_tails(self, eps: np.ndarray, direction: str) -> Tails:
        # P = Lap(Δ, b), Q = Lap(0, b); L = (|x| - |x-Δ|)/b ∈ [-a, a] with atoms at ±a.
        a = self._a
        e = np.asarray(eps, dtype=float)
        mid = (e >= -a) & (e < a)
        em = np.where(mid, e, 0.0)
        p_sf = np.where(e < -a, 1.0, np.where(mid, 1.0 - 0.5 * np.exp(-(a - em) / 2), 0.0))
        q_sf = np.where(e < -a, 1.0, np.where(mid, 0.5 * np.exp(-(a + em) / 2), 0.0))
        p_cdf = np.where(e < -a, 0.0, np.where(mid, 0.5 * np.exp(-(a - em) / 2), 1.0))
        q_cdf = np.where(e < -a, 0.0, np.where(mid, 1.0 - 0.5 * np.exp(-(a + em) / 2), 1.0))
        return p_sf, q_sf, p_cdf, q_cdf

    def _profile(self, eps: np.ndarray, direction: str) -> np.ndarray:
        # δ(ε) = 1 - e^{(ε-a)/2} on [-a, a]; 1 - e^ε below; 0 above (derived from the tails above)
        a = self._a
        e = np.asarray(eps, dtype=float)
        return np.where(e >= a, 0.0, np.where(e <= -a, -np.expm1(np.minimum(e, 0.0)),
                                              -np.expm1(np.minimum((e - a) / 2, 0.0))))

    def _logpdf_pair(self, x: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        b = self.scale
        return -np.abs(x - self.sensitivity) / b, -np.abs(x) / b

    def _integration_window(self, alpha: float) -> Tuple[float, float, float]:
        b = self.scale
        return -60 * b, self.sensitivity + 60 * b, min(b, self.sensitivity) / 200

    def to_dict(self) -> Dict[str, Any]:
        return _fields(self, "scale", "sensitivity")


@_register
@dataclass(frozen=True)
class DiscreteLaplace(PrivacyLoss):
    """Discrete Laplace on Z, P(x) ∝ exp(-|x|/scale), integer sensitivity Δ: (Δ/scale)-DP
    (Ghosh, Roughgarden & Sundararajan 2009; CKS 2020 §2). Its loss takes Δ+1 values exactly."""

    scale: float
    sensitivity: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "scale", check.positive(self.scale, "scale"))
        object.__setattr__(self, "sensitivity", check.integer_sensitivity(self.sensitivity))
        if self.sensitivity > 10_000_000:
            raise ValueError("sensitivity of a discrete mechanism is limited to 10^7 (grid units)")
        check.loss_ratio(self.sensitivity, self.scale, "sensitivity", "scale")

    def pure_epsilon(self) -> float:
        return self.sensitivity / self.scale

    def _loss_atoms(self, direction: str) -> Atoms:
        # P = DLap centred at Δ, Q = DLap at 0; L(x) = (|x| - |x-Δ|)/t.
        t, d = self.scale, self.sensitivity
        r = math.exp(-1.0 / t)
        c = (1 - r) / (1 + r)  # pmf at the mode
        x = np.arange(1, d, dtype=float)
        losses = np.concatenate([[-d / t], (2 * x - d) / t, [d / t]])
        masses = np.concatenate([[math.exp(-d / t) / (1 + r)], c * np.exp(-(d - x) / t), [1 / (1 + r)]])
        return losses, masses, 0.0

    def to_dict(self) -> Dict[str, Any]:
        return _fields(self, "scale", "sensitivity")


class _GaussianNoise(PrivacyLoss):
    """What the Gaussian and discrete Gaussian share: no pure or single (ε, δ) form, and
    ρ = Δ²/(2σ²) zCDP, i.e. RDP αρ (Bun–Steinke 2016 Prop. 1.6; CKS 2020 Prop. 5)."""

    sigma: float
    sensitivity: Any

    def approx_dp(self) -> None:
        return None

    def zcdp_rho(self) -> float:
        return self.sensitivity**2 / (2 * self.sigma**2)

    def rdp(self, alpha: float) -> float:
        return alpha * self.zcdp_rho()


@_register
@dataclass(frozen=True)
class Gaussian(_GaussianNoise):
    """The Gaussian mechanism N(0, σ²), L2 sensitivity Δ. Exact profile of Balle & Wang 2018
    (Thm 8): δ(ε) = Φ(Δ/2σ - εσ/Δ) - e^ε Φ(-Δ/2σ - εσ/Δ); ρ = Δ²/(2σ²) zCDP (Bun–Steinke Prop 1.6)."""

    sigma: float
    sensitivity: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "sigma", check.positive(self.sigma, "sigma"))
        object.__setattr__(self, "sensitivity", check.positive(self.sensitivity, "sensitivity"))
        check.loss_ratio(self.sensitivity, self.sigma, "sensitivity", "sigma")

    def _loss_tails(self, eps: np.ndarray, direction: str) -> Tails:
        # L ~ N(μ, s²) under P and N(-μ, s²) under Q, μ = Δ²/2σ², s = Δ/σ
        s = self.sensitivity / self.sigma
        mu = 0.5 * s * s
        e = np.asarray(eps, dtype=float)
        return (normal_sf((e - mu) / s), normal_sf((e + mu) / s),
                normal_cdf((e - mu) / s), normal_cdf((e + mu) / s))

    def _profile(self, eps: np.ndarray, direction: str) -> np.ndarray:
        s = self.sensitivity / self.sigma
        e = np.asarray(eps, dtype=float)
        la = log_normal_cdf(0.5 * s - e / s)
        lb = e + log_normal_cdf(-0.5 * s - e / s)
        with np.errstate(over="ignore", invalid="ignore", under="ignore"):
            out = np.exp(la) * -np.expm1(np.minimum(lb - la, 0.0))
        return np.where(np.isfinite(la), np.maximum(out, 0.0), 0.0)

    def _logpdf_pair(self, x: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        s2 = 2 * self.sigma**2
        return -((x - self.sensitivity) ** 2) / s2, -(x**2) / s2

    def _integration_window(self, alpha: float) -> Tuple[float, float, float]:
        sig, d = self.sigma, self.sensitivity
        return -40 * sig, alpha * d + 40 * sig, sig / 100

    def to_dict(self) -> Dict[str, Any]:
        return _fields(self, "sigma", "sensitivity")


# Above this many lattice points (of the c-coordinate loss) the discrete Gaussian's profile is
# taken from the proven vector bound (DiscreteGaussianVector) instead of the exact lattice pmf.
_DG_MAX_SUPPORT = 4_000_000
_UNIT_ROUNDOFF = 2.0**-53


@functools.lru_cache(maxsize=16)
def _dg_sum_atoms(sigma: float, shift: int, coordinates: int) -> Atoms:
    """The privacy-loss atoms of c independent discrete Gaussians each shifted by Δ.

    One coordinate: the loss at x (x ~ N_Z(Δ, σ²)) is (2xΔ - Δ²)/2σ²; c coordinates: the loss
    is (2SΔ - cΔ²)/2σ² with S the sum of c independent x, whose pmf is the c-fold convolution of
    the one-coordinate pmf, computed by repeated squaring with FFT convolutions: O(N log N log c)
    time and O(N) memory for N = c(2⌈14σ⌉+Δ+3) lattice points (the old c-step loop of direct
    convolutions was O(N²)). The floating error of the FFTs is bounded in ℓ1 by
    16·√N·u·log2(N)·(1 + log2 c) (u = 2^-53; the ℓ2 error of an FFT convolution is
    O(u log N)·‖a‖₂‖b‖₂, Higham 2002 §24.1) and added to the infinite-loss atom, with the
    truncation mass (< 1e-43 per coordinate), so the profile stays an upper bound."""
    k = math.ceil(14 * sigma) + 1  # mass beyond 14σ is below 1e-43
    x = np.arange(-k, shift + k + 1, dtype=float)
    s2 = 2 * sigma**2
    logp = -((x - shift) ** 2) / s2  # P centred at Δ
    w = np.exp(logp - logp.max())
    one = w / w.sum()
    masses, power, n = np.ones(1), one, coordinates
    used_fft = False
    while True:  # binary powering: masses = one^{*c}
        if n & 1:
            masses, fft = _convolve(masses, power)
            used_fft |= fft
        n >>= 1
        if not n:
            break
        power, fft = _convolve(power, power)
        used_fft |= fft
    size = masses.size
    fft_error = 0.0
    if used_fft:
        fft_error = 16 * math.sqrt(size) * _UNIT_ROUNDOFF * math.log2(size + 1) * \
            (1 + math.log2(coordinates))
    total = x[0] * coordinates + np.arange(size, dtype=float)
    losses = (2 * total * shift - coordinates * shift**2) / s2
    keep = masses > 0
    losses, masses = losses[keep], masses[keep]
    losses.setflags(write=False)
    masses.setflags(write=False)
    return losses, masses, min(1.0, 1e-43 * coordinates + fft_error)


def _convolve(a: np.ndarray, b: np.ndarray) -> Tuple[np.ndarray, bool]:
    """Linear convolution of two pmfs (direct when small, FFT otherwise, clipped at 0), and
    whether the FFT was used."""
    n = a.size + b.size - 1
    if a.size * b.size <= 250_000:
        return np.convolve(a, b), False
    size = 1 << (n - 1).bit_length()
    out = np.fft.irfft(np.fft.rfft(a, size) * np.fft.rfft(b, size), size)[:n]
    return np.clip(out, 0.0, None), True


@_register
@dataclass(frozen=True)
class DiscreteGaussian(_GaussianNoise):
    """Discrete Gaussian on Z, P(x) ∝ exp(-x²/2σ²), integer sensitivity Δ: ρ = Δ²/(2σ²)-zCDP
    (Canonne, Kamath & Steinke 2020, Prop. 5); exact profile by summing the pmf (CKS Thm 7).

    ``coordinates`` = c describes noise added independently to several integer outputs of which
    one neighbour moves at most c, each by at most Δ (a histogram under replace-one neighbours:
    two bins, by 1). The worst case shifts all c by Δ (the discrete Gaussian is log-concave, so
    a larger shift is never less distinguishable); its privacy loss is the sum of c independent
    one-coordinate losses, so ρ = cΔ²/(2σ²) (the L2 sensitivity √c Δ), and the exact profile
    comes from the c-fold convolution of the one-coordinate loss distribution (FFT powering,
    see ``_dg_sum_atoms``). The profile is the minimum of that and the proven bound of
    :class:`DiscreteGaussianVector` with L2 sensitivity √c Δ (whose neighbour relation contains
    this one); above 4·10^6 lattice points only the latter is used."""

    sigma: float
    sensitivity: int = 1
    coordinates: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "sigma", check.positive(self.sigma, "sigma"))
        object.__setattr__(self, "sensitivity", check.integer_sensitivity(self.sensitivity))
        object.__setattr__(self, "coordinates", check.count(self.coordinates, "coordinates"))
        if self.sigma > 1e150:
            raise OverflowError(f"sigma must be <= 1e150, got {self.sigma!r}")
        check.loss_ratio(self.sensitivity * math.sqrt(self.coordinates), self.sigma,
                         "sensitivity", "sigma")

    def zcdp_rho(self) -> float:
        return self.coordinates * self.sensitivity**2 / (2 * self.sigma**2)

    def _large(self) -> bool:
        return (28 * self.sigma + self.sensitivity + 3) * self.coordinates > _DG_MAX_SUPPORT

    def _vector(self) -> "DiscreteGaussianVector":
        return DiscreteGaussianVector(self.sigma, self.sensitivity * math.sqrt(self.coordinates),
                                      self.coordinates)

    def _loss_atoms(self, direction: str) -> Optional[Atoms]:
        if self._large():
            return None
        return _dg_sum_atoms(self.sigma, self.sensitivity, self.coordinates)

    def has_profile(self) -> bool:
        return True

    def _profile(self, eps: np.ndarray, direction: str) -> np.ndarray:
        e = np.asarray(eps, dtype=float)
        if self.coordinates == 1 and not self._large():
            return _atoms_profile(_dg_sum_atoms(self.sigma, self.sensitivity, 1), e)
        bound = self._vector()._profile(e, direction)
        if self._large():
            return bound
        return np.minimum(bound, _atoms_profile(
            _dg_sum_atoms(self.sigma, self.sensitivity, self.coordinates), e))

    def to_dict(self) -> Dict[str, Any]:
        return _fields(self, "sigma", "sensitivity", "coordinates")


# Smoothing widths a tried by DiscreteGaussianVector (any a in (0, σ) gives a valid bound).
_SMOOTHING_WIDTHS = (0.6, 0.75, 0.9, 1.05, 1.2, 1.35, 1.5, 1.75, 2.0, 2.5, 3.0)
# Multipliers of the near-optimal order tried by the vectorised zCDP → (ε, δ) conversion
# (any order α > 1 gives a valid bound; these bracket the optimum closely).
_ZCDP_ORDER_FACTORS = np.array([0.8, 0.9, 0.95, 1.0, 1.05, 1.1, 1.25])
_ZCDP_ORDER_GRID = 1.0 + np.geomspace(1e-3, 1e4, 57)


def _theta_ratio_log(a: float) -> float:
    """log(θ_max/θ_min) for θ_a(x) = Σ_k e^{-(k-x)²/2a²}, by Poisson summation
    θ_a(x) = √(2π) a (1 + 2Σ_{k>=1} e^{-2π²a²k²} cos 2πkx), so θ_max/θ_min <= (1+η)/(1-η) with
    η = 2Σ_{k>=1} e^{-2π²a²k²} (the Poisson summation formula, as CKS 2020 use it for the
    discrete Gaussian's normalising constant); 1e-190 bounds the terms k >= 8 for a >= 0.6."""
    eta = 2.0 * sum(math.exp(-2.0 * math.pi**2 * a * a * k * k) for k in range(1, 8)) + 1e-190
    if eta >= 1.0:
        return math.inf
    return math.log1p(eta) - math.log1p(-eta)


def _zcdp_delta_curve(rho: float, eps: np.ndarray) -> np.ndarray:
    """The ρ-zCDP → (ε, δ) conversion δ <= exp((α-1)(αρ - ε + log(1-1/α)) - log α)
    (CKS 2020, Prop. 12 / Cor. 13), vectorised: minimum over a few orders around
    α ≈ (ε + ρ)/(2ρ), the minimiser without the log terms, and over a fixed geometric grid."""
    e = np.asarray(eps, dtype=float)
    near = ((np.maximum(e, 0.0) + rho) / (2.0 * rho))[None, :] * _ZCDP_ORDER_FACTORS[:, None]
    grid = np.broadcast_to(_ZCDP_ORDER_GRID[:, None], (_ZCDP_ORDER_GRID.size, e.size))
    a = np.maximum(1.0 + 1e-9, np.concatenate([near, grid]))
    log_d = (a - 1.0) * (a * rho - e[None, :] + np.log1p(-1.0 / a)) - np.log(a)
    with np.errstate(over="ignore", under="ignore"):
        return np.minimum(1.0, np.exp(np.min(log_d, axis=0)))


@_register
@dataclass(frozen=True)
class DiscreteGaussianVector(PrivacyLoss):
    """Discrete Gaussian noise N_Z(0, σ²) added independently to each of ``dimension`` integer
    outputs, for neighbours whose outputs differ by an integer vector of L2 norm <=
    ``l2_sensitivity`` (a real, e.g. Δ/2^k + √d after rounding onto a grid).

    * zCDP: ρ = Δ²/(2σ²) (Canonne, Kamath & Steinke 2020, Thm 14), so RDP αρ.
    * Privacy profile (used by the PLD accountant, pessimistically discretised from it): the
      pointwise minimum of two proven upper bounds, each decreasing in ε:

      1. the smoothing bound (proof below): for every a in (0, σ), with σ_c = √(σ² - a²),
         r = θ_max/θ_min of the width-a theta function and R = r^d,
             δ(ε) <= R · δ_BW(Δ/σ_c, ε - 2 log R),
         where δ_BW(s, ε) = Φ(s/2 - ε/s) - e^ε Φ(-s/2 - ε/s) is the exact profile of the
         continuous Gaussian mechanism (Balle & Wang 2018, Thm 8);
      2. the zCDP conversion of ρ (CKS 2020, Prop. 12), the route used before.

      For d = 1 the exact profile of the one-coordinate discrete Gaussian with shift ⌊Δ⌋ (CKS
      2020, Thm 7; log-concavity makes the largest shift the worst) is used instead.

    Proof of 1. Let K be the channel R^d → Z^d that, given x, outputs y with probability
    Π_j e^{-(y_j - x_j)²/2a²}/θ_a(x_j), θ_a(x) = Σ_k e^{-(k - x)²/2a²}. Feed it X ~ N(μ, σ_c² I)
    with μ ∈ Z^d. Integrating the Gaussian product, the output pmf lies between
    c·e^{-||y-μ||²/2σ²}/θ_max^d and c·e^{-||y-μ||²/2σ²}/θ_min^d with σ² = σ_c² + a²; as it and
    the discrete Gaussian pmf P_μ are both normalised, their ratio lies in [1/R, R] at every y.
    Hence Σ_y (P_μ - e^ε P_0)_+ <= Σ_y (R P'_μ - e^ε P'_0/R)_+ = R·H_{e^{ε - 2 log R}}(P'_μ‖P'_0),
    and P'_μ, P'_0 are post-processings (by the same K) of N(μ, σ_c² I), N(0, σ_c² I), whose
    hockey-stick divergence is at most δ_BW(||μ||/σ_c, ·) <= δ_BW(Δ/σ_c, ·). The bound of θ
    comes from Poisson summation (see ``_theta_ratio_log``). □

    The Gaussian mechanisms calibrate σ with :func:`dpnoise.accounting.calibration.least_sigma`
    on this profile; it is within a fraction of a percent of the continuous analytic Gaussian
    once σ is a few grid units (σ_c/σ = √(1 - a²/σ²)), recovering most of the ~7% of noise
    that the zCDP route costs."""

    sigma: float
    l2_sensitivity: float
    dimension: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "sigma", check.positive(self.sigma, "sigma"))
        object.__setattr__(self, "l2_sensitivity",
                           check.positive(self.l2_sensitivity, "l2_sensitivity"))
        object.__setattr__(self, "dimension", check.count(self.dimension, "dimension"))
        if self.sigma > 1e150:
            raise OverflowError(f"sigma must be <= 1e150, got {self.sigma!r}")
        check.loss_ratio(self.l2_sensitivity, self.sigma, "l2_sensitivity", "sigma")

    def approx_dp(self) -> None:
        return None

    def zcdp_rho(self) -> float:
        return self.l2_sensitivity**2 / (2 * self.sigma**2)

    def rdp(self, alpha: float) -> float:
        return alpha * self.zcdp_rho()

    def has_profile(self) -> bool:
        return True

    def _exact_one(self) -> Optional["DiscreteGaussian"]:
        if self.dimension != 1:
            return None
        shift = math.floor(self.l2_sensitivity)
        if shift < 1:
            return None  # the only integer neighbour is the input itself
        exact = DiscreteGaussian(self.sigma, shift)
        return None if exact._large() else exact

    def _smoothing_bound(self, eps: np.ndarray) -> np.ndarray:
        best = np.ones(eps.shape)
        d = self.dimension
        for a in _SMOOTHING_WIDTHS:
            if a >= 0.98 * self.sigma:
                break
            log_r = d * _theta_ratio_log(a)
            if not log_r < 0.05:
                continue
            sc = math.sqrt(self.sigma**2 - a * a)
            g = Gaussian(sc, self.l2_sensitivity)._profile(eps - 2.0 * log_r, "remove")
            best = np.minimum(best, math.exp(log_r) * g)
        return best

    def _profile(self, eps: np.ndarray, direction: str) -> np.ndarray:
        e = np.asarray(eps, dtype=float)
        if self.l2_sensitivity < 1.0:
            # no two distinct integer vectors are this close: the neighbours give equal outputs
            return np.where(e >= 0, 0.0, -np.expm1(np.minimum(e, 0.0)))
        exact = self._exact_one()
        if exact is not None:
            return exact._profile(e, direction)
        out = np.minimum(self._smoothing_bound(e), _zcdp_delta_curve(self.zcdp_rho(), e))
        # δ(ε) >= 1 - e^ε holds for every pair; keep the bound a valid profile below ε = 0
        return np.maximum(out, -np.expm1(np.minimum(e, 0.0)))

    def to_dict(self) -> Dict[str, Any]:
        return _fields(self, "sigma", "l2_sensitivity", "dimension")


# ------------------------------------------------------------------ discrete outputs
@_register
@dataclass(frozen=True)
class RandomizedResponse(PrivacyLoss):
    """k-ary randomized response keeping the true value with probability e^ε/(e^ε + k - 1)
    (Warner 1965; Kairouz, Oh & Viswanath 2016 for k > 2): ε-DP, loss values ±ε and 0."""

    epsilon: float
    categories: int = 2

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check.nonnegative(self.epsilon, "epsilon"))
        k = check.integer(self.categories, "categories")
        if k < 2:
            raise ValueError(f"categories must be >= 2, got {k}")
        object.__setattr__(self, "categories", int(k))

    def pure_epsilon(self) -> float:
        return self.epsilon

    def _loss_atoms(self, direction: str) -> Atoms:
        return _rr_atoms(self.epsilon, self.categories)

    def to_dict(self) -> Dict[str, Any]:
        return _fields(self, "epsilon", "categories")


_NOISY_MAX_METHODS = ("laplace", "permute_and_flip", "exponential_mechanism")


@_register
@dataclass(frozen=True)
class ReportNoisyMax(PrivacyLoss):
    """Selection of one candidate by report-noisy-max.

    All three methods are ε-DP for scores of sensitivity 1 as calibrated by the selection module:
    Laplace noise (Dwork–Roth Claim 3.9), permute-and-flip (McKenna & Sheldon 2020) and the
    exponential mechanism (McSherry & Talwar 2007). The exponential mechanism is moreover
    ε-bounded-range, hence ε²/8-zCDP (Cesar & Rogers 2021, Lemma 3.2), which the zCDP and RDP
    accountants use. The PLD accountant uses the pure-DP worst case (randomized response)."""

    epsilon: float
    method: str = "exponential_mechanism"

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check.nonnegative(self.epsilon, "epsilon"))
        if self.method not in _NOISY_MAX_METHODS:
            raise ValueError(f"method must be one of {_NOISY_MAX_METHODS}, got {self.method!r}")

    def pure_epsilon(self) -> float:
        return self.epsilon

    def zcdp_rho(self) -> float:
        if self.method == "exponential_mechanism":
            return self.epsilon**2 / 8
        return self.epsilon**2 / 2

    def rdp(self, alpha: float) -> float:
        tight = _atoms_rdp(_rr_atoms(self.epsilon, 2), alpha)
        return min(tight, alpha * self.zcdp_rho())

    def _loss_atoms(self, direction: str) -> Atoms:
        return _rr_atoms(self.epsilon, 2)

    def to_dict(self) -> Dict[str, Any]:
        return _fields(self, "epsilon", "method")


# ------------------------------------------------------------------ transformations
def _log_or_minus_inf(arg: np.ndarray) -> np.ndarray:
    """log(arg) where arg > 0, and -inf elsewhere (a threshold no loss value is below)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(arg > 0, np.log(np.where(arg > 0, arg, 1.0)), -np.inf)


@_register
@dataclass(frozen=True)
class PoissonSampled(PrivacyLoss):
    """``loss`` run on a Poisson subsample (each record kept independently with probability
    ``rate``), under add/remove neighbours.

    remove: P' = (1-q)Q + qP vs Q, whose loss is log(1 - q + q e^L);  add: Q vs P'.
    Profile: δ'(ε) = q δ(log(1 + (e^ε - 1)/q)) for remove (Balle, Barthe & Gaboardi 2018, Thm 8
    in profile form; Zhu, Dong & Wang 2022, Prop. 30), computed here from the loss distribution.
    Pure/approximate DP: (log(1 + q(e^ε - 1)), qδ) (BBG 2018). RDP: numerical integration of
    E_Q[(P'/Q)^α] and E_Q[(Q/P')^{α-1}] (Mironov, Talwar & Zhang 2019, §3), max of both."""

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

    def pure_epsilon(self) -> Optional[float]:
        e = self.loss.pure_epsilon()
        return None if e is None else self._amplify(e)

    def approx_dp(self) -> Optional[Tuple[float, float]]:
        ed = self.loss.approx_dp()
        return None if ed is None else (self._amplify(ed[0]), self.rate * ed[1])

    def zcdp_rho(self) -> None:
        return None  # subsampling does not amplify zCDP in closed form; use 'rdp' or 'pld'

    def rdp(self, alpha: float) -> Optional[float]:
        base_atoms = self.loss._loss_atoms("remove")
        if base_atoms is not None:
            return max(_atoms_rdp(a, alpha) for a in (self._loss_atoms(d) for d in DIRECTIONS)
                       if a is not None)
        if not hasattr(self.loss, "_logpdf_pair"):
            return None
        return self._rdp_numeric(alpha)

    def _rdp_numeric(self, alpha: float) -> float:
        lo, hi, dx = self.loss._integration_window(alpha)  # type: ignore[attr-defined]
        n = int(min(max((hi - lo) / dx, 4000), 2_000_000))
        x = np.linspace(lo, hi, n + 1)
        lp, lq = self.loss._logpdf_pair(x)  # type: ignore[attr-defined]
        q = self.rate
        # log P'(x) = log((1-q) Q + q P)
        lmix = np.logaddexp(math.log1p(-q) + lq, math.log(q) + lp) if q < 1 else lp
        w = np.full(x.shape, dx)
        w[0] = w[-1] = dx / 2  # trapezoid rule; log of the normaliser cancels below
        lw = np.log(w)
        lz = _lse(lq + lw)  # normaliser of Q on the grid (both densities share it)
        rem = _lse(alpha * lmix + (1 - alpha) * lq + lw) - lz
        add = _lse(alpha * lq + (1 - alpha) * lmix + lw) - lz
        return max(0.0, rem / (alpha - 1), add / (alpha - 1))

    def _loss_atoms(self, direction: str) -> Optional[Atoms]:
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

    def _loss_tails(self, eps: np.ndarray, direction: str) -> Optional[Tails]:
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

    def _profile(self, eps: np.ndarray, direction: str) -> Optional[np.ndarray]:
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

    def to_dict(self) -> Dict[str, Any]:
        return {"type": "PoissonSampled", "loss": self.loss.to_dict(), "rate": self.rate}


def _lse(v: np.ndarray) -> float:
    m = float(np.max(v))
    return m + math.log(float(np.sum(np.exp(v - m))))


@_register
@dataclass(frozen=True)
class Parallel(PrivacyLoss):
    """Parallel composition over disjoint partitions: one record touches one partition, so the
    release is as private as its least private part (McSherry 2009, Thm 4): every conversion is
    the maximum over the parts (profiles too, so the PLD accountant gets a valid dominating curve).
    Under replace-one neighbours this assumes the partition of a record does not change."""

    losses: Tuple[PrivacyLoss, ...]
    symmetric: ClassVar[bool] = False

    def __post_init__(self) -> None:
        losses = tuple(self.losses)
        if not losses or not all(isinstance(x, PrivacyLoss) for x in losses):
            raise TypeError("losses must be a non-empty sequence of privacy-loss descriptors")
        object.__setattr__(self, "losses", losses)

    def _max(self, values: Sequence[Optional[float]]) -> Optional[float]:
        return None if any(v is None for v in values) else max(v for v in values if v is not None)

    def pure_epsilon(self) -> Optional[float]:
        return self._max([x.pure_epsilon() for x in self.losses])

    def approx_dp(self) -> Optional[Tuple[float, float]]:
        pairs = [x.approx_dp() for x in self.losses]
        if any(p is None for p in pairs):
            return None
        return max(p[0] for p in pairs if p), max(p[1] for p in pairs if p)

    def zcdp_rho(self) -> Optional[float]:
        return self._max([x.zcdp_rho() for x in self.losses])

    def rdp(self, alpha: float) -> Optional[float]:
        return self._max([x.rdp(alpha) for x in self.losses])

    def _profile(self, eps: np.ndarray, direction: str) -> Optional[np.ndarray]:
        out = np.zeros(np.shape(eps))
        for x in self.losses:
            d = direction if not x.symmetric else "remove"
            p = x._profile(eps, d)
            if p is None:
                return None
            out = np.maximum(out, p)
        return out

    def has_profile(self) -> bool:
        return all(x.has_profile() for x in self.losses)

    def to_dict(self) -> Dict[str, Any]:
        return {"type": "Parallel", "losses": [x.to_dict() for x in self.losses]}
