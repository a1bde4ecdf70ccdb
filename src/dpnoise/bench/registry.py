"""The registry of ``dpnoise bench`` workloads: :class:`Context`, :class:`Peer`,
:class:`Workload`, :func:`register` and the loading of built-in and plug-in catalogues
(modules and entry points of the ``dpnoise.bench`` group)."""
from __future__ import annotations

import hashlib
import importlib
import json
import math
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np

ENTRY_POINT_GROUP = "dpnoise.bench"
BUILTIN_MODULE = "dpnoise.demos.workloads"

#: What a utility hook returns: metric name -> value (a declared metric left out, or given as None
#: or NaN, is recorded as missing). A Mapping, read-only and covariant, so that a hook typed
#: ``-> dict[str, float]`` fits as well as one that may give None.
Metrics = Mapping[str, Optional[float]]  # Optional: evaluated at import, on Python 3.9 too

#: Utility metric names with a documented meaning (others are allowed; see docs/bench.md).
KNOWN_METRICS = {
    "rms_error": "root mean squared error of the released values (their unit)",
    "mse_over_2b2": "mean squared error / 2b^2, b the Laplace scale (1: exactly the stated noise)",
    "mse_over_sigma2": "mean squared error / sigma^2 of a Gaussian mechanism (1: exactly the stated noise)",
    "variance_ratio": "empirical variance of a sampler / its exact variance (1 expected)",
    "ci_coverage": "share of true values inside their stated 95% interval (about 0.95 expected)",
    "p_correct": "probability that the released choice is a true best one",
    "recall": "share of the true top k found",
    "attack_success_30d": "share of devices whose item an attacker guesses from 30 daily reports (lower: better)",
    "rms_over_one_shot": "RMS error of one day's estimate / that of a one-shot collection at the same epsilon",
}


@dataclass(frozen=True)
class Context:
    """What every workload is sized and run with.

    ``epsilon`` is the ε of this row (None for workloads without one); ``seed`` None means
    secure OS-keyed generators, an int means reproducible (and insecure) generators, one per
    (seed, workload, ε, stream).

    Attributes
    ----------
    quick : bool
        Small sizes.
    threads, repeats : int
        Threads of dpnoise's calls; timed calls per row.
    samples, values, devices : int
        Per timed call: samples (samplers), query values (mechanisms), simulated devices (LDP).
    epsilon : float, optional
        The row's ε.
    seed : int, optional
        The run's seed (None: secure generators).
    workload : str
        The row's workload name (part of the derived seeds).
    utility_repeat : int
        Which utility repetition this context builds (0 for the timed state; 1, ..., R-1 for
        the further repetitions of ``--utility-repeats R``): part of the derived seeds, so that
        every repetition is independent and a re-run with the same seed gives the same numbers.
    """

    quick: bool
    threads: int
    repeats: int
    samples: int        # samples per timed call for the sampler workloads
    values: int         # query values per release for the mechanism workloads
    devices: int        # simulated devices per timed call for the local-DP workloads
    epsilon: float | None = None
    seed: int | None = None
    workload: str = ""
    utility_repeat: int = 0

    @property
    def allow_insecure(self) -> bool:
        """True exactly when the run is seeded: pass it as ``allow_insecure=`` to anything that
        refuses seeded generators (the harness's reproducible mode only)."""
        return self.seed is not None

    def _derived(self, stream: str, seed: int | None = None) -> int:
        key: list[Any] = [self.seed if seed is None else seed, self.workload, self.epsilon, stream]
        if self.utility_repeat:  # repetition 0 keeps the seeds of record version 3
            key.append(self.utility_repeat)
        text = json.dumps(key)
        return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest(), "big")

    def rng(self, stream: str = "") -> Any:
        """A dpnoise generator: secure (OS-keyed) when unseeded; seeded from (seed, workload, ε,
        ``stream``) otherwise, so that two calls with different ``stream`` labels are independent
        and a re-run gives the same numbers. A seeded generator is insecure: pass
        ``allow_insecure=ctx.allow_insecure`` where it is used.

        Parameters
        ----------
        stream : str, default ""
            A label; different labels give independent generators.

        Returns
        -------
        dpnoise.Generator
            Secure when the run is unseeded.
        """
        import dpnoise

        if self.seed is None:
            return dpnoise.default_rng()
        return dpnoise.default_rng(self._derived(stream))

    def numpy_rng(self, stream: str = "") -> np.random.Generator:
        """NumPy's PCG64 for references and data, one per ``stream`` label: derived from the
        run's seed, or from a fixed one (20261122) when the run is not seeded.

        Parameters
        ----------
        stream : str, default ""
            As for :meth:`rng`.

        Returns
        -------
        numpy.random.Generator
            Never for private noise.
        """
        base = 20261122 if self.seed is None else None
        return np.random.default_rng(self._derived("numpy/" + stream, base) >> 128)

    def public_key(self, stream: str = "", bits: int = 64) -> int | None:
        """A public key (hash seed, matrix key) of ``bits`` bits derived from the seed, or None
        when unseeded (the library's own default then applies).

        Parameters
        ----------
        stream : str, default ""
            A label.
        bits : int, default 64
            The key's width.

        Returns
        -------
        int or None
            The key in [0, 2**bits), or None.
        """
        if self.seed is None:
            return None
        return self._derived("public/" + stream) % (1 << bits)


@dataclass(frozen=True)
class Peer:
    """Another DP library doing the workload's job. ``make(module, ctx, state)`` returns
    ``(call, items)``: a zero-argument callable to time and how many items one call does.
    ``utility(module, ctx, state)``, if given, returns the same metrics as the workload's
    (from the peer's own, unseeded randomness).

    Attributes
    ----------
    library : str
        The import name, e.g. "opendp.prelude".
    name : str
        What is timed.
    make : callable
        (module, ctx, state) -> (call, items).
    utility : callable, optional
        (module, ctx, state) -> metrics dict; a declared metric it leaves out (or gives as
        None or NaN) is recorded as missing (None), the row and its timing are kept.
    """

    library: str                 # import name, e.g. "opendp.prelude", "diffprivlib", "dp_accounting"
    name: str                    # what is timed, e.g. "OpenDP make_laplace (int vector)"
    make: Callable[[Any, Context, Any], tuple[Callable[[], object], int]]
    utility: Callable[[Any, Context, Any], Metrics] | None = None


@dataclass(frozen=True)
class Workload:
    """One benchmark row (one per ε of a sweep): dpnoise's call, timed against a like-for-like
    ``reference`` in the same run, with optional ``utility`` metrics.

    Parameters
    ----------
    name : str
        Unique; ``--only`` matches it case-insensitively.
    items : callable(ctx) -> int
        Work items per timed call (throughput = items / seconds).
    setup : callable(ctx) -> state
        Untimed; builds the inputs, generators and objects.
    run : callable(ctx, state)
        The timed dpnoise call.
    unit : {"samples", "ops"}
    reference_name, reference : str, callable(ctx, state)
        A like-for-like reference (the same job, done the usual way); the ratio dpnoise /
        reference is printed only for it.
    peers : tuple of Peer
    epsilon : float or None
        The default ε (``ctx.epsilon``); None if the workload has no ε (not swept).
    metrics : tuple of str
        The names of the metrics ``utility`` returns (see :data:`KNOWN_METRICS`).
    utility : callable(ctx, state) -> dict of str to float
        Untimed, called once per row before the timing, on the state ``setup`` built. A
        declared metric it does not give is recorded as missing (None); if it raises, the row
        keeps its timing and records ``utility_error``.
    size : callable(ctx) -> str
        A short description of the size used (e.g. "20,000 devices, d=1024").
    in_quick : bool
        False: too slow for ``--quick`` (skipped there, with a note).
    family : str, optional
        Rows doing the same job in different ways (e.g. every frequency oracle's server): the
        plot overlays a family's rows in one panel per metric and marks those of another size.
        None: the workload is its own family.
    """

    name: str
    items: Callable[[Context], int]
    setup: Callable[[Context], Any]
    run: Callable[[Context, Any], object]
    unit: str = "samples"
    reference_name: str | None = None
    reference: Callable[[Context, Any], object] | None = None
    peers: tuple[Peer, ...] = field(default_factory=tuple)
    epsilon: float | None = None
    metrics: tuple[str, ...] = ()
    utility: Callable[[Context, Any], Metrics] | None = None
    size: Callable[[Context], str] | None = None
    in_quick: bool = True
    family: str | None = None


_REGISTRY: dict[str, Workload] = {}
_LOADED: dict[str, str] = {}  # module or entry point -> "ok" / the error text


def register(workload: Workload) -> Workload:
    """Add a workload to ``dpnoise bench`` (a name may be registered once).

    Parameters
    ----------
    workload : Workload
        The row to add (one per ε of a sweep).

    Returns
    -------
    Workload
        ``workload`` itself, so that it can be used as a decorator-style registration.

    Raises
    ------
    TypeError
        ``workload`` is not a :class:`Workload`.
    ValueError
        The name is taken, the unit unknown, ``metrics`` given without ``utility`` (or the
        reverse), or ``epsilon`` not a positive finite number.
    """
    if not isinstance(workload, Workload):
        raise TypeError(f"workload must be a dpnoise.bench.Workload, got {type(workload).__name__}")
    if workload.name in _REGISTRY:
        raise ValueError(f"a workload named {workload.name!r} is already registered")
    if workload.unit not in ("samples", "ops"):
        raise ValueError(f"unit must be 'samples' or 'ops', got {workload.unit!r}")
    if bool(workload.metrics) != (workload.utility is not None):
        raise ValueError(f"workload {workload.name!r}: metrics and utility go together")
    if workload.epsilon is not None and not (isinstance(workload.epsilon, (int, float))
                                             and 0 < workload.epsilon < math.inf):
        raise ValueError(f"workload {workload.name!r}: epsilon must be a positive finite number or None, "
                         f"got {workload.epsilon!r}")
    _REGISTRY[workload.name] = workload
    return workload


def load_workloads(module: str) -> None:
    """Import ``module`` (a dotted path), which registers workloads at import.

    Parameters
    ----------
    module : str
        A dotted module path.

    Raises
    ------
    ImportError
        The module cannot be imported; the message carries the import's own exception text.
    """
    try:
        importlib.import_module(module)
    except Exception as exc:
        raise ImportError(f"cannot import workloads module {module!r}: {type(exc).__name__}: {exc}") from exc
    _LOADED[module] = "ok"


def _entry_points() -> Iterable[Any]:
    from importlib import metadata

    eps = metadata.entry_points()
    if sys.version_info >= (3, 10):
        return list(eps.select(group=ENTRY_POINT_GROUP))
    return list(eps.get(ENTRY_POINT_GROUP, ()))  # Python 3.9: a dict of group -> entry points


def _load_installed() -> None:
    """The built-in catalogue, then every entry point of the ``dpnoise.bench`` group (loading it
    imports its module; a callable it names is called with no argument). A broken plugin is
    recorded (see :func:`loaded`), not fatal."""
    if BUILTIN_MODULE not in _LOADED:
        load_workloads(BUILTIN_MODULE)
    for ep in _entry_points():
        key = f"entry point {ep.name} = {ep.value}"
        if key in _LOADED:
            continue
        try:
            obj = ep.load()
            if callable(obj):
                obj()
            _LOADED[key] = "ok"
        except Exception as exc:
            _LOADED[key] = f"failed: {type(exc).__name__}: {exc}"


def loaded() -> dict[str, str]:
    """What was loaded to register workloads: module or entry point -> "ok" or the error.

    Returns
    -------
    dict of str to str
        A copy.
    """
    return dict(_LOADED)


def workloads() -> list[Workload]:
    """The registered workloads (built-ins and entry points loaded first), in registration order.

    Returns
    -------
    list of Workload
        Every registered workload.
    """
    _load_installed()
    return list(_REGISTRY.values())


def select(only: str | None = None) -> list[Workload]:
    """The workloads whose name contains ``only``, ignoring case (all of them for None).

    Parameters
    ----------
    only : str, optional
        A case-insensitive substring of the names.

    Returns
    -------
    list of Workload
        The matching workloads, in registration order.

    Raises
    ------
    LookupError
        ``only`` matches no workload.
    """
    every = workloads()
    if only is None:
        return every
    chosen = [w for w in every if only.casefold() in w.name.casefold()]
    if not chosen:
        raise LookupError(f"no workload name contains {only!r} (case-insensitive); "
                          f"{len(every)} workloads are registered (dpnoise bench --list names them)")
    return chosen
