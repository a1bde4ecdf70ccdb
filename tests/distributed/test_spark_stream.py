"""aggregate_stream / stream_state on the shared local Spark session: a stream of Parquet files
(with malformed rows and null keys) merged into per-day states equal, bit for bit, to
aggregate_reports over the same files, across failures inside batches, a replayed batch whose
states were already committed, and query.stop() mid-stream; the state file read while the query
runs; and bad input (other configurations, corrupt and truncated states, mismatched checkpoints)
refused with the files untouched. The kill -9 test is test_spark_stream_kill.py."""
import datetime
import hashlib
import os
import threading
import time

import numpy as np
import pytest

from spark_oracles import reports

DAYS = [datetime.date(2026, 11, 1) + datetime.timedelta(days=i) for i in range(3)]


def oracle():
    from dpnoise.ldp import FrequencyOracle

    return FrequencyOracle("hadamard", 1.0, 1000)


def write_day_files(directory, fo, files=6, rows=500, seed=0):
    """``files`` Parquet files of ``rows`` reports each, columns ``day`` (date) and ``report``;
    in every file, 3 reports are malformed (one null, two out of range) and 2 days are null.
    Written with increasing modification times (the file source reads them in that order)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from dpnoise.distributed.spark import reports_table

    os.makedirs(directory, exist_ok=True)
    paths = []
    for i in range(files):
        table = reports_table(reports(fo, rows, seed=seed + i), fo)
        st = table.column("report").combine_chunks()
        names = [st.type.field(j).name for j in range(st.type.num_fields)]
        children = {n: c.to_numpy(zero_copy_only=False).copy() for n, c in zip(names, st.flatten())}
        children["rows"][[5, 6]] = 10 ** 12  # out of range (Hadamard rows < D)
        mask = np.zeros(rows, dtype=bool)
        mask[7] = True  # a null report
        report = pa.StructArray.from_arrays([pa.array(children[n], type=st.type.field(n).type) for n in names],
                                            fields=list(st.type), mask=pa.array(mask))
        day = [DAYS[(i + j) % len(DAYS)] for j in range(rows)]
        day[10] = day[11] = None
        meta = table.schema.field("report").metadata
        out = pa.table({"day": pa.array(day, type=pa.date32()), "report": report},
                       schema=pa.schema([pa.field("day", pa.date32()), pa.field("report", report.type, metadata=meta)],
                                        metadata=table.schema.metadata))
        path = os.path.join(directory, f"part-{i:03d}.parquet")
        pq.write_table(out, path)
        stamp = 1_700_000_000 + i
        os.utime(path, (stamp, stamp))
        paths.append(path)
    return paths


def stream_of(spark, directory):
    schema = spark.read.parquet(directory).schema
    return spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(directory)


def expected_by_day(spark, paths, fo):
    """aggregate_reports over every file, one day at a time; and the rows with a null day."""
    from pyspark.sql import functions as F

    from dpnoise.distributed.spark import aggregate_reports

    df = spark.read.parquet(*paths)
    out = {day: aggregate_reports(df.where(F.col("day") == F.lit(day)), "report", fo, on_malformed="skip")
           for day in DAYS}
    return out, df.where(F.col("day").isNull()).count()


def assert_same_states(got, want, unkeyed):
    assert list(got) == sorted(want)
    for day, agg in want.items():
        assert got[day].to_bytes() == agg.to_bytes(), day
        assert (got[day].stream.rows, got[day].stream.malformed) == (agg.spark.rows, agg.spark.malformed)
        assert got[day].stream.unkeyed == unkeyed


def read_bytes(path):
    with open(path, "rb") as fh:
        return fh.read()


def digest(directory):
    return {name: hashlib.sha256(read_bytes(os.path.join(directory, name))).hexdigest()
            for name in sorted(os.listdir(directory))}


def wait_for_batch(state, fo, batch_id, query, timeout=120):
    from dpnoise.distributed.spark import stream_state

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = stream_state(state, fo)
        first = next(iter(got.values()), None) if isinstance(got, dict) else got
        if first is not None and first.stream.batch_id >= batch_id:
            return
        if query.exception() is not None:
            raise AssertionError(f"the query failed: {query.exception()}")
        time.sleep(0.05)
    raise AssertionError(f"batch {batch_id} was not committed in {timeout} s")


# -- the stream equals the batch ------------------------------------------------------------------
def test_stream_without_key_equals_aggregate_reports_and_reads_while_running(spark, tmp_path):
    """No key: one aggregator, equal bit for bit to aggregate_reports over every file (its Parquet
    route, another code path), malformed rows counted. A reader thread polls stream_state while
    the query runs: every read is a whole committed state (n = rows - malformed, batch ids and n
    never go back)."""
    from dpnoise.distributed.spark import aggregate_reports, aggregate_stream, stream_state

    fo = oracle()
    paths = write_day_files(str(tmp_path / "in"), fo, files=4)
    state, seen, stop = str(tmp_path / "state"), [], threading.Event()
    query = aggregate_stream(stream_of(spark, str(tmp_path / "in")).select("report"), "report", fo,
                             state=state, checkpoint=str(tmp_path / "cp"))

    def poll():
        while not stop.is_set():
            agg = stream_state(state, fo)
            seen.append((agg.stream.batch_id, agg.n, agg.stream.rows - agg.stream.malformed))

    reader = threading.Thread(target=poll)
    reader.start()
    try:
        query.processAllAvailable()
    finally:
        query.stop()
        stop.set()
        reader.join()
    agg = stream_state(state, fo)
    want = aggregate_reports(paths, "report", fo, on_malformed="skip")
    assert agg.to_bytes() == want.to_bytes()
    assert (agg.stream.batch_id, agg.stream.rows, agg.stream.malformed, agg.stream.unkeyed) == (3, 2000, 12, 0)
    assert seen and all(n == good for _, n, good in seen)
    assert [b for b, _, _ in seen] == sorted(b for b, _, _ in seen)
    assert [n for _, n, _ in seen] == sorted(n for _, n, _ in seen)


def test_keyed_stream_survives_failures_replays_and_stop(spark, tmp_path, monkeypatch):
    """Per day, with malformed rows and null days, through four runs on the same checkpoint and
    state directory: (1) an exception after batch 1 is committed to the states but before Spark
    records it (Spark replays batch 1: it must be skipped); (2) an exception inside batch 3,
    before its commit; (3) query.stop() mid-stream; (4) to the end. The final states equal
    aggregate_reports over all the files, day by day, bit for bit."""
    from dpnoise.distributed.spark import _stream, aggregate_stream, stream_state

    fo = oracle()
    paths = write_day_files(str(tmp_path / "in"), fo, files=6)
    state, cp = str(tmp_path / "state"), str(tmp_path / "cp")
    real_commit = _stream.commit
    calls = []

    def start():
        return aggregate_stream(stream_of(spark, str(tmp_path / "in")), "report", fo, state=state, checkpoint=cp,
                                key="day")

    def run_until_failure(fail):
        monkeypatch.setattr(_stream, "commit", fail)
        query = start()
        with pytest.raises(Exception, match="injected"):
            query.processAllAvailable()
        query.stop()
        monkeypatch.setattr(_stream, "commit", real_commit)

    def after_commit_of_1(directory, batch, batch_id, *args):
        calls.append(batch_id)
        real_commit(directory, batch, batch_id, *args)
        if batch_id == 1:
            raise RuntimeError("injected failure after the states of batch 1 were committed")

    run_until_failure(after_commit_of_1)
    assert calls == [0, 1] and next(iter(stream_state(state, fo).values())).stream.batch_id == 1

    def inside_batch_3(directory, batch, batch_id, *args):
        calls.append(batch_id)
        if batch_id == 3:
            raise RuntimeError("injected failure inside batch 3")
        real_commit(directory, batch, batch_id, *args)

    run_until_failure(inside_batch_3)
    assert calls == [0, 1, 2, 3]  # batch 1, replayed by Spark, never reached the commit
    assert next(iter(stream_state(state, fo).values())).stream.batch_id == 2

    query = start()
    wait_for_batch(state, fo, 4, query)
    query.stop()  # mid-stream: batch 5 is still to come
    assert next(iter(stream_state(state, fo).values())).stream.batch_id < 5

    query = start()
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    got = stream_state(state, fo)
    want, unkeyed = expected_by_day(spark, paths, fo)
    assert unkeyed == 12
    assert_same_states(got, want, unkeyed)
    assert next(iter(got.values())).stream.batch_id == 5
    assert not [n for n in os.listdir(state) if n.startswith(".tmp-")]


def test_on_malformed_raise_fails_the_query_and_counts_nothing_of_the_batch(spark, tmp_path):
    from dpnoise.distributed.spark import aggregate_stream, stream_state

    fo = oracle()
    write_day_files(str(tmp_path / "in"), fo, files=1)
    state = str(tmp_path / "state")
    query = aggregate_stream(stream_of(spark, str(tmp_path / "in")), "report", fo, state=state,
                             checkpoint=str(tmp_path / "cp"), key="day", on_malformed="raise")
    with pytest.raises(Exception, match="micro-batch 0 has 5 malformed rows of 500") as info:
        query.processAllAvailable()
    query.stop()
    assert "2026" not in str(info.value)  # no key value in the message
    assert stream_state(state, fo) == {}


# -- bad input ------------------------------------------------------------------------------------
def test_bad_arguments_are_named(spark, tmp_path):
    from dpnoise.distributed.spark import aggregate_stream, stream_state

    fo = oracle()
    write_day_files(str(tmp_path / "in"), fo, files=1)
    sdf = stream_of(spark, str(tmp_path / "in"))
    kw = {"state": str(tmp_path / "s"), "checkpoint": str(tmp_path / "cp")}
    with pytest.raises(ValueError, match="not a streaming DataFrame"):
        aggregate_stream(spark.read.parquet(str(tmp_path / "in")), "report", fo, **kw)
    with pytest.raises(TypeError, match="df must be a pyspark.sql.DataFrame"):
        aggregate_stream([1], "report", fo, **kw)
    with pytest.raises(ValueError, match="on_malformed"):
        aggregate_stream(sdf, "report", fo, on_malformed="skip", **kw)
    with pytest.raises(ValueError, match="key: the DataFrame has no column 'days'"):
        aggregate_stream(sdf, "report", fo, key="days", **kw)
    with pytest.raises(TypeError, match="key column 'r2' is struct"):
        aggregate_stream(sdf.withColumn("r2", sdf["report"]), "report", fo, key="r2", **kw)
    with pytest.raises(ValueError, match="key must be another column"):
        aggregate_stream(sdf, "report", fo, key="report", **kw)
    with pytest.raises(TypeError, match="key must be a column name"):
        aggregate_stream(sdf, "report", fo, key=1, **kw)
    with pytest.raises(TypeError, match="state must be a non-empty path"):
        aggregate_stream(sdf, "report", fo, state=None, checkpoint=kw["checkpoint"])
    with pytest.raises(TypeError, match="checkpoint must be a non-empty path"):
        aggregate_stream(sdf, "report", fo, state=kw["state"], checkpoint="")
    with pytest.raises(ValueError, match="no column 'reports'"):
        aggregate_stream(sdf, "reports", fo, **kw)
    with pytest.raises(ValueError, match="holds no stream state"):
        stream_state(str(tmp_path / "nowhere"), fo)
    with pytest.raises(TypeError, match="FrequencyOracle"):
        stream_state(str(tmp_path / "nowhere"), "hadamard")
    assert not os.path.exists(kw["state"]) or not os.listdir(kw["state"]) or \
        os.listdir(kw["state"]) == [".lock"]


def test_other_configuration_corrupt_and_truncated_states_are_refused_untouched(spark, tmp_path):
    from dpnoise.distributed.spark import aggregate_stream, stream_state
    from dpnoise.ldp import FrequencyOracle

    fo = oracle()
    write_day_files(str(tmp_path / "in"), fo, files=2)
    state, cp = str(tmp_path / "state"), str(tmp_path / "cp")
    query = aggregate_stream(stream_of(spark, str(tmp_path / "in")), "report", fo, state=state, checkpoint=cp,
                             key="day")
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    before = digest(state)
    other = FrequencyOracle("hadamard", 2.0, 1000)
    sdf = stream_of(spark, str(tmp_path / "in"))
    with pytest.raises(ValueError, match="written for another configuration .*epsilon=1.0.*key 'day'"):
        aggregate_stream(sdf, "report", other, state=state, checkpoint=cp, key="day")
    with pytest.raises(ValueError, match="written for another configuration .*no key"):
        aggregate_stream(sdf, "report", fo, state=state, checkpoint=cp)
    with pytest.raises(ValueError, match="another configuration"):
        stream_state(state, other)
    # the states' checkpoint replaced by a new one, or a used checkpoint with a new state directory
    with pytest.raises(ValueError, match="is new: Spark would replay the source"):
        aggregate_stream(sdf, "report", fo, state=state, checkpoint=str(tmp_path / "cp2"), key="day")
    with pytest.raises(ValueError, match="never counted"):
        aggregate_stream(sdf, "report", fo, state=str(tmp_path / "state2"), checkpoint=cp, key="day")
    assert digest(state) == before

    path = os.path.join(state, "stream-state.dpnoise")
    good = read_bytes(path)
    for broken in (good[:len(good) // 2], good[:10], b"", good[:100] + bytes([good[100] ^ 1]) + good[101:]):
        with open(path, "wb") as fh:
            fh.write(broken)
        for refuse in (lambda: stream_state(state, fo),
                       lambda: aggregate_stream(sdf, "report", fo, state=state, checkpoint=cp, key="day")):
            with pytest.raises(ValueError, match="corrupt or truncated") as info:
                refuse()
            assert read_bytes(path) == broken  # untouched
            assert len(str(info.value)) < 400


def test_state_file_format_refuses_every_truncation_and_flipped_byte(tmp_path):
    """Unit test of the file format (no Spark): every strict prefix of a state file and every
    single flipped byte is refused with ValueError (SHA-256 over the whole file)."""
    from dpnoise.distributed.spark import _state

    fo = oracle()
    agg = fo.aggregator().add(reports(fo, 50))
    st = _state.StreamFile(config={"oracle": fo.to_json(), "column": "report", "key": "day", "key_type": "date"},
                           query_id="q", batch_id=4, unkeyed=2,
                           entries={"2026-11-01": _state.Entry(agg.to_bytes(), 55, 5)})
    blob = _state.encode(st)
    back = _state.decode(blob, "x")
    assert (back.batch_id, back.query_id, back.unkeyed, back.config) == (4, "q", 2, st.config)
    assert back.entries["2026-11-01"].blob == agg.to_bytes()
    step = max(1, len(blob) // 300)
    for cut in list(range(0, len(blob), step)) + [len(blob) - 1]:
        with pytest.raises(ValueError, match="corrupt or truncated"):
            _state.decode(blob[:cut], "x")
    for i in range(0, len(blob), step):
        with pytest.raises(ValueError, match="corrupt or truncated"):
            _state.decode(blob[:i] + bytes([blob[i] ^ 0x10]) + blob[i + 1:], "x")
    _state.write(str(tmp_path), st)
    assert _state.read(str(tmp_path)).entries == back.entries
    assert os.listdir(tmp_path) == ["stream-state.dpnoise"]


# -- the demo -------------------------------------------------------------------------------------
def test_stream_demo_restarts_half_way_and_prints_each_day(spark, tmp_path):
    from dpnoise.demos.stream import run_stream_demo

    printed = []
    res = run_stream_demo(spark, devices=4000, days=2, apps=64, files_per_day=2, out=printed.append,
                          workdir=str(tmp_path))
    assert res["lines"] == printed
    assert (res["stopped_at"], res["batches"]) == (1, 3)
    assert list(res["states"]) == res["days"]
    for day, agg in res["states"].items():
        assert agg.n == 4000 and agg.stream.malformed == 0
        eps0, shuffled = res["central_epsilon"][day]
        assert 0 < shuffled <= eps0 == 2.0
        for hit in res["top"][day]:
            # |estimate - truth| within 5 standard errors: false alarm about 6e-7 per item (10 items)
            assert abs(hit.estimate - res["true"][day][hit.item]) <= 5 * hit.stderr
    assert any("with one" in line for line in printed) and any("[" in line for line in printed)


def test_cli_demo_spark_stream_dispatch(spark, capsys, monkeypatch):
    """`dpnoise demo --spark --stream` runs run_stream_demo (here on the shared session);
    `--stream` without `--spark` is a usage error."""
    from dpnoise.cli import main
    from dpnoise.demos import stream as demo

    real, seen = demo.run_stream_demo, {}

    def on_shared_session(**kwargs):
        seen.update(kwargs)
        return real(spark, days=2, apps=64, **kwargs)

    monkeypatch.setattr(demo, "run_stream_demo", on_shared_session)
    assert main(["demo", "--spark", "--stream", "--devices", "3000"]) == 0
    assert seen == {"devices": 3000}
    assert "continuous collection" in capsys.readouterr().out
    assert main(["demo", "--stream"]) == 2
    assert "--stream needs --spark" in capsys.readouterr().err
