"""Arrow batches of the report struct column <-> per-row NumPy columns (see _report_rows).

Malformed rows (a null struct or field, a binary row of the wrong length, a value outside the
protocol's range) are found by masks in one pass (:func:`row_validity`) and counted; the valid
rows go to the aggregator in one add. No error message carries a report's value. The
configuration travels in the Arrow schema metadata (:data:`CONFIG_KEY`)."""
from __future__ import annotations

import json
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...ldp import PACKED, arrow as ldp_arrow
from ._report_rows import FIXED, from_rows, layout, take


def struct_type(oracle: Any) -> Any:  # a pyarrow.StructType
    """The report struct's Arrow type: dpnoise.ldp.arrow's mapping, rows as Spark's binary."""
    return pa.struct([pa.field(f.name, ldp_arrow.field_type(f.spec, oracle, fixed_size_rows=False))
                      for f in layout(oracle)])


def rows_to_arrow(oracle: Any, rows: dict[str, np.ndarray], n: int) -> Any:  # a pyarrow.StructArray
    """A struct array from per-row columns (fixed rows as (n, k) uint8)."""
    arrays = []
    fields = list(struct_type(oracle))  # the types: dpnoise.ldp.arrow.field_type, once
    for f, af in zip(layout(oracle), fields):
        col = rows[f.name]
        if f.kind == FIXED:
            k = col.shape[1]
            offsets = pa.array(np.arange(0, (n + 1) * k, k, dtype=np.int32))
            arrays.append(pa.BinaryArray.from_buffers(af.type, n, [None, offsets.buffers()[1],
                                                                     pa.py_buffer(np.ascontiguousarray(col))]))
        else:
            arrays.append(pa.array(np.asarray(col, dtype=af.type.to_pandas_dtype()), type=af.type))
    return pa.StructArray.from_arrays(arrays, fields=fields)


def report_fields(oracle: Any, source: Any, column: str | None = None) -> dict[str, Any]:
    """The report fields of ``source`` by NAME: the children of the struct column ``column``
    (a struct array, or a table / record batch holding it), or, with ``column=None`` and a table
    / record batch, its top-level columns (a flat layout). ValueError naming the first missing
    field. Never by position: a struct built with its fields in another order (F.struct, a
    join, a Parquet or JSON round trip) must not have its fields read as one another."""
    if isinstance(source, (pa.Table, pa.RecordBatch)):
        if column is not None:
            source = source.column(column)
        else:
            by_name = {name: source.column(i) for i, name in enumerate(source.schema.names)}
            out = {}
            for f in layout(oracle):
                if f.name not in by_name:
                    raise ValueError(f"the reports have no column {f.name!r}")
                child = by_name[f.name]
                out[f.name] = child.combine_chunks() if isinstance(child, pa.ChunkedArray) else child
            return out
    if isinstance(source, pa.ChunkedArray):
        source = source.combine_chunks()
    names = [source.type.field(i).name for i in range(source.type.num_fields)]
    # flatten() folds the struct's own nulls into its children: a null struct gives null fields
    by_name = dict(zip(names, source.flatten()))
    missing = [f.name for f in layout(oracle) if f.name not in by_name]
    if missing:
        raise ValueError(f"the report column has no field {missing[0]!r}")
    return {f.name: by_name[f.name] for f in layout(oracle)}


def arrow_to_rows(oracle: Any, source: Any, column: str | None = None
                  ) -> tuple[dict[str, np.ndarray], int, int]:
    """(per-row columns of the valid rows, their number, the number of malformed rows) from
    Arrow reports (``source`` and ``column`` as in :func:`report_fields`). A row is malformed
    when a field is null, a binary row has the wrong length, or a value is outside the
    protocol's range (:func:`row_validity`): all found by masks in one pass, O(batch)."""
    proto = oracle  # a configuration: the entry points normalise it
    fields = layout(oracle)
    children = report_fields(oracle, source, column)
    n_all = len(next(iter(children.values())))
    readable = np.ones(n_all, dtype=bool)
    for f in fields:
        child = children[f.name]
        if child.null_count:
            readable &= child.is_valid().to_numpy(zero_copy_only=False)
        if f.kind == FIXED:
            lengths = pc.binary_length(child).fill_null(-1).to_numpy(zero_copy_only=False)
            readable &= lengths == f.row_bytes(proto)
    n_read = int(readable.sum())
    if n_read != n_all:
        mask = pa.array(readable)
        children = {k: v.filter(mask) for k, v in children.items()}
    rows: dict[str, np.ndarray] = {}
    for f in fields:
        child = children[f.name]
        if f.kind == FIXED:
            rows[f.name] = ldp_arrow._binary_rows(child, f.row_bytes(proto))
        else:
            rows[f.name] = child.to_numpy(zero_copy_only=False).astype(
                np.int8 if (f.kind == PACKED or f.dtype == np.int8) else np.int64, copy=False)
    valid = row_validity(oracle, rows, n_read)
    n_good = int(valid.sum())
    if n_good != n_read:
        rows = take(rows, valid)
    return rows, n_good, n_all - n_good


# -- per-row validity ------------------------------------------------------------------------------
def row_validity(oracle: Any, rows: dict[str, np.ndarray], n: int) -> np.ndarray:
    """A boolean mask of the rows ``oracle``'s aggregator accepts, in O(n): a packed bit must be
    0 or 1 (packing would hide a 2), and the rest is the configuration's own mask over its report
    arrays (``Configuration.valid_rows``: every declared field's range and its per-row rules).
    The contract test tests/distributed/test_spark_malformed.py breaks every field of every
    layout and requires the row counted, never a failed add."""
    proto = oracle
    if n == 0:
        return np.ones(0, dtype=bool)
    ok = np.ones(n, dtype=bool)
    for f in layout(oracle):
        if f.kind == PACKED:
            ok &= (rows[f.name] == 0) | (rows[f.name] == 1)
    return ok & np.asarray(proto.valid_rows(from_rows(oracle, rows, n), n), dtype=bool).reshape(n)


def make_reports(oracle: Any, rows: dict[str, np.ndarray], n: int) -> Any:
    return oracle.reports(from_rows(oracle, rows, n), n)


class ConfigurationError(ValueError):
    """The aggregator refused rows that pass every per-row check, or two partition states did
    not merge: a problem of the configuration (e.g. too few bit planes for the column sums),
    raised as such and never counted as malformed rows."""


def add_rows(agg: Any, oracle: Any, rows: dict[str, np.ndarray], n: int) -> int:
    """Add ``n`` rows that passed :func:`row_validity` (as :func:`arrow_to_rows` returns them)
    to ``agg`` in one add. If the aggregator still refuses them, that is no bad row but a
    configuration error: :class:`ConfigurationError` (a ValueError) saying so. Returns 0, the
    number of rows refused here (malformed rows were counted by :func:`arrow_to_rows`)."""
    if n == 0:
        return 0
    try:
        agg.add(make_reports(oracle, rows, n))
    except (ValueError, TypeError, OverflowError) as exc:
        raise ConfigurationError(f"the aggregator refused {n} rows that pass every per-row check ({exc}): a "
                                 "configuration error, not malformed rows") from None
    return 0


# -- the configuration in Arrow schema metadata and Spark field metadata ---------------------------
#: the key of the configuration JSON in an Arrow schema's metadata (dpnoise.ldp.arrow) and in a
#: Spark field's metadata
CONFIG_KEY = "dpnoise.configuration"


def config_json(oracle: Any) -> str:
    return str(oracle.to_json())


def config_metadata(oracle: Any) -> dict[bytes, bytes]:
    """Arrow schema metadata carrying ``oracle``'s configuration (as dpnoise.ldp.arrow writes it)."""
    return dict(ldp_arrow.schema(oracle).metadata)


def check_config(found: Any, oracle: Any, what: str) -> None:
    """ValueError naming both configurations unless ``found`` (a configuration JSON from
    metadata, str or bytes) is ``oracle``'s; ``found=None`` (no metadata) checks nothing."""
    from ...ldp import Configuration

    if found is None:
        return
    try:
        theirs = Configuration.from_json(found.decode() if isinstance(found, (bytes, bytearray)) else found)
    except (ValueError, UnicodeDecodeError):
        raise ValueError(f"{what} carries a dpnoise configuration this version cannot rebuild") from None
    mine = oracle
    if theirs != mine:
        raise ValueError(f"{what} holds reports of another configuration ({theirs!r}) than the oracle ({mine!r}); "
                         "aggregate them with their own configuration")


def schema_config(schema: Any) -> bytes | None:
    """The configuration JSON of an Arrow schema: in its own metadata (:data:`CONFIG_KEY`),
    else in the field metadata Spark writes into a Parquet file
    (``org.apache.spark.sql.parquet.row.metadata``); None when there is none."""
    meta = schema.metadata or {}
    if CONFIG_KEY.encode() in meta:
        return meta[CONFIG_KEY.encode()]
    spark_row = meta.get(b"org.apache.spark.sql.parquet.row.metadata")
    if spark_row:
        try:
            for f in json.loads(spark_row).get("fields", []):
                found = (f.get("metadata") or {}).get(CONFIG_KEY)
                if found is not None:
                    return found.encode()
        except (ValueError, AttributeError):
            return None
    return None
