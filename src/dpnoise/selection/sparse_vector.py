"""The sparse vector technique (AboveThreshold and its c-positive form) with exact noise.

Lyu, Su & Li 2017, "Understanding the Sparse Vector Technique for Differential Privacy",
PVLDB 10(6):637-648, Algorithm 1: ε1 = ε/2, ε2 = ε - ε1; a noisy threshold
ρ = T + Lap(Δ/ε1); for each query, ν_i = Lap(2cΔ/ε2) (Lap(cΔ/ε2) for monotonic queries), answer
TRUE when q_i + ν_i >= ρ, halt after c TRUEs. It is ε-DP (Lyu et al., Section 3: the privacy
proof of Algorithm 1 and its monotonic case). docs/sparse_vector.md restates that proof for the
discrete Laplace noise used here, where every integral becomes a sum over the integers.

Exactness: every value is an integer in grid units (the grid 2^k for real queries, chosen as
LaplaceMechanism does; the integers themselves for integer queries with an integral Δ), all
noise is exact discrete Laplace drawn through ``Generator._noisy_grid``, and every comparison is
between integers. No floating-point operation touches the noise (Mironov 2012).
"""
from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from .._release import (
    GRID_BOUND,
    INTEGER_BOUND,
    MAX_LAPLACE_SCALE,
    Mechanism,
    ReleasePlan,
    as_integer_array,
    as_real_array,
    check_beta,
    check_epsilon,
    check_laplace_scale,
    check_sensitivity,
    clamp_to_grid,
    grid as _grid,
    integers_on_grid,
    normalise_shape,
    size_of,
)
from .._release.docs import shared_docs
from .._release.validate import numeric_array
from .._validate import MAX_PART, count, integer, real
from ..accounting.budget import PrivacyBudget
from ..accounting.losses import PureDP
from ..generator import Generator
from ..mechanisms.laplace import discrete_laplace_half_width
from ._scores import check_candidates

# The noisy query values y = v + ν satisfy |y| <= 2^62 (_noisy_grid raises otherwise), so
# clamping the noisy threshold to the int64 range changes no comparison with them.
_INT64_MAX = (1 << 63) - 1
# Query noise is drawn in chunks that grow from FIRST_CHUNK to MAX_CHUNK: a release whose c-th
# positive comes early draws little noise past it, a long release makes few Python calls.
FIRST_CHUNK = 1024
MAX_CHUNK = 1 << 16


@dataclass(frozen=True)
class SparseVectorPlan(ReleasePlan):
    """One release of the sparse vector technique on ``shape`` = (n,) queries, frozen.

    All values are integers in grid units: ``k`` the grid exponent (None: integer queries, no
    rounding); ``sensitivity`` Δ' the per-query sensitivity in grid units (floor(Δ/2^k) + 1 on
    a grid, Δ itself on the integer path); ``threshold_units`` = ceil(T / 2^k), the public
    threshold on the grid (exact for the comparison: q + ν - η is an integer, so it is >= T/2^k
    if and only if it is >= ceil(T/2^k)); ``threshold_scale`` = Δ'/ε1 and ``query_scale`` =
    2cΔ'/ε2 (cΔ'/ε2 for monotonic queries), exact discrete Laplace scales; ``bound`` the clamp
    of the query values (grid units).

    Parameters
    ----------
    k, sensitivity, threshold_units, threshold_scale, query_scale, max_positives, bound
        As described above; the first five fields are those of :class:`~dpnoise.mechanisms.ReleasePlan`.
    """

    k: int | None
    sensitivity: int
    threshold_units: int
    threshold_scale: Fraction
    query_scale: Fraction
    max_positives: int
    bound: int

    def draw_threshold(self, rng: Generator) -> int:
        """The noisy threshold ρ = T + η in grid units, η ~ DLap(Δ'/ε1) (Lyu et al., Alg. 1
        line 2), clamped to the int64 range (which no noisy query value reaches).

        Parameters
        ----------
        rng : dpnoise.Generator
            The secure noise source.

        Returns
        -------
        int
            ρ in grid units.
        """
        eta = rng._noisy_grid(np.zeros(1, dtype=np.int64), law="laplace", param=self.threshold_scale,
                              k=None, bound=INTEGER_BOUND)
        rho = self.threshold_units + int(eta[0])
        return max(-_INT64_MAX, min(_INT64_MAX, rho))

    def noisy(self, rng: Generator, units: np.ndarray) -> np.ndarray:
        """q_i + ν_i, ν_i ~ DLap(query_scale) i.i.d. (Lyu et al., Alg. 1), int64.

        Parameters
        ----------
        rng : dpnoise.Generator
            The secure noise source.
        units : numpy.ndarray
            The query answers in grid units (int64, 1-D).

        Returns
        -------
        numpy.ndarray
            The noisy answers, int64, clamped to ``bound``.
        """
        return rng._noisy_grid(units, law="laplace", param=self.query_scale, k=None, bound=self.bound,
                               threads=self.threads)

    def execute(self, rng: Any, prepared: np.ndarray) -> np.ndarray:
        """The indices (int64, increasing) of the first ``max_positives`` queries whose noisy
        value reaches the noisy threshold; ``prepared`` holds the queries in grid units."""
        n = int(prepared.shape[0])
        if n == 0:
            return np.empty(0, dtype=np.int64)
        rho = np.int64(self.draw_threshold(rng))
        found = []
        need = self.max_positives
        start, size = 0, FIRST_CHUNK
        while start < n and need > 0:  # halt after the c-th TRUE (Alg. 1)
            stop = min(n, start + size)
            hits = np.flatnonzero(self.noisy(rng, prepared[start:stop]) >= rho)[:need]
            found.append(hits + start)
            need -= len(hits)
            start, size = stop, min(2 * size, MAX_CHUNK)
        return np.concatenate(found).astype(np.int64, copy=False)


@shared_docs
class AboveThreshold(Mechanism[SparseVectorPlan]):
    """The sparse vector technique: which queries are above a public threshold, for ε in total.

    ``AboveThreshold(epsilon, threshold, sensitivity=Δ, max_positives=c)`` answers a sequence of
    queries q_1, q_2, ... (each of sensitivity Δ: |q_i(D) - q_i(D')| <= Δ for neighbouring
    datasets) with TRUE/FALSE, halting after c TRUEs, following Lyu, Su & Li 2017 (PVLDB
    10(6)), Algorithm 1: ε1 = ε/2 buys the noisy threshold ρ = T + Lap(Δ/ε1), ε2 = ε - ε1 the
    query noise ν_i = Lap(2cΔ/ε2), or Lap(cΔ/ε2) when ``monotonic=True`` (for every pair of
    neighbours, either all queries go up or all go down). The whole run is ε-DP however many
    queries are asked: the privacy loss is PureDP(ε), charged once.

    * ``release(queries)``: a 1-D array of query answers, known in advance; returns the
      indices (int64 array, increasing, at most c) of the queries reported above the threshold.
    * ``start()``: an interactive session for adaptively chosen queries; ``session.test(q)``
      answers one query with a bool and refuses any query after the c-th TRUE.

    Exact noise: the queries and the threshold are put on a grid and the noise is exact discrete
    Laplace in grid units. Integer queries with an integral Δ use the integers themselves
    (threshold_units = ceil(T): the same comparisons as with T). Real queries use the grid 2^k
    chosen as LaplaceMechanism chooses it (k coarsened for a tiny ε2/c); each query is rounded
    to the nearest multiple of 2^k, which widens the per-query sensitivity to floor(Δ/2^k) + 1
    grid units, and the threshold becomes ceil(T/2^k) grid units, which decides every comparison
    as T itself would. docs/sparse_vector.md has the proof.

    Clamp: query values are clamped to ±2^61 (integer path) or ±2^52 grid units before the noise
    (1-Lipschitz and monotone: Δ and monotonicity are kept), so no exception depends on their
    size; NaN or infinity raises ValueError before any charge (that exception does depend on the
    data: docs/security.md). Timing: the noise samplers' running time grows with |noise|, and a
    release stops drawing noise soon after its c-th TRUE (which its output reveals anyway).
    There is no constant-time mode yet.

    Parameters
    ----------
    epsilon : float
        ε in (0, 100] for the whole run.
    threshold : float
        The public threshold T (finite).
    sensitivity : float, default 1.0
        Δ of each query.
    monotonic : bool, default False
        All queries move the same way between neighbours.
    max_positives : int, default 1
        c, the TRUE answers before the run halts.
    {release_sections}

    Examples
    --------
    >>> import dpnoise
    >>> svt = dpnoise.AboveThreshold(1.0, 50.0)
    >>> svt([3, 4, 90, 2]).dtype
    dtype('int64')
    """

    epsilon: float  # always set (the base allows None for mechanisms calibrated otherwise)
    delta: float

    def __init__(self, epsilon: float, threshold: float, *, sensitivity: float = 1.0,
                 monotonic: bool = False, max_positives: int = 1, rng: Generator | None = None,
                 budget: PrivacyBudget | None = None, threads: int | None = None,
                 allow_insecure: bool = False):
        super().__init__(rng, budget, threads=threads, allow_insecure=allow_insecure)
        self.epsilon = check_epsilon(epsilon)
        self.delta = 0.0
        t = real(threshold, "threshold")
        if math.isinf(t):
            raise ValueError(f"threshold must be finite, got {t!r}")
        self.threshold = t
        self.sensitivity = check_sensitivity(sensitivity)
        if not isinstance(monotonic, (bool, np.bool_)):
            raise TypeError(f"monotonic must be a bool, got {type(monotonic).__name__}")
        self.monotonic = bool(monotonic)
        self.max_positives = count(max_positives, "max_positives")
        self._integral = self.sensitivity == int(self.sensitivity) and self.sensitivity <= MAX_PART
        self._plans: dict[bool, tuple[int | None, int, Fraction, Fraction]] = {}
        # refuse parameters that cannot be served now, not at the first release
        self._calibrate(integer_path=False)
        if self.budget is not None:
            self.budget.accountant.check_supported(PureDP(self.epsilon))

    # -- calibration --------------------------------------------------------------------------
    def _query_factor(self) -> Fraction:
        """ν_i = Lap(factor · Δ) with factor = 2c/ε2, or c/ε2 for monotonic queries (Lyu et al.,
        Alg. 1 and the monotonic case of its proof); ε2 = ε/2 exactly."""
        eps2 = Fraction(self.epsilon) / 2
        return Fraction(self.max_positives if self.monotonic else 2 * self.max_positives) / eps2

    def _calibrate(self, integer_path: bool) -> tuple[int | None, int, Fraction, Fraction]:
        """(k, Δ' in grid units, threshold scale Δ'/ε1, query scale factor·Δ') for the integer
        path (k None) or the grid path; the integer path falls back to a grid when its scales
        would pass 2^44 (the output, a set of indices, does not depend on the path's units)."""
        if integer_path and self._integral:
            sens = int(self.sensitivity)
            scales = self._scales(sens)
            if max(scales) <= MAX_LAPLACE_SCALE:
                return None, sens, scales[0], scales[1]
        k = _grid.default_exponent(self.sensitivity, 1)  # one query at a time: spread 1
        # keep the query scale Δ/2^k · factor within half the limit: coarsen the grid for tiny ε
        need = math.log2(self.sensitivity) + math.log2(self._query_factor()) - math.log2(MAX_LAPLACE_SCALE / 2)
        k = min(max(k, math.ceil(need)), _grid.MAX_EXPONENT)
        units = _grid.grid_units(self.sensitivity, k)
        if units + 1 > MAX_PART:
            raise ValueError(f"sensitivity={self.sensitivity} is too large for the grid 2^{k} (beyond 2^62 grid units)")
        sens = math.floor(units) + 1  # rounding moves each query by at most half a step
        t1, t2 = self._scales(sens)
        what = f"epsilon={self.epsilon} with sensitivity={self.sensitivity} and max_positives={self.max_positives}"
        check_laplace_scale(t2, what + f" on the grid 2^{k}")
        return k, sens, t1, t2

    def _scales(self, sens: int) -> tuple[Fraction, Fraction]:
        eps1 = Fraction(self.epsilon) / 2  # ε1 = ε/2 (Lyu et al., Alg. 1)
        return Fraction(sens) / eps1, self._query_factor() * sens

    def plan(self, shape: Any = (1,), dtype: Any = None) -> SparseVectorPlan:
        """The plan of one release of ``shape`` = (n,) queries; ``dtype`` an integer dtype
        selects the integer path when Δ is integral. An empty release spends nothing."""
        n = _query_count(shape)
        key = _is_integer_dtype(dtype) and self._integral
        if key not in self._plans:
            self._plans[key] = self._calibrate(key)
        k, sens, t1, t2 = self._plans[key]
        return SparseVectorPlan(
            type(self).__name__, PureDP(self.epsilon) if n else PureDP(0.0), (n,), False, self.threads,
            k, sens, _threshold_units(self.threshold, k), t1, t2, self.max_positives,
            INTEGER_BOUND if k is None else GRID_BOUND)

    def privacy_loss(self, shape: Any = (), dtype: Any = None) -> PureDP:
        """PureDP(ε): the loss of one release of any non-empty query vector (``shape`` only
        matters when it is empty: PureDP(0)), or of one session."""
        return PureDP(self.epsilon) if size_of(normalise_shape(shape)) else PureDP(0.0)

    def accuracy(self, beta: float, shape: Any = (), dtype: Any = None) -> float:
        """α with: with probability >= 1 - beta, over the queries of ``shape`` (its size is the
        number of queries; () is one), every query reported TRUE has q_i >= T - α and every
        query answered FALSE has q_i < T + α (queries inside the clamp). Exact discrete Laplace
        tails, beta split in half between the threshold and a union bound over the queries (the
        continuous version: Dwork & Roth 2014, Thm 3.24); on a grid α includes the half step of
        rounding.

        Parameters
        ----------
        beta : float
            The failure probability, in (0, 1).
        shape : tuple of int, default ()
            The query vector's shape (its size is the number of queries).
        dtype : numpy.dtype, optional
            An integer dtype for integer queries, else real ones (on a grid).

        Returns
        -------
        float
            α, in query units.
        """
        b = check_beta(beta)
        n = max(size_of(normalise_shape(shape)), 1)
        p = self.plan((n,), dtype)
        w = discrete_laplace_half_width(float(p.threshold_scale), 1, b / 2) \
            + discrete_laplace_half_width(float(p.query_scale), n, b / 2)
        return float(w) if p.k is None else math.ldexp(w + 0.5, p.k)

    # -- the batch release ----------------------------------------------------------------------
    def _prepare(self, value: Any) -> tuple[np.ndarray, tuple[int, ...], Any]:
        arr = numeric_array(value, "queries")  # types, not magnitudes, decide the path
        if arr.ndim != 1:
            raise ValueError(f"queries must be a 1-D array of query answers, got shape {arr.shape}")
        # shape only: before any conversion
        check_candidates(arr.shape[0], "queries: the number of queries per release")
        x = as_real_array(arr, "queries")
        dtype = np.int64 if x.dtype == np.int64 else np.float64
        return _units(x, self.plan(x.shape, dtype).k), x.shape, dtype

    # -- the interactive form -------------------------------------------------------------------
    def start(self, dtype: Any = np.float64) -> AboveThresholdSession:
        """An interactive session for adaptively chosen queries: charges PureDP(ε) now, draws
        the noisy threshold, and answers ``session.test(q)`` one query at a time. ``dtype`` an
        integer dtype (with an integral Δ) asks for integer queries, answered on the integers.

        Parameters
        ----------
        dtype : numpy.dtype, default numpy.float64
            The queries' dtype.

        Returns
        -------
        AboveThresholdSession
            The running session (ε already spent).

        Raises
        ------
        dpnoise.BudgetExceededError
            When the bound budget cannot pay ε (nothing is drawn).
        ValueError
            For a dtype the parameters cannot serve (e.g. integers with a fractional Δ).
        """
        plan = self.plan((1,), dtype)
        self._charge(plan)  # once, before any noise
        return AboveThresholdSession(self, plan, plan.draw_threshold(self.rng))

    def __repr__(self) -> str:
        mono = ", monotonic=True" if self.monotonic else ""
        return (f"AboveThreshold(epsilon={self.epsilon}, threshold={self.threshold}, "
                f"sensitivity={self.sensitivity}{mono}, max_positives={self.max_positives})")


class AboveThresholdSession:
    """An interactive run of AboveThreshold (from ``AboveThreshold.start()``): ``test(q)``
    answers whether q + ν >= ρ for a fresh ν and the session's noisy threshold ρ, until
    ``max_positives`` TRUEs; then every further ``test`` raises RuntimeError. The noisy
    threshold is secret: a session cannot be copied or pickled (a copy would answer c more
    TRUEs against the same threshold) and is safe to share between threads.

    Parameters
    ----------
    mechanism : AboveThreshold
        The mechanism that started the session (its generator is used).
    plan : SparseVectorPlan
        The session's plan (one query at a time).
    rho : int
        The noisy threshold in grid units (secret).

    Examples
    --------
    >>> import dpnoise
    >>> session = dpnoise.AboveThreshold(1.0, 50.0, max_positives=2).start()
    >>> isinstance(session.test(3.0), bool)
    True
    """

    def __init__(self, mechanism: AboveThreshold, plan: SparseVectorPlan, rho: int):
        self._rng = mechanism.rng
        self._plan = plan
        self._rho = np.int64(rho)
        self._integer = plan.k is None
        self._positives = 0
        self._tested = 0
        self._lock = threading.Lock()
        self.max_positives = plan.max_positives

    def test(self, query: Any) -> bool:
        """Whether the query's answer ``query`` (a real number; an int for an integer session)
        is reported above the threshold. RuntimeError after max_positives TRUEs; ValueError for
        NaN or infinity (the session stays usable: nothing is drawn).

        Parameters
        ----------
        query : float or int
            One query answer.

        Returns
        -------
        bool
            True when the noisy answer reaches the noisy threshold.

        Raises
        ------
        RuntimeError
            After ``max_positives`` TRUE answers (the session has halted).
        TypeError, ValueError
            For a non-numeric, non-scalar, NaN or infinite query.
        """
        if self._integer:
            x = as_integer_array(query, "query")
        else:
            x = as_real_array(query, "query")
        if x.ndim != 0:
            raise ValueError(f"query must be a single number, got shape {x.shape} (use release() for an array)")
        units = _units(x.reshape(1), self._plan.k)
        with self._lock:
            if self._positives >= self.max_positives:
                raise RuntimeError(f"this AboveThreshold session has halted after max_positives="
                                   f"{self.max_positives} positives; start a new one (it spends epsilon again)")
            above = bool(self._plan.noisy(self._rng, units)[0] >= self._rho)
            self._tested += 1
            self._positives += above
        return above

    @property
    def positives(self) -> int:
        """TRUE answers so far."""
        return self._positives

    @property
    def remaining(self) -> int:
        """TRUE answers left before the session halts."""
        return self.max_positives - self._positives

    @property
    def halted(self) -> bool:
        """Whether ``max_positives`` TRUEs have been given (every further test raises)."""
        return self._positives >= self.max_positives

    @property
    def tested(self) -> int:
        """Queries answered so far."""
        return self._tested

    def __reduce__(self) -> Any:
        raise TypeError("an AboveThreshold session cannot be pickled or copied: a copy would answer "
                        "more positives against the same secret threshold")

    def __copy__(self) -> Any:
        self.__reduce__()

    def __deepcopy__(self, memo: Any) -> Any:
        self.__reduce__()

    def __repr__(self) -> str:
        return (f"AboveThresholdSession(tested={self._tested}, positives={self._positives}, "
                f"max_positives={self.max_positives})")


def _query_count(shape: Any) -> int:
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, (bool, np.bool_)):
        shape = (shape,)
    if not (isinstance(shape, tuple) and len(shape) == 1):
        raise ValueError(f"queries must be a 1-D array of query answers, got shape {shape!r}")
    n = integer(shape[0], "shape")
    if n < 0:
        raise ValueError(f"shape must be non-negative, got {n}")
    return n


def _is_integer_dtype(dtype: Any) -> bool:
    if dtype is None:
        return False
    dt = np.dtype(dtype)
    return bool(np.issubdtype(dt, np.integer) or dt == np.bool_)


def _threshold_units(threshold: float, k: int | None) -> int:
    """ceil(T / 2^k) (k None: ceil(T)), exactly: a comparison of an integer with T/2^k is the
    same as with its ceiling."""
    t = Fraction(threshold) if k is None else Fraction(threshold) / Fraction(2) ** k
    return math.ceil(t)


def _units(x: np.ndarray, k: int | None) -> np.ndarray:
    """Queries in grid units, int64: the int64 values themselves (k None), else round(x/2^k)
    (ties to even), clamped to ±2^52 units; exact (integers are rounded without a double)."""
    if k is None:
        return x
    if x.dtype == np.int64:
        return _grid.to_grid(integers_on_grid(x, k), k)
    return _grid.to_grid(clamp_to_grid(x, k), k)


__all__ = ["AboveThreshold", "AboveThresholdSession", "SparseVectorPlan"]
