"""How each protocol's report arrays become DataFrame rows, and back.

One row per user. The report column is a struct whose fields are the report arrays' names.
Each array has an explicit kind (never guessed from shapes: with n <= 8 a packed array and a
per-user array can have the same shape):

* ``scalar``  one value per user, ``(n,)``: LongType (int64) or ByteType (int8);
* ``fixed``   one fixed-length row per user, ``(n, k)`` of a fixed-width dtype: BinaryType
              holding the row's little-endian bytes (k * itemsize bytes; e.g. OUE's uint64
              words, OLH's two uint64 seeds, CMS's packed sketch row);
* ``packed``  bits packed ACROSS users, ``ceil(n/8)`` uint8 with user i at bit i % 8 of byte
              i // 8 (least significant bit first, as the C++ kernels write them:
              cpp/include/dpnoise/ldp/hadamard_response.hpp): ByteType, 0 or 1 per row.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

SCALAR, FIXED, PACKED = "scalar", "fixed", "packed"


@dataclass(frozen=True)
class Field:
    name: str
    kind: str  # SCALAR, FIXED or PACKED
    dtype: np.dtype  # the NumPy dtype of the report array
    # for FIXED: the row length in elements of dtype, from the protocol's parameters
    row_length: Optional[Callable[[Any], int]] = None

    def spark_type_name(self) -> str:
        if self.kind == FIXED:
            return "binary"
        if self.kind == PACKED or self.dtype == np.int8:
            return "tinyint"
        return "bigint"

    def row_bytes(self, protocol: Any) -> int:
        assert self.row_length is not None
        return int(self.row_length(protocol)) * self.dtype.itemsize


_I64, _I8, _U64, _U8 = np.dtype(np.int64), np.dtype(np.int8), np.dtype(np.uint64), np.dtype(np.uint8)

#: protocol name -> its report arrays, in struct-field order
LAYOUTS: Dict[str, Tuple[Field, ...]] = {
    "grr": (Field("values", SCALAR, _I64),),
    "oue": (Field("bits", FIXED, _U64, lambda p: p.words),),
    "sue": (Field("bits", FIXED, _U64, lambda p: p.words),),
    "olh": (Field("seeds", FIXED, _U64, lambda p: 2), Field("values", SCALAR, _I64)),
    "flh": (Field("indices", SCALAR, _I64), Field("values", SCALAR, _I64)),
    "hadamard": (Field("rows", SCALAR, _I64), Field("bits", PACKED, _U8)),
    "cms": (Field("hash_index", SCALAR, _I64), Field("vectors", FIXED, _U8, lambda p: p.options["width"] // 8)),
    "hcms": (Field("hash_index", SCALAR, _I64), Field("coefficient", SCALAR, _I64), Field("bits", PACKED, _U8)),
    "zmatrix": (Field("columns", SCALAR, _I64), Field("y", SCALAR, _I8)),
}

#: every heavy-hitters method (PEM, TreeHist, Bitstogram): the user's group, its secret pool
#: index and its bucket after randomized response (dpnoise.ldp.HHReports)
HEAVY_HITTERS_LAYOUT: Tuple[Field, ...] = (Field("groups", SCALAR, _I64), Field("indices", SCALAR, _I64),
                                           Field("values", SCALAR, _I64))


def is_heavy_hitters(oracle: Any) -> bool:
    from ...ldp.heavy_hitters import HHProtocol

    return isinstance(oracle, HHProtocol)


def protocol_of(oracle: Any) -> Any:
    """The configuration behind ``oracle``: a FrequencyOracle or heavy-hitters configuration
    itself, or the ``protocol`` of an object holding one (a client); TypeError otherwise."""
    from ...ldp import Protocol

    if isinstance(oracle, Protocol) or is_heavy_hitters(oracle):
        return oracle
    inner = getattr(oracle, "protocol", None)  # e.g. a Client or HHClient: its configuration
    if isinstance(inner, Protocol) or (inner is not None and is_heavy_hitters(inner)):
        return inner
    raise TypeError(f"oracle must be a dpnoise.ldp.FrequencyOracle (or HeavyHitters), got {type(oracle).__name__}")


def layout(oracle: Any) -> Tuple[Field, ...]:
    """The row layout of ``oracle``'s reports; ValueError for a protocol without one."""
    if is_heavy_hitters(oracle):
        return HEAVY_HITTERS_LAYOUT
    name = getattr(oracle, "spark_layout_name", None) or protocol_of(oracle).name
    try:
        return LAYOUTS[name]
    except KeyError:
        raise ValueError(f"no Spark row layout for protocol {name!r} (known: {sorted(LAYOUTS)})") from None


def spark_schema_ddl(oracle: Any, column: str) -> str:
    fields = ", ".join(f"`{f.name}`: {f.spark_type_name()}" for f in layout(oracle))
    return f"`{column}` struct<{fields}>"


# -- NumPy report arrays <-> per-row NumPy columns ----------------------------------------------
def to_rows(oracle: Any, data: Dict[str, np.ndarray], n: int) -> Dict[str, Any]:
    """Per-row columns from report arrays: scalars as they are, fixed rows as a 2-D uint8 array
    (n, row_bytes), packed bits unpacked to int8 0/1."""
    proto = protocol_of(oracle)
    out: Dict[str, Any] = {}
    for f in layout(oracle):
        arr = np.asarray(data[f.name])
        if f.kind == SCALAR:
            out[f.name] = arr.astype(f.dtype, copy=False).reshape(n)
        elif f.kind == FIXED:
            k = f.row_bytes(proto)
            out[f.name] = np.ascontiguousarray(arr.astype(f.dtype.newbyteorder("<"), copy=False)).view(
                np.uint8).reshape(n, k)
        else:
            out[f.name] = np.unpackbits(arr.astype(np.uint8, copy=False), count=n, bitorder="little").astype(np.int8)
    return out


def from_rows(oracle: Any, rows: Dict[str, np.ndarray], n: int) -> Dict[str, np.ndarray]:
    """Report arrays from per-row columns (the inverse of :func:`to_rows`). Fixed rows come as
    (n, row_bytes) uint8; packed bits as 0/1 per row."""
    proto = protocol_of(oracle)
    out: Dict[str, np.ndarray] = {}
    for f in layout(oracle):
        col = rows[f.name]
        if f.kind == SCALAR:
            out[f.name] = np.ascontiguousarray(col, dtype=f.dtype).reshape(n)
        elif f.kind == FIXED:
            k = f.row_length(proto)  # type: ignore[misc]
            # a fresh, aligned array (Arrow's data buffer need not be 8-byte aligned at a row)
            arr = np.empty((n, k), dtype=f.dtype.newbyteorder("<"))
            arr.view(np.uint8).reshape(n, f.row_bytes(proto))[...] = np.asarray(col, dtype=np.uint8).reshape(
                n, f.row_bytes(proto))
            # the native dtype object itself (the C++ checks want exactly it, not '<u8' beside '=u8')
            out[f.name] = arr.view(f.dtype) if sys.byteorder == "little" else arr.astype(f.dtype)
        else:
            out[f.name] = np.packbits(np.asarray(col, dtype=np.uint8), bitorder="little")
            if out[f.name].shape != ((n + 7) // 8,):  # n == 0
                out[f.name] = np.zeros((n + 7) // 8, dtype=np.uint8)
    return out


def take(rows: Dict[str, np.ndarray], index: Any) -> Dict[str, np.ndarray]:
    """The rows at ``index`` (a slice, mask or index array) of every per-row column."""
    return {k: v[index] for k, v in rows.items()}


def subset_names() -> List[str]:
    return sorted(LAYOUTS)
