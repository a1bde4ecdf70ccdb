"""Discretised privacy-loss distributions (PLDs), composed by FFT.

A PLD of a dominating pair (P, Q) is the law of L = log P(o)/Q(o) under o ~ P; composing
mechanisms convolves their PLDs, and δ(ε) = P(L = ∞) + E[(1 - e^{ε-L})_+] (Sommer, Meiser &
Mohammadi 2019; Koskela, Jälkö & Honkela 2020). Here a PLD lives on the grid {k·h}:

* Discretisation is the "connect-the-dots" construction of Doroshenko, Ghazi, Kamath, Kumar &
  Manurangsi (2022): the mass of L between two grid points is split onto both so that the P-mass
  and the Q-mass are both preserved. The result is itself a valid pair whose δ(ε) equals the true
  one at grid points and lies above it in between, so every composed bound is pessimistic
  (never below the truth) while the error is second order in h.
* Tails are cut pessimistically: mass above the grid is moved to the infinite-loss atom (it adds
  to δ at every ε), mass below is moved up to the lowest grid point.
* ``self_compose(n)`` raises the FFT to the n-th power (never n convolutions); the window is
  chosen by a Chernoff bound on the composed loss and the bound on the mass beyond the top of
  the window is added to the infinite-loss atom, so aliasing can only increase δ.
* Both directions of add/remove neighbours are kept when the mechanism is not symmetric
  (Poisson subsampling); δ is the maximum over them.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .. import _validate as check
from .losses import PrivacyLoss

DEFAULT_INTERVAL = 1e-4
TAIL_MASS = 1e-18  # mass cut from each tail of each event, pessimistically
MAX_POINTS = 40_000_000
_CHERNOFF_TS = np.geomspace(1e-3, 1e3, 61)  # the t > 0 of the Chernoff window bound


@dataclass
class _GridPMF:
    """P-masses at losses (offset + i)·h, and the mass at loss +∞."""

    offset: int
    pmf: np.ndarray
    inf_mass: float
    # log E[e^{tL}] per (grid step h, t): a self-composition by any count reuses them (a training
    # loop recomposes one event at ever larger counts)
    _mgf: dict[tuple[float, float], float] = field(default_factory=dict, repr=False, compare=False)
    _mgf_atoms: dict[float, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict, repr=False,
                                                                   compare=False)

    def log_mgf(self, h: float, t: float) -> float:
        """log E[e^{tL}] (L the loss, normalised over the finite atoms), memoised."""
        got = self._mgf.get((h, t))
        if got is None:
            atoms = self._mgf_atoms.get(h)
            if atoms is None:
                atoms = self._mgf_atoms[h] = _mgf_terms(self, h)  # t-independent
            with np.errstate(over="ignore"):
                got = self._mgf[(h, t)] = float(_log_mgfs(*atoms, np.array([t]))[0])
        return got

    def chernoff_bound(self, h: float, n: int, log_tol: float, sign: int) -> float:
        """min over t in _CHERNOFF_TS of (n M(sign·t) - log tol)/t, M = log E[e^{tL}] (∞ if none is
        finite): a u with P(±ΣL >= u) <= tol (Chernoff). As a function of t > 0 it is unimodal: its
        derivative has the sign of n(tM' - M) - log(1/tol), which never decreases (its derivative
        is n t M'' >= 0, M being convex). So a binary search on the grid's differences finds its
        least grid value in about 2 log2(61) evaluations of M instead of 61; any t gives a valid
        bound, so a float tie can only cost tightness, never validity."""
        def f(i: int) -> float:
            t = float(_CHERNOFF_TS[i])
            with np.errstate(over="ignore", invalid="ignore"):
                v = (n * self.log_mgf(h, sign * t) - log_tol) / t
            return v if v == v else math.inf  # NaN: no bound from this t

        lo, hi = 0, _CHERNOFF_TS.size - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if f(mid) <= f(mid + 1):
                hi = mid
            else:
                lo = mid + 1
        return f(lo)

    def trimmed(self, tol: float = TAIL_MASS) -> _GridPMF:
        p = np.clip(self.pmf, 0.0, None)
        inf = self.inf_mass
        if p.size == 0:
            return _GridPMF(0, np.zeros(1), inf)
        top = _tail_sums(p[::-1], tol)
        cut_top = int(np.searchsorted(top, tol, side="right"))  # trailing entries with mass <= tol
        cut_top = min(cut_top, p.size - 1)
        if cut_top:
            inf += float(top[cut_top - 1])
            p = p[: p.size - cut_top]
        bottom = _tail_sums(p, tol)
        cut_bottom = int(np.searchsorted(bottom, tol, side="right"))
        cut_bottom = min(cut_bottom, p.size - 1)
        offset = self.offset
        if cut_bottom:
            moved = float(bottom[cut_bottom - 1])
            p = p[cut_bottom:].copy()
            p[0] += moved  # moved *up* in loss: pessimistic
            offset += cut_bottom
        return _GridPMF(offset, p, min(inf, 1.0))


def _tail_sums(p: np.ndarray, tol: float) -> np.ndarray:
    """The running sums of ``p`` as far as they stay <= tol (and one past): what trimming reads,
    without a pass over the whole array (the tails cut are short; the array can be 10^7 long)."""
    size = 4096
    while True:
        sums = np.cumsum(p[:size])
        if size >= p.size or sums[-1] > tol:
            return sums
        size *= 8


def _fft_convolve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    n = a.size + b.size - 1
    if a.size * b.size <= 1_000_000:
        return np.convolve(a, b)
    size = fft_length(n)
    out = np.fft.irfft(np.fft.rfft(a, size) * np.fft.rfft(b, size), size)[:n]
    return np.clip(out, 0.0, None)


def fft_length(n: int) -> int:
    """The least even 5-smooth integer (2^i 3^j 5^k, i >= 1) >= n: a length pocketfft (NumPy's FFT)
    transforms at its full speed. The next power of two, used before, is up to 2x longer (a
    composed window of 4.06·10^6 points took 2^23 = 8.4·10^6) and its FFT up to 2x slower.

    Parameters
    ----------
    n : int
        The least length (>= 1).

    Returns
    -------
    int
        The length.
    """
    best = 1 << max(1, (n - 1).bit_length())  # a power of two >= n (and >= 2)
    p5 = 1
    while p5 < best:
        p35 = p5
        while p35 < best:
            m = p35 * 2  # the least 2^i·p35 >= n with i >= 1
            if m < n:
                m <<= (-(-n // m) - 1).bit_length()
            best = min(best, m)
            p35 *= 3
        p5 *= 5
    return best


def _search_smallest(pred: Callable[[int], bool], start: int = 0) -> int:
    """Smallest integer k with pred(k) true, for pred monotone false→true (exponential search)."""
    if pred(start):
        step = 1
        hi = start
        lo = start - step
        while pred(lo):
            hi = lo
            step *= 2
            lo = start - step
            if step > MAX_POINTS * 4:
                raise ValueError("privacy-loss distribution has an unbounded lower range")
    else:
        step = 1
        lo = start
        hi = start + step
        while not pred(hi):
            lo = hi
            step *= 2
            hi = start + step
            if step > MAX_POINTS * 4:
                raise ValueError("privacy-loss distribution has an unbounded upper range")
    while hi - lo > 1:  # invariant: pred(lo) false, pred(hi) true
        mid = (lo + hi) // 2
        if pred(mid):
            hi = mid
        else:
            lo = mid
    return hi


def _check_points(n: int, h: float) -> None:
    if n > MAX_POINTS:
        raise ValueError(
            f"the privacy-loss distribution would need {n} grid points at "
            f"value_discretization_interval={h}; use a larger interval (the loss is very large)")


def _from_atoms(atoms: tuple[np.ndarray, np.ndarray, float], h: float) -> _GridPMF:
    losses, masses, inf_mass = atoms
    keep = (masses > 0) & np.isfinite(losses)
    losses, masses = losses[keep], masses[keep]
    if losses.size == 0:  # all the mass is at infinite loss
        return _GridPMF(0, np.zeros(1), float(min(1.0, inf_mass)))
    if float(np.max(np.abs(losses))) / h > 2.0**52:  # grid indices must be exact int64
        raise ValueError(f"a privacy loss of {float(np.max(np.abs(losses))):.3g} is too large for the "
                         f"privacy-loss distribution's grid (value_discretization_interval={h})")
    k = np.floor(losses / h).astype(np.int64)
    k = np.where(k * h > losses, k - 1, k)  # guarantee k·h <= loss < (k+1)·h
    k = np.where((k + 1) * h <= losses, k + 1, k)
    lo, hi = int(k.min()), int(k.max()) + 1
    _check_points(hi - lo + 1, h)
    # split p at loss l onto k·h and (k+1)·h preserving the P- and Q-mass (Doroshenko et al. 2022)
    a = masses * np.expm1((k + 1) * h - losses) / math.expm1(h)
    a = np.clip(a, 0.0, masses)
    pmf = np.zeros(hi - lo + 1)
    np.add.at(pmf, k - lo, a)
    np.add.at(pmf, k + 1 - lo, masses - a)
    return _GridPMF(lo, pmf, float(inf_mass))


def _from_tails(loss: PrivacyLoss, direction: str, h: float, tol: float) -> _GridPMF:
    def tails_at(e: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        out = loss._loss_tails(e, direction)
        assert out is not None  # chosen only for losses that give their tails (else _from_profile)
        return out

    def tails(k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        return tails_at(np.asarray([k * h], dtype=float))

    hi = _search_smallest(lambda k: float(tails(k)[0][0]) <= tol)
    lo = _search_smallest(lambda k: float(tails(k)[2][0]) > tol) - 1
    lo = min(lo, hi - 1)
    _check_points(hi - lo + 1, h)
    eps = np.arange(lo, hi + 1, dtype=float) * h
    p_sf, q_sf, p_cdf, q_cdf = tails_at(eps)
    # bucket masses from whichever of cdf/sf is small there (avoids cancellation)
    p_b = np.where(p_sf[:-1] < 0.5, p_sf[:-1] - p_sf[1:], p_cdf[1:] - p_cdf[:-1])
    q_b = np.where(q_sf[:-1] < 0.5, q_sf[:-1] - q_sf[1:], q_cdf[1:] - q_cdf[:-1])
    p_b = np.clip(p_b, 0.0, None)
    q_b = np.clip(q_b, 0.0, None)
    with np.errstate(divide="ignore", over="ignore"):
        q_scaled = np.where(q_b > 0, np.exp(np.log(np.where(q_b > 0, q_b, 1.0)) + eps[1:]), 0.0)
    a = np.clip((q_scaled - p_b) / math.expm1(h), 0.0, p_b)
    pmf = np.zeros(eps.size)
    pmf[:-1] += a
    pmf[1:] += p_b - a
    pmf[0] += float(p_cdf[0])  # mass with L <= lowest grid point, moved up
    return _GridPMF(lo, pmf, float(p_sf[-1]))


def _lower_convex_envelope(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The greatest convex function below the points (x_i, y_i) (x increasing), at the x_i.

    A privacy profile is convex in e^ε; a profile given as a minimum of several valid upper
    bounds may not be. The true profile is convex and below every point, hence below this
    envelope, so replacing an upper bound by its envelope keeps it an upper bound."""
    hull = [0]
    for i in range(1, x.size):
        while len(hull) >= 2:
            j, k = hull[-2], hull[-1]
            # drop k if it lies on or above the chord from j to i
            if (y[k] - y[j]) * (x[i] - x[j]) >= (y[i] - y[j]) * (x[k] - x[j]):
                hull.pop()
            else:
                break
        hull.append(i)
    idx = np.asarray(hull)
    return np.interp(x, x[idx], y[idx])


def _from_profile(loss: PrivacyLoss, direction: str, h: float, tol: float) -> _GridPMF:
    """Connect-the-dots from the privacy profile alone: chords of δ as a function of e^ε."""
    def prof(e: float | np.ndarray) -> np.ndarray:
        out = loss._profile(np.atleast_1d(np.asarray(e, dtype=float)), direction)
        assert out is not None
        return out

    far = float(prof(1e4)[0])
    hi = _search_smallest(lambda k: float(prof(k * h)[0]) - far <= tol)
    lo = _search_smallest(lambda k: float(prof(k * h)[0]) + math.expm1(k * h) > tol) - 1
    lo = min(lo, hi - 1)
    _check_points(hi - lo + 1, h)
    eps = np.arange(lo, hi + 1, dtype=float) * h
    d = np.minimum(prof(eps), 1.0)
    x = np.exp(eps)
    d = _lower_convex_envelope(x, d)
    s = np.empty(eps.size + 1)
    s[0] = (d[0] - 1.0) / x[0]
    s[1:-1] = np.diff(d) / np.diff(x)
    s[-1] = 0.0
    pmf = np.clip(x * np.diff(s), 0.0, None)
    return _GridPMF(lo, pmf, float(d[-1]))


def discretise(loss: PrivacyLoss, direction: str, h: float, tol: float = TAIL_MASS) -> _GridPMF:
    """The pessimistic grid PMF of one use of ``loss`` in one direction.

    Parameters
    ----------
    loss : PrivacyLoss
        A descriptor with loss atoms, loss tails or a privacy profile.
    direction : {"remove", "add"}
        The direction (ignored for a symmetric loss).
    h : float
        The grid step of loss values.
    tol : float, optional
        Probability mass that may be moved to the infinite-loss atom when trimming.

    Returns
    -------
    _GridPMF
        The grid PMF (start index, masses, mass at +∞), rounded up to the grid.

    Raises
    ------
    ValueError
        If the loss has no privacy-loss distribution.
    """
    d = direction if not loss.symmetric else "remove"
    atoms = loss._loss_atoms(d)
    if atoms is not None:
        return _from_atoms(atoms, h).trimmed(tol)
    if loss._loss_tails(np.zeros(1), d) is not None:
        return _from_tails(loss, d, h, tol).trimmed(tol)
    if loss._profile(np.zeros(1), d) is not None:
        return _from_profile(loss, d, h, tol).trimmed(tol)
    raise ValueError(f"{type(loss).__name__} has no privacy-loss distribution")


def _mgf_terms(g: _GridPMF, h: float) -> tuple[np.ndarray, np.ndarray]:
    """The losses and log-masses (normalised to sum 1) of the atoms of ``g`` with mass > 0."""
    keep = np.nonzero(g.pmf > 0)[0]
    total = float(np.sum(g.pmf))
    return (g.offset + keep) * h, np.log(g.pmf[keep] / total)


def _log_mgfs(eps: np.ndarray, log_p: np.ndarray, ts: np.ndarray) -> np.ndarray:
    """log E[e^{tL}] of the atoms (eps, log_p) at each t of ``ts``, stably, a block of t at a time."""
    out = np.empty(ts.size)
    block = max(1, (1 << 20) // max(1, eps.size))  # about 8 MB of work at once
    for i in range(0, ts.size, block):
        v = ts[i:i + block, None] * eps[None, :] + log_p[None, :]
        m = np.max(v, axis=1)
        out[i:i + block] = m + np.log(np.sum(np.exp(v - m[:, None]), axis=1))
    return out


def _self_compose(g: _GridPMF, n: int, h: float, tol: float) -> _GridPMF:
    if n == 1:
        return g
    full_lo = n * g.offset
    full_hi = n * (g.offset + g.pmf.size - 1)
    lo_k, hi_k = full_lo, full_hi
    log_tol = math.log(tol)
    if full_hi - full_lo + 1 > 4 * g.pmf.size:
        # Chernoff: P(ΣL >= u) <= exp(n M(t) - t u) for t > 0, P(ΣL <= u) <= ... for t < 0
        best_hi = g.chernoff_bound(h, n, log_tol, 1)
        best_lo = -g.chernoff_bound(h, n, log_tol, -1)
        if math.isfinite(best_hi):
            hi_k = min(full_hi, math.ceil(best_hi / h) + 1)
        if math.isfinite(best_lo):
            lo_k = max(full_lo, math.floor(best_lo / h) - 1)
    size_needed = hi_k - lo_k + 1
    _check_points(size_needed, h)
    length = fft_length(max(size_needed, g.pmf.size))  # indices mod length: any length >= both works
    arr = np.zeros(length)
    start = g.offset % length  # the pmf's indices mod length: one or two slices (size <= length)
    head = min(g.pmf.size, length - start)
    arr[start:start + head] = g.pmf[:head]
    arr[:g.pmf.size - head] = g.pmf[head:]
    spec = _power(np.fft.rfft(arr), n)
    res = np.fft.irfft(spec, length)
    window = _wrapped(res, lo_k, hi_k - lo_k + 1)
    inf = _union_mass(g.inf_mass, g.inf_mass, n)
    if hi_k < full_hi:
        inf += tol  # Chernoff bound on the finite mass above the window
    if lo_k > full_lo:
        window[0] += tol  # bound on the mass below the window, moved up (pessimistic)
    return _GridPMF(lo_k, np.clip(window, 0.0, None), min(1.0, inf)).trimmed(tol)


def _power(spec: np.ndarray, n: int) -> np.ndarray:
    """spec ** n by repeated squaring (log2 n complex products in place: a few times faster
    than the complex power, whose log and exp per element dominated a composition)."""
    result = None
    base = spec
    while n:
        if n & 1:
            result = base.copy() if result is None else np.multiply(result, base, out=result)
        n >>= 1
        if n:
            base = np.multiply(base, base, out=None if base is spec else base)
    assert result is not None
    return result


def _wrapped(a: np.ndarray, start: int, count: int) -> np.ndarray:
    """A copy of a[(start + i) % a.size] for i < count (count <= a.size)."""
    i = start % a.size
    if i + count <= a.size:
        return a[i:i + count].copy()
    return np.concatenate((a[i:], a[:count - (a.size - i)]))


def _union_mass(a: float, b: float, n: int = 0) -> float:
    """1 - (1-a)(1-b), or 1 - (1-a)^n when n > 0, without losing tiny masses to rounding."""
    if max(a, b) >= 1.0:
        return 1.0
    log_keep = n * math.log1p(-a) if n else math.log1p(-a) + math.log1p(-b)
    return -math.expm1(log_keep)


def _compose(a: _GridPMF, b: _GridPMF, tol: float) -> _GridPMF:
    pmf = _fft_convolve(a.pmf, b.pmf)
    inf = _union_mass(a.inf_mass, b.inf_mass)
    return _GridPMF(a.offset + b.offset, pmf, inf).trimmed(tol)


def _delta(g: _GridPMF, eps: float, h: float) -> float:
    losses = (g.offset + np.arange(g.pmf.size)) * h
    sel = losses > eps
    return g.inf_mass + float(np.sum(g.pmf[sel] * -np.expm1(eps - losses[sel])))


def _epsilon(g: _GridPMF, delta: float, h: float) -> float:
    if g.inf_mass > delta:
        return math.inf
    n = g.pmf.size
    p = g.pmf
    losses = (g.offset + np.arange(n)) * h
    # δ at grid point k: inf + Σ_{i>=1} p_{k+i} (1 - e^{-ih}). The weights 1 - e^{-ih} do not
    # depend on k: they are computed once (i <= W), and each step of the search is one dot
    # product; atoms beyond k + W count with weight 1 >= theirs, an upper bound on δ that
    # differs from it by at most e^{-Wh} <= 2^-60 of their mass (below the sum's rounding).
    span = min(n, math.ceil(42.0 / h) + 1)
    weights = -np.expm1(-h * np.arange(span + 1, dtype=float))  # weights[i] = 1 - e^{-ih}

    def delta_at(k: int) -> float:  # an upper bound on δ(ε_k) (grid index k; -1 below the grid)
        near = p[k + 1:k + 1 + span]
        far = p[k + 1 + span:]
        return g.inf_mass + float(np.dot(near, weights[1:near.size + 1])) + float(np.sum(far))

    if delta_at(-1) <= delta:
        return losses[0] - h  # (clipped at 0 by the caller)

    # smallest index k with δ(ε_k) <= δ (δ is decreasing); δ(ε_{n-1}) = inf_mass <= δ
    lo, hi = -1, n - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if delta_at(mid) <= delta:
            hi = mid
        else:
            lo = mid
    k = hi
    # on [ε_{k-1}, ε_k): δ(ε) = inf + A - e^{ε-ε_k} B with A, B over atoms j >= k
    p = g.pmf[k:]
    a_sum = float(np.sum(p))
    b_sum = float(np.sum(p * np.exp(losses[k] - losses[k:])))
    if b_sum <= 0:
        return losses[k]
    ratio = (g.inf_mass + a_sum - delta) / b_sum
    if ratio <= 0:
        return losses[k]
    return min(losses[k], max(losses[k] - h, losses[k] + math.log(ratio)))


class PrivacyLossDistribution:
    """A composed, discretised privacy-loss distribution (both directions when needed).

    Build one with :meth:`from_loss`, combine with :meth:`compose` / :meth:`self_compose`, read
    it with :meth:`get_delta_for_epsilon` / :meth:`get_epsilon_for_delta`. All results are
    upper bounds on the true privacy curve (pessimistic discretisation, see the module doc).

    Parameters
    ----------
    parts : dict
        ``{"remove": grid PMF, "add": grid PMF}`` (internal; use the class methods).
    value_discretization_interval : float
        The grid step of loss values.
    tail_mass : float, optional
        The mass trimming may move to the infinite-loss atom per composition.
    """

    def __init__(self, parts: dict[str, _GridPMF], value_discretization_interval: float,
                 tail_mass: float = TAIL_MASS):
        self._parts = parts
        self.value_discretization_interval = value_discretization_interval
        self._tol = tail_mass

    @classmethod
    def identity(cls, value_discretization_interval: float = DEFAULT_INTERVAL) -> PrivacyLossDistribution:
        """The PLD of releasing nothing (loss 0 with probability 1), neutral for :meth:`compose`.

        Parameters
        ----------
        value_discretization_interval : float, optional
            The grid step (> 0).

        Returns
        -------
        PrivacyLossDistribution
            The identity.
        """
        h = check.positive(value_discretization_interval, "value_discretization_interval")
        one = _GridPMF(0, np.ones(1), 0.0)
        return cls({"remove": one, "add": one}, h)

    @classmethod
    def from_loss(cls, loss: PrivacyLoss, value_discretization_interval: float = DEFAULT_INTERVAL,
                  count: int = 1) -> PrivacyLossDistribution:
        """The PLD of ``count`` uses of ``loss``, discretised pessimistically.

        Parameters
        ----------
        loss : PrivacyLoss
            A descriptor with a privacy-loss distribution (``loss.has_profile()``).
        value_discretization_interval : float, optional
            The grid step (> 0).
        count : int, default 1
            Self-compositions (>= 1), by FFT powers.

        Returns
        -------
        PrivacyLossDistribution
            Both directions (one shared part for a symmetric loss).

        Raises
        ------
        ValueError
            For a bad step or count, or a loss without a privacy-loss distribution.
        """
        h = check.positive(value_discretization_interval, "value_discretization_interval")
        count = check.count(count)
        if loss.symmetric:
            g = _self_compose(discretise(loss, "remove", h), count, h, TAIL_MASS)
            parts = {"remove": g, "add": g}
        else:
            parts = {d: _self_compose(discretise(loss, d, h), count, h, TAIL_MASS)
                     for d in ("remove", "add")}
        return cls(parts, h)

    def compose(self, other: PrivacyLossDistribution) -> PrivacyLossDistribution:
        """The PLD of this release followed by ``other`` (convolution of the loss PMFs).

        Parameters
        ----------
        other : PrivacyLossDistribution
            Built with the same discretisation interval.

        Returns
        -------
        PrivacyLossDistribution
            A new PLD; neither input changes.

        Raises
        ------
        ValueError
            If the discretisation intervals differ.
        """
        if other.value_discretization_interval != self.value_discretization_interval:
            raise ValueError("cannot compose PLDs with different value_discretization_interval")
        parts: dict[str, _GridPMF] = {}
        for d in ("remove", "add"):
            a, b = self._parts[d], other._parts[d]
            if d == "add" and self._parts["add"] is self._parts["remove"] and \
                    other._parts["add"] is other._parts["remove"]:
                parts[d] = parts["remove"]
                continue
            parts[d] = _compose(a, b, self._tol)
        return PrivacyLossDistribution(parts, self.value_discretization_interval, self._tol)

    def self_compose(self, count: int) -> PrivacyLossDistribution:
        """This PLD composed with itself ``count`` times (one FFT power).

        Parameters
        ----------
        count : int
            The number of uses (>= 1).

        Returns
        -------
        PrivacyLossDistribution
            A new PLD.

        Raises
        ------
        ValueError
            For a count that is not an integer >= 1, or a composition whose grid would be too
            large to compute.
        """
        count = check.count(count)
        h = self.value_discretization_interval
        rem = _self_compose(self._parts["remove"], count, h, self._tol)
        add = rem if self._parts["add"] is self._parts["remove"] else \
            _self_compose(self._parts["add"], count, h, self._tol)
        return PrivacyLossDistribution({"remove": rem, "add": add}, h, self._tol)

    def get_delta_for_epsilon(self, epsilon: float) -> float:
        """δ(ε), the max over both directions (an upper bound on the true curve).

        Parameters
        ----------
        epsilon : float
            Any real ε.

        Returns
        -------
        float
            δ in [0, 1].
        """
        e = check.real(epsilon, "epsilon")
        h = self.value_discretization_interval
        return min(1.0, max(_delta(g, e, h) for g in self._distinct_parts()))

    def get_epsilon_for_delta(self, delta: float) -> float:
        """The least grid ε with δ(ε) <= delta over both directions (an upper bound).

        Parameters
        ----------
        delta : float
            δ in [0, 1].

        Returns
        -------
        float
            ε >= 0 (``math.inf`` if the infinite-loss mass exceeds ``delta``).
        """
        d = check.probability(delta, "delta")
        h = self.value_discretization_interval
        return max(0.0, max(_epsilon(g, d, h) for g in self._distinct_parts()))

    def _distinct_parts(self) -> tuple[_GridPMF, ...]:
        """The directions' grid PMFs, each once (a symmetric loss shares one for both)."""
        return tuple({id(g): g for g in self._parts.values()}.values())

    @property
    def size(self) -> int:
        """Number of grid points held (over both directions)."""
        return sum(g.pmf.size for g in self._distinct_parts())

    def __repr__(self) -> str:
        h = self.value_discretization_interval
        return f"PrivacyLossDistribution(points={self.size}, value_discretization_interval={h})"
