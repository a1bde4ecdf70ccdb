"""Malformed rows are found by per-row masks (one pass, one add), for every field of every
layout; a configuration error (zmatrix plane overflow, a failed merge) is raised as one and
never counted as malformed rows."""
import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")

import dpnoise  # noqa: E402
from dpnoise.distributed.spark import _arrow, _report_rows  # noqa: E402
from dpnoise.ldp import FrequencyOracle, HeavyHitters  # noqa: E402

from spark_oracles import oracles, reports  # noqa: E402

CONFIGS = dict(oracles())
CONFIGS["treehist"] = HeavyHitters("treehist", 4.0, item_bits=16, k_prime=64, k=3)
CONFIGS["pem-str"] = HeavyHitters("pem", 4.0, item_type="str", max_length=4, k_prime=64, k=3)


def _reports(cfg, n):
    if cfg.family != "heavy_hitters":
        return reports(cfg, n)
    items = np.arange(n) % 50 if cfg.codec.item_type == "int" else [f"w{i % 50:02d}" for i in range(n)]
    return cfg.client(dpnoise.default_rng(3), allow_insecure=True).privatize(items)


def _breakers(cfg, field):
    """Ways to break one row's ``field`` that the aggregator refuses: (label, function of the
    per-row column and the row index) changing that row in place (or None: a null)."""
    proto = _report_rows.protocol_of(cfg)
    if field.kind == _report_rows.FIXED:
        out = [("short", "short"), ("null", None)]
        if proto.name in ("oue", "sue") and proto.domain_size % 64:
            out.append(("padding bit", "padding"))
        return out
    if field.kind == dpnoise.ldp.PACKED:
        return [("bit 2", 2), ("bit -1", -1), ("null", None)]
    if field.name == "y":
        return [("y 0", 0), ("y 2", 2), ("null", None)]
    if field.name == "seeds":
        return [("null", None)]
    return [("negative", -1), ("huge", 1 << 40), ("null", None)]


def _broken_column(cfg, rep, field, how, row):
    """The struct column of ``rep`` with ``row``'s ``field`` broken ``how``."""
    rows = _report_rows.to_rows(cfg, rep.data, rep.n)
    arrays = []
    for f in _report_rows.layout(cfg):
        base = _arrow.rows_to_arrow(cfg, rows, rep.n).field(f.name)
        if f.name != field.name:
            arrays.append(base)
            continue
        values = base.to_pylist()
        if how is None:
            values[row] = None
        elif how == "short":
            values[row] = values[row][:-1]
        elif how == "padding":
            b = bytearray(values[row])
            b[-1] |= 0x80  # bit 63 of the last word: beyond domain_size
            values[row] = bytes(b)
        else:
            values[row] = how
        arrays.append(pa.array(values, type=base.type))
    return pa.StructArray.from_arrays(arrays, names=[f.name for f in _report_rows.layout(cfg)])


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_every_bad_field_of_every_layout_is_counted_and_the_rest_added(name):
    cfg = CONFIGS[name]
    rep = _reports(cfg, 40)
    row = 17
    keep = np.arange(40) != row
    good_rows = _report_rows.take(_report_rows.to_rows(cfg, rep.data, 40), keep)
    want = cfg.aggregator().add(_arrow.make_reports(cfg, good_rows, 39)).to_bytes()
    for field in _report_rows.layout(cfg):
        for label, how in _breakers(cfg, field):
            column = _broken_column(cfg, rep, field, how, row)
            rows, n_good, n_bad = _arrow.arrow_to_rows(cfg, column)
            assert (n_good, n_bad) == (39, 1), (field.name, label)
            agg = cfg.aggregator()
            assert _arrow.add_rows(agg, cfg, rows, n_good) == 0  # one add, no refusal left
            assert agg.to_bytes() == want, (field.name, label)


def test_a_null_struct_is_malformed():
    cfg = CONFIGS["grr"]
    rep = _reports(cfg, 10)
    column = _arrow.rows_to_arrow(cfg, _report_rows.to_rows(cfg, rep.data, 10), 10)
    mask = pa.array([i == 3 for i in range(10)])
    nulled = pa.StructArray.from_arrays(column.flatten(), names=["values"], mask=mask)
    assert _arrow.arrow_to_rows(cfg, nulled)[1:] == (9, 1)


def test_a_zmatrix_plane_overflow_is_a_configuration_error_never_malformed_rows():
    fo = FrequencyOracle("zmatrix", 1.0, 100, columns=64, planes=1)
    client = fo.client(dpnoise.default_rng(1), allow_insecure=True)
    # 2,000 reports on 64 columns: column sums far beyond ±(2^1 - 1)
    rep = client.privatize(np.arange(2000) % 100, columns=np.arange(2000) % 64)
    column = _arrow.rows_to_arrow(fo, _report_rows.to_rows(fo, rep.data, rep.n), rep.n)
    rows, n_good, n_bad = _arrow.arrow_to_rows(fo, column)
    assert (n_good, n_bad) == (2000, 0)  # every row is well-formed
    with pytest.raises(ValueError, match="configuration error, not malformed rows") as info:
        _arrow.add_rows(fo.aggregator(), fo, rows, n_good)
    assert isinstance(info.value, _arrow.ConfigurationError)


def test_the_zmatrix_overflow_on_spark_raises_and_is_not_counted(spark):
    from dpnoise.distributed.spark import aggregate_reports, reports_to_dataframe

    fo = FrequencyOracle("zmatrix", 1.0, 100, columns=64, planes=1)
    # one report per column per batch, so each partition alone fits; their merge overflows
    client = fo.client(dpnoise.default_rng(1), allow_insecure=True)
    rep = client.privatize(np.arange(64) % 100, columns=np.arange(64))
    one = reports_to_dataframe(spark, rep, fo, num_partitions=1)
    many = one.union(one).union(one).repartition(3)
    with pytest.raises(ValueError, match="configuration error") as info:
        aggregate_reports(many, "report", fo, on_malformed="skip")
    assert "\n" not in str(info.value) and "malformed" not in str(info.value).split("configuration error")[0]
