"""The command line: sample prints what it is asked for, bench reports, and every usage error is
one line with exit status 2 before any work. The demo's own tests are in tests/test_demo.py."""
import json
import sys

import numpy as np
import pytest

import dpnoise
from dpnoise import cli
from dpnoise.cli import main


def test_sample_prints_n_integers(capsys):
    assert main(["sample", "discrete-laplace", "--scale", "2", "-n", "5"]) == 0
    lines = capsys.readouterr().out.split()
    assert len(lines) == 5 and all(int(x) == float(x) for x in lines)


def test_sample_seeded_is_reproducible_and_warns(capsys):
    main(["sample", "discrete-gaussian", "--sigma", "7/3", "-n", "20", "--seed", "3"])
    first = capsys.readouterr()
    main(["sample", "discrete-gaussian", "--sigma", "7/3", "-n", "20", "--seed", "3"])
    assert capsys.readouterr().out == first.out
    assert "NOT secure" in first.err


def test_sample_rejects_bad_parameter(capsys):
    assert main(["sample", "discrete-laplace", "--scale", "-1"]) == 2
    assert "scale" in capsys.readouterr().err
    assert main(["sample", "bernoulli"]) == 2


# -- usage errors: one line on stderr, exit status 2, before any work (issue #10, defect 18) ------

_BAD_ARGS = [
    ["sample", "discrete-laplace", "--scale", "1", "--seed", "-1"],
    ["sample", "discrete-laplace", "--scale", "1", "--seed", str(2**256)],
    ["sample", "discrete-laplace", "--scale", "1", "--seed", "1.5"],
    ["sample", "discrete-laplace", "--scale", "1", "-n", "99999999999999999999"],
    ["sample", "discrete-laplace", "--scale", "1", "-n", "0"],
    ["sample", "discrete-laplace", "--scale", "1", "-n", "1" * 5000],  # past int()'s digit limit
    ["sample", "discrete-laplace", "--scale", "1e999999999"],          # would take minutes to expand
    ["sample", "discrete-laplace", "--scale", "nan"],
    ["sample", "discrete-laplace", "--scale", "-1"],
    ["sample", "discrete-gaussian", "--sigma", "1e300"],
    ["sample", "bernoulli", "--p", "2"],
    ["sample", "bernoulli"],
    ["sample", "bernoulli", "--p", "1/2", "--scale", "3"],
    ["sample", "discrete-laplace", "--scale", "1", "--threads", "0"],
    ["sample", "no-such-distribution"],
    ["demo", "--threads", "100000"],
    ["demo", "-n", "99999999999999999999"],
    ["demo", "--devices", "0"],
    ["demo", "--devices", "100000000000"],
    ["demo", "--plot", "/nonexistent/x.png"],
    ["bench", "--bogus"],
    ["bench", "--threads", "-3"],
    ["bench", "--repeats", "0"],
    ["--no-such-flag"],
    [],
]


@pytest.mark.parametrize("argv", _BAD_ARGS, ids=lambda a: " ".join(a)[:60] or "no-args")
def test_usage_errors_are_one_line_exit_2_and_no_work(argv, capsys, monkeypatch):
    def no_work(*args, **kwargs):
        raise AssertionError("work started despite a usage error")
    monkeypatch.setattr(cli, "_demo", no_work)
    monkeypatch.setattr(cli.dpnoise, "default_rng", _only_throwaway(cli.dpnoise.default_rng))
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith("dpnoise")


def _only_throwaway(real):
    """default_rng, but only the parameter check's throwaway default_rng(0) may be made."""
    def rng(seed=None):
        if seed != 0:
            raise AssertionError("a generator was made despite a usage error")
        return real(seed)
    return rng


def test_usage_error_messages_say_what_is_allowed(capsys):
    main(["sample", "discrete-laplace", "--scale", "1", "--seed", str(2**256)])
    assert "seed must be in [0, 2**256)" in capsys.readouterr().err
    main(["demo", "--threads", "100000"])
    assert "threads must be between 1 and 4096" in capsys.readouterr().err
    main(["demo", "--plot", "/nonexistent/x.png"])
    assert "does not exist" in capsys.readouterr().err


def test_sample_streams_in_chunks_and_matches_the_library(capsys):
    n = cli._CHUNK + 5  # two chunks
    assert main(["sample", "discrete-laplace", "--scale", "3", "-n", str(n), "--seed", "11"]) == 0
    got = np.array(capsys.readouterr().out.split(), dtype=np.int64)
    rng = dpnoise.default_rng(11)
    want = np.concatenate([rng.discrete_laplace(3, cli._CHUNK), rng.discrete_laplace(3, 5)])
    assert np.array_equal(got, want)


def test_sample_seed_at_the_top_of_its_range_works(capsys):
    assert main(["sample", "bernoulli", "--p", "1/3", "-n", "3", "--seed", str(2**256 - 1)]) == 0
    assert len(capsys.readouterr().out.split()) == 3


# -- dpnoise bench (issue #9; the harness itself: tests/test_bench_harness.py) ----------------------

def test_bench_quick_json_has_the_documented_record(capsys):
    assert main(["bench", "--quick", "--json", "--repeats", "1", "--no-progress"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["schema"] == "dpnoise-bench/4" and rec["schema_version"] == 4
    assert {"created", "dpnoise_version", "machine", "settings", "results", "notes", "loaded",
            "seconds_total"} <= rec.keys()
    assert {"cpu", "cores", "usable_cores", "platform", "python", "numpy", "chacha20_backend",
            "load_average"} <= rec["machine"].keys()
    assert rec["machine"]["chacha20_backend"] == dpnoise._core.chacha20_backend()
    assert rec["dpnoise_version"] == dpnoise.__version__
    assert rec["settings"]["quick"] is True and rec["settings"]["repeats"] == 1
    assert rec["settings"]["seed"] is None and rec["settings"]["seeded_insecure"] is False
    names = [r["workload"] for r in rec["results"]]
    for must in ("discrete_laplace", "discrete_gaussian", "LaplaceMechanism", "GaussianMechanism", "ChaCha20", "PLD",
                 "report_noisy_max", "ldp grr server", "ldp heavy hitters pem client"):
        assert any(must in n for n in names), must
    with_ref = [r for r in rec["results"] if r["reference"] is not None]
    assert len(with_ref) >= 5
    for r in rec["results"]:
        assert "error" not in r, r
        assert {"workload", "epsilon", "unit", "items", "size", "seconds", "throughput", "throughput_median",
                "utility", "reference", "ratio", "peers"} <= r.keys()
        assert r["items"] > 0 and r["throughput"] > 0 and r["peers"] == []
        assert len(r["seconds"]["raw"]) == 1 and r["seconds"]["min"] > 0
        if r["reference"] is not None:
            assert r["ratio"] > 0 and r["reference"]["throughput"] > 0
            assert abs(r["ratio"] - r["throughput"] / r["reference"]["throughput"]) < 1e-9 * r["ratio"]
    # --quick computes utility too
    assert sum(r["utility"] is not None for r in rec["results"]) >= 10


def test_bench_table_and_peers_never_fail(capsys):
    # --peers with peers absent or present: skipped with the reason, or timed; never an error
    assert main(["bench", "--quick", "--peers", "--repeats", "1", "--only", "RDP", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "RDP accountant" in out and "cpu:" in out
    assert "peer dp-accounting" in out


def test_bench_registry_takes_new_workloads():
    from dpnoise import bench

    w = bench.Workload(name="test-only: sum", items=lambda ctx: 10, setup=lambda ctx: np.arange(10),
                       run=lambda ctx, s: s.sum(), reference_name="python sum",
                       reference=lambda ctx, s: sum(s.tolist()))
    bench.register(w)
    try:
        with pytest.raises(ValueError, match="already registered"):
            bench.register(w)
        rec = bench.run(quick=True, repeats=1, only="test-only")
        assert [r["workload"] for r in rec["results"]] == ["test-only: sum"]
        assert rec["results"][0]["ratio"] > 0
    finally:
        bench._REGISTRY.pop(w.name)
    with pytest.raises(TypeError, match="workload"):
        bench.register("not a workload")
    with pytest.raises(ValueError, match="unit"):
        bench.register(bench.Workload(name="x", items=lambda c: 1, setup=lambda c: None,
                                      run=lambda c, s: None, unit="bytes"))
    with pytest.raises(ValueError, match="metrics and utility"):
        bench.register(bench.Workload(name="x", items=lambda c: 1, setup=lambda c: None,
                                      run=lambda c, s: None, metrics=("recall",)))


def test_bench_only_matching_nothing_exits_2_before_any_work(capsys):
    assert main(["bench", "--quick", "--only", "no-such-workload-anywhere"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1 and "no-such-workload-anywhere" in err


def test_bench_bad_epsilon_and_workloads_are_usage_errors(capsys):
    for argv in (["bench", "--epsilon", "0,1"], ["bench", "--epsilon", "1,inf"], ["bench", "--epsilon", "x"],
                 ["bench", "--workloads", "no_such_module_for_dpnoise_bench"]):
        assert main(argv) == 2, argv
        out, err = capsys.readouterr()
        assert out == "" and len(err.strip().splitlines()) == 1, (argv, err)
    main(["bench", "--workloads", "no_such_module_for_dpnoise_bench"])
    assert "ModuleNotFoundError" in capsys.readouterr().err  # the import's own exception text


# -- dpnoise audit: reserved, forwarded to dpnoise.audit.cli_main ---------------------------------

def test_audit_without_the_audit_package_is_a_clear_usage_error(capsys, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "dpnoise.audit", None)  # as if dpnoise.audit did not exist
    assert main(["audit", "--anything", "x"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1 and "dpnoise.audit" in err


def test_audit_forwards_its_argv_and_exit_status(monkeypatch):
    import sys
    import types

    seen = []
    fake = types.ModuleType("dpnoise.audit")
    fake.cli_main = lambda argv: seen.append(argv) or 3
    monkeypatch.setitem(sys.modules, "dpnoise.audit", fake)
    assert main(["audit", "run", "--trials", "1000", "-h"]) == 3
    assert seen == [["run", "--trials", "1000", "-h"]]


@pytest.mark.parametrize("argv", [["demo", "--plot", "p.png"], ["bench", "--plot", "p.png"],
                                  ["audit", "--plot", "p.png"]])
def test_plot_hint_names_a_command_that_works_from_a_source_checkout(argv, tmp_path, monkeypatch, capsys):
    """``pip install 'dpnoise[plot]'`` fails from a source checkout (issue 33): the hint names
    matplotlib itself; one line, exit status 2."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib raises ImportError
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "pip install matplotlib" in err and "dpnoise[plot]" not in err and err.count("\n") == 1


def test_package_names_refuses_bad_arguments():
    from dpnoise.demos.data import package_names
    names = package_names(100, max_bytes=20)
    assert len(set(names)) == 100 and all(11 <= len(n) <= 20 for n in names)
    assert package_names(100, max_bytes=20) == names  # deterministic
    with pytest.raises(ValueError, match="count"):
        package_names(-1)
    with pytest.raises(ValueError, match="max_bytes"):
        package_names(5, max_bytes=10)
    with pytest.raises(TypeError, match="count"):
        package_names(2.5)
