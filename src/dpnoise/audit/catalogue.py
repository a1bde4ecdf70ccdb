"""The audit catalogue: dpnoise's mechanisms, NumPy's naive float Laplace, a mis-calibrated
mechanism and, when installed, diffprivlib's and OpenDP's mechanisms, each with the inputs that
push its privacy loss to the claim.

Every dpnoise mechanism runs from a seeded (insecure) generator with ``allow_insecure=True``:
this is a test. The real-valued dpnoise mechanisms (Laplace, Gaussian) are audited through the
plan of a scalar release executed over a batch of trials (``mechanism.plan(())`` with the batch's
shape): the same exact kernel ``release()`` runs after the charge, without calibrating the noise
to a vector query (a batch released as one vector would get noise for an L1/L2 sensitivity over
all of its coordinates).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

import dpnoise

Maker = Callable[[int], Callable[[Any], Any]]  # seed -> mechanism

GAUSSIAN_DELTA = 1e-5
SELECTION_CANDIDATES = 32


@dataclass(frozen=True)
class Entry:
    """One audit: a mechanism (made from a seed), its claimed (ε, δ), the neighbouring input
    pairs to try, whether it takes a batch of copies (``vectorized``) and what the audit should
    find: ``expect`` "holds" (bound <= claim), "refuted" (bound > claim) or "measured" (a peer's
    claim, reported either way; it does not decide the exit status). ``slow`` entries run the
    per-call number of trials even when vectorized.

    Attributes
    ----------
    name, library : str
        The mechanism's name and the library it comes from.
    epsilon, delta : float
        The claimed guarantee.
    make : callable
        seed -> mechanism (a callable on one input, or on a batch when ``vectorized``).
    pairs : tuple of (Any, Any)
        The neighbouring inputs to try.
    vectorized : bool
        Whether the mechanism takes a batch of copies.
    expect : {"holds", "refuted", "measured"}
        What the audit should find.
    note : str
        Shown beside the result.
    slow : bool
        Run the per-call number of trials.
    """

    name: str
    library: str
    epsilon: float
    delta: float
    make: Maker
    pairs: tuple[tuple[Any, Any], ...]
    vectorized: bool = True
    expect: str = "holds"
    note: str = ""
    slow: bool = False


@dataclass
class Catalogue:
    """The audits to run and the peers that could not be loaded.

    Attributes
    ----------
    entries : list of Entry
        The audits.
    unavailable : dict of str to str
        Peer library -> why it is missing (its import error's text).
    """

    entries: list[Entry]
    unavailable: dict[str, str] = field(default_factory=dict)  # library -> why (import error text)


def _rng(seed: int) -> dpnoise.Generator:
    return dpnoise.default_rng(seed)  # seeded: insecure, for this test only


def _bind(build: Callable[..., Callable[[Any], Any]], *params: Any) -> Callable[[int], Callable[[Any], Any]]:
    """``make(seed) = build(seed, *params)``: an entry's maker with this loop's ε (and noise) bound
    now, not looked up when the maker runs."""
    return lambda seed: build(seed, *params)


def _batched_scalar_plan(mech: Any) -> Callable[[Any], Any]:
    """Run a real-valued dpnoise mechanism's scalar plan over a batch of trial inputs."""
    plan = mech.plan((), np.float64)

    def run(x: Any) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        return dataclasses.replace(plan, shape=x.shape, scalar=False).execute(mech.rng, x)
    return run


def _batched_histogram(mech: Any) -> Callable[[Any], Any]:
    """Run a Histogram's plan over a batch of copies of one dataset (rows of the input): the
    exact counts of the first copy, noised once per copy by the plan's kernel."""
    plan = mech.plan()

    def run(copies: Any) -> np.ndarray:
        copies = np.asarray(copies)
        counts = mech.counts(copies[0])
        batch = np.broadcast_to(counts, (len(copies), *counts.shape)).copy()
        return dataclasses.replace(plan, shape=batch.shape).execute(mech.rng, batch)
    return run


def _first_positive(mech: Any) -> Callable[[Any], int]:
    """AboveThreshold with one positive: the index of the query reported above, or -1."""
    def run(queries: Any) -> int:
        picked = mech.release(queries)
        return int(picked[0]) if len(picked) else -1
    return run


SVT_QUERIES = 8


def _svt_pair() -> tuple[np.ndarray, np.ndarray]:
    """Each query moves by 1: on x0 only the last is above the threshold 0.5, on x1 all but it."""
    x0 = np.zeros(SVT_QUERIES)
    x0[-1] = 1.0
    return x0, 1.0 - x0


def _selection_pair() -> tuple[np.ndarray, np.ndarray]:
    """Scores moving by at most 1 each (sensitivity 1, not monotone): candidate 0 best on x1,
    worst on x0; the normaliser moves the other way, so P(0) changes by nearly e^ε."""
    x0 = np.ones(SELECTION_CANDIDATES, dtype=np.int64)
    x0[0] = 0
    x1 = np.zeros(SELECTION_CANDIDATES, dtype=np.int64)
    x1[0] = 1
    return x0, x1


def dpnoise_entries(epsilons: Sequence[float]) -> list[Entry]:
    out: list[Entry] = []
    real_pair = ((0.0, 1.0),)
    int_pair = ((0, 1),)
    for eps in epsilons:
        out += [
            Entry("LaplaceMechanism", "dpnoise", eps, 0.0,
                  _bind(lambda s, e: _batched_scalar_plan(
                      dpnoise.LaplaceMechanism(e, rng=_rng(s), allow_insecure=True)), eps),
                  real_pair, note="grid 2^-10, sensitivity 1"),
            Entry("DiscreteLaplaceMechanism", "dpnoise", eps, 0.0,
                  _bind(lambda s, e: dpnoise.DiscreteLaplaceMechanism(e, rng=_rng(s), allow_insecure=True), eps),
                  int_pair, note="= GeometricMechanism"),
            Entry("GaussianMechanism", "dpnoise", eps, GAUSSIAN_DELTA,
                  _bind(lambda s, e: _batched_scalar_plan(
                      dpnoise.GaussianMechanism(e, GAUSSIAN_DELTA, rng=_rng(s), allow_insecure=True)), eps),
                  real_pair, note="analytic calibration"),
            Entry("DiscreteGaussianMechanism", "dpnoise", eps, GAUSSIAN_DELTA,
                  _bind(lambda s, e: dpnoise.DiscreteGaussianMechanism(e, GAUSSIAN_DELTA, rng=_rng(s),
                                                                     allow_insecure=True), eps),
                  int_pair),
            Entry("RandomizedResponse", "dpnoise", eps, 0.0,
                  _bind(lambda s, e: dpnoise.RandomizedResponse(e, 2, rng=_rng(s), allow_insecure=True), eps),
                  int_pair, note="2 categories"),
        ]
        out += [
            Entry("Histogram", "dpnoise", eps, 0.0,
                  _bind(lambda s, e: _batched_histogram(
                      dpnoise.Histogram(e, categories=4, rng=_rng(s), allow_insecure=True)), eps),
                  (([0, 1, 2, 3], [0, 1, 2, 3, 0]),), note="4 categories, add/remove one record"),
            Entry("ExponentialMechanism", "dpnoise", eps, 0.0,
                  _bind(lambda s, e: dpnoise.ExponentialMechanism(e, rng=_rng(s), allow_insecure=True), eps),
                  (_selection_pair(),), note=f"{SELECTION_CANDIDATES} candidates"),
            Entry("AboveThreshold", "dpnoise", eps, 0.0,
                  _bind(lambda s, e: _first_positive(
                      dpnoise.AboveThreshold(e, 0.5, rng=_rng(s), allow_insecure=True)), eps),
                  (_svt_pair(),), vectorized=False,
                  note=f"{SVT_QUERIES} queries, one positive; output: its index"),
        ]
        for noise, what in (("exponential", "permute-and-flip"), ("gumbel", "exponential mechanism"),
                            ("laplace", "Laplace noise")):
            out.append(Entry(
                f"report_noisy_max[{noise}]", "dpnoise", eps, 0.0,
                _bind(lambda s, e, nz: dpnoise.ReportNoisyMax(e, noise=nz, rng=_rng(s), allow_insecure=True),
                      eps, noise),
                (_selection_pair(),), note=f"{what}, {SELECTION_CANDIDATES} candidates"))
    return out


def flawed_entries(epsilons: Sequence[float]) -> list[Entry]:
    out: list[Entry] = []
    for eps in epsilons:
        def numpy_laplace(seed: int, e: float = eps) -> Callable[[Any], Any]:
            g = np.random.default_rng(seed)
            return lambda x: g.laplace(np.asarray(x, dtype=np.float64), 1.0 / e)  # x + Lap(1/ε) in floats
        out.append(Entry("Generator.laplace (x + Lap(1/eps))", "numpy", eps, 0.0, numpy_laplace,
                         ((0.0, 1.0),), expect="refuted", note="Mironov 2012: float noise"))
        out.append(Entry("LaplaceMechanism(2 eps) claimed as eps", "dpnoise", eps, 0.0,
                         _bind(lambda s, e: _batched_scalar_plan(
                             dpnoise.LaplaceMechanism(2 * e, rng=_rng(s), allow_insecure=True)), eps),
                         ((0.0, 1.0),), expect="refuted", note="mis-calibrated: scale for 2 eps"))
    return out


def _diffprivlib_entries(epsilons: Sequence[float]) -> list[Entry]:
    import diffprivlib.mechanisms as dm
    out: list[Entry] = []
    for eps in epsilons:
        def laplace(seed: int, e: float = eps) -> Callable[[Any], Any]:
            return dm.Laplace(epsilon=e, sensitivity=1.0, random_state=seed).randomise

        def geometric(seed: int, e: float = eps) -> Callable[[Any], Any]:
            return dm.Geometric(epsilon=e, sensitivity=1, random_state=seed).randomise

        def gaussian(seed: int, e: float = eps) -> Callable[[Any], Any]:
            return dm.GaussianAnalytic(epsilon=e, delta=GAUSSIAN_DELTA, sensitivity=1.0,
                                       random_state=seed).randomise

        def snapping(seed: int, e: float = eps) -> Callable[[Any], Any]:
            return dm.Snapping(epsilon=e, sensitivity=1.0, lower=-10.0, upper=10.0,
                               random_state=seed).randomise

        out += [
            Entry("mechanisms.Laplace", "diffprivlib", eps, 0.0, laplace, ((0.0, 1.0),), vectorized=False,
                  expect="measured"),
            Entry("mechanisms.Geometric", "diffprivlib", eps, 0.0, geometric, ((0, 1),), vectorized=False,
                  expect="measured"),
            Entry("mechanisms.GaussianAnalytic", "diffprivlib", eps, GAUSSIAN_DELTA, gaussian, ((0.0, 1.0),),
                  vectorized=False, expect="measured"),
            Entry("mechanisms.Snapping", "diffprivlib", eps, 0.0, snapping, ((0.0, 1.0),), vectorized=False,
                  expect="measured", note="bounds [-10, 10]"),
        ]
    return out


def _opendp_entries(epsilons: Sequence[float]) -> list[Entry]:
    import opendp.prelude as dp
    dp.enable_features("contrib")
    out: list[Entry] = []
    for eps in epsilons:
        def laplace(seed: int, e: float = eps) -> Callable[[Any], Any]:
            m = dp.m.make_laplace(dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l1_distance(T=float),
                                  scale=1.0 / e)
            return lambda x: np.asarray(m([float(v) for v in np.asarray(x)]))  # OpenDP's own secure RNG

        def geometric(seed: int, e: float = eps) -> Callable[[Any], Any]:
            m = dp.m.make_laplace(dp.vector_domain(dp.atom_domain(T=int)), dp.l1_distance(T=int), scale=1.0 / e)
            return lambda x: np.asarray(m([int(v) for v in np.asarray(x)]))

        out += [
            Entry("make_laplace (float)", "opendp", eps, 0.0, laplace, ((0.0, 1.0),), expect="measured",
                  slow=True, note="vector domain, one copy per trial; OpenDP's own unseeded RNG"),
            Entry("make_laplace (int)", "opendp", eps, 0.0, geometric, ((0, 1),), expect="measured", slow=True,
                  note="discrete Laplace; OpenDP's own unseeded RNG"),
        ]
    return out


PEERS: dict[str, Callable[[Sequence[float]], list[Entry]]] = {
    "diffprivlib": _diffprivlib_entries,
    "opendp": _opendp_entries,
}


def catalogue(epsilons: Sequence[float] = (0.5, 1.0, 2.0), *, peers: bool = True) -> Catalogue:
    """Every entry at these ε; peers whose import fails are listed in ``unavailable`` with the
    exception's text (an installed peer that fails to import is not "not installed").

    Parameters
    ----------
    epsilons : sequence of float, default (0.5, 1.0, 2.0)
        The claimed ε of each entry.
    peers : bool, default True
        Include the peer libraries' mechanisms (diffprivlib, OpenDP) when importable.

    Returns
    -------
    Catalogue
        dpnoise's entries, the deliberately flawed ones and the peers'.
    """
    cat = Catalogue(dpnoise_entries(epsilons) + flawed_entries(epsilons))
    if peers:
        for name, entries in PEERS.items():
            try:
                cat.entries += entries(epsilons)
            except ImportError as exc:
                cat.unavailable[name] = f"{type(exc).__name__}: {exc}"
            except Exception as exc:  # installed but broken
                cat.unavailable[name] = f"import failed: {type(exc).__name__}: {exc}"
    return cat


__all__ = ["Catalogue", "Entry", "GAUSSIAN_DELTA", "PEERS", "catalogue"]
