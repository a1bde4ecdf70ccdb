"""Arrow batches of the report struct column <-> per-row NumPy columns (see _report_rows).

Rows that cannot be read (a null struct or field, a binary row of the wrong length, a packed
bit other than 0 or 1) are counted as malformed here; rows the protocol refuses (a value out of
its range) are found by :func:`add_rows` by bisection with the aggregator's own checks. No
error message carries a report's value."""
from __future__ import annotations

from typing import Any, Dict, Tuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ._report_rows import FIXED, PACKED, SCALAR, from_rows, is_heavy_hitters, layout, protocol_of


def struct_type(oracle: Any) -> pa.StructType:
    fields = []
    for f in layout(oracle):
        if f.kind == FIXED:
            t = pa.binary()
        elif f.kind == PACKED or f.dtype == np.int8:
            t = pa.int8()
        else:
            t = pa.int64()
        fields.append(pa.field(f.name, t))
    return pa.struct(fields)


def rows_to_arrow(oracle: Any, rows: Dict[str, np.ndarray], n: int) -> pa.StructArray:
    """A struct array from per-row columns (fixed rows as (n, k) uint8)."""
    arrays = []
    for f in layout(oracle):
        col = rows[f.name]
        if f.kind == FIXED:
            k = col.shape[1]
            offsets = pa.array(np.arange(0, (n + 1) * k, k, dtype=np.int32))
            arrays.append(pa.BinaryArray.from_buffers(pa.binary(), n, [None, offsets.buffers()[1],
                                                                         pa.py_buffer(np.ascontiguousarray(col))]))
        elif f.kind == PACKED or f.dtype == np.int8:
            arrays.append(pa.array(np.asarray(col, dtype=np.int8), type=pa.int8()))
        else:
            arrays.append(pa.array(np.asarray(col, dtype=np.int64), type=pa.int64()))
    return pa.StructArray.from_arrays(arrays, fields=list(struct_type(oracle)))


def _binary_rows(arr: Any, k: int) -> np.ndarray:
    """(len, k) uint8 from a binary array with no nulls whose rows all have length k."""
    n = len(arr)
    if n == 0:
        return np.zeros((0, k), dtype=np.uint8)
    bufs = arr.buffers()
    off_type = np.int64 if pa.types.is_large_binary(arr.type) else np.int32
    offsets = np.frombuffer(bufs[1], dtype=off_type)[arr.offset:arr.offset + n + 1]
    data = np.frombuffer(bufs[2], dtype=np.uint8)[int(offsets[0]):int(offsets[-1])]
    return data.reshape(n, k)


def arrow_to_rows(oracle: Any, column: Any) -> Tuple[Dict[str, np.ndarray], int, int]:
    """(per-row columns of the readable rows, their number, the number of unreadable rows)
    from a struct array (or chunked array) of the report column."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    proto = protocol_of(oracle)
    fields = layout(oracle)
    n_all = len(column)
    good = column.is_valid().to_numpy(zero_copy_only=False).copy()
    # by NAME, never by position: a struct built with its fields in another order (F.struct,
    # a join, a Parquet or JSON round trip) must not have its fields read as one another
    names = [column.type.field(i).name for i in range(column.type.num_fields)]
    by_name = dict(zip(names, column.flatten()))
    missing = [f.name for f in fields if f.name not in by_name]
    if missing:
        raise ValueError(f"the report column has no field {missing[0]!r}")
    children = {f.name: by_name[f.name] for f in fields}
    for f in fields:
        child = children[f.name]
        good &= child.is_valid().to_numpy(zero_copy_only=False)
        if f.kind == FIXED:
            lengths = pc.binary_length(child).fill_null(-1).to_numpy(zero_copy_only=False)
            good &= lengths == f.row_bytes(proto)
        elif f.kind == PACKED:
            v = child.fill_null(0).to_numpy(zero_copy_only=False)
            good &= (v == 0) | (v == 1)
    n_good = int(good.sum())
    if n_good != n_all:
        mask = pa.array(good)
        children = {k: v.filter(mask) for k, v in children.items()}
    rows: Dict[str, np.ndarray] = {}
    for f in fields:
        child = children[f.name]
        if f.kind == FIXED:
            rows[f.name] = _binary_rows(child, f.row_bytes(proto))
        else:
            rows[f.name] = child.to_numpy(zero_copy_only=False).astype(
                np.int8 if (f.kind == PACKED or f.dtype == np.int8) else np.int64, copy=False)
    return rows, n_good, n_all - n_good


def make_reports(oracle: Any, rows: Dict[str, np.ndarray], n: int) -> Any:
    from ...ldp import HHReports, Reports

    proto = protocol_of(oracle)
    kind = HHReports if is_heavy_hitters(proto) else Reports
    return kind(proto.name, proto.fingerprint(), n, from_rows(oracle, rows, n))


def add_rows(agg: Any, oracle: Any, rows: Dict[str, np.ndarray], n: int) -> int:
    """Add the rows to ``agg``; rows the aggregator refuses are found by bisection (a refused
    batch leaves an aggregator unchanged) and counted, not added. Returns how many were refused.
    Cost: one add when every row is good, O(bad · log n) adds otherwise."""
    if n == 0:
        return 0
    from ..._errors import CapacityError

    try:
        agg.add(make_reports(oracle, rows, n))
        return 0
    except CapacityError:  # the configuration cannot hold the data: an error, never malformed rows
        raise
    except (ValueError, TypeError, OverflowError):
        if n == 1:
            return 1
    half = n // 2
    left = {k: v[:half] for k, v in rows.items()}
    right = {k: v[half:] for k, v in rows.items()}
    return add_rows(agg, oracle, left, half) + add_rows(agg, oracle, right, n - half)
