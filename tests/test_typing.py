"""The package ships ``py.typed``: a user's typed program that uses dpnoise as documented must
type-check (issue #36 item 6). mypy reads a small program against the package's annotations and
``_core.pyi``; each line is a documented use whose declared type was wrong before (a mechanism's
``epsilon`` was ``Optional[float]`` for every mechanism, so ``m.epsilon / 2`` did not check).
The whole package's own check is ``.ci/lint``; this test guards what users see."""
from pathlib import Path

import pytest

import dpnoise

api = pytest.importorskip("mypy.api")

PROGRAM = """
from typing import Optional

import numpy as np

import dpnoise
from dpnoise.mechanisms import (
    DiscreteLaplaceMechanism, Histogram, LaplaceMechanism, NoisyGridPlan, PrivateKDE, RandomizedResponse,
)
from dpnoise.selection import AboveThreshold, ExponentialMechanism, ReportNoisyMax

laplace = LaplaceMechanism(1.0)
half: float = laplace.epsilon / 2
plan: NoisyGridPlan = laplace.plan((3,))
k: Optional[int] = plan.k
print(DiscreteLaplaceMechanism(0.5).epsilon + Histogram(1.0, categories=3).delta)
print(PrivateKDE(1.0, 1e-6, bandwidth=1.0, grid=np.linspace(0.0, 1.0, 5)).epsilon * 2)
rr = RandomizedResponse(1.0, 3)
keep: float = rr.epsilon * rr.keep_probability
print(ReportNoisyMax(1.0).epsilon - ExponentialMechanism(1.0).epsilon, AboveThreshold(1.0, 0.5).epsilon / 2)
g = dpnoise.default_rng()
x: float = float(g.discrete_laplace(2))
"""


def test_a_typed_user_program_checks(tmp_path, monkeypatch):
    monkeypatch.setenv("MYPYPATH", str(Path(dpnoise.__file__).resolve().parent.parent))
    out, err, _ = api.run(["--config-file", "", "--python-version", "3.10", "--strict",
                           "--cache-dir", str(tmp_path / "cache"), "-c", PROGRAM])
    # only the program's own lines: errors inside dpnoise are .ci/lint's (mypy --strict reports
    # the package's modules too when they are read from a source tree rather than installed)
    mine = [line for line in out.splitlines() if line.startswith("<string>:")]
    assert not mine and not err, "\n".join(mine) + err
