"""Issue 33 item 11: a utility hook that gives fewer metrics than declared (or raises) keeps its
row and the row's timing; the missing metrics are None in the record, null in the JSON, "—" in
the table, and no point in the plot. Fake peers and workloads, no peer library needed."""
import json
import math

import pytest

from dpnoise import bench
from dpnoise.cli import main

NAME = "tmp-missing-metrics workload"


def _peer_utility_partial(module, ctx, state):
    return {"rms_error": 2.0}  # "recall" declared, not returned


def _peer_utility_nan(module, ctx, state):
    return {"rms_error": float("nan"), "recall": None, "typo_metric": 1.0}


def _peer_utility_raises(module, ctx, state):
    raise RuntimeError("peer utility broke")


def _make(module, ctx, state):  # the standard library's json stands in for a peer library
    return (lambda: module.dumps([0] * 10)), 10


@pytest.fixture
def workload():
    def register(own_utility):
        bench.register(bench.Workload(
            name=NAME, unit="ops", items=lambda ctx: 10, setup=lambda ctx: None, run=lambda ctx, s: None,
            epsilon=1.0, metrics=("rms_error", "recall"), utility=own_utility,
            peers=(bench.Peer("json", "partial peer", _make, _peer_utility_partial),
                   bench.Peer("json", "nan peer", _make, _peer_utility_nan),
                   bench.Peer("json", "raising peer", _make, _peer_utility_raises))))
    yield register
    bench._REGISTRY.pop(NAME, None)


def test_peer_rows_with_missing_metrics_keep_their_timing(workload):
    workload(lambda ctx, s: {"rms_error": 1.0, "recall": 0.5})
    rec = bench.run(quick=True, repeats=2, peers=True, only=NAME)
    (row,) = rec["results"]
    partial, nan, raising = row["peers"]
    for p in (partial, nan, raising):
        # before: {"skipped": "failed: ValueError: utility returned metrics ..."}, no timing
        assert "skipped" not in p and len(p["seconds"]["raw"]) == 2 and p["throughput"] > 0
    assert partial["utility"] == {"rms_error": 2.0, "recall": None}
    assert "recall" in partial["utility_note"]
    assert nan["utility"] == {"rms_error": None, "recall": None}
    assert "typo_metric" in nan["utility_note"] and "typo_metric" not in nan["utility"]
    assert raising["utility"] is None and raising["utility_error"] == "RuntimeError: peer utility broke"
    text = bench.format_table(rec)
    assert "recall \u2014" in text and "utility failed: RuntimeError: peer utility broke" in text
    back = json.loads(json.dumps(rec, allow_nan=False))  # strict JSON: no NaN leaks into the record
    assert back["results"][0]["peers"][0]["utility"]["recall"] is None


def test_own_utility_with_missing_metric_keeps_the_row(workload, capsys):
    workload(lambda ctx, s: {"recall": 0.5})
    assert main(["bench", "--quick", "--only", NAME, "--json", "--no-progress", "--repeats", "1"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["results"]
    assert "error" not in row and row["throughput"] > 0
    assert row["utility"] == {"rms_error": None, "recall": 0.5}


def test_own_utility_that_raises_keeps_the_timing_and_fails_the_run(workload, capsys):
    def boom(ctx, s):
        raise ValueError("own utility broke")
    workload(boom)
    assert main(["bench", "--quick", "--only", NAME, "--json", "--no-progress", "--repeats", "1"]) == 1
    out, err = capsys.readouterr()
    (row,) = json.loads(out)["results"]
    assert "error" not in row and row["throughput"] > 0 and row["utility"] is None
    assert row["utility_error"] == "ValueError: own utility broke" and NAME in err


@pytest.mark.parametrize("value,expected", [(1, 1.0), (0.25, 0.25), (None, None), (math.nan, None),
                                            (math.inf, None), ("1.0", None), (object(), None)])
def test_metric_values(value, expected):
    assert bench._metric_value(value) == expected


def test_plot_skips_missing_points(workload, tmp_path):
    pytest.importorskip("matplotlib")
    workload(lambda ctx, s: {"recall": 0.5})  # the first metric, rms_error, is missing
    rec = bench.run(quick=True, repeats=1, peers=True, only=NAME, epsilons=[0.5, 2.0])
    path = tmp_path / "bench.png"
    bench.plot(rec, str(path))
    assert path.stat().st_size > 1000
