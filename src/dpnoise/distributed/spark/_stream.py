"""aggregate_stream / stream_state: Spark Structured Streaming into merged aggregator states
kept in a directory, each micro-batch counted exactly once across failures and restarts.

Each micro-batch (``foreachBatch``) is aggregated by the routes of :func:`aggregate_reports`:
without a key, a micro-batch of Spark's plain Parquet file source by its files, which the
checkpoint names (_stream_files.py), read by the executors with pyarrow
(_aggregate.aggregate_pieces); any other one through the DataFrame Spark hands over
(_aggregate.aggregate_any: the JVM helper for count-table states, else Spark's groupBy or
``mapInArrow``), per value of the key column when there is one. It is merged into the states of
the state directory (_state.py) together with the batch id, in one atomic replacement of one
file. Spark replays a batch whose commit it did not record (a driver killed after our commit,
before Spark's): its id is at most the one stored with the states, and it is skipped. So the
states hold every batch Spark ever committed or will replay, once.

Exactly once rests on Spark's contract for ``foreachBatch`` with a replayable source (files,
Kafka, ...): a replayed batch id carries the same rows. The state directory is paired with the
checkpoint: it records the streaming query's id (kept in the checkpoint across restarts), and a
stream is refused when the checkpoint belongs to another query, is new while the states already
hold batches, or has committed batches the states never saw."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from . import _state, _stream_files
from ._aggregate import aggregate_any, aggregate_pieces
from ._identifiers import quoted
from ._jobs import run_job
from ._report_rows import protocol_of

ON_MALFORMED = ("count", "raise")


@dataclass(frozen=True)
class StreamInfo:
    """What a stream's state directory records beside an aggregator (``agg.stream``).

    Attributes
    ----------
    batch_id : int
        The last micro-batch merged into the states (-1: none yet).
    key : object
        The key value of this aggregator (None without a key column).
    rows : int
        Report rows seen for this key (malformed ones included).
    malformed : int
        Malformed report rows for this key: counted, not aggregated.
    unkeyed : int
        Rows of the whole stream whose key was null: counted as malformed, in no aggregator.
    """

    batch_id: int
    key: Any
    rows: int
    malformed: int
    unkeyed: int


def _check_path(value: Any, name: str) -> str:
    if not isinstance(value, (str, os.PathLike)) or not os.fspath(value):
        raise TypeError(f"{name} must be a non-empty path (str or os.PathLike), got {type(value).__name__}")
    path = os.fspath(value)
    if not isinstance(path, str):
        raise TypeError(f"{name} must be a str path, got bytes")
    return path


def _key_type(df: Any, key: Any, column: str | None) -> str | None:
    if key is None:
        return None
    if not isinstance(key, str):
        raise TypeError(f"key must be a column name (str) or None, got {type(key).__name__}")
    if key not in df.columns:
        raise ValueError(f"key: the DataFrame has no column {key!r} (columns: {df.columns})")
    if key == column:
        raise ValueError(f"key must be another column than the reports' ({column!r})")
    kind = df.schema[key].dataType.simpleString()
    if kind not in _state.KEY_TYPES:
        raise TypeError(f"key column {key!r} is {kind}; a key must be one of {', '.join(_state.KEY_TYPES)} "
                        "(e.g. the collection day as a date)")
    return kind


def checkpoint_status(spark: Any, checkpoint: str) -> tuple[str | None, int]:
    """(the streaming query id recorded in ``checkpoint``, or None when it has none yet; the
    last batch id in its commit log, or -1), read through Hadoop's file system API (any file
    system Spark can checkpoint to)."""
    jvm = spark._jvm
    Path = jvm.org.apache.hadoop.fs.Path
    root = Path(checkpoint)
    fs = root.getFileSystem(spark._jsc.hadoopConfiguration())
    query_id = None
    meta = Path(root, "metadata")
    if fs.exists(meta):
        stream = fs.open(meta)
        try:
            text = jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8")
        finally:
            stream.close()
        try:
            query_id = str(json.loads(text.splitlines()[0])["id"])
        except (ValueError, KeyError, IndexError, TypeError):
            raise ValueError(f"checkpoint {checkpoint}: its metadata file is not Spark's (no query id)") from None
    last = -1
    commits = Path(root, "commits")
    if fs.exists(commits):
        for status in fs.listStatus(commits):
            name = status.getPath().getName()
            if name.isdigit():
                last = max(last, int(name))
    return query_id, last


def _check_pairing(current: _state.StreamFile | None, query_id: str | None, last_commit: int,
                   directory: str, checkpoint: str) -> None:
    """ValueError unless the states of ``directory`` and Spark's ``checkpoint`` belong to one
    stream: Spark commits batch b after our commit of b, so ours is the checkpoint's or one ahead."""
    mine = current.batch_id if current is not None else -1
    if mine < 0:
        if last_commit >= 0:
            raise ValueError(f"checkpoint {checkpoint} has committed micro-batches 0..{last_commit} that the state "
                             f"directory {directory} never counted (a new or emptied state directory with an old "
                             "checkpoint): they would be lost; use a new checkpoint with a new state directory")
        return
    if query_id is None:
        raise ValueError(f"the state directory {directory} holds micro-batches 0..{mine} of a streaming query but "
                         f"checkpoint {checkpoint} is new: Spark would replay the source from its start and count it "
                         "twice; use the checkpoint the states were written with, or a new state directory")
    if current is not None and current.query_id is not None and query_id != current.query_id:
        raise ValueError(f"the state directory {directory} was written by streaming query {current.query_id}, "
                         f"checkpoint {checkpoint} belongs to query {query_id}; use the checkpoint the states were "
                         "written with, or a new state directory")
    if not last_commit <= mine <= last_commit + 1:
        raise ValueError(f"the state directory {directory} holds micro-batches up to {mine} but checkpoint "
                         f"{checkpoint} committed up to {last_commit}: they are not one stream's (restored from "
                         "different times?); use matching copies, or a new state directory and checkpoint")


def aggregate_batch(df: Any, column: str | None, oracle: Any, key: str | None,
                    key_type: str | None) -> tuple[list[tuple[Any, Any]], int]:
    """([(key JSON value or None, aggregator with its ``spark`` record)], rows with a null key)
    of one micro-batch. With a key: one Spark job counts the rows per key value (the nulls too),
    then each value's rows are aggregated by :func:`aggregate_any` (the batch is persisted for
    those jobs)."""
    if key is None:
        return [(None, aggregate_any(df, column, oracle))], 0
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    col = F.col(quoted(key))
    df.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        groups = run_job(f"counting the rows per key {key!r}",
                         lambda: df.groupBy(col.alias("key")).count().collect())
        unkeyed = sum(int(count) for value, count in groups if value is None)
        out = []
        for value, count in sorted(((v, int(c)) for v, c in groups if v is not None), key=lambda vc: vc[0]):
            agg = aggregate_any(df.where(col == F.lit(value)), column, oracle)
            if agg.spark.rows != count:  # the batch changed between two reads of it: not replayable
                raise RuntimeError(f"key {key!r}: the micro-batch gave {count} rows to count and {agg.spark.rows} to "
                                   "aggregate; exactly-once aggregation needs a deterministic, replayable source")
            out.append((_state.key_to_json(value, key_type), agg))
        return out, unkeyed
    finally:
        df.unpersist()


def aggregate_files(spark: Any, checkpoint: _stream_files.Checkpoint, batch_id: int, column: str | None,
                    oracle: Any) -> Any:
    """The aggregator of micro-batch ``batch_id`` of a plain Parquet file stream, read from the
    files the checkpoint names for it, as :func:`aggregate_reports` reads Parquet files (each
    file's configuration checked); None when the checkpoint or a file is not as expected (the
    caller takes the DataFrame route, which reads the same rows)."""
    from ._parquet import list_pieces

    if _stream_files.skips_bad_files(spark):  # Spark would skip a file pyarrow refuses
        return None
    files = checkpoint.files(batch_id)
    pieces = list_pieces(files, oracle, column) if files is not None else None
    return aggregate_pieces(spark, pieces, column, oracle) if pieces is not None else None


class _Batch:
    """The ``foreachBatch`` function: aggregate one micro-batch, then merge it and its id into
    the state directory under the lock, unless the states already hold that id (a replay).
    ``checkpoint`` is given for a plain Parquet file stream without a key: its micro-batches
    are read from their files."""

    def __init__(self, directory: str, column: str | None, oracle: Any, key: str | None,
                 key_type: str | None, on_malformed: str, config: dict[str, Any],
                 checkpoint: _stream_files.Checkpoint | None = None) -> None:
        self.directory, self.column, self.oracle = directory, column, oracle
        self.key, self.key_type, self.on_malformed, self.config = key, key_type, on_malformed, config
        self.cls = type(oracle.aggregator())
        self.checkpoint = checkpoint

    def aggregate(self, df: Any, batch_id: int) -> tuple[list[tuple[Any, Any]], int]:
        """What :func:`aggregate_batch` gives, by the batch's files where they are known."""
        if self.checkpoint is not None:
            agg = aggregate_files(df.sparkSession, self.checkpoint, batch_id, self.column, self.oracle)
            if agg is not None:
                return [(None, agg)], 0
        return aggregate_batch(df, self.column, self.oracle, self.key, self.key_type)

    def current(self) -> _state.StreamFile:
        found = _state.read(self.directory)
        if found is None:
            raise RuntimeError(f"the stream state file {_state.state_path(self.directory)} disappeared while the "
                               "stream ran; nothing was counted from this micro-batch")
        _state.check_config(found.config, self.config, self.directory)
        return found

    def __call__(self, df: Any, batch_id: int) -> None:
        batch_id = int(batch_id)
        if self.current().batch_id >= batch_id:
            return  # replayed after a failure: already in the states
        parts, unkeyed = self.aggregate(df, batch_id)
        malformed = unkeyed + sum(agg.spark.malformed for _, agg in parts)
        what = f"column {self.column!r}" if self.column is not None else "the report columns"
        if malformed and self.on_malformed == "raise":
            rows = unkeyed + sum(agg.spark.rows for _, agg in parts)
            raise ValueError(f"{what}: micro-batch {batch_id} has {malformed} malformed rows of {rows} (null, wrong "
                             "length, out of the protocol's range, or a null key); nothing of it was counted. Fix "
                             "the source or use on_malformed='count'")
        query_id = df.sparkSession.sparkContext.getLocalProperty("sql.streaming.queryId")
        commit(self.directory, self, batch_id, query_id, parts, unkeyed)


def commit(directory: str, batch: _Batch, batch_id: int, query_id: str | None,
           parts: list[tuple[Any, Any]], unkeyed: int) -> None:
    """Merge ``parts`` and ``batch_id`` into the state file, atomically, under the lock."""
    with _state.locked(directory):
        current = batch.current()
        if current.batch_id >= batch_id:
            return
        if query_id and current.query_id not in (None, query_id) and current.batch_id >= 0:
            raise RuntimeError(f"the state directory {directory} was written by streaming query "
                               f"{current.query_id}, not by this one ({query_id}); nothing was counted")
        for key, agg in parts:
            entry = current.entries.get(key)
            if entry is None:
                current.entries[key] = _state.Entry(agg.to_bytes(), agg.spark.rows, agg.spark.malformed)
                continue
            merged = batch.cls.from_bytes(entry.blob)
            merged.merge(agg)
            current.entries[key] = _state.Entry(merged.to_bytes(), entry.rows + agg.spark.rows,
                                                entry.malformed + agg.spark.malformed)
        current.unkeyed += unkeyed
        current.batch_id = batch_id
        current.query_id = query_id or current.query_id
        _state.remove_stale_temporaries(directory)
        _state.write(directory, current)


def aggregate_stream(df: Any, column: str | None, oracle: Any, *, state: Any, checkpoint: Any,
                     key: str | None = None, on_malformed: str = "count") -> Any:
    """Aggregate a stream of LDP reports continuously into merged aggregator states kept in
    the directory ``state``, each micro-batch counted exactly once across failures and restarts.

    Each micro-batch is aggregated on the executors by the routes of :func:`aggregate_reports`:
    a plain Parquet file stream without a key (``spark.readStream.parquet(dir)``, possibly a
    ``select`` of its columns) by its files, which the checkpoint names for each batch id, read
    with pyarrow as for Parquet paths; any other stream through the DataFrame Spark hands over
    (count-table states counted in the JVM by dpnoise's helper where it loads, else Spark's
    groupBy or ``mapInArrow``). It is merged into the states together with its batch id, in one
    atomic replacement of one file (written to a temporary file, fsynced, renamed over the old
    one, directory fsynced). A batch that Spark replays after a failure has an id the states
    already hold, and is skipped. Read the states with :func:`stream_state`, at any time.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        A streaming DataFrame of reports (any replayable source, e.g.
        ``spark.readStream.schema(...).parquet(dir)``), the report column as for
        :func:`aggregate_reports`.
    column : str or None
        The struct column of the reports, or None when the report fields are top-level columns.
    oracle : FrequencyOracle, heavy-hitters configuration, or a client of one
        The configuration of the reports.
    state : str or os.PathLike
        A local directory (created if missing) where the merged states are kept; it belongs to
        this stream: a directory written for another configuration is refused.
    checkpoint : str or os.PathLike
        Spark's checkpoint location for the query; restart with the same one and the same
        ``state``.
    key : str, optional
        A column (integer, string or date, e.g. the collection day) giving one aggregator per
        value. Rows whose key is null are counted as malformed.
    on_malformed : {"count", "raise"}, default "count"
        Malformed rows (null, wrong length, out of the protocol's range, a null key):
        ``"count"`` leaves them out and counts them in the states; ``"raise"`` fails the query
        on the first micro-batch holding one, before anything of it is merged.

    Returns
    -------
    pyspark.sql.streaming.StreamingQuery
        The running query (``stop()`` it, or ``processAllAvailable()`` then stop it).

    Raises
    ------
    TypeError
        A DataFrame, column, oracle, path or key of the wrong kind.
    ValueError
        A DataFrame that is not streaming, a report column that does not fit the oracle, an
        unknown key column, a state directory written for another configuration or holding a
        corrupt or truncated state file (left untouched), or a checkpoint that is not the one
        the states were written with. A micro-batch read by its files fails the query with a
        ValueError when a file carries another configuration (nothing of it is counted).

    Notes
    -----
    The states live on the driver's file system (a local disk or a mount with POSIX rename);
    the checkpoint anywhere Spark can checkpoint to. Exactly once holds for sources whose
    replayed micro-batches hold the same rows (files, Kafka; not ``rate`` or sockets).
    docs/scaling.md, "Continuous collection", gives the failure model.
    """
    from ._arrow import config_json
    from ._checks import check_dataframe, check_report_column

    check_dataframe(df)
    if not df.isStreaming:
        raise ValueError("df is not a streaming DataFrame: aggregate a static one with aggregate_reports")
    if on_malformed not in ON_MALFORMED:
        raise ValueError(f"on_malformed must be one of {ON_MALFORMED}, got {on_malformed!r}")
    oracle = protocol_of(oracle)
    check_report_column(df, column, oracle)
    key_type = _key_type(df, key, column)
    directory = os.path.abspath(_check_path(state, "state"))
    location = _check_path(checkpoint, "checkpoint")
    config = {"oracle": config_json(oracle), "column": column, "key": key, "key_type": key_type}
    if os.path.exists(directory) and not os.path.isdir(directory):
        raise ValueError(f"state must be a directory, {directory} is a file")
    os.makedirs(directory, exist_ok=True)
    spark = df.sparkSession
    with _state.locked(directory):
        current = _state.read(directory)
        if current is not None:
            _state.check_config(current.config, config, directory)
            _state.load_entries(current, oracle, directory)  # every state loads: none corrupt
        query_id, last_commit = checkpoint_status(spark, location)
        _check_pairing(current, query_id, last_commit, directory, location)
        if current is None:
            fresh = _state.StreamFile(config=config)
            if key is None:
                empty = oracle.aggregator()
                fresh.entries[None] = _state.Entry(empty.to_bytes(), 0, 0)
            _state.write(directory, fresh)
    files = _stream_files.Checkpoint(spark, location) if key is None and _stream_files.plain_parquet_stream(df) \
        else None
    writer = df.writeStream.foreachBatch(_Batch(directory, column, oracle, key, key_type, on_malformed, config,
                                                files))
    return writer.option("checkpointLocation", location).start()


def stream_state(state: Any, oracle: Any) -> Any:
    """The merged aggregator(s) of a stream's state directory, as last committed.

    Safe while the query runs: the state file is replaced atomically, so this reads one
    committed version whole (never a torn one), and checks it (its checksum, and each
    aggregator state's).

    Parameters
    ----------
    state : str or os.PathLike
        The ``state`` directory given to :func:`aggregate_stream`.
    oracle : FrequencyOracle, heavy-hitters configuration, or a client of one
        The configuration the states must be of.

    Returns
    -------
    Aggregator or dict
        Without a key: the aggregator of every report counted so far. With a key: a dict from
        key value (int, str or ``datetime.date``, as the key column's type) to its aggregator,
        in key order. Each aggregator's ``stream`` attribute is a :class:`StreamInfo` (last
        batch id, rows, malformed rows, null keys).

    Raises
    ------
    TypeError
        A path or oracle of the wrong kind.
    ValueError
        No state file in the directory, a corrupt or truncated one (left untouched), or states
        of another configuration than ``oracle``.
    """
    oracle = protocol_of(oracle)
    directory = os.path.abspath(_check_path(state, "state"))
    found = _state.read(directory) if os.path.isdir(directory) else None
    if found is None:
        raise ValueError(f"{directory} holds no stream state (aggregate_stream writes one when it starts)")
    _state.check_oracle(found.config, oracle, directory)
    key_type = found.config.get("key_type")
    out = {}
    for key, agg, entry in _state.load_entries(found, oracle, directory):
        value = _state.key_from_json(key, key_type)
        agg.stream = StreamInfo(found.batch_id, value, entry.rows, entry.malformed, found.unkeyed)
        out[key] = (value, agg)
    if found.config.get("key") is None:
        if None not in out:
            raise _state.CorruptState(f"the stream state file {_state.state_path(directory)} has no aggregator; it "
                                      "was left as it is")
        return out[None][1]
    return dict(sorted(out.values(), key=lambda va: va[0]))
