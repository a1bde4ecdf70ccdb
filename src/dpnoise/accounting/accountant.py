"""Accountants: compose privacy losses and report the (ε, δ) they add up to.

One shape for every kind (as in dp-accounting):
``Accountant(kind, neighbours).compose(loss, count=1).get_epsilon(delta)``.
"""
from __future__ import annotations

import copy
import math
import threading
from collections.abc import Sequence

from .. import _validate as check
from . import conversions as conv
from .losses import Gaussian, Parallel, PoissonSampled, PrivacyLoss, ShuffledReports, WithinTotalVariation
from .losses.total_variation import _transfer_delta
from .pld import DEFAULT_INTERVAL, PrivacyLossDistribution

KINDS = ("basic", "advanced", "zcdp", "rdp", "pld")


def _exact(loss: PrivacyLoss) -> PrivacyLoss:
    """The loss the accountants compose: a WithinTotalVariation's exact loss (its total
    variation is added to the composition's δ when it is read), else ``loss`` itself."""
    return loss.loss if isinstance(loss, WithinTotalVariation) else loss


def _supports(kind: str, loss: PrivacyLoss) -> bool:
    loss = _exact(loss)
    if kind in ("basic", "advanced"):
        return loss.approx_dp() is not None
    if kind == "zcdp":
        return loss.zcdp_rho() is not None
    if kind == "rdp":
        return loss.rdp(2.0) is not None
    return loss.has_profile()


def supported_by(loss: PrivacyLoss) -> list[str]:
    """The accountant kinds that can compose ``loss``.

    Parameters
    ----------
    loss : PrivacyLoss
        A privacy-loss descriptor.

    Returns
    -------
    list of str
        The kinds, in the order of ``KINDS``.
    """
    return [k for k in KINDS if _supports(k, loss)]


def _contains_poisson(loss: PrivacyLoss) -> bool:
    if isinstance(loss, PoissonSampled):
        return True
    if isinstance(loss, Parallel):
        return any(_contains_poisson(x) for x in loss.losses)
    return False


def _only_replace(loss: PrivacyLoss) -> bool:
    """Whether ``loss`` (or a part of it) holds only under replace-one neighbours: shuffled reports
    (the shuffle bounds fix n; docs/accounting.md, "Shuffle-model accounting")."""
    if isinstance(loss, ShuffledReports):
        return True
    if isinstance(loss, Parallel):
        return any(_only_replace(x) for x in loss.losses)
    return False


def _same_loss(a: PrivacyLoss, b: PrivacyLoss) -> bool:
    """Whether two descriptors describe the same loss (frozen dataclasses: equal fields)."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    try:
        return bool(a == b)
    except (TypeError, ValueError):  # a field that does not compare to one bool
        return a.to_dict() == b.to_dict()


def _same_signature(a: tuple[tuple[object, object], ...], b: tuple[tuple[object, object], ...]) -> bool:
    """Whether two ``Accountant._signature_without`` results describe the same ledger."""
    return len(a) == len(b) and all(
        ca == cb and (la == lb if isinstance(la, str) or isinstance(lb, str)
                      else _same_loss(la, lb))  # type: ignore[arg-type]
        for (la, ca), (lb, cb) in zip(a, b))


class _Group:
    """``count`` identical uses of ``loss``, with the loss's own derived forms cached (its
    discretised PLD, its RDP curve at the orders asked): they do not depend on the count."""

    __slots__ = ("_pld", "_rdp", "count", "loss")

    def __init__(self, loss: PrivacyLoss, count: int):
        self.loss = loss
        self.count = count
        # memos of the one loss, shared by every copy of the group (trial accountants fill
        # them for the accountant they were copied from); values never change once set
        self._pld: dict[float, PrivacyLossDistribution] = {}
        self._rdp: dict[float, float] = {}

    def copy(self) -> _Group:
        other = _Group(self.loss, self.count)
        other._pld, other._rdp = self._pld, self._rdp
        return other

    def single_pld(self, h: float) -> PrivacyLossDistribution:
        pld = self._pld.get(h)
        if pld is None:
            pld = self._pld[h] = PrivacyLossDistribution.from_loss(_exact(self.loss), h)
        return pld

    def rdp(self, alpha: float) -> float:
        r = self._rdp.get(alpha)
        if r is None:
            value = _exact(self.loss).rdp(alpha)
            if value is None:
                raise ValueError(f"{self.loss!r} has no RDP curve")
            r = self._rdp[alpha] = value
        return r


class Accountant:
    """Composes privacy losses under one accounting method.

    kind:
      * ``"basic"``    sums of (ε, δ) (Dwork–Roth Thm 3.16), valid for adaptive composition;
      * ``"advanced"`` the optimal composition of Kairouz, Oh & Viswanath (2015) for identical
        (ε, δ) events, their heterogeneous bound (Thm 3.5) otherwise, never worse than basic;
      * ``"zcdp"``     sums of ρ, converted with Canonne–Kamath–Steinke (2020);
      * ``"rdp"``      sums of Rényi curves, converted with Balle et al. (2020) over a grid of
                       orders refined continuously;
      * ``"pld"``      discretised privacy-loss distributions composed by FFT (pessimistic);
                       Gaussian events are combined exactly (μ² = Σ(Δ/σ)², Dong, Roth & Su 2019)
                       and discretised once, at query time.

    neighbours: ``"add_remove"`` or ``"replace"``; the sensitivities of the composed losses are
    taken in this relation. Poisson subsampling is analysed under add/remove only.

    A :class:`~dpnoise.accounting.WithinTotalVariation` loss (a constant-time release) is composed
    as its exact loss, by any kind; the sum Σ η of their total variations is added when the
    composition is read: ``get_delta(ε)`` is δ(ε) + (1 + e^ε)·Σ η, and ``get_epsilon(δ)`` an ε at
    which that is at most δ (docs/security.md).

    ``compose`` returns the accountant, so calls chain. Accountants are thread-safe.

    Parameters
    ----------
    kind : {"pld", "rdp", "zcdp", "advanced", "basic"}, default "pld"
        The accounting method.
    neighbours : {"add_remove", "replace"}, default "add_remove"
        The neighbouring relation the sensitivities are taken in.
    value_discretization_interval : float, optional
        The PLD accountant's loss grid step (> 0; smaller is tighter and slower).
    orders : sequence of float, optional
        The RDP orders to convert at (each in (1, ∞); default a built-in grid).

    Raises
    ------
    ValueError
        For an unknown kind or neighbours, a non-positive interval or bad orders.

    Examples
    --------
    >>> from dpnoise.accounting import Accountant, Gaussian
    >>> acc = Accountant("pld").compose(Gaussian(sigma=20.0), count=100)
    >>> round(acc.get_epsilon(1e-6), 1)
    2.3
    """

    def __init__(self, kind: str = "pld", neighbours: str = "add_remove", *,
                 value_discretization_interval: float = DEFAULT_INTERVAL,
                 orders: Sequence[float] | None = None):
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
        self.kind = kind
        self.neighbours = check.neighbours(neighbours)
        self.value_discretization_interval = check.positive(
            value_discretization_interval, "value_discretization_interval")
        if orders is None:
            self._orders: tuple[float, ...] = conv.DEFAULT_ORDERS
        else:
            self._orders = tuple(sorted(check.real(a, "orders") for a in orders))
            if not self._orders or any(not 1 < a < math.inf for a in self._orders):
                raise ValueError("orders must be a non-empty list of reals > 1")
        self._lock = threading.RLock()
        self._events: list[tuple[PrivacyLoss, int]] = []
        # Identical events, wherever they occur, as one group with a count: composition is
        # commutative, so the ledger is Π loss_g^count_g, and each group is composed once by
        # its count (an FFT power, an RDP curve times the count), never event by event.
        self._groups: list[_Group] = []
        self._pld: PrivacyLossDistribution | None = None  # cache of the non-Gaussian groups
        self._last_supported: PrivacyLoss | None = None
        self._last_group: _Group | None = None  # the group of the last composed descriptor
        self._gauss_mu2 = 0.0
        self._gauss_events = 0

    # ------------------------------------------------------------------ composing
    def check_supported(self, loss: PrivacyLoss) -> None:
        """Raise the error ``compose`` would raise for ``loss``, without composing it.

        Parameters
        ----------
        loss : PrivacyLoss
            The descriptor to check.

        Raises
        ------
        TypeError
            If ``loss`` is not a privacy-loss descriptor.
        ValueError
            If this accountant cannot compose it (the message names the kinds that can), or it
            is Poisson-subsampled under replace-one neighbours.
        """
        if loss is not None and loss is self._last_supported:  # the same descriptor again (a training loop's step)
            return
        if not isinstance(loss, PrivacyLoss):
            raise TypeError(f"loss must be a privacy-loss descriptor (dpnoise.accounting), "
                            f"got {type(loss).__name__}")
        if self.neighbours == "replace" and _contains_poisson(_exact(loss)):
            raise ValueError("PoissonSampled is analysed under add/remove neighbours; under "
                             "'replace' compose the add/remove loss twice (a replacement is a "
                             "removal and an addition)")
        if self.neighbours != "replace" and _only_replace(_exact(loss)):
            raise ValueError("ShuffledReports is analysed under replace-one neighbours (n users before and after): "
                             "compose it in an Accountant(..., neighbours='replace') or a PrivacyBudget(..., "
                             "neighbours='replace')")
        if not _supports(self.kind, loss):
            ok = supported_by(loss)
            which = ", ".join(repr(k) for k in ok) if ok else "no accountant"
            raise ValueError(f"the {self.kind!r} accountant cannot compose {loss!r}; "
                             f"it is supported by {which}")
        self._last_supported = loss  # descriptors are frozen: the answer cannot change

    def compose(self, loss: PrivacyLoss, count: int = 1) -> Accountant:
        """Add ``count`` independent uses of ``loss``.

        Parameters
        ----------
        loss : PrivacyLoss
            What one use spends.
        count : int, default 1
            How many uses (>= 1).

        Returns
        -------
        Accountant
            self, so calls chain.

        Raises
        ------
        TypeError, ValueError
            As :meth:`check_supported`; ValueError also for a non-positive count.
        """
        self.check_supported(loss)
        count = check.count(count)
        with self._lock:
            group = self._last_group
            if group is not None and group.loss is loss and self._events and self._events[-1][0] is loss:
                # the same descriptor again (a training loop's step, a loop of scalar releases):
                # O(1), the same groups and counts as the general path below
                group.count += count
                self._pld = None
                self._events[-1] = (loss, self._events[-1][1] + count)
                return self
            if self.kind == "pld" and type(loss) is Gaussian:
                self._gauss_mu2 += count * (loss.sensitivity / loss.sigma) ** 2
                self._gauss_events += count
            else:
                for g in self._groups:
                    if _same_loss(g.loss, loss):
                        g.count += count
                        group = g
                        break
                else:
                    group = _Group(loss, count)
                    self._groups.append(group)
                self._pld = None
                self._last_group = group if group.loss is loss else None
            if self._events and _same_loss(self._events[-1][0], loss):
                last, c = self._events[-1]
                self._events[-1] = (last, c + count)
            else:
                self._events.append((loss, count))
        return self

    def count_of(self, loss: PrivacyLoss) -> int:
        """How many uses of ``loss`` (an identical descriptor) have been composed.

        Parameters
        ----------
        loss : PrivacyLoss
            The descriptor (compared by its fields).

        Returns
        -------
        int
            The count, 0 when never composed.
        """
        with self._lock:
            if self.kind == "pld" and type(loss) is Gaussian:
                return sum(c for x, c in self._events if _same_loss(x, loss))
            return next((g.count for g in self._groups if _same_loss(g.loss, loss)), 0)

    def _signature_without(self, loss: PrivacyLoss) -> tuple[tuple[object, object], ...]:
        """(loss, count) of every group but ``loss``'s, and the Gaussian total: equal signatures
        (_same_signature) mean the same ledger apart from the uses of ``loss``."""
        with self._lock:
            sig: tuple[tuple[object, object], ...] = tuple(
                (g.loss, g.count) for g in self._groups if not _same_loss(g.loss, loss))
            if self.kind == "pld":  # the Gaussians outside the groups: their count and μ²
                if type(loss) is Gaussian:
                    others = self._gauss_events - self.count_of(loss)
                    sig += (("gaussian", (others, None)),)  # any other Gaussian adds to it
                else:
                    sig += (("gaussian", (self._gauss_events, self._gauss_mu2)),)
            return sig

    @property
    def events(self) -> list[tuple[PrivacyLoss, int]]:
        """The composed (loss, count) pairs, in order."""
        with self._lock:
            return list(self._events)

    def copy(self) -> Accountant:
        """An independent accountant with the same events (caches are shared, read-only).

        Returns
        -------
        Accountant
            The copy; composing into it leaves this one unchanged.
        """
        with self._lock:
            other = copy.copy(self)
            other._lock = threading.RLock()
            other._events = list(self._events)
            other._groups = [g.copy() for g in self._groups]
            other._last_group = None
            return other

    # ------------------------------------------------------------------ reading
    def get_epsilon(self, delta: float) -> float:
        """The least ε such that the composition is (ε, delta)-DP (an upper bound; ∞ if none).

        Parameters
        ----------
        delta : float
            The δ of the guarantee asked for, in [0, 1].

        Returns
        -------
        float
            ε >= 0 (0 with no events).
        """
        return self._read("_epsilon_", check.probability(delta, "delta"))

    def get_delta(self, epsilon: float) -> float:
        """The least δ such that the composition is (epsilon, δ)-DP (an upper bound).

        Parameters
        ----------
        epsilon : float
            ε >= 0.

        Returns
        -------
        float
            δ in [0, 1] (0 with no events).
        """
        return self._read("_delta_", check.nonnegative(epsilon, "epsilon"))

    def _read(self, prefix: str, value: float) -> float:
        with self._lock:
            if not self._events:
                return 0.0
            exact = getattr(self, prefix + self.kind)
            tv = self._total_variation()
            if tv == 0:
                return exact(value)
            if prefix == "_delta_":  # δ'(ε) = δ(ε) + (1 + e^ε)·η (docs/security.md)
                return min(1.0, exact(value) + _transfer_delta(value, tv))
            return self._epsilon_with_total_variation(exact, value, tv)

    def _total_variation(self) -> float:
        """Σ count·η over the WithinTotalVariation events: the composition's output law is within
        that total variation of its exact version (coupling each release; docs/security.md)."""
        return math.fsum(g.count * g.loss.total_variation for g in self._groups
                         if isinstance(g.loss, WithinTotalVariation))

    @staticmethod
    def _epsilon_with_total_variation(exact, delta: float, tv: float) -> float:  # type: ignore[no-untyped-def]
        """The least ε found with δ_exact(ε) + (1 + e^ε)·tv <= delta: ε = exact(delta - (1 + e^b)·tv)
        is valid once ε <= b (the added term at ε is at most the one reserved). b starts at 0 and
        moves up to just above ε: b <= the least valid ε all along (exact is increasing in b), so
        the first ε <= b found is the least up to the step (2^-30 relative); ∞ if none is found.
        δ·2^-40 more is reserved for the float round-off between the accountants' ε(δ) and δ(ε)."""
        bound = 0.0
        for _ in range(64):
            left = delta * (1 - 2.0**-40) - _transfer_delta(bound, tv)
            if left < 0:
                return math.inf
            eps = exact(left)
            if eps <= bound or eps == math.inf:
                return eps
            bound = eps * (1 + 2.0**-30) + 2.0**-40
        return math.inf

    def __repr__(self) -> str:
        return (f"Accountant(kind={self.kind!r}, neighbours={self.neighbours!r}, "
                f"events={len(self._events)})")

    # basic ---------------------------------------------------------------
    def _approx_events(self) -> list[tuple[float, float, int]]:
        out = []
        for loss, c in self._events:
            one, m = _exact(loss).repetitions()  # a batch of m identical uses is m events
            ed = one.approx_dp()
            assert ed is not None
            out.append((ed[0], ed[1], c * m))
        return out

    def _epsilon_basic(self, delta: float) -> float:
        eps, dlt = conv.basic_composition(self._approx_events())
        return eps if dlt <= delta else math.inf

    def _delta_basic(self, epsilon: float) -> float:
        eps, dlt = conv.basic_composition(self._approx_events())
        return min(1.0, dlt) if epsilon >= eps else 1.0

    # advanced ------------------------------------------------------------
    def _merged(self) -> dict[tuple[float, float], int]:
        merged: dict[tuple[float, float], int] = {}
        for e, d, c in self._approx_events():
            merged[(e, d)] = merged.get((e, d), 0) + c
        return merged

    def _delta_tilde(self, delta: float, merged: dict[tuple[float, float], int]) -> float:
        log_keep = math.fsum(c * math.log1p(-d) if d < 1 else -math.inf for (e, d), c in merged.items())
        if log_keep == -math.inf:
            return -1.0
        return -math.expm1(math.log1p(-delta) - log_keep) if delta < 1 else 1.0

    def _epsilon_advanced(self, delta: float) -> float:
        merged = self._merged()
        dt = self._delta_tilde(delta, merged)
        basic = self._epsilon_basic(delta)
        if dt < 0:
            return basic
        if len(merged) == 1:
            (e0, _d0), k = next(iter(merged.items()))
            try:  # exact (KOV Thm 3.3) over a bounded window of the binomial
                return min(basic, conv.kov_rr_epsilon(e0, k, dt))
            except OverflowError:
                pass  # window beyond KOV_MAX_WINDOW: the closed form below (KOV Thm 3.4)
        return min(basic, conv.kov_heterogeneous_epsilon([(e, c) for (e, _), c in merged.items()], dt))

    def _delta_advanced(self, epsilon: float) -> float:
        merged = self._merged()
        log_keep = math.fsum(c * math.log1p(-d) if d < 1 else -math.inf for (e, d), c in merged.items())
        if len(merged) == 1:
            (e0, d0), k = next(iter(merged.items()))
            try:
                return min(1.0, conv.kov_homogeneous_delta(e0, d0, k, epsilon))
            except OverflowError:
                pass  # beyond the exact window: the closed form below
        pairs = [(e, c) for (e, _), c in merged.items()]
        if conv.kov_heterogeneous_epsilon(pairs, 0.0) <= epsilon:
            dt = 0.0
        elif conv.kov_heterogeneous_epsilon(pairs, 1.0) > epsilon:
            return 1.0
        else:
            lo, hi = -745.0, 0.0  # bisection on log δ̃
            for _ in range(200):
                mid = 0.5 * (lo + hi)
                if conv.kov_heterogeneous_epsilon(pairs, math.exp(mid)) <= epsilon:
                    hi = mid
                else:
                    lo = mid
                if hi - lo < 1e-12:
                    break
            dt = math.exp(hi)
        return min(1.0, -math.expm1(math.log1p(-dt) + log_keep) if dt < 1 else 1.0)

    # zcdp ----------------------------------------------------------------
    def _rho(self) -> float:
        # zcdp_rho() is None only for losses without a ρ, which supported_by() refuses at compose
        return math.fsum(g.count * _exact(g.loss).zcdp_rho() for g in self._groups)  # type: ignore[operator]

    def _epsilon_zcdp(self, delta: float) -> float:
        return conv.zcdp_to_epsilon(self._rho(), delta)

    def _delta_zcdp(self, epsilon: float) -> float:
        return conv.zcdp_to_delta(self._rho(), epsilon)

    # rdp -----------------------------------------------------------------
    def rdp(self, alpha: float) -> float:
        """The composed Rényi-DP curve at order alpha (only for kind='rdp' or 'zcdp').

        Parameters
        ----------
        alpha : float
            The order, > 1.

        Returns
        -------
        float
            Σ count × ε(α) over the composed losses.

        Raises
        ------
        ValueError
            If ``alpha`` <= 1, or a composed loss has no RDP curve (a WithinTotalVariation with
            η > 0: the composition of its releases has none).
        """
        alpha = check.real(alpha, "alpha")
        if not alpha > 1:
            raise ValueError(f"alpha must be > 1, got {alpha!r}")
        with self._lock:
            self._refuse_total_variation("an RDP curve")
            return self._exact_rdp(alpha)

    def _refuse_total_variation(self, what: str) -> None:
        """ValueError when Σ η > 0: the curve of the exact releases is not one of the composition
        (the coupling bounds only its (ε, δ); docs/security.md), so it is never handed out."""
        if self._total_variation() > 0:
            raise ValueError(f"the composition holds WithinTotalVariation releases (constant time): it has no "
                             f"{what}; read get_epsilon/get_delta, which add their total variation")

    def _exact_rdp(self, alpha: float) -> float:
        return math.fsum(g.count * g.rdp(alpha) for g in self._groups)

    def _epsilon_rdp(self, delta: float) -> float:
        return conv.rdp_curve_to_epsilon(self._exact_rdp, delta, self._orders)

    def _delta_rdp(self, epsilon: float) -> float:
        return conv.rdp_curve_to_delta(self._exact_rdp, epsilon, self._orders)

    # pld -----------------------------------------------------------------
    def _gauss_mu(self) -> float:
        """√(Σ(Δ/σ)²) of the Gaussian events; never 0 once one is composed (a sum that
        underflowed is replaced by the least positive float, still an upper bound)."""
        return math.sqrt(self._gauss_mu2) if self._gauss_mu2 > 0 else math.sqrt(5e-324)

    def _groups_pld(self) -> PrivacyLossDistribution | None:
        """The non-Gaussian groups composed: each discretised once and raised to its count by
        one FFT power (pld.py), then the groups convolved; cached until the next compose."""
        if self._pld is None and self._groups:
            h = self.value_discretization_interval
            out: PrivacyLossDistribution | None = None
            for g in self._groups:
                part = g.single_pld(h).self_compose(g.count)
                out = part if out is None else out.compose(part)
            self._pld = out
        return self._pld

    def pld(self) -> PrivacyLossDistribution | None:
        """The composed privacy-loss distribution (kind='pld'), Gaussian events included.

        Returns
        -------
        PrivacyLossDistribution or None
            None when nothing has been composed.

        Raises
        ------
        ValueError
            When a WithinTotalVariation with η > 0 was composed (the composition has no PLD).
        """
        with self._lock:
            self._refuse_total_variation("privacy-loss distribution")
            return self._exact_pld()

    def _exact_pld(self) -> PrivacyLossDistribution | None:
        with self._lock:
            groups = self._groups_pld()
            if self._gauss_events == 0:
                return groups
            g = PrivacyLossDistribution.from_loss(Gaussian(1.0, self._gauss_mu()),
                                                  self.value_discretization_interval)
            return g if groups is None else groups.compose(g)

    def _epsilon_pld(self, delta: float) -> float:
        if not self._groups:  # Gaussians only: exact
            return Gaussian(1.0, self._gauss_mu()).epsilon_for_delta(delta)
        pld = self._exact_pld()
        assert pld is not None
        return pld.get_epsilon_for_delta(delta)

    def _delta_pld(self, epsilon: float) -> float:
        if not self._groups:
            return float(Gaussian(1.0, self._gauss_mu()).delta_for_epsilon(epsilon))
        pld = self._exact_pld()
        assert pld is not None
        return pld.get_delta_for_epsilon(epsilon)
