"""Spark scale-out: N = 10^7 Hadamard reports (d = 65,536, ε = 1) aggregated on local[2],
next to single-process aggregation of the same reports in the same run.

The reports are written once to Parquet (four files, so Spark reads four partitions) (as a telemetry pipeline stores them) and read by both
sides: Spark (aggregate_reports: Parquet -> Arrow batches -> C++ aggregator per partition ->
states tree-merged) and one process (pyarrow reads the same file, one aggregator). The
in-memory single-process add (reports already NumPy arrays) is the floor. rounds=2: one round
of 10^7 takes tens of seconds on two cores. DPNOISE_BENCH_SPARK_N overrides N (e.g. 10^6).
Also measured: state size (to_bytes) and the time of one merge of two states (driver cost).
"""
import os
import time

import numpy as np
import pytest

import dpnoise
from conftest import TIMES, record_time

pytest.importorskip("pyspark")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from dpnoise.distributed.spark import _arrow, aggregate_reports, local_session, reports_table  # noqa: E402

N = int(os.environ.get("DPNOISE_BENCH_SPARK_N", 10_000_000))
D, EPS = 65_536, 1.0
FO = dpnoise.ldp.FrequencyOracle("hadamard", epsilon=EPS, domain_size=D)
FILES = 4
W = 1.0 / np.arange(1, D + 1) ** 1.1


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    items = np.random.default_rng(1).choice(D, size=N, p=W / W.sum()).astype(np.int64)
    reports = FO.client().privatize(items)
    path = str(tmp_path_factory.mktemp("spark-bench") / "reports")
    os.makedirs(path)
    table = reports_table(reports, FO)
    for k in range(FILES):  # FILES files: Spark reads them as (at least) FILES partitions
        lo, hi = k * N // FILES, (k + 1) * N // FILES
        pq.write_table(table.slice(lo, hi - lo), os.path.join(path, f"part-{k}.parquet"), row_group_size=1 << 20)
    spark = local_session("local[2]", "dpnoise-bench", driver_memory="2g")
    yield reports, path, spark
    spark.stop()


def test_spark_vs_single_process(benchmark, setup):
    reports, path, spark = setup
    single = FO.aggregator().add(reports)

    def single_from_parquet():
        agg = FO.aggregator()
        for k in range(FILES):
            for batch in pq.ParquetFile(os.path.join(path, f"part-{k}.parquet")).iter_batches(batch_size=1 << 20):
                rows, good, bad = _arrow.arrow_to_rows(FO, batch.column(0))
                _arrow.add_rows(agg, FO, rows, good)
        return agg

    t0 = time.perf_counter()
    in_memory = FO.aggregator().add(reports)
    t_memory = time.perf_counter() - t0
    t0 = time.perf_counter()
    from_file = single_from_parquet()
    t_file = time.perf_counter() - t0
    df = spark.read.parquet(path)
    agg = record_time(benchmark, f"spark local[2] aggregate {N} hadamard d=65536",
                      lambda: aggregate_reports(df, "report", FO), rounds=2)
    t_spark = TIMES.get(f"spark local[2] aggregate {N} hadamard d=65536") or benchmark.stats.stats.min
    assert agg.to_bytes() == single.to_bytes() == from_file.to_bytes() == in_memory.to_bytes()
    state = single.to_bytes()
    other = FO.aggregator().add(reports)
    t0 = time.perf_counter()
    for _ in range(20):
        FO.aggregator().from_bytes(state).merge(type(other).from_bytes(state)).to_bytes()
    t_merge = (time.perf_counter() - t0) / 20
    info = {
        "n": N, "d": D, "partitions": agg.spark.partitions,
        "spark_reports_per_s": N / t_spark,
        "single_process_parquet_reports_per_s": N / t_file,
        "single_process_in_memory_reports_per_s": N / t_memory,
        "spark_over_single_parquet": t_file / t_spark,
        "state_bytes": len(state),
        "merge_seconds_per_state": t_merge,
    }
    benchmark.extra_info.update(info)
    print("\n" + "\n".join(f"  {k}: {v:.4g}" if isinstance(v, float) else f"  {k}: {v}" for k, v in info.items()))
