"""Checks of a DataFrame's report column at the driver, before any job runs."""
from __future__ import annotations

from typing import Any

from ._report_rows import layout

ON_MALFORMED = ("raise", "skip")


def check_on_malformed(value: Any) -> str:
    if value not in ON_MALFORMED:
        raise ValueError(f"on_malformed must be one of {ON_MALFORMED}, got {value!r}")
    return value


def check_dataframe(df: Any) -> None:
    from pyspark.sql import DataFrame

    if not isinstance(df, DataFrame):
        raise TypeError(f"df must be a pyspark.sql.DataFrame, got {type(df).__name__}")


def check_report_column(df: Any, column: Any, oracle: Any) -> None:
    """TypeError/ValueError naming ``column`` unless it is a struct with exactly the protocol's
    report fields, of the Spark types of its row layout (see _report_rows). ``column=None``:
    the report fields must be top-level columns of those types (a flat layout)."""
    from pyspark.sql import types as T

    check_dataframe(df)
    if column is not None and not isinstance(column, str):
        raise TypeError(f"column must be a str or None, got {type(column).__name__}")
    fields = layout(oracle)
    want = ", ".join(f"{f.name}: {f.spark_type_name(oracle)}" for f in fields)
    if column is None:
        missing = [f.name for f in fields if f.name not in df.columns]
        if missing:
            raise ValueError(f"the DataFrame has no report column {missing[0]!r} (flat layout <{want}>; "
                             f"columns: {df.columns})")
        dtype = T.StructType([df.schema[f.name] for f in fields])
        where = "the report columns"
    else:
        if column not in df.columns:
            raise ValueError(f"the DataFrame has no column {column!r} (columns: {df.columns})")
        dtype = df.schema[column].dataType
        where = f"column {column!r}"
        if not isinstance(dtype, T.StructType):
            raise TypeError(f"column {column!r} must be a struct<{want}> of reports, got {dtype.simpleString()}")
        names = [f.name for f in dtype.fields]
        if sorted(names) != sorted(f.name for f in fields):
            raise ValueError(f"column {column!r} must hold exactly the fields <{want}>, got {dtype.simpleString()}")
    types = {
        "bigint": T.LongType, "tinyint": T.ByteType, "binary": T.BinaryType,
    }
    for f in fields:
        got = dtype[f.name].dataType
        if not isinstance(got, types[f.spark_type_name(oracle)]):
            raise TypeError(f"{where}: field {f.name!r} must be {f.spark_type_name(oracle)}, got {got.simpleString()}")
