"""Report schemas: each LDP configuration declares its report fields once, on its class, and
everything that handles report arrays derives from that declaration: the array checks in
``Aggregator.add``, the per-row layout used by Arrow, Parquet and Spark, and the wire format.

A field has a name, a kind and a NumPy dtype:

* ``PER_USER`` one value per user, shape ``(n,)`` (e.g. GRR's ``values`` int64);
* ``ROW``      one fixed-width row per user, shape ``(n, width)``; ``width`` is an int or a
               function of the configuration (e.g. OUE's packed words, OLH's two seed words);
* ``PACKED``   one bit per user packed ACROSS users, ``ceil(n/8)`` uint8 with user i at bit i % 8
               of byte i // 8, least significant bit first (as the C++ kernels write them).

Value ranges (a bucket below g, a row below D) are not part of the schema: the configuration's
aggregator checks them, mostly in the C++ ``*_check_reports`` kernels.
"""
from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
from numpy.typing import DTypeLike

PER_USER, ROW, PACKED = "per_user", "row", "packed"
KINDS = (PER_USER, ROW, PACKED)


@dataclass(frozen=True)
class ReportField:
    """One array of a configuration's report batches.

    Parameters
    ----------
    name : str
        The array's name in ``Reports.data`` (and the column name in Arrow/Parquet/Spark).
    kind : {"per_user", "row", "packed"}
        How the array holds one value per user (see the module docstring).
    dtype : numpy dtype
        The array's dtype (uint8 for ``packed``).
    width : int or callable, optional
        For ``row`` fields: the row length in elements, or a function of the configuration.
    bound : int or callable, optional
        For ``per_user`` fields: every value must be in [0, bound) (an int, or a function of the
        configuration).
    allowed : tuple of int, optional
        For ``per_user`` fields: the only values allowed (e.g. (-1, 1)).
    """

    name: str
    kind: str
    dtype: np.dtype[Any]
    width: int | Callable[[Any], int] | None = None
    bound: int | Callable[[Any], int] | None = None
    allowed: tuple[int, ...] | None = None

    if TYPE_CHECKING:
        # the generated __init__ as callers see it: ``dtype`` takes anything np.dtype does
        # (np.int64, "u1"); __post_init__ stores np.dtype(dtype)
        def __init__(self, name: str, kind: str, dtype: DTypeLike, width: int | Callable[[Any], int] | None = None,
                     bound: int | Callable[[Any], int] | None = None,
                     allowed: tuple[int, ...] | None = None) -> None: ...

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")
        object.__setattr__(self, "dtype", np.dtype(self.dtype))
        if (self.kind == ROW) != (self.width is not None):
            raise ValueError("width is required for 'row' fields and only for them")

    def upper(self, config: Any) -> int:
        """The exclusive upper bound of a ``per_user`` field's values.

        Parameters
        ----------
        config : Configuration
            The configuration whose ``bound`` (a number or a function of it) applies.

        Returns
        -------
        int
            Values must lie in [0, upper).

        Raises
        ------
        ValueError
            For a field that declares no bound.
        """
        b = self.bound
        if b is None:
            raise ValueError(f"report field {self.name!r} declares no bound")
        return int(b(config) if callable(b) else b)

    def row_length(self, config: Any) -> int:
        """Elements per row (``row`` fields).

        Parameters
        ----------
        config : Configuration
            Evaluates ``width`` when it is a function.

        Returns
        -------
        int
            The row's element count.

        Raises
        ------
        ValueError
            For a field that is not a row field (no width).
        """
        w = self.width
        if w is None:
            raise ValueError(f"report field {self.name!r} is not a row field (it has no width)")
        return int(w(config) if callable(w) else w)

    def row_bytes(self, config: Any) -> int:
        """Bytes per row (``row`` fields): ``row_length(config)`` times the itemsize.

        Parameters
        ----------
        config : Configuration
            Evaluates the width.

        Returns
        -------
        int
            Bytes.
        """
        return self.row_length(config) * self.dtype.itemsize

    def shape(self, config: Any, n: int) -> tuple[int, ...]:
        """The shape of this array in a batch of ``n`` reports.

        Parameters
        ----------
        config : Configuration
            Gives the row width of ``row`` fields.
        n : int
            Reports in the batch.

        Returns
        -------
        tuple of int
            (n,), (n, width), or (ceil(n/8),) for packed bits.
        """
        if self.kind == PER_USER:
            return (n,)
        if self.kind == ROW:
            return (n, self.row_length(config))
        return ((n + 7) // 8,)

    def describe(self, config: Any) -> str:
        """The field's dtype and shape in words, for error messages.

        Parameters
        ----------
        config : Configuration
            Gives the row width.

        Returns
        -------
        str
            E.g. "int64, one per user".
        """
        if self.kind == PER_USER:
            return f"{self.dtype.name}, one per user"
        if self.kind == ROW:
            return f"{self.dtype.name} of shape (n, {self.row_length(config)})"
        return "uint8, ceil(n/8) packed bytes"


def check_arrays(fields: Sequence[ReportField], config: Any, data: dict[str, Any], n: int, what: str) -> None:
    """ValueError unless ``data`` holds exactly the declared arrays with their dtypes and shapes
    for ``n`` reports (names and kinds only: never a value)."""
    names = [f.name for f in fields]
    if set(data) != set(names):
        raise ValueError(f"{what} reports must hold exactly the arrays {sorted(names)}, got {sorted(data)}")
    for f in fields:
        a = data[f.name]
        if not isinstance(a, np.ndarray) or a.dtype != f.dtype or a.shape != f.shape(config, n):
            raise ValueError(f"{what} reports: {f.name!r} must be {f.describe(config)}")


def value_masks(fields: Sequence[ReportField], config: Any, data: dict[str, np.ndarray], n: int) -> dict[str, np.ndarray]:
    """For each declared field with a value rule (``bound`` or ``allowed``), a boolean array of
    the users whose value keeps the rule: one vectorised pass per field, O(batch)."""
    out: dict[str, np.ndarray] = {}
    for f in fields:
        if f.kind != PER_USER or (f.bound is None and f.allowed is None):
            continue
        v = np.asarray(data[f.name]).reshape(n)
        if f.allowed is not None:
            out[f.name] = np.isin(v, np.asarray(f.allowed, dtype=v.dtype))
        else:
            ok = v < f.upper(config)
            if v.dtype.kind == "i":
                ok &= v >= 0
            out[f.name] = ok
    return out


def check_values(fields: Sequence[ReportField], config: Any, data: dict[str, np.ndarray], n: int, what: str) -> None:
    """ValueError naming the first field (and its rule, never a value) with a value out of range."""
    for f in fields:
        if f.kind != PER_USER or (f.bound is None and f.allowed is None):
            continue
        v = np.asarray(data[f.name])
        if not v.size:
            continue
        if f.allowed is not None:
            if not np.isin(v, np.asarray(f.allowed, dtype=v.dtype)).all():
                raise ValueError(f"{what} report {f.name} must be one of {list(f.allowed)}")
        elif (v.dtype.kind == "i" and int(v.min()) < 0) or int(v.max()) >= f.upper(config):
            raise ValueError(f"{what} report {f.name} must be in [0, {f.upper(config)})")


def concat_arrays(fields: Sequence[ReportField], config: Any, batches: Sequence[dict[str, np.ndarray]],
                  counts: Sequence[int]) -> dict[str, np.ndarray]:
    """The arrays of several batches as one (packed bits are repacked across the batches)."""
    out: dict[str, np.ndarray] = {}
    for f in fields:
        parts = [b[f.name] for b in batches]
        if f.kind == PACKED:
            bits = [np.unpackbits(p, count=c, bitorder="little") for p, c in zip(parts, counts)]
            joined = np.concatenate(bits) if bits else np.zeros(0, np.uint8)
            out[f.name] = np.packbits(joined, bitorder="little") if joined.size else np.zeros(0, np.uint8)
        else:
            out[f.name] = (np.concatenate(parts) if parts else np.zeros(f.shape(config, 0), f.dtype)).astype(
                f.dtype, copy=False)
    return out


# -- report arrays <-> one row per user ----------------------------------------------------------
def to_rows(fields: Sequence[ReportField], config: Any, data: dict[str, np.ndarray], n: int) -> dict[str, np.ndarray]:
    """Per-user columns from report arrays: per-user values as they are, rows as a 2-D uint8
    array (n, row_bytes) of their little-endian bytes, packed bits unpacked to int8 0/1."""
    out: dict[str, np.ndarray] = {}
    for f in fields:
        arr = np.asarray(data[f.name])
        if f.kind == PER_USER:
            out[f.name] = arr.astype(f.dtype, copy=False).reshape(n)
        elif f.kind == ROW:
            k = f.row_bytes(config)
            out[f.name] = np.ascontiguousarray(arr.astype(f.dtype.newbyteorder("<"), copy=False)).view(
                np.uint8).reshape(n, k)
        else:
            out[f.name] = np.unpackbits(arr.astype(np.uint8, copy=False), count=n, bitorder="little").astype(np.int8)
    return out


def from_rows(fields: Sequence[ReportField], config: Any, rows: dict[str, np.ndarray], n: int) -> dict[str, np.ndarray]:
    """Report arrays from per-user columns (the inverse of :func:`to_rows`): rows come as
    (n, row_bytes) uint8, packed bits as 0/1 per user."""
    out: dict[str, np.ndarray] = {}
    for f in fields:
        col = rows[f.name]
        if f.kind == PER_USER:
            out[f.name] = np.ascontiguousarray(col, dtype=f.dtype).reshape(n)
        elif f.kind == ROW:
            k = f.row_length(config)
            # a fresh, aligned array (an Arrow data buffer need not be aligned at a row)
            arr = np.empty((n, k), dtype=f.dtype.newbyteorder("<"))
            arr.view(np.uint8).reshape(n, f.row_bytes(config))[...] = np.asarray(col, dtype=np.uint8).reshape(
                n, f.row_bytes(config))
            # the native dtype object itself (the C++ checks want exactly it, not '<u8' beside '=u8')
            out[f.name] = arr.view(f.dtype) if sys.byteorder == "little" else arr.astype(f.dtype)
        else:
            packed = np.packbits(np.asarray(col, dtype=np.uint8), bitorder="little")
            out[f.name] = packed if packed.shape == ((n + 7) // 8,) else np.zeros((n + 7) // 8, dtype=np.uint8)
    return out


def report_rows(config: Any, data: dict[str, np.ndarray], n: int) -> dict[str, np.ndarray]:
    """One row per user from a batch's arrays, by ``config``'s declared fields (see
    :func:`to_rows`): the layout Arrow, Parquet and Spark use.

    Parameters
    ----------
    config : Configuration
        Declares the fields.
    data : dict of str to numpy.ndarray
        The batch's arrays.
    n : int
        Reports in the batch.

    Returns
    -------
    dict of str to numpy.ndarray
        One array per column, n rows each (packed bits unpacked).
    """
    return to_rows(config.report_fields, config, data, n)


def reports_from_rows(config: Any, rows: dict[str, np.ndarray], n: int) -> dict[str, np.ndarray]:
    """A batch's arrays from one row per user (the inverse of :func:`report_rows`).

    Parameters
    ----------
    config : Configuration
        Declares the fields.
    rows : dict of str to numpy.ndarray
        One column per field, ``n`` rows each.
    n : int
        The number of rows.

    Returns
    -------
    dict of str to numpy.ndarray
        The batch's arrays (bits packed again).
    """
    return from_rows(config.report_fields, config, rows, n)


def values_within(v: np.ndarray, upper: int) -> bool:
    """Whether every value of the integer array ``v`` is in [0, upper): the batch checks'
    one range rule. A batch of a few reports (one device's) is read as Python ints, without
    NumPy's per-call reduction cost; larger ones by min and max."""
    if v.size <= 16:
        values = v.ravel().tolist()
        return not values or (min(values) >= 0 and max(values) < upper)
    return (v.dtype.kind != "i" or int(v.min()) >= 0) and int(v.max()) < upper
