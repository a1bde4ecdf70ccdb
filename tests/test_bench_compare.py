"""Issue 38 item 4: ``dpnoise bench compare OLD.json NEW.json``. Two same-seed records report no
regression; a workload slowed x1.5 by an injected sleep is exactly what is flagged (exit 1);
unusable input exits 2 with one line; --force compares records of other sizes or schemas."""
import copy
import json
import time

import numpy as np
import pytest

from dpnoise import bench
from dpnoise.cli import main

SLOWED, STEADY = "tmp-compare slowed", "tmp-compare steady"
BASE = 0.03     # seconds per timed call: far above timer resolution and scheduler jitter
FACTOR = {"x": 1.0}


def _utility(ctx, s):  # a seeded metric: identical in two runs with one seed
    return {"rms_error": float(abs(ctx.numpy_rng("u").normal()) + 1.0)}


@pytest.fixture
def sleepers():
    bench.register(bench.Workload(name=SLOWED, unit="ops", items=lambda ctx: 1, setup=lambda ctx: None,
                                  run=lambda ctx, s: time.sleep(BASE * FACTOR["x"]), epsilon=1.0,
                                  metrics=("rms_error",), utility=_utility))
    bench.register(bench.Workload(name=STEADY, unit="ops", items=lambda ctx: 1, setup=lambda ctx: None,
                                  run=lambda ctx, s: time.sleep(BASE), epsilon=1.0,
                                  metrics=("rms_error",), utility=_utility))
    yield
    FACTOR["x"] = 1.0
    for name in (SLOWED, STEADY):
        bench._REGISTRY.pop(name, None)


def record(factor=1.0, seed=1, repeats=7, utility_repeats=3):
    FACTOR["x"] = factor
    try:
        return bench.run(quick=True, repeats=repeats, only="tmp-compare", seed=seed, utility_repeats=utility_repeats)
    finally:
        FACTOR["x"] = 1.0


def write(tmp_path, name, rec):
    path = tmp_path / name
    path.write_text(json.dumps(rec))
    return str(path)


@pytest.mark.slow  # about 2 x 2 x 8 sleeps of 30-45 ms: 1-2 s
def test_the_slowed_workload_and_only_it_is_flagged(sleepers, tmp_path, capsys):
    old = record()
    new = record(factor=1.5)
    a, b = write(tmp_path, "old.json", old), write(tmp_path, "new.json", new)
    assert main(["bench", "compare", a, b]) == 1
    out = capsys.readouterr().out
    assert "1 regression(s)" in out and SLOWED in out.split("regression(s):")[1]
    assert STEADY not in out.split("regression(s):")[1]
    result = bench.compare(old, new)
    flagged = [r["workload"] for r in result["rows"] if r["regression"]]
    assert flagged == [SLOWED]
    (slow,) = [r for r in result["rows"] if r["workload"] == SLOWED]
    # 7 against 7 calls, every NEW call slower: the exact one-sided p is 1/C(14, 7) = 1/3432
    assert slow["time"]["ratio"] == pytest.approx(1.5, rel=0.2) and slow["time"]["p_slower"] < 0.01
    # the same seed: utility identical, no utility change is significant
    assert all(u["change"] == 0 and not u["significant"] for r in result["rows"] for u in r["utility"])
    # and the other way round it is an improvement, not a regression
    back = bench.compare(new, old)
    assert not back["regressions"] and [x.split(":")[0] for x in back["improvements"]] == [
        f"{SLOWED} (epsilon=1)"]


def test_two_same_seed_catalogue_records_report_no_regression(tmp_path, capsys):
    only = "report_noisy_max gumbel"
    old = bench.run(quick=True, repeats=3, only=only, seed=3, utility_repeats=3)
    new = bench.run(quick=True, repeats=3, only=only, seed=3, utility_repeats=3)
    assert main(["bench", "compare", write(tmp_path, "a.json", old), write(tmp_path, "b.json", new)]) == 0
    out = capsys.readouterr().out
    assert "no regression" in out and "p_correct" in out
    # 3 timed calls a side cannot reach alpha = 0.01 (min p = 1/C(6,3) = 0.05): the table says so
    assert "too few timed calls" in out


def fake_record(rows, version=bench.SCHEMA_VERSION, sizes=None, seed=1):
    return {"schema": f"dpnoise-bench/{version}", "schema_version": version, "created": "x",
            "dpnoise_version": "t", "settings": {"quick": True, "sizes": sizes or {"samples": 1}, "seed": seed},
            "results": rows}


def fake_row(name, times, items=10, util=None, stats=None):
    row = {"workload": name, "epsilon": 1.0, "unit": "ops", "items": items,
           "seconds": {"raw": list(times)}, "utility": util}
    if stats is not None:
        row["utility_stats"] = stats
    return row


def test_utility_regression_needs_a_significant_worse_change_beyond_the_threshold():
    def st(mean, se):
        return {"rms_error": {"mean": mean, "stderr": se}}
    same = [1.0] * 6
    old = fake_record([fake_row("a", same, util={"rms_error": 10.0}, stats=st(10.0, 0.1)),
                       fake_row("b", same, util={"rms_error": 10.0}, stats=st(10.0, 0.1)),
                       fake_row("c", same, util={"rms_error": 10.0}, stats=st(10.0, 0.1)),
                       fake_row("d", same, util={"rms_error": 10.0}, stats=st(10.0, 2.0))])
    new = fake_record([fake_row("a", same, util={"rms_error": 12.0}, stats=st(12.0, 0.1)),   # worse, significant
                       fake_row("b", same, util={"rms_error": 8.0}, stats=st(8.0, 0.1)),     # better
                       fake_row("c", same, util={"rms_error": 10.5}, stats=st(10.5, 0.1)),   # below the threshold
                       fake_row("d", same, util={"rms_error": 12.0}, stats=st(12.0, 2.0))])  # within noise
    result = bench.compare(old, new)
    assert [r["workload"] for r in result["rows"] if r["regression"]] == ["a"]
    (d,) = [r for r in result["rows"] if r["workload"] == "d"]
    assert d["utility"][0]["significant"] is False


def test_coverage_is_worse_away_from_its_target():
    def rec(cov):
        return fake_record([fake_row("x", [1.0] * 5, util={"ci_coverage": cov},
                                     stats={"ci_coverage": {"mean": cov, "stderr": 0.001}})])
    assert bench.compare(rec(0.95), rec(0.80))["regressions"]
    assert not bench.compare(rec(0.80), rec(0.95))["regressions"]


def test_a_row_that_fails_in_new_is_a_regression_and_rows_in_one_record_are_listed(capsys, tmp_path):
    old = fake_record([fake_row("a", [1.0] * 5), fake_row("gone", [1.0] * 5)])
    new = fake_record([{"workload": "a", "epsilon": 1.0, "error": "RuntimeError: x"}, fake_row("added", [1.0] * 5)])
    result = bench.compare(old, new)
    assert result["regressions"] == ["a (epsilon=1): failed in NEW"]
    assert result["only_in_old"] == ["gone (epsilon=1)"] and result["only_in_new"] == ["added (epsilon=1)"]
    assert main(["bench", "compare", write(tmp_path, "o.json", old), write(tmp_path, "n.json", new)]) == 1
    out = capsys.readouterr().out
    assert "only in OLD: gone" in out and "only in NEW: added" in out


def one_line_exit_2(capsys, argv, *needles):
    assert main(argv) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert captured.out == "" and len(err.splitlines()) == 1, err
    for needle in needles:
        assert needle in err, err


def test_unusable_input_exits_2_with_one_line(tmp_path, capsys):
    good = write(tmp_path, "good.json", fake_record([fake_row("a", [1.0] * 5)]))
    one_line_exit_2(capsys, ["bench", "compare", str(tmp_path / "missing.json"), good], "missing.json", "no such file")
    (tmp_path / "text.json").write_text("secret-looking content, not json")
    one_line_exit_2(capsys, ["bench", "compare", str(tmp_path / "text.json"), good], "not JSON")
    assert "secret" not in capsys.readouterr().err
    other = write(tmp_path, "other.json", {"rows": []})
    one_line_exit_2(capsys, ["bench", "compare", good, other], "not a dpnoise bench record")
    v1 = write(tmp_path, "v1.json", fake_record([fake_row("a", [1.0])], version=1))
    one_line_exit_2(capsys, ["bench", "compare", v1, good], "schema_version 1")
    v3 = write(tmp_path, "v3.json", fake_record([fake_row("a", [1.0] * 5)], version=3))
    one_line_exit_2(capsys, ["bench", "compare", v3, good], "schema versions differ", "--force")
    big = write(tmp_path, "big.json", fake_record([fake_row("a", [1.0] * 5)], sizes={"samples": 2}))
    one_line_exit_2(capsys, ["bench", "compare", big, good], "sizes differ", "--force")
    nothing = write(tmp_path, "nothing.json", fake_record([fake_row("b", [1.0] * 5)]))
    one_line_exit_2(capsys, ["bench", "compare", nothing, good], "no row")
    one_line_exit_2(capsys, ["bench", "compare", good, good, "--threshold", "0.9"], "threshold")
    one_line_exit_2(capsys, ["bench", "compare", good, good, "--alpha", "1.5"], "alpha")
    one_line_exit_2(capsys, ["bench", "compare", good], "NEW.json")
    # --force compares other schemas and sizes (per item)
    assert main(["bench", "compare", v3, good, "--force"]) == 0
    assert "schema versions differ" in capsys.readouterr().out
    assert main(["bench", "compare", big, good, "--force"]) == 0


def test_force_compares_rows_of_other_sizes_per_item():
    old = fake_record([fake_row("a", [1.0] * 6, items=10)])
    new = fake_record([fake_row("a", [3.0] * 6, items=20)])  # 0.15 s per item against 0.1
    with pytest.raises(bench.RecordError, match="sizes differ"):
        bench.compare(old, new)
    result = bench.compare(old, new, force=True)
    (row,) = result["rows"]
    assert row["time"]["ratio"] == pytest.approx(1.5) and "size_note" in row


@pytest.mark.parametrize("kw", [{"threshold": 1.0}, {"threshold": float("nan")}, {"alpha": 0.0}, {"alpha": True}])
def test_bad_compare_arguments_name_themselves(kw):
    rec = fake_record([fake_row("a", [1.0] * 5)])
    with pytest.raises(ValueError, match=next(iter(kw))):
        bench.compare(rec, copy.deepcopy(rec), **kw)


@pytest.mark.parametrize("m,n", [(3, 3), (5, 7), (12, 9), (40, 45), (70, 80)])
def test_mann_whitney_matches_scipy(m, n):
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(m * 100 + n)
    x, y = rng.normal(0.4, 1, m), rng.normal(0, 1, n)
    method = "exact" if m * n <= 2500 else "asymptotic"
    expected = stats.mannwhitneyu(x, y, alternative="greater", method=method).pvalue
    assert bench.mann_whitney_greater(x, y) == pytest.approx(expected, rel=1e-9)
    ties_x, ties_y = np.round(x), np.round(y)  # ties: the normal approximation with tie correction
    expected = stats.mannwhitneyu(ties_x, ties_y, alternative="greater", method="asymptotic").pvalue
    assert bench.mann_whitney_greater(ties_x, ties_y) == pytest.approx(expected, rel=1e-9)


def test_mann_whitney_bad_samples():
    with pytest.raises(ValueError, match="new"):
        bench.mann_whitney_greater([], [1.0])
    with pytest.raises(ValueError, match="old"):
        bench.mann_whitney_greater([1.0], [float("nan")])
