"""aggregate_stream over Spark's plain Parquet file source reads each micro-batch from the files
the checkpoint names for it (as aggregate_reports reads Parquet files), never through the
DataFrame Spark hands to foreachBatch; the result is bit for bit the batch aggregate, across
several files per micro-batch, compacted source logs and a path with a space and a '%'; a file of
another configuration is refused; any other stream keeps the DataFrame route. The checkpoint
reader itself (_stream_files.batch_files) is tested without Spark on hand-written logs."""
import json
import os

import pytest

from dpnoise.distributed.spark._session import filesystem_checkpoint_manager
from test_spark_stream import oracle, write_day_files


def _spy(monkeypatch):
    """Make the DataFrame route fail, and record the files of each micro-batch read by file."""
    from dpnoise.distributed.spark import _stream

    def no_dataframe_route(*args, **kwargs):
        raise AssertionError("the micro-batch went through the DataFrame route")

    seen = []
    real_files = _stream._stream_files.Checkpoint.files

    def files(self, batch_id):
        got = real_files(self, batch_id)
        seen.append((batch_id, got))
        return got

    monkeypatch.setattr(_stream, "aggregate_batch", no_dataframe_route)
    monkeypatch.setattr(_stream._stream_files.Checkpoint, "files", files)
    return seen


def _fs_manager(spark):
    name = filesystem_checkpoint_manager(spark)
    if name is None:
        pytest.fail("no FileSystemBasedCheckpointFileManager in this Spark: docs/scaling.md names one")
    return name


@pytest.mark.parametrize("manager", ["default", "filesystem"])
def test_plain_parquet_stream_is_read_by_its_files_bit_for_bit(spark, tmp_path, monkeypatch, manager):
    """7 files, 2 per micro-batch (4 micro-batches), the file source's log compacted every 3
    source batches (batch 2 is read from 2.compact), in a directory whose name has a space and
    a '%' (URIs in the logs), with Spark's default checkpoint manager and with the one
    docs/scaling.md recommends for a local checkpoint: every micro-batch is read by its files,
    in order, and the state equals aggregate_reports over every file with the malformed rows
    counted. The Hadoop reader of the checkpoint (used for non-local checkpoints) finds the same
    files as the local one."""
    from dpnoise.distributed.spark import _stream_files, aggregate_reports, aggregate_stream, stream_state

    fo = oracle()
    inputs = str(tmp_path / "in 100%")
    paths = write_day_files(inputs, fo, files=7)
    seen = _spy(monkeypatch)
    conf = {"spark.sql.streaming.fileSource.log.compactInterval": "3"}
    if manager == "filesystem":
        conf["spark.sql.streaming.checkpointFileManagerClass"] = _fs_manager(spark)
    for key, value in conf.items():
        spark.conf.set(key, value)
    try:
        schema = spark.read.parquet(inputs).schema
        df = spark.readStream.schema(schema).option("maxFilesPerTrigger", 2).parquet(inputs).select("report")
        query = aggregate_stream(df, "report", fo, state=str(tmp_path / "state"), checkpoint=str(tmp_path / "cp"))
        try:
            query.processAllAvailable()
        finally:
            query.stop()
    finally:
        for key in conf:
            spark.conf.unset(key)
    assert os.path.exists(tmp_path / "cp" / "sources" / "0" / "2.compact")
    got = stream_state(str(tmp_path / "state"), fo)
    want = aggregate_reports(paths, "report", fo, on_malformed="skip")
    assert got.to_bytes() == want.to_bytes()
    assert (got.stream.batch_id, got.stream.rows, got.stream.malformed) == (3, 3500, 21)
    read = [os.path.basename(f).replace("%25", "%") for _, files in seen for f in files]
    assert [b for b, _ in seen] == [0, 1, 2, 3] and read == [os.path.basename(p) for p in paths]
    batches = [files for _, files in seen]
    local = _stream_files.Checkpoint(spark, str(tmp_path / "cp"))
    assert local.local is not None
    hadoop = _stream_files.Checkpoint(spark, str(tmp_path / "cp"))
    hadoop.local = None
    assert [hadoop.files(b) for b in range(4)] == [local.files(b) for b in range(4)] == batches


def test_a_file_of_another_configuration_is_refused_and_nothing_of_its_batch_counted(spark, tmp_path):
    """The DataFrame route counted the reports of another configuration (same report layout)
    as if they were this one's; read by its files, the micro-batch is refused, naming both."""
    from dpnoise.distributed.spark import aggregate_stream, stream_state
    from dpnoise.ldp import FrequencyOracle

    fo = oracle()
    inputs = str(tmp_path / "in")
    write_day_files(inputs, fo, files=1)
    other = FrequencyOracle("hadamard", 2.0, 1000)
    foreign = write_day_files(str(tmp_path / "other"), other, files=1)[0]
    os.replace(foreign, os.path.join(inputs, "part-999.parquet"))
    os.utime(os.path.join(inputs, "part-999.parquet"), (1_800_000_000, 1_800_000_000))
    schema = spark.read.parquet(os.path.join(inputs, "part-000.parquet")).schema
    df = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(inputs)
    query = aggregate_stream(df, "report", fo, state=str(tmp_path / "state"), checkpoint=str(tmp_path / "cp"))
    with pytest.raises(Exception, match=r"part-999.parquet.*epsilon=2\.0") as info:
        query.processAllAvailable()
    query.stop()
    assert "epsilon=1.0" in str(info.value)
    got = stream_state(str(tmp_path / "state"), fo)
    assert (got.stream.batch_id, got.stream.rows) == (0, 500)  # the first file only


def test_on_malformed_raise_by_files_counts_nothing_of_the_batch(spark, tmp_path, monkeypatch):
    from dpnoise.distributed.spark import aggregate_stream, stream_state

    fo = oracle()
    inputs = str(tmp_path / "in")
    write_day_files(inputs, fo, files=1)
    seen = _spy(monkeypatch)
    schema = spark.read.parquet(inputs).schema
    df = spark.readStream.schema(schema).parquet(inputs)
    query = aggregate_stream(df, "report", fo, state=str(tmp_path / "state"), checkpoint=str(tmp_path / "cp"),
                             on_malformed="raise")
    with pytest.raises(Exception, match="micro-batch 0 has 3 malformed rows of 500"):
        query.processAllAvailable()
    query.stop()
    assert [b for b, _ in seen] == [0]
    got = stream_state(str(tmp_path / "state"), fo)
    assert (got.stream.batch_id, got.stream.rows, got.n) == (-1, 0, 0)


def test_only_a_plain_parquet_file_source_is_read_by_its_files(spark, tmp_path):
    from pyspark.sql import functions as F

    from dpnoise.distributed.spark._stream_files import plain_parquet_stream

    inputs = str(tmp_path / "in")
    write_day_files(inputs, oracle(), files=1)
    schema = spark.read.parquet(inputs).schema
    plain = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(inputs)
    assert plain_parquet_stream(plain)
    assert plain_parquet_stream(plain.select("report", "day"))
    assert plain_parquet_stream(spark.readStream.schema(schema).format("parquet").option("latestFirst", "true")
                                .load(inputs))
    assert not plain_parquet_stream(plain.where(F.col("day").isNotNull()))  # rows chosen by Spark
    assert not plain_parquet_stream(plain.withColumn("report", F.col("report")).select(F.col("report").alias("r")))
    assert not plain_parquet_stream(spark.readStream.schema(schema).option("mergeSchema", "true").parquet(inputs))
    assert not plain_parquet_stream(spark.readStream.schema(schema).option("ignoreCorruptFiles", "true")
                                    .parquet(inputs))
    assert not plain_parquet_stream(plain.union(plain))
    assert not plain_parquet_stream(spark.readStream.format("rate").load())
    assert not plain_parquet_stream(spark.read.parquet(inputs))  # not a stream at all


# -- the checkpoint reader, on hand-written logs (no Spark) -----------------------------------------
def _log(*entries):
    return "\n".join(["v1", *[json.dumps(e) for e in entries]])


def _offsets(*sources):
    return "\n".join(["v1", json.dumps({"batchWatermarkMs": 0, "batchTimestampMs": 1, "conf": {}}), *sources])


def _entry(name, batch):
    return {"path": f"file:///in/{name}", "timestamp": 1, "batchId": batch}


def _reader(files):
    def read(relative):
        return files.get(relative)

    def names(relative):
        return sorted({k[len(relative) + 1:].split("/")[0] for k in files if k.startswith(relative + "/")})
    return read, names


def test_batch_files_from_hand_written_checkpoints():
    from dpnoise.distributed.spark._stream_files import batch_files

    logs = {
        "offsets/0": _offsets('{"logOffset":1}'),  # two source batches in micro-batch 0
        "offsets/1": _offsets('{"logOffset":2}'),
        "offsets/2": _offsets("3"),  # an older Spark's offset: the bare number
        "offsets/3": _offsets('{"logOffset":3}'),  # no new file
        "sources/0/0": _log(_entry("a", 0)),
        "sources/0/1": _log(_entry("b", 1), _entry("c", 1)),
        "sources/0/2.compact": _log(_entry("a", 0), _entry("b", 1), _entry("c", 1), _entry("d", 2)),
        "sources/0/3": _log(_entry("e", 3)),
    }
    read, names = _reader(logs)
    got = [batch_files(read, names, b) for b in range(4)]
    assert got == [["file:///in/a", "file:///in/b", "file:///in/c"], ["file:///in/d"], ["file:///in/e"], []]
    assert batch_files(read, names, 4) is None  # no offsets written for it
    # a source batch whose own file was deleted after a later compaction held it
    del logs["sources/0/0"]
    logs["sources/0/5.compact"] = _log(_entry("a", 0), _entry("z", 5))
    assert batch_files(read, names, 0) == ["file:///in/a", "file:///in/b", "file:///in/c"]


@pytest.mark.parametrize("broken", [
    {"offsets/1": "v2\n{}\n{\"logOffset\":2}"},  # another offset log version
    {"offsets/1": _offsets('{"logOffset":2}', '{"logOffset":7}')},  # two sources
    {"offsets/1": _offsets('{"logOffset":"2"}')},
    {"offsets/1": _offsets('{"logOffset":2,"other":1}')},
    {"offsets/1": _offsets("not json")},
    {"offsets/1": _offsets('{"logOffset":0}')},  # going back
    {"offsets/1": _offsets("true")},
    {"sources/0/2": "v2\n" + json.dumps(_entry("b", 2))},  # another source log version
    {"sources/0/2": _log({"path": 3, "batchId": 2})},
    {"sources/0/2": "v1\n{not json"},
    {"sources/0/2": None},  # missing, no compaction holds it
])
def test_batch_files_refuses_what_it_does_not_know(broken):
    from dpnoise.distributed.spark._stream_files import batch_files

    logs = {"offsets/0": _offsets('{"logOffset":1}'), "offsets/1": _offsets('{"logOffset":2}'),
            "sources/0/0": _log(_entry("a", 0)), "sources/0/1": _log(_entry("b", 1)),
            "sources/0/2": _log(_entry("c", 2))}
    read, names = _reader(logs)
    assert batch_files(read, names, 1) == ["file:///in/c"]
    logs.update(broken)
    for name in [k for k, v in logs.items() if v is None]:
        del logs[name]
    assert batch_files(read, names, 1) is None


def test_batch_zero_starts_after_no_offset():
    from dpnoise.distributed.spark._stream_files import batch_files

    read, names = _reader({"offsets/0": _offsets("-")})
    assert batch_files(read, names, 0) == []
