"""How each configuration's report arrays become DataFrame rows, and back.

One row per user. The report column is a struct whose fields are the report arrays' names, in
the order the configuration declares them (``report_fields``, dpnoise.ldp.ReportField): nothing
here names a protocol. Spark types by kind:

* ``per_user`` one value per user, ``(n,)``: LongType (int64) or ByteType (int8);
* ``row``      one fixed-length row per user, ``(n, k)``: BinaryType holding the row's
               little-endian bytes (e.g. OUE's uint64 words, OLH's two seeds, CMS's sketch row);
* ``packed``   bits packed ACROSS users: ByteType, 0 or 1 per row.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...ldp import PER_USER, ROW, ReportField, arrow as ldp_arrow, report_rows, reports_from_rows
from ._identifiers import quoted

# the row kinds are the ones the configurations declare (dpnoise.ldp.ReportField)
SCALAR, FIXED = PER_USER, ROW


@dataclass(frozen=True)
class Field:
    """A declared report field with its Spark column type."""

    spec: ReportField

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def kind(self) -> str:
        return self.spec.kind

    @property
    def dtype(self) -> np.dtype:
        return self.spec.dtype

    def row_length(self, protocol: Any) -> int:
        return self.spec.row_length(protocol)

    def row_bytes(self, protocol: Any) -> int:
        return self.spec.row_bytes(protocol)

    def spark_type_name(self, config: Any) -> str:
        """The Spark SQL name of this field's Arrow type (dpnoise.ldp.arrow.field_type, the one
        mapping; rows as variable-length binary, which is what Spark's BinaryType holds)."""
        arrow_type = ldp_arrow.field_type(self.spec, config, fixed_size_rows=False)
        return {"binary": "binary", "int8": "tinyint", "int64": "bigint"}[str(arrow_type)]


def _layouts() -> dict[str, tuple[Field, ...]]:
    from ...ldp import Protocol

    return {name: tuple(Field(f) for f in cls.report_fields) for name, cls in sorted(Protocol.registered().items())}


#: frequency-oracle name -> its report fields, derived from the classes' declarations
LAYOUTS: dict[str, tuple[Field, ...]] = _layouts()


def protocol_of(oracle: Any) -> Any:
    """The configuration behind ``oracle`` (a configuration, or an object with a ``protocol``
    attribute such as a client); TypeError otherwise. Only the public entry points call it, once
    each: everything below them takes the configuration itself."""
    from ...ldp import Configuration

    if isinstance(oracle, Configuration):
        return oracle
    inner = getattr(oracle, "protocol", None)
    if isinstance(inner, Configuration):
        return inner
    raise TypeError(f"oracle must be a dpnoise.ldp.FrequencyOracle (or HeavyHitters), got {type(oracle).__name__}")


def layout(config: Any) -> tuple[Field, ...]:
    """The row layout of ``config``'s reports; ValueError for a protocol without one."""
    fields = config.report_fields
    if not fields:
        raise ValueError(f"no report fields declared for {config.name!r}")
    return tuple(Field(f) for f in fields)


def spark_schema_ddl(oracle: Any, column: str) -> str:
    fields = ", ".join(f"{quoted(f.name)}: {f.spark_type_name(oracle)}" for f in layout(oracle))
    return f"{quoted(column)} struct<{fields}>"


# -- NumPy report arrays <-> per-row NumPy columns ----------------------------------------------
def to_rows(config: Any, data: dict[str, np.ndarray], n: int) -> dict[str, Any]:
    """Per-row columns from report arrays (dpnoise.ldp.report_rows)."""
    return report_rows(config, data, n)


def from_rows(config: Any, rows: dict[str, np.ndarray], n: int) -> dict[str, np.ndarray]:
    """Report arrays from per-row columns (dpnoise.ldp.reports_from_rows)."""
    return reports_from_rows(config, rows, n)


def take(rows: dict[str, np.ndarray], index: Any) -> dict[str, np.ndarray]:
    """The rows at ``index`` (a slice, mask or index array) of every per-row column."""
    return {k: v[index] for k, v in rows.items()}

