"""The count-table route of :func:`aggregate_reports` for a DataFrame that is not a plain
Parquet scan: when the aggregator's state is a count table over the report fields (its
``_count_table``: Hadamard's signed row sums, GRR's item counts, HCMS's signed cell sums), Spark
itself counts the reports per distinct value of those fields, and only the counts -- at most
the key space, the state's size -- come back to the driver, where they are added to the
aggregator exactly (int64 counts, ``Aggregator._add_counts``). No row crosses into Python.
Two ways to count: dpnoise's JVM helper (_jvm_counts.py: one dense array per partition, up to
2^22 keys), else Spark's own ``groupBy(key).count()`` (a hash aggregation, up to 2^15 keys).

The key is the fields' values in mixed radix (a packed bit: 2 values; a field with ``allowed``
values: their positions; one with a ``bound``: [0, bound)). A row with a null field or a value
outside those ranges gets key -1: the malformed rows, counted by the same aggregation. The
distinct keys are then checked once more with the configuration's own row mask
(``row_validity``, as the ``mapInArrow`` route checks every row), so both routes count the same
rows as malformed and give the same state, bit for bit."""
from __future__ import annotations

from typing import Any

import numpy as np

from ...ldp import PACKED
from ._identifiers import field_path
from ._report_rows import SCALAR, layout

#: the largest key space counted by Spark's groupBy. Its hash aggregation slows with the number of
#: groups: on 4·10^6 Hadamard rows (local[2], warm, docs/scaling.md) 4,096 keys took 1.5-2.0 s,
#: 16,384 keys 2.7-2.8 s, 65,536 keys 3.5-4.8 s and 131,072 keys 5.3-8.7 s, against 3.7-5.3 s
#: for the mapInArrow route in the same runs: beyond 2^15 keys mapInArrow is as fast or faster
MAX_KEYS = 1 << 15


#: (field, number of values) for each report field, in key order
KeySpace = list[tuple[Any, int]]


def key_space(oracle: Any) -> KeySpace | None:
    """(field, number of values) for each report field, or None when the fields are not a
    bounded key space (a row field, a field without a bound) or the aggregator has no count
    table over them. Its size (the product) is the number of keys."""
    proto = oracle  # a configuration: the entry points normalise it
    # the class, not an aggregator: no state allocated to ask
    if getattr(getattr(proto, "aggregator_class", None), "_count_table", None) is None:
        return None
    out = []
    for f in layout(oracle):
        if f.kind == PACKED:
            radix = 2
        elif f.kind == SCALAR and f.spec.allowed is not None:
            radix = len(f.spec.allowed)
        elif f.kind == SCALAR and f.spec.bound is not None:
            radix = f.spec.upper(proto)
        else:
            return None
        out.append((f, radix))
    return out


def size(space: KeySpace) -> int:
    """The number of keys of ``space``."""
    return int(np.prod([radix for _, radix in space], dtype=object))


def _key_column(space: KeySpace, column: str | None) -> Any:
    """The Spark expression of each row's key (a bigint; -1 for a malformed row). Written as one
    SQL expression: one py4j call, where a Column built call by call costs 15-20 ms of round
    trips per aggregation."""
    from pyspark.sql import functions as F

    terms, stride = [], 1
    for f, radix in space:
        c = f"CAST({field_path(column, f.name)} AS BIGINT)"
        if f.kind == SCALAR and f.spec.allowed is not None:
            code = "CASE " + " ".join(f"WHEN {c} = {int(v)} THEN {pos}" for pos, v in enumerate(f.spec.allowed)) + " END"
        else:  # null when out of [0, radix): the row is malformed
            code = f"CASE WHEN {c} >= 0 AND {c} < {int(radix)} THEN {c} END"
        terms.append(f"({code}) * CAST({stride} AS BIGINT)")
        stride *= radix
    return F.expr(f"CAST(COALESCE({' + '.join(terms)}, -1) AS BIGINT)")


def count_keys(df: Any, column: str | None, space: KeySpace) -> tuple[np.ndarray, np.ndarray, int]:
    """(distinct keys, their counts, tasks that read the rows) of ``df``'s rows, counted by
    Spark (key -1: malformed). The tasks are those that counted ``df``'s partitions, read from
    the status tracker under a job tag (``df.rdd.getNumPartitions()`` would run a shuffled input's
    stages a second time)."""
    import uuid

    sc = df.sparkSession.sparkContext
    tag = f"dpnoise-count-table-{uuid.uuid4().hex}"
    counted = df.select(_key_column(space, column).alias("key")).groupBy("key").count()
    sc.addJobTag(tag)
    try:
        table = counted.toArrow()
    finally:
        sc.removeJobTag(tag)
    return (table.column("key").to_numpy().astype(np.int64, copy=False),
            table.column("count").to_numpy().astype(np.int64, copy=False), _counting_tasks(sc, tag))


def count_keys_dense(df: Any, column: str | None, space: KeySpace, helper: Any,
                     depth: int) -> tuple[np.ndarray, np.ndarray, int]:
    """:func:`count_keys` by dpnoise's JVM helper (``helper``, from ``_jvm_counts.helper``): one
    dense array of counts per partition of ``df``, tree-reduced in the JVM with ``depth``; the
    keys with a non-zero count come back, the malformed rows as key -1."""
    from ._jvm_counts import count_dense

    n_keys = size(space)
    counts, tasks = count_dense(  # the helper reads a bigint (getLong)
        helper, df.select(_key_column(space, column).alias("key")), n_keys, depth)
    keys = np.flatnonzero(counts[:n_keys]).astype(np.int64)
    return np.append(keys, -1), np.append(counts[keys], counts[n_keys]), tasks


def _counting_tasks(sc: Any, tag: str) -> int:
    """The tasks of the stage that counted ``df``'s partitions (the map side of the count's
    shuffle: the last stage but one of the jobs tagged ``tag``); 0 when the tracker lost them."""
    tracker = sc.statusTracker()
    jobs = [tracker.getJobInfo(j) for j in sc._jsc.sc().statusTracker().getJobIdsForTag(tag)]
    infos = [tracker.getStageInfo(s) for s in sorted({s for job in jobs if job for s in job.stageIds})]
    ran = [info.numTasks for info in infos if info is not None and info.numCompletedTasks]
    return ran[-2] if len(ran) >= 2 else (ran[-1] if ran else 0)


def fold(oracle: Any, space: KeySpace, keys: np.ndarray, counts: np.ndarray) -> tuple[Any, int, int]:
    """(the aggregator of the counted reports, malformed rows, rows seen) from Spark's
    (keys, counts) over ``space``; a key the configuration's row mask refuses is malformed."""
    from ._arrow import ConfigurationError, row_validity

    rows_seen = int(counts.sum(dtype=object))
    good = keys >= 0
    keys, n_keys = keys[good], counts[good]
    rows, stride = {}, 1
    for f, radix in space:
        code = (keys // stride) % radix
        if f.kind == SCALAR and f.spec.allowed is not None:
            code = np.asarray(f.spec.allowed, dtype=np.int64)[code]
        # the per-row dtypes of the Arrow route (arrow_to_rows)
        rows[f.name] = code.astype(np.int8 if (f.kind == PACKED or f.dtype == np.int8) else np.int64)
        stride *= radix
    valid = row_validity(oracle, rows, len(keys))
    rows = {k: v[valid] for k, v in rows.items()}
    n_keys = n_keys[valid]
    added = int(n_keys.sum(dtype=object))
    agg = oracle.aggregator()
    try:
        agg._add_counts(rows, n_keys)
    except (ValueError, OverflowError) as exc:
        raise ConfigurationError(f"the aggregator refused {added} rows that pass every per-row check ({exc}): a "
                                 "configuration error, not malformed rows") from None
    return agg, rows_seen - added, rows_seen
