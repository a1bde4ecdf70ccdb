"""The Gaussian family: the Gaussian, the discrete Gaussian (one or several coordinates) and
the discrete Gaussian on a vector with an L2 sensitivity."""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ... import _validate as check
from ..._numeric import log_normal_cdf, normal_cdf, normal_sf
from .base import Atoms, PrivacyLoss, Tails, _atoms_profile, _fields, _register


class _GaussianNoise(PrivacyLoss):
    """What the Gaussian, discrete Gaussian and discrete Gaussian vector share: no pure or single
    (ε, δ) form, and ρ = Δ²/(2σ²) zCDP, i.e. RDP αρ (Bun–Steinke 2016 Prop. 1.6; CKS 2020
    Prop. 5); Δ is the L2 sensitivity (``l2_sensitivity`` for the vector)."""

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
    (Thm 8): δ(ε) = Φ(Δ/2σ - εσ/Δ) - e^ε Φ(-Δ/2σ - εσ/Δ); ρ = Δ²/(2σ²) zCDP (Bun–Steinke Prop 1.6).

    Parameters
    ----------
    sigma : float
        σ in (0, 1e150].
    sensitivity : float, default 1.0
        The L2 sensitivity Δ > 0.

    Raises
    ------
    ValueError
        For a non-positive σ or Δ, or Δ/σ too large.
    OverflowError
        For σ above 1e150.
    """

    sigma: float
    sensitivity: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "sigma", check.positive(self.sigma, "sigma"))
        object.__setattr__(self, "sensitivity", check.positive(self.sensitivity, "sensitivity"))
        if self.sigma > 1e150:  # sigma² must stay a finite double
            raise OverflowError(f"sigma must be <= 1e150, got {self.sigma!r}")
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

    def _logpdf_pair(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        s2 = 2 * self.sigma**2
        return -((x - self.sensitivity) ** 2) / s2, -(x**2) / s2

    def _integration_window(self, alpha: float) -> tuple[float, float, float]:
        sig, d = self.sigma, self.sensitivity
        return -40 * sig, alpha * d + 40 * sig, sig / 100

    def to_dict(self) -> dict[str, Any]:
        """``{"type": "Gaussian", "sigma": σ, "sensitivity": Δ}``."""
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
    convolutions was O(N²)); when N is much larger than the sub-Gaussian window of S, only the
    window is computed (``_dg_sum_atoms_windowed``). The floating error of the FFTs is bounded in ℓ1 by
    16·√N·u·log2(N)·(1 + log2 c) (u = 2^-53; the ℓ2 error of an FFT convolution is
    O(u log N)·‖a‖₂‖b‖₂, Higham 2002 §24.1) and added to the infinite-loss atom, with the
    truncation mass (< 1e-43 per coordinate), so the profile stays an upper bound."""
    k = math.ceil(14 * sigma) + 1  # mass beyond 14σ is below 1e-43
    x = np.arange(-k, shift + k + 1, dtype=float)
    s2 = 2 * sigma**2
    logp = -((x - shift) ** 2) / s2  # P centred at Δ
    w = np.exp(logp - logp.max())
    one = w / w.sum()
    full = coordinates * (x.size - 1) + 1
    window = _dg_window(sigma, coordinates)
    if full > 4 * window and full > 1 << 16:
        return _dg_sum_atoms_windowed(one, x, sigma, shift, coordinates, window)
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


# mass of the c-coordinate sum left outside its window (both tails together)
_DG_WINDOW_TAIL = 1e-40


def _dg_window(sigma: float, coordinates: int) -> int:
    """Half-width t of a window around cΔ holding all but _DG_WINDOW_TAIL of the sum S: the
    discrete Gaussian (also truncated symmetrically about its centre) is σ²-sub-Gaussian
    (CKS 2020, §2: E e^{λ(X-μ)} <= e^{λ²σ²/2}; the truncation only lowers E cosh λ(X-μ)), so
    P(|S - cΔ| >= t) <= 2 exp(-t²/2cσ²) (Chernoff)."""
    return math.ceil(sigma * math.sqrt(2 * coordinates * math.log(2 / _DG_WINDOW_TAIL))) + 1


def _dg_sum_atoms_windowed(one: np.ndarray, x: np.ndarray, sigma: float, shift: int,
                           coordinates: int, half: int) -> Atoms:
    """c-fold sum restricted to [cΔ - t, cΔ + t]: one FFT of length M >= 2t + 1 of the
    one-coordinate pmf wrapped mod M, raised to the c-th power (the circular convolution of c
    copies), read back on the window. Mass from outside the window aliased into it only adds
    mass (<= _DG_WINDOW_TAIL); the mass outside and the float error of the power (bounded by
    4·L·(c+1)·u·(log2 M + 2)·mean|F|^c on the L window points, the error of each transform
    being O(u log M) relative to ‖F‖, Higham 2002 §24.1) go to the infinite-loss atom."""
    c = coordinates
    lo = max(int(x[0]) * c, c * shift - half)
    hi = min(int(x[-1]) * c, c * shift + half)
    length = hi - lo + 1
    m = 1 << (length - 1).bit_length()
    arr = np.zeros(m)
    np.add.at(arr, x.astype(np.int64) % m, one)
    spec = np.fft.rfft(arr) ** c
    mean_abs = (abs(spec[0]) + 2 * float(np.sum(np.abs(spec[1:-1]))) + abs(spec[-1])) / m
    circ = np.fft.irfft(spec, m)
    total = np.arange(lo, hi + 1, dtype=np.int64)
    masses = np.clip(circ[total % m], 0.0, None)
    error = 4 * length * (c + 1) * _UNIT_ROUNDOFF * (math.log2(m) + 2) * mean_abs
    s2 = 2 * sigma**2
    losses = (2 * total.astype(float) * shift - c * shift**2) / s2
    keep = masses > 0
    losses, masses = losses[keep], masses[keep]
    losses.setflags(write=False)
    masses.setflags(write=False)
    return losses, masses, min(1.0, 1e-43 * c + _DG_WINDOW_TAIL + error)


def _convolve(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, bool]:
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
    this one); above 4·10^6 lattice points only the latter is used.

    Parameters
    ----------
    sigma : float
        σ in (0, 1e150].
    sensitivity : int, default 1
        The integer sensitivity Δ per coordinate.
    coordinates : int, default 1
        c, the outputs one neighbour moves.

    Raises
    ------
    ValueError
        For a bad σ, Δ or c, or √c Δ/σ too large.
    OverflowError
        For σ above 1e150.
    """

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
        """ρ = cΔ²/(2σ²) (c coordinates)."""
        return self.coordinates * self.sensitivity**2 / (2 * self.sigma**2)

    def _large(self) -> bool:
        full = (2 * math.ceil(14 * self.sigma) + self.sensitivity + 3) * self.coordinates
        return min(full, 2 * _dg_window(self.sigma, self.coordinates) + 1) > _DG_MAX_SUPPORT

    def _vector(self) -> DiscreteGaussianVector:
        return DiscreteGaussianVector(self.sigma, self.sensitivity * math.sqrt(self.coordinates),
                                      self.coordinates)

    def _loss_atoms(self, direction: str) -> Atoms | None:
        if self._large():
            return None
        return _dg_sum_atoms(self.sigma, self.sensitivity, self.coordinates)

    def has_profile(self) -> bool:
        """True: exact from the lattice pmf, or the proven vector bound."""
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

    def to_dict(self) -> dict[str, Any]:
        """``{"type": "DiscreteGaussian", "sigma", "sensitivity", "coordinates"}``."""
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
class DiscreteGaussianVector(_GaussianNoise):
    """Discrete Gaussian noise N_Z(0, σ²) added independently to each of ``dimension`` integer
    outputs, for neighbours whose outputs differ by an integer vector of L2 norm <=
    ``l2_sensitivity`` (a real, e.g. Δ/2^k + √d after rounding onto a grid).

    * zCDP: ρ = Δ²/(2σ²) (Canonne, Kamath & Steinke 2020, the multivariate discrete Gaussian's
      concentrated DP, Thm 14 of arXiv:2004.00010), so RDP αρ.
    * Privacy profile (used by the PLD accountant, pessimistically discretised from it): the
      pointwise minimum of two proven upper bounds, each decreasing in ε:

      1. the smoothing bound (proved in docs/accounting.md; sketch below): for every a in
         (0, σ), with σ_c = √(σ² - a²),
         r = θ_max/θ_min of the width-a theta function and R = r^d,

             δ(ε) <= R · δ_BW(Δ/σ_c, ε - 2 log R),

         where δ_BW(s, ε) = Φ(s/2 - ε/s) - e^ε Φ(-s/2 - ε/s) is the exact profile of the
         continuous Gaussian mechanism (Balle & Wang 2018, Thm 8);
      2. the zCDP conversion of ρ (CKS 2020, Prop. 12), the route used before.

      For d = 1 the exact profile of the one-coordinate discrete Gaussian with shift ⌊Δ⌋ (CKS
      2020, Thm 7; log-concavity makes the largest shift the worst) is used instead.

    Proof of 1 (in full in docs/accounting.md). Let K be the channel R^d → Z^d that, given x, outputs y with probability
    Π_j e^{-(y_j - x_j)²/2a²}/θ_a(x_j), θ_a(x) = Σ_k e^{-(k - x)²/2a²}. Feed it X ~ N(μ, σ_c² I)
    with μ ∈ Z^d. Integrating the Gaussian product, the output pmf lies between
    c·e^{-||y-μ||²/2σ²}/θ_max^d and c·e^{-||y-μ||²/2σ²}/θ_min^d with σ² = σ_c² + a²; as it and
    the discrete Gaussian pmf P_μ are both normalised, their ratio lies in [1/R, R] at every y.
    Hence Σ_y (P_μ - e^ε P_0)_+ <= Σ_y (R P'_μ - e^ε P'_0/R)_+ = R·H_{e^{ε - 2 log R}}(P'_μ‖P'_0),
    and P'_μ, P'_0 are post-processings (by the same K) of N(μ, σ_c² I), N(0, σ_c² I), whose
    hockey-stick divergence is at most δ_BW(||μ||/σ_c, ·) <= δ_BW(Δ/σ_c, ·). The bound of θ
    comes from Poisson summation (see ``_theta_ratio_log``). □

    The Gaussian mechanisms calibrate σ with :func:`dpnoise.accounting.least_sigma`
    on this profile; it is within a fraction of a percent of the continuous analytic Gaussian
    once σ is a few grid units (σ_c/σ = √(1 - a²/σ²)), recovering most of the ~7% of noise
    that the zCDP route costs.

    Parameters
    ----------
    sigma : float
        σ in (0, 1e150], in integer units.
    l2_sensitivity : float
        The L2 norm bound Δ of a neighbour's shift (> 0, real).
    dimension : int
        d, the number of outputs.

    Raises
    ------
    ValueError
        For a bad σ, Δ or d, or Δ/σ too large.
    OverflowError
        For σ above 1e150.
    """

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

    def zcdp_rho(self) -> float:
        """ρ = Δ²/(2σ²) (CKS 2020, Thm 14)."""
        return self.l2_sensitivity**2 / (2 * self.sigma**2)

    def has_profile(self) -> bool:
        """True: the smoothing and zCDP bounds."""
        return True

    def _exact_one(self) -> DiscreteGaussian | None:
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
            if self.l2_sensitivity > check.MAX_LOSS_RATIO * sc:
                continue  # no useful bound from this width
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

    def to_dict(self) -> dict[str, Any]:
        """``{"type": "DiscreteGaussianVector", "sigma", "l2_sensitivity", "dimension"}``."""
        return _fields(self, "sigma", "l2_sensitivity", "dimension")
