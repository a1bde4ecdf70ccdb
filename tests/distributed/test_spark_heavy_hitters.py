"""Heavy hitters on a real local Spark: the aggregate of PEM, TreeHist and Bitstogram reports
(int and str items) equals the single-process aggregate bit for bit, and so does top()."""
import numpy as np
import pytest

import dpnoise
from dpnoise.ldp import HeavyHitters

CONFIGS = {
    "pem-int": lambda: HeavyHitters("pem", 4.0, item_bits=16, k_prime=64, k=3),
    "treehist-int": lambda: HeavyHitters("treehist", 4.0, item_bits=16, k_prime=64, k=3),
    "bitstogram-int": lambda: HeavyHitters("bitstogram", 4.0, item_bits=16, k_prime=64, k=3),
    "pem-str": lambda: HeavyHitters("pem", 4.0, item_type="str", max_length=4, k_prime=64, k=3),
}


def _items(hh, n):
    rs = np.random.default_rng(3)
    ranks = np.minimum(rs.zipf(1.5, n), 50) - 1
    if hh.codec.item_type == "str":
        words = [f"w{i:02d}" for i in range(50)]
        return [words[r] for r in ranks]
    return (ranks * 977 + 5).astype(np.uint16)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_spark_heavy_hitters_equal_single_process(spark, name):
    from dpnoise.distributed.spark import aggregate_reports, dataframe_to_reports, reports_to_dataframe

    hh = CONFIGS[name]()
    rep = hh.client(dpnoise.default_rng(5), allow_insecure=True).privatize(_items(hh, 4000))
    df = reports_to_dataframe(spark, rep, hh, num_partitions=4)
    agg = aggregate_reports(df, "report", hh)
    single = hh.aggregator().add(rep)
    assert agg.n == single.n == 4000
    assert agg.to_bytes() == single.to_bytes()
    assert [(t.item, t.estimate) for t in agg.top(3)] == [(t.item, t.estimate) for t in single.top(3)]
    back = dataframe_to_reports(df, "report", hh)
    assert hh.aggregator().add(back).to_bytes() == single.to_bytes()


def test_spark_heavy_hitters_refuses_other_configurations(spark):
    from dpnoise.distributed.spark import aggregate_reports, reports_to_dataframe

    hh = CONFIGS["pem-int"]()
    rep = hh.client(dpnoise.default_rng(5), allow_insecure=True).privatize(_items(hh, 100))
    other = HeavyHitters("pem", 2.0, item_bits=16, k_prime=64, k=3)
    with pytest.raises(ValueError, match="different configuration"):
        reports_to_dataframe(spark, rep, other)
    df = reports_to_dataframe(spark, rep, hh)
    # the other configuration's aggregator refuses every row (its groups or buckets differ or the
    # fingerprint does not match): counted as malformed, never silently added
    with pytest.raises(ValueError, match="malformed|report"):
        aggregate_reports(df, "report", HeavyHitters("pem", 4.0, item_bits=16, k_prime=8, k=3))


def test_report_struct_fields_are_read_by_name_not_position(spark):
    """A report struct rebuilt with its fields in another order (F.struct, a join, a Parquet or
    JSON round trip) passes the schema check; its fields must still be read as themselves."""
    from pyspark.sql import functions as F

    from dpnoise.distributed.spark import aggregate_reports, reports_to_dataframe

    for hh in (CONFIGS["pem-int"](), None):
        if hh is None:  # a frequency oracle too
            hh = dpnoise.ldp.FrequencyOracle("flh", 2.0, 300, k_prime=50)
            rep = hh.client(dpnoise.default_rng(5), allow_insecure=True).privatize(np.arange(500) % 300)
        else:
            rep = hh.client(dpnoise.default_rng(5), allow_insecure=True).privatize(_items(hh, 500))
        df = reports_to_dataframe(spark, rep, hh, num_partitions=2)
        names = [f.name for f in df.schema["report"].dataType.fields]
        reordered = df.select(F.struct(*[F.col("report")[n].alias(n) for n in reversed(names)]).alias("report"))
        assert [f.name for f in reordered.schema["report"].dataType.fields] == names[::-1]
        agg = aggregate_reports(reordered, "report", hh)
        assert agg.to_bytes() == hh.aggregator().add(rep).to_bytes()
