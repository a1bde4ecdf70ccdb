"""Issue #33, item 5: a MeanOracle on very narrow bounds (below about 2^-992 wide) used to cost
about 2.5 s per value in the exact kernel (its double estimate 2^32/(high − low) overflowed).
Now such bounds reach the kernel scaled by a power of two (the same reports, bit for bit), and
bounds whose half-width would be subnormal are refused naming ``bounds``."""
import math
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import dpnoise
from dpnoise import ldp
from dpnoise.ldp.numeric.mean import MIN_WIDTH, NARROW_WIDTH, kernel_scale

METHODS = ["duchi", "piecewise", "hybrid", "bitmean"]
NARROW = [(0.0, 1e-300), (-1e-300, 1e-300), (1e-300, 1.5e-300), (-3e-305, -1e-305), (0.0, 2.0 ** -1021)]


def client(oracle, seed=1, **kw):
    return oracle.client(dpnoise.default_rng(seed), allow_insecure=True, **kw)


@pytest.mark.parametrize("method", METHODS)
def test_narrow_bounds_privatize_at_the_usual_speed(method):
    # 4 values near the top of the bounds: 0.7.1 spent ~2.5 s on each (~10 s here); now
    # microseconds. 1 s leaves a margin of >1000x over the usual cost on a loaded machine.
    oracle = ldp.MeanOracle(method, 1.0, bounds=(0.0, 1e-300))
    values = np.full(4, 0.9e-300)
    start = time.perf_counter()
    reports = client(oracle).privatize(values)
    assert time.perf_counter() - start < 1.0
    assert reports.n == 4


@pytest.mark.parametrize("bounds", NARROW)
@pytest.mark.parametrize("method", METHODS)
def test_scaled_kernel_gives_the_reports_of_the_unscaled_bounds(method, bounds):
    # the position u = (v − low)/(high − low) is invariant under an exact power-of-two scaling,
    # so the reports equal, bit for bit, those of bounds and values scaled by hand
    low, high = bounds
    k = kernel_scale(low, high)
    assert k > 0
    g = np.random.default_rng(3)
    values = low + (high - low) * g.uniform(-0.2, 1.2, size=300)  # a few clipped on both sides
    values = np.append(values, [low, high, 0.0, -0.0, 5e-324])
    narrow = ldp.MeanOracle(method, 1.0, bounds=bounds)
    wide = ldp.MeanOracle(method, 1.0, bounds=(math.ldexp(low, k), math.ldexp(high, k)))
    assert kernel_scale(wide.low, wide.high) == 0
    a = client(narrow, seed=7).privatize(values)
    b = client(wide, seed=7).privatize(np.ldexp(np.clip(values, low, high), k))
    assert a.data.keys() == b.data.keys()
    for name in a.data:
        np.testing.assert_array_equal(a.data[name], b.data[name])


def test_vectors_and_memoised_clients_on_narrow_bounds():
    # every path into the kernel: vectors (one coordinate each) and daily collection's memoised bits
    low, high = 0.0, 1e-300
    k = kernel_scale(low, high)
    values = np.random.default_rng(4).uniform(low, high, size=(50, 3))
    narrow = ldp.MeanOracle("hybrid", 1.0, bounds=(low, high), dimensions=3)
    wide = ldp.MeanOracle("hybrid", 1.0, bounds=(math.ldexp(low, k), math.ldexp(high, k)), dimensions=3)
    a, b = client(narrow, 2).privatize(values), client(wide, 2).privatize(np.ldexp(values, k))
    for name in a.data:
        np.testing.assert_array_equal(a.data[name], b.data[name])
    memo = ldp.MeanOracle("bitmean", 1.0, bounds=(low, high), points=9)
    start = time.perf_counter()
    r = client(memo, 5, device_key=b"\x01" * 32).privatize(np.full(4, 0.6e-300))
    assert time.perf_counter() - start < 1.0 and r.n == 4


@pytest.mark.parametrize("method", METHODS)
def test_estimates_on_narrow_bounds_are_unbiased(method):
    # 20,000 users, one seeded run per method; |z| > 4.5 has probability 7e-6 under a normal law
    # (the stated stderr matches the empirical one: test_mean_oracle), so a false alarm is ~3e-5
    low, high = 1e-300, 3e-300
    values = np.random.default_rng(6).uniform(low, high, size=20000)
    oracle = ldp.MeanOracle(method, 1.0, bounds=(low, high))
    agg = oracle.aggregator().add(client(oracle, 11).privatize(values))
    assert agg.mean_stderr() > 0
    assert abs(agg.mean() - values.mean()) < 4.5 * agg.mean_stderr()


@pytest.mark.parametrize("bounds", [(0.0, 5e-324), (0.0, 2.0 ** -1022), (1e-310, 2e-310),
                                    (-2.0 ** -1023, 2.0 ** -1023)])
def test_bounds_with_a_subnormal_half_width_are_refused(bounds):
    assert bounds[1] - bounds[0] < MIN_WIDTH
    with pytest.raises(ValueError, match=r"bounds.*2\^-1021"):
        ldp.MeanOracle("duchi", 1.0, bounds=bounds)


def test_ordinary_bounds_are_not_scaled():
    # reports of existing configurations are unchanged: the kernel sees their bounds as given
    for bounds in [(0.0, 1.0), (0.0, 600.0), (-1e300, 1e300), (1.0, 1.0 + 2.0 ** -52), (0.0, NARROW_WIDTH)]:
        assert kernel_scale(*bounds) == 0
        assert ldp.MeanOracle("hybrid", 1.0, bounds=bounds)._kernel_bounds() == bounds


def test_constant_time_kernel_on_narrow_bounds():
    # its fixed-point grid has no double estimate: already fast, bounds taken as given
    oracle = ldp.MeanOracle("hybrid", 1.0, bounds=(0.0, 1e-300), constant_time=True)
    start = time.perf_counter()
    reports = client(oracle).privatize(np.full(100, 0.9e-300))
    assert time.perf_counter() - start < 1.0 and reports.n == 100


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(exponent=st.integers(-1070, -880), a=st.floats(-1.0, 1.0), b=st.floats(-1.0, 1.0),
       method=st.sampled_from(METHODS), seed=st.integers(0, 2**32 - 1))
def test_property_any_narrow_bounds_give_the_scaled_reports_quickly(exponent, a, b, method, seed):
    # property over bounds of every scale from 2^-1070 to 2^-880: accepted iff at least 2^-1021
    # wide; then the reports equal those of the bounds scaled by hand, at the usual speed
    low, high = sorted((math.ldexp(a, exponent), math.ldexp(b, exponent)))
    assume(low < high)
    if not high - low >= MIN_WIDTH:
        with pytest.raises(ValueError, match="bounds"):
            ldp.MeanOracle(method, 1.0, bounds=(low, high))
        return
    k = kernel_scale(low, high)
    values = low + (high - low) * np.random.default_rng(seed).uniform(-0.1, 1.1, size=16)
    narrow = ldp.MeanOracle(method, 1.0, bounds=(low, high))
    start = time.perf_counter()
    got = client(narrow, seed).privatize(values)
    assert time.perf_counter() - start < 1.0
    wide = ldp.MeanOracle(method, 1.0, bounds=(math.ldexp(low, k), math.ldexp(high, k)))
    want = client(wide, seed).privatize(np.ldexp(np.clip(values, low, high), k))
    for name in got.data:
        np.testing.assert_array_equal(got.data[name], want.data[name])
