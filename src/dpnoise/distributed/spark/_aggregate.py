"""aggregate_reports: one aggregator per task in the C++ core, its serialised state emitted,
the states tree-merged, loaded at the driver.

Two ways in: Parquet files (a path, paths, or a DataFrame that is a plain Parquet scan) are
read by the executors with pyarrow, row group by row group (_parquet.py). Any other DataFrame is
counted by Spark itself when the state is a count table over the report fields
(_count_table.py: dpnoise's JVM helper, else Spark's groupBy), else goes through
``mapInArrow`` over its report fields as flat columns."""
from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from typing import Any, Callable

from . import _count_table as count_table, _jvm_counts as jvm_counts
from ._checks import check_on_malformed, check_report_column
from ._identifiers import field_path
from ._jobs import catchable, raise_task_error, run_job, task_error
from ._parquet import Piece, check_input_files, deal, list_pieces, local_files, plain_parquet_files
from ._report_rows import layout, protocol_of

_STATE_SCHEMA = "state binary, malformed bigint, rows bigint, error string"

#: what a task returns: (serialised state, malformed rows, rows seen, error or "")
Partial = tuple[bytes, int, int, str]


def oracle_factory(oracle: Any) -> Callable[[], Any]:
    """A picklable zero-argument function giving back the configuration ``oracle`` on an
    executor: it travels as its JSON (``to_json``; rebuilt and checked there). Callers pass a
    configuration (the entry points normalise a client to its configuration, whose generator
    never travels)."""
    from ...ldp import Configuration

    if not isinstance(oracle, Configuration):  # the entry points normalise: a bug, not bad input
        raise TypeError(f"expected a dpnoise.ldp configuration, got {type(oracle).__name__}")
    return _Rebuild(oracle.to_json())


class _Rebuild:
    def __init__(self, text: str) -> None:
        self.text = text

    def __call__(self) -> Any:
        from ...ldp import Configuration

        return Configuration.from_json(self.text)


class _Ingest:
    """The task: Arrow tables or batches -> one aggregator -> (state, malformed, rows, error).
    An error about the data or the configuration is returned, not raised (see _jobs)."""

    def __init__(self, make: Callable[[], Any], column: str | None) -> None:
        self.make, self.column = make, column

    def __call__(self, tables: Iterable[Any]) -> Partial:
        from ._arrow import add_rows, arrow_to_rows

        malformed = rows_seen = 0
        try:
            orc = self.make()
            agg = orc.aggregator()
            for table in tables:
                rows, n_good, n_bad = arrow_to_rows(orc, table, self.column)
                rows_seen += n_good + n_bad
                malformed += n_bad + add_rows(agg, orc, rows, n_good)
            return agg.to_bytes(), malformed, rows_seen, ""
        except catchable() as exc:
            return b"", malformed, rows_seen, task_error(exc)


class _Merger:
    """treeReduce's function: load two partial results with the aggregator class's
    ``from_bytes`` (checked, versioned), merge, serialise again. An error (a task's, or a merge
    that fails: a configuration error) is carried on, never raised on an executor."""

    def __init__(self, aggregator_class: Any) -> None:
        self.cls = aggregator_class

    def load(self, state: Any) -> Any:
        return self.cls.from_bytes(bytes(state))

    def __call__(self, a: Partial, b: Partial) -> Partial:
        malformed, rows = a[1] + b[1], a[2] + b[2]
        if a[3] or b[3]:
            return b"", malformed, rows, a[3] or b[3]
        try:
            left = self.load(a[0])
            left.merge(self.load(b[0]))
            return left.to_bytes(), malformed, rows, ""
        except catchable() as exc:
            return b"", malformed, rows, "ValueError: two partition states did not merge (a configuration " \
                                         f"error, not malformed rows): {' '.join(str(exc).split())}"


class SparkAggregate:
    """What :func:`aggregate_reports` found besides the aggregator: ``malformed`` rows (counted,
    never silently dropped), ``rows`` seen, ``partitions`` (tasks), ``source``:
    ``"parquet"`` (row groups read by the executors with pyarrow) or ``"dataframe"``, and
    ``route``: ``"pyarrow"`` (Parquet row groups), ``"jvm_counts"`` (the executors counted the
    reports per report value into dense arrays in the JVM, with dpnoise's helper jar; only the
    counts came back), ``"count_table"`` (the same counts by Spark's groupBy) or
    ``"map_in_arrow"`` (the rows went to Python workers as Arrow batches). ``jvm_helper`` is
    why the JVM helper was not used ("" when it was, or when the state is no count table).

    Parameters
    ----------
    malformed, rows, partitions : int
        The counts above.
    source : {"dataframe", "parquet"}, default "dataframe"
        Where the reports were read.
    route : {"map_in_arrow", "jvm_counts", "count_table", "pyarrow"}, default "map_in_arrow"
        How they were aggregated.
    jvm_helper : str, default ""
        Why the JVM helper was not used, if it could have been.
    """

    def __init__(self, malformed: int, rows: int, partitions: int, source: str = "dataframe",
                 route: str = "map_in_arrow", jvm_helper: str = "") -> None:
        self.malformed, self.rows, self.partitions, self.source = malformed, rows, partitions, source
        self.route, self.jvm_helper = route, jvm_helper

    def __repr__(self) -> str:
        helper = f", jvm_helper={self.jvm_helper!r}" if self.jvm_helper else ""
        return (f"SparkAggregate(rows={self.rows}, malformed={self.malformed}, partitions={self.partitions}, "
                f"source={self.source!r}, route={self.route!r}{helper})")


def _parquet_task(make: Callable[[], Any], column: str | None, columns: list[str]) -> Callable[[Any], Any]:
    from ._parquet import read_pieces

    ingest = _Ingest(make, column)

    def run(task: Any) -> Any:
        for pieces in task:  # one list of pieces per partition
            yield ingest(read_pieces(pieces, columns))
    return run


def _dataframe_states(df: Any, column: str | None, oracle: Any) -> Any:
    """One (state, malformed, rows, error) row per partition of ``df``, via ``mapInArrow`` over
    the report fields as flat columns (cheaper for Spark to hand over than a struct)."""
    import pyarrow as pa
    from pyspark.sql import functions as F

    fields = layout(oracle)
    if column is None:
        flat = df.select(*[F.col(field_path(None, f.name)) for f in fields])
    else:
        flat = df.select(*[F.col(field_path(column, f.name)).alias(f.name) for f in fields])
    ingest = _Ingest(oracle_factory(oracle), None)
    schema = pa.schema([("state", pa.binary()), ("malformed", pa.int64()), ("rows", pa.int64()),
                        ("error", pa.string())])

    def aggregate_partition(batches: Any) -> Any:
        state, malformed, rows, error = ingest(batches)
        yield pa.RecordBatch.from_pydict({"state": [state], "malformed": [malformed], "rows": [rows],
                                          "error": [error]}, schema=schema)

    return flat.mapInArrow(aggregate_partition, _STATE_SCHEMA)


def _source_paths(source: Any) -> list[str] | None:
    """The Parquet paths ``source`` names, None for a DataFrame; TypeError for anything else."""
    from pyspark.sql import DataFrame

    if isinstance(source, DataFrame):
        return None
    paths = [source] if isinstance(source, (str, os.PathLike)) else source
    if not isinstance(paths, (list, tuple)) or not paths or not all(isinstance(p, (str, os.PathLike)) for p in paths):
        raise TypeError("the reports must be a pyspark.sql.DataFrame, a Parquet path or a non-empty list of paths, "
                        f"got {type(source).__name__}")
    return [os.fspath(p) for p in paths]


def _session(spark: Any) -> Any:
    from pyspark.sql import SparkSession

    spark = spark if spark is not None else SparkSession.getActiveSession()
    if spark is None:
        raise ValueError("aggregating Parquet paths needs a SparkSession: pass spark= (or start one)")
    return spark


def aggregate_reports(source: Any, column: str | None, oracle: Any, *, on_malformed: str = "raise",
                      depth: int = 2, spark: Any = None, tasks: int | None = None) -> Any:
    """The aggregator of every report in ``source``.

    Parameters
    ----------
    source : pyspark.sql.DataFrame, str or list of str
        A DataFrame with a report column (see :func:`reports_to_dataframe`), or the path(s) of
        Parquet files/directories of reports (``reports_table`` + ``pyarrow.parquet``, or
        ``df.write.parquet``). Parquet input -- paths, or a DataFrame that is a plain scan
        ``spark.read.parquet(...)`` -- is read by the executors with pyarrow, row group by row
        group (no JVM -> Python conversion). Any other DataFrame: when the aggregator's state
        is a count table over the report values (Hadamard, GRR, HCMS), the executors count the
        reports per value and only those counts reach the driver: into dense arrays in the JVM
        with dpnoise's helper jar (up to 2^22 values; compiled on first use, which needs a JDK:
        see :func:`jvm_helper_jar`), else with Spark's groupBy (up to 2^15 values, e.g. GRR
        with d <= 32,768). Otherwise it goes through ``mapInArrow``. ``agg.spark.route`` says
        which.
    column : str or None
        The struct column of the reports (``"report"``), or None when the report fields are
        top-level columns.
    oracle : FrequencyOracle, heavy-hitters configuration, or a client of one
        The configuration (a client is reduced to it; its generator is not used).
    on_malformed : {"raise", "skip"}
        Malformed rows (null, wrong length, out of the protocol's range) are counted on the
        executors; ``"raise"`` (default) then raises ValueError naming the column and the
        count; ``"skip"`` leaves them out and reports the count on ``agg.spark``.
    depth : int
        ``treeReduce`` depth of the merge of the task states.
    spark : SparkSession, optional
        For paths (default: the active session).
    tasks : int, optional
        Parquet input: how many tasks share the row groups (default: the cluster's
        ``defaultParallelism``, at most one per row group).

    Returns
    -------
    Aggregator
        Equal, bit for bit, to the single-process aggregator of the same reports (merging is
        exact integer addition), whatever the partitioning and however often a task is retried;
        its ``spark`` attribute is a :class:`SparkAggregate`.

    Raises
    ------
    ValueError
        Reports of another configuration (the Parquet schema metadata or the column's Spark
        metadata names it; both configurations named), malformed rows with
        ``on_malformed="raise"``, no reports at all, or a configuration error (e.g. a column sum
        beyond its bit planes: never counted as malformed rows).
    TypeError
        A source, column or oracle of the wrong kind.
    RuntimeError
        The Spark job failed for another reason (one line: the executor's error).
    """
    check_on_malformed(on_malformed)
    oracle = protocol_of(oracle)
    if not isinstance(depth, int) or isinstance(depth, bool) or depth < 1:
        raise ValueError(f"depth must be an int >= 1, got {depth!r}")
    if tasks is not None and (not isinstance(tasks, int) or isinstance(tasks, bool) or tasks < 1):
        raise ValueError(f"tasks must be an int >= 1, got {tasks!r}")
    if column is not None and not isinstance(column, str):
        raise TypeError(f"column must be a str or None, got {type(column).__name__}")
    agg = aggregate_any(source, column, oracle, depth=depth, spark=spark, tasks=tasks)
    what = f"column {column!r}" if column is not None else "the report columns"
    if agg.spark.rows == 0:
        raise ValueError(f"{what}: there are no reports to aggregate (the Parquet files are empty)"
                         if agg.spark.source == "parquet" else
                         f"{what}: the DataFrame is empty, there are no reports to aggregate")
    _check_rows(what, agg.spark.malformed, agg.spark.rows, on_malformed)
    return agg


def aggregate_any(source: Any, column: str | None, oracle: Any, *, depth: int = 2, spark: Any = None,
                  tasks: int | None = None) -> Any:
    """:func:`aggregate_reports` without its checks of the result: the aggregator (possibly of
    no reports) with its ``spark`` record, malformed rows counted and left out. The routes are
    chosen here, for a static source and for one micro-batch of a stream (_stream.py) alike;
    the arguments are checked by the caller."""
    from ._arrow import CONFIG_KEY, check_config

    paths = _source_paths(source)  # (oracle: a configuration, normalised by the entry point)
    merger = _Merger(type(oracle.aggregator()))
    what = f"column {column!r}" if column is not None else "the report columns"
    pieces = df = None
    if paths is not None:
        spark = _session(spark)
        files = local_files(paths)  # local files: listed by pyarrow, no Spark job
        pieces = list_pieces(files, oracle, column) if files is not None else None
        if pieces is None:
            df = run_job("reading the Parquet paths", lambda: spark.read.parquet(*paths))
    else:
        df = source
    if df is not None:
        check_report_column(df, column, oracle)
        if column is not None:
            check_config(df.schema[column].metadata.get(CONFIG_KEY), oracle, f"column {column!r}")
        plain_files = plain_parquet_files(df)
        if plain_files is None:  # a filter, a join, ...: the files' metadata is checked all the same
            check_input_files(df, oracle)
        pieces = list_pieces(plain_files, oracle, column) if plain_files is not None else None
        spark = df.sparkSession
    if pieces is not None:
        return aggregate_pieces(spark, pieces, column, oracle, depth=depth, tasks=tasks)
    assert df is not None  # no pieces: a DataFrame to aggregate
    # the state is a count table over the report fields: Spark counts, no row enters Python
    counted, why = _count_in_spark(df, column, oracle, depth, what)
    if counted is not None:
        agg, malformed, rows, tasks_run, route = counted
        agg.spark = SparkAggregate(malformed, rows, tasks_run, "dataframe", route, why)
        return agg
    states = _dataframe_states(df, column, oracle)
    # (planning a DataFrame with a shuffle runs its first stages under adaptive execution)
    partitions = run_job(f"aggregating {what}", lambda: states.rdd.getNumPartitions())
    if partitions == 0:
        return _no_reports(oracle, "dataframe", "map_in_arrow", why)
    rdd = states.rdd.map(lambda r: (bytes(r[0]), int(r[1]), int(r[2]), str(r[3] or "")))
    with _large_arrow_batches(df.sparkSession):
        return _merged(rdd, merger, depth, what, partitions, "dataframe", "map_in_arrow", why)


def aggregate_pieces(spark: Any, pieces: list[Piece], column: str | None, oracle: Any, *, depth: int = 2,
                     tasks: int | None = None) -> Any:
    """The aggregator (with its ``spark`` record) of the Parquet row groups ``pieces``
    (:func:`_parquet.list_pieces`, files already checked), read by the executors with pyarrow:
    the Parquet route of :func:`aggregate_any`, also taken by a stream's micro-batch whose files
    are known (_stream_files.py)."""
    what = f"column {column!r}" if column is not None else "the report columns"
    sc = spark.sparkContext
    dealt = deal([p for p in pieces if p[2] > 0], tasks or sc.defaultParallelism)
    if not dealt:
        return _no_reports(oracle, "parquet", "pyarrow", "")
    columns = [column] if column is not None else [f.name for f in layout(oracle)]
    task = _parquet_task(oracle_factory(oracle), column, columns)
    rdd = sc.parallelize(dealt, len(dealt)).mapPartitions(task)
    return _merged(rdd, _Merger(type(oracle.aggregator())), depth, what, len(dealt), "parquet", "pyarrow", "")


def _merged(rdd: Any, merger: _Merger, depth: int, what: str, partitions: int, source: str, route: str,
            why: str) -> Any:
    """The task states of ``rdd`` tree-merged and loaded, with their ``spark`` record."""
    state, malformed, rows, error = run_job(f"aggregating {what}", lambda: rdd.treeReduce(merger, depth=depth))
    raise_task_error(error, what)
    agg = merger.load(state)
    agg.spark = SparkAggregate(malformed, rows, partitions, source, route, why)
    return agg


def _no_reports(oracle: Any, source: str, route: str, why: str) -> Any:
    agg = oracle.aggregator()
    agg.spark = SparkAggregate(0, 0, 0, source, route, why)
    return agg


def _count_in_spark(df: Any, column: str | None, oracle: Any, depth: int,
                    what: str) -> tuple[tuple[Any, int, int, int, str] | None, str]:
    """((aggregator, malformed, rows, tasks, route) or None, why the JVM helper was not used)
    for a DataFrame whose aggregator state is a count table over the report fields: counted
    by dpnoise's JVM helper where it loads, else by Spark's groupBy over at most
    ``count_table.MAX_KEYS`` keys; None when neither applies (the caller uses mapInArrow)."""
    space = count_table.key_space(oracle)
    if space is None:
        return None, ""
    n_keys = count_table.size(space)
    helper, why = jvm_counts.helper(df.sparkSession) if n_keys <= jvm_counts.MAX_KEYS else \
        (None, f"{n_keys} report values, more than the JVM helper's {jvm_counts.MAX_KEYS}")
    if helper is not None:
        keys, counts, tasks_run = run_job(f"aggregating {what}", lambda: count_table.count_keys_dense(
            df, column, space, helper, depth))
        route = "jvm_counts"
    elif n_keys <= count_table.MAX_KEYS:
        keys, counts, tasks_run = run_job(f"aggregating {what}", lambda: count_table.count_keys(df, column, space))
        route = "count_table"
    else:
        return None, why
    agg, malformed, rows = count_table.fold(oracle, space, keys, counts)
    return (agg, malformed, rows, tasks_run, route), why


#: rows per Arrow batch handed to mapInArrow at least (Spark's default 10,000 makes the per-batch
#: Python overhead dominate; 2^18 rows of flat report fields are a few MB)
_MIN_ARROW_BATCH = 1 << 18


@contextlib.contextmanager
def _large_arrow_batches(spark: Any) -> Any:
    """``spark.sql.execution.arrow.maxRecordsPerBatch`` raised to :data:`_MIN_ARROW_BATCH` for
    one job (a session's larger setting is kept), restored afterwards."""
    key = "spark.sql.execution.arrow.maxRecordsPerBatch"
    before = spark.conf.get(key)
    try:
        if 0 < int(before) < _MIN_ARROW_BATCH:  # zero or less: no limit
            spark.conf.set(key, str(_MIN_ARROW_BATCH))
        yield
    finally:
        spark.conf.set(key, before)


def _check_rows(what: str, malformed: int, rows: int, on_malformed: str) -> None:
    """ValueError for no rows at all, and for malformed rows under ``on_malformed="raise"``."""
    if rows == 0:
        raise ValueError(f"{what}: the DataFrame is empty, there are no reports to aggregate")
    if malformed and on_malformed == "raise":
        raise ValueError(f"{what}: {malformed} of {rows} report rows are malformed (null, wrong length or out of "
                         "the protocol's range); fix them or pass on_malformed='skip'")
