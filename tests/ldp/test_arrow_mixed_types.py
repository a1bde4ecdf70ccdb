"""Issue #33, item 6: Arrow tables and Parquet files whose columns have different integer widths
(or binary layouts) are read together, each part with its own type; a value that does not fit
the field's type is a malformed row (never wrapped); a column whose type cannot hold the field
(float, bool) is refused naming the column and both types. Run for every registered
configuration, through both entry points (Reports.from_arrow and arrow.read_parquet)."""
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpnoise
from dpnoise import ldp

pa = pytest.importorskip("pyarrow")
pytest.importorskip("pyarrow.compute")
pq = pytest.importorskip("pyarrow.parquet")

FAMILIES = ldp.Configuration.families()
CASES = [(fam, name) for fam, base in sorted(FAMILIES.items()) for name in sorted(base.registered())]
IDS = [f"{fam}-{name}" for fam, name in CASES]
NARROW = [pa.int8(), pa.uint8(), pa.int16(), pa.uint16(), pa.int32(), pa.uint32(), pa.uint64()]


def make(fam, name, seeds=(1, 2, 3), n=60):
    """One configuration and a batch of n reports per seed."""
    config = FAMILIES[fam].registered()[name].example()
    return config, [config.client(dpnoise.default_rng(s), allow_insecure=True).privatize(config.example_items(n, seed=s))
                    for s in seeds]


def same(a, b):
    assert a == b and a.n == b.n
    for k in a.data:
        np.testing.assert_array_equal(a.data[k], b.data[k])


def narrowed(table, rank=0):
    """The table with every integer column in the narrowest type of NARROW[rank:] that holds it
    (Arrow's safe cast), and every fixed-size binary column as variable-length binary: what
    another writer may produce."""
    cols = []
    for field, col in zip(table.schema, table.columns):
        if pa.types.is_integer(field.type):
            values = col.to_numpy()
            fits = [t for t in NARROW[rank:] if values.size == 0 or (
                np.iinfo(t.to_pandas_dtype()).min <= values.min() and values.max() <= np.iinfo(t.to_pandas_dtype()).max)]
            col = col.cast(fits[0]) if fits else col
        elif pa.types.is_fixed_size_binary(field.type):
            col = col.cast(pa.binary())
        cols.append(col)
    return pa.Table.from_arrays(cols, names=table.column_names).replace_schema_metadata(table.schema.metadata)


@pytest.mark.parametrize("fam,name", CASES, ids=IDS)
def test_parts_of_different_integer_widths_are_read_together(fam, name, tmp_path):
    config, (first, second, third) = make(fam, name)
    want = ldp.Reports.concat([first, second, third])
    parts = [first.to_arrow(), narrowed(second.to_arrow()), narrowed(third.to_arrow(), rank=3)]
    if len({t.schema.remove_metadata() for t in parts}) == 1:  # e.g. Piecewise: z needs 41 signed bits
        pytest.skip("no column of these reports fits a narrower type")
    same(ldp.Reports.from_arrow(parts, config), want)
    same(ldp.arrow.from_arrow(parts[::-1], config), ldp.Reports.concat([third, second, first]))
    # record batches and a table of mixed chunks (one column, two chunk types)
    same(ldp.Reports.from_arrow([b for t in parts for b in t.to_batches()], config), want)
    paths = []
    for i, t in enumerate(parts):
        paths.append(tmp_path / f"part{i}.parquet")
        pq.write_table(t, paths[-1])
    same(ldp.arrow.read_parquet(paths, config), want)


@pytest.mark.parametrize("fam,name", CASES, ids=IDS)
def test_a_value_beyond_the_fields_type_is_malformed_never_wrapped(fam, name, tmp_path):
    config, (first, second) = make(fam, name, seeds=(1, 2))
    fields = [f for f in config.report_fields if f.kind != "row"]
    if not fields:
        pytest.skip("no integer column")
    f = fields[0]
    t2 = second.to_arrow()
    i = t2.column_names.index(f.name)
    t2 = t2.filter(pa.compute.greater_equal(t2.column(i), 0))  # rows a uint64 column can hold (Piecewise: z >= 0)
    total = 60 + t2.num_rows
    # 2^64 − 1 in a uint64 part: as int64 it would wrap to −1, as int8 to −1 as well
    values = t2.column(i).to_numpy().astype(np.uint64)
    values[[0, 7]] = 2 ** 64 - 1
    t2 = t2.set_column(i, f.name, pa.array(values, type=pa.uint64()))
    with pytest.raises(ValueError, match=f"^2 of {total} rows are not valid reports.*column {f.name!r}"):
        ldp.Reports.from_arrow([first.to_arrow(), t2], config)
    kept = ldp.Reports.from_arrow([first.to_arrow(), t2], config, on_malformed="skip")
    assert kept.skipped == 2 and kept.n == total - 2
    config.aggregator().add(kept)
    pq.write_table(first.to_arrow(), tmp_path / "a.parquet")
    pq.write_table(t2, tmp_path / "b.parquet")
    with pytest.raises(ValueError, match=f"^2 of {total} rows.*column {f.name!r}"):
        ldp.arrow.read_parquet([tmp_path / "a.parquet", tmp_path / "b.parquet"], config)
    assert ldp.arrow.read_parquet([tmp_path / "a.parquet", tmp_path / "b.parquet"], config,
                                  on_malformed="skip").skipped == 2


@pytest.mark.parametrize("fam,name", CASES, ids=IDS)
def test_an_all_null_part_is_malformed_rows(fam, name, tmp_path):
    config, (first, second) = make(fam, name, seeds=(1, 2))
    f = config.report_fields[-1]
    t2 = second.to_arrow()
    t2 = t2.set_column(t2.column_names.index(f.name), f.name, pa.nulls(t2.num_rows))  # Arrow's null type
    with pytest.raises(ValueError, match=f"^60 of 120 rows are not valid reports.*column {f.name!r}"):
        ldp.Reports.from_arrow([first.to_arrow(), t2], config)
    kept = ldp.Reports.from_arrow([first.to_arrow(), t2], config, on_malformed="skip")
    assert kept.skipped == 60
    same(kept, first)
    pq.write_table(first.to_arrow(), tmp_path / "a.parquet")
    pq.write_table(t2, tmp_path / "b.parquet")
    with pytest.raises(ValueError, match=f"^60 of 120 rows.*column {f.name!r}"):
        ldp.arrow.read_parquet([tmp_path / "a.parquet", tmp_path / "b.parquet"], config)


@pytest.mark.parametrize("kind", [pa.float64(), pa.bool_(), pa.string()])
@pytest.mark.parametrize("fam,name", CASES, ids=IDS)
def test_a_part_of_another_type_is_refused_naming_the_column_and_both_types(fam, name, kind, tmp_path):
    config, (first, second) = make(fam, name, seeds=(1, 2))
    f = config.report_fields[0]
    t1 = first.to_arrow()
    declared = t1.schema.field(f.name).type
    t2 = second.to_arrow()
    t2 = t2.set_column(t2.column_names.index(f.name), f.name, pa.array([None] * t2.num_rows, type=kind))
    pattern = re.escape(f"column {f.name!r} must be ") + ".*" + re.escape(f"({declared}), got {kind} in table 1 of 2")
    with pytest.raises(ValueError, match=pattern):
        ldp.Reports.from_arrow([t1, t2], config)
    with pytest.raises(ValueError, match=pattern):
        ldp.Reports.from_arrow([t1, t2], config, on_malformed="skip")
    pq.write_table(t1, tmp_path / "a.parquet")
    pq.write_table(t2, tmp_path / "b.parquet")
    with pytest.raises(ValueError, match=pattern):
        ldp.arrow.read_parquet([tmp_path / "a.parquet", tmp_path / "b.parquet"], config)


INTEGER_TYPES = [pa.int8(), pa.uint8(), pa.int16(), pa.uint16(), pa.int32(), pa.uint32(), pa.int64(), pa.uint64()]


@settings(max_examples=40, deadline=None)
@given(case=st.sampled_from(CASES), choices=st.lists(st.lists(st.integers(0, 7), min_size=3, max_size=3),
                                                       min_size=1, max_size=4),
       chunk=st.integers(1, 40))
def test_property_parts_in_any_integer_types_read_as_one(case, choices, chunk):
    # property: each part's integer columns in any type that holds their values (the first of
    # INTEGER_TYPES from a drawn start that does), split into chunks of any size, read together
    # give the concatenated batches
    fam, name = case
    config, batches = make(fam, name, seeds=tuple(range(1, len(choices) + 1)), n=30)
    parts = []
    for reports, picks in zip(batches, choices):
        table = reports.to_arrow()
        cols = []
        for j, (field, col) in enumerate(zip(table.schema, table.columns)):
            if pa.types.is_integer(field.type):
                v = col.to_numpy()
                for t in INTEGER_TYPES[picks[j % 3]:] + [pa.int64()]:
                    info = np.iinfo(t.to_pandas_dtype())
                    if v.size == 0 or (info.min <= v.min() and v.max() <= info.max):
                        col = col.cast(t)
                        break
            cols.append(col)
        table = pa.Table.from_arrays(cols, names=table.column_names).replace_schema_metadata(table.schema.metadata)
        parts.extend(table.to_batches(max_chunksize=chunk))
    same(ldp.Reports.from_arrow(parts, config), ldp.Reports.concat(batches))
