"""privatize_column: reports drawn on the executors from per-partition generators derived at
the driver, so retries and second actions recompute the same reports."""
import numpy as np
import pytest

import dpnoise
from dpnoise.ldp import FrequencyOracle

FO = FrequencyOracle("hadamard", 1.0, 256)


def _items_df(spark, n=3000, partitions=3):
    items = np.random.default_rng(3).integers(0, 256, n)
    return spark.createDataFrame([(int(x),) for x in items], "item bigint").repartition(partitions, "item") \
        .sortWithinPartitions("item"), items


def _collect(df):
    return df.toArrow()


def test_seeded_client_is_reproducible_and_aggregates(spark):
    from dpnoise.distributed.spark import aggregate_reports, dataframe_to_reports, privatize_column

    df, items = _items_df(spark)
    out = privatize_column(df, "item", FO.client(dpnoise.default_rng(11), allow_insecure=True))
    first, second = _collect(out), _collect(out)  # two actions: the same reports
    assert first.equals(second)
    again = privatize_column(df, "item", FO.client(dpnoise.default_rng(11), allow_insecure=True))
    assert _collect(again).equals(first)  # same seed, same reports, whatever the scheduling
    other = privatize_column(df, "item", FO.client(dpnoise.default_rng(12), allow_insecure=True))
    assert not _collect(other).equals(first)
    agg = aggregate_reports(out, "report", FO)
    assert agg.n == 3000
    assert agg.to_bytes() == FO.aggregator().add(dataframe_to_reports(out, "report", FO)).to_bytes()
    # the estimates are about right (n = 3000, stderr ~ sqrt(3000) * 2.16)
    true = np.bincount(items, minlength=256)
    assert abs(agg.estimate().sum() - true.sum()) < 5 * np.sqrt(3000 * 256) * 2.2


def test_secure_client_gives_the_same_reports_on_a_second_action(spark):
    from dpnoise.distributed.spark import privatize_column

    df, _ = _items_df(spark, 500, 2)
    client = FO.client()  # secure
    out = privatize_column(df, "item", client)
    assert _collect(out).equals(_collect(out))
    # a second call draws a fresh key: different reports
    assert not _collect(privatize_column(df, "item", client)).equals(_collect(out))


def test_a_retried_task_recomputes_the_same_reports(spark, tmp_path):
    from dpnoise.distributed.spark import privatize_column

    df, _ = _items_df(spark, 2000, 2)
    clean = _collect(privatize_column(df, "item", FO.client(dpnoise.default_rng(5), allow_insecure=True)))
    marker = str(tmp_path / "failed")

    def fail_first_attempt(index, rows):
        from pyspark import TaskContext

        for i, row in enumerate(rows):
            if index == 0 and TaskContext.get().attemptNumber() == 0 and i == 100:
                open(marker, "w").close()
                raise RuntimeError("injected failure")
            yield row

    flaky = spark.createDataFrame(df.rdd.mapPartitionsWithIndex(fail_first_attempt, preservesPartitioning=True),
                                  df.schema)
    out = _collect(privatize_column(flaky, "item", FO.client(dpnoise.default_rng(5), allow_insecure=True)))
    import os

    assert os.path.exists(marker)
    assert out.equals(clean)


def test_bad_input(spark):
    from dpnoise.distributed.spark import privatize_column

    df = spark.createDataFrame([(1.5,), (2.0,)], "x double")
    with pytest.raises(TypeError, match="column 'x' must hold integer items"):
        privatize_column(df, "x", FO.client())
    with pytest.raises(ValueError, match="no column 'y'"):
        privatize_column(df, "y", FO.client())
    with pytest.raises(TypeError, match="client"):
        privatize_column(df, "x", FO)
    with pytest.raises(dpnoise.InsecureGeneratorError):
        FO.client(dpnoise.default_rng(1))  # a seeded generator still needs allow_insecure=True
    out_of_range = spark.createDataFrame([(1,), (300,), (None,)], "x bigint")
    # refused up front (one Spark aggregate), before any report is planned: never a Java stack
    with pytest.raises(ValueError, match=r"^column 'x': 2 rows are null or not items in \[0, 256\)$"):
        privatize_column(out_of_range.coalesce(1), "x", FO.client())


def test_a_configuration_is_refused_where_a_client_is_needed_and_a_client_works_as_an_oracle(spark):
    from dpnoise.distributed.spark import aggregate_reports, privatize_column

    df = spark.createDataFrame([(1,), (2,)], "x bigint")
    with pytest.raises(TypeError, match=r"^client must be a dpnoise.ldp client .*got Hadamard"):
        privatize_column(df, "x", FO)
    out = privatize_column(df, "x", FO.client())
    # a client where an oracle is expected: its configuration is used, its generator never travels
    agg = aggregate_reports(out, "report", FO.client())
    assert agg.n == 2 and agg.protocol == FO


def test_child_streams_are_the_spawned_children_derived_in_constant_time():
    from dpnoise.distributed.spark._privatize import _PartitionRandomness

    key = 0x1234_5678_9ABC_DEF0_1234_5678_9ABC_DEF0_1234
    randomness = _PartitionRandomness(key)
    children = dpnoise.default_rng(key).spawn(40)
    for i in (0, 1, 7, 39):
        np.testing.assert_array_equal(randomness.generator(i).random_raw(8), children[i].random_raw(8))
    # partition 10^6: one ChaCha20 block, not 10^6 spawns
    import time

    t0 = time.perf_counter()
    randomness.generator(10 ** 6).random_raw(1)
    assert time.perf_counter() - t0 < 1.0


def test_heavy_hitters_clients_privatize_on_the_executors(spark):
    from dpnoise.distributed.spark import aggregate_reports, dataframe_to_reports, privatize_column
    from dpnoise.ldp import HeavyHitters

    for hh, rows, schema in (
            (HeavyHitters("pem", 4.0, item_bits=16, k_prime=64, k=3), [(i % 50 * 977,) for i in range(400)], "x bigint"),
            (HeavyHitters("treehist", 4.0, item_type="str", max_length=4, k_prime=64, k=3),
             [(f"w{i % 30:02d}",) for i in range(400)], "x string")):
        df = spark.createDataFrame(rows, schema).coalesce(2)
        out = privatize_column(df, "x", hh.client(dpnoise.default_rng(8), allow_insecure=True))
        agg = aggregate_reports(out, "report", hh)
        assert agg.n == 400
        assert agg.to_bytes() == hh.aggregator().add(dataframe_to_reports(out, "report", hh)).to_bytes()
    too_long = spark.createDataFrame([("abcdefgh",), ("ab",)], "x string")
    with pytest.raises(ValueError, match=r"column 'x': 1 rows are null or longer than 4 bytes"):
        privatize_column(too_long, "x", hh.client())
    with pytest.raises(TypeError, match="column 'x' must hold str items"):
        privatize_column(spark.createDataFrame([(1,)], "x bigint"), "x", hh.client())


@pytest.mark.parametrize("name", ["grr", "oue", "olh", "flh", "cms", "hcms", "zmatrix"])
def test_every_protocol_privatizes_on_the_executors(spark, name):
    from spark_oracles import oracles

    from dpnoise.distributed.spark import aggregate_reports, dataframe_to_reports, privatize_column

    fo = oracles()[name]
    items = np.random.default_rng(2).integers(0, fo.domain_size, 300)
    df = spark.createDataFrame([(int(x),) for x in items], "item bigint").coalesce(2)
    out = privatize_column(df, "item", fo.client(dpnoise.default_rng(8), allow_insecure=True))
    agg = aggregate_reports(out, "report", fo)
    assert agg.n == 300
    assert agg.to_bytes() == fo.aggregator().add(dataframe_to_reports(out, "report", fo)).to_bytes()
