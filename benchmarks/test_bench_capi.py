"""The C API from Cython, against the Python API, in one run (issue 24, item 4; issue 23, 15).

* 10^6 discrete Laplace draws (scale 3/2) into int64: per-call functions, a prepared sampler
  drawn per value, the bulk fill (1 and 2 threads), and Python's Generator.discrete_laplace.
* DP-SGD's noise step on 10^7 float32 gradient entries (σ = z·C, z = 1.1, C = 1): the Cython
  example of docs/cython.md (add_gaussian_noise_, grid noise in place) against
  GaussianMechanism(rho=1/(2z²), sensitivity=C)(grad), on the mechanism's own grid, both with
  the same thread count: 1, and every CPU the process may use (the mechanism's default since
  0.6.0; the C API takes the count from its caller). Target: the Cython kernel within 1.1x of
  the Python mechanism at each count.

Builds the example and capi_bench.pyx with Cython at session start (skipped without Cython,
setuptools or a C compiler). The benchmarks also check their answers.
"""
import os
import shutil
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import dpnoise
from conftest import TIMES, record_time

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "consumers"))  # the test suite's Cython builder
from cython_build import built_extensions  # noqa: E402

SOURCES = [ROOT / "docs" / "examples" / "cython" / "noise_loops.pyx", Path(__file__).with_name("capi_bench.pyx")]
N = 1_000_000
GRAD = 10_000_000
Z, C = 1.1, 1.0


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    pytest.importorskip("Cython")
    pytest.importorskip("setuptools")
    if not shutil.which("cc") or not all(p.is_file() for p in SOURCES):
        pytest.skip("needs a C compiler and the source tree")
    with built_extensions(SOURCES, tmp_path_factory.mktemp("bench_capi"), ["-O3"]) as modules:
        yield tuple(modules)


def check_laplace(x):
    # scale 3/2: E|X| = 2q/(1-q^2) with q = e^{-2/3}; within 1% for 10^6 draws (~10 standard errors)
    q = np.exp(-2 / 3)
    assert x.shape == (N,) and abs(np.abs(x).mean() / (2 * q / (1 - q * q)) - 1) < 0.01


@pytest.mark.parametrize("way", ["per_call", "prepared_draw", "bulk_fill_1", "bulk_fill_2", "python"])
def test_laplace_1e6(benchmark, built, way):
    _, bench = built
    g = dpnoise.default_rng()
    if way == "python":
        fn = lambda: g.discrete_laplace(Fraction(3, 2), size=N)  # noqa: E731
    elif way.startswith("bulk_fill"):
        threads = int(way[-1])
        fn = lambda: bench.bulk_fill(g, 3, 2, N, threads)  # noqa: E731
    else:
        fn = lambda: getattr(bench, way)(g, 3, 2, N)  # noqa: E731
    check_laplace(record_time(benchmark, f"capi laplace 1e6: {way}", fn, rounds=9))


THREADS = sorted({1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1})


def mechanism_and_grid(threads=1):
    mech = dpnoise.GaussianMechanism(rho=1 / (2 * Z * Z), sensitivity=C, threads=threads)
    k, _, sigma_units = mech.grid(GRAD)
    return mech, k, Fraction(sigma_units) * Fraction(2) ** k


def mechanism_step(mech, grad):
    """The mechanism's fastest form: in place (out=grad) where it has one, else a new array."""
    try:
        return mech(grad, out=grad)
    except TypeError:
        return mech(grad)


@pytest.mark.parametrize("threads", THREADS)
def test_dpsgd_python_mechanism(benchmark, threads):
    mech, _, _ = mechanism_and_grid(threads)
    grad = np.zeros(GRAD, dtype=np.float32)
    record_time(benchmark, f"dpsgd 1e7 float32 threads={threads}: GaussianMechanism",
                lambda: mechanism_step(mech, grad))
    out = mechanism_step(mech, np.zeros(100_000, dtype=np.float32))
    assert 1.05 < float(np.std(out)) < 1.15


@pytest.mark.parametrize("threads", THREADS)
def test_dpsgd_cython_example(benchmark, built, threads):
    noise_loops, _ = built
    _, k, sigma = mechanism_and_grid()
    grad = np.zeros(GRAD, dtype=np.float32)
    g = dpnoise.default_rng()
    out = record_time(benchmark, f"dpsgd 1e7 float32 threads={threads}: Cython add_gaussian_noise_ (C API)",
                      lambda: noise_loops.add_gaussian_noise_(grad, g, sigma, grid_exponent=k, threads=threads))
    assert out is grad
    fresh = np.zeros(100_000, dtype=np.float32)  # (the timed calls noised grad several times)
    noise_loops.add_gaussian_noise_(fresh, g, sigma, grid_exponent=k)
    assert 1.05 < float(np.std(fresh)) < 1.15


def test_capi_ratios():
    keys = ["capi laplace 1e6: per_call", "capi laplace 1e6: prepared_draw", "capi laplace 1e6: bulk_fill_1",
            "capi laplace 1e6: bulk_fill_2", "capi laplace 1e6: python",
            ] + [f"dpsgd 1e7 float32 threads={n}: {what}" for n in THREADS
                 for what in ("GaussianMechanism", "Cython add_gaussian_noise_ (C API)")]
    if not all(k in TIMES for k in keys):
        pytest.skip("needs the timings above (benchmarks enabled, Cython built)")
    t = {k.split(": ", 1)[1]: TIMES[k] for k in keys}
    print("\nC API, 10^6 discrete Laplace: per-call / bulk(1 thread) =", round(t["per_call"] / t["bulk_fill_1"], 2),
          " prepared per-value / bulk =", round(t["prepared_draw"] / t["bulk_fill_1"], 2),
          " Python / bulk(1) =", round(t["python"] / t["bulk_fill_1"], 2),
          " bulk(1) / bulk(2) =", round(t["bulk_fill_1"] / t["bulk_fill_2"], 2))
    ratios = {n: TIMES[f"dpsgd 1e7 float32 threads={n}: Cython add_gaussian_noise_ (C API)"]
              / TIMES[f"dpsgd 1e7 float32 threads={n}: GaussianMechanism"] for n in THREADS}
    for n, ratio in ratios.items():
        print(f"DP-SGD 1e7 float32, threads={n}: Cython kernel / Python mechanism =", round(ratio, 3))
    assert t["bulk_fill_1"] < t["prepared_draw"] < t["per_call"]
    for n, ratio in ratios.items():
        assert ratio <= 1.1, f"threads={n}: the Cython DP-SGD kernel is {ratio:.2f}x the Python mechanism (target <= 1.1x)"
