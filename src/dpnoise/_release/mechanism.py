"""Release steps 2-4, plan, charge, execute: the one release path of every mechanism and
selection (``Mechanism.release``)."""
from __future__ import annotations

import os
from typing import Any, Optional, Tuple

from .._validate import MAX_THREADS, check_threads
from ..accounting.budget import PrivacyBudget
from ..accounting.losses import ApproxDP, PrivacyLoss
from ..generator import Generator, secure_generator
from .buffers import out_array
from .plan import ReleasePlan


def default_threads() -> int:
    """Every CPU this process may run on (threads=None): outputs never depend on the thread count
    (chunk c of a request always reads stream c, docs/reproducibility.md), and a request of one
    chunk (2^16 values) runs on one thread whatever the count. ``Generator`` methods instead
    default to one thread (threads=None there means 1: a sampling call does not spread over
    the machine unless asked). The affinity mask is read where the OS has one; where it is
    missing or cannot be read (an OSError in some sandboxes), os.cpu_count() is used."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # no affinity call on this OS, or it failed
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, MAX_THREADS))


class Mechanism:
    """Base class: one release path for every mechanism.

    ``release(value)`` (and ``__call__``): (1) ``_prepare`` validates and prepares the input;
    everything that can fail fails here, before any budget or noise; (2) ``plan(shape, dtype)``
    builds the frozen :class:`~dpnoise.mechanisms.ReleasePlan`; (3) the bound budget is charged
    once with ``plan.loss`` (label: the mechanism's name); (4) ``plan.execute(rng, prepared)``
    draws the noise. Subclasses implement ``_prepare`` and ``plan`` (and ``accuracy``), never
    ``release``.

    The generator must be secure (``rng.is_secure``): a seeded generator repeats its noise,
    and anyone holding the seed subtracts it, so it is refused with
    :class:`dpnoise.InsecureGeneratorError` unless ``allow_insecure=True`` (tests only); such
    releases are charged with ``insecure=True`` in the budget's ledger.
    """

    epsilon: Optional[float]
    delta: Optional[float]

    def __init__(self, rng: Optional[Generator], budget: Optional[PrivacyBudget], *,
                 threads: Any = None, allow_insecure: bool = False):
        if budget is not None and not isinstance(budget, PrivacyBudget):
            raise TypeError(f"budget must be a dpnoise.accounting.PrivacyBudget, got {type(budget).__name__}")
        rng = secure_generator(rng, allow_insecure, drawn="noise (and so subtracted)")
        self.rng = rng
        self.budget = budget
        self.threads = default_threads() if threads is None else check_threads(threads)
        self.allow_insecure = bool(allow_insecure)

    def _check_release_possible(self) -> None:
        """Called at the end of every constructor: a scalar (or one-record) plan must build, and
        the budget's accountant must be able to compose its loss, so that bad parameters fail
        here and a release cannot fail at the charge."""
        loss = self.plan(()).loss
        if self.budget is None:
            return
        try:
            self.budget.accountant.check_supported(loss)
        except ValueError as exc:
            if getattr(self, "constant_time", False) and isinstance(loss, ApproxDP):
                raise ValueError(
                    f"{exc}. constant_time=True states its failure term (1 + e^epsilon)·d·2^-64 at the "
                    "target epsilon, an (epsilon, delta) statement: use a 'basic', 'advanced' or 'pld' "
                    "budget, or give a Gaussian mechanism rho= (or noise_multiplier=) instead of epsilon "
                    "and delta, whose constant-time loss every accountant composes") from None
            raise

    # -- the plan ---------------------------------------------------------------------------
    def plan(self, shape: Any = (), dtype: Any = None) -> ReleasePlan:  # pragma: no cover - abstract
        """The frozen plan of one release of a query of this shape (and dtype, for mechanisms
        whose grid depends on it); raises for anything that cannot be released.

        Parameters
        ----------
        shape : tuple of int, default ()
            The shape of the query answer (() for a scalar).
        dtype : numpy.dtype, optional
            The answer's dtype, for mechanisms whose grid or output depends on it.

        Returns
        -------
        ReleasePlan
            Sampler, scales and the privacy loss one release spends.

        Raises
        ------
        ValueError
            When the parameters cannot serve a query of this shape (e.g. a loss too large).
        """
        raise NotImplementedError

    def privacy_loss(self, shape: Any = (), dtype: Any = None) -> PrivacyLoss:
        """The privacy loss one release of a query of this shape spends (``plan(shape).loss``);
        mechanisms whose loss does not depend on the shape ignore it.

        Parameters
        ----------
        shape : tuple of int, default ()
            The shape of the query answer.
        dtype : numpy.dtype, optional
            The answer's dtype.

        Returns
        -------
        dpnoise.accounting.PrivacyLoss
            The descriptor charged to the budget per release.
        """
        return self.plan(shape, dtype).loss

    def accuracy(self, beta: float, shape: Any = ()) -> float:  # pragma: no cover - abstract
        """A bound on the release's error that holds with probability at least 1 - beta.

        Parameters
        ----------
        beta : float
            The failure probability, in (0, 1).
        shape : tuple of int, default ()
            The query shape (the bound holds for every entry at once, by a union bound).

        Returns
        -------
        float
            The error bound, in the query's units.

        Raises
        ------
        ValueError
            For ``beta`` outside (0, 1).
        """
        raise NotImplementedError

    # -- the release path ----------------------------------------------------------------------
    def _prepare(self, value: Any) -> Tuple[Any, Tuple[int, ...], Any]:  # pragma: no cover
        """(prepared input, query shape, dtype for plan()); raises for bad input."""
        raise NotImplementedError

    def _charge(self, plan: ReleasePlan) -> None:
        if self.budget is None:
            return
        self.budget.spend(plan.loss, label=plan.mechanism, insecure=not self.rng.is_secure)

    def release(self, value: Any, out: Any = None) -> Any:
        """The private answer for ``value`` (the true query result).

        Parameters
        ----------
        value : array_like
            The true query answer: a scalar, a NumPy array, or any CPU array exposing the
            buffer protocol or ``__dlpack__``.
        out : array, optional
            Where to write the answer (mechanisms whose plans support it: the grid mechanisms).
            It must be writable and C-contiguous, of the answer's shape and dtype, and may be
            ``value`` itself (in place: nothing is allocated). It is checked before the charge
            and is either fully written or untouched.

        Returns
        -------
        The noisy answer (``out`` itself when given).

        Raises
        ------
        TypeError, ValueError
            For bad input or a bad ``out``, before the budget is charged.
        dpnoise.BudgetExceededError
            When the bound budget cannot pay for this release (nothing is drawn).
        """
        prepared, shape, dtype = self._prepare(value)  # bad input fails here
        plan = self.plan(shape, dtype)  # and parameters that cannot serve this shape here
        target = None
        if out is not None:  # a bad out= fails here too, before the charge
            result = plan.result_dtype(prepared)
            if result is None:
                raise TypeError(f"{type(self).__name__} does not support out=")
            target = out_array(out, tuple(shape), result)
        self._charge(plan)  # once, before any noise; BudgetExceededError leaves all untouched
        if target is None:
            return plan.execute(self.rng, prepared)
        plan.execute_into(self.rng, prepared, target)
        return out

    def __call__(self, value: Any, out: Any = None) -> Any:
        """``release(value, out)``."""
        return self.release(value, out)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(epsilon={self.epsilon}, delta={self.delta})"
