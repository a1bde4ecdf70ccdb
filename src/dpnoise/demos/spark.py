"""The telemetry scenario of ``dpnoise demo --spark`` on a local Spark session: devices' items
privatised on the executors, the reports aggregated per partition and tree-merged, and the same
counts released with central DP by private_counts, for comparison."""
from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np


def run_telemetry_demo(spark: Any = None, devices: int = 1_000_000, apps: int = 1024, epsilon: float = 2.0,
                       protocol: str | None = None, partitions: int = 4,
                       out: Callable[[str], Any] = print) -> dict[str, Any]:
    """Run the demo and return what it computed and printed: ``lines`` (the printed lines),
    ``protocol``, ``devices``, ``apps``, ``epsilon``, ``partitions``, ``seconds`` (per step:
    load, privatize+aggregate, central counts), ``top`` (the ten most used apps), ``true``,
    ``names`` (their made-up names), ``estimate``, ``stderr`` (for those ten), ``ldp_rms_error``, ``central_rms_error``,
    ``malformed`` (0). ``spark=None`` starts (and stops) a :func:`local_session`; pass a session
    to use your own. ``protocol=None`` takes ``dpnoise.ldp.recommend(epsilon, apps)``.
    Randomness: the secure default generator (privatize_column derives one key per run).

    Parameters
    ----------
    spark : pyspark.sql.SparkSession, optional
        The session (default: a local one, started and stopped here).
    devices, apps : int
        Simulated devices, and the size of the app domain.
    epsilon : float, default 2.0
        ε of each device's report (and of the central release).
    protocol : str, optional
        The LDP protocol (default: the recommended one).
    partitions : int, default 4
        Spark partitions.
    out : callable, default print
        Receives each printed line.

    Returns
    -------
    dict
        The fields listed above.
    """
    import pyarrow as pa

    from dpnoise import default_rng
    from dpnoise.demos.data import app_names, synthetic_app_usage
    from dpnoise.distributed.spark import aggregate_reports, local_session, private_counts, privatize_column
    from dpnoise.ldp import FrequencyOracle, recommend
    from dpnoise.mechanisms import Histogram

    lines: list[str] = []

    def say(s: str) -> None:
        lines.append(s)
        out(s)

    own = spark is None
    if own:
        spark = local_session()
    try:
        name = protocol or recommend(epsilon, apps)
        fo = FrequencyOracle(name, epsilon=epsilon, domain_size=apps)
        seconds: dict[str, float] = {}
        t0 = time.perf_counter()
        items = synthetic_app_usage(devices, apps).astype(np.int64)
        true = np.bincount(items, minlength=apps)
        df = spark.createDataFrame(pa.table({"app": items})).repartition(partitions).cache()
        df.count()
        seconds["load"] = time.perf_counter() - t0
        say(f"Local DP telemetry on Spark ({spark.sparkContext.master}): {devices:,} simulated devices, "
            f"{apps:,} apps, epsilon={epsilon:g} per device, protocol {name!r}, {partitions} partitions")
        t0 = time.perf_counter()
        reports = privatize_column(df, "app", fo.client(default_rng()))
        agg = aggregate_reports(reports, "report", fo)
        seconds["privatize+aggregate"] = time.perf_counter() - t0
        est, err = agg.estimate(), agg.stderr()
        ldp_rms = float(np.sqrt(np.mean((est - true) ** 2)))
        if agg.spark.route in ("jvm_counts", "count_table"):  # a count table: only counts left the JVM
            how = (f"{agg.spark.partitions} partitions counted per report value in the JVM "
                   f"(route {agg.spark.route!r}), one {len(agg.to_bytes()):,}-byte state at the driver")
        else:
            how = f"{agg.spark.partitions} partition states tree-merged, {len(agg.to_bytes()):,} bytes each"
        say(f"  executors privatised and aggregated {agg.n:,} reports in {seconds['privatize+aggregate']:.1f} s "
            f"({how}, {agg.spark.malformed} malformed)")
        top = np.argsort(-true)[:10]
        names = app_names(apps)
        say("   app         true count   estimate +- 1.96 stderr")
        for i in top:
            say(f"   {names[i]:10s}  {int(true[i]):10,d}   {est[i]:10,.0f} +- {1.96 * err[i]:,.0f}")
        inside = float(np.mean(np.abs(est - true) <= 1.96 * err))
        say(f"   {100 * inside:.1f}% of all {apps} apps within their 95% interval; rms error {ldp_rms:,.1f}")
        t0 = time.perf_counter()
        central = private_counts(df, "app", Histogram(epsilon, categories=apps))
        seconds["central counts"] = time.perf_counter() - t0
        central_rms = float(np.sqrt(np.mean((central.counts - true) ** 2)))
        say(f"  central DP for comparison (the server sees raw apps; Spark counts, the driver adds discrete "
            f"Laplace noise once): rms error {central_rms:,.1f} in {seconds['central counts']:.1f} s")
        df.unpersist()
        return {"lines": lines, "protocol": name, "devices": devices, "apps": apps, "epsilon": epsilon,
                "partitions": partitions, "seconds": seconds, "top": top, "names": [names[i] for i in top],
                "true": true[top],
                "estimate": est[top], "stderr": err[top], "ldp_rms_error": ldp_rms,
                "central_rms_error": central_rms, "malformed": agg.spark.malformed}
    finally:
        if own:
            spark.stop()
