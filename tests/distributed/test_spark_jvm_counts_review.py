"""Corners of the JVM helper route (review of the dense-counts helper): a DataFrame with no
partitions, a second SparkContext in the same JVM, a jar cached under a group-writable umask,
a relative cache directory, a py4j failure that is not a Java exception, and keys at the
bounds of the key space counted as the other routes count them."""
import os

import numpy as np
import pytest

pytest.importorskip("pyspark")

from dpnoise.ldp import FrequencyOracle  # noqa: E402

from spark_oracles import force_route, reports, require_javac  # noqa: E402


def test_a_dataframe_without_partitions_is_the_documented_empty_error(spark, monkeypatch):
    """``df.limit(0)`` has no partition at all: the helper's reduction of nothing must give the
    documented ValueError ("the DataFrame is empty"), as the other routes do, not
    RuntimeError("empty collection")."""
    from dpnoise.distributed.spark import aggregate_reports, reports_to_dataframe

    force_route(monkeypatch, "jvm_counts")
    fo = FrequencyOracle("grr", 2.0, 20)
    df = reports_to_dataframe(spark, reports(fo, 50), fo, num_partitions=2).limit(0)
    with pytest.raises(ValueError, match="the DataFrame is empty"):
        aggregate_reports(df, "report", fo)


def test_a_second_spark_context_in_the_same_jvm_still_counts(spark, monkeypatch):
    """A SparkContext stopped and started again in the same driver JVM (same py4j gateway) is a
    new cache key: the helper must still count there. py4j caches methods by class *name*, so a
    second DenseCounts class loaded by a new class loader made ``count`` fail with a Py4JError
    ("object is not an instance of declaring class") and a Java stack trace."""
    from dpnoise.distributed.spark import _jvm_counts, aggregate_reports, reports_to_dataframe

    force_route(monkeypatch, "jvm_counts")
    fo = FrequencyOracle("hadamard", 1.0, 1000)
    rep = reports(fo, 300)
    want = fo.aggregator().add(rep).to_bytes()
    df = reports_to_dataframe(spark, rep, fo, num_partitions=2)
    first = aggregate_reports(df, "report", fo)  # loaded for this context
    assert first.spark.route == "jvm_counts", first.spark.jvm_helper
    # what a new SparkContext of the same JVM looks like to the cache (a real restart, stop()
    # then a new local_session, fails the same way; it is not done here: the session is shared)
    monkeypatch.setattr(_jvm_counts, "_context_key", lambda sc: ("another-context", 0))
    again = aggregate_reports(df, "report", fo)
    assert again.spark.route == "jvm_counts", again.spark.jvm_helper
    assert again.to_bytes() == want


def test_a_py4j_failure_is_a_one_line_runtime_error(spark):
    """A py4j error that is not a Java exception (a reflection failure) is the documented
    RuntimeError with one line, not a Py4JError with a Java stack."""
    from py4j.protocol import Py4JError
    from pyspark.sql import functions as F

    from dpnoise.distributed.spark import _jvm_counts

    class Stale:
        def count(self, rows, keys, depth):
            raise Py4JError("An error occurred while calling o1.count. Trace:\njava.lang.IllegalArgumentException: "
                            "object is not an instance of declaring class\n\tat java.base/jdk.internal.reflect")

    df = spark.range(3).select(F.col("id").alias("key"))
    with pytest.raises(RuntimeError) as info:
        _jvm_counts.count_dense(Stale(), df, 4, 2)
    assert not isinstance(info.value, Py4JError) and "\n" not in str(info.value)
    assert "object is not an instance of declaring class" in str(info.value)


def test_a_jar_built_under_a_group_writable_umask_is_used_again(tmp_path, monkeypatch):
    """Under umask 002 (the default of many distributions' user-private groups) the jar was
    written group-writable, so every later use refused the helper's own jar as "writable by
    others" and fell back to the slower routes."""
    require_javac()
    from dpnoise.distributed.spark import jvm_helper_jar

    monkeypatch.setenv("DPNOISE_CACHE_DIR", str(tmp_path))
    old = os.umask(0o002)
    try:
        jar = jvm_helper_jar()
    finally:
        os.umask(old)
    assert os.stat(jar).st_mode & 0o022 == 0
    assert jvm_helper_jar() == jar


def test_a_relative_cache_dir_gives_an_absolute_jar(tmp_path, monkeypatch):
    """The jar's path goes to the JVM (addJar, a URLClassLoader), whose working directory is not
    Python's once Python changes directory: it must be absolute."""
    require_javac()
    from dpnoise.distributed.spark import jvm_helper_jar

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DPNOISE_CACHE_DIR", "relative-cache")
    jar = jvm_helper_jar()
    assert os.path.isabs(jar) and jar.startswith(str(tmp_path))


@pytest.mark.parametrize("name", ["grr", "hcms"])
def test_keys_at_the_bounds_are_counted_as_the_arrow_route_counts_them(spark, monkeypatch, name):
    """Values 0, the largest allowed, far past it, -1, a null field and a null report: the
    helper gives the same state and the same malformed count as mapInArrow."""
    from pyspark.sql import functions as F

    from dpnoise.distributed.spark import aggregate_reports, reports_to_dataframe

    fo = FrequencyOracle(name, 2.0, 20) if name == "grr" else FrequencyOracle(name, 2.0, 500, hashes=4, width=8)
    rep = reports(fo, 40)
    df = reports_to_dataframe(spark, rep, fo, num_partitions=3)
    field = "values" if name == "grr" else df.schema["report"].dataType.fields[0].name
    top = 19 if name == "grr" else None
    ids = F.monotonically_increasing_id() % 6
    bad = df.withColumn("report", F.col("report").withField(field, F.when(ids == 0, F.lit(-1).cast("bigint"))
                                                                      .when(ids == 1, F.lit(None).cast("bigint"))
                                                                      .when(ids == 2, F.lit(1 << 40).cast("bigint"))
                                                                      .otherwise(F.col(f"report.{field}"))))
    if top is not None:
        bad = bad.union(df.withColumn("report", F.col("report").withField(field, F.lit(top).cast("bigint"))))
    bad = bad.union(df.limit(5).withColumn("report", F.when(F.lit(False), F.col("report"))))  # null reports
    bad = bad.cache()
    force_route(monkeypatch, "map_in_arrow")
    want = aggregate_reports(bad, "report", fo, on_malformed="skip")
    monkeypatch.undo()
    force_route(monkeypatch, "jvm_counts")
    got = aggregate_reports(bad, "report", fo, on_malformed="skip")
    assert got.spark.route == "jvm_counts", got.spark.jvm_helper
    assert (got.spark.rows, got.spark.malformed) == (want.spark.rows, want.spark.malformed)
    assert got.spark.malformed > 0
    assert got.to_bytes() == want.to_bytes()
    bad.unpersist()


def test_the_helper_counts_no_partition_and_empty_partitions_as_zeros(spark, monkeypatch):
    """The Java side itself: no partition at all, partitions that are all empty, and more
    partitions than rows (most empty, reduced at depth 3) give exact counts (zeros for no row)."""
    from pyspark.sql import functions as F

    from dpnoise.distributed.spark import _jvm_counts

    force_route(monkeypatch, "jvm_counts")
    helper, why = _jvm_counts.helper(spark)
    assert helper is not None, why
    base = spark.range(5).select((F.col("id") * 2).alias("key"))  # keys 0, 2, 4, 6, 8
    for df in (base.limit(0), base.filter(F.lit(False)).repartition(4)):
        rows = df._jdf.queryExecution().toRdd()
        np.testing.assert_array_equal(np.frombuffer(bytes(helper.count(rows, 5, 2)), dtype="<i8"), np.zeros(6))
    counts, tasks = _jvm_counts.count_dense(helper, base.repartition(12), 5, 3)
    np.testing.assert_array_equal(counts, [1, 0, 1, 0, 1, 2])  # 6 and 8: out of [0, 5)
    assert tasks == 12


def test_a_session_without_a_jvm_gateway_is_refused_with_a_reason():
    """A Spark Connect session has no ``_jvm`` (pyspark raises an AttributeError for it): the
    helper is not used, and the reason says why."""
    from dpnoise.distributed.spark import _jvm_counts

    class Connect:
        def __getattr__(self, name):
            raise AttributeError(f"[JVM_ATTRIBUTE_NOT_SUPPORTED] {name}")

    assert _jvm_counts.helper(Connect()) == (None, "the session has no JVM gateway (Spark Connect)")


def test_a_cache_dir_that_cannot_be_made_is_the_documented_runtime_error(tmp_path, monkeypatch):
    """jvm_helper_jar documents RuntimeError; a cache directory under a regular file (or any
    other OSError of the cache) raised a bare NotADirectoryError/FileExistsError."""
    require_javac()
    from dpnoise.distributed.spark import jvm_helper_jar

    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("DPNOISE_CACHE_DIR", str(blocker / "cache"))
    with pytest.raises(RuntimeError, match="could not be built"):
        jvm_helper_jar()
