"""The benchmark harness (dpnoise.bench, issue 26 item 1): seeded utility figures reproduce,
the JSON record has its documented, versioned fields, custom workloads load from a module or an
entry point, --only and bad input are usage errors, peers' failures say why, ratios are only
like for like. (How long --quick takes is measured, not unit-tested: docs/bench.md.)"""
import json
import sys
import textwrap

import numpy as np
import pytest

from dpnoise import bench
from dpnoise.cli import main

# A cheap, varied subset of the catalogue: mechanism, selection, two frequency-oracle servers.
SUBSETS = ("LaplaceMechanism", "report_noisy_max gumbel", "ldp hadamard server", "ldp flh server")


def seeded_utility(seed, epsilons=None):
    figures = []
    for only in SUBSETS:
        rec = bench.run(quick=True, repeats=1, only=only, seed=seed, epsilons=epsilons)
        figures += bench.utility_figures(rec)
    return figures


def test_seeded_runs_give_identical_utility_figures():
    first, second = seeded_utility(11), seeded_utility(11)
    assert len(first) == len(SUBSETS) and all(u for _, _, u in first)
    assert first == second  # exact float equality: same seed, same version, same numbers
    # and the seed matters (so the equality above is not vacuous)
    assert seeded_utility(12) != first


def test_seeded_run_says_it_is_insecure_and_unseeded_is_secure():
    seeded = bench.run(quick=True, repeats=1, only="ldp grr server", seed=3)
    assert seeded["settings"]["seed"] == 3 and seeded["settings"]["seeded_insecure"] is True
    assert any("NOT secure" in n and "allow_insecure=True" in n for n in seeded["notes"])
    plain = bench.run(quick=True, repeats=1, only="ldp grr server")
    assert plain["settings"]["seeded_insecure"] is False
    assert any("secure OS-keyed" in n for n in plain["notes"])


def test_context_generators_follow_the_seed():
    ctx = bench.make_context(quick=True, seed=5)
    assert ctx.allow_insecure
    a = ctx.rng("x").discrete_laplace(3, 5)
    assert np.array_equal(a, ctx.rng("x").discrete_laplace(3, 5))
    assert not np.array_equal(ctx.rng("x").random_raw(4), ctx.rng("y").random_raw(4))  # one stream per label
    assert not ctx.rng("x").is_secure
    secure = bench.make_context(quick=True)
    assert secure.rng().is_secure and not secure.allow_insecure and secure.public_key("k") is None


def test_json_record_fields_and_timing_summary():
    rec = bench.run(quick=True, repeats=3, only="discrete_laplace")
    json.dumps(rec)  # serialisable as it is
    assert rec["schema"] == bench.SCHEMA == "dpnoise-bench/4" and rec["schema_version"] == bench.SCHEMA_VERSION == 4
    (row,) = rec["results"]
    t = row["seconds"]
    assert len(t["raw"]) == 3 and t["min"] == min(t["raw"]) and t["min"] <= t["median"] <= max(t["raw"])
    q25, q75 = np.percentile(t["raw"], [25, 75])
    assert t["iqr"] == pytest.approx(q75 - q25)
    assert row["throughput"] == pytest.approx(row["items"] / t["min"])
    assert row["throughput_median"] == pytest.approx(row["items"] / t["median"])
    assert len(row["reference"]["seconds"]["raw"]) == 3
    assert row["epsilon"] is None and set(row["utility"]) == {"variance_ratio"}
    assert 0.95 < row["utility"]["variance_ratio"] < 1.05  # 200,000 samples: sd of the ratio ~ 0.005


def test_epsilon_sweep_gives_one_row_per_epsilon():
    rec = bench.run(quick=True, repeats=1, only="LaplaceMechanism", epsilons=[0.5, 2.0], seed=1)
    rows = rec["results"]
    assert [r["epsilon"] for r in rows] == [0.5, 2.0] and rec["settings"]["epsilons"] == [0.5, 2.0]
    # MSE / 2b^2 is about 1 at every epsilon (100,000 values: sd ~ 0.01; the grid adds a little)
    assert all(0.9 < r["utility"]["mse_over_2b2"] < 1.2 for r in rows)
    # workloads without an epsilon are run once
    rec = bench.run(quick=True, repeats=1, only="RDP accountant", epsilons=[0.5, 2.0])
    assert [r["epsilon"] for r in rec["results"]] == [None]
    with pytest.raises(ValueError, match="epsilon"):
        bench.run(quick=True, only="RDP", epsilons=[0.0])


def test_only_is_case_insensitive_and_matching_nothing_raises():
    assert [w.name for w in bench.select("laplacemechanism")] == ["LaplaceMechanism on floats"]
    with pytest.raises(LookupError, match="no workload"):
        bench.select("nothing-is-called-this")


def test_ratios_only_against_like_for_like_references():
    names = {w.name: w for w in bench.workloads()}
    clients = [w for n, w in names.items() if n.startswith("ldp ") and " client" in n]
    assert clients
    for w in clients:
        # only k-ary randomized response is compared with NumPy's k-ary randomized response
        assert (w.reference is not None) == w.name.startswith("ldp grr client"), w.name
    assert all(w.reference is None for n, w in names.items() if "heavy hitters" in n)


WORKLOAD_MODULE = textwrap.dedent('''
    from dpnoise.bench import Peer, Workload, register

    def make_broken(module, ctx, state):
        raise AssertionError("not reached: the import fails first")

    def make_stand_in(module, ctx, state):  # the standard library's json, standing in for a peer library
        return (lambda: module.dumps(state[:10])), 10

    register(Workload(
        name="tmp-plugin: mean of zeros", unit="ops", items=lambda ctx: 100,
        setup=lambda ctx: [0.0] * 100, run=lambda ctx, s: sum(s) / len(s), epsilon=1.0,
        metrics=("rms_error",), utility=lambda ctx, s: {"rms_error": 1.0 / ctx.epsilon},
        peers=(Peer("tmp_plugin_broken_peer", "a peer that fails at import", make_broken),
               Peer("tmp_plugin_absent_peer_xyz", "a peer that is not installed", make_broken),
               Peer("json", "a stand-in peer", make_stand_in, lambda module, ctx, s: {"rms_error": 3.0})),
    ))
''')


@pytest.fixture
def plugin_dir(tmp_path, monkeypatch):
    (tmp_path / "tmp_bench_plugin.py").write_text(WORKLOAD_MODULE)
    (tmp_path / "tmp_plugin_broken_peer.py").write_text("raise RuntimeError('peer library is broken here')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    bench._REGISTRY.pop("tmp-plugin: mean of zeros", None)
    bench._LOADED.pop("tmp_bench_plugin", None)
    for mod in ("tmp_bench_plugin", "tmp_plugin_broken_peer"):
        sys.modules.pop(mod, None)


def test_workloads_module_from_a_directory_appears_in_the_json(plugin_dir, capsys):
    argv = ["bench", "--workloads", "tmp_bench_plugin", "--only", "TMP-PLUGIN", "--quick", "--json", "--repeats", "1",
            "--epsilon", "0.5,2", "--peers", "--no-progress"]
    assert main(argv) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["loaded"]["tmp_bench_plugin"] == "ok"
    rows = rec["results"]
    assert [(r["workload"], r["epsilon"], r["utility"]) for r in rows] == [
        ("tmp-plugin: mean of zeros", 0.5, {"rms_error": 2.0}), ("tmp-plugin: mean of zeros", 2.0, {"rms_error": 0.5})]
    broken, absent, stand_in = rows[0]["peers"]
    # an installed peer that fails at import shows its exception text, not "not installed"
    assert broken["skipped"] == "import failed: RuntimeError: peer library is broken here"
    assert absent["skipped"].startswith("not installed (ModuleNotFoundError")
    # a peer that runs: timed, its own size stated, its utility kept (and marked unseeded)
    assert stand_in["items"] == 10 and stand_in["same_size"] is False and len(stand_in["seconds"]["raw"]) == 1
    assert stand_in["utility"] == {"rms_error": 3.0} and stand_in["utility_seeded"] is False
    assert stand_in["ratio"] == pytest.approx(rows[0]["throughput"] / stand_in["throughput"])


def test_entry_points_register_workloads(monkeypatch):
    class EntryPoint:
        name, value = "fake", "fake_plugin:register_all"

        def load(self):
            return lambda: bench.register(bench.Workload(name="entry-point workload", items=lambda c: 1,
                                                         setup=lambda c: None, run=lambda c, s: None, unit="ops"))

    class Broken(EntryPoint):
        name, value = "broken", "broken_plugin"

        def load(self):
            raise ImportError("broken plugin")

    monkeypatch.setattr(bench.registry, "_entry_points", lambda: [EntryPoint(), Broken()])
    try:
        rec = bench.run(quick=True, repeats=1, only="entry-point workload")
        assert [r["workload"] for r in rec["results"]] == ["entry-point workload"]
        assert any("broken plugin" in n for n in rec["notes"])  # a broken plugin is reported, not fatal
    finally:
        bench._REGISTRY.pop("entry-point workload", None)
        for key in [k for k in bench._LOADED if k.startswith("entry point")]:
            bench._LOADED.pop(key)


def test_a_failing_workload_is_recorded_and_the_exit_status_is_1(capsys):
    def fail(ctx):
        raise RuntimeError("setup exploded")

    bench.register(bench.Workload(name="tmp-failing workload", items=lambda c: 1, setup=fail, run=lambda c, s: None))
    try:
        assert main(["bench", "--quick", "--only", "tmp-failing", "--json", "--no-progress"]) == 1
        out, err = capsys.readouterr()
        (row,) = json.loads(out)["results"]
        assert row["error"] == "RuntimeError: setup exploded" and "tmp-failing" in err
    finally:
        bench._REGISTRY.pop("tmp-failing workload")


def test_list_names_every_registered_workload(capsys):
    assert main(["bench", "--list"]) == 0
    assert capsys.readouterr().out.splitlines() == [w.name for w in bench.workloads()]


def test_progress_goes_to_stderr(capsys):
    assert main(["bench", "--quick", "--repeats", "1", "--only", "RDP accountant"]) == 0
    out, err = capsys.readouterr()
    assert "[1/1" in err and "RDP accountant" in err and "[1/1" not in out


def test_plot_writes_a_png_or_says_what_is_missing(tmp_path, monkeypatch):
    rec = bench.run(quick=True, repeats=1, only="report_noisy_max gumbel", epsilons=[0.5, 2.0], seed=2)
    path = tmp_path / "bench.png"
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match=r"pip install matplotlib"):
            bench.plot(rec, str(path))
    else:
        bench.plot(rec, str(path))
        assert path.stat().st_size > 1000
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ImportError, match=r"pip install matplotlib"):
        bench.plot(rec, str(path))
