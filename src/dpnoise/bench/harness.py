"""The ``dpnoise bench`` harness: time the calls, measure the utility (repeated), describe the
machine and assemble the JSON record (schema in docs/bench.md)."""
from __future__ import annotations

import datetime as _dt
import importlib
import math
import os
import platform
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from functools import partial
from typing import Any, Callable

import numpy as np

from .registry import _LOADED, Context, Metrics, Peer, Workload, loaded, select
from .stats import summarize_utility

SCHEMA = "dpnoise-bench/4"
SCHEMA_VERSION = 4
MAX_UTILITY_REPEATS = 1000

# -- timing ----------------------------------------------------------------------------------

def time_calls(call: Callable[[], object], repeats: int) -> list[float]:
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


def summarize(times: Sequence[float]) -> dict[str, Any]:
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
    """The least wall time of ``repeats`` calls.

    Parameters
    ----------
    call : callable
        Called with no arguments.
    repeats : int
        How many calls to time.

    Returns
    -------
    float
        Seconds, the minimum over the calls.
    """
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


def machine_info() -> dict[str, Any]:
    """CPU, cores, load, Python, NumPy, dpnoise and its ChaCha20 backend.

    Returns
    -------
    dict
        JSON-able machine description (the record's ``machine`` field).
    """
    import dpnoise
    from dpnoise import _core

    usable = os.cpu_count() or 1
    if sys.platform != "win32" and sys.platform != "darwin":  # where os has sched_getaffinity
        try:
            usable = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            pass
    try:
        load: list[float] | None = [round(x, 2) for x in os.getloadavg()]
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


def _metric_value(value: Any) -> float | None:
    """A metric as a finite float, or None (missing) for None, NaN, ±inf and non-numbers."""
    if value is None or isinstance(value, (str, bytes)):
        return None
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _utility(fn: Callable[[], Metrics], metrics: tuple[str, ...]) -> dict[str, Any]:
    """The utility fields of a row: ``utility`` holds every declared metric, in declared order,
    as a float or None (missing: not returned, None, not a finite number). A hook that raises or
    returns no mapping keeps the row (its timing is measured apart): ``utility`` is then None and
    ``utility_error`` says why. ``utility_note`` names missing and undeclared metrics."""
    try:
        values = fn()
        if not hasattr(values, "keys"):
            raise TypeError(f"utility returned {type(values).__name__}, not a dict of metrics")
        values = dict(values)
    except Exception as exc:
        return {"utility": None, "utility_error": _failure(exc)}
    util = {k: _metric_value(values.get(k)) for k in metrics}
    out: dict[str, Any] = {"utility": util}
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


def _combine_utility(per_rep: Sequence[dict[str, Any]], metrics: tuple[str, ...]) -> dict[str, Any]:
    """The utility fields of a row or peer from R repetitions (each what :func:`_utility` gave):
    ``utility`` holds each metric's mean (None if missing in every repetition), ``utility_stats``
    its mean, stderr, 95% interval and raw values. A repetition that raised makes the whole
    utility fail (``utility_error``): a mean over the repetitions that happened to work would be
    biased."""
    for rep in per_rep:
        if rep["utility"] is None:
            return {"utility": None, "utility_error": rep["utility_error"]}
    stats = {k: summarize_utility([rep["utility"][k] for rep in per_rep]) for k in metrics}
    out: dict[str, Any] = {"utility": {k: stats[k]["mean"] for k in metrics}, "utility_stats": stats}
    notes = sorted({rep["utility_note"] for rep in per_rep if "utility_note" in rep})
    if notes:
        out["utility_note"] = "; ".join(notes) + (f" (in some of {len(per_rep)} repetitions)" if len(per_rep) > 1
                                                   else "")
    return out


def _import_peer(peer: Peer) -> tuple[Any, dict[str, Any] | None]:
    """(module, None), or (None, the skipped entry of the record)."""
    try:
        return importlib.import_module(peer.library), None
    except ModuleNotFoundError as exc:
        if exc.name is not None and peer.library.startswith(exc.name):
            return None, {"library": peer.library, "name": peer.name, "skipped": f"not installed ({_failure(exc)})"}
        return None, {"library": peer.library, "name": peer.name, "skipped": f"import failed: {_failure(exc)}"}
    except Exception as exc:
        return None, {"library": peer.library, "name": peer.name, "skipped": f"import failed: {_failure(exc)}"}


def _run_peer(peer: Peer, module: Any, ctx: Context, state: Any, ours: float, items: int,
              util: dict[str, Any]) -> dict[str, Any]:
    try:
        call, n = peer.make(module, ctx, state)
        call()  # warm-up
        times = summarize(time_calls(call, ctx.repeats))
    except Exception as exc:
        return {"library": peer.library, "name": peer.name, "skipped": f"failed: {_failure(exc)}"}
    thr = n / times["min"]
    return {"library": peer.library, "version": _version_of(peer.library, module), "name": peer.name,
            "items": int(n), "same_size": int(n) == items, "seconds": times, "throughput": thr,
            "ratio": ours / thr, **util, "utility_seeded": False}


def run_workload(w: Workload, ctx: Context, peers: bool = False, utility_repeats: int = 1) -> dict[str, Any]:
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
    row: dict[str, Any] = {"workload": w.name, "epsilon": ctx.epsilon, "unit": w.unit}
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
        own: list[dict[str, Any]] = []
        theirs: dict[int, list[dict[str, Any]]] = {i: [] for i in range(len(chosen_peers))}
        for r in range(utility_repeats):
            ctx_r = ctx if r == 0 else replace(ctx, utility_repeat=r)
            state_r = state if r == 0 else w.setup(ctx_r)
            if w.utility is not None:
                own.append(_utility(partial(w.utility, ctx_r, state_r), w.metrics))
            for i, (p, module, _) in enumerate(chosen_peers):
                if module is not None and p.utility is not None and w.metrics:
                    theirs[i].append(_utility(partial(p.utility, module, ctx_r, state_r), w.metrics))
            del state_r
        row.update(_combine_utility(own, w.metrics) if w.utility is not None else {"utility": None})
        w.run(ctx, state)  # warm-up: tables, caches, first-touch of pages
        times = summarize(time_calls(lambda: w.run(ctx, state), ctx.repeats))
    except Exception as exc:
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


def make_context(quick: bool = False, threads: int = 1, repeats: int | None = None,
                 seed: int | None = None) -> Context:
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


def _check_epsilons(epsilons: Sequence[float] | None) -> list[float] | None:
    if epsilons is None:
        return None
    out = [float(e) for e in epsilons]
    if not out or any(not (0 < e < math.inf) for e in out):
        raise ValueError(f"epsilons must be positive finite numbers, got {list(epsilons)!r}")
    return out


def run(quick: bool = False, threads: int = 1, peers: bool = False, repeats: int | None = None,
        only: str | None = None, epsilons: Sequence[float] | None = None, seed: int | None = None,
        progress: Callable[[str], None] | None = None, utility_repeats: int = 1) -> dict[str, Any]:
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


def utility_figures(record: dict[str, Any]) -> list[tuple[str, float | None, dict[str, float]]]:
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
