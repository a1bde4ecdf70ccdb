"""Reports leave a process as Arrow/Parquet (configuration in the schema metadata) or as compact
per-device records; Reports.concat; every reader refuses another configuration. Run for every
registered configuration (no protocol named)."""
import numpy as np
import pytest

import dpnoise
from dpnoise import ldp

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

FAMILIES = ldp.Configuration.families()
CASES = [(fam, name) for fam, base in sorted(FAMILIES.items()) for name in sorted(base.registered())]
IDS = [f"{fam}-{name}" for fam, name in CASES]


def make(fam, name, n=100, seed=1, epsilon=None):
    cls = FAMILIES[fam].registered()[name]
    config = cls.example() if epsilon is None else cls.example(epsilon)
    reports = config.client(dpnoise.default_rng(seed), allow_insecure=True).privatize(config.example_items(n, seed=seed))
    return config, reports


def same(a, b):
    assert a == b and a.n == b.n
    for k in a.data:
        np.testing.assert_array_equal(a.data[k], b.data[k])


@pytest.mark.parametrize("fam,name", CASES, ids=IDS)
def test_arrow_and_parquet_round_trip(fam, name, tmp_path):
    config, reports = make(fam, name, n=37)
    table = reports.to_arrow()
    assert table.num_rows == 37 and table.column_names == [f.name for f in config.report_fields]
    same(ldp.Reports.from_arrow(table, config), reports)
    path = tmp_path / "r.parquet"
    ldp.arrow.write_parquet(reports, path)
    assert ldp.Configuration.from_json(pq.read_schema(path).metadata[b"dpnoise.configuration"]) == config
    same(ldp.arrow.read_parquet(path, config), reports)
    same(ldp.Reports.from_arrow(table.to_batches(max_chunksize=10), config), reports)
    empty = config.client(dpnoise.default_rng(0), allow_insecure=True).privatize(config.example_items(0))
    assert ldp.Reports.from_arrow(empty.to_arrow(), config).n == 0


@pytest.mark.parametrize("fam,name", CASES, ids=IDS)
def test_readers_refuse_another_configuration(fam, name, tmp_path):
    config, reports = make(fam, name)
    other = type(config).example(1.0)
    with pytest.raises(ValueError, match="another configuration") as err:
        ldp.Reports.from_arrow(reports.to_arrow(), other)
    assert repr(other) in str(err.value)
    path = tmp_path / "r.parquet"
    ldp.arrow.write_parquet(reports, path)
    with pytest.raises(ValueError, match="another configuration"):
        ldp.arrow.read_parquet(path, other)
    with pytest.raises(ValueError, match="another configuration"):
        ldp.Reports.from_records(reports.to_records(), other)


@pytest.mark.parametrize("fam,name", CASES, ids=IDS)
def test_malformed_rows_raise_or_are_skipped_and_counted(fam, name):
    config, reports = make(fam, name, n=200)
    table = reports.to_arrow()
    first = config.report_fields[0]
    col = table.column(first.name).to_pylist()
    # ten nulls, and (for a bounded field) ten values out of range
    for i in range(0, 100, 10):
        col[i] = None
    if first.bound is not None:
        for i in range(5, 105, 10):
            col[i] = first.upper(config)
    bad = table.set_column(0, first.name, pa.array(col, type=table.schema.field(0).type))
    dropped = 10 + (10 if first.bound is not None else 0)
    with pytest.raises(ValueError, match=f"^{dropped} of 200 rows are not valid reports"):  # counts, never a value
        ldp.Reports.from_arrow(bad, config)
    kept = ldp.Reports.from_arrow(bad, config, on_malformed="skip")
    assert kept.skipped == dropped and kept.n == 200 - dropped
    config.aggregator().add(kept)  # what is kept is accepted


@pytest.mark.parametrize("fam,name", CASES, ids=IDS)
def test_valid_rows_agrees_with_add(fam, name):
    config, reports = make(fam, name, n=64)
    assert config.valid_rows(reports.data, 64).all()
    bounded = [f for f in config.report_fields if f.bound is not None]
    if not bounded:
        pytest.skip("no bounded field to break")
    f = bounded[0]
    data = {k: v.copy() for k, v in reports.data.items()}
    data[f.name][[3, 9]] = f.upper(config)
    mask = config.valid_rows(data, 64)
    assert not mask[3] and not mask[9] and mask.sum() == 62
    with pytest.raises(ValueError):
        config.aggregator().add(config.reports(data, 64))


@pytest.mark.parametrize("fam,name", CASES, ids=IDS)
def test_concat_equals_one_batch(fam, name):
    config, _ = make(fam, name)
    rng = dpnoise.default_rng(9)
    items = config.example_items(45, seed=2)
    client = config.client(rng, allow_insecure=True)
    parts = [client.privatize(items[:13]), client.privatize(items[13:13]), client.privatize(items[13:])]
    joined = ldp.Reports.concat(parts)
    assert joined.n == 45
    a = config.aggregator()
    for p in parts:
        a.add(p)
    b = config.aggregator().add(joined)
    assert a.to_bytes() == b.to_bytes()
    with pytest.raises(ValueError, match="different configurations"):
        ldp.Reports.concat([joined, make(fam, name, epsilon=1.0)[1]])  # another ε (and key)
    with pytest.raises(ValueError):
        ldp.Reports.concat([])


@pytest.mark.parametrize("fam,name", CASES, ids=IDS)
def test_per_device_records(fam, name):
    config, reports = make(fam, name, n=50)
    records = reports.to_records()
    assert len(records) == 50
    own = sum(1 if f.kind == ldp.PACKED else (f.row_bytes(config) if f.kind == ldp.ROW else f.dtype.itemsize)
              for f in config.report_fields)
    assert all(len(r) == own + 16 for r in records)
    same(ldp.Reports.from_records(records, config), reports)
    with pytest.raises(ValueError, match="record 7"):
        ldp.Reports.from_records(records[:7] + [records[7][:-1]] + records[8:], config)
    with pytest.raises(TypeError):
        ldp.Reports.from_records(records[0], config)
    # the fixed-width fast path (a list of bytes) must not pad, cut or encode what it copies
    with pytest.raises(ValueError, match="record 9"):
        ldp.Reports.from_records(records[:9] + [records[9] + b"\0"] + records[10:], config)
    with pytest.raises(TypeError):
        ldp.Reports.from_records(records[:3] + [records[3].decode("latin-1")] + records[4:], config)
    flipped = records[4][:15] + bytes([records[4][15] ^ 1]) + records[4][16:]  # the id's last byte
    with pytest.raises(ValueError, match="record 4 is of another"):
        ldp.Reports.from_records(records[:4] + [flipped] + records[5:], config)
    same(ldp.Reports.from_records(tuple(bytearray(r) for r in records), config), reports)  # the join path
