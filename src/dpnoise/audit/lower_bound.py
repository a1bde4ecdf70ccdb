"""Empirical lower bounds on ε: run a mechanism on two neighbouring inputs and test one event.

If M is (ε, δ)-DP and x0, x1 are neighbours, then for every set of outputs E,
P[M(x0) ∈ E] <= e^ε P[M(x1) ∈ E] + δ (Dwork & Roth 2014, Def. 2.4), so
ε >= ln((p0 - δ)/p1). The audit picks E on a training half of the outputs (_events.py), then
counts it on the held-out half: with a one-sided Clopper-Pearson lower bound of p0 and upper
bound of p1, each at level α/2, the reported ε = ln((p0_low - δ)/p1_high) is below the true
ε with probability at least 1 - α (union bound), whatever the mechanism (Bichsel et al.,
DP-Sniper, S&P 2021, §V; Jagielski, Ullman & Oprea, NeurIPS 2020, §3).

The auditor cannot check that x0 and x1 are neighbours: it trusts the caller. A bound computed on
inputs that are not neighbours says nothing about the mechanism's ε.
"""
from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .._validate import integer, probability, real
from . import _binomial
from ._events import Event, best_event

MIN_TRIALS = 1000


class MechanismError(RuntimeError):
    """The audited mechanism raised, or returned something the audit cannot use."""


@dataclass(frozen=True)
class AuditResult:
    """The outcome of :func:`epsilon_lower_bound`.

    Attributes
    ----------
    epsilon : float
        Lower bound on the mechanism's ε, valid with probability >= 1 - ``alpha`` (0 when the
        held-out counts give no evidence).
    event : Event
        The distinguishing event chosen on the training half (``event.contains(outputs)``).
    favoured : int
        0 or 1: the input under which the event is likelier; the bound reads
        ε >= ln((P[M(x_favoured) ∈ E] - δ) / P[M(x_other) ∈ E]).
    hits : tuple of int
        Held-out outputs in the event, (under x0, under x1).
    held_out : int
        Held-out outputs per input.
    train_hits : tuple of int
        Outputs in the event on the select part of the training outputs, where the event was
        chosen among the families' proposals (under x0, under x1).
    train_trials : int
        Size of that select part, per input.
    p_lower, p_upper : float
        Clopper-Pearson bounds (level α/2 each) of P[event | favoured input] (lower) and of
        P[event | other input] (upper).
    estimate : float
        The plug-in value ln((hits_favoured/n - δ)/(hits_other/n)) on the held-out half (may be
        inf or nan): an estimate, not a bound.
    trials, delta, alpha : int, float, float
        The audit's arguments.
    seconds : float
        Wall time of the audit.
    x0, x1 : Any
        The neighbouring inputs.
    """

    epsilon: float
    event: Event
    favoured: int
    hits: tuple[int, int]
    held_out: int
    train_hits: tuple[int, int]
    train_trials: int
    p_lower: float
    p_upper: float
    estimate: float
    trials: int
    delta: float
    alpha: float
    seconds: float
    x0: Any = field(repr=False, default=None)
    x1: Any = field(repr=False, default=None)

    def refutes(self, claimed_epsilon: float) -> bool:
        """Whether this bound exceeds a claimed ε (then the claim is false, at confidence 1 - α).

        Parameters
        ----------
        claimed_epsilon : float
            The ε the mechanism claims.

        Returns
        -------
        bool
            True when ``epsilon > claimed_epsilon``.
        """
        return self.epsilon > claimed_epsilon

    def __str__(self) -> str:
        return (f"epsilon >= {self.epsilon:.4f} (alpha = {self.alpha:g}, delta = {self.delta:g}); "
                f"event: {self.event}; held-out hits {self.hits[0]}/{self.held_out} on x0, "
                f"{self.hits[1]}/{self.held_out} on x1")


def check_trials(trials: Any) -> int:
    """The audit's trial count, checked.

    Parameters
    ----------
    trials : int
        Trials per input, at least ``MIN_TRIALS`` (half train, half held out).

    Returns
    -------
    int
        ``trials`` as an int.

    Raises
    ------
    ValueError
        Below ``MIN_TRIALS``.
    """
    n = integer(trials, "trials")
    if n < MIN_TRIALS:
        raise ValueError(f"trials must be at least {MIN_TRIALS} (half train, half held out), got {n}")
    return n


def check_alpha(alpha: Any) -> float:
    """The audit's confidence parameter, checked.

    Parameters
    ----------
    alpha : float
        The probability that the bound is wrong, in (0, 1).

    Returns
    -------
    float
        ``alpha`` as a float.

    Raises
    ------
    ValueError
        Outside (0, 1), or so small (below about 1e-323) that α/2, the level of each of the
        two Clopper-Pearson bounds, is 0 as a float.
    """
    a = real(alpha, "alpha")
    if not 0.0 < a < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {a!r}")
    if a / 2 == 0.0:
        raise ValueError(f"alpha={a!r} is too small: alpha/2, the level of each Clopper-Pearson bound, "
                         f"is 0 as a float")
    return a


def check_delta(delta: Any) -> float:
    """The δ the audited claim allows, checked: a float in [0, 1) (ValueError otherwise).

    Parameters
    ----------
    delta : float
        δ in [0, 1).

    Returns
    -------
    float
        ``delta`` as a float.
    """
    return probability(delta, "delta", upper_open=True)


def _as_outputs(out: Any, which: str) -> np.ndarray:
    try:
        arr = np.asarray(out)
    except Exception as exc:  # ragged lists and the like
        raise MechanismError(f"the mechanism's output on {which} is not an array: {exc}") from exc
    if arr.dtype == np.bool_:
        arr = arr.astype(np.int8)
    if arr.dtype.kind == "c":
        raise MechanismError(f"the mechanism returned complex numbers on {which}; audit real outputs")
    if arr.dtype.kind == "O":
        raise MechanismError(f"the mechanism returned Python objects (dtype object) on {which}; "
                             f"return numbers or strings")
    if (arr.dtype.kind == "i" or (arr.dtype.kind == "u" and arr.dtype.itemsize < 8)) and arr.dtype != np.int64:
        arr = arr.astype(np.int64)  # one integer type for both inputs (uint64 stays as it is)
    if arr.dtype.kind == "f" and arr.dtype != np.float64:
        arr = arr.astype(np.float64)
    return arr


def _call(mechanism: Callable[[Any], Any], value: Any, which: str, trial: int | None) -> Any:
    try:
        return mechanism(value)
    except Exception as exc:
        where = f"on {which}" + ("" if trial is None else f" (trial {trial})")
        raise MechanismError(f"the mechanism raised {type(exc).__name__} {where}: {exc}") from exc


def run_mechanism(mechanism: Callable[[Any], Any], x: Any, trials: int, which: str, *,
                  vectorized: bool, batch_size: int | None = None,
                  progress: Callable[[int], None] | None = None) -> np.ndarray:
    """Outputs of ``trials`` runs on x: an array whose first axis is the trial.

    Parameters
    ----------
    mechanism : callable
        The mechanism under audit, called on ``x`` (or on a batch of copies).
    x : Any
        The input.
    trials : int
        How many outputs to collect.
    which : str
        The input's name for error messages ("x0", "x1").
    vectorized : bool
        Call the mechanism once per batch on stacked copies of ``x`` (one output per copy).
    batch_size : int, optional
        Copies per vectorized call (default: all at once).
    progress : callable, optional
        Called with the number of trials just done.

    Returns
    -------
    numpy.ndarray
        The outputs, shape (trials, ...).

    Raises
    ------
    MechanismError
        When the mechanism raises, returns no array, the wrong number of outputs, or outputs
        whose shape changes.
    """
    if vectorized:
        base = np.asarray(x)
        step = trials if batch_size is None else batch_size
        parts: list[np.ndarray] = []
        done = 0
        while done < trials:
            m = min(step, trials - done)
            copies = np.broadcast_to(base, (m, *base.shape)).copy()
            out = _as_outputs(_call(mechanism, copies, which, None), which)
            if out.ndim == 0 or out.shape[0] != m:
                raise MechanismError(
                    f"vectorized=True: the mechanism must return one output per copy along the first "
                    f"axis; given {m} copies of {which} it returned shape {out.shape}")
            if parts and (out.shape[1:] != parts[0].shape[1:]):
                raise MechanismError(f"the mechanism's output shape on {which} changed between batches: "
                                     f"{parts[0].shape[1:]} then {out.shape[1:]}")
            parts.append(out)
            done += m
            if progress is not None:
                progress(m)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)
    outs: list[Any] = []
    first_shape: tuple[int, ...] | None = None
    tick = max(trials // 100, 1)
    for i in range(trials):
        out = _call(mechanism, x, which, i)
        shape = np.shape(out)
        if first_shape is None:
            first_shape = shape
        elif shape != first_shape:
            raise MechanismError(f"the mechanism's output shape changed on {which}: trial 0 gave "
                                 f"{first_shape}, trial {i} gave {shape}")
        outs.append(out)
        if progress is not None and (i + 1) % tick == 0:
            progress(tick)
    if progress is not None and trials % tick:
        progress(trials % tick)
    return _as_outputs(outs, which)


def bound_from_counts(hits_favoured: int, hits_other: int, n: int, delta: float, alpha: float
                      ) -> tuple[float, float, float]:
    """(ε bound, p_lower, p_upper) from held-out counts: Clopper-Pearson at α/2 on each side.

    Parameters
    ----------
    hits_favoured, hits_other : int
        Held-out outputs in the event under the favoured and the other input.
    n : int
        Held-out outputs per input.
    delta : float
        The δ of the audited claim.
    alpha : float
        The total error probability of the bound.

    Returns
    -------
    tuple of (float, float, float)
        ε lower bound (>= 0), lower bound on P[E | favoured], upper bound on P[E | other].

    Raises
    ------
    ValueError
        ``alpha`` outside (0, 1) or so small that α/2 is 0; counts outside 0..n.
    """
    alpha = check_alpha(alpha)
    p_lower = _binomial.lower_bound(hits_favoured, n, alpha / 2)
    p_upper = _binomial.upper_bound(hits_other, n, alpha / 2)
    if p_lower <= delta:
        return 0.0, p_lower, p_upper
    return max(0.0, math.log(p_lower - delta) - math.log(p_upper)), p_lower, p_upper


def _split(out: np.ndarray, offset: int, n_fit: int, n_train: int
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rotated = out if offset == 0 else np.concatenate([out[offset:], out[:offset]])
    return rotated[:n_fit], rotated[n_fit:n_train], rotated[n_train:]


def _rng(seed: Any) -> np.random.Generator:
    try:
        return np.random.default_rng(seed)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"seed must be None, an int >= 0 or a numpy SeedSequence/Generator, got "
                        f"{type(seed).__name__}") from exc


def epsilon_lower_bound(mechanism: Callable[[Any], Any], x0: Any, x1: Any, *, trials: int,
                        delta: float = 0.0, alpha: float = 0.05, seed: Any = None,
                        vectorized: bool = False, train_fraction: float = 0.5,
                        max_train: int = 2_000_000, batch_size: int | None = None,
                        progress: Callable[[int], None] | None = None) -> AuditResult:
    """A lower bound on the ε of a black-box mechanism, valid with probability >= 1 - α.

    The mechanism is run ``trials`` times on x0 and ``trials`` times on x1. A distinguishing
    event E is chosen on a training part of the outputs (threshold events, likelihood-ratio
    sets of exact values or quantile bins, and the bit patterns of float outputs) and counted on
    the held-out rest; then ε >= ln((p0 - δ)/p1) with p0 bounded below and p1 above by
    Clopper-Pearson at α/2 each (p0 the probability of E under the input it favours).

    The auditor cannot know whether x0 and x1 are neighbours: that is the caller's claim, and a
    bound on non-neighbouring inputs says nothing about the mechanism.

    Parameters
    ----------
    mechanism : callable
        ``mechanism(x)`` returns one output (a number, a string, or an array of fixed shape).
        With ``vectorized=True`` it is called on an array of copies of x stacked along a new
        first axis and must return one output per copy along that axis.
    x0, x1 : any
        The two neighbouring inputs.
    trials : int
        Runs on each input, at least 1000.
    delta : float, optional
        The δ of an (ε, δ) claim, in [0, 1).
    alpha : float, optional
        The probability, in (0, 1), that the bound may exceed the truth.
    seed : int, SeedSequence or numpy Generator, optional
        Seeds the audit's own train/held-out split (NumPy; the audit is a test tool). The
        mechanism's randomness is the mechanism's own.
    vectorized : bool, optional
        Call the mechanism once on an array of ``trials`` copies (or in ``batch_size`` chunks).
    train_fraction : float, optional
        Share of the trials used to choose the event, in (0, 1) (half to fit each family of
        candidate events, half to select among them); the rest is held out.
    max_train : int, optional
        At most this many runs per input choose the event (>= 2); the rest is held out (the
        choice gains little from more, the bound gains from a larger held-out part).
    batch_size : int, optional
        With ``vectorized``, the most copies per call (memory bound); default: all at once.
    progress : callable, optional
        Called with the number of runs just completed (for progress displays).

    Returns
    -------
    AuditResult
        ``.epsilon``, the event, the counts and the Clopper-Pearson bounds.

    Raises
    ------
    TypeError
        ``mechanism`` not callable, a bad ``seed``.
    ValueError
        ``trials`` < 1000, ``alpha`` outside (0, 1) (or below about 1e-323, where α/2 is 0),
        ``delta`` outside [0, 1),
        ``train_fraction`` outside (0, 1), a bad ``batch_size`` or ``max_train``.
    MechanismError
        The mechanism raised (the original exception is chained), returned outputs of changing
        or (vectorized) wrong shape, or outputs on x0 and x1 that cannot be compared.

    Examples
    --------
    >>> import numpy as np, dpnoise.audit as audit
    >>> rng = np.random.default_rng(1)
    >>> rr = lambda x: np.where(rng.random(len(x)) < 0.75, x, 1 - x)   # ε = ln 3
    >>> r = audit.epsilon_lower_bound(rr, 0, 1, trials=100_000, vectorized=True, seed=2)
    >>> bool(1.0 < r.epsilon <= np.log(3))
    True
    """
    if not callable(mechanism):
        raise TypeError(f"mechanism must be callable, got {type(mechanism).__name__}")
    n = check_trials(trials)
    a = check_alpha(alpha)
    d = check_delta(delta)
    frac = real(train_fraction, "train_fraction")
    if not 0.0 < frac < 1.0:
        raise ValueError(f"train_fraction must be in (0, 1), got {frac!r}")
    cap = integer(max_train, "max_train")
    if cap < 2:
        raise ValueError(f"max_train must be at least 2, got {cap}")
    n_train = min(int(n * frac), cap)
    if n_train < 2 or n - n_train < 1:
        raise ValueError(f"train_fraction={frac} leaves no training or no held-out trials of {n}")
    if batch_size is not None:
        batch_size = integer(batch_size, "batch_size")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if not isinstance(vectorized, (bool, np.bool_)):
        raise TypeError(f"vectorized must be a bool, got {type(vectorized).__name__}")
    split = _rng(seed)
    start = time.perf_counter()

    out0 = run_mechanism(mechanism, x0, n, "x0", vectorized=bool(vectorized), batch_size=batch_size,
                         progress=progress)
    out1 = run_mechanism(mechanism, x1, n, "x1", vectorized=bool(vectorized), batch_size=batch_size,
                         progress=progress)
    if out0.shape[1:] != out1.shape[1:]:
        raise MechanismError(f"the mechanism's outputs on x0 and x1 differ in shape: "
                             f"{out0.shape[1:]} and {out1.shape[1:]}")
    numeric = {out0.dtype.kind in "iuf", out1.dtype.kind in "iuf"}
    if len(numeric) > 1:
        raise MechanismError(f"the mechanism's outputs on x0 ({out0.dtype}) and x1 ({out1.dtype}) "
                             f"cannot be compared")
    if out0.dtype != out1.dtype:  # int and float, or strings of different lengths
        common = np.result_type(out0.dtype, out1.dtype)
        out0, out1 = out0.astype(common), out1.astype(common)

    # The runs are independent, so any split chosen without looking at the outputs is valid: a
    # random rotation of each input's runs (contiguous slices, cheap for 10^7 runs), then
    # fit | select | held out.
    n_fit = n_train // 2
    fit0, select0, test0 = _split(out0, int(split.integers(n)), n_fit, n_train)
    fit1, select1, test1 = _split(out1, int(split.integers(n)), n_fit, n_train)

    event, favoured, train_hits, _ = best_event(fit0, fit1, select0, select1, a / 2, d)
    hits0 = int(np.count_nonzero(event.contains(test0)))
    hits1 = int(np.count_nonzero(event.contains(test1)))
    m = n - n_train
    fav, oth = (hits0, hits1) if favoured == 0 else (hits1, hits0)
    eps, p_lower, p_upper = bound_from_counts(fav, oth, m, d, a)
    with np.errstate(divide="ignore", invalid="ignore"):
        est = float(np.log(fav / m - d) - np.log(oth / m)) if fav / m > d else float("nan")
    return AuditResult(epsilon=eps, event=event, favoured=favoured, hits=(hits0, hits1), held_out=m,
                       train_hits=train_hits, train_trials=n_train - n_fit, p_lower=p_lower, p_upper=p_upper,
                       estimate=est, trials=n, delta=d, alpha=a,
                       seconds=time.perf_counter() - start, x0=x0, x1=x1)


@dataclass(frozen=True)
class PairSearchResult:
    """The outcome of :func:`search_pairs`: ``best`` (the largest bound), ``results`` (one per
    pair, in the given order); each bound is at level α/len(pairs), so the largest is valid at
    level α (Bonferroni).

    Attributes
    ----------
    best : AuditResult
        The pair with the largest bound.
    results : tuple of AuditResult
        One per pair, in the given order.
    """

    best: AuditResult
    results: tuple[AuditResult, ...]

    @property
    def epsilon(self) -> float:
        """The largest bound, ``best.epsilon``."""
        return self.best.epsilon


def search_pairs(mechanism: Callable[[Any], Any], pairs: Sequence[tuple[Any, Any]], *, trials: int,
                 delta: float = 0.0, alpha: float = 0.05, seed: Any = None,
                 **options: Any) -> PairSearchResult:
    """Audit several candidate pairs of neighbouring inputs and keep the largest bound.

    Each pair is audited by :func:`epsilon_lower_bound` at level ``alpha / len(pairs)``, so the
    largest of the bounds holds with probability >= 1 - ``alpha`` (Bonferroni's inequality).
    Every pair must be a pair of neighbours (not checked: the auditor cannot know).

    Parameters
    ----------
    mechanism, trials, delta, alpha, seed
        As for :func:`epsilon_lower_bound`; ``seed`` seeds the splits of all pairs.
    pairs : sequence of (x0, x1)
        Candidate neighbouring inputs, at least one.
    **options
        Passed on to :func:`epsilon_lower_bound` (``vectorized``, ``batch_size``, ...).

    Returns
    -------
    PairSearchResult

    Raises
    ------
    ValueError
        No pairs, or an element that is not a pair; ``alpha`` so small that its share per pair
        underflows; the errors of :func:`epsilon_lower_bound`.
    """
    pairs = list(pairs)
    if not pairs:
        raise ValueError("pairs must hold at least one (x0, x1) pair")
    for i, p in enumerate(pairs):
        if not isinstance(p, (tuple, list)) or len(p) != 2:
            raise ValueError(f"pairs[{i}] must be an (x0, x1) pair")
    a = check_alpha(alpha)
    if a / len(pairs) / 2 == 0.0:
        raise ValueError(f"alpha={a!r} is too small for {len(pairs)} pairs: alpha/len(pairs)/2, the level of "
                         f"each Clopper-Pearson bound, is 0 as a float")
    if isinstance(seed, np.random.Generator):
        seeds: list[Any] = [seed] * len(pairs)  # one generator, used pair after pair
    else:
        root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(
            None if seed is None else integer(seed, "seed"))
        seeds = list(root.spawn(len(pairs)))
    results = tuple(epsilon_lower_bound(mechanism, x0, x1, trials=trials, delta=delta, alpha=a / len(pairs),
                                        seed=s, **options) for (x0, x1), s in zip(pairs, seeds))
    best = max(results, key=lambda r: r.epsilon)
    return PairSearchResult(best, results)
