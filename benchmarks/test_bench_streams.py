"""Bit sources: dpnoise's ChaCha20 as a NumPy BitGenerator against PCG64, and exact sampling
driven by a NumPy bit generator (a sequential family), measured in the same run.

Target (issue #9): np.random.Generator(dpnoise.ChaCha20()).random(10**7) within 2x of PCG64,
checked in test_capsule_ratio by interleaved timing (best of rounds, same run).

Run: pytest benchmarks/test_bench_streams.py
"""
import time

import numpy as np
import pytest

import dpnoise
from conftest import RESULTS, record

N = 10**7
CAPSULE_TARGET = 2.0  # ChaCha20 time / PCG64 time for .random(N)


def test_numpy_random_pcg64(benchmark):
    g = np.random.Generator(np.random.PCG64())
    x = record(benchmark, "numpy random (PCG64)", lambda: g.random(N), N)
    assert abs(x.mean() - 0.5) < 1e-3


def test_numpy_random_chacha20(benchmark):
    g = np.random.Generator(dpnoise.ChaCha20())  # secure key; NumPy's reserved stream
    x = record(benchmark, "numpy random (dpnoise ChaCha20)", lambda: g.random(N), N)
    assert abs(x.mean() - 0.5) < 1e-3


def test_numpy_integers32_chacha20(benchmark):
    g = np.random.Generator(dpnoise.ChaCha20())
    x = record(benchmark, "numpy uint32 (dpnoise ChaCha20)",
               lambda: g.integers(0, 2**32, N, dtype=np.uint32), N)
    assert abs(x.mean() / 2**31 - 1) < 1e-3


def test_exact_laplace_from_pcg64(benchmark):
    g = dpnoise.Generator(np.random.PCG64(1))
    x = record(benchmark, "discrete_laplace(10) from PCG64", lambda: g.discrete_laplace(10, N), N)
    q = np.exp(-0.1)
    assert abs(x.var() / (2 * q / (1 - q) ** 2) - 1) < 0.01


def test_exact_laplace_from_chacha20(benchmark):
    g = dpnoise.default_rng()
    x = record(benchmark, "discrete_laplace(10) from ChaCha20", lambda: g.discrete_laplace(10, N), N)
    q = np.exp(-0.1)
    assert abs(x.var() / (2 * q / (1 - q) ** 2) - 1) < 0.01


def test_exact_gaussian_from_pcg64(benchmark):
    g = dpnoise.Generator(np.random.PCG64(1))
    x = record(benchmark, "discrete_gaussian(10) from PCG64", lambda: g.discrete_gaussian(10, N), N)
    assert abs(x.var() / 100 - 1) < 0.01


def test_capsule_ratio(request):
    """Interleaved rounds (PCG64, ChaCha20, PCG64, ...) so both see the same machine load."""
    if request.config.getoption("benchmark_disable", False):
        pytest.skip("benchmarks disabled: no timings to compare")
    pcg = np.random.Generator(np.random.PCG64())
    cha = np.random.Generator(dpnoise.ChaCha20())
    best = {"pcg": float("inf"), "chacha": float("inf")}
    for _ in range(7):
        for name, g in (("pcg", pcg), ("chacha", cha)):
            t0 = time.perf_counter()
            g.random(N)
            best[name] = min(best[name], time.perf_counter() - t0)
    ratio = best["chacha"] / best["pcg"]
    RESULTS["capsule interleaved PCG64"] = best["pcg"] / N
    RESULTS["capsule interleaved ChaCha20"] = best["chacha"] / N
    print(f"\nChaCha20 / PCG64 for .random({N}): {ratio:.2f} (target <= {CAPSULE_TARGET})")
    assert ratio <= CAPSULE_TARGET
