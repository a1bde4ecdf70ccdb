"""The files of one micro-batch of a plain Parquet file stream, read from the query's checkpoint,
so that :func:`aggregate_stream` aggregates the micro-batch as :func:`aggregate_reports`
aggregates Parquet files (the executors read the row groups with pyarrow) instead of through
the DataFrame Spark hands to ``foreachBatch`` (an RDD of rows, counted by the JVM helper).

Spark's file source (``FileStreamSource``) writes, before a micro-batch runs:

* ``<checkpoint>/sources/0/<n>``: ``v1``, then one JSON line per file it picked in its source
  batch n (``{"path": URI, "timestamp": ..., "batchId": n}``); a compaction batch is written as
  ``<n>.compact`` and holds the entries of every source batch up to n, after which the plain
  files before it may be deleted (``spark.sql.streaming.fileSource.log.compactInterval``);
* ``<checkpoint>/offsets/<b>`` (the write-ahead log): ``v1``, the batch's metadata, then one line
  per source, the file source's ``{"logOffset": n}``: the last source batch in micro-batch b.

Micro-batch b reads the files of source batches end(b-1)+1 .. end(b), with end(-1) = -1: what
``FileStreamSource.getBatch`` reads. Both logs are written once and never rewritten, so a replay
of batch b after a failure finds the same files, and the exactly-once protocol of _stream.py is
unchanged. Anything this module does not recognise (another log version, several sources, a
missing log file, an option that changes how rows are read) gives None: the micro-batch then
goes through the DataFrame route, which reads the same rows more slowly.
"""
from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

from ._parquet import unproject_columns

#: file source options (lower case, as Spark compares them) that only choose which files enter
#: a source batch: the source log records the choice. Any other option (``mergeSchema``,
#: ``ignoreCorruptFiles``, rebase modes, ...) may change the rows Spark reads from a file.
FILE_CHOICE_OPTIONS = frozenset({
    "path", "maxfilespertrigger", "maxbytespertrigger", "latestfirst", "filenameonly", "maxfileage",
    "maxcachedfiles", "discardcachedinputratio", "pathglobfilter", "recursivefilelookup", "modifiedbefore",
    "modifiedafter", "cleansource", "sourcearchivedir",
})

#: session settings under which Spark skips files that pyarrow would refuse to read
_SKIPPING_CONFS = ("spark.sql.files.ignoreCorruptFiles", "spark.sql.files.ignoreMissingFiles")

#: reads a checkpoint file by its path relative to the checkpoint: its text, or None if absent
ReadText = Callable[[str], "str | None"]
#: the file names in a checkpoint directory (relative path), or [] if absent
ListNames = Callable[[str], "list[str]"]


def plain_parquet_stream(df: Any) -> bool:
    """Whether the streaming DataFrame ``df`` is, conservatively, Spark's Parquet file source
    as it is: one ``spark.readStream.parquet(dir)``, possibly with a projection of its columns
    as they are (``.select("report")``), no partition columns, and only options that choose
    files. Anything else (a filter, a computed column, a join, another source) is not."""
    try:
        plan = unproject_columns(df._jdf.queryExecution().analyzed())
        if plan is None or plan.getClass().getSimpleName() != "StreamingRelation":
            return False
        source = plan.dataSource()
        if source.providingClass().getSimpleName() != "ParquetFileFormat" or source.partitionColumns().size():
            return False
        options = source.options().keySet().iterator()
        while options.hasNext():
            if str(options.next()).lower() not in FILE_CHOICE_OPTIONS:
                return False
        return True
    except Exception:  # another Spark's plan classes: not recognised, the DataFrame route
        return False


def skips_bad_files(spark: Any) -> bool:
    """Whether the session makes Spark skip corrupt or missing files (pyarrow would raise)."""
    return any(str(spark.conf.get(key, "false")).strip().lower() == "true" for key in _SKIPPING_CONFS)


def _lines(text: str | None) -> list[str] | None:
    """The lines of a log file after its ``v1`` header; None if absent or of another version."""
    if text is None:
        return None
    lines = text.split("\n")
    return lines[1:] if lines[0] == "v1" else None


def source_end(read: ReadText, batch_id: int) -> int | None:
    """end(batch_id): the file source's last source batch in micro-batch ``batch_id`` (-1 for
    batch_id -1), from the offset log; None when it is not one file source's known format."""
    if batch_id < 0:
        return -1
    lines = _lines(read(f"offsets/{batch_id}"))
    if lines is None:
        return None
    sources = [line for line in lines[1:] if line]  # lines[0]: the batch's metadata
    if len(sources) != 1:
        return None
    if sources[0] == "-":  # the source had no offset yet
        return -1
    try:
        offset = json.loads(sources[0])
    except ValueError:
        return None
    if isinstance(offset, dict):  # FileStreamSourceOffset's JSON; older Sparks wrote the number
        offset = offset.get("logOffset") if len(offset) == 1 else None
    return offset if isinstance(offset, int) and not isinstance(offset, bool) and offset >= -1 else None


def _entries(read: ReadText, names: ListNames, n: int) -> list[str] | None:
    """The file URIs of source batch n, from its own log file or the compaction that holds it."""
    lines = _lines(read(f"sources/0/{n}"))
    if lines is None:
        lines = _lines(read(f"sources/0/{n}.compact"))
    if lines is None:  # compacted into a later batch's file, and its own file deleted
        later = sorted(int(name[:-8]) for name in names("sources/0")
                       if name.endswith(".compact") and name[:-8].isdigit() and int(name[:-8]) > n)
        lines = _lines(read(f"sources/0/{later[0]}.compact")) if later else None
    if lines is None:
        return None
    files = []
    for line in lines:
        if not line:
            continue
        try:
            entry = json.loads(line)
            path, batch = entry["path"], entry["batchId"]
        except (ValueError, KeyError, TypeError):
            return None
        if not isinstance(path, str) or not isinstance(batch, int):
            return None
        if batch == n:
            files.append(path)
    return files


def batch_files(read: ReadText, names: ListNames, batch_id: int) -> list[str] | None:
    """The file URIs micro-batch ``batch_id`` reads, in the source log's order; None when the
    checkpoint does not show them in a format this module knows (the caller then takes the
    DataFrame route)."""
    start, end = source_end(read, batch_id - 1), source_end(read, batch_id)
    if start is None or end is None or end < start:
        return None
    files: list[str] = []
    for n in range(start + 1, end + 1):
        found = _entries(read, names, n)
        if found is None:
            return None
        files.extend(found)
    return files


class Checkpoint:
    """Read access to a query's checkpoint, as :class:`ReadText` / :class:`ListNames` for
    :func:`batch_files`: with Python's own file functions when Spark resolves the location to
    the local file system (no JVM round trip per file), else through Hadoop's file system API
    (wherever Spark can checkpoint)."""

    def __init__(self, spark: Any, location: str) -> None:
        jvm = spark._jvm
        self._jvm = jvm
        self._path = jvm.org.apache.hadoop.fs.Path
        root = self._path(location)
        self._fs = root.getFileSystem(spark._jsc.hadoopConfiguration())
        self._root = self._fs.makeQualified(root)  # as Spark resolves the checkpoint location
        uri = self._root.toUri()
        self.local = str(uri.getPath()) if str(uri.getScheme()) == "file" else None

    def read(self, relative: str) -> str | None:
        if self.local is not None:
            try:
                with open(os.path.join(self.local, relative), encoding="utf-8") as fh:
                    return fh.read()
            except FileNotFoundError:
                return None
        path = self._path(self._root, relative)
        try:
            stream = self._fs.open(path)
        except Exception:  # absent (FileNotFoundException through py4j)
            return None
        try:
            return str(self._jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8"))
        finally:
            stream.close()

    def names(self, relative: str) -> list[str]:
        if self.local is not None:
            try:
                return os.listdir(os.path.join(self.local, relative))
            except FileNotFoundError:
                return []
        path = self._path(self._root, relative)
        if not self._fs.exists(path):
            return []
        return [str(status.getPath().getName()) for status in self._fs.listStatus(path)]

    def files(self, batch_id: int) -> list[str] | None:
        """:func:`batch_files` of ``batch_id`` in this checkpoint."""
        return batch_files(self.read, self.names, batch_id)
