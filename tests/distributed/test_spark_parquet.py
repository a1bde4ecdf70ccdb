"""Parquet input read by the executors with pyarrow (paths, plain-scan DataFrames), the
mapInArrow fallback for other DataFrames, the configuration carried by files and columns, and
executor failures surfaced in one line."""
import os

import numpy as np
import pytest

pq = pytest.importorskip("pyarrow.parquet")

import dpnoise  # noqa: E402
from dpnoise.ldp import FrequencyOracle  # noqa: E402

from spark_oracles import default_count_route, reports  # noqa: E402

FO = FrequencyOracle("hadamard", 1.0, 1000)


def _write(path, rep, oracle, files=3, row_group_size=250):
    from dpnoise.distributed.spark import reports_table

    os.makedirs(path, exist_ok=True)
    table = reports_table(rep, oracle)
    n = table.num_rows
    for k in range(files):
        lo, hi = k * n // files, (k + 1) * n // files
        pq.write_table(table.slice(lo, hi - lo), os.path.join(path, f"part-{k}.parquet"), row_group_size=row_group_size)
    return path


@pytest.fixture(scope="module")
def hadamard_files(tmp_path_factory):
    rep = reports(FO, 2003)
    path = _write(str(tmp_path_factory.mktemp("pq") / "h"), rep, FO)
    return path, FO.aggregator().add(rep).to_bytes()


def test_paths_and_plain_scans_are_read_by_the_executors(spark, hadamard_files):
    from dpnoise.distributed.spark import aggregate_reports

    path, want = hadamard_files
    files = sorted(os.path.join(path, f) for f in os.listdir(path))
    for source in (path, files, spark.read.parquet(path), spark.read.parquet(path).select("report")):
        agg = aggregate_reports(source, "report", FO, spark=spark)
        assert agg.to_bytes() == want
        assert (agg.spark.source, agg.spark.rows, agg.spark.malformed) == ("parquet", 2003, 0)
    # 3 files x 3 row groups (250 rows each; 667 or 668 rows per file): 9 pieces in 4 tasks
    assert aggregate_reports(path, "report", FO, spark=spark, tasks=4).spark.partitions == 4
    assert aggregate_reports(path, "report", FO, spark=spark, tasks=100).spark.partitions == 9


def test_other_dataframes_are_counted_by_spark_or_go_through_map_in_arrow(spark, hadamard_files, tmp_path):
    from pyspark.sql import functions as F

    from dpnoise.distributed.spark import aggregate_reports

    path, want = hadamard_files
    for df in (spark.read.parquet(path).where("report IS NOT NULL"),
               spark.read.parquet(path).withColumn("x", F.lit(1)).select("report"),
               spark.read.parquet(path).repartition(3)):
        agg = aggregate_reports(df, "report", FO)
        # Hadamard's state is a count table over (rows, bits): the JVM counts, no row enters Python
        assert (agg.spark.source, agg.spark.route) == ("dataframe", default_count_route())
        assert agg.to_bytes() == want
    olh = FrequencyOracle("olh", 1.0, 300)  # seeds per row: no count table, mapInArrow
    rep = reports(olh, 700)
    agg = aggregate_reports(spark.read.parquet(_write(str(tmp_path / "olh"), rep, olh)).where("report IS NOT NULL"),
                            "report", olh)
    assert (agg.spark.route, agg.n) == ("map_in_arrow", 700)
    assert agg.to_bytes() == olh.aggregator().add(rep).to_bytes()


def test_flat_layout_without_a_struct_column(spark, tmp_path):
    from dpnoise.distributed.spark import aggregate_reports, reports_table

    rep = reports(FO, 500)
    struct = reports_table(rep, FO).column("report").combine_chunks()
    import pyarrow as pa

    flat = pa.table({"rows": struct.field("rows"), "bits": struct.field("bits")})
    pq.write_table(flat, str(tmp_path / "flat.parquet"), row_group_size=100)
    want = FO.aggregator().add(rep).to_bytes()
    agg = aggregate_reports(str(tmp_path / "flat.parquet"), None, FO, spark=spark)
    assert agg.spark.source == "parquet" and agg.to_bytes() == want
    df = spark.read.parquet(str(tmp_path / "flat.parquet")).where("rows >= 0")
    agg = aggregate_reports(df, None, FO)
    assert (agg.spark.source, agg.spark.route) == ("dataframe", default_count_route()) and agg.to_bytes() == want


def test_files_and_columns_of_another_configuration_are_refused_naming_both(spark, tmp_path):
    """Issue 21: ε = 4 Hadamard reports aggregated as ε = 1 gave 10,413 for a true 5,000."""
    from dpnoise.distributed.spark import aggregate_reports, dataframe_to_reports, reports_to_dataframe

    eps4 = FrequencyOracle("hadamard", 4.0, 1000)
    rep = eps4.client(dpnoise.default_rng(2), allow_insecure=True).privatize(np.zeros(5000, dtype=np.int64))
    path = _write(str(tmp_path / "eps4"), rep, eps4)
    pattern = r"another configuration \(FrequencyOracle\('hadamard', epsilon=4\.0, domain_size=1000\)\) than " \
              r"the oracle \(FrequencyOracle\('hadamard', epsilon=1\.0, domain_size=1000\)\)"
    with pytest.raises(ValueError, match=r"the Parquet file '.*part-0\.parquet' holds reports of " + pattern):
        aggregate_reports(path, "report", FO, spark=spark)
    with pytest.raises(ValueError, match=pattern):
        aggregate_reports(spark.read.parquet(path), "report", FO)
    assert aggregate_reports(path, "report", eps4, spark=spark).estimate(0) == pytest.approx(5000, abs=400)
    # a DataFrame: the configuration travels in the column's Spark metadata, through
    # projections, filters and Spark's own Parquet files
    df = reports_to_dataframe(spark, rep, eps4, num_partitions=2)
    for other in (df, df.where("report IS NOT NULL").select("report")):
        with pytest.raises(ValueError, match="column 'report' holds reports of " + pattern):
            aggregate_reports(other, "report", FO)
    with pytest.raises(ValueError, match=pattern):
        dataframe_to_reports(df, "report", FO)
    df.write.parquet(str(tmp_path / "by-spark"))
    with pytest.raises(ValueError, match=pattern):
        aggregate_reports(str(tmp_path / "by-spark"), "report", FO, spark=spark)
    assert aggregate_reports(str(tmp_path / "by-spark"), "report", eps4, spark=spark).n == 5000


def test_executor_failures_surface_in_one_line(spark, hadamard_files):
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from dpnoise.distributed.spark import aggregate_reports

    path, _ = hadamard_files

    @F.udf(returnType=T.LongType())
    def boom(x):
        raise RuntimeError("injected executor failure")

    df = spark.read.parquet(path).withColumn("report", F.col("report").withField("rows", boom(F.col("report.rows"))))
    # the second: a shuffle, whose first stage adaptive execution runs while planning (.rdd)
    for source in (df, df.repartition(3)):
        with pytest.raises(RuntimeError) as info:
            aggregate_reports(source, "report", FO)
        message = str(info.value)
        assert message == "aggregating column 'report': the Spark job failed: RuntimeError: injected executor failure"


def test_bad_sources_are_named(spark, tmp_path):
    from dpnoise.distributed.spark import aggregate_reports

    with pytest.raises(TypeError, match="DataFrame, a Parquet path or a non-empty list of paths"):
        aggregate_reports(42, "report", FO)
    with pytest.raises(TypeError, match="non-empty list"):
        aggregate_reports([], "report", FO, spark=spark)
    with pytest.raises(ValueError, match="tasks must be an int >= 1"):
        aggregate_reports(str(tmp_path), "report", FO, spark=spark, tasks=0)


def test_deal_balances_rows():
    from dpnoise.distributed.spark._parquet import deal

    pieces = [("a", i, 100) for i in range(5)] + [("b", 0, 400), ("b", 1, 30)]
    tasks = deal(pieces, 2)
    assert sorted(sum(p[2] for p in t) for t in tasks) == [430, 500]
    assert sorted(p for t in tasks for p in t) == sorted(pieces)
    assert len(deal(pieces, 50)) == len(pieces)


def test_a_jvm_side_failure_is_one_line(spark, tmp_path, hadamard_files):
    """A directory holding a file that is not Parquet: pyarrow cannot list it, Spark reads the
    directory and fails on that file; the reason is the JVM's deepest cause, on one line."""
    import shutil

    from dpnoise.distributed.spark import aggregate_reports

    path, _ = hadamard_files
    mixed = tmp_path / "mixed"
    shutil.copytree(path, mixed)
    (mixed / "notes.parquet").write_bytes(b"not a parquet file at all")
    with pytest.raises(RuntimeError) as info:
        aggregate_reports(str(mixed), "report", FO, spark=spark)
    message = str(info.value)
    assert "the Spark job failed: " in message
    assert "\n" not in message and "notes.parquet" in message
