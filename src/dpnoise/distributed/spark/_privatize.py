"""privatize_column: raw items -> LDP reports on the executors (simulations and benchmark
harnesses; real devices privatise on-device and send only their reports)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ._aggregate import oracle_factory
from ._identifiers import quoted


class _PartitionRandomness:
    """Partition i's generator: child i of a 256-bit key drawn once, at the driver, from the
    client's generator (via a spawned child: a secure parent gives a secret key, a seeded parent
    a reproducible one). Child i is exactly ``default_rng(key).spawn(i + 1)[i]`` (ChaCha20's
    spawn keys child i with the first 32 bytes of block i of the key's reserved stream
    ``_core.SPAWN_STREAM``, bit_generator.ChaCha20.spawn), computed here in O(1) from that one
    block instead of spawning i + 1 children. So every attempt of partition i, and every later
    action on the same DataFrame, draws the same reports: a retry never releases a user's item
    twice with fresh randomness, and the result does not depend on scheduling. The key travels
    in the task closure (plain ChaCha20 keyed from it: the library labels such generators not
    secure, because the key is known outside the OS): fine for simulations, not for devices."""

    def __init__(self, key: int) -> None:
        self.key = key

    def child_key(self, partition: int) -> int:
        from ... import _core

        words = _core.chacha20_stream_words(self.key.to_bytes(32, "little"), _core.SPAWN_STREAM, partition, 1)
        return int.from_bytes(np.asarray(words[:8], dtype="<u4").tobytes(), "little")

    def generator(self, partition: int) -> Any:
        from ...generator import default_rng

        return default_rng(self.child_key(partition))


def _check_client(client: Any) -> Any:
    """The configuration of ``client`` (a frequency-oracle or heavy-hitters client, anything
    made by ``configuration.client(...)`` with a row layout); TypeError naming the argument."""
    from ...generator import Generator
    from ._report_rows import layout, protocol_of

    if not hasattr(client, "privatize") or not isinstance(getattr(client, "rng", None), Generator):
        raise TypeError(f"client must be a dpnoise.ldp client (oracle.client(...)), got {type(client).__name__}")
    try:
        protocol = protocol_of(client)
        layout(protocol)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"client: {exc}") from None
    return protocol


def _check_items(df: Any, column: str, protocol: Any) -> None:
    """Before any job: the column's Spark type fits the configuration's items, and (one Spark
    aggregate) no row is null or out of range. ValueError/TypeError naming the column and the
    number of bad rows, never a value."""
    from pyspark.sql import functions as F, types as T

    dtype = df.schema[column].dataType
    integral = isinstance(dtype, (T.LongType, T.IntegerType, T.ShortType, T.ByteType))
    col = F.col(quoted(column))
    kind, bound = protocol.item_domain()  # what one item is, as the configuration declares it
    if kind in ("str", "bytes"):
        want = T.StringType if kind == "str" else T.BinaryType
        if not isinstance(dtype, want):
            raise TypeError(f"column {column!r} must hold {kind} items ({'string' if kind == 'str' else 'binary'}), "
                            f"got {dtype.simpleString()}")
        bad = col.isNull()
        if bound is not None:
            bad = bad | (F.octet_length(col) > bound)
        what = "null" if bound is None else f"null or longer than {bound} bytes (max_length)"
    elif kind != "int" or bound is None:
        raise TypeError(f"client: privatize_column takes integer or string items; this configuration's items "
                        f"are {kind} values (privatize them with the client in Python)")
    else:
        if not integral:
            raise TypeError(f"column {column!r} must hold integer items in [0, {bound}), got {dtype.simpleString()}")
        bad = col.isNull() | (col < 0)
        if bound <= (1 << 63) - 1:
            bad = bad | (col >= F.lit(bound).cast("bigint"))
        what = f"null or not items in [0, {bound})"
    count = df.select(F.sum(F.when(bad, 1).otherwise(0))).first()[0]
    if count:
        raise ValueError(f"column {column!r}: {int(count)} rows are {what}")


def privatize_column(df: Any, column: str, client: Any, *, output: str = "report") -> Any:
    """A DataFrame with one column ``output`` (default ``"report"``): the ε-LDP report of each
    row's item in ``df[column]``, privatised by ``client``'s configuration on the executors over
    Arrow batches, in the row layout :func:`aggregate_reports` reads, with the configuration in
    the column's Spark metadata.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
    column : str
        The items: integers in [0, domain_size) for a frequency oracle; for a heavy-hitters
        client, integers in [0, 2^item_bits), or strings / binary for a str / bytes
        configuration.
    client : a frequency-oracle or heavy-hitters client (``configuration.client(rng)``)
        Partition i uses a generator derived from one key drawn now from ``client.rng`` (see
        _PartitionRandomness): a retried task or a second action recomputes exactly the same
        reports. The input's partitioning must itself be deterministic (e.g. not the output of
        a shuffle without an ordering) for that to hold.
    output : str

    Returns
    -------
    pyspark.sql.DataFrame
        The lazily computed reports (one row per input row).

    Raises
    ------
    TypeError
        ``client`` is not a client (e.g. a configuration), or the column's type does not fit.
    ValueError
        A null or out-of-range item (found by one Spark aggregate before the reports are
        planned): names the column and the number of such rows, never a value.
    """
    import pyarrow as pa

    from ._arrow import rows_to_arrow, struct_type
    from ._checks import check_dataframe
    from ._convert import with_config
    from ._report_rows import spark_schema_ddl, to_rows

    check_dataframe(df)
    protocol = _check_client(client)
    if not isinstance(column, str) or not isinstance(output, str):
        raise TypeError("column and output must be str")
    if column not in df.columns:
        raise ValueError(f"the DataFrame has no column {column!r} (columns: {df.columns})")
    _check_items(df, column, protocol)
    key_words = client.rng.spawn(1)[0].random_raw(4)
    key = int.from_bytes(np.asarray(key_words, dtype="<u8").tobytes(), "little")
    randomness = _PartitionRandomness(key)
    make = oracle_factory(protocol)
    integer_items = protocol.item_domain()[0] == "int"
    out_type = struct_type(protocol)

    def privatize_partition(batches: Any) -> Any:
        from pyspark import TaskContext

        proto = make()
        context = TaskContext.get()
        assert context is not None  # inside a Spark task
        rng = randomness.generator(context.partitionId())
        cl = proto.client(rng, allow_insecure=True)  # key-derived ChaCha20 (see _PartitionRandomness)
        for batch in batches:
            items = batch.column(0)
            if items.null_count:
                raise ValueError(f"column {column!r}: {items.null_count} rows of a batch are null")
            if not integer_items:
                values: Any = items.to_pylist()
            else:
                values = items.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
            reports = cl.privatize(values)
            rows = to_rows(proto, reports.data, reports.n)
            yield pa.RecordBatch.from_arrays([rows_to_arrow(proto, rows, reports.n)],
                                             schema=pa.schema([pa.field(output, out_type)]))

    out = df.select(column).mapInArrow(privatize_partition, spark_schema_ddl(protocol, output))
    return with_config(out, output, protocol)
