"""kill -9 of a streaming driver (its Python process, its JVM and its workers: the whole process
group) at three points of a stream of files with malformed rows, each run restarted with the same
checkpoint and state directory; the final state equals aggregate_reports over every file, bit for
bit. (No key here: one Spark job per micro-batch keeps the four cold driver starts short; the
keyed path goes through the same commit and is failure-tested in test_spark_stream.py.)

Kill points: (1) right after the states of batch 1 are committed, before Spark records the
batch (Spark replays it: it must be skipped); (2) in the middle of the commit of batch 3, its
temporary file written and fsynced but not renamed (the states must stay at batch 2, the
temporary file ignored, then removed); (3) from outside, at whatever point the driver has
reached once batch 4 is committed. Four driver runs in all (one JVM start each): about 1-2
minutes on an idle 2-core machine, several times that on a loaded one, hence ``slow``."""
import os
import signal
import subprocess
import sys
import time

import pytest

from test_spark_stream import oracle, write_day_files

DRIVER = r'''
import os, signal, sys
from dpnoise.distributed.spark import _state, _stream, aggregate_stream, local_session
from dpnoise.ldp import FrequencyOracle

inputs, state, checkpoint, point, at = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
fo = FrequencyOracle("hadamard", 1.0, 1000)

def die():
    os.killpg(os.getpgrp(), signal.SIGKILL)  # the driver, its JVM and the Python workers at once

real_commit, real_replace = _stream.commit, _state.os.replace
current = {"batch": None}

def commit(directory, batch, batch_id, *args):
    current["batch"] = batch_id
    real_commit(directory, batch, batch_id, *args)
    if point == "after_commit" and batch_id == at:
        die()

def replace(src, dst):
    if point == "before_rename" and current["batch"] == at:
        die()
    real_replace(src, dst)

_stream.commit = commit
_state.os.replace = replace
spark = local_session("local[2]", "dpnoise-stream-kill", driver_memory="1g")
schema = spark.read.parquet(inputs).schema
df = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(inputs)
query = aggregate_stream(df.select("report"), "report", fo, state=state, checkpoint=checkpoint)
print("started", flush=True)
query.processAllAvailable()
query.stop()
spark.stop()
print("done", flush=True)
'''


#: seconds one driver run may take (a cold JVM on a loaded 2-core machine needs minutes)
TIMEOUT = 900


def _run(script, tmp_path, point, at, *, kill_after_batch=None):
    """One driver run in its own process group; returns its exit status."""
    from dpnoise.distributed.spark import stream_state

    log = open(tmp_path / f"driver-{point}.log", "w")
    proc = subprocess.Popen([sys.executable, script, str(tmp_path / "in"), str(tmp_path / "state"),
                             str(tmp_path / "cp"), point, str(at)], stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True, env=dict(os.environ))
    try:
        if kill_after_batch is not None:
            deadline = time.monotonic() + TIMEOUT
            while proc.poll() is None and time.monotonic() < deadline:
                try:
                    got = stream_state(str(tmp_path / "state"), oracle()).stream.batch_id
                except ValueError:  # not written yet
                    got = -1
                if got >= kill_after_batch:
                    os.killpg(proc.pid, signal.SIGKILL)
                    break
                time.sleep(0.02)
        return proc.wait(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()


def _batch(tmp_path):
    from dpnoise.distributed.spark import stream_state

    return stream_state(str(tmp_path / "state"), oracle()).stream.batch_id


@pytest.mark.slow
def test_kill_9_at_three_points_then_restart_gives_the_batch_states(spark, tmp_path):
    from dpnoise.distributed.spark import aggregate_reports, stream_state

    fo = oracle()
    paths = write_day_files(str(tmp_path / "in"), fo, files=6)
    script = str(tmp_path / "driver.py")
    with open(script, "w") as fh:
        fh.write(DRIVER)
    kill = -signal.SIGKILL

    assert _run(script, tmp_path, "after_commit", 1) == kill
    assert _batch(tmp_path) == 1
    assert not os.path.exists(tmp_path / "cp" / "commits" / "1")  # Spark never recorded batch 1

    assert _run(script, tmp_path, "before_rename", 3) == kill
    assert _batch(tmp_path) == 2
    assert [n for n in os.listdir(tmp_path / "state") if n.startswith(".tmp-")]  # the torn commit's file

    status = _run(script, tmp_path, "none", -1, kill_after_batch=4)
    assert status == kill, "the driver finished before it could be killed"
    assert _batch(tmp_path) >= 4

    assert _run(script, tmp_path, "none", -1) == 0
    got = stream_state(str(tmp_path / "state"), fo)
    want = aggregate_reports(paths, "report", fo, on_malformed="skip")
    assert got.to_bytes() == want.to_bytes()
    assert (got.stream.batch_id, got.stream.rows, got.stream.malformed) == (5, want.spark.rows, want.spark.malformed)
    assert want.spark.malformed == 18  # 3 per file: the malformed rows went through every kill
    assert not [n for n in os.listdir(tmp_path / "state") if n.startswith(".tmp-")]
