"""private_counts: Spark counts exactly, the driver charges the budget once and draws the
noise once."""
import numpy as np
import pytest

import dpnoise
from dpnoise.mechanisms import Histogram, LaplaceMechanism, NoisyGridPlan
from spy_budget import SpyBudget

ITEMS = np.random.default_rng(9).integers(0, 12, 5000)  # categories 0..11; 12..15 never occur


@pytest.fixture(scope="module")
def items_df(spark):
    return spark.createDataFrame([(int(x),) for x in ITEMS], "item bigint").repartition(3)


def test_same_release_as_the_single_process_histogram(items_df):
    from dpnoise.distributed.spark import private_counts

    hist = Histogram(1.0, categories=16, rng=dpnoise.default_rng(4), allow_insecure=True)
    got = private_counts(items_df, "item", hist)
    ref = Histogram(1.0, categories=16, rng=dpnoise.default_rng(4), allow_insecure=True).release(ITEMS)
    assert got.bins == tuple(range(16))
    np.testing.assert_array_equal(got.counts, ref)
    assert not got.counts.flags.writeable


def test_budget_charged_once_and_noise_drawn_once(items_df, monkeypatch):
    from dpnoise.distributed.spark import private_counts

    draws = []
    original = NoisyGridPlan.execute

    def counting_execute(self, rng, prepared):
        draws.append(1)
        return original(self, rng, prepared)

    monkeypatch.setattr(NoisyGridPlan, "execute", counting_execute)
    budget = SpyBudget(10.0)
    hist = Histogram(1.0, categories=16, budget=budget)
    got = private_counts(items_df, "item", hist)
    items_df.count()  # another action on the data: nothing is redrawn or recharged
    _ = got.counts, got.as_dict()
    assert len(budget.calls) == 1 and len(draws) == 1
    assert budget.calls[0][1] == 1  # count=1: one release


def test_explicit_bins_absent_bins_are_zero_before_noise(spark):
    from dpnoise.distributed.spark import private_counts

    df = spark.createDataFrame([("a",), ("b",), ("a",), ("zzz",)], "k string")
    # a huge epsilon: the noise is almost surely 0 on every count
    hist = Histogram(100.0, categories=3, out_of_domain="drop")
    got = private_counts(df, "k", hist, bins=["a", "b", "c"])
    assert got.as_dict() == {"a": 2, "b": 1, "c": 0}
    with pytest.raises(ValueError, match="outside the bins"):
        private_counts(df, "k", Histogram(1.0, categories=3, out_of_domain="raise"), bins=["a", "b", "c"])
    lap = LaplaceMechanism(100.0, sensitivity=1.0)
    assert np.round(private_counts(df, "k", lap, bins=["a", "b"]).counts).tolist() == [2, 1]


def test_bad_input(spark, items_df):
    from dpnoise.distributed.spark import private_counts

    lap = LaplaceMechanism(1.0, sensitivity=1.0)
    with pytest.raises(ValueError, match="not be private"):
        private_counts(items_df, "item", lap)
    with pytest.raises(ValueError, match="no column 'x'"):
        private_counts(items_df, "x", Histogram(1.0, categories=16))
    with pytest.raises(TypeError, match="mechanism"):
        private_counts(items_df, "item", "laplace")
    with pytest.raises(ValueError, match="categories=16"):
        private_counts(items_df, "item", Histogram(1.0, categories=16), bins=[1, 2])
    with pytest.raises(ValueError, match="repeat"):
        private_counts(items_df, "item", lap, bins=[1, 1])
    with pytest.raises(ValueError, match="clamp"):
        private_counts(items_df, "item", Histogram(1.0, categories=2), bins=[1, 2])
    budget = SpyBudget(10.0)
    with pytest.raises(ValueError):
        private_counts(items_df, "item", Histogram(1.0, categories=3, out_of_domain="raise", budget=budget))
    assert budget.calls == []  # refused before any charge


def test_a_column_that_cannot_hold_the_bins_is_refused_before_any_charge(spark):
    from dpnoise.distributed.spark import private_counts

    strings = spark.createDataFrame([("1",), ("2",)], "k string")
    budget = SpyBudget(10.0)
    with pytest.raises(TypeError, match=r"column 'k' is string: it cannot hold int bins"):
        private_counts(strings, "k", Histogram(1.0, categories=3, budget=budget))
    with pytest.raises(TypeError, match=r"column 'k' is string: it cannot hold int bins"):
        private_counts(strings, "k", Histogram(1.0, categories=2, out_of_domain="drop", budget=budget), bins=[1, 2])
    tiny = spark.createDataFrame([(1,)], "k tinyint")
    with pytest.raises(TypeError, match=r"column 'k' is tinyint: it cannot hold every bin"):
        private_counts(tiny, "k", Histogram(1.0, categories=2, out_of_domain="drop", budget=budget), bins=[1, 300])
    with pytest.raises(TypeError, match="one type"):
        private_counts(strings, "k", Histogram(1.0, categories=2, out_of_domain="drop", budget=budget), bins=["1", 2])
    assert budget.calls == []
    # numpy integer bins are plain bins
    got = private_counts(spark.createDataFrame([(1,), (2,), (2,)], "k int"), "k",
                         Histogram(100.0, categories=2, out_of_domain="drop"), bins=list(np.array([1, 2])))
    assert got.as_dict() == {1: 1, 2: 2}


def test_at_most_one_row_per_bin_plus_one_reaches_the_driver(spark, monkeypatch):
    """30,000 distinct values (a user-ID column), 10 bins: the bins are filtered in Spark and
    the out-of-domain rows counted there; the driver collects at most 11 rows."""
    from pyspark.sql.classic.dataframe import DataFrame

    from dpnoise.distributed.spark import private_counts

    df = spark.range(30_000).selectExpr("id AS user")
    collected = []
    original = DataFrame.collect

    def spy(self):
        rows = original(self)
        collected.append(len(rows))
        return rows

    monkeypatch.setattr(DataFrame, "collect", spy)
    got = private_counts(df, "user", Histogram(100.0, categories=10, out_of_domain="drop"))  # 29,990 rows outside, dropped
    assert collected and max(collected) <= 11
    assert got.as_dict() == {i: 1 for i in range(10)}
    clamp = private_counts(df, "user", Histogram(100.0, categories=10, out_of_domain="clamp"))
    assert clamp.counts.tolist()[:9] == [1] * 9 and clamp.counts[9] == 30_000 - 9
    assert max(collected) <= 11
