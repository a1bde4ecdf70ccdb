"""Apache Spark adapters (extra ``dpnoise[spark]``: pyspark and pyarrow, plus Java 17+).

* :func:`aggregate_reports` — LDP reports in Parquet files or a DataFrame -> one aggregator
  (Parquet row groups read by the executors with pyarrow, other DataFrames through
  ``mapInArrow``; per-task C++ aggregation, serialised states tree-merged);
* :func:`reports_to_dataframe` / :func:`dataframe_to_reports` — reports <-> DataFrame rows;
* :func:`privatize_column` — privatise raw items on the executors (simulations, benchmarks);
* :func:`aggregate_stream` / :func:`stream_state` — a streaming DataFrame of reports merged
  continuously into aggregator states kept in a directory (per key value, e.g. per day), each
  micro-batch counted exactly once across failures and restarts, read back at any time;
* :func:`private_counts` — exact group counts by Spark, noise drawn once at the driver;
* :func:`local_session` — an offline ``local[2]`` session for tests and demos;
* :func:`jvm_helper_jar` — the small Java helper that counts count-table reports in the
  executors' JVM (compiled on first use; ship it to a cluster with ``--jars``).

See docs/scaling.md.
"""
from __future__ import annotations

try:
    import pyarrow  # noqa: F401
    import pyspark  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("dpnoise.distributed.spark needs pyspark and pyarrow: pip install pyspark pyarrow "
                      f"(missing: {exc.name})") from exc

from ._aggregate import SparkAggregate, aggregate_reports
from ._convert import dataframe_to_reports, reports_table, reports_to_dataframe
from ._counts import PrivateCounts, private_counts
from ._jvm_counts import jvm_helper_jar
from ._privatize import privatize_column
from ._report_rows import LAYOUTS
from ._session import java_available, local_session
from ._stream import StreamInfo, aggregate_stream, stream_state

__all__ = ["LAYOUTS", "PrivateCounts", "SparkAggregate", "StreamInfo", "aggregate_reports", "aggregate_stream",
           "dataframe_to_reports", "java_available", "jvm_helper_jar", "local_session", "private_counts",
           "privatize_column", "reports_table", "reports_to_dataframe", "stream_state"]
