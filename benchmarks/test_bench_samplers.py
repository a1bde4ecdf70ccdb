"""Throughput of the exact samplers against NumPy's (insecure, floating-point) samplers,
measured in the same run. Targets from the foundation issue, checked in test_targets:

  discrete_laplace(scale=10)  >= 0.5  x numpy laplace(scale=10)      (secure, 1 thread, 1e7)
  discrete_gaussian(sigma=10) >= 0.25 x numpy normal(scale=10)
  parameters 0.5 and 1e6      no more than 2x slower than 10
  threads=2                   >= 1.7  x one thread

Run: pytest benchmarks  (CI runs the test suite only; these take about a minute).
"""
import numpy as np
import pytest

import dpnoise
from conftest import assert_targets, record

N = 10**7
rng = dpnoise.default_rng()  # the secure generator: what users get
nprng = np.random.default_rng()


def test_numpy_laplace(benchmark):
    x = record(benchmark, "numpy laplace(10)", lambda: nprng.laplace(scale=10, size=N), N)
    assert abs(x.var() - 200) < 2


def test_numpy_normal(benchmark):
    x = record(benchmark, "numpy normal(10)", lambda: nprng.normal(scale=10, size=N), N)
    assert abs(x.var() - 100) < 1


@pytest.mark.parametrize("scale", [0.5, 10, 10**6], ids=str)
def test_discrete_laplace(benchmark, scale):
    x = record(benchmark, f"discrete_laplace({scale})", lambda: rng.discrete_laplace(scale, N), N)
    q = np.exp(-1 / scale)
    assert abs(x.var() / (2 * q / (1 - q) ** 2) - 1) < 0.01


@pytest.mark.parametrize("sigma", [0.5, 10, 10**6], ids=str)
def test_discrete_gaussian(benchmark, sigma):
    x = record(benchmark, f"discrete_gaussian({sigma})", lambda: rng.discrete_gaussian(sigma, N), N)
    if sigma >= 10:
        assert abs(x.var() / sigma**2 - 1) < 0.01


def test_discrete_laplace_two_threads(benchmark):
    x = record(benchmark, "discrete_laplace(10) threads=2", lambda: rng.discrete_laplace(10, N, threads=2), N)
    assert abs(x.var() - 199.83) < 2


def test_random_raw(benchmark):
    x = record(benchmark, "random_raw", lambda: rng.random_raw(N), N)
    assert x.dtype == np.uint64


def test_opendp_discrete_laplace(benchmark):
    """OpenDP's exact discrete Laplace on a vector of 10^5 integers (its vectorised path)."""
    dp = pytest.importorskip("opendp.prelude")
    dp.enable_features("contrib")
    n = 100_000
    meas = dp.m.make_laplace(dp.vector_domain(dp.atom_domain(T=int)), dp.l1_distance(T=int), scale=10.0)
    zeros = [0] * n
    x = np.asarray(record(benchmark, "opendp laplace(10) on int vector", lambda: meas(zeros), n, rounds=2))
    q = np.exp(-0.1)
    assert abs(x.var() / (2 * q / (1 - q) ** 2) - 1) < 0.05


TARGETS = [
    ("discrete_laplace(10)", "numpy laplace(10)", 0.5),
    ("discrete_gaussian(10)", "numpy normal(10)", 0.25),
    ("discrete_laplace(0.5)", "discrete_laplace(10)", 0.5),
    ("discrete_laplace(1000000)", "discrete_laplace(10)", 0.5),
    ("discrete_gaussian(0.5)", "discrete_gaussian(10)", 0.5),
    ("discrete_gaussian(1000000)", "discrete_gaussian(10)", 0.5),
    ("discrete_laplace(10) threads=2", "discrete_laplace(10)", 1.7),
]


def test_targets(request):
    assert_targets(request, ratios=TARGETS, shown=[("discrete_laplace(10)", "opendp laplace(10) on int vector")])
