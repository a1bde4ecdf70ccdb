"""Compact per-device records: one ``bytes`` per report, for devices that send one report each.

A record is a 16-byte header (``DR``, format 1, a reserved byte, then 12 bytes of the SHA-256 of
the configuration's JSON: its id) followed by the report's own fields in declared order, each
value at its dtype's width, a row's bytes, a packed bit as one byte. No JSON per record; a batch
of records parses vectorised.
"""
from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from ._registry import is_configuration
from ._schema import PACKED, ROW, report_rows, reports_from_rows

RECORD_MAGIC = b"DR"
RECORD_FORMAT = 1


def _record_header(config: Any) -> bytes:
    """The 16-byte header of a per-device record: magic, format, a reserved byte and 12 bytes of
    SHA-256 of the configuration's JSON (its id)."""
    return RECORD_MAGIC + bytes([RECORD_FORMAT, 0]) + hashlib.sha256(config.to_json().encode()).digest()[:12]



def to_records(reports: Any) -> list[bytes]:
    """One ``bytes`` per report, for devices that send one report each: a 16-byte header
    (``DR``, a format version, a reserved byte and 12 bytes of the configuration's id, a
    SHA-256 of its JSON) and the report's own fields in declared order (each value at its
    dtype's width, a row's bytes, a packed bit as one byte). No JSON per record."""
    config = reports.configuration()
    rows = report_rows(config, reports.data, reports.n)
    cols = [np.full((reports.n, 16), np.frombuffer(_record_header(config), np.uint8), dtype=np.uint8)]
    for f in config.report_fields:
        col = rows[f.name]
        if f.kind == ROW:
            cols.append(col)
        else:
            cols.append(np.ascontiguousarray(col.astype(f.dtype.newbyteorder("<") if f.kind != PACKED else np.int8,
                                                        copy=False)).view(np.uint8).reshape(reports.n, -1))
    table = np.ascontiguousarray(np.concatenate(cols, axis=1)) if reports.n else np.zeros((0, 16), np.uint8)
    width = table.shape[1]
    raw = table.tobytes()
    return [raw[i * width:(i + 1) * width] for i in range(reports.n)]


def _record_table(records: list[Any], n: int, width: int) -> np.ndarray:
    """The records as one contiguous (n, width) uint8 array; TypeError unless every record is
    bytes-like, ValueError naming the first record of another length. A list of ``bytes`` (what
    devices send) is copied by NumPy in one pass into a fixed-width ``S<width>`` array after its
    lengths are checked (a shorter record would be padded, a longer one cut); anything else is
    joined into one buffer (``bytes.join`` refuses what is not bytes-like)."""
    fast = n > 0 and set(map(type, records)) == {bytes}
    try:
        lengths = set(map(len, records)) if fast else None
        if lengths != {width}:
            joined = b"".join(records)  # refuses anything that is not bytes-like
            sizes = np.fromiter(map(len, records), dtype=np.int64, count=n)
            bad = np.flatnonzero(sizes != width)
            if bad.size:
                raise ValueError(f"record {int(bad[0])} has {int(sizes[bad[0]])} bytes; records of this "
                                 f"configuration have {width} (truncated, or of another configuration)")
            return np.frombuffer(joined, dtype=np.uint8).reshape(n, width)
    except TypeError:
        raise TypeError("records must all be bytes") from None
    return np.array(records, dtype=f"S{width}").view(np.uint8).reshape(n, width)


def from_records(records: Any, oracle: Any) -> Any:
    """The batch of per-device records written by :meth:`to_records` (vectorised).

    Raises
    ------
    ValueError
        For a record of another configuration or format, a truncated or over-long record,
        or a packed bit other than 0/1 (naming the first bad position, never its content).
    TypeError
        For records that are not bytes, or an ``oracle`` that is not a configuration.
    """
    if not is_configuration(oracle):
        raise TypeError(f"oracle must be a dpnoise.ldp configuration, got {type(oracle).__name__}")
    if isinstance(records, (bytes, bytearray, memoryview)):
        raise TypeError("records must be a sequence of bytes (one per report), not one bytes object")
    records = records if isinstance(records, list) else list(records)
    n = len(records)
    width = 16 + sum(1 if f.kind == PACKED else (f.row_bytes(oracle) if f.kind == ROW else f.dtype.itemsize)
                     for f in oracle.report_fields)
    table = _record_table(records, n, width)
    # the header as two little-endian uint64 per record: one vectorised comparison
    head = np.frombuffer(_record_header(oracle), dtype="<u8")
    words = table.view(np.dtype([("h0", "<u8"), ("h1", "<u8"), ("rest", f"V{width - 16}")])).reshape(n)
    wrong = np.flatnonzero((words["h0"] != head[0]) | (words["h1"] != head[1]))
    if wrong.size:
        raise ValueError(f"record {int(wrong[0])} is of another configuration or record format than "
                         f"{oracle!r}")
    rows: dict[str, np.ndarray] = {}
    pos = 16
    for f in oracle.report_fields:
        if f.kind == ROW:
            k = f.row_bytes(oracle)
            rows[f.name] = table[:, pos:pos + k]
        elif f.kind == PACKED:
            k = 1
            bit = table[:, pos].view(np.int8)
            if n and not ((bit == 0) | (bit == 1)).all():
                raise ValueError(f"record {int(np.flatnonzero((bit != 0) & (bit != 1))[0])}: a packed bit must be 0 or 1")
            rows[f.name] = bit
        else:
            k = f.dtype.itemsize
            rows[f.name] = np.ascontiguousarray(table[:, pos:pos + k]).view(f.dtype.newbyteorder("<")).reshape(n)
        pos += k
    return oracle.reports(reports_from_rows(oracle, rows, n), n)
