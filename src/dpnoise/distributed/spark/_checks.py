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
    report fields, of the Spark types of its row layout (see _report_rows)."""
    from pyspark.sql import types as T

    check_dataframe(df)
    if not isinstance(column, str):
        raise TypeError(f"column must be a str, got {type(column).__name__}")
    fields = layout(oracle)
    if column not in df.columns:
        raise ValueError(f"the DataFrame has no column {column!r} (columns: {df.columns})")
    dtype = df.schema[column].dataType
    want = ", ".join(f"{f.name}: {f.spark_type_name()}" for f in fields)
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
        if not isinstance(got, types[f.spark_type_name()]):
            raise TypeError(f"column {column!r}: field {f.name!r} must be {f.spark_type_name()}, got "
                            f"{got.simpleString()}")
