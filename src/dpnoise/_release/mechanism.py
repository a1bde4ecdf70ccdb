"""Release steps 2-4, plan, charge, execute: the one release path of every mechanism and
selection (``Mechanism.release``)."""
from __future__ import annotations

import os
from collections.abc import Hashable
from math import isfinite
from typing import Any, Generic, TypeVar

import numpy as np

from .._validate import MAX_THREADS, check_threads
from ..accounting.budget import PrivacyBudget
from ..accounting.losses import ApproxDP, PrivacyLoss
from ..generator import Generator, secure_generator
from .buffers import out_array
from .plan import INTEGER_BOUND, ReleasePlan

# plans kept per mechanism (by shape and dtype); beyond it the memory is cleared, never stale
_PLANS_KEPT = 64
# Python scalar types that have one-call routes (exact types only: a subclass takes the
# general path, so nothing it overrides is bypassed)
_SCALAR_TYPES = frozenset({float, int, np.float64, np.int64})
_UNSET = object()
_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)
# the plan type a mechanism builds: Mechanism[NoisyGridPlan] and so on, so that a subclass reads
# its own plan's fields (k, param, gamma...) from plan(), _plan_for() and _array_plan()
PlanT = TypeVar("PlanT", bound=ReleasePlan)


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


class Mechanism(Generic[PlanT]):
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

    epsilon: float | None
    delta: float | None

    def __init__(self, rng: Generator | None, budget: PrivacyBudget | None, *,
                 threads: Any = None, allow_insecure: bool = False):
        if budget is not None and not isinstance(budget, PrivacyBudget):
            raise TypeError(f"budget must be a dpnoise.accounting.PrivacyBudget, got {type(budget).__name__}")
        rng = secure_generator(rng, allow_insecure, drawn="noise (and so subtracted)")
        self.rng = rng
        self.budget = budget
        self.threads = default_threads() if threads is None else check_threads(threads)
        self.allow_insecure = bool(allow_insecure)
        # the fast path's memory (docs/mechanisms.md, "Every size"): plans by (shape, dtype) and
        # the scalar route of each Python type; a mechanism's parameters never change after
        # construction, so neither can go stale
        self._kept_plans: dict[tuple[Any, Any], PlanT] = {}
        self._scalar_routes: dict[type, Any] = {}
        # keyed by shape here, by (shape, dtype) in selection; the route's parts are the subclass's
        self._array_routes: dict[Hashable, Any] = {}

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
    def plan(self, shape: Any = (), dtype: Any = None) -> PlanT:  # pragma: no cover - abstract
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
    def _prepare(self, value: Any) -> tuple[Any, tuple[int, ...], Any]:  # pragma: no cover
        """(prepared input, query shape, dtype for plan()); raises for bad input."""
        raise NotImplementedError

    def _charge(self, plan: ReleasePlan) -> None:
        if self.budget is None:
            return
        self.budget.spend(plan.loss, label=plan.mechanism, insecure=not self.rng.is_secure)

    def _plan_for(self, shape: tuple[int, ...], dtype: Any) -> PlanT:
        """``plan(shape, dtype)``, built once per (shape, dtype) and kept (plans are frozen and a
        mechanism's parameters never change); at most _PLANS_KEPT are kept."""
        key = (shape, None if dtype is None else np.dtype(dtype))
        plans: dict[tuple[Any, Any], PlanT] = self.__dict__.setdefault("_kept_plans", {})
        plan = plans.get(key)
        if plan is None:
            plan = self.plan(shape, dtype)
            if len(plans) >= _PLANS_KEPT:
                plans.clear()
            plans[key] = plan
        return plan

    def _scalar_route(self, kind: type) -> tuple[str, Any] | None:
        """How a scalar of Python type ``kind`` is released by one C++ call: None (the general
        path), or (route, plan) with route "real" (a float on the grid), "integer" (an int on the
        integer path) or "category" (an int category index). Subclasses that have such routes
        override this; what they return must release exactly as the general path would."""
        return None

    def _fast_scalar(self, kind: type) -> Any:
        """The scalar release of one Python type, as ``route(mechanism, x)``: validate (the same
        checks as _prepare, else the general path raises its own error), charge, then one C++
        call (the plan's prepared kernel, built here, before any charge). None when the type has
        no such route. The route holds only the plan's parts, never the mechanism: its rng and
        budget are read at each call (a copy of the mechanism uses its own)."""
        route = self._scalar_route(kind)
        if route is None:
            return None
        name, plan = route
        kernel = plan.prepared_kernel()
        loss, label = plan.loss, plan.mechanism

        def charge(mech: Mechanism[Any]) -> None:
            budget = mech.budget
            if budget is not None:
                budget.spend(loss, label=label, insecure=not mech.rng._secure)

        if name == "real":
            draw = kernel.real

            def release_real(mech: Mechanism[Any], x: Any) -> Any:
                if not isfinite(x):  # NaN or infinity: the general path raises its ValueError
                    return mech._release_general(x, None)
                charge(mech)
                return draw(mech.rng._core, x)
            return release_real
        if name == "integer":
            draw, bound = kernel.integer, INTEGER_BOUND

            def release_integer(mech: Mechanism[Any], x: Any) -> Any:
                v = x if -bound <= x <= bound else (bound if x > 0 else -bound)  # clamped_integers
                charge(mech)
                return draw(mech.rng._core, int(v))
            return release_integer
        draw, categories = kernel.one, plan.categories  # "category"

        def release_category(mech: Mechanism[Any], x: Any) -> Any:
            if not 0 <= x < categories:  # out of the domain: the general path raises or clips
                return mech._release_general(x, None)
            charge(mech)
            return draw(mech.rng._core, int(x))
        return release_category

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
        if out is None:
            routes = self.__dict__.get("_scalar_routes")
            if routes is not None:
                kind = type(value)
                fast = routes.get(kind, _UNSET)
                if fast is _UNSET:
                    fast = routes[kind] = self._fast_scalar(kind) if kind in _SCALAR_TYPES else None
                if fast is not None:
                    return fast(self, value)
        if type(value) is np.ndarray and (out is None or type(out) is np.ndarray) and "_array_routes" in self.__dict__:
            result = self._fast_array(value, out)
            if result is not _UNSET:
                return result
        return self._release_general(value, out)

    def _array_plan(self, shape: tuple[int, ...]) -> PlanT | None:
        """The plan a float32/float64 array of this shape is released with in one call (its
        kernel's ``release``), or None (the general path). Subclasses with such a route
        override this; it must be the plan the general path would use for that input."""
        return None

    def _fast_array(self, x: np.ndarray, out: np.ndarray | None) -> Any:
        """One crossing into C++ for a float32/float64 array: the kernel checks the values are
        finite, calls the charge, then draws (validate, charge, draw, in that order, in one
        call). _UNSET when the input or ``out`` needs the general path (which then raises or
        handles it exactly as before)."""
        dt = x.dtype
        if x.ndim == 0 or x.size == 0 or (dt is not _F64 and dt is not _F32):
            return _UNSET
        routes = self._array_routes
        route: tuple[PlanT | None, Any] | None = routes.get(x.shape)
        if route is None:
            plan = self._array_plan(x.shape)
            kernel = None if plan is None else plan.prepared_kernel()
            route = (None, None) if kernel is None else (plan, kernel)
            if len(routes) >= _PLANS_KEPT:
                routes.clear()
            routes[x.shape] = route
        plan, kernel = route
        if plan is None or kernel is None:
            return _UNSET
        if out is None:
            target = np.empty(x.shape, dtype=_F32) if dt is _F32 else None
        else:
            if out.dtype is not dt or out.shape != x.shape or not out.flags.c_contiguous or not out.flags.writeable:
                return _UNSET
            if out is not x and np.may_share_memory(x, out):
                return _UNSET
            target = out
        budget = self.budget
        rng = self.rng
        charge = None if budget is None else (
            lambda: budget.spend(plan.loss, label=plan.mechanism, insecure=not rng._secure))
        result = kernel.release(rng._core, x.reshape(-1), None if target is None else target.reshape(-1),
                                plan.threads, charge)
        return result.reshape(x.shape) if target is None else target

    def _release_general(self, value: Any, out: Any) -> Any:
        """The release of any input (the four steps above)."""
        prepared, shape, dtype = self._prepare(value)  # bad input fails here
        plan = self._plan_for(shape, dtype)  # and parameters that cannot serve this shape here
        plan.prepare()  # the plan's kernel, built before the charge (nothing fails after it)
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
