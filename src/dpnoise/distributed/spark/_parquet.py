"""Parquet input read by the executors themselves, with pyarrow: no JVM -> Python conversion.

The tasks are the files' row groups (as Petastorm plans them): the driver lists the files (a
path, a list of paths, or the files of a DataFrame that is a plain Parquet scan), reads each
footer (row groups, their row counts, the configuration in the schema metadata), and deals the
(file, row group) pieces to ``tasks`` partitions of ``sparkContext.parallelize``, balanced by
rows (longest first, each to the least loaded task). Each task opens its files with pyarrow
(``pyarrow.fs``: local, HDFS, S3, GCS, as pyarrow supports them), reads only the report
column, and ingests the row groups into one aggregator.
"""
from __future__ import annotations

import heapq
from collections.abc import Sequence
from typing import Any

#: (file URI or path, row group, rows)
Piece = tuple[str, int, int]


def unproject_columns(plan: Any) -> Any:
    """``plan`` without its outer projections of columns as they are (``.select("report")``):
    the plan they read from, or None when a projection computes anything (a JVM plan node)."""
    while plan.getClass().getSimpleName() == "Project":
        projections = plan.projectList()
        for i in range(projections.size()):
            if projections.apply(i).getClass().getSimpleName() != "AttributeReference":
                return None
        plan = plan.child()
    return plan


def plain_parquet_files(df: Any) -> list[str] | None:
    """The files of ``df`` when it is, conservatively, a plain Parquet scan: its analyzed plan is
    one Parquet relation (``spark.read.parquet(...)``), or a projection of its columns as they
    are (``.select("report")``), with no partition columns or buckets. None otherwise (any
    filter, join, limit, computed column, ...): the caller then goes through Spark."""
    try:
        plan = unproject_columns(df._jdf.queryExecution().analyzed())
        if plan is None or plan.getClass().getSimpleName() != "LogicalRelation" or plan.isStreaming():
            return None
        relation = plan.relation()
        if relation.getClass().getSimpleName() != "HadoopFsRelation":
            return None
        if relation.fileFormat().getClass().getSimpleName() != "ParquetFileFormat":
            return None
        if relation.partitionSchema().size() != 0 or relation.bucketSpec().isDefined():
            return None
        return sorted(df.inputFiles())
    except Exception:
        return None


def local_files(paths: Sequence[str]) -> list[str] | None:
    """The files Spark would read for local ``paths`` (no URI scheme): a file as it is, every
    file under a directory except hidden ones (a path component starting with ``_`` or ``.``,
    as Spark skips them), listed by pyarrow without a Spark job. None when a path has a scheme,
    does not exist, or a directory is partitioned (``key=value`` subdirectories): Spark's reader
    then decides."""
    from pyarrow import fs

    local = fs.LocalFileSystem()
    files: list[str] = []
    for path in paths:
        if "://" in path or path.startswith("file:"):
            return None
        info = local.get_file_info(path)
        if info.type == fs.FileType.File:
            files.append(info.path)
        elif info.type == fs.FileType.Directory:
            for entry in local.get_file_info(fs.FileSelector(info.path, recursive=True)):
                parts = entry.path[len(info.path):].strip("/").split("/")
                if any(p.startswith(("_", ".")) for p in parts):
                    continue
                if entry.type == fs.FileType.Directory and "=" in entry.base_name:
                    return None
                if entry.type == fs.FileType.File:
                    files.append(entry.path)
        else:
            return None
    return sorted(files)


def open_parquet(uri: str) -> Any:
    """A pyarrow ParquetFile for a local path or a URI that pyarrow.fs understands."""
    import pyarrow.parquet as pq
    from pyarrow import fs

    if "://" in uri or uri.startswith("file:"):
        filesystem, path = fs.FileSystem.from_uri(uri)
    else:
        filesystem, path = fs.LocalFileSystem(), uri
    return pq.ParquetFile(filesystem.open_input_file(path))


def list_pieces(files: Sequence[str], oracle: Any, column: str | None) -> list[Piece] | None:
    """Every (file, row group, rows) of ``files``, after checking each file's configuration
    metadata against ``oracle`` (ValueError naming both). None when a file cannot be opened by
    pyarrow or lacks the report column (the caller then reads through Spark)."""
    from ._arrow import check_config, schema_config
    from ._report_rows import layout

    pieces: list[Piece] = []
    wanted = [column] if column is not None else [f.name for f in layout(oracle)]
    for uri in files:
        try:
            pf = open_parquet(uri)
            schema = pf.schema_arrow
        except Exception:
            return None
        if any(name not in schema.names for name in wanted) or not _layout_types(schema, oracle, column):
            return None
        check_config(schema_config(schema), oracle, f"the Parquet file {uri!r}")
        meta = pf.metadata
        pieces.extend((uri, rg, meta.row_group(rg).num_rows) for rg in range(meta.num_row_groups))
    return pieces


def check_input_files(df: Any, oracle: Any) -> None:
    """ValueError naming both configurations when a Parquet file that ``df`` reads, through any
    filter or projection (``df.inputFiles()``), carries another configuration in its metadata.
    Files pyarrow cannot open (another format or scheme) and files without that metadata are
    not checked: a plan that is not a plain scan keeps no schema metadata of its files."""
    from ._arrow import check_config, schema_config

    try:
        files = df.inputFiles()
    except Exception:
        return
    for uri in files:
        try:
            schema = open_parquet(uri).schema_arrow
        except Exception:
            continue
        check_config(schema_config(schema), oracle, f"the Parquet file {uri!r}")


def _layout_types(schema: Any, oracle: Any, column: str | None) -> bool:
    """Whether the file's report fields have the Arrow types of the row layout (by name; a
    large_binary for a binary is fine). Otherwise Spark's reader and its schema check decide."""
    import pyarrow as pa

    from ._arrow import struct_type

    if column is not None:
        got = schema.field(column).type
        if not pa.types.is_struct(got):
            return False
        have = {got.field(i).name: got.field(i).type for i in range(got.num_fields)}
    else:
        have = {f.name: f.type for f in schema}
    want = struct_type(oracle)
    for i in range(want.num_fields):
        f = want.field(i)
        t = have.get(f.name)
        if t is None or not (t == f.type or (pa.types.is_binary(f.type) and pa.types.is_large_binary(t))):
            return False
    return True


def deal(pieces: Sequence[Piece], tasks: int) -> list[list[Piece]]:
    """``pieces`` dealt to at most ``tasks`` lists of about equal rows (largest first, each to
    the least loaded list: within 4/3 of the best, Graham 1969)."""
    tasks = max(1, min(tasks, len(pieces)))
    heap = [(0, i) for i in range(tasks)]
    out: list[list[Piece]] = [[] for _ in range(tasks)]
    for piece in sorted(pieces, key=lambda p: -p[2]):
        rows, i = heapq.heappop(heap)
        out[i].append(piece)
        heapq.heappush(heap, (rows + piece[2], i))
    return [sorted(task) for task in out if task]


def read_pieces(pieces: Sequence[Piece], columns: list[str]) -> Any:
    """The row groups of ``pieces`` as pyarrow Tables, one at a time (a file opened once)."""
    current, pf = None, None
    for uri, rg, _ in pieces:
        if uri != current:
            pf, current = open_parquet(uri), uri
        assert pf is not None  # opened on the first piece
        yield pf.read_row_group(rg, columns=columns, use_threads=False)
