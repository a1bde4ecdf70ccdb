"""``dpnoise bench``: the benchmark harness (speed and utility, side by side with peers).

A :class:`Workload` times dpnoise's call and, in the same process and run, a like-for-like
reference (the same job done the usual way, e.g. NumPy's floating-point samplers: the speed
yardstick, neither exact nor secure) and any installed peer library doing the same job. A
workload may also declare utility metrics (error, MSE/2b², CI coverage, P(correct), recall)
through its ``utility`` hook; with a seed (``run(seed=...)``, ``dpnoise bench --seed N``) every
utility figure is reproducible: same seed and dpnoise version, same numbers. Workloads that take
an ε are run at each ε of a sweep (``--epsilon 0.1,1,10``).

The built-in catalogue lives in :mod:`dpnoise.demos.workloads`. Other code adds workloads with
one call, at import of a module given to ``dpnoise bench --workloads module.path`` or named by
an entry point of the group ``dpnoise.bench``::

    from dpnoise.bench import Workload, register
    register(Workload(
        name="my mechanism on 10^6 floats", unit="samples",
        items=lambda ctx: 1_000_000,                       # work items per timed call
        setup=lambda ctx: make_state(ctx),                 # untimed; returns the state
        run=lambda ctx, state: release(state),             # timed: dpnoise
        reference_name="x + numpy laplace",                # like-for-like only
        reference=lambda ctx, state: baseline(state),      # timed (optional)
        epsilon=1.0,                                       # swept by --epsilon (None: no epsilon)
        metrics=("mse_over_2b2",),
        utility=lambda ctx, state: {"mse_over_2b2": ...},  # untimed, once per epsilon
    ))

With ``utility_repeats=R`` (``--utility-repeats R``) every utility metric is measured R times
with independent seeds derived from the run's seed: the record keeps each metric's mean, standard
error, Student-t 95% interval and the R raw values. :func:`plot` draws one panel per (family,
metric) with error bars; :func:`compare` (``dpnoise bench compare OLD.json NEW.json``) says which
rows got slower or less accurate beyond noise.

The JSON record (``dpnoise bench --json``) is described field by field in docs/bench.md; its
``schema`` is ``"dpnoise-bench/4"`` and ``schema_version`` 4 (version 3 had a single utility draw:
no ``utility_stats``, ``family`` or ``settings.utility_repeats``; version 2 had no missing
metrics: a utility hook that returned fewer metrics than declared, or raised, lost its whole row;
version 1, before utility metrics, kept only the best time).
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import importlib
import json
import math
import os
import platform
import textwrap
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

SCHEMA = "dpnoise-bench/4"
SCHEMA_VERSION = 4
ENTRY_POINT_GROUP = "dpnoise.bench"
MAX_UTILITY_REPEATS = 1000
BUILTIN_MODULE = "dpnoise.demos.workloads"

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
    epsilon: Optional[float] = None
    seed: Optional[int] = None
    workload: str = ""
    utility_repeat: int = 0

    @property
    def allow_insecure(self) -> bool:
        """True exactly when the run is seeded: pass it as ``allow_insecure=`` to anything that
        refuses seeded generators (the harness's reproducible mode only)."""
        return self.seed is not None

    def _derived(self, stream: str, seed: Optional[int] = None) -> int:
        key: List[Any] = [self.seed if seed is None else seed, self.workload, self.epsilon, stream]
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

    def public_key(self, stream: str = "", bits: int = 64) -> Optional[int]:
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
    make: Callable[[Any, Context, Any], Tuple[Callable[[], object], int]]
    utility: Optional[Callable[[Any, Context, Any], Dict[str, Optional[float]]]] = None


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
    reference_name: Optional[str] = None
    reference: Optional[Callable[[Context, Any], object]] = None
    peers: Tuple[Peer, ...] = field(default_factory=tuple)
    epsilon: Optional[float] = None
    metrics: Tuple[str, ...] = ()
    utility: Optional[Callable[[Context, Any], Dict[str, float]]] = None
    size: Optional[Callable[[Context], str]] = None
    in_quick: bool = True
    family: Optional[str] = None


_REGISTRY: Dict[str, Workload] = {}
_LOADED: Dict[str, str] = {}  # module or entry point -> "ok" / the error text


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
    except Exception as exc:  # noqa: BLE001 - any failure at import is the user's module failing
        raise ImportError(f"cannot import workloads module {module!r}: {type(exc).__name__}: {exc}") from exc
    _LOADED[module] = "ok"


def _entry_points() -> Iterable[Any]:
    from importlib import metadata

    eps = metadata.entry_points()
    if hasattr(eps, "select"):
        return list(eps.select(group=ENTRY_POINT_GROUP))
    return list(eps.get(ENTRY_POINT_GROUP, ()))  # type: ignore[attr-defined]  # Python 3.9


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
        except Exception as exc:  # noqa: BLE001 - a broken plugin must not stop the built-ins
            _LOADED[key] = f"failed: {type(exc).__name__}: {exc}"


def loaded() -> Dict[str, str]:
    """What was loaded to register workloads: module or entry point -> "ok" or the error.

    Returns
    -------
    dict of str to str
        A copy.
    """
    return dict(_LOADED)


def workloads() -> List[Workload]:
    """The registered workloads (built-ins and entry points loaded first), in registration order.

    Returns
    -------
    list of Workload
        Every registered workload.
    """
    _load_installed()
    return list(_REGISTRY.values())


def select(only: Optional[str] = None) -> List[Workload]:
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


# -- timing ----------------------------------------------------------------------------------

def time_calls(call: Callable[[], object], repeats: int) -> List[float]:
    """The wall time of each of ``repeats`` calls, in seconds.

    Parameters
    ----------
    call : callable
        A zero-argument callable.
    repeats : int
        How many calls (at least 1 is made).

    Returns
    -------
    list of float
        Seconds per call (at least 1e-9 each).
    """
    out = []
    for _ in range(max(1, repeats)):
        t0 = time.perf_counter()
        call()
        out.append(max(time.perf_counter() - t0, 1e-9))
    return out


def summarize(times: Sequence[float]) -> Dict[str, Any]:
    """``{"raw": [...], "min", "median", "iqr"}`` of a list of times (IQR = p75 - p25).

    Parameters
    ----------
    times : sequence of float
        Seconds, at least one.

    Returns
    -------
    dict
        The raw times and their min, median and IQR, as floats.
    """
    t = np.asarray(times, dtype=float)
    q25, q50, q75 = np.percentile(t, [25, 50, 75])
    return {"raw": [float(x) for x in t], "min": float(t.min()), "median": float(q50), "iqr": float(q75 - q25)}


def best_time(call: Callable[[], object], repeats: int) -> float:
    """The least wall time of ``repeats`` calls."""
    return min(time_calls(call, repeats))


# -- machine information ---------------------------------------------------------------------

def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def machine_info() -> Dict[str, Any]:
    """CPU, cores, load, Python, NumPy, dpnoise and its ChaCha20 backend.

    Returns
    -------
    dict
        JSON-able machine description (the record's ``machine`` field).
    """
    import dpnoise
    from dpnoise import _core

    try:
        usable = len(os.sched_getaffinity(0))  # type: ignore[attr-defined]
    except (AttributeError, OSError):
        usable = os.cpu_count() or 1
    try:
        load: Optional[List[float]] = [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        load = None
    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count() or 1,
        "usable_cores": usable,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "chacha20_backend": str(_core.chacha20_backend()),
        "dpnoise": dpnoise.__version__,
        "load_average": load,
    }


# -- running ---------------------------------------------------------------------------------

def _version_of(library: str, module: Any) -> str:
    from importlib import metadata

    top = library.split(".")[0]
    for dist in (top, top.replace("_", "-")):
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return str(getattr(module, "__version__", "unknown"))


def _failure(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc)[:200]}"


def _metric_value(value: Any) -> Optional[float]:
    """A metric as a finite float, or None (missing) for None, NaN, ±inf and non-numbers."""
    if value is None or isinstance(value, (str, bytes)):
        return None
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _utility(fn: Callable[[], Dict[str, Any]], metrics: Tuple[str, ...]) -> Dict[str, Any]:
    """The utility fields of a row: ``utility`` holds every declared metric, in declared order,
    as a float or None (missing: not returned, None, not a finite number). A hook that raises or
    returns no mapping keeps the row (its timing is measured apart): ``utility`` is then None and
    ``utility_error`` says why. ``utility_note`` names missing and undeclared metrics."""
    try:
        values = fn()
        if not hasattr(values, "keys"):
            raise TypeError(f"utility returned {type(values).__name__}, not a dict of metrics")
        values = dict(values)
    except Exception as exc:  # noqa: BLE001 - the timing of the row stands without its utility
        return {"utility": None, "utility_error": _failure(exc)}
    util = {k: _metric_value(values.get(k)) for k in metrics}
    out: Dict[str, Any] = {"utility": util}
    missing = [k for k in metrics if util[k] is None]
    extra = sorted(str(k) for k in values if k not in util)
    notes = []
    if missing:
        notes.append("missing (not returned or not a finite number): " + ", ".join(missing))
    if extra:
        notes.append("undeclared, not recorded: " + ", ".join(extra))
    if notes:
        out["utility_note"] = "; ".join(notes)
    return out


# -- repeated utility --------------------------------------------------------------------------

# Student's t quantile t(0.975; df) for df = 1..30 (Fisher & Yates, Statistical Tables, Table III).
_T975 = (12.706205, 4.302653, 3.182446, 2.776445, 2.570582, 2.446912, 2.364624, 2.306004, 2.262157,
         2.228139, 2.200985, 2.178813, 2.160369, 2.144787, 2.131450, 2.119905, 2.109816, 2.100922,
         2.093024, 2.085963, 2.079614, 2.073873, 2.068658, 2.063899, 2.059539, 2.055529, 2.051831,
         2.048407, 2.045230, 2.042272)


def t_quantile_975(df: int) -> float:
    """Student's t quantile t(0.975; df): the half-width factor of a two-sided 95% interval.

    Parameters
    ----------
    df : int
        Degrees of freedom, at least 1.

    Returns
    -------
    float
        Exact to 6 digits for df <= 30 (table); beyond, the Cornish-Fisher expansion of
        Abramowitz & Stegun 26.7.5, within 1e-6.

    Raises
    ------
    ValueError
        ``df`` is not an integer >= 1.
    """
    if isinstance(df, bool) or not isinstance(df, (int, np.integer)) or df < 1:
        raise ValueError(f"df must be an integer >= 1, got {df!r}")
    if df <= len(_T975):
        return _T975[df - 1]
    x, v = 1.959963984540054, float(df)  # the normal quantile z(0.975); A&S 26.7.5 in powers of 1/df
    g1 = (x**3 + x) / 4
    g2 = (5 * x**5 + 16 * x**3 + 3 * x) / 96
    g3 = (3 * x**7 + 19 * x**5 + 17 * x**3 - 15 * x) / 384
    g4 = (79 * x**9 + 776 * x**7 + 1482 * x**5 - 1920 * x**3 - 945 * x) / 92160
    return x + g1 / v + g2 / v**2 + g3 / v**3 + g4 / v**4


def summarize_utility(values: Sequence[Optional[float]]) -> Dict[str, Any]:
    """Mean, standard error and 95% interval of one metric's repetitions (missing ones left out).

    The interval is mean ± t(0.975; n-1)·s/√n (Student 1908), s the sample standard deviation of
    the n non-missing values.

    Parameters
    ----------
    values : sequence of float or None
        The metric's value in each repetition (None: missing there).

    Returns
    -------
    dict
        ``{"mean", "stderr", "ci95": [low, high], "n", "raw"}``: ``mean`` None when every value
        is missing; ``stderr`` and ``ci95`` None with fewer than 2 values; ``raw`` the values
        as given (None kept, in repetition order).
    """
    raw = [None if v is None else float(v) for v in values]
    have = np.asarray([v for v in raw if v is not None], dtype=float)
    n = int(have.size)
    mean = float(have.mean()) if n else None
    stderr: Optional[float] = None
    ci: Optional[List[float]] = None
    if n >= 2:
        stderr = float(have.std(ddof=1) / math.sqrt(n))
        half = t_quantile_975(n - 1) * stderr
        ci = [mean - half, mean + half]  # type: ignore[operator]
    return {"mean": mean, "stderr": stderr, "ci95": ci, "n": n, "raw": raw}


def _combine_utility(per_rep: Sequence[Dict[str, Any]], metrics: Tuple[str, ...]) -> Dict[str, Any]:
    """The utility fields of a row or peer from R repetitions (each what :func:`_utility` gave):
    ``utility`` holds each metric's mean (None if missing in every repetition), ``utility_stats``
    its mean, stderr, 95% interval and raw values. A repetition that raised makes the whole
    utility fail (``utility_error``): a mean over the repetitions that happened to work would be
    biased."""
    for rep in per_rep:
        if rep["utility"] is None:
            return {"utility": None, "utility_error": rep["utility_error"]}
    stats = {k: summarize_utility([rep["utility"][k] for rep in per_rep]) for k in metrics}
    out: Dict[str, Any] = {"utility": {k: stats[k]["mean"] for k in metrics}, "utility_stats": stats}
    notes = sorted({rep["utility_note"] for rep in per_rep if "utility_note" in rep})
    if notes:
        out["utility_note"] = "; ".join(notes) + (f" (in some of {len(per_rep)} repetitions)" if len(per_rep) > 1
                                                   else "")
    return out


def _import_peer(peer: Peer) -> Tuple[Any, Optional[Dict[str, Any]]]:
    """(module, None), or (None, the skipped entry of the record)."""
    try:
        return importlib.import_module(peer.library), None
    except ModuleNotFoundError as exc:
        if exc.name is not None and peer.library.startswith(exc.name):
            return None, {"library": peer.library, "name": peer.name, "skipped": f"not installed ({_failure(exc)})"}
        return None, {"library": peer.library, "name": peer.name, "skipped": f"import failed: {_failure(exc)}"}
    except Exception as exc:  # noqa: BLE001 - installed but broken: say why
        return None, {"library": peer.library, "name": peer.name, "skipped": f"import failed: {_failure(exc)}"}


def _run_peer(peer: Peer, module: Any, ctx: Context, state: Any, ours: float, items: int,
              util: Dict[str, Any]) -> Dict[str, Any]:
    try:
        call, n = peer.make(module, ctx, state)
        call()  # warm-up
        times = summarize(time_calls(call, ctx.repeats))
    except Exception as exc:  # noqa: BLE001 - a peer's API drift must not stop the run
        return {"library": peer.library, "name": peer.name, "skipped": f"failed: {_failure(exc)}"}
    thr = n / times["min"]
    return {"library": peer.library, "version": _version_of(peer.library, module), "name": peer.name,
            "items": int(n), "same_size": int(n) == items, "seconds": times, "throughput": thr,
            "ratio": ours / thr, **util, "utility_seeded": False}


def run_workload(w: Workload, ctx: Context, peers: bool = False, utility_repeats: int = 1) -> Dict[str, Any]:
    """One row: ``w`` at ``ctx.epsilon`` (utility first, then the timings of dpnoise, its
    reference and, with ``peers``, its installed peers). An exception in the workload itself is
    recorded in the row's ``error`` field; one in its ``utility`` hook in ``utility_error``
    (the timings are kept), and a declared metric the hook does not give is None.

    Parameters
    ----------
    w : Workload
        The workload.
    ctx : Context
        Sizes, ε and seed of the run.
    peers : bool, default False
        Also time the installed peers.
    utility_repeats : int, default 1
        R: the utility is measured R times, each on a fresh state from ``setup`` with seeds
        derived from (seed, workload, ε, repetition); repetition 0 is the state that is timed.

    Returns
    -------
    dict
        The row of the JSON record (docs/bench.md).

    Raises
    ------
    ValueError
        ``utility_repeats`` is not an integer >= 1.
    """
    _check_utility_repeats(utility_repeats)
    ctx = replace(ctx, workload=w.name)
    row: Dict[str, Any] = {"workload": w.name, "epsilon": ctx.epsilon, "unit": w.unit}
    if w.family is not None:
        row["family"] = w.family
    chosen_peers = [(p, *_import_peer(p)) for p in w.peers] if peers else []
    try:
        state = w.setup(ctx)
        items = int(w.items(ctx))
        row["items"] = items
        row["size"] = w.size(ctx) if w.size is not None else f"{items:,} {w.unit} per call"
        # Utility before the timing (the timed calls must not move the seeded streams), kept apart
        # from it; repetition r > 0 builds its own state (then dropped: memory stays one state).
        own: List[Dict[str, Any]] = []
        theirs: Dict[int, List[Dict[str, Any]]] = {i: [] for i in range(len(chosen_peers))}
        for r in range(utility_repeats):
            ctx_r = ctx if r == 0 else replace(ctx, utility_repeat=r)
            state_r = state if r == 0 else w.setup(ctx_r)
            if w.utility is not None:
                own.append(_utility(lambda: w.utility(ctx_r, state_r), w.metrics))  # type: ignore[misc]
            for i, (p, module, _) in enumerate(chosen_peers):
                if module is not None and p.utility is not None and w.metrics:
                    theirs[i].append(_utility(lambda: p.utility(module, ctx_r, state_r),  # type: ignore[misc]
                                              w.metrics))
            del state_r
        row.update(_combine_utility(own, w.metrics) if w.utility is not None else {"utility": None})
        w.run(ctx, state)  # warm-up: tables, caches, first-touch of pages
        times = summarize(time_calls(lambda: w.run(ctx, state), ctx.repeats))
    except Exception as exc:  # noqa: BLE001 - one broken workload must not stop the others
        row["error"] = _failure(exc)
        return row
    thr = items / times["min"]
    row.update({"seconds": times, "throughput": thr, "throughput_median": items / times["median"],
                "reference": None, "ratio": None, "peers": []})
    if w.reference is not None:
        ref = w.reference
        ref(ctx, state)
        rtimes = summarize(time_calls(lambda: ref(ctx, state), ctx.repeats))
        row["reference"] = {"name": w.reference_name or "reference", "items": items, "seconds": rtimes,
                            "throughput": items / rtimes["min"]}
        row["ratio"] = thr / (items / rtimes["min"])
    for i, (p, module, skipped) in enumerate(chosen_peers):
        if module is None:
            row["peers"].append(skipped)
            continue
        # measured apart from the timing: a peer's utility that returns fewer metrics than declared,
        # or raises, keeps its row and timing (the missing metrics are None)
        util = _combine_utility(theirs[i], w.metrics) if theirs[i] else {"utility": None}
        row["peers"].append(_run_peer(p, module, ctx, state, thr, items, util))
    return row


def _check_utility_repeats(utility_repeats: Any) -> int:
    if isinstance(utility_repeats, bool) or not isinstance(utility_repeats, (int, np.integer)) \
            or not 1 <= utility_repeats <= MAX_UTILITY_REPEATS:
        raise ValueError(f"utility_repeats must be an integer from 1 to {MAX_UTILITY_REPEATS}, "
                         f"got {utility_repeats!r}")
    return int(utility_repeats)


def make_context(quick: bool = False, threads: int = 1, repeats: Optional[int] = None,
                 seed: Optional[int] = None) -> Context:
    """The sizes of a full or ``quick`` run.

    Parameters
    ----------
    quick : bool, default False
        Small sizes.
    threads : int, default 1
        Threads of dpnoise's calls.
    repeats : int, optional
        Timed calls per row (default 5, 3 with ``quick``).
    seed : int, optional
        Reproducible (insecure) generators.

    Returns
    -------
    Context
        Without ε or workload (set per row).
    """
    if quick:
        return Context(quick=True, threads=threads, repeats=repeats or 3, samples=200_000, values=100_000,
                       devices=20_000, seed=seed)
    return Context(quick=False, threads=threads, repeats=repeats or 5, samples=2_000_000, values=1_000_000,
                   devices=1_000_000, seed=seed)


def _check_epsilons(epsilons: Optional[Sequence[float]]) -> Optional[List[float]]:
    if epsilons is None:
        return None
    out = [float(e) for e in epsilons]
    if not out or any(not (0 < e < math.inf) for e in out):
        raise ValueError(f"epsilons must be positive finite numbers, got {list(epsilons)!r}")
    return out


def run(quick: bool = False, threads: int = 1, peers: bool = False, repeats: Optional[int] = None,
        only: Optional[str] = None, epsilons: Optional[Sequence[float]] = None, seed: Optional[int] = None,
        progress: Optional[Callable[[str], None]] = None, utility_repeats: int = 1) -> Dict[str, Any]:
    """Run the registered workloads and return the JSON record (docs/bench.md).

    Parameters
    ----------
    quick : bool
        Small sizes (the whole built-in catalogue in about 10 s).
    threads, repeats : int
        Threads of dpnoise's calls; timed calls per row (default 5, 3 with ``quick``).
    peers : bool
        Also time (and, where they declare it, measure the utility of) installed peer libraries.
    only : str, optional
        Only workloads whose name contains it, ignoring case.
    epsilons : sequence of float, optional
        Run every workload that takes an ε once per value (default: its own ε).
    seed : int, optional
        Reproducible utility figures (insecure generators, passed with ``allow_insecure=True``;
        the record says so). None: secure OS-keyed generators.
    progress : callable(str), optional
        Called with one line before each row (``dpnoise bench`` writes it to stderr).
    utility_repeats : int, default 1
        R: every utility metric is measured R times with independent seeds derived from
        ``seed``; the record keeps each metric's mean, standard error, 95% interval and the R
        raw values (``utility_stats``).

    Raises
    ------
    LookupError
        ``only`` matches no workload.
    ValueError
        A bad ε, or ``utility_repeats`` not an integer from 1 to 1000.

    Returns
    -------
    dict
        The JSON record: machine, settings, results (one row per workload and ε), notes.
    """
    eps_list = _check_epsilons(epsilons)
    utility_repeats = _check_utility_repeats(utility_repeats)
    chosen = select(only)
    skipped = [w.name for w in chosen if quick and not w.in_quick]
    chosen = [w for w in chosen if not (quick and not w.in_quick)]
    base = make_context(quick, threads, repeats, seed)
    plan = [(w, e) for w in chosen for e in ((eps_list or [w.epsilon]) if w.epsilon is not None else [None])]
    results = []
    t_start = time.perf_counter()
    for i, (w, eps) in enumerate(plan):
        if progress is not None:
            progress(f"[{i + 1}/{len(plan)}, {time.perf_counter() - t_start:5.1f} s] {w.name}"
                     + (f" (epsilon={eps:g})" if eps is not None else ""))
        results.append(run_workload(w, replace(base, epsilon=eps), peers, utility_repeats))
    notes = ["ratio = dpnoise throughput / reference throughput, both measured in this run (> 1: dpnoise is "
             "faster); a ratio is given only against a like-for-like reference; NumPy references are "
             "floating-point, not exact or secure"]
    if seed is None:
        notes.append("randomness: secure OS-keyed generators; utility figures vary from run to run")
    else:
        notes.append(f"randomness: SEEDED (seed {seed}) and therefore NOT secure (allow_insecure=True was passed): "
                     "for reproducible utility figures only; peers' utility uses their own unseeded randomness")
    if skipped:
        notes.append("not run with --quick (too slow for it; run without --quick): " + "; ".join(skipped))
    failed = [f"{k}: {v}" for k, v in _LOADED.items() if v != "ok"]
    if failed:
        notes.append("workload plugins that failed to load: " + "; ".join(failed))
    machine = machine_info()
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "created": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "dpnoise_version": machine["dpnoise"],
        "machine": machine,
        "settings": {"quick": quick, "threads": threads, "repeats": base.repeats,
                     "utility_repeats": utility_repeats, "peers": peers,
                     "filter": only, "epsilons": eps_list, "seed": seed, "seeded_insecure": seed is not None,
                     "sizes": {"samples": base.samples, "values": base.values, "devices": base.devices}},
        "loaded": loaded(),
        "results": results,
        "seconds_total": time.perf_counter() - t_start,
        "notes": notes,
    }


def utility_figures(record: Dict[str, Any]) -> List[Tuple[str, Optional[float], Dict[str, float]]]:
    """(workload, ε, dpnoise's utility metrics) of every row that has them: what a seeded run
    reproduces exactly.

    Parameters
    ----------
    record : dict
        A :func:`run` record.

    Returns
    -------
    list of (str, float or None, dict)
        One tuple per row with utility metrics.
    """
    return [(r["workload"], r["epsilon"], r["utility"]) for r in record["results"] if r.get("utility")]


# -- report ----------------------------------------------------------------------------------

def _rate(thr: float, unit: str) -> str:
    if unit == "samples":
        return f"{thr / 1e6:9.2f} M/s"
    return f"{thr / 1e6:7.2f} Mop/s" if thr >= 1e6 else f"{thr:9.1f} op/s"


MISSING = "\u2014"  # an em dash: a declared utility metric the hook did not give


def _metrics(util: Optional[Dict[str, Optional[float]]], stats: Optional[Dict[str, Any]] = None) -> str:
    if not util:
        return ""
    parts = []
    for k, v in util.items():
        st = (stats or {}).get(k)
        if v is None:
            parts.append(f"{k} {MISSING}")
        elif st and st.get("ci95"):
            parts.append(f"{k} {v:.4g} \u00b1 {(st['ci95'][1] - st['ci95'][0]) / 2:.2g}")
        else:
            parts.append(f"{k} {v:.4g}")
    return ", ".join(parts)


def _utility_text(entry: Dict[str, Any]) -> str:
    """"; utility: ..." for a row or peer entry (with its error or note), or ""."""
    text = f"; utility: {_metrics(entry['utility'], entry.get('utility_stats'))}" if entry.get("utility") else ""
    if entry.get("utility_error"):
        text += f"; utility failed: {entry['utility_error']}"
    elif entry.get("utility_note"):
        text += f" ({entry['utility_note']})"
    return text


def format_table(record: Dict[str, Any]) -> str:
    """The human-readable report of a :func:`run` record.

    Parameters
    ----------
    record : dict
        What :func:`run` returned (or its JSON, loaded).

    Returns
    -------
    str
        The table, one row per workload and ε, with sizes, utility and peers.
    """
    m, s = record["machine"], record["settings"]
    lines = [
        f"dpnoise {record['dpnoise_version']} bench ({'quick' if s['quick'] else 'full'}, "
        f"{s['repeats']} timed calls per row: best and median, threads={s['threads']}, "
        + (f"utility: mean \u00b1 95% half-width of {s['utility_repeats']} repetitions, "
           if s.get("utility_repeats", 1) > 1 else "")
        + ("secure generators" if s["seed"] is None else f"SEEDED {s['seed']}: reproducible, NOT secure") + ")",
        f"  cpu: {m['cpu']} ({m['cores']} cores, {m['usable_cores']} usable; load {m['load_average']})",
        f"  python {m['python']}, numpy {m['numpy']}, ChaCha20 backend {m['chacha20_backend']}, {m['platform']}",
        "",
        f"  {'workload':52s} {'eps':>5s} {'dpnoise (best)':>14s} {'median':>13s}   {'like-for-like reference':34s} "
        f"{'ratio':>7s}",
    ]
    for r in record["results"]:
        eps = "-" if r["epsilon"] is None else f"{r['epsilon']:g}"
        if "error" in r:
            lines.append(f"  {r['workload'][:52]:52s} {eps:>5s} FAILED: {r['error']}")
            continue
        ref = r["reference"]
        head = (f"  {r['workload'][:52]:52s} {eps:>5s} {_rate(r['throughput'], r['unit']):>14s} "
                f"{_rate(r['throughput_median'], r['unit']):>13s}   ")
        if ref is None:
            lines.append(head + f"{'-':34s} {'-':>7s}")
        else:
            lines.append(head + f"{ref['name'][:34]:34s} {r['ratio']:6.2f}x")
        lines.append(f"      size: {r['size']}" + _utility_text(r))
        for p in r["peers"]:
            if "skipped" in p:
                lines.append(f"      peer {p['name']}: skipped ({p['skipped']})")
                continue
            size = "" if p["same_size"] else f" on {p['items']:,} {r['unit']} (dpnoise: {r['items']:,})"
            util = _utility_text(p)
            lines.append(f"      peer {p['name']} {p['version']}: {_rate(p['throughput'], r['unit']).strip()}{size}, "
                         f"dpnoise/peer {p['ratio']:.2f}x{util}")
    lines.append("")
    lines.append(f"  total {record['seconds_total']:.1f} s")
    lines.extend(f"  note: {n}" for n in record["notes"])
    return "\n".join(lines)


# -- compare ---------------------------------------------------------------------------------

#: Which way each known utility metric gets worse: "lower" is better, "higher" is better, or a
#: number: the value the metric should have (moving away from it is worse). Unknown metrics
#: (plugins) are compared but never flagged.
METRIC_GOALS: Dict[str, Any] = {
    "rms_error": "lower", "p_correct": "higher", "recall": "higher", "ci_coverage": 0.95,
    "variance_ratio": 1.0, "mse_over_2b2": 1.0, "mse_over_sigma2": 1.0,
    "attack_success_30d": "lower", "rms_over_one_shot": "lower",
}

_EXACT_MW_PAIRS = 2500  # m·n up to which the Mann-Whitney null distribution is counted exactly


class RecordError(ValueError):
    """A bench record that cannot be read or compared (``dpnoise bench compare`` exits 2)."""


def load_record(path: str) -> Dict[str, Any]:
    """Read a ``dpnoise bench --json`` record and check that it is one.

    Parameters
    ----------
    path : str
        The JSON file.

    Returns
    -------
    dict
        The record.

    Raises
    ------
    RecordError
        The file is missing or unreadable, not JSON, or not a dpnoise bench record (the message
        is one line and names the file, never its content).
    """
    try:
        with open(path, encoding="utf-8") as fh:
            record = json.load(fh)
    except FileNotFoundError:
        raise RecordError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RecordError(f"{path}: cannot be read ({type(exc).__name__})") from None
    except ValueError as exc:
        raise RecordError(f"{path}: not JSON (line {getattr(exc, 'lineno', '?')})") from None
    _check_record(record, path)
    return record


def _check_record(record: Any, name: str) -> None:
    if not isinstance(record, dict) or not str(record.get("schema", "")).startswith("dpnoise-bench/"):
        raise RecordError(f"{name}: not a dpnoise bench record (no 'schema': 'dpnoise-bench/N'; "
                          "write one with dpnoise bench --json)")
    version = record.get("schema_version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise RecordError(f"{name}: not a dpnoise bench record (schema_version is not an integer)")
    if version < 2:
        raise RecordError(f"{name}: schema_version {version} keeps no raw times and cannot be compared "
                          "(re-run dpnoise bench --json)")
    rows = record.get("results")
    if not isinstance(rows, list) or not all(isinstance(r, dict) and isinstance(r.get("workload"), str)
                                             for r in rows):
        raise RecordError(f"{name}: not a dpnoise bench record ('results' is not a list of rows)")


def _mw_upper_exact(u2: int, m: int, n: int) -> float:
    """P(U >= u2/2) for the Mann-Whitney U of samples of sizes m and n without ties (U counted in
    half-units u2 = 2U), from the exact null distribution: the number of arrangements with U = u
    obeys f(m, n, u) = f(m - 1, n, u - n) + f(m, n - 1, u) (Mann & Whitney 1947, eq. 2)."""
    # f[j] is the distribution of U for (i, j), updated over i = 1..m
    f = [np.zeros(1) + 1.0 for _ in range(n + 1)]  # i = 0: U = 0 in one way
    for _i in range(1, m + 1):
        g = [np.zeros(1) + 1.0]  # j = 0: U = 0
        for j in range(1, n + 1):
            a = np.concatenate([np.zeros(j), f[j]])  # f(i-1, j, u-j)
            b = g[j - 1]                              # f(i, j-1, u)
            size = max(a.size, b.size)
            c = np.zeros(size)
            c[:a.size] += a
            c[:b.size] += b
            g.append(c)
        f = g
    dist = f[n] / f[n].sum()
    u = (u2 + 1) // 2  # without ties U is an integer
    return float(dist[u:].sum())


def mann_whitney_greater(new: Sequence[float], old: Sequence[float]) -> float:
    """One-sided p-value of the Mann-Whitney U test (Mann & Whitney 1947) that ``new`` tends to
    be larger than ``old``: exact for small samples without ties, otherwise the normal
    approximation with tie correction and continuity correction (Lehmann 1975, eq. 1.30).

    Parameters
    ----------
    new, old : sequence of float
        The two samples (at least one value each).

    Returns
    -------
    float
        P(U >= observed) under the null hypothesis of one distribution.

    Raises
    ------
    ValueError
        A sample is empty or holds a non-finite value.
    """
    x = np.asarray(new, dtype=float)
    y = np.asarray(old, dtype=float)
    for name, a in (("new", x), ("old", y)):
        if a.size == 0 or not np.all(np.isfinite(a)):
            raise ValueError(f"{name} must be a non-empty sample of finite numbers")
    m, n = x.size, y.size
    both = np.concatenate([x, y])
    # ranks with ties given their mid-rank; U = R_x - m(m+1)/2, kept in half-units
    order = np.argsort(both, kind="mergesort")
    ranks = np.empty(m + n)
    sorted_vals = both[order]
    i = 0
    while i < m + n:
        j = i
        while j + 1 < m + n and sorted_vals[j + 1] == sorted_vals[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2 + 1
        i = j + 1
    u2 = int(round(2 * ranks[:m].sum() - m * (m + 1)))
    _, counts = np.unique(both, return_counts=True)
    ties = bool(np.any(counts > 1))
    if not ties and m * n <= _EXACT_MW_PAIRS:
        return _mw_upper_exact(u2, m, n)
    mu = m * n / 2
    tie_term = float(np.sum(counts**3 - counts)) / ((m + n) * (m + n - 1)) if m + n > 1 else 0.0
    var = m * n / 12 * ((m + n + 1) - tie_term)
    if var <= 0:
        return 1.0
    z = (u2 / 2 - mu - 0.5) / math.sqrt(var)
    return 0.5 * math.erfc(z / math.sqrt(2))


def _min_p(m: int, n: int) -> float:
    """The smallest one-sided Mann-Whitney p-value samples of sizes m, n can give: 1 / C(m+n, m)."""
    return 1.0 / math.comb(m + n, m)


def _per_item(entry: Dict[str, Any]) -> Optional[np.ndarray]:
    sec = entry.get("seconds")
    items = entry.get("items")
    if not isinstance(sec, dict) or not isinstance(sec.get("raw"), list) or not sec["raw"] \
            or not isinstance(items, int) or items < 1:
        return None
    try:
        raw = np.asarray(sec["raw"], dtype=float)
    except (TypeError, ValueError):
        return None
    if not np.all(np.isfinite(raw)) or np.any(raw <= 0):
        return None
    return raw / items


def _worse(metric: str, old: float, new: float) -> Optional[bool]:
    """True when new is worse than old for a known metric, False when better, None when unknown."""
    goal = METRIC_GOALS.get(metric)
    if goal is None or new == old:
        return None if goal is None else False
    if goal == "lower":
        return new > old
    if goal == "higher":
        return new < old
    return abs(new - goal) > abs(old - goal)


def _compare_metric(metric: str, old: Dict[str, Any], new: Dict[str, Any], threshold: float) -> Dict[str, Any]:
    o = (old.get("utility") or {}).get(metric)
    n = (new.get("utility") or {}).get(metric)
    out: Dict[str, Any] = {"metric": metric, "old": o, "new": n, "change": None, "relative": None,
                           "interval": None, "significant": None, "worse": None, "regression": False}
    if o is None or n is None:
        out["note"] = "missing in " + ("both" if o is None and n is None else "OLD" if o is None else "NEW")
        return out
    out["change"] = n - o
    out["relative"] = (n - o) / abs(o) if o != 0 else None
    so = ((old.get("utility_stats") or {}).get(metric) or {}).get("stderr")
    sn = ((new.get("utility_stats") or {}).get(metric) or {}).get("stderr")
    out["worse"] = _worse(metric, o, n)
    if so is None or sn is None:
        out["note"] = "no interval (fewer than 2 utility repetitions)"
        return out
    # 95% interval of the difference of two independent means (normal approximation)
    half = 1.959963984540054 * math.hypot(so, sn)
    out["interval"] = [n - o - half, n - o + half]
    out["significant"] = not (out["interval"][0] <= 0 <= out["interval"][1])
    big = abs(n - o) > (threshold - 1) * abs(o)
    out["regression"] = bool(out["significant"] and out["worse"] and big)
    return out


def _row_key(row: Dict[str, Any]) -> Tuple[str, Optional[float]]:
    return row["workload"], row.get("epsilon")


def _row_label(key: Tuple[str, Optional[float]]) -> str:
    return key[0] + ("" if key[1] is None else f" (epsilon={key[1]:g})")


def compare(old: Dict[str, Any], new: Dict[str, Any], threshold: float = 1.1, alpha: float = 0.01,
            force: bool = False) -> Dict[str, Any]:
    """Compare two bench records row by row: time ratio (NEW / OLD, per item) with a one-sided
    Mann-Whitney test on the raw timed calls, and each utility metric's change with the 95%
    interval of the difference.

    A row is a **time regression** when NEW's median time per item exceeds OLD's by more than
    ``threshold`` and the Mann-Whitney p-value (NEW slower) is at most ``alpha``; a **utility
    regression** when a known metric (:data:`METRIC_GOALS`) moves the worse way, the interval of
    the difference excludes 0, and the change exceeds ``threshold - 1`` relative to OLD; and a
    row that worked in OLD but failed in NEW is a regression too.

    Parameters
    ----------
    old, new : dict
        Two :func:`run` records (or their JSON, loaded).
    threshold : float, default 1.1
        The slow-down (and relative utility change) that counts, > 1.
    alpha : float, default 0.01
        The significance level of each test, in (0, 1).
    force : bool, default False
        Compare records of different schema versions or sizes anyway (times are per item).

    Returns
    -------
    dict
        ``{"rows": [...], "only_in_old": [...], "only_in_new": [...], "regressions": [...],
        "improvements": [...], "warnings": [...], "threshold", "alpha"}``.

    Raises
    ------
    RecordError
        A record is not a bench record; or, without ``force``, the two have different schema
        versions or sizes; or they have no row in common.
    ValueError
        ``threshold`` is not a finite number > 1 or ``alpha`` not in (0, 1).
    """
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 1 < threshold < math.inf:
        raise ValueError(f"threshold must be a finite number > 1, got {threshold!r}")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
        raise ValueError(f"alpha must be a number in (0, 1), got {alpha!r}")
    _check_record(old, "OLD")
    _check_record(new, "NEW")
    warnings: List[str] = []
    if old["schema_version"] != new["schema_version"]:
        text = f"schema versions differ: OLD {old['schema_version']}, NEW {new['schema_version']}"
        if not force:
            raise RecordError(text + " (re-run both with one dpnoise, or pass --force)")
        warnings.append(text + " (compared anyway: --force)")
    so, sn = [r.get("settings") if isinstance(r.get("settings"), dict) else {} for r in (old, new)]
    if (so.get("sizes"), so.get("quick")) != (sn.get("sizes"), sn.get("quick")):
        text = (f"sizes differ: OLD {'quick' if so.get('quick') else 'full'} {so.get('sizes')}, "
                f"NEW {'quick' if sn.get('quick') else 'full'} {sn.get('sizes')}")
        if not force:
            raise RecordError(text + " (run both with the same --quick, or pass --force)")
        warnings.append(text + " (compared per item anyway: --force)")
    if so.get("seed") != sn.get("seed"):
        warnings.append(f"seeds differ (OLD {so.get('seed')}, NEW {sn.get('seed')}): utility changes include "
                        "sampling noise (the intervals account for it)")
    old_rows = {_row_key(r): r for r in old["results"]}
    new_rows = {_row_key(r): r for r in new["results"]}
    common = [k for k in old_rows if k in new_rows]
    if not common:
        raise RecordError("the records have no row (workload, epsilon) in common")
    rows, regressions, improvements = [], [], []
    for key in common:
        o, n = old_rows[key], new_rows[key]
        entry: Dict[str, Any] = {"workload": key[0], "epsilon": key[1], "status": "ok", "regression": False,
                                 "time": None, "utility": []}
        if "error" in o or "error" in n:
            entry["status"] = ("failed in both" if "error" in o and "error" in n
                               else "failed in OLD" if "error" in o else "failed in NEW")
            entry["regression"] = entry["status"] == "failed in NEW"
        else:
            if o.get("items") != n.get("items"):
                if not force:
                    raise RecordError(f"{_row_label(key)}: sizes differ (OLD {o.get('items')}, NEW {n.get('items')} "
                                      f"items per call; pass --force to compare per item)")
                entry["size_note"] = f"OLD {o.get('items'):,} items, NEW {n.get('items'):,} items per call"
            to, tn = _per_item(o), _per_item(n)
            if to is None or tn is None:
                entry["time"] = {"note": "no usable raw times"}
            else:
                ratio = float(np.median(tn) / np.median(to))
                p_slower = mann_whitney_greater(tn, to)
                p_faster = mann_whitney_greater(to, tn)
                t: Dict[str, Any] = {"ratio": ratio, "p_slower": p_slower, "p_faster": p_faster,
                                     "old_calls": int(to.size), "new_calls": int(tn.size)}
                if _min_p(to.size, tn.size) > alpha:
                    t["note"] = (f"too few timed calls ({to.size} and {tn.size}) for a test at alpha={alpha:g}: "
                                 "use --repeats 5 or more")
                t["regression"] = bool(ratio > threshold and p_slower <= alpha)
                t["improvement"] = bool(ratio < 1 / threshold and p_faster <= alpha)
                ro, rn = o.get("reference"), n.get("reference")
                if isinstance(ro, dict) and isinstance(rn, dict):
                    a, b = _per_item(ro), _per_item(rn)
                    if a is not None and b is not None:
                        t["reference_ratio"] = float(np.median(b) / np.median(a))
                entry["time"] = t
                entry["regression"] = t["regression"]
                if t["improvement"]:
                    improvements.append(_row_label(key) + f": time x{ratio:.2f}")
            metrics = [k for k in (o.get("utility") or {}) if k in (n.get("utility") or {})]
            entry["utility"] = [_compare_metric(k, o, n, threshold) for k in metrics]
            if any(u["regression"] for u in entry["utility"]):
                entry["regression"] = True
        rows.append(entry)
        if entry["regression"]:
            why = []
            if entry["status"] == "failed in NEW":
                why.append("failed in NEW")
            if entry["time"] and entry["time"].get("regression"):
                why.append(f"time x{entry['time']['ratio']:.2f} (p={entry['time']['p_slower']:.2g})")
            why += [f"{u['metric']} {u['old']:.4g} -> {u['new']:.4g}" for u in entry["utility"] if u["regression"]]
            regressions.append(_row_label(key) + ": " + ", ".join(why))
    return {"threshold": threshold, "alpha": alpha, "old": {"created": old.get("created"),
                                                            "dpnoise_version": old.get("dpnoise_version")},
            "new": {"created": new.get("created"), "dpnoise_version": new.get("dpnoise_version")},
            "rows": rows, "only_in_old": [_row_label(k) for k in old_rows if k not in new_rows],
            "only_in_new": [_row_label(k) for k in new_rows if k not in old_rows],
            "regressions": regressions, "improvements": improvements, "warnings": warnings}


def format_comparison(result: Dict[str, Any]) -> str:
    """The human-readable table of a :func:`compare` result.

    Parameters
    ----------
    result : dict
        What :func:`compare` returned.

    Returns
    -------
    str
        One line per common row (time ratio NEW/OLD, p-value, utility changes), then the rows
        only in one record, warnings and the verdict.
    """
    lines = [f"dpnoise bench compare: OLD {result['old']['dpnoise_version']} ({result['old']['created']}) vs "
             f"NEW {result['new']['dpnoise_version']} ({result['new']['created']}); "
             f"threshold x{result['threshold']:g}, "
             f"alpha {result['alpha']:g} (one-sided Mann-Whitney on the timed calls; utility: 95% interval of "
             "the difference)", "",
             f"  {'workload':58s} {'time NEW/OLD':>12s} {'p(slower)':>9s} {'ref NEW/OLD':>11s}  verdict"]
    for r in result["rows"]:
        label = _row_label((r["workload"], r["epsilon"]))[:58]
        verdict = "REGRESSION" if r["regression"] else ""
        if r["status"] != "ok":
            lines.append(f"  {label:58s} {r['status']:>12s} {'':9s} {'':11s}  {verdict}")
            continue
        t = r["time"] or {}
        if "ratio" in t:
            ref = f"{t['reference_ratio']:.2f}" if "reference_ratio" in t else "-"
            if not verdict and t.get("improvement"):
                verdict = "faster"
            lines.append(f"  {label:58s} {t['ratio']:12.2f} {t['p_slower']:9.2g} {ref:>11s}  {verdict}")
        else:
            lines.append(f"  {label:58s} {'-':>12s} {'':9s} {'':11s}  {t.get('note', '')}")
        for note in ([r["size_note"]] if "size_note" in r else []) + ([t["note"]] if t.get("note") and "ratio" in t
                                                                        else []):
            lines.append(f"      note: {note}")
        for u in r["utility"]:
            if u["change"] is None:
                lines.append(f"      {u['metric']}: {u.get('note', '')}")
                continue
            ci = (f" [{u['interval'][0]:+.3g}, {u['interval'][1]:+.3g}]" if u["interval"] else "")
            flag = " REGRESSION" if u["regression"] else (" (significant)" if u["significant"] else "")
            lines.append(f"      {u['metric']}: {u['old']:.4g} -> {u['new']:.4g} ({u['change']:+.3g}{ci}){flag}"
                         + (f"; {u['note']}" if u.get("note") else ""))
    lines.append("")
    lines += [f"  only in OLD: {k}" for k in result["only_in_old"]]
    lines += [f"  only in NEW: {k}" for k in result["only_in_new"]]
    lines += [f"  warning: {w}" for w in result["warnings"]]
    if result["regressions"]:
        lines.append(f"  {len(result['regressions'])} regression(s):")
        lines += [f"    {x}" for x in result["regressions"]]
    else:
        lines.append("  no regression")
    return "\n".join(lines)


# -- plot ------------------------------------------------------------------------------------

#: Axis labels (with units) of the known metrics in plots.
METRIC_LABELS = {
    "rms_error": "RMS error (value units; counts for frequencies)",
    "mse_over_2b2": "MSE / 2b\u00b2 (ratio; 1 = the stated Laplace noise)",
    "mse_over_sigma2": "MSE / \u03c3\u00b2 (ratio; 1 = the stated Gaussian noise)",
    "variance_ratio": "variance / exact variance (ratio; 1 expected)",
    "ci_coverage": "coverage of the 95% intervals (share of true values)",
    "p_correct": "P(correct choice) (probability)",
    "recall": "recall of the true top k (share)",
    "attack_success_30d": "attack success after 30 days (share of devices)",
    "rms_over_one_shot": "RMS error / one-shot RMS error (ratio; 1 = one-shot)",
}

PLOT_FORMATS = (".png", ".pdf", ".svg")


def _trim_names(names: Sequence[str]) -> Dict[str, str]:
    """Each name without the words every name of the family shares at its start and end."""
    if len(set(names)) < 2:
        return {n: "dpnoise" for n in names}
    words = [n.split(" ") for n in names]
    head = 0
    while all(len(w) > head + 1 and w[head] == words[0][head] for w in words):
        head += 1
    tail = 0
    while all(len(w) > head + tail + 1 and w[-1 - tail] == words[0][-1 - tail] for w in words):
        tail += 1
    return {n: "dpnoise " + " ".join(w[head:len(w) - tail]).strip(":,; ") for n, w in zip(names, words)}


def _utility_panels(record: Dict[str, Any]) -> List[Dict[str, Any]]:
    """One panel per (family, metric): every series (a dpnoise row's workload, or a peer) with
    its points (ε, mean, 95% interval, size)."""
    rows = [r for r in record["results"] if "error" not in r and r.get("utility")]
    panels: Dict[Tuple[str, str], Dict[str, Any]] = {}
    for r in rows:
        family = r.get("family") or r["workload"]
        for metric in r["utility"]:
            panel = panels.setdefault((family, metric), {"family": family, "metric": metric, "series": {},
                                                         "workloads": [], "unit": r["unit"]})
            if r["workload"] not in panel["workloads"]:
                panel["workloads"].append(r["workload"])
            entries = [(r["workload"], r, r.get("items"))]
            entries += [(f"peer {p['name']}", p, p.get("items")) for p in r.get("peers", [])
                        if "skipped" not in p and p.get("utility")]
            for key, entry, items in entries:
                value = entry["utility"].get(metric)
                if value is None:
                    continue  # a missing metric is no point
                ci = ((entry.get("utility_stats") or {}).get(metric) or {}).get("ci95")
                series = panel["series"].setdefault(key, {"points": [], "sizes": set()})
                series["points"].append((r["epsilon"], value, ci))
                series["sizes"].add(items)
    members: Dict[str, List[str]] = {}  # every workload of a family, whatever the metric
    for r in rows:
        names = members.setdefault(r.get("family") or r["workload"], [])
        if r["workload"] not in names:
            names.append(r["workload"])
    out = []
    for (family, metric), panel in panels.items():
        if not panel["series"]:
            continue
        short = _trim_names(members[family])
        sizes = [x for s in panel["series"].values() if len(s["sizes"]) == 1 for x in s["sizes"] if x is not None]
        # the panel's size: the most common one, the largest on a tie (a reduced row is the odd one)
        common = max(set(sizes), key=lambda x: (sizes.count(x), x)) if sizes else None
        for key, series in panel["series"].items():
            series["label"] = short.get(key, key)
            odd = series["sizes"] != {common}
            series["other_size"] = odd
            if odd:
                shown = ", ".join(f"{x:,}" for x in sorted(x for x in series["sizes"] if x is not None))
                series["label"] += f" [n={shown}; others {common:,}]" if common is not None else f" [n={shown}]"
        panel["title"] = f"{family}: {metric}"
        out.append(panel)
    return out


def _speed_bars(record: Dict[str, Any]) -> List[Tuple[str, float, float, float]]:
    """(label, ratio of medians, low, high) per like-for-like reference and peer: throughput
    dpnoise / other, whiskers from the quartiles of both timings."""
    bars = []
    for r in record["results"]:
        if "error" in r:
            continue
        tag = r["workload"] + ("" if r["epsilon"] is None else f" (\u03b5={r['epsilon']:g})")
        others = ([(r["reference"]["name"], r["reference"])] if r.get("reference") else [])
        others += [(p["library"], p) for p in r.get("peers", []) if "skipped" not in p]
        ours = np.asarray(r["seconds"]["raw"]) / r["items"]
        for name, other in others:
            theirs = np.asarray(other["seconds"]["raw"]) / other["items"]
            q = np.percentile(ours, [25, 50, 75])
            t = np.percentile(theirs, [25, 50, 75])
            bars.append((f"{tag} / {name}", float(t[1] / q[1]), float(t[0] / q[2]), float(t[2] / q[0])))
    return bars


def plot_caption(record: Dict[str, Any]) -> str:
    """The figure's caption line: machine, dpnoise version, sizes, repetitions, seed.

    Parameters
    ----------
    record : dict
        A :func:`run` record.

    Returns
    -------
    str
        One line (it wraps in the figure).
    """
    m, st = record["machine"], record["settings"]
    sizes = st.get("sizes") or {}
    r = st.get("utility_repeats", 1)
    return (f"dpnoise {record['dpnoise_version']} on {m['cpu']} ({m['usable_cores']} of {m['cores']} cores usable, "
            f"threads={st['threads']}), Python {m['python']}, NumPy {m['numpy']}; "
            f"{'quick' if st['quick'] else 'full'} sizes: {sizes.get('samples', 0):,} samples, "
            f"{sizes.get('values', 0):,} values, {sizes.get('devices', 0):,} devices per call "
            f"(per row in the legend where it differs); utility: mean of R={r} repetition{'s' if r > 1 else ''}"
            + (", error bars 95% Student-t intervals" if r > 1 else ", no error bars (R=1)")
            + (f"; seed {st['seed']} (insecure, reproducible)" if st.get("seed") is not None else "; secure generators")
            + f"; speed: median of {st['repeats']} timed calls, whiskers from the quartiles. "
            "Hollow markers, dashed lines: a size other than the rest of the panel's.")


def plot(record: Dict[str, Any], path: str) -> List[str]:
    """Write the figure of a record: speed ratios (dpnoise / like-for-like reference or peer),
    then one panel per (family, metric) with every workload and peer of the family overlaid
    against ε (log axis), 95% error bars from the utility repetitions, a legend, axis labels
    with units and a caption line (also in the file's metadata).

    Parameters
    ----------
    record : dict
        A :func:`run` record.
    path : str
        The file to write: PNG, PDF or SVG, by its extension.

    Returns
    -------
    list of str
        The panels' titles, in drawing order (one axes each).

    Raises
    ------
    ImportError
        matplotlib is not installed (``pip install matplotlib``).
    ValueError
        ``path`` does not end in .png, .pdf or .svg.
    """
    ext = os.path.splitext(path)[1].lower()
    if ext not in PLOT_FORMATS:
        raise ValueError(f"path must end in .png, .pdf or .svg (the format), got {os.path.basename(path)!r}")
    try:
        import matplotlib
    except ImportError as exc:
        raise ImportError("--plot needs matplotlib: pip install matplotlib") from exc
    from matplotlib.figure import Figure  # no pyplot: no global state, no GUI backend

    bars = _speed_bars(record)
    panels = _utility_panels(record)
    cols = max(1, min(3, len(panels)))
    grid_rows = (len(panels) + cols - 1) // cols
    bar_h = 0.22 * max(len(bars), 4) + 1.2 if bars else 0.0
    caption = plot_caption(record)
    fig = Figure(figsize=(5.2 * cols + 1.5, bar_h + 4.2 * grid_rows + 1.2), layout="constrained")
    heights = ([bar_h] if bars else []) + [4.2] * grid_rows
    grid = fig.add_gridspec(len(heights), cols, height_ratios=heights)
    titles = []
    if bars:
        ax = fig.add_subplot(grid[0, :])
        y = np.arange(len(bars))
        ratio = np.array([b[1] for b in bars])
        err = np.array([[b[1] - b[2] for b in bars], [b[3] - b[1] for b in bars]]).clip(min=0)
        ax.barh(y, ratio, xerr=err, color=["tab:blue" if v >= 1 else "tab:red" for v in ratio],
                error_kw={"elinewidth": 0.8, "capsize": 2})
        ax.set_yticks(y, [b[0][:95] for b in bars], fontsize=7)
        ax.set_xscale("log")
        ax.axvline(1.0, color="k", lw=0.8)
        ax.invert_yaxis()
        ax.set_xlabel("throughput ratio dpnoise / other (times per item; log scale; > 1: dpnoise faster)")
        ax.set_title("speed, measured in one run", fontsize=9)
        titles.append("speed")
    first = 1 if bars else 0
    markers = "osD^v<>ph*"
    for k, panel in enumerate(panels):
        a = fig.add_subplot(grid[first + k // cols, k % cols])
        metric = panel["metric"]
        with_eps = any(pt[0] is not None for s in panel["series"].values() for pt in s["points"])
        labels = list(panel["series"])
        allv = []
        for j, key in enumerate(labels):
            series = panel["series"][key]
            pts = sorted(series["points"], key=lambda p: (p[0] is None, p[0] or 0.0))
            xs = [p[0] if with_eps else j for p in pts]
            ys = [p[1] for p in pts]
            lo = [p[1] - p[2][0] if p[2] else 0.0 for p in pts]
            hi = [p[2][1] - p[1] if p[2] else 0.0 for p in pts]
            allv += ys + [p[2][0] for p in pts if p[2]] + [p[2][1] for p in pts if p[2]]
            odd = series["other_size"]
            a.errorbar(xs, ys, yerr=[np.clip(lo, 0, None), np.clip(hi, 0, None)], marker=markers[j % len(markers)],
                       ls="--" if odd else "-", mfc="none" if odd else None, capsize=3, lw=1.2, ms=5,
                       label=series["label"][:70])
        goal = METRIC_GOALS.get(metric)
        if isinstance(goal, float):
            a.axhline(goal, color="0.5", lw=0.8, ls=":", label=f"expected {goal:g}")
        if with_eps:
            a.set_xscale("log")
            ticks = sorted({p[0] for s in panel["series"].values() for p in s["points"] if p[0] is not None})
            a.set_xticks(ticks, [f"{t:g}" for t in ticks])
            a.minorticks_off()
            a.set_xlabel("privacy parameter \u03b5 (log scale)")
        else:
            a.set_xticks(range(len(labels)), [panel["series"][k2]["label"].removeprefix("dpnoise ")[:28]
                                              for k2 in labels], fontsize=7, rotation=15)
            a.set_xlabel("sampler (no \u03b5)")
        positive = [v for v in allv if v > 0]
        if positive and len(positive) == len(allv) and max(positive) / min(positive) > 10:
            a.set_yscale("log")  # the metric spans decades
        a.set_ylabel(METRIC_LABELS.get(metric, metric), fontsize=8)
        a.set_title(panel["title"][:70], fontsize=9)
        a.legend(fontsize=6)
        titles.append(panel["title"])
    fig.suptitle(f"dpnoise {record['dpnoise_version']} bench", fontsize=11)
    fig.supxlabel(textwrap.fill(caption, 55 * cols + 45), fontsize=7, ha="left", x=0.01)
    meta = {"Title": f"dpnoise {record['dpnoise_version']} bench",
            ("Subject" if ext == ".pdf" else "Description"): caption}  # the caption beside the figure too
    # text stays text in vector files (editable, searchable): fonts embedded as TrueType in PDF
    with matplotlib.rc_context({"svg.fonttype": "none", "pdf.fonttype": 42}):
        fig.savefig(path, dpi=150, metadata=meta)
    return titles


__all__ = ["Context", "ENTRY_POINT_GROUP", "KNOWN_METRICS", "MAX_UTILITY_REPEATS", "METRIC_GOALS", "METRIC_LABELS",
           "PLOT_FORMATS", "Peer", "RecordError", "SCHEMA", "SCHEMA_VERSION", "Workload", "compare",
           "format_comparison", "format_table", "load_record", "load_workloads", "loaded", "machine_info",
           "make_context", "mann_whitney_greater", "plot", "plot_caption", "register", "run", "run_workload",
           "select", "summarize", "summarize_utility", "t_quantile_975", "time_calls", "utility_figures",
           "workloads"]
