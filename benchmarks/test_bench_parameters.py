"""Per-element parameters: 10^6 distinct float scales, converted exactly in C++ (parameters.hpp)
and sampled, against NumPy's float laplace with the same array of scales, same run.

Target (platform issue #9): rng.discrete_laplace(scales) with 10^6 distinct float64 scales in
well under 1 s (3.4 s before, 3.3 s of it creating Python Fractions); test_distinct_scales_target.
"""
import numpy as np

import dpnoise
from conftest import assert_targets, record_time

N = 10**6
SCALES = np.random.default_rng(0).uniform(0.5, 100.0, N)  # all distinct
rng = dpnoise.default_rng()
nprng = np.random.default_rng()
TARGET_SECONDS = 1.0


def test_distinct_float_scales(benchmark):
    y = record_time(benchmark, "discrete_laplace(10^6 distinct float scales)", lambda: rng.discrete_laplace(SCALES))
    # the mean absolute value of DLap(t) is about t for large t: a loose check of the scales used
    assert 0.9 < np.mean(np.abs(y)) / np.mean(SCALES) < 1.1


def test_numpy_laplace_same_scales(benchmark):
    y = record_time(benchmark, "numpy laplace(10^6 float scales)", lambda: nprng.laplace(0.0, SCALES))
    assert 0.9 < np.mean(np.abs(y)) / np.mean(SCALES) < 1.1


def test_distinct_scales_target(request):
    assert_targets(request, seconds=[("discrete_laplace(10^6 distinct float scales)", TARGET_SECONDS)])
