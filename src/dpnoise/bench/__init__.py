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

The package: :mod:`~dpnoise.bench.registry` (workloads and their loading),
:mod:`~dpnoise.bench.harness` (timing, utility, the record), :mod:`~dpnoise.bench.stats`
(intervals, Mann-Whitney), :mod:`~dpnoise.bench.report` (the table),
:mod:`~dpnoise.bench.comparison` (``bench compare``) and :mod:`~dpnoise.bench.figures`
(``--plot``). Every name is importable from ``dpnoise.bench`` itself.
"""
from __future__ import annotations

from .comparison import METRIC_GOALS, RecordError, compare, format_comparison, load_record

# importable from dpnoise.bench as before the split (the demo tour times with best_time; tests
# reach the registry and a few helpers)
from .figures import (
    METRIC_LABELS,
    PLOT_FORMATS,
    _utility_panels,  # noqa: F401
    plot,
    plot_caption,
)
from .harness import (  # noqa: F401
    MAX_UTILITY_REPEATS,
    SCHEMA,
    SCHEMA_VERSION,
    _metric_value,
    best_time,
    machine_info,
    make_context,
    run,
    run_workload,
    summarize,
    time_calls,
    utility_figures,
)
from .registry import (  # noqa: F401
    _LOADED,
    _REGISTRY,
    BUILTIN_MODULE,
    ENTRY_POINT_GROUP,
    KNOWN_METRICS,
    Context,
    Peer,
    Workload,
    _entry_points,
    load_workloads,
    loaded,
    register,
    select,
    workloads,
)
from .report import MISSING, format_table
from .stats import mann_whitney_greater, summarize_utility, t_quantile_975

__all__ = ["BUILTIN_MODULE", "Context", "ENTRY_POINT_GROUP", "KNOWN_METRICS", "MAX_UTILITY_REPEATS", "METRIC_GOALS", "METRIC_LABELS",
           "PLOT_FORMATS", "Peer", "RecordError", "SCHEMA", "SCHEMA_VERSION", "Workload", "compare",
           "format_comparison", "format_table", "load_record", "load_workloads", "loaded", "machine_info",
           "MISSING", "make_context", "mann_whitney_greater", "plot", "plot_caption", "register", "run", "run_workload",
           "select", "summarize", "summarize_utility", "t_quantile_975", "time_calls", "utility_figures",
           "workloads"]
