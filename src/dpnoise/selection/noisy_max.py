"""Report noisy max over score matrices: permute-and-flip, the exponential mechanism and
Laplace report-noisy-max, exact, batched (one C++ call for the whole matrix)."""
from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from .. import _core
from .._release import Mechanism, check_beta, check_epsilon, check_sensitivity, normalise_shape
from .._release.docs import shared_docs
from .._release.mechanism import _UNSET
from .._validate import check_threads
from ..accounting.budget import PrivacyBudget
from ..accounting.losses import PrivacyLoss, ReportNoisyMax as ReportNoisyMaxLoss
from ..generator import Generator, default_rng
from . import _scores
from ._plan import SelectionPlan

# noise= -> (kernel, the accounting descriptor's method name)
NOISE_KINDS: dict[str, tuple[str, str]] = {
    "exponential": ("permute_and_flip", "permute_and_flip"),
    "gumbel": ("exponential_mechanism", "exponential_mechanism"),
    "laplace": ("laplace", "laplace"),
}


def _check_flag(value: Any, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
    return bool(value)


def _check_noise(noise: Any) -> str:
    if not isinstance(noise, str) or noise not in NOISE_KINDS:
        raise ValueError(f"noise must be one of {tuple(NOISE_KINDS)}, got {noise!r}")
    return noise


@shared_docs
class ReportNoisyMax(Mechanism[SelectionPlan]):
    """Private selection: the index of the (noisily) best candidate of each candidate set.

    ``release(scores)``: ``scores`` a 1-D vector (returns one int; for ``k`` > 1 an int64 array
    of k distinct indices in selection order) or a 2-D matrix with one candidate set along
    ``axis`` (returns int64 (rows,), or (rows, k)). Integer scores (any integer or bool dtype,
    any strides) are used as they are, clamped to ±2^61; real scores are rounded to the grid
    2^k with 2^k <= sensitivity/1024 and the sensitivity widened by the rounding
    (floor(Δ/2^k) + 1 grid units). The matrix is never copied: the C++ kernels read it in place,
    a row at a time, with the GIL released, rows split over ``threads``.

    With γ = ε/(2Δ) (or ε/Δ when ``monotonic``: every score moves the same way between
    neighbouring datasets, as counts do), each selection is ε-DP:

    * ``noise="exponential"``: report-noisy-max with exponential noise, which is permute-and-flip
      (McKenna & Sheldon 2020; Ding et al. 2021): candidates in random order, r accepted with
      probability e^{-γ(q* - q_r)}. Never worse in expected score than the exponential mechanism.
    * ``noise="gumbel"``: the exponential mechanism, P(r) ∝ e^{γ q_r} (McSherry & Talwar 2007),
      which is Gumbel-max; it is moreover ε-bounded-range, hence ε²/8-zCDP (Cesar & Rogers 2021).
    * ``noise="laplace"``: argmax of q_r + discrete Laplace noise of scale 1/γ = 2Δ/ε (Δ/ε
      monotone), ties broken uniformly at random (Dwork & Roth 2014, Claim 3.9).

    All three are sampled exactly (integer arithmetic and certified bounds, docs/selection.md).
    ``k`` > 1 selects the top k by peeling: k sequential selections, each over the candidates
    not yet selected, spending k·ε (for the exponential mechanism this equals the one-shot
    Gumbel top-k, Durfee & Rogers 2019). The rows of a matrix are separate selections, composed
    (rows·k selections) unless ``disjoint_rows=True`` says each row is computed on a disjoint part
    of the data (parallel composition: k selections). The budget is charged once per release,
    with :class:`dpnoise.accounting.ReportNoisyMax` (ε, method, selections).

    Timing: the running time depends on the scores, not only on the noise: on how many
    candidates are near each row's maximum (permute-and-flip looks at those one by one), on the
    number of proposals of the exponential mechanism (n / Σ e^{-γ·gap} on average) and on the
    number of ties under Laplace noise. Someone who can time a release learns something about
    the scores. There is no constant-time mode yet (docs/security.md).

    Parameters
    ----------
    epsilon : float
        ε in (0, 100] per selection.
    sensitivity : float, default 1.0
        Δ, how far one neighbour moves any score.
    monotonic : bool, default False
        Scores all move the same way between neighbours (γ = ε/Δ instead of ε/(2Δ)).
    noise : {"exponential", "gumbel", "laplace"}
        Permute-and-flip, the exponential mechanism, or Laplace report-noisy-max.
    k : int, default 1
        Candidates selected per set (peeling).
    axis : int, default -1
        The candidates' axis of a 2-D score matrix.
    disjoint_rows : bool, default False
        Rows computed on disjoint data (parallel composition).
    {release_sections}

    Examples
    --------
    >>> import dpnoise
    >>> rnm = dpnoise.ReportNoisyMax(1.0, monotonic=True)
    >>> rnm([3, 90, 7]) in (0, 1, 2)
    True
    """

    epsilon: float  # always set (the base allows None for mechanisms calibrated otherwise)
    delta: float

    def __init__(self, epsilon: float, *, sensitivity: float = 1.0, monotonic: bool = False,
                 noise: str = "exponential", k: int = 1, axis: int = -1, disjoint_rows: bool = False,
                 rng: Generator | None = None, budget: PrivacyBudget | None = None,
                 threads: int | None = None, allow_insecure: bool = False):
        super().__init__(rng, budget, threads=threads, allow_insecure=allow_insecure)
        self.epsilon = check_epsilon(epsilon)
        self.delta = 0.0
        self.sensitivity = check_sensitivity(sensitivity)
        self.monotonic = _check_flag(monotonic, "monotonic")
        self.noise = _check_noise(noise)
        self.k = _scores.check_k(k)
        _scores.check_axis(axis, 2)  # checked again against each input's dimensions
        self.axis = int(axis)
        self.disjoint_rows = _check_flag(disjoint_rows, "disjoint_rows")
        self._gamma: dict[bool, tuple[Fraction, int | None]] = {}
        self._check_release_possible()

    # -- calibration ---------------------------------------------------------------------------
    def _calibrate(self, real: bool) -> tuple[Fraction, int | None]:
        """(gamma, grid exponent) for integer (grid None) or real scores."""
        if real not in self._gamma:
            if real:
                k, units = _scores.grid_for(self.sensitivity)
                num, den = _scores.selection_gamma(self.epsilon, units, self.monotonic)
                self._gamma[real] = (Fraction(num, den), k)
            else:
                num, den = _scores.selection_gamma(self.epsilon, self.sensitivity, self.monotonic)
                self._gamma[real] = (Fraction(num, den), None)
        return self._gamma[real]

    def _check_release_possible(self) -> None:
        one_set = (1, self.k) if self.axis % 2 == 1 else (self.k, 1)
        loss = self.plan(one_set).loss
        self._calibrate(True)
        if self.budget is not None:
            self.budget.accountant.check_supported(loss)

    def plan(self, shape: Any = (), dtype: Any = None) -> SelectionPlan:
        """The plan for scores of this shape (1-D or 2-D, candidates along ``axis``; () means one
        vector of k candidates) and dtype (a real dtype selects the grid; default: integers).
        Raises if k exceeds the number of candidates or an axis is empty."""
        shape = normalise_shape(shape)
        if shape == ():
            shape = (self.k,)
        real = dtype is not None and bool(np.issubdtype(np.dtype(dtype), np.floating))
        layout = _scores.layout_of(shape, self.axis, real)
        if layout.columns == 0 or layout.rows == 0:
            raise ValueError("scores has a zero-size axis: there is nothing to select from")
        _scores.check_k(self.k, layout.columns)
        gamma, grid = self._calibrate(real)
        method, loss_method = NOISE_KINDS[self.noise]
        selections = self.k * (1 if (layout.vector or self.disjoint_rows) else layout.rows)
        loss: PrivacyLoss = ReportNoisyMaxLoss(self.epsilon, loss_method, selections=selections)
        return SelectionPlan(type(self).__name__, loss, shape, layout.vector and self.k == 1, self.threads,
                             method, gamma, grid, self.k, layout.vector)

    def privacy_loss(self, shape: Any = (), dtype: Any = None) -> PrivacyLoss:
        """The loss one release over scores of this shape spends (default (): one vector)."""
        return self.plan(shape, dtype).loss

    def accuracy(self, beta: float, shape: Any = (), dtype: Any = None) -> float:
        """x such that, for each selection, P(selected score < best score - x) <= beta, in score
        units (docs/selection.md, Lemma 3): ln(n/β)/γ for permute-and-flip and the exponential
        mechanism (a candidate x below the best is output with probability at most e^{-γx}),
        2·ln(2n/β)/γ for Laplace (two noises must move by x/2); n candidates; real scores add
        one grid step for the rounding.

        Parameters
        ----------
        beta : float
            The failure probability, in (0, 1).
        shape : tuple of int
            The scores' shape, (n,) or (rows, n) with n candidates along ``axis`` (required).
        dtype : numpy.dtype, optional
            The scores' dtype (a real dtype adds the grid rounding).

        Returns
        -------
        float
            x, in score units.

        Raises
        ------
        ValueError
            For ``beta`` outside (0, 1), ``shape=()``, or a shape the plan refuses.
        """
        b = check_beta(beta)
        if normalise_shape(shape) == ():
            raise ValueError("accuracy needs the scores' shape: (n,) or (rows, n) with n candidates")
        p = self.plan(shape, dtype)
        n = _scores.layout_of(p.shape, self.axis, p.grid_exponent is not None).columns
        g = float(p.gamma)
        x = 2.0 * math.log(2 * n / b) / g if self.noise == "laplace" else math.log(n / b) / g
        if p.grid_exponent is not None:
            return (x + 1.0) * 2.0 ** p.grid_exponent
        return x

    # -- the release ---------------------------------------------------------------------------
    def _fast_array(self, x: np.ndarray, out: Any) -> Any:
        """One crossing for a 1-D or 2-D score array of a dtype the kernels read in place: the
        kernel checks real scores finite, then charges (the budget's spend), then selects
        (``_core.select_rows`` with ``charge``). _UNSET for anything else (the general path)."""
        dt = x.dtype
        if out is not None or x.ndim not in (1, 2) or x.size == 0 or dt not in _scores.DIRECT_DTYPES:
            return _UNSET
        key = (x.shape, dt)
        route = self._array_routes.get(key)
        if route is None:
            try:
                plan = self._plan_for(x.shape, dt)
            except (ValueError, TypeError):  # the general path raises it, with its message
                return _UNSET
            g = Fraction(plan.gamma)
            route = (plan, g.numerator, g.denominator, _scores.check_axis(self.axis, x.ndim))
            if len(self._array_routes) >= 64:
                self._array_routes.clear()
            self._array_routes[key] = route
        plan, gnum, gden, axis = route
        view = x[np.newaxis, :] if x.ndim == 1 else (x if axis == 1 else x.T)
        budget = self.budget
        charge: Any = True if budget is None else (
            lambda: budget.spend(plan.loss, label=plan.mechanism, insecure=not self.rng._secure))
        picked = _core.select_rows(self.rng._core, plan.method, view, plan.grid_exponent, gnum, gden, plan.k,
                                   plan.threads, charge)
        return plan.result(picked)

    def _prepare(self, value: Any) -> tuple[np.ndarray, tuple[int, ...], Any]:
        view, layout, shape = _scores.prepare_scores(value, self.axis)
        _scores.check_k(self.k, layout.columns)
        return view, shape, view.dtype

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(epsilon={self.epsilon}, sensitivity={self.sensitivity}, "
                f"noise={self.noise!r}, k={self.k}, monotonic={self.monotonic})")


@shared_docs
class ExponentialMechanism(ReportNoisyMax):
    """The exponential mechanism (McSherry & Talwar 2007) over a utility vector (or one vector
    per row of a matrix): P(r) ∝ exp(ε u_r / (2Δu)), or exp(ε u_r/Δu) for monotone utilities,
    sampled exactly. ``release(utilities)`` returns the index; ``select(candidates, utilities)``
    the candidate itself. It is ``ReportNoisyMax(noise="gumbel")``: ε-DP per selection and
    ε-bounded-range, so ε²/8-zCDP (Cesar & Rogers 2021), which the zCDP/RDP accountants use.

    Timing: the number of proposals (n / Σ e^{-γ·gap} on average) depends on the utilities, so
    the running time does too. There is no constant-time mode yet (docs/security.md).

    Parameters
    ----------
    epsilon : float
        ε in (0, 100] per selection.
    utility_sensitivity : float, default 1.0
        Δu.
    monotonic, k, axis, disjoint_rows
        As for :class:`ReportNoisyMax`.
    {release_sections}

    Examples
    --------
    >>> import dpnoise
    >>> em = dpnoise.ExponentialMechanism(1.0)
    >>> em.select(["a", "b", "c"], [1.0, 50.0, 2.0]) in ("a", "b", "c")
    True
    """

    def __init__(self, epsilon: float, utility_sensitivity: float = 1.0, *, monotonic: bool = False, k: int = 1,
                 axis: int = -1, disjoint_rows: bool = False, rng: Generator | None = None,
                 budget: PrivacyBudget | None = None, threads: int | None = None,
                 allow_insecure: bool = False):
        super().__init__(epsilon, sensitivity=utility_sensitivity, monotonic=monotonic, noise="gumbel", k=k,
                         axis=axis, disjoint_rows=disjoint_rows, rng=rng, budget=budget, threads=threads,
                         allow_insecure=allow_insecure)

    @property
    def utility_sensitivity(self) -> float:
        """Δu, the utilities' sensitivity (the ``sensitivity`` of the underlying selection)."""
        return self.sensitivity

    def select(self, candidates: Sequence[Any], utilities: Any) -> Any:
        """The selected candidate (or, for k > 1, the list of k candidates in selection order)
        from ``candidates`` (a sequence) with the 1-D ``utilities`` (one per candidate).

        Parameters
        ----------
        candidates : sequence
            The candidates (anything with ``len()`` and indexing).
        utilities : array_like
            One utility per candidate, 1-D, integers or finite reals.

        Returns
        -------
        object or list
            The selected candidate, or a list of k candidates in selection order.

        Raises
        ------
        TypeError
            If ``candidates`` is not a sequence (or for bad utilities, as ``release``).
        ValueError
            For utilities that are not 1-D or differ in length from ``candidates``.
        dpnoise.BudgetExceededError
            When the bound budget cannot pay for the selection.
        """
        u = np.asarray(utilities) if not isinstance(utilities, np.ndarray) else utilities
        if u.ndim != 1:
            raise ValueError(f"utilities must be 1-D for select(), got {u.ndim}-D")
        try:
            n = len(candidates)
        except TypeError:
            raise TypeError("candidates must be a sequence (with len() and indexing)") from None
        if n != u.shape[0]:
            raise ValueError(f"candidates and utilities differ in length ({n} and {u.shape[0]})")
        picked = self.release(u)
        if self.k == 1:
            return candidates[int(picked)]
        return [candidates[int(i)] for i in picked]


def report_noisy_max(scores: Any, epsilon: float, *, sensitivity: float = 1.0, monotonic: bool = False,
                     noise: str = "exponential", k: int = 1, axis: int = -1, rng: Generator | None = None,
                     threads: int | None = None, allow_insecure: bool = False) -> int | np.ndarray:
    """Report noisy max in one call: ``ReportNoisyMax(epsilon, ...).release(scores)`` (see that
    class for the methods, shapes, exactness and privacy). ε-DP per row and per selection; the
    rows of a matrix are separate selections. ``rng`` must be secure (``dpnoise.default_rng()``,
    the default) unless ``allow_insecure=True`` (tests and benchmarks).

    Parameters
    ----------
    scores : array_like
        A 1-D score vector or a 2-D matrix (one candidate set along ``axis``); integers
        (any size: Python ints are converted exactly) or finite reals.
    epsilon, sensitivity, monotonic, noise, k, axis, rng, threads, allow_insecure
        As for :class:`ReportNoisyMax`.

    Returns
    -------
    int or numpy.ndarray
        The selected index (vector, k = 1), or int64 indices.

    Raises
    ------
    TypeError
        For non-numeric scores (datetime64/timedelta64 included) or bad argument types.
    ValueError
        For NaN or infinity, an empty axis, more than 2^32 - 1 candidates, or bad parameters.

    Examples
    --------
    >>> import dpnoise
    >>> dpnoise.report_noisy_max([2**70, 5, 6], 1.0) in (0, 1, 2)
    True
    """
    check_threads(threads)
    params = (epsilon, sensitivity, monotonic, noise, k, axis, threads, allow_insecure, id(rng))
    key: tuple[tuple[type, Any], ...] | None = None
    if all(type(v) in _KEY_TYPES for v in params[:-1]):
        key = tuple((type(v), v) for v in params)
        mech = _made.get(key)
        if mech is not None and mech.rng is (rng if rng is not None else mech.rng):
            return mech.release(scores)
    made = ReportNoisyMax(epsilon, sensitivity=sensitivity, monotonic=monotonic, noise=noise, k=k, axis=axis,
                          rng=rng if rng is not None else _shared_rng(), threads=threads,
                          allow_insecure=allow_insecure)
    if key is not None:
        if len(_made) >= 64:
            _made.clear()
        _made[key] = made
    return made.release(scores)


# report_noisy_max's memory: the mechanism of each recently used set of exact parameters (it is
# validated and calibrated once; only its own rng is ever used with it), and one secure
# generator for the calls that pass no rng (keyed from the OS; a forked child re-keys it).
_KEY_TYPES = frozenset({int, float, bool, str, type(None), np.float64, np.int64})
_made: dict[tuple[tuple[type, Any], ...], ReportNoisyMax] = {}
_shared: list[Generator] = []


def _shared_rng() -> Generator:
    if not _shared:
        _shared.append(default_rng())
    return _shared[0]


__all__ = ["ExponentialMechanism", "ReportNoisyMax", "SelectionPlan", "report_noisy_max"]
