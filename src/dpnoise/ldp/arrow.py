"""Arrow and Parquet as the public report format (the ``pyarrow`` extra; no pyspark).

A report batch is a table with one row per report and one flat column per declared field
(``report_fields``): ``per_user`` fields as int64/int8 columns, ``row`` fields as
fixed-size binary (the row's little-endian bytes), ``packed`` bits as int8 0/1. The schema
metadata carries the configuration (``dpnoise.configuration``: its JSON, see
``Configuration.to_json``) and the format (``dpnoise.format``), and survives a
``pyarrow.parquet`` write and read. Every reader refuses a table of another configuration.

    table = reports.to_arrow()                      # or dpnoise.ldp.arrow.to_arrow(reports)
    pyarrow.parquet.write_table(table, "day1.parquet")
    back = dpnoise.ldp.Reports.from_arrow(pyarrow.parquet.read_table("day1.parquet"), oracle)

Malformed rows (nulls, wrong lengths, values out of range) raise, or with ``on_malformed="skip"``
are dropped and counted in ``Reports.skipped``; both in one vectorised pass, O(batch). No
error message carries a report's value.
"""
from __future__ import annotations

from typing import Any, Dict, List

import numpy as np

from ._registry import from_json, is_configuration
from ._schema import PACKED, PER_USER, ROW, report_rows, reports_from_rows

CONFIG_KEY = b"dpnoise.configuration"
FORMAT_KEY = b"dpnoise.format"
FORMAT = b"1"
ON_MALFORMED = ("raise", "skip")


def _pa() -> Any:
    try:
        import pyarrow
    except ImportError:  # pragma: no cover - exercised only without the extra
        raise ImportError("Arrow and Parquet reports need pyarrow: pip install 'dpnoise[spark]' or pyarrow") from None
    return pyarrow


def schema(config: Any) -> Any:
    """The ``pyarrow.Schema`` of ``config``'s report tables (with its metadata).

    Parameters
    ----------
    config : Configuration
        Declares the report fields.

    Returns
    -------
    pyarrow.Schema
        int64/int8 columns and fixed-size binary rows, nullable, with the configuration's JSON.
    """
    pa = _pa()
    fields = []
    for f in config.report_fields:
        if f.kind == ROW:
            t = pa.binary(f.row_bytes(config))
        elif f.kind == PACKED or f.dtype == np.int8:
            t = pa.int8()
        else:
            t = pa.int64()
        fields.append(pa.field(f.name, t, nullable=True))
    return pa.schema(fields, metadata={CONFIG_KEY: config.to_json().encode(), FORMAT_KEY: FORMAT})


def to_arrow(reports: Any) -> Any:
    """A ``pyarrow.Table`` of ``reports``: one row per report, flat columns, the configuration
    in the schema metadata. O(n), zero-copy where the dtypes allow.

    Parameters
    ----------
    reports : Reports
        The batch.

    Returns
    -------
    pyarrow.Table
        ``reports.n`` rows, with :func:`schema`.

    Raises
    ------
    TypeError
        If ``reports`` is not a Reports.
    ImportError
        Without pyarrow.
    """
    pa = _pa()
    if not callable(getattr(reports, "configuration", None)):
        raise TypeError(f"reports must be dpnoise.ldp.Reports, got {type(reports).__name__}")
    config = reports.configuration()
    sch = schema(config)
    rows = report_rows(config, reports.data, reports.n)
    n = reports.n
    arrays = []
    for f, af in zip(config.report_fields, sch):
        col = rows[f.name]
        if f.kind == ROW:
            buf = pa.py_buffer(np.ascontiguousarray(col))
            arrays.append(pa.FixedSizeBinaryArray.from_buffers(af.type, n, [None, buf]))
        else:
            arrays.append(pa.array(np.asarray(col, dtype=np.int8 if af.type == pa.int8() else np.int64), type=af.type))
    return pa.Table.from_arrays(arrays, schema=sch)


def _tables(data: Any) -> List[Any]:
    pa = _pa()
    if isinstance(data, (pa.Table, pa.RecordBatch)):
        return [data]
    if isinstance(data, (list, tuple)) and all(isinstance(t, (pa.Table, pa.RecordBatch)) for t in data):
        return list(data)
    raise TypeError(f"table must be a pyarrow Table, RecordBatch or a list of them, got {type(data).__name__}")


def check_configuration(metadata: Any, oracle: Any, what: str = "the table") -> None:
    """ValueError naming both configurations when ``metadata`` (an Arrow schema's) carries
    another configuration than ``oracle``; tables without dpnoise metadata are taken as they are
    (their columns are still checked).

    Parameters
    ----------
    metadata : dict or None
        An Arrow schema's metadata (bytes keys and values).
    oracle : Configuration
        The configuration the reader expects.
    what : str, default "the table"
        Names the source in messages.

    Raises
    ------
    ValueError
        For another configuration or format, or a configuration this version cannot rebuild.
    """
    meta = metadata or {}
    text = meta.get(CONFIG_KEY)
    if text is None:
        return
    if meta.get(FORMAT_KEY, FORMAT) != FORMAT:
        raise ValueError(f"{what} holds dpnoise reports of format {meta.get(FORMAT_KEY)!r}; this reader reads {FORMAT!r}")
    try:
        theirs = from_json(text)
    except ValueError:
        raise ValueError(f"{what} carries a dpnoise configuration this version cannot rebuild") from None
    if theirs != oracle:
        raise ValueError(f"{what} holds reports of another configuration ({theirs!r}) than {oracle!r}")


def from_arrow(data: Any, oracle: Any, *, on_malformed: str = "raise") -> Any:
    """Reports of ``oracle`` from Arrow data.

    Parameters
    ----------
    data : pyarrow.Table, pyarrow.RecordBatch or list of them
        One row per report, a column per declared field (other columns are ignored).
    oracle : Configuration
        The configuration the reports must be of.
    on_malformed : {"raise", "skip"}
        What to do with rows that cannot be reports (a null, a binary of the wrong length, a
        packed bit other than 0/1, a value out of range): raise ValueError, or drop them and
        count them in the result's ``skipped``.

    Returns
    -------
    Reports

    Raises
    ------
    ValueError
        For data of another configuration (naming both), a missing column or one of the wrong
        type, or malformed rows under ``on_malformed="raise"``.
    """
    pa = _pa()
    import pyarrow.compute as pc

    if not is_configuration(oracle):
        raise TypeError(f"oracle must be a dpnoise.ldp configuration, got {type(oracle).__name__}")
    if on_malformed not in ON_MALFORMED:
        raise ValueError(f"on_malformed must be one of {list(ON_MALFORMED)}, got {on_malformed!r}")
    tables = _tables(data)
    for t in tables:
        check_configuration(t.schema.metadata, oracle)
    want = schema(oracle)
    cols: Dict[str, Any] = {}
    for f, af in zip(oracle.report_fields, want):
        parts = []
        for t in tables:
            if f.name not in t.schema.names:
                raise ValueError(f"the table has no column {f.name!r} (this configuration's fields: "
                                 f"{[x.name for x in oracle.report_fields]})")
            col = t.column(f.name)
            parts.extend(col.chunks if isinstance(col, pa.ChunkedArray) else [col])
        typ = parts[0].type if parts else af.type
        if f.kind == ROW:
            if not (pa.types.is_binary(typ) or pa.types.is_large_binary(typ) or pa.types.is_fixed_size_binary(typ)):
                raise ValueError(f"column {f.name!r} must be binary, got {typ}")
        elif not pa.types.is_integer(typ):
            raise ValueError(f"column {f.name!r} must be integers, got {typ}")
        cols[f.name] = pa.chunked_array(parts, type=typ) if parts else pa.chunked_array([], type=af.type)
    n_all = sum(t.num_rows for t in tables)
    good = np.ones(n_all, dtype=bool)
    for f in oracle.report_fields:
        col = cols[f.name]
        good &= col.is_valid().to_numpy(zero_copy_only=False) if n_all else np.ones(0, bool)
        if f.kind == ROW and not pa.types.is_fixed_size_binary(col.type):
            lengths = pc.binary_length(col).fill_null(-1).to_numpy(zero_copy_only=False)
            good &= lengths == f.row_bytes(oracle)
        elif f.kind == ROW and col.type.byte_width != f.row_bytes(oracle):
            raise ValueError(f"column {f.name!r} must hold rows of {f.row_bytes(oracle)} bytes, got {col.type}")
    rows: Dict[str, np.ndarray] = {}
    mask = pa.array(good)
    n_read = int(good.sum())
    for f in oracle.report_fields:
        col = cols[f.name].combine_chunks() if cols[f.name].num_chunks != 1 else cols[f.name].chunk(0)
        if n_read != n_all:
            col = col.filter(mask)
        if f.kind == ROW:
            rows[f.name] = _binary_rows(col, f.row_bytes(oracle))
        else:
            v = col.to_numpy(zero_copy_only=False)
            rows[f.name] = v
    # integers that do not fit the field's dtype (e.g. 300 in an int8 column) are malformed
    fit = np.ones(n_read, dtype=bool)
    for f in oracle.report_fields:
        if f.kind == ROW:
            continue
        v = rows[f.name]
        if f.kind == PACKED:
            fit &= (v == 0) | (v == 1)
        elif f.kind == PER_USER and v.dtype != f.dtype:
            info = np.iinfo(f.dtype)
            if v.dtype.kind == "u":
                fit &= v <= info.max
            else:
                fit &= (v >= info.min) & (v <= info.max)
    if not fit.all():
        rows = {k: v[fit] for k, v in rows.items()}
    n_fit = int(fit.sum())
    rows = {f.name: (rows[f.name] if f.kind == ROW else rows[f.name].astype(
        np.int8 if f.kind == PACKED else f.dtype, copy=False)) for f in oracle.report_fields}
    arrays = reports_from_rows(oracle, rows, n_fit)
    ok = oracle.valid_rows(arrays, n_fit)
    n_ok = int(np.count_nonzero(ok))
    if n_ok != n_fit:
        arrays = {f.name: (arrays[f.name][ok] if f.kind != PACKED else np.packbits(
            rows[f.name].astype(np.uint8)[ok], bitorder="little")) for f in oracle.report_fields}
    bad = n_all - n_ok
    if bad and on_malformed == "raise":
        raise ValueError(f"{bad} of {n_all} rows are not valid reports of {oracle.name!r} (nulls, wrong lengths or "
                         f"values out of range); pass on_malformed='skip' to drop and count them")
    reports = oracle.reports(arrays, n_ok)
    object.__setattr__(reports, "skipped", bad)
    return reports


def _binary_rows(arr: Any, k: int) -> np.ndarray:
    """(len, k) uint8 from a binary or fixed-size binary array with no nulls whose rows all have
    length k."""
    pa = _pa()
    n = len(arr)
    if n == 0:
        return np.zeros((0, k), dtype=np.uint8)
    bufs = arr.buffers()
    if pa.types.is_fixed_size_binary(arr.type):
        data = np.frombuffer(bufs[1], dtype=np.uint8)[arr.offset * k:(arr.offset + n) * k]
        return data.reshape(n, k)
    off_type = np.int64 if pa.types.is_large_binary(arr.type) else np.int32
    offsets = np.frombuffer(bufs[1], dtype=off_type)[arr.offset:arr.offset + n + 1]
    data = np.frombuffer(bufs[2], dtype=np.uint8)[int(offsets[0]):int(offsets[-1])]
    return data.reshape(n, k)


def write_parquet(reports: Any, path: Any, **options: Any) -> None:
    """Write ``reports`` to a Parquet file (configuration in the file's schema metadata).

    Parameters
    ----------
    reports : Reports
        The batch.
    path : str or os.PathLike
        The file.
    **options
        Passed to ``pyarrow.parquet.write_table`` (e.g. ``row_group_size``).
    """
    _pa()
    import pyarrow.parquet as pq

    pq.write_table(to_arrow(reports), path, **options)


def read_parquet(path: Any, oracle: Any, *, on_malformed: str = "raise") -> Any:
    """Reports of ``oracle`` from one Parquet file or a list of them (see :func:`from_arrow`);
    a file of another configuration is refused before any row is read.

    Parameters
    ----------
    path : str, os.PathLike or list of them
        The file(s).
    oracle : Configuration
        The configuration they must hold.
    on_malformed : {"raise", "skip"}, default "raise"
        As for :func:`from_arrow`.

    Returns
    -------
    Reports
        All the files' reports, in order.
    """
    _pa()
    import pyarrow.parquet as pq

    paths = [path] if not isinstance(path, (list, tuple)) else list(path)
    tables = []
    for p in paths:
        check_configuration(pq.read_schema(p).metadata, oracle, f"file {str(p)!r}")
        tables.append(pq.read_table(p))
    return from_arrow(tables, oracle, on_malformed=on_malformed)
