"""reports_to_dataframe / dataframe_to_reports: report batches from anywhere <-> a DataFrame
with one row per user and one struct column of the protocol's report arrays."""
from __future__ import annotations

from typing import Any, Optional

from ._checks import check_on_malformed, check_report_column
from ._report_rows import protocol_of, to_rows


def reports_table(reports: Any, oracle: Any, column: str = "report") -> Any:
    """A pyarrow Table with one struct column ``column`` holding ``reports`` (one row per user)."""
    import pyarrow as pa

    from ...ldp import HHReports, Reports
    from ._arrow import rows_to_arrow
    from ._report_rows import is_heavy_hitters

    proto = protocol_of(oracle)
    kind = HHReports if is_heavy_hitters(proto) else Reports
    if not isinstance(reports, kind):
        raise TypeError(f"reports must be dpnoise.ldp.{kind.__name__}, got {type(reports).__name__}")
    if not isinstance(column, str):
        raise TypeError(f"column must be a str, got {type(column).__name__}")
    name = reports.method if kind is HHReports else reports.protocol
    if name != proto.name or reports.params != proto.fingerprint():
        raise ValueError(f"the reports come from a different configuration ({name!r}) than {proto!r}")
    proto.aggregator().add(reports)  # the protocol's own checks (dtypes, shapes, ranges), before any job
    rows = to_rows(oracle, reports.data, reports.n)
    return pa.table({column: rows_to_arrow(oracle, rows, reports.n)})


def reports_to_dataframe(spark: Any, reports: Any, oracle: Any, column: str = "report", *,
                         num_partitions: Optional[int] = None) -> Any:
    """A DataFrame of ``reports`` (one row per user, struct column ``column``; types in
    ``dpnoise.distributed.spark._report_rows``), built from Arrow (``createDataFrame`` of a
    pyarrow Table), optionally repartitioned into ``num_partitions`` (round-robin)."""
    table = reports_table(reports, oracle, column)
    df = spark.createDataFrame(table)
    if num_partitions is not None:
        df = df.repartition(int(num_partitions))
    return df


def dataframe_to_reports(df: Any, column: str, oracle: Any, *, on_malformed: str = "raise") -> Any:
    """The reports of ``df[column]`` collected at the driver (via Arrow) as one
    :class:`dpnoise.ldp.Reports` batch, checked by the protocol. Malformed rows: ValueError
    naming the column and their number (``on_malformed="raise"``, the default), or
    ``on_malformed="skip"``: left out, and the result is ``(reports, number of malformed rows)``.
    Everything is collected at the driver: for large data aggregate with
    :func:`aggregate_reports` instead."""
    from ._arrow import arrow_to_rows, make_reports

    check_on_malformed(on_malformed)
    check_report_column(df, column, oracle)
    table = df.select(column).toArrow()
    rows, n_good, n_bad = arrow_to_rows(oracle, table.column(0))
    # rows the protocol refuses: find them with the same bisection as the aggregation
    agg = protocol_of(oracle).aggregator()
    if n_good + n_bad == 0:
        raise ValueError(f"column {column!r}: the DataFrame is empty, there are no reports")
    bad_values = 0
    if n_good:
        try:
            agg.add(make_reports(oracle, rows, n_good))
        except (ValueError, TypeError, OverflowError):
            keep = _good_mask(oracle, rows, n_good)
            bad_values = int(n_good - keep.sum())
            rows = {k: v[keep] for k, v in rows.items()}
            n_good = int(keep.sum())
    malformed = n_bad + bad_values
    if malformed and on_malformed == "raise":
        raise ValueError(f"column {column!r}: {malformed} of {n_good + malformed} report rows are malformed (null, "
                         f"wrong length or out of the protocol's range); fix them or pass on_malformed='skip'")
    reports = make_reports(oracle, rows, n_good)
    return (reports, malformed) if on_malformed == "skip" else reports


def _good_mask(oracle: Any, rows: Any, n: int) -> Any:
    """Which rows the protocol accepts (only for a batch that was refused): bisection with one
    scratch aggregator, O(bad · log n) adds (a refused add leaves it unchanged)."""
    import numpy as np

    from ._arrow import make_reports

    keep = np.ones(n, dtype=bool)
    scratch = protocol_of(oracle).aggregator()

    def check(lo: int, hi: int) -> None:
        try:
            scratch.add(make_reports(oracle, {k: v[lo:hi] for k, v in rows.items()}, hi - lo))
        except (ValueError, TypeError, OverflowError):
            if hi - lo == 1:
                keep[lo] = False
                return
            mid = (lo + hi) // 2
            check(lo, mid)
            check(mid, hi)

    check(0, n)
    return keep
