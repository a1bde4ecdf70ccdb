"""Streaming throughput against one batch (issue 37, target: stream >= 0.5x batch).

N = 10^7 Hadamard reports (d = 65,536, ε = 1, Zipf(1.1) items) in N / 10^6 Parquet files of
10^6 reports each. Spark local[2]:

* batch: ``aggregate_reports(directory)`` over every file at once (the Parquet route: the
  executors read the row groups with pyarrow);
* stream: ``aggregate_stream`` over ``spark.readStream.parquet(directory)`` with
  ``maxFilesPerTrigger=1``, i.e. micro-batches of 10^6 reports, each aggregated by the
  DataFrame routes (a micro-batch reaches ``foreachBatch`` as a LogicalRDD, not a plain Parquet
  scan: the JVM helper counts it) and committed to the state directory; timed from the call to
  the end of ``processAllAvailable`` (fresh checkpoint and state each round).

Both give the same state (asserted). After one warm-up of each, ROUNDS rounds time both back to
back; the ratio (batch time / stream time) is computed within each round, the median reported
with the load average and Spark's per-batch durations (``recentProgress``: addBatch is
dpnoise's part, the rest Spark's own bookkeeping). DPNOISE_BENCH_STREAM_N overrides N.
"""
import os
import shutil
import statistics
import time

import numpy as np
import pytest

import dpnoise

pytest.importorskip("pyspark")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from dpnoise.distributed.spark import (aggregate_reports, aggregate_stream, local_session,  # noqa: E402
                                       reports_table, stream_state)

PER_BATCH = 1_000_000
N = int(os.environ.get("DPNOISE_BENCH_STREAM_N", 10 * PER_BATCH))
ROUNDS = int(os.environ.get("DPNOISE_BENCH_STREAM_ROUNDS", 2))
D = 65_536
FO = dpnoise.ldp.FrequencyOracle("hadamard", epsilon=1.0, domain_size=D)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("spark-stream-bench")
    directory = str(root / "reports")
    os.makedirs(directory)
    w = 1.0 / np.arange(1, D + 1) ** 1.1
    single = FO.aggregator()
    for k in range(N // PER_BATCH):
        items = np.random.default_rng(k).choice(D, size=PER_BATCH, p=w / w.sum()).astype(np.int64)
        reports = FO.client(dpnoise.default_rng(k), allow_insecure=True).privatize(items)
        single.add(reports)
        path = os.path.join(directory, f"part-{k:04d}.parquet")
        pq.write_table(reports_table(reports, FO), path, row_group_size=1 << 20)
        os.utime(path, (1_700_000_000 + k, 1_700_000_000 + k))
    spark = local_session("local[2]", "dpnoise-stream-bench", driver_memory="2g")
    yield spark, directory, root, single.to_bytes()
    spark.stop()


def _stream(spark, directory, root, label):
    state, checkpoint = str(root / f"state-{label}"), str(root / f"cp-{label}")
    for p in (state, checkpoint):
        shutil.rmtree(p, ignore_errors=True)
    schema = spark.read.parquet(directory).schema
    t0 = time.perf_counter()
    df = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(directory)
    query = aggregate_stream(df, "report", FO, state=state, checkpoint=checkpoint)
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    seconds = time.perf_counter() - t0
    return seconds, stream_state(state, FO), query.recentProgress


def test_stream_vs_batch(setup):
    spark, directory, root, want = setup
    batch = aggregate_reports(directory, "report", FO)
    assert batch.to_bytes() == want
    _, agg, _ = _stream(spark, directory, root, "warm")
    assert agg.to_bytes() == want and agg.stream.batch_id == N // PER_BATCH - 1
    ratios, rows, loads = [], [], []
    for r in range(ROUNDS):
        loads.append(os.getloadavg()[0])
        t0 = time.perf_counter()
        aggregate_reports(directory, "report", FO)
        batch_s = time.perf_counter() - t0
        stream_s, agg, progress = _stream(spark, directory, root, f"r{r}")
        assert agg.to_bytes() == want
        ratios.append(batch_s / stream_s)
        per = {k: statistics.median(p["durationMs"].get(k, 0) for p in progress if p["numInputRows"])
               for k in ("addBatch", "triggerExecution", "walCommit", "commitOffsets", "latestOffset", "queryPlanning")}
        rows.append((batch_s, stream_s, per))
    loads.append(os.getloadavg()[0])
    for batch_s, stream_s, per in rows:
        print(f"\nbatch {batch_s:.2f} s ({N / batch_s / 1e6:.1f} M reports/s), stream {stream_s:.2f} s "
              f"({N / stream_s / 1e6:.1f} M/s), stream/batch {batch_s / stream_s:.3f}; per micro-batch of "
              f"{PER_BATCH:,} (median ms): {per}")
    print(f"stream/batch throughput: median {statistics.median(ratios):.3f} (rounds {[round(x, 3) for x in ratios]}), "
          f"target >= 0.5; load average (1 min) {min(loads):.1f}-{max(loads):.1f}")
