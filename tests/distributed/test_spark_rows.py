"""The per-protocol row layout: every protocol's reports survive reports -> rows -> reports,
without Spark (the layout and the Arrow conversion) and through a real local DataFrame."""
import numpy as np

import dpnoise
import pytest

pytest.importorskip("pyarrow")

from dpnoise.distributed.spark import _arrow, _report_rows  # noqa: E402
from dpnoise.ldp import protocols  # noqa: E402

from spark_oracles import oracles, reports  # noqa: E402

ORACLES = oracles()


def test_every_registered_protocol_has_a_layout():
    assert sorted(_report_rows.LAYOUTS) == sorted(protocols())
    for fo in ORACLES.values():
        # the layout is the declared schema, and a client's reports hold exactly its arrays
        reports = fo.client(dpnoise.default_rng(1), allow_insecure=True).privatize(np.arange(3))
        assert [f.name for f in _report_rows.layout(fo)] == [f.name for f in fo.report_fields]
        assert set(reports.data) == {f.name for f in fo.report_fields}


def _same(a, b):
    assert a.protocol == b.protocol and a.params == b.params and a.n == b.n
    assert sorted(a.data) == sorted(b.data)
    for k in a.data:
        assert a.data[k].dtype == b.data[k].dtype and a.data[k].shape == b.data[k].shape, k
        np.testing.assert_array_equal(a.data[k], b.data[k])


@pytest.mark.parametrize("name", sorted(ORACLES))
@pytest.mark.parametrize("n", [1, 5, 8, 9, 203])  # n <= 8: packed and per-user shapes coincide
def test_round_trip_without_spark(name, n):
    fo = ORACLES[name]
    rep = reports(fo, n)
    rows = _report_rows.to_rows(fo, rep.data, n)
    arrow = _arrow.rows_to_arrow(fo, rows, n)
    back_rows, good, bad = _arrow.arrow_to_rows(fo, arrow)
    assert (good, bad) == (n, 0)
    _same(rep, _arrow.make_reports(fo, back_rows, n))


@pytest.mark.parametrize("name", sorted(ORACLES))
def test_round_trip_through_a_dataframe(spark, name):
    from dpnoise.distributed.spark import dataframe_to_reports, reports_to_dataframe

    fo = ORACLES[name]
    rep = reports(fo, 37)
    df = reports_to_dataframe(spark, rep, fo)
    _same(rep, dataframe_to_reports(df, "report", fo))


def test_packed_bits_are_least_significant_bit_first():
    fo = ORACLES["hadamard"]
    rep = reports(fo, 11)
    bits = _report_rows.to_rows(fo, rep.data, 11)["bits"]
    expect = [(int(rep.data["bits"][i // 8]) >> (i % 8)) & 1 for i in range(11)]
    assert bits.tolist() == expect


def test_reports_of_another_configuration_are_refused(spark):
    from dpnoise.distributed.spark import reports_to_dataframe

    rep = reports(ORACLES["grr"], 10)
    with pytest.raises(ValueError, match="different configuration"):
        reports_to_dataframe(spark, rep, ORACLES["hadamard"])
    with pytest.raises(TypeError, match="Reports"):
        reports_to_dataframe(spark, {"values": np.zeros(3)}, ORACLES["grr"])


def test_dataframe_to_reports_counts_out_of_range_rows(spark):
    from pyspark.sql import functions as F

    from dpnoise.distributed.spark import dataframe_to_reports, reports_to_dataframe

    fo = ORACLES["grr"]
    rep = reports(fo, 30)
    df = reports_to_dataframe(spark, rep, fo).coalesce(1)
    broken = df.withColumn("report", F.when(F.col("report.values") == rep.data["values"][0],
                                            F.col("report").withField("values", F.lit(999).cast("bigint")))
                           .otherwise(F.col("report")))
    bad = int((rep.data["values"] == rep.data["values"][0]).sum())
    with pytest.raises(ValueError, match=f"column 'report': {bad} of 30 report rows are malformed"):
        dataframe_to_reports(broken, "report", fo)
    got, malformed = dataframe_to_reports(broken, "report", fo, on_malformed="skip")
    assert malformed == bad and got.n == 30 - bad
    empty = spark.createDataFrame([], "report struct<values: bigint>")
    with pytest.raises(ValueError, match="empty"):
        dataframe_to_reports(empty, "report", fo)
