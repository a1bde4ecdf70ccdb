"""reports_to_dataframe / dataframe_to_reports: report batches from anywhere <-> a DataFrame
with one row per user and one struct column of the protocol's report arrays. The configuration
travels with the rows: in the Arrow schema metadata (and so in Parquet files) and in the Spark
column's metadata (kept by Spark through projections and its own Parquet files)."""
from __future__ import annotations

from typing import Any

from ._checks import check_on_malformed, check_report_column
from ._identifiers import quoted
from ._report_rows import protocol_of, to_rows


def _check_arrays(reports: Any, proto: Any) -> None:
    """The report arrays match the declared schema and every row is in the configuration's
    (``proto``) range (``Configuration.reports`` and ``valid_rows``): O(n), no aggregation."""
    proto.reports(reports.data, reports.n)
    valid = proto.valid_rows(reports.data, reports.n)
    if not valid.all():
        raise ValueError(f"{int(reports.n - valid.sum())} of {reports.n} reports are outside the protocol's range")


def reports_table(reports: Any, oracle: Any, column: str = "report") -> Any:
    """A pyarrow Table with one struct column ``column`` holding ``reports`` (one row per
    user), the configuration in its schema metadata (``_arrow.CONFIG_KEY``), so that a Parquet
    file written from it is refused by a reader of another configuration. Checked in O(n).

    Parameters
    ----------
    reports : Reports
        From a client of ``oracle``.
    oracle : Configuration
        The configuration.
    column : str, default "report"
        The struct column's name.

    Returns
    -------
    pyarrow.Table
        One row per report.

    Raises
    ------
    TypeError
        For reports of the wrong family or a non-str column.
    ValueError
        For reports of another configuration, or out of the protocol's range.
    """
    proto = protocol_of(oracle)  # the entry point: normalised once, below only the configuration
    return _reports_table(reports, proto, column)


def _reports_table(reports: Any, proto: Any, column: str) -> Any:
    import pyarrow as pa

    from ...ldp import Reports
    from ._arrow import config_metadata, rows_to_arrow

    # the family is the configuration's declaration; a batch records the family that made it
    if not isinstance(reports, Reports) or reports.family != proto.family:
        raise TypeError(f"reports must be dpnoise.ldp.Reports of the {proto.family} family (a client's "
                        f"privatize), got {type(reports).__name__}")
    if not isinstance(column, str):
        raise TypeError(f"column must be a str, got {type(column).__name__}")
    if reports.protocol != proto.name or reports.params != proto.fingerprint():
        raise ValueError(f"the reports come from a different configuration ({reports.protocol!r}) than {proto!r}")
    _check_arrays(reports, proto)
    rows = to_rows(proto, reports.data, reports.n)
    meta = config_metadata(proto)
    array = rows_to_arrow(proto, rows, reports.n)
    return pa.Table.from_arrays([array], schema=pa.schema([pa.field(column, array.type, metadata=meta)],
                                                          metadata=meta))


def with_config(df: Any, column: str, oracle: Any) -> Any:
    """``df`` with ``oracle``'s configuration in ``column``'s Spark metadata."""
    from pyspark.sql import functions as F

    from ._arrow import CONFIG_KEY, config_json

    return df.select(*[F.col(quoted(c)).alias(c, metadata={CONFIG_KEY: config_json(oracle)}) if c == column
                       else F.col(quoted(c)) for c in df.columns])


def reports_to_dataframe(spark: Any, reports: Any, oracle: Any, column: str = "report", *,
                         num_partitions: int | None = None) -> Any:
    """A DataFrame of ``reports`` (one row per user, struct column ``column``; types in
    ``dpnoise.distributed.spark._report_rows``), built from Arrow (``createDataFrame`` of a
    pyarrow Table), optionally repartitioned into ``num_partitions`` (round-robin). The
    column's Spark metadata carries the configuration (``aggregate_reports`` checks it).

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
        The session.
    reports, oracle, column
        As for :func:`reports_table`.
    num_partitions : int, optional
        Repartition to this many partitions.

    Returns
    -------
    pyspark.sql.DataFrame
        One row per report.
    """
    proto = protocol_of(oracle)  # the entry point: normalised once
    table = _reports_table(reports, proto, column)
    df = spark.createDataFrame(table)
    if num_partitions is not None:
        df = df.repartition(int(num_partitions))
    return with_config(df, column, proto)


def dataframe_to_reports(df: Any, column: str, oracle: Any, *, on_malformed: str = "raise") -> Any:
    """The reports of ``df[column]`` collected at the driver (via Arrow) as one
    :class:`dpnoise.ldp.Reports` batch, checked by the protocol. A column whose Spark metadata
    names another configuration: ValueError naming both. Malformed rows: ValueError naming the
    column and their number (``on_malformed="raise"``, the default), or
    ``on_malformed="skip"``: left out, and the result is ``(reports, number of malformed rows)``.
    Everything is collected at the driver: for large data aggregate with
    :func:`aggregate_reports` instead.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        Holds the report column.
    column : str
        The struct column of reports.
    oracle : Configuration
        The configuration the column must hold.
    on_malformed : {"raise", "skip"}, default "raise"
        See above.

    Returns
    -------
    Reports or tuple of (Reports, int)
        The batch (and the malformed-row count with ``"skip"``).

    Raises
    ------
    ValueError
        For another configuration, an empty DataFrame, or malformed rows under ``"raise"``.
    """
    from ._arrow import CONFIG_KEY, arrow_to_rows, check_config, make_reports

    check_on_malformed(on_malformed)
    oracle = protocol_of(oracle)
    check_report_column(df, column, oracle)
    check_config(df.schema[column].metadata.get(CONFIG_KEY), oracle, f"column {column!r}")
    table = df.select(column).toArrow()
    rows, n_good, malformed = arrow_to_rows(oracle, table.column(0))
    if n_good + malformed == 0:
        raise ValueError(f"column {column!r}: the DataFrame is empty, there are no reports")
    if malformed and on_malformed == "raise":
        raise ValueError(f"column {column!r}: {malformed} of {n_good + malformed} report rows are malformed (null, "
                         f"wrong length or out of the protocol's range); fix them or pass on_malformed='skip'")
    reports = make_reports(oracle, rows, n_good)
    return (reports, malformed) if on_malformed == "skip" else reports

