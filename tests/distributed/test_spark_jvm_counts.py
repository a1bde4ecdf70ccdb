"""dpnoise's JVM helper (dense per-partition counts in the executors' JVM): built once and
cached, used for count tables beyond what Spark's groupBy counts well, exact (its int counts
flushed into longs), and replaced by the other routes -- with the reason recorded -- where
it cannot be built."""
import os
import zipfile

import numpy as np
import pytest

pytest.importorskip("pyspark")

from dpnoise.ldp import FrequencyOracle  # noqa: E402

from spark_oracles import COUNT_ROUTES, force_route, reports, require_javac  # noqa: E402


def test_the_jar_is_built_once_and_cached(tmp_path, monkeypatch):
    require_javac()
    from dpnoise.distributed.spark import jvm_helper_jar

    monkeypatch.setenv("DPNOISE_CACHE_DIR", str(tmp_path))
    jar = jvm_helper_jar()
    assert os.path.dirname(jar) == str(tmp_path / "spark")
    with zipfile.ZipFile(jar) as z:
        names = set(z.namelist())
    assert "org/dpnoise/spark/DenseCounts.class" in names and "META-INF/MANIFEST.MF" in names
    before = os.stat(jar).st_mtime_ns
    monkeypatch.setenv("PATH", "")  # a cached jar needs no javac
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "nowhere"))
    assert jvm_helper_jar() == jar and os.stat(jar).st_mtime_ns == before
    assert os.listdir(tmp_path / "spark") == [os.path.basename(jar)]  # no temporary left behind


def test_without_a_jdk_the_error_names_javac_and_spark_counts_instead(spark, tmp_path, monkeypatch):
    from dpnoise.distributed.spark import _jvm_counts, aggregate_reports, jvm_helper_jar, reports_to_dataframe

    monkeypatch.setenv("DPNOISE_CACHE_DIR", str(tmp_path))  # nothing cached there
    monkeypatch.setenv("PATH", "")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jre-only"))
    with pytest.raises(RuntimeError, match="javac was not found"):
        jvm_helper_jar()
    monkeypatch.setattr(_jvm_counts, "_loaded", {})  # as in a new SparkContext
    monkeypatch.setattr(_jvm_counts, "CLASS_NAME", "org.dpnoise.spark.NotOnTheClasspath")
    fo = FrequencyOracle("hadamard", 1.0, 1000)
    rep = reports(fo, 900)
    agg = aggregate_reports(reports_to_dataframe(spark, rep, fo, num_partitions=2), "report", fo)
    assert agg.spark.route == "count_table" and "javac was not found" in agg.spark.jvm_helper
    assert agg.to_bytes() == fo.aggregator().add(rep).to_bytes()


def test_a_count_table_beyond_groupby_is_counted_in_the_jvm(spark, monkeypatch):
    """Hadamard with d = 65,536: 131,072 report values, beyond the 2^15 of Spark's groupBy.
    The JVM helper counts them (bit for bit the single-process state); switched off, the rows
    go through mapInArrow and the reason is recorded."""
    from dpnoise.distributed.spark import aggregate_reports, reports_to_dataframe

    fo = FrequencyOracle("hadamard", 1.0, 65_536)
    rep = reports(fo, 3000)
    df = reports_to_dataframe(spark, rep, fo, num_partitions=4)
    want = fo.aggregator().add(rep).to_bytes()
    force_route(monkeypatch, "jvm_counts")
    agg = aggregate_reports(df, "report", fo)
    assert (agg.spark.route, agg.spark.partitions, agg.spark.rows, agg.spark.jvm_helper) == ("jvm_counts", 4, 3000, "")
    assert agg.to_bytes() == want
    monkeypatch.setenv("DPNOISE_SPARK_JVM_COUNTS", "0")
    agg = aggregate_reports(df, "report", fo)
    assert (agg.spark.route, agg.spark.jvm_helper) == ("map_in_arrow", "DPNOISE_SPARK_JVM_COUNTS=0")
    assert agg.to_bytes() == want


def test_the_int_counts_are_flushed_into_longs_exactly(spark, monkeypatch):
    """The helper counts in ints and flushes them into longs every 2^31 - 1 rows of a
    partition; flushing every 3 rows (and every row) gives the same counts."""
    from pyspark.sql import functions as F

    from dpnoise.distributed.spark import _jvm_counts

    force_route(monkeypatch, "jvm_counts")
    helper, why = _jvm_counts.helper(spark)
    assert helper is not None, why
    keys = np.random.default_rng(5).integers(-3, 40, 1001)  # negative and >= 37: malformed
    df = spark.createDataFrame([(int(k),) for k in keys], "key bigint").repartition(3).select(F.col("key"))
    rows = df._jdf.queryExecution().toRdd()
    want = np.append(np.bincount(keys[(keys >= 0) & (keys < 37)], minlength=37), ((keys < 0) | (keys >= 37)).sum())
    got = np.frombuffer(bytes(helper.count(rows, 37, 2)), dtype="<i8")
    np.testing.assert_array_equal(got, want)
    for every in (1, 3):
        np.testing.assert_array_equal(np.frombuffer(bytes(helper.count(rows, 37, 1, every)), dtype="<i8"), want)
    counts, tasks = _jvm_counts.count_dense(helper, df, 37, 2)
    np.testing.assert_array_equal(counts, want)
    assert tasks == 3
    with pytest.raises(ValueError, match="keys must be in"):
        _jvm_counts.count_dense(helper, df, 0, 2)


def test_a_failing_dataframe_surfaces_in_one_line(spark, monkeypatch):
    """An executor failure while the helper counts (a Python UDF that raises in the
    DataFrame's own plan) is the documented exception with a one-line reason."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType

    from dpnoise.distributed.spark import aggregate_reports, reports_to_dataframe

    force_route(monkeypatch, "jvm_counts")
    fo = FrequencyOracle("grr", 2.0, 20)
    rep = reports(fo, 200)
    df = reports_to_dataframe(spark, rep, fo, num_partitions=2)

    def boom(v):
        raise ArithmeticError("the user's column function failed")

    bad = df.withColumn("report", F.col("report").withField("values", F.udf(boom, LongType())(F.col("report.values"))))
    with pytest.raises(RuntimeError) as info:
        aggregate_reports(bad, "report", fo)
    assert "the Spark job failed" in str(info.value) and "\n" not in str(info.value)
    assert "ArithmeticError: the user's column function failed" in str(info.value)


def test_a_cached_jar_others_could_have_written_is_refused(tmp_path, monkeypatch):
    """The JVM runs the jar's code: a cached jar (or cache directory) writable by other users is
    not used."""
    require_javac()
    from dpnoise.distributed.spark import jvm_helper_jar

    monkeypatch.setenv("DPNOISE_CACHE_DIR", str(tmp_path))
    jar = jvm_helper_jar()
    assert os.stat(os.path.dirname(jar)).st_mode & 0o777 == 0o700
    os.chmod(jar, 0o666)
    with pytest.raises(RuntimeError, match="writable by others"):
        jvm_helper_jar()
    os.chmod(jar, 0o644)
    os.chmod(os.path.dirname(jar), 0o777)
    with pytest.raises(RuntimeError, match="writable by others"):
        jvm_helper_jar()


def test_many_partitions_are_summed_on_the_executors(spark, monkeypatch):
    """Beyond 32 partitions the helper sums the last level of the tree on an executor (one array
    reaches the driver) and the depth grows with the partitions: same state, same counts."""
    from dpnoise.distributed.spark import aggregate_reports, reports_to_dataframe

    force_route(monkeypatch, "jvm_counts")
    fo = FrequencyOracle("grr", 2.0, 50)
    rep = reports(fo, 700)
    df = reports_to_dataframe(spark, rep, fo, num_partitions=40)
    for depth in (1, 2):
        agg = aggregate_reports(df, "report", fo, depth=depth)
        assert (agg.spark.route, agg.spark.partitions, agg.spark.rows) == ("jvm_counts", 40, 700)
        assert agg.to_bytes() == fo.aggregator().add(rep).to_bytes()
    monkeypatch.setenv("DPNOISE_SPARK_JVM_COUNTS", "off")
    agg = aggregate_reports(df, "report", fo)
    assert agg.spark.route == "count_table" and "jvm_helper='DPNOISE_SPARK_JVM_COUNTS=off'" in repr(agg.spark)


def test_odd_column_names_are_quoted_in_the_key_expression(spark, monkeypatch):
    """The key is one SQL expression over the report fields: a column name with a space, a dot
    and a backtick is quoted (and reports_to_dataframe / mapInArrow's field selection too)."""
    from dpnoise.distributed.spark import aggregate_reports, reports_to_dataframe

    fo = FrequencyOracle("hcms", 2.0, 500, hashes=16, width=64)
    rep = reports(fo, 600)
    odd = "my rep.ort`s"
    df = reports_to_dataframe(spark, rep, fo, column=odd, num_partitions=2)
    for route in COUNT_ROUTES:
        with monkeypatch.context() as m:
            force_route(m, route)
            agg = aggregate_reports(df, odd, fo)
        assert agg.spark.route == route and agg.to_bytes() == fo.aggregator().add(rep).to_bytes()
