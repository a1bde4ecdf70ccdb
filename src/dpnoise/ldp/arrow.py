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

Readers take each part (table, record batch, chunk, Parquet file) with its own column types:
tables or files written by other tools with other integer widths (int8 to int64, unsigned
included) or binary layouts (binary, large binary, fixed-size binary) are read together (until
0.7.1 they raised pyarrow's "Array chunks must all be same type"). A value that does not fit the
field's type is a malformed row, never wrapped; an all-null column (Arrow's null type) is
malformed rows; a column of another type (float, bool, string) is a ValueError naming the
column, the declared type and the one found.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ._registry import from_json, is_configuration
from ._schema import PACKED, ROW, ReportField, report_rows, reports_from_rows

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
    fields = [pa.field(f.name, field_type(f, config), nullable=True) for f in config.report_fields]
    return pa.schema(fields, metadata={CONFIG_KEY: config.to_json().encode(), FORMAT_KEY: FORMAT})


def field_type(f: Any, config: Any, *, fixed_size_rows: bool = True) -> Any:
    """The Arrow type of one declared report field (the one mapping, also Spark's): int64 for
    per-user values, int8 for packed bits and int8 values, binary for rows, of fixed size
    (``f.row_bytes(config)``) or, with ``fixed_size_rows=False``, variable-length binary (what
    Spark's BinaryType converts to and from).

    Parameters
    ----------
    f : ReportField
        A field of ``config.report_fields``.
    config : Configuration
        Gives a row's length.
    fixed_size_rows : bool, default True
        Rows as ``fixed_size_binary`` (Parquet and Arrow files) or plain ``binary`` (Spark).

    Returns
    -------
    pyarrow.DataType

    Raises
    ------
    TypeError
        For ``f`` that is not a :class:`dpnoise.ldp.ReportField`.
    """
    if not isinstance(f, ReportField):
        raise TypeError(f"f must be a dpnoise.ldp.ReportField (one of config.report_fields), got {type(f).__name__}")
    pa = _pa()
    if f.kind == ROW:
        return pa.binary(f.row_bytes(config)) if fixed_size_rows else pa.binary()
    if f.kind == PACKED or f.dtype == np.int8:
        return pa.int8()
    return pa.int64()


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


def _tables(data: Any) -> list[Any]:
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

    Each part (table, batch, chunk) is read with its own column types, so parts written with
    different integer widths (int8/16/32/64, signed or unsigned: e.g. Parquet files from
    different tools) are read together; a value that does not fit the field's declared type is a
    malformed row, never wrapped.

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
        For data of another configuration (naming both), a missing column, a column of a
        non-integer type (float, bool, string: naming the column, the declared type and the type
        found), or malformed rows under ``on_malformed="raise"`` (naming the columns).
    """
    _pa()
    if not is_configuration(oracle):
        raise TypeError(f"oracle must be a dpnoise.ldp configuration, got {type(oracle).__name__}")
    if on_malformed not in ON_MALFORMED:
        raise ValueError(f"on_malformed must be one of {list(ON_MALFORMED)}, got {on_malformed!r}")
    tables = _tables(data)
    for t in tables:
        check_configuration(t.schema.metadata, oracle)
    names = [x.name for x in oracle.report_fields]
    for t in tables:
        for name in names:
            if name not in t.schema.names:
                raise ValueError(f"the table has no column {name!r} (this configuration's fields: {names})")
    want = schema(oracle)
    # pass 1, per field and part: the type (checked, never merged across parts) and which rows are readable
    parts: dict[str, list[Any]] = {}
    good = np.ones(sum(t.num_rows for t in tables), dtype=bool)
    malformed: list[str] = []
    for f, af in zip(oracle.report_fields, want):
        parts[f.name] = _parts(tables, f.name)
        ok = np.concatenate([_readable(f, af.type, oracle, p, i, len(tables)) for i, p in parts[f.name]] or
                            [np.ones(0, bool)])
        if not ok.all():
            malformed.append(f.name)
        good &= ok
    # pass 2: the readable rows of each part, in the field's dtype (every value fits: checked above)
    n_read = int(good.sum())
    rows: dict[str, np.ndarray] = {}
    for f in oracle.report_fields:
        pieces, begin = [], 0
        for _, p in parts[f.name]:
            keep = good[begin:begin + len(p)]
            begin += len(p)
            pieces.append(_values(f, oracle, p if keep.all() else p.filter(_pa().array(keep))))
        rows[f.name] = np.concatenate(pieces) if pieces else _values(f, oracle, None)
    arrays = reports_from_rows(oracle, rows, n_read)
    ok = oracle.valid_rows(arrays, n_read)
    n_ok = int(np.count_nonzero(ok))
    if n_ok != n_read:
        arrays = {f.name: (arrays[f.name][ok] if f.kind != PACKED else np.packbits(
            rows[f.name].astype(np.uint8)[ok], bitorder="little")) for f in oracle.report_fields}
    n_all = good.size
    bad = n_all - n_ok
    if bad and on_malformed == "raise":
        where = [f"column {name!r}: nulls, wrong lengths or values the field cannot hold" for name in malformed]
        if n_ok != n_read:
            where.append("values out of this configuration's range")
        raise ValueError(f"{bad} of {n_all} rows are not valid reports of {oracle.name!r} ({'; '.join(where)}); "
                         f"pass on_malformed='skip' to drop and count them")
    reports = oracle.reports(arrays, n_ok)
    object.__setattr__(reports, "skipped", bad)
    return reports


def _parts(tables: list[Any], name: str) -> list[Any]:
    """(table index, array) for every chunk of column ``name`` over the tables, in order."""
    pa = _pa()
    out: list[tuple[int, Any]] = []
    for i, t in enumerate(tables):
        col = t.column(name)
        out.extend((i, c) for c in (col.chunks if isinstance(col, pa.ChunkedArray) else [col]))
    return out


def _row_dtype(f: Any) -> np.dtype:
    """The NumPy dtype of one row's value of a non-row field: int8 for packed bits, else its dtype."""
    return np.dtype(np.int8) if f.kind == PACKED else f.dtype


def _readable(f: Any, declared: Any, oracle: Any, arr: Any, table: int, tables: int) -> np.ndarray:
    """Which rows of one part's column can be read: not null, a binary row of the right length, an
    integer that fits the field's dtype (0/1 for packed bits). ValueError naming the column, the
    declared type and the part's for a type that cannot hold the field (float, bool, string...);
    a column of Arrow's null type (every row null) is read as nulls."""
    pa = _pa()
    import pyarrow.compute as pc

    typ = arr.type
    if pa.types.is_null(typ):
        return np.zeros(len(arr), dtype=bool)
    where = f" in table {table} of {tables}" if tables > 1 else ""
    ok = arr.is_valid().to_numpy(zero_copy_only=False) if arr.null_count else np.ones(len(arr), dtype=bool)
    if f.kind == ROW:
        k = f.row_bytes(oracle)
        if pa.types.is_fixed_size_binary(typ):
            if typ.byte_width != k:
                raise ValueError(f"column {f.name!r} must hold rows of {k} bytes ({declared}), got {typ}{where}")
            return ok
        if not (pa.types.is_binary(typ) or pa.types.is_large_binary(typ)):
            raise ValueError(f"column {f.name!r} must be binary ({declared}), got {typ}{where}")
        return ok & (pc.binary_length(arr).fill_null(-1).to_numpy(zero_copy_only=False) == k)
    if not pa.types.is_integer(typ):
        raise ValueError(f"column {f.name!r} must be integers ({declared}), got {typ}{where}; cast it to "
                         f"{declared} (e.g. pandas' nullable Int64 keeps integers with nulls)")
    v = (arr.fill_null(0) if arr.null_count else arr).to_numpy(zero_copy_only=False)
    if f.kind == PACKED:
        return ok & ((v == 0) | (v == 1))
    info = np.iinfo(_row_dtype(f))
    if np.iinfo(v.dtype).min >= info.min and np.iinfo(v.dtype).max <= info.max:
        return ok
    # compared in the part's own dtype (both limits fit it, or the comparison is one-sided)
    low = v >= info.min if np.iinfo(v.dtype).min < info.min else True
    high = v <= info.max if np.iinfo(v.dtype).max > info.max else True
    return ok & low & high


def _values(f: Any, oracle: Any, arr: Any) -> np.ndarray:
    """One part's readable rows as the field's row array (binary rows (len, k) uint8; integers in
    the field's dtype, exactly: every value was checked to fit). None: the empty array."""
    if f.kind == ROW:
        return _binary_rows(arr, f.row_bytes(oracle)) if arr is not None and len(arr) else \
            np.zeros((0, f.row_bytes(oracle)), dtype=np.uint8)
    if arr is None or len(arr) == 0:
        return np.zeros(0, dtype=_row_dtype(f))
    return arr.to_numpy(zero_copy_only=False).astype(_row_dtype(f), copy=False)


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
