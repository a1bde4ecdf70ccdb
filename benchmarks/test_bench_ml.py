"""The ML path against NumPy's insecure equivalent, same run (issue 24, item 3).

* DP-SGD step: N(0, (z·C)²) added in place to 10^7 float32 gradient entries (z = 1.1, C = 1).
  NumPy: PCG64 ``standard_normal(dtype=float32, out=noise)``, scale, add (buffers preallocated).
  dpnoise: ``GaussianMechanism(noise_multiplier=z, sensitivity=C)(grad, out=grad)``, default
  settings (one thread), exact discrete Gaussian noise on the grid, written in place.
  Target: dpnoise time <= 1.0x NumPy's.
* float64 releases at 10^6 and 10^7: ``LaplaceMechanism(1.0)(x)`` against ``x + laplace(0, 1, n)``
  (target >= 2x NumPy's speed) and ``GaussianMechanism(1.0, 1e-5)(x)`` against
  ``x + normal(0, σ, n)`` (target >= 1.2x).
Ratios are printed by test_ml_ratios_report and checked by test_ml_targets.
"""
import numpy as np
import pytest

from conftest import RESULTS, record
from dpnoise.mechanisms import GaussianMechanism, LaplaceMechanism

Z, C = 1.1, 1.0
N_SGD = 10**7
SIZES = (10**6, 10**7)
NP = np.random.default_rng()  # PCG64
GRAD = np.random.default_rng(0).normal(size=N_SGD).astype(np.float32)
NOISE = np.empty(N_SGD, dtype=np.float32)
SGD = GaussianMechanism(noise_multiplier=Z, sensitivity=C)
SGD2 = GaussianMechanism(noise_multiplier=Z, sensitivity=C, threads=2)  # the moonshot: all threads
LAP = LaplaceMechanism(1.0)
GAU = GaussianMechanism(1.0, 1e-5)
X = {n: np.random.default_rng(1).normal(size=n) for n in SIZES}


def _numpy_sgd_step():
    NP.standard_normal(dtype=np.float32, out=NOISE)
    np.multiply(NOISE, np.float32(Z * C), out=NOISE)
    np.add(GRAD, NOISE, out=GRAD)
    return GRAD


def test_numpy_dpsgd_step(benchmark):
    g = record(benchmark, "ml numpy dpsgd step f32", _numpy_sgd_step, N_SGD, rounds=5)
    assert g.dtype == np.float32


def test_dpnoise_dpsgd_step(benchmark):
    before = GRAD.copy()
    g = record(benchmark, "ml dpnoise dpsgd step f32", lambda: SGD(GRAD, out=GRAD), N_SGD, rounds=5)
    assert g is GRAD and g.dtype == np.float32
    # 6 rounds (warm-up included) of N(0, (zC)^2) since `before`: std sqrt(6) z C
    assert abs(np.std(GRAD - before, dtype=np.float64) / (np.sqrt(6) * Z * C) - 1) < 0.02


def test_dpnoise_dpsgd_step_two_threads(benchmark):
    g = record(benchmark, "ml dpnoise dpsgd step f32 threads=2", lambda: SGD2(GRAD, out=GRAD), N_SGD, rounds=5)
    assert g is GRAD


@pytest.mark.parametrize("n", SIZES)
def test_numpy_x_plus_laplace(benchmark, n):
    y = record(benchmark, f"ml numpy x+laplace n={n}", lambda: X[n] + NP.laplace(0.0, 1.0, n), n, rounds=3)
    assert y.shape == (n,)


@pytest.mark.parametrize("n", SIZES)
def test_laplace_mechanism(benchmark, n):
    y = record(benchmark, f"ml LaplaceMechanism n={n}", lambda: LAP(X[n]), n, rounds=3)
    assert abs(np.var(y - X[n]) / 2 - 1) < 0.05


@pytest.mark.parametrize("n", SIZES)
def test_numpy_x_plus_normal(benchmark, n):
    s = GAU.sigma
    y = record(benchmark, f"ml numpy x+normal n={n}", lambda: X[n] + NP.normal(0.0, s, n), n, rounds=3)
    assert y.shape == (n,)


@pytest.mark.parametrize("n", SIZES)
def test_gaussian_mechanism(benchmark, n):
    y = record(benchmark, f"ml GaussianMechanism n={n}", lambda: GAU(X[n]), n, rounds=3)
    assert 0.9 < np.std(y - X[n]) / GAU.sigma < 1.3


# (dpnoise key, NumPy key, target, kind): "time" means dpnoise time / NumPy time <= target,
# "speed" means NumPy time / dpnoise time >= target.
TARGETS = [("ml dpnoise dpsgd step f32", "ml numpy dpsgd step f32", 1.0, "time")]
TARGETS += [(f"ml LaplaceMechanism n={n}", f"ml numpy x+laplace n={n}", 2.0, "speed") for n in SIZES]
TARGETS += [(f"ml GaussianMechanism n={n}", f"ml numpy x+normal n={n}", 1.2, "speed") for n in SIZES]


def _ratio(a, b, kind):
    if a not in RESULTS or b not in RESULTS:
        return None
    return RESULTS[a] / RESULTS[b] if kind == "time" else RESULTS[b] / RESULTS[a]


def test_ml_ratios_report():
    if not RESULTS:
        pytest.skip("benchmarks disabled")
    moon = _ratio("ml dpnoise dpsgd step f32 threads=2", "ml numpy dpsgd step f32", "time")
    if moon is not None:
        print(f"\nDP-SGD step threads=2 vs NumPy: {moon:.3f} time ratio (moonshot <= 0.5, not asserted)")
    for a, b, t, kind in TARGETS:
        r = _ratio(a, b, kind)
        if r is not None:
            rel = "time ratio (<= target)" if kind == "time" else "speed-up (>= target)"
            print(f"\n{a} vs {b}: {r:.3f} {rel}, target {t}")


def test_ml_targets(request):
    if request.config.getoption("benchmark_disable", False):
        pytest.skip("benchmarks disabled: no timings to compare")
    if any(_ratio(a, b, k) is None for a, b, _, k in TARGETS):
        pytest.skip("run the whole file to compare")
    misses = [f"{a} / {b} = {_ratio(a, b, k):.2f} (target {'<=' if k == 'time' else '>='} {t})"
              for a, b, t, k in TARGETS
              if (_ratio(a, b, k) > t if k == "time" else _ratio(a, b, k) < t)]
    assert not misses, "; ".join(misses)
