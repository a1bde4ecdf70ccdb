"""Issue 38 item 1: repeated utility (--utility-repeats R). Each metric is measured R times with
independent seeds derived from --seed; the record keeps mean, standard error, 95% interval and
the R raw values; the same seed gives the same figures. Fake workloads where a fixed answer is
needed, one cheap catalogue row where real randomness is."""
import json

import numpy as np
import pytest

from dpnoise import bench
from dpnoise.cli import main

ROW = "ldp hadamard server"  # a cheap catalogue row with two metrics
NAME = "tmp-repeats workload"


def stats_of(rec):
    (row,) = rec["results"]
    return row["utility"], row["utility_stats"]


def test_same_seed_same_figures_and_the_repetitions_are_independent():
    first = stats_of(bench.run(quick=True, repeats=1, only=ROW, seed=4, utility_repeats=4))
    again = stats_of(bench.run(quick=True, repeats=1, only=ROW, seed=4, utility_repeats=4))
    assert first == again  # exact equality of means, stderrs, intervals and raw values
    util, stats = first
    for metric in ("rms_error", "ci_coverage"):
        raw = stats[metric]["raw"]
        assert len(raw) == 4 and stats[metric]["n"] == 4
        assert len(set(raw)) == 4  # four different draws, not one draw four times
        assert util[metric] == stats[metric]["mean"] == pytest.approx(np.mean(raw), rel=1e-12)
    other = stats_of(bench.run(quick=True, repeats=1, only=ROW, seed=5, utility_repeats=4))
    assert other[1]["rms_error"]["raw"] != stats["rms_error"]["raw"]
    # repetition 0 is the row of a single-repetition run (record version 3's seeds are kept)
    single = stats_of(bench.run(quick=True, repeats=1, only=ROW, seed=4))
    assert single[1]["rms_error"]["raw"] == stats["rms_error"]["raw"][:1]
    assert single[1]["rms_error"]["stderr"] is None and single[1]["rms_error"]["ci95"] is None


def test_interval_is_students_t_on_the_raw_values():
    stats = pytest.importorskip("scipy.stats")
    util, st = stats_of(bench.run(quick=True, repeats=1, only=ROW, seed=7, utility_repeats=6))
    raw = np.asarray(st["rms_error"]["raw"])
    se = raw.std(ddof=1) / np.sqrt(raw.size)
    assert st["rms_error"]["stderr"] == pytest.approx(se, rel=1e-12)
    lo, hi = stats.t.interval(0.95, raw.size - 1, loc=raw.mean(), scale=se)
    assert st["rms_error"]["ci95"] == pytest.approx([lo, hi], rel=1e-6)


@pytest.mark.parametrize("df", [1, 2, 5, 29, 30, 31, 40, 100, 999, 10**6])
def test_t_quantile_matches_scipy(df):
    stats = pytest.importorskip("scipy.stats")
    assert bench.t_quantile_975(df) == pytest.approx(stats.t.ppf(0.975, df), abs=2e-6)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, None, "3"])
def test_t_quantile_bad_df(bad):
    with pytest.raises(ValueError, match="df"):
        bench.t_quantile_975(bad)


@pytest.fixture
def fake():
    def register(utility):
        bench.register(bench.Workload(name=NAME, unit="ops", items=lambda ctx: 1, setup=lambda ctx: ctx,
                                      run=lambda ctx, s: None, epsilon=1.0, metrics=("rms_error", "recall"),
                                      utility=utility))
    yield register
    bench._REGISTRY.pop(NAME, None)


def test_a_metric_missing_in_some_repetitions_is_left_out_of_its_mean(fake):
    # the state is the repetition's context: rms_error is missing in repetitions 1 and 3
    fake(lambda ctx, s: {"rms_error": None if s.utility_repeat % 2 else float(s.utility_repeat),
                         "recall": 0.5})
    util, st = stats_of(bench.run(quick=True, repeats=1, only=NAME, seed=1, utility_repeats=4))
    assert st["rms_error"]["raw"] == [0.0, None, 2.0, None] and st["rms_error"]["n"] == 2
    assert util["rms_error"] == 1.0
    assert st["recall"]["raw"] == [0.5] * 4 and st["recall"]["stderr"] == 0.0
    assert st["recall"]["ci95"] == [0.5, 0.5]


def test_a_repetition_that_raises_fails_the_utility_not_the_timing(fake):
    def utility(ctx, s):
        if s.utility_repeat == 2:
            raise RuntimeError("third repetition broke")
        return {"rms_error": 1.0, "recall": 1.0}
    fake(utility)
    (row,) = bench.run(quick=True, repeats=1, only=NAME, utility_repeats=3)["results"]
    assert row["utility"] is None and row["utility_error"] == "RuntimeError: third repetition broke"
    assert row["throughput"] > 0 and "utility_stats" not in row


@pytest.mark.parametrize("bad", [0, -2, 1001, 2.0, True])
def test_bad_utility_repeats_name_the_argument(bad):
    with pytest.raises(ValueError, match="utility_repeats"):
        bench.run(quick=True, only=ROW, utility_repeats=bad)


def test_cli_utility_repeats(capsys):
    assert main(["bench", "--quick", "--only", ROW, "--utility-repeats", "0"]) == 2
    assert "utility-repeats" in capsys.readouterr().err
    assert main(["bench", "--quick", "--only", ROW, "--utility-repeats", "3", "--repeats", "1", "--seed", "2",
                 "--json", "--no-progress"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["settings"]["utility_repeats"] == 3
    assert len(rec["results"][0]["utility_stats"]["ci_coverage"]["raw"]) == 3
