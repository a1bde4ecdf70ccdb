"""``dpnoise demo --spark --stream``: continuous telemetry on a local Spark session. Devices'
reports arrive as Parquet files over several days; :func:`aggregate_stream` keeps one aggregator
per day in a state directory, the driver is stopped half-way and started again on the same
checkpoint and states (nothing lost, nothing counted twice), and each day's top apps are printed
with their 95% intervals, with the central ε of a day's reports with and without a shuffler
between the devices and the server (:func:`dpnoise.accounting.shuffle_amplification`)."""
from __future__ import annotations

import datetime
import os
import tempfile
import time
import warnings
from typing import Any, Callable

import numpy as np


def run_stream_demo(spark: Any = None, devices: int = 50_000, days: int = 3, apps: int = 256,
                    epsilon: float = 2.0, delta: float = 1e-8, files_per_day: int = 2, top: int = 5,
                    out: Callable[[str], Any] = print, workdir: str | None = None) -> dict[str, Any]:
    """Run the streamed collection and return what it computed and printed.

    Parameters
    ----------
    spark : pyspark.sql.SparkSession, optional
        The session (default: a :func:`~dpnoise.distributed.spark.local_session`, started and
        stopped here).
    devices : int, default 50,000
        Devices reporting each day (each sends one report a day).
    days : int, default 3
        Days of collection.
    apps : int, default 256
        The app domain (Hadamard reports).
    epsilon : float, default 2.0
        ε0 of each report.
    delta : float, default 1e-8
        δ of the central guarantee with a shuffler.
    files_per_day : int, default 2
        Parquet files each day's reports arrive in (one micro-batch each).
    top : int, default 5
        Apps printed per day.
    out : callable, default print
        Receives each printed line.
    workdir : str, optional
        Where the files, checkpoint and states go (default: a temporary directory, removed).

    Returns
    -------
    dict
        ``lines`` (printed), ``days`` (the dates), ``states`` (date -> aggregator), ``true``
        (date -> true counts), ``top`` (date -> list of HeavyHitter), ``stopped_at`` (the last
        batch committed before the restart), ``batches`` (after it), ``central_epsilon``
        (date -> (ε without, with a shuffler)), ``seconds``.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    from dpnoise import default_rng
    from dpnoise.accounting import shuffle_amplification
    from dpnoise.demos.data import app_names, synthetic_app_usage
    from dpnoise.distributed.spark import aggregate_stream, local_session, reports_table, stream_state
    from dpnoise.ldp import FrequencyOracle

    lines: list[str] = []

    def say(s: str) -> None:
        lines.append(s)
        out(s)

    own = spark is None
    if own:
        spark = local_session()
    tmp = tempfile.TemporaryDirectory(prefix="dpnoise-stream-demo-") if workdir is None else None
    root = workdir if workdir is not None else tmp.name  # type: ignore[union-attr]
    inputs, state, checkpoint = (os.path.join(root, p) for p in ("in", "state", "checkpoint"))
    os.makedirs(inputs, exist_ok=True)
    try:
        fo = FrequencyOracle("hadamard", epsilon=epsilon, domain_size=apps)
        client = fo.client(default_rng())  # secure: as a device would
        dates = [datetime.date(2026, 11, 1) + datetime.timedelta(days=i) for i in range(days)]
        names = app_names(apps)
        true: dict[Any, np.ndarray] = {}
        files: list[Any] = []
        for i, day in enumerate(dates):
            items = synthetic_app_usage(devices, apps, seed=2027 + i).astype(np.int64)
            true[day] = np.bincount(items, minlength=apps)
            for j, part in enumerate(np.array_split(items, files_per_day)):
                table = reports_table(client.privatize(part), fo)
                table = table.add_column(0, "day", pa.array([day] * len(part), type=pa.date32()))
                files.append((os.path.join(inputs, f"day{i}-part{j}.parquet"), table))
        say(f"Continuous LDP telemetry on Spark ({spark.sparkContext.master}): {days} days x {devices:,} devices, "
            f"{apps} apps, Hadamard reports at epsilon0={epsilon:g}, {len(files)} Parquet files arriving, one "
            "aggregator per day kept in a state directory")
        schema = None
        seconds: dict[str, float] = {}

        def arrive(batch: list[Any], first: int) -> None:
            for k, (path, table) in enumerate(batch):
                pq.write_table(table, path)
                stamp = time.time() - 3600 + first + k  # the file source reads them in this order
                os.utime(path, (stamp, stamp))

        def run(label: str) -> int:
            nonlocal schema
            schema = schema or spark.read.parquet(inputs).schema
            df = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(inputs)
            t0 = time.perf_counter()
            query = aggregate_stream(df, "report", fo, state=state, checkpoint=checkpoint, key="day")
            try:
                query.processAllAvailable()
            finally:
                query.stop()
            seconds[label] = time.perf_counter() - t0
            got = stream_state(state, fo)
            return max((agg.stream.batch_id for agg in got.values()), default=-1)

        half = len(files) // 2
        arrive(files[:half], 0)
        stopped_at = run("first run")
        say(f"  first run: micro-batches 0..{stopped_at} merged in {seconds['first run']:.1f} s; the driver stops "
            "(as if it had died)")
        arrive(files[half:], half)
        batches = run("restart")
        say(f"  restart on the same checkpoint and states: micro-batches {stopped_at + 1}..{batches} in "
            f"{seconds['restart']:.1f} s (a batch Spark replays is skipped: its id is already in the states)")
        states = stream_state(state, fo)
        tops: dict[Any, Any] = {}
        central: dict[Any, Any] = {}
        for day, agg in states.items():
            n = agg.n
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                shuffled = shuffle_amplification(epsilon, n, delta, configuration=fo)
            central[day] = (epsilon, shuffled)
            note = " (no amplification at this n)" if caught else ""
            say(f"  {day.isoformat()}: {n:,} reports ({agg.stream.malformed} malformed); central epsilon without a "
                f"shuffler {epsilon:g}, with one {shuffled:.3f} at delta={delta:g}{note}")
            tops[day] = agg.top(top)
            say("     app         true count   estimate [95% interval]")
            for hit in tops[day]:
                say(f"     {names[hit.item]:10s}  {int(true[day][hit.item]):10,d}   {hit.estimate:10,.0f} "
                    f"[{hit.ci_low:,.0f}, {hit.ci_high:,.0f}]")
        total = sum(c[1] for c in central.values())
        say(f"  over the {days} days (each device reports once a day; basic composition): epsilon {days * epsilon:g} "
            f"without a shuffler, {total:.3f} with one (delta {days * delta:g})")
        return {"lines": lines, "days": dates, "states": states, "true": true, "top": tops, "stopped_at": stopped_at,
                "batches": batches, "central_epsilon": central, "seconds": seconds}
    finally:
        if tmp is not None:
            tmp.cleanup()
        if own:
            spark.stop()
