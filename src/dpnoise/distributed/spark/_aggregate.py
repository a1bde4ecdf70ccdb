"""aggregate_reports: one aggregator per partition in the C++ core over Arrow batches
(``mapInArrow``), its serialised state emitted, the states tree-merged, loaded at the driver."""
from __future__ import annotations

import pickle
from typing import Any, Callable, Tuple

from ._checks import check_on_malformed, check_report_column
from ._report_rows import protocol_of

_STATE_SCHEMA = "state binary, malformed bigint, rows bigint"


def oracle_factory(oracle: Any) -> Callable[[], Any]:
    """A picklable zero-argument function giving back ``oracle`` on an executor: an LDP
    configuration travels as its JSON (``to_json``; rebuilt and checked there), anything else
    by pickle."""
    from ...ldp import Configuration

    if isinstance(oracle, Configuration):
        return _Rebuild(oracle.to_json())
    blob = pickle.dumps(oracle)
    return lambda: pickle.loads(blob)


class _Rebuild:
    def __init__(self, text: str) -> None:
        self.text = text

    def __call__(self) -> Any:
        from ...ldp import Configuration

        return Configuration.from_json(self.text)


class _Merger:
    """treeReduce's function: load two (state, malformed, rows) triples with the aggregator
    class's ``from_bytes`` (checked, versioned), merge, serialise again."""

    def __init__(self, aggregator_class: Any) -> None:
        self.cls = aggregator_class

    def load(self, state: Any) -> Any:
        return self.cls.from_bytes(bytes(state))

    def __call__(self, a: Tuple[bytes, int, int], b: Tuple[bytes, int, int]) -> Tuple[bytes, int, int]:
        left = self.load(a[0])
        left.merge(self.load(b[0]))
        return left.to_bytes(), a[1] + b[1], a[2] + b[2]


def partition_states(df: Any, column: str, oracle: Any) -> Any:
    """A DataFrame of one row per partition: (serialised aggregator state, malformed rows,
    rows seen)."""
    import pyarrow as pa

    from ._arrow import add_rows, arrow_to_rows

    make = oracle_factory(oracle)

    def aggregate_partition(batches: Any) -> Any:
        orc = make()
        agg = orc.aggregator()
        malformed = rows_seen = 0
        for batch in batches:
            rows, n_good, n_bad = arrow_to_rows(orc, batch.column(0))
            rows_seen += n_good + n_bad
            malformed += n_bad + add_rows(agg, orc, rows, n_good)
        yield pa.RecordBatch.from_pydict({"state": [agg.to_bytes()], "malformed": [malformed],
                                          "rows": [rows_seen]},
                                         schema=pa.schema([("state", pa.binary()), ("malformed", pa.int64()),
                                                           ("rows", pa.int64())]))

    return df.select(column).mapInArrow(aggregate_partition, _STATE_SCHEMA)


class SparkAggregate:
    """What :func:`aggregate_reports` found besides the aggregator: ``malformed`` rows (counted,
    never silently dropped), ``rows`` seen, ``partitions``."""

    def __init__(self, malformed: int, rows: int, partitions: int) -> None:
        self.malformed, self.rows, self.partitions = malformed, rows, partitions

    def __repr__(self) -> str:
        return f"SparkAggregate(rows={self.rows}, malformed={self.malformed}, partitions={self.partitions})"


def aggregate_reports(df: Any, column: str, oracle: Any, *, on_malformed: str = "raise",
                      depth: int = 2) -> Any:
    """The aggregator of every report in ``df[column]`` (a struct column of ``oracle``'s report
    arrays, see :func:`reports_to_dataframe`): each partition builds an aggregator over its
    Arrow batches and emits its serialised state; the states are merged by ``treeReduce``
    (``depth``) and loaded at the driver. The result equals, bit for bit, the single-process
    aggregator of the same reports (merging is exact integer addition), whatever the
    partitioning and however often a task is retried (each partition's state is counted once).

    Malformed rows (null, wrong length, out of the protocol's range) are counted on the
    executors; ``on_malformed="raise"`` (default) then raises ValueError naming the column and
    the count; ``"skip"`` leaves them out and reports the count on the returned aggregator's
    ``spark`` attribute (a :class:`SparkAggregate`). An empty DataFrame raises ValueError."""
    check_on_malformed(on_malformed)
    protocol_of(oracle)
    check_report_column(df, column, oracle)
    if not isinstance(depth, int) or isinstance(depth, bool) or depth < 1:
        raise ValueError(f"depth must be an int >= 1, got {depth!r}")
    states = partition_states(df, column, oracle)
    partitions = states.rdd.getNumPartitions()
    tuples = states.rdd.map(lambda r: (bytes(r[0]), int(r[1]), int(r[2])))
    if partitions == 0:
        raise ValueError(f"column {column!r}: the DataFrame is empty, there are no reports to aggregate")
    merger = _Merger(type(oracle.aggregator()))
    state, malformed, rows = tuples.treeReduce(merger, depth=depth)
    if rows == 0:
        raise ValueError(f"column {column!r}: the DataFrame is empty, there are no reports to aggregate")
    if malformed and on_malformed == "raise":
        raise ValueError(f"column {column!r}: {malformed} of {rows} report rows are malformed (null, wrong "
                         f"length or out of the protocol's range); fix them or pass on_malformed='skip'")
    agg = merger.load(state)
    agg.spark = SparkAggregate(malformed, rows, partitions)
    return agg
