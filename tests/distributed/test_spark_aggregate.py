"""aggregate_reports on a real local[2] Spark: bit-for-bit the single-process aggregate for
every protocol, the same after a task failure and retry, and clear errors for bad input."""
import numpy as np
import pytest

from spark_oracles import COUNT_ROUTES, force_route, oracles, reports

ORACLES = oracles()


@pytest.mark.parametrize("name", sorted(ORACLES))
def test_spark_aggregate_equals_single_process(spark, name):
    from dpnoise.distributed.spark import aggregate_reports, reports_to_dataframe

    fo = ORACLES[name]
    rep = reports(fo, 2003)
    df = reports_to_dataframe(spark, rep, fo, num_partitions=5)
    agg = aggregate_reports(df, "report", fo)
    single = fo.aggregator().add(rep)
    assert agg.n == single.n == 2003
    assert agg.to_bytes() == single.to_bytes()
    np.testing.assert_array_equal(agg.estimate(), single.estimate())
    assert (agg.spark.rows, agg.spark.malformed, agg.spark.partitions) == (2003, 0, 5)


def test_a_task_that_fails_once_is_retried_and_nothing_is_counted_twice(spark, tmp_path):
    """local[2, 4]: partition 1 raises on its first attempt after some of its rows have gone
    into that attempt's aggregator; the retry starts afresh."""
    from dpnoise.distributed.spark import aggregate_reports, reports_to_dataframe

    fo = ORACLES["hadamard"]
    rep = reports(fo, 3000)
    df = reports_to_dataframe(spark, rep, fo, num_partitions=3)
    schema = df.schema
    marker = str(tmp_path / "failed-once")  # local mode: the tasks see this file system

    def fail_first_attempt(index, rows):
        from pyspark import TaskContext

        ctx = TaskContext.get()
        for i, row in enumerate(rows):
            if index == 1 and ctx.attemptNumber() == 0 and i == 500:
                open(marker, "w").close()  # (accumulators of failed attempts are discarded)
                raise RuntimeError("injected failure of the first attempt")
            yield row

    flaky = spark.createDataFrame(df.rdd.mapPartitionsWithIndex(fail_first_attempt), schema)
    agg = aggregate_reports(flaky, "report", fo)
    import os

    assert os.path.exists(marker)  # the failure did happen
    single = fo.aggregator().add(rep)
    assert agg.n == 3000
    assert agg.to_bytes() == single.to_bytes()


def test_heavy_hitters_need_a_row_layout_entry(spark):
    from dpnoise.distributed.spark import _report_rows

    class NotAnOracle:
        pass

    # the entry points normalise the oracle first (issue 34 item 4): that step names the argument
    with pytest.raises(TypeError, match="FrequencyOracle"):
        _report_rows.protocol_of(NotAnOracle())


# -- bad input ------------------------------------------------------------------------------------
def test_missing_and_wrong_columns_are_named(spark):
    from dpnoise.distributed.spark import aggregate_reports, reports_to_dataframe

    fo = ORACLES["grr"]
    df = reports_to_dataframe(spark, reports(fo, 50), fo)
    with pytest.raises(ValueError, match="no column 'reports'"):
        aggregate_reports(df, "reports", fo)
    plain = spark.createDataFrame([(1,), (2,)], "x bigint")
    with pytest.raises(TypeError, match="column 'x' must be a struct"):
        aggregate_reports(plain, "x", fo)
    wrong_fields = spark.createDataFrame([((1,),)], "r struct<value: bigint>")
    with pytest.raises(ValueError, match="column 'r' must hold exactly the fields"):
        aggregate_reports(wrong_fields, "r", fo)
    wrong_type = spark.createDataFrame([((1,),)], "r struct<values: int>")
    with pytest.raises(TypeError, match="column 'r': field 'values' must be bigint"):
        aggregate_reports(wrong_type, "r", fo)
    # a DataFrame of another protocol's reports
    had = ORACLES["hadamard"]
    with pytest.raises(ValueError, match="column 'report' must hold exactly"):
        aggregate_reports(reports_to_dataframe(spark, reports(had, 20), had), "report", fo)
    with pytest.raises(TypeError, match="DataFrame"):
        aggregate_reports([1, 2], "report", fo)
    with pytest.raises(ValueError, match="on_malformed"):
        aggregate_reports(df, "report", fo, on_malformed="ignore")


def test_empty_dataframe_is_a_clear_error(spark):
    from dpnoise.distributed.spark import aggregate_reports

    fo = ORACLES["grr"]
    empty = spark.createDataFrame([], "report struct<values: bigint>")
    with pytest.raises(ValueError, match="column 'report': the DataFrame is empty"):
        aggregate_reports(empty, "report", fo)


@pytest.mark.parametrize("name", ["grr", "olh", "hadamard"])
def test_malformed_rows_are_counted_never_silently_dropped(spark, name):
    """Nulls, wrong-length binary rows and out-of-range values: raise naming the column and the
    count; with on_malformed='skip' the others are aggregated exactly and the count reported."""
    from pyspark.sql import functions as F

    from dpnoise.distributed.spark import aggregate_reports, reports_to_dataframe

    fo = ORACLES[name]
    rep = reports(fo, 400)
    df = reports_to_dataframe(spark, rep, fo, num_partitions=2).withColumn("i", F.monotonically_increasing_id())
    df = df.orderBy("i").coalesce(2)
    # break rows 0..5 (of the id order) in three ways
    first = [f.name for f in df.schema["report"].dataType.fields][0]
    kinds = {f.name: f.dataType.simpleString() for f in df.schema["report"].dataType.fields}
    bad_value = F.lit(10 ** 12).cast("bigint") if kinds[first] == "bigint" else F.lit(b"short").cast("binary")
    broken = (df.withColumn("rank", F.row_number().over(__import__("pyspark.sql.window", fromlist=["Window"])
                                                        .Window.orderBy("i")))
              .withColumn("report", F.when(F.col("rank") <= 2, F.lit(None))
                          .when(F.col("rank") <= 5, F.col("report").withField(first, bad_value))
                          .when(F.col("rank") <= 6, F.col("report").withField(first, F.lit(None)))
                          .otherwise(F.col("report")))
              .select("report"))
    with pytest.raises(ValueError, match=r"column 'report': 6 of 400 report rows are malformed"):
        aggregate_reports(broken, "report", fo)
    agg = aggregate_reports(broken, "report", fo, on_malformed="skip")
    assert (agg.spark.malformed, agg.spark.rows, agg.n) == (6, 400, 394)


def test_empty_partitions_contribute_empty_states(spark):
    from dpnoise.distributed.spark import aggregate_reports, reports_to_dataframe

    fo = ORACLES["zmatrix"]
    rep = reports(fo, 3)
    df = reports_to_dataframe(spark, rep, fo, num_partitions=6)  # at least three empty partitions
    agg = aggregate_reports(df, "report", fo)
    assert agg.spark.partitions == 6 and agg.n == 3
    assert agg.to_bytes() == fo.aggregator().add(rep).to_bytes()


def test_local_session_names_what_is_missing(monkeypatch):
    pytest.importorskip("pyspark")
    from dpnoise.distributed.spark import _session

    monkeypatch.setattr(_session, "java_available", lambda: None)
    with pytest.raises(RuntimeError, match="Java 17"):
        _session.local_session()


@pytest.mark.parametrize("name", ["grr", "hadamard", "hcms"])
def test_the_count_routes_equal_the_map_in_arrow_route(spark, name, monkeypatch):
    """Protocols whose state is a count table are counted in the JVM (dpnoise's helper: dense
    arrays; or Spark's groupBy over a key of the report fields): the same state bit for bit,
    and the same malformed rows (a null struct; per field a value at its bound, a negative one
    and a null), as the mapInArrow route."""
    from dpnoise.distributed.spark import aggregate_reports, reports_to_dataframe

    fo = ORACLES[name]
    rep = reports(fo, 1500)
    df = reports_to_dataframe(spark, rep, fo, num_partitions=3)
    fields = [f.name for f in df.schema["report"].dataType.fields]
    rows = [r.asDict(recursive=True) for r in df.collect()]
    rows[0]["report"] = None
    for k, field in enumerate(fields):
        bound = {"values": fo.domain_size, "rows": 1024, "hash_index": 16, "coefficient": 64, "bits": 2}[field]
        for j, bad in enumerate((bound, -1, None)):
            rows[1 + 3 * k + j]["report"][field] = bad
    broken = spark.createDataFrame(rows, df.schema).repartition(3)
    want_bad = 1 + 3 * len(fields)
    states = {}
    for route in COUNT_ROUTES:
        with monkeypatch.context() as m:
            force_route(m, route)
            with pytest.raises(ValueError, match=rf"{want_bad} of 1500 report rows are malformed"):
                aggregate_reports(broken, "report", fo)
            agg = aggregate_reports(broken, "report", fo, on_malformed="skip")
        assert agg.spark.route == route
        assert (agg.spark.malformed, agg.spark.rows, agg.n, agg.spark.partitions) == (want_bad, 1500, 1500 - want_bad, 3)
        states[route] = agg.to_bytes()
    assert states["jvm_counts"] == states["count_table"] == states["map_in_arrow"]


@pytest.mark.parametrize("name", ["grr", "hadamard", "hcms"])
def test_add_counts_equals_adding_the_repeated_reports(name):
    """Aggregator._add_counts (the count-table fold): count c_i of row i gives, bit for bit,
    the state of adding row i c_i times (no Spark needed)."""
    from dpnoise.distributed.spark import _arrow, _report_rows

    fo = ORACLES[name]
    rep = reports(fo, 300)
    rows = _report_rows.to_rows(fo, rep.data, rep.n)
    counts = np.random.default_rng(3).integers(0, 6, rep.n)
    repeated = {k: np.repeat(v, counts, axis=0) for k, v in rows.items()}
    single = fo.aggregator()
    _arrow.add_rows(single, fo, repeated, int(counts.sum()))
    folded = fo.aggregator()
    folded._add_counts(rows, counts)
    assert folded.n == single.n == int(counts.sum())
    assert folded.to_bytes() == single.to_bytes()
