"""privatize_column: raw items -> LDP reports on the executors (simulations and benchmark
harnesses; real devices privatise on-device and send only their reports)."""
from __future__ import annotations

from typing import Any

from ._aggregate import oracle_factory


class _PartitionRandomness:
    """Partition i's generator: child i spawned from a 256-bit key drawn once, at the driver,
    from the client's generator (via a spawned child: a secure parent gives a secret key, a
    seeded parent a reproducible one). ChaCha20's spawn is a pseudo-random function of the key
    (bit_generator.ChaCha20.spawn), so every attempt of partition i, and every later action on
    the same DataFrame, draws the same reports: a retry never releases a user's item twice
    with fresh randomness, and the result does not depend on scheduling. The key travels in the
    task closure (plain ChaCha20 keyed from it: the library labels such generators not secure,
    because the key is known outside the OS): fine for simulations, not for devices."""

    def __init__(self, key: int) -> None:
        self.key = key

    def generator(self, partition: int) -> Any:
        from ...generator import default_rng

        return default_rng(self.key).spawn(partition + 1)[partition]


def privatize_column(df: Any, column: str, client: Any, *, output: str = "report") -> Any:
    """A DataFrame with one column ``output`` (default ``"report"``): the ε-LDP report of each
    row's item in ``df[column]`` (integers in [0, domain_size)), privatised by ``client``'s
    protocol on the executors over Arrow batches, in the row layout :func:`aggregate_reports`
    reads. The raw column is not carried over. Partition i uses a generator derived from one
    key drawn now from ``client.rng`` (see _PartitionRandomness): a retried task or a second
    action recomputes exactly the same reports. The input's partitioning must itself be
    deterministic (e.g. not the output of a shuffle without an ordering) for that to hold.

    A null or out-of-range item fails the job with ValueError naming the column and the number
    of such rows in the batch (never a value)."""
    import numpy as np
    import pyarrow as pa
    from pyspark.sql import types as T

    from ...ldp import Client
    from ._arrow import rows_to_arrow, struct_type
    from ._checks import check_dataframe
    from ._report_rows import spark_schema_ddl, to_rows

    check_dataframe(df)
    if not isinstance(client, Client):
        raise TypeError(f"client must be a dpnoise.ldp Client (oracle.client(...)), got {type(client).__name__}")
    if not isinstance(column, str) or not isinstance(output, str):
        raise TypeError("column and output must be str")
    if column not in df.columns:
        raise ValueError(f"the DataFrame has no column {column!r} (columns: {df.columns})")
    dtype = df.schema[column].dataType
    if not isinstance(dtype, (T.LongType, T.IntegerType, T.ShortType, T.ByteType)):
        raise TypeError(f"column {column!r} must hold integer items in [0, domain_size), got {dtype.simpleString()}")
    protocol = client.protocol
    key_words = client.rng.spawn(1)[0].random_raw(4)
    key = int.from_bytes(np.asarray(key_words, dtype="<u8").tobytes(), "little")
    randomness = _PartitionRandomness(key)
    make = oracle_factory(protocol)
    d = protocol.domain_size
    out_type = struct_type(protocol)

    def privatize_partition(batches: Any) -> Any:
        from pyspark import TaskContext

        proto = make()
        rng = randomness.generator(TaskContext.get().partitionId())
        cl = proto.client(rng, allow_insecure=True)  # key-derived ChaCha20 (see _PartitionRandomness)
        for batch in batches:
            items = batch.column(0)
            nulls = items.null_count
            values = items.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
            bad = int(((values < 0) | (values >= d)).sum())
            if bad:
                raise ValueError(f"column {column!r}: {bad} rows of a batch ({nulls} null) are not items in "
                                 f"[0, {d}) (domain_size)")
            reports = cl.privatize(values)
            rows = to_rows(proto, reports.data, reports.n)
            yield pa.RecordBatch.from_arrays([rows_to_arrow(proto, rows, reports.n)],
                                             schema=pa.schema([pa.field(output, out_type)]))

    return df.select(column).mapInArrow(privatize_partition, spark_schema_ddl(protocol, output))
