"""``dpnoise bench`` for plugin authors who type-check (issue #36 item 6): a workload and a peer
written as docs/bench.md shows them, with utility hooks typed ``-> dict[str, float]``, must
check under ``mypy --strict`` (before, the peer's hook had to return ``dict[str, float | None]``
exactly, and dict is invariant, so no hook typed the natural way was accepted). And a workload
that takes an ε, run on a context without one, fails with an error that says so."""
from pathlib import Path

import pytest

import dpnoise
from dpnoise import bench

PLUGIN = """
from typing import Any, Callable

import numpy as np

from dpnoise.bench import Context, Peer, Workload, register


def setup(ctx: Context) -> dict[str, Any]:
    return {"rng": ctx.numpy_rng(), "epsilon": ctx.epsilon}


def utility(ctx: Context, state: dict[str, Any]) -> dict[str, float]:
    return {"rms_error": 1.0}


def peer_make(lib: Any, ctx: Context, state: Any) -> tuple[Callable[[], object], int]:
    return (lambda: None), 1


def peer_utility(lib: Any, ctx: Context, state: Any) -> dict[str, float]:
    return {"rms_error": float(np.sqrt(2.0))}


register(Workload(
    name="typed plugin", items=lambda ctx: 1, setup=setup, run=lambda ctx, s: None, epsilon=1.0,
    metrics=("rms_error",), utility=utility,
    peers=(Peer("numpy", "numpy peer", peer_make, peer_utility),),
))
"""


def test_a_typed_plugin_checks(tmp_path, monkeypatch):
    api = pytest.importorskip("mypy.api")
    monkeypatch.setenv("MYPYPATH", str(Path(dpnoise.__file__).resolve().parent.parent))
    out, err, _ = api.run(["--config-file", "", "--python-version", "3.10", "--strict",
                           "--cache-dir", str(tmp_path / "cache"), "-c", PLUGIN])
    # only the program's own lines (the package's own check is .ci/lint)
    mine = [line for line in out.splitlines() if line.startswith("<string>:")]
    assert not mine and not err, "\n".join(mine) + err


def test_an_epsilon_workload_without_epsilon_says_so():
    ctx = bench.make_context(quick=True, repeats=1, seed=1)  # epsilon None: run() sets it per row
    for name in ("LaplaceMechanism on floats", "report_noisy_max gumbel", "ldp grr server"):
        (w,) = bench.select(name)
        assert w.epsilon is not None
        row = bench.run_workload(w, ctx)
        assert row["error"].startswith("ValueError") and "needs an epsilon" in row["error"], row["error"]
