"""The command line: sample prints what it is asked for, demo runs end to end, bench reports,
and every usage error is one line with exit status 2 before any work."""
import json

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


def test_demo_runs_and_reports_fit(capsys):
    assert main(["demo", "-n", "20000", "--devices", "20000"]) == 0
    out = capsys.readouterr().out
    assert "ratio" in out and "exact" in out
    # the fit table's standardised errors are numbers, and no |z| is absurd
    zs = [float(line.split()[-1]) for line in out.splitlines() if line.strip()[:1] in "-0123456789" and len(line.split()) == 4]
    assert len(zs) == 14 and np.max(np.abs(zs)) < 6


def test_demo_reports_privacy_spent_per_release(capsys):
    assert main(["demo", "-n", "20000", "--devices", "20000"]) == 0
    out = capsys.readouterr().out
    spent = [float(line.split("epsilon=")[1].split()[0]) for line in out.splitlines() if "spent so far" in line]
    assert len(spent) == 3
    assert spent == sorted(spent) and 0 < spent[0] and spent[-1] <= 3.0  # within the demo's budget


def test_demo_telemetry_estimates_with_intervals(capsys):
    assert main(["demo", "-n", "20000", "--devices", "200000"]) == 0
    out = capsys.readouterr().out
    assert "Local DP telemetry: 200,000 simulated devices" in out
    coverage = [float(line.split("%")[0]) for line in out.splitlines() if "within their 95% interval" in line]
    # about 1024 roughly independent 95% intervals: fewer than 90% covering is a < 1e-9 event
    assert len(coverage) == 1 and 90.0 <= coverage[0] <= 100.0
    assert "four servers merged" in out and "Norm-Sub" in out
    # heavy hitters without a dictionary: at 200,000 devices and eps = 4 the top names are many
    # stderr apart from the rest; finding fewer than 7 of the true top 10 would be a bug
    assert "Local DP heavy hitters" in out and "NO list of names" in out
    found = [int(line.split()[0]) for line in out.splitlines() if "of the true top 10 found" in line]
    assert len(found) == 1 and found[0] >= 7


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


# -- dpnoise bench (issue #9) ---------------------------------------------------------------------

def test_bench_quick_json_has_the_documented_record(capsys):
    assert main(["bench", "--quick", "--json", "--repeats", "1"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["schema"] == "dpnoise-bench/1"
    assert {"created", "dpnoise_version", "machine", "settings", "results", "notes"} <= rec.keys()
    assert {"cpu", "cores", "usable_cores", "platform", "python", "numpy", "chacha20_backend",
            "load_average"} <= rec["machine"].keys()
    assert rec["machine"]["chacha20_backend"] == dpnoise._core.chacha20_backend()
    assert rec["dpnoise_version"] == dpnoise.__version__
    assert rec["settings"]["quick"] is True and rec["settings"]["repeats"] == 1
    names = [r["workload"] for r in rec["results"]]
    for must in ("discrete_laplace", "discrete_gaussian", "LaplaceMechanism", "GaussianMechanism", "ChaCha20", "PLD"):
        assert any(must in n for n in names), must
    with_ref = [r for r in rec["results"] if r["reference"] is not None]
    assert len(with_ref) >= 5
    for r in rec["results"]:
        assert {"workload", "unit", "items", "seconds", "throughput", "reference", "ratio", "peers"} <= r.keys()
        assert r["items"] > 0 and r["seconds"] > 0 and r["throughput"] > 0 and r["peers"] == []
        if r["reference"] is not None:
            assert r["ratio"] > 0 and r["reference"]["throughput"] > 0
            assert abs(r["ratio"] - r["throughput"] / r["reference"]["throughput"]) < 1e-9 * r["ratio"]


def test_bench_table_and_peers_never_fail(capsys):
    # --peers with peers absent or present: skipped with a note, or timed; never an error
    assert main(["bench", "--quick", "--peers", "--repeats", "1", "--only", "RDP"]) == 0
    out = capsys.readouterr().out
    assert "RDP accountant" in out and "cpu:" in out
    assert "peer dp-accounting" in out  # timed, or "skipped (not installed)"


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
