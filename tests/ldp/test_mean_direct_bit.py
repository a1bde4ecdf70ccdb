"""The direct Duchi bit (mean_mechanisms.hpp, layout 2, from 0.11.0): fresh "duchi"/"bitmean"
reports decide "R < c(u)" with c(u) = 1/2 + κ(u − 1/2), κ = tanh(ε/2), in one comparison, instead
of rounding the value to the 2^-32 grid first (layout 1, kept for memoised answers).

Checked here: the enclosures the decision trusts (the coarse C of c·2^32 and the 64-bit bounds
of c·2^64) against c computed with mpmath at 60 digits, on edge values of many bounds; the
AVX-512 and portable coarse kernels give the same reports; the refinement's law in the band the
first word leaves open; the reports' law; independence from ``threads``; and memoised answers
unchanged (layout 1).
"""
import math
import pickle
from fractions import Fraction

import mpmath
import numpy as np
import pytest

import dpnoise
from dpnoise import _core, ldp
from dpnoise.ldp._memo import memo_fingerprint, memo_generator

mpmath.mp.dps = 60

# bounds as the kernel sees them, with values at their edges: clipped, ±0, subnormal, far below
# the bounds' scale, next to the bounds, on the grid. Some bounds have no fixed point (width far
# below the magnitude) or no coarse step (magnitude below 2^-900): every value then goes through
# the exact refinement.
EDGES = {
    (0.0, 600.0): [0.0, 300.0, 150.0, 600.0, -1.0, 601.0, 5e-324, 1e-300, 1e-20, 599.9999999999999, 37.5],
    (-1.0, 1.0): [-0.0, 0.0, -1.0, 1.0, 0.5, -0.25, 2.0 ** -32, -(2.0 ** -33), 1e-300, -1e-300, 0.999999999],
    (0.1, 0.7): [0.1, 0.7, 0.4, 0.1000000000000001, 0.3, 0.6999999999999999],
    (1e6, 1e6 + 1.0): [1e6, 1e6 + 0.5, 1e6 + 1e-9, 1e6 + 0.999],  # width 2^-20 of the magnitude
    (1e6, 1e6 + 1e-9): [1e6, 1e6 + 5e-10, 1e6 + 1e-9, 2e6],       # no fixed point
    (-3e300, 1e300): [0.0, 1e299, -2e300, 1.0, -1e-300, -3e300, 1e300],
    (0.0, 2.0 ** -950): [0.0, 2.0 ** -951, 5e-324, 2.0 ** -950, 2.0 ** -1000],
    (0.0, 2.0 ** -1000): [0.0, 2.0 ** -1001, 5e-324, 2.0 ** -1000, 1e-305],  # no coarse step
    (1e-30, 1.0): [1e-30, 0.5, 1.0, 1e-31, 0.999, 2e-30],  # map() wide for every value: fixed point only
    (-(2.0 ** -700), 2.0 ** -699): [0.0, 2.0 ** -701, -(2.0 ** -700), 5e-324, -5e-324],
    (0.0, 1024.0): [1.0, 512.0, 3.0, 1023.0, 0.5, 2.0 ** -30, 1023.9999999999999],
}
EPSILONS = [0.05, 1.0, 4.0, 30.0]


def _c(v: float, low: float, high: float, gamma: Fraction):
    """c(u) = (u + e(1 − u))/(1 + e), e = e^{−γ}, u = (clip(v) − low)/(high − low), at 60 digits."""
    x = min(max(v, low), high)
    u = Fraction(x) - Fraction(low)
    u /= Fraction(high) - Fraction(low)
    um = mpmath.mpf(u.numerator) / u.denominator
    e = mpmath.exp(-mpmath.mpf(gamma.numerator) / gamma.denominator)
    return (um + e * (1 - um)) / (1 + e)


def _values(bounds):
    low, high = bounds
    g = np.random.default_rng(17)
    rand = low + (high / 2 - low / 2) * 2 * g.random(200)
    return np.concatenate([np.array(EDGES[bounds], dtype=np.float64), rand])


@pytest.mark.parametrize("eps", EPSILONS)
@pytest.mark.parametrize("bounds", list(EDGES))
def test_the_enclosures_hold(bounds, eps):
    """center − slack <= c·2^64 < center + slack, and |C − c·2^32| < 14 (the coarse step's proved
    bound, docs/ldp_numeric.md; the kernel decides with a slack of 64), on every value."""
    low, high = bounds
    gamma = ldp.MeanOracle("duchi", eps).gamma
    values = _values(bounds)
    centers, slacks, coarse, _fast, has_coarse = _core.ldp._mean_duchi_direct_bounds_for_testing(
        values, low, high, gamma.numerator, gamma.denominator)
    worst = 0.0
    for v, center, slack, cc in zip(values, centers.tolist(), slacks.tolist(), coarse.tolist()):
        c = _c(float(v), low, high, gamma)
        c64 = c * mpmath.mpf(2) ** 64
        if slack != 2**64 - 1:
            assert center - slack <= c64 < center + slack
        if has_coarse:
            worst = max(worst, float(abs(cc - c * mpmath.mpf(2) ** 32)))
    assert worst < 14
    if bounds in ((0.0, 2.0 ** -1000), (1e6, 1e6 + 1e-9)):
        assert not has_coarse  # the refinement-only path is exercised by these bounds
    else:
        assert has_coarse


@pytest.fixture
def portable_then_restore():
    old = _core.ldp._force_duchi_coarse_kernel_for_testing(0)
    yield
    _core.ldp._force_duchi_coarse_kernel_for_testing(old)


@pytest.mark.parametrize("dims", [1, 3])
def test_avx512_and_portable_kernels_give_the_same_reports(portable_then_restore, dims):
    """The coarse step's AVX-512 kernel and its portable loop: the same reports, bit for bit, for
    lengths around the 8-value vectors and the 2,048-value blocks, edge values included."""
    try:
        _core.ldp._force_duchi_coarse_kernel_for_testing(1)
    except ValueError:
        pytest.skip("this CPU has no AVX-512F/DQ/VL")
    for bounds in [(0.0, 600.0), (-1.0, 1.0), (-3e300, 1e300), (1e6, 1e6 + 1.0)]:
        edge = np.repeat(np.array(EDGES[bounds]), 7)
        g = np.random.default_rng(3)
        rand = bounds[0] + (bounds[1] / 2 - bounds[0] / 2) * 2 * g.random(5000)
        allv = np.concatenate([edge, rand])
        for n in (1, 7, 8, 9, 63, 2047, 2048, 2049, allv.size - allv.size % dims):
            values = allv[:n - n % dims].reshape(-1, dims) if dims > 1 else allv[:n]
            oracle = ldp.MeanOracle("duchi", 1.3, bounds=bounds, dimensions=dims)
            out = {}
            for level in (0, 1):
                _core.ldp._force_duchi_coarse_kernel_for_testing(level)
                out[level] = oracle._privatize(dpnoise.default_rng(9), values, 1)
            for name in out[0]:
                np.testing.assert_array_equal(out[0][name], out[1][name], err_msg=f"{bounds} n={n} {name}")


@pytest.mark.parametrize("bounds,v", [((0.0, 600.0), 123.456), ((-1.0, 1.0), -0.3), ((1e6, 1e6 + 1e-9), 1e6 + 3e-10)])
def test_refinement_in_the_band(bounds, v):
    """With R's top word w32 = floor(c·2^32), R < c holds with probability frac(c·2^32) (R's other
    bits uniform): 4,000 refinements on a seeded generator, a two-sided z-test at |z| < 4.5 (false
    alarm about 7e-6). One word below always decides "yes", one above always "no"."""
    low, high = bounds
    eps = 1.0
    gamma = ldp.MeanOracle("duchi", eps).gamma
    c32 = _c(v, low, high, gamma) * mpmath.mpf(2) ** 32
    w = int(mpmath.floor(c32))
    p = float(c32 - w)
    gen = dpnoise.default_rng(21)._core
    args = (low, high, gamma.numerator, gamma.denominator)
    n = 4000
    yes = sum(_core.ldp._mean_duchi_direct_refine_for_testing(gen, v, w, *args) for _ in range(n))
    assert abs(yes - n * p) / math.sqrt(n * p * (1 - p)) < 4.5
    assert all(_core.ldp._mean_duchi_direct_refine_for_testing(gen, v, w - 1, *args) for _ in range(50))
    assert not any(_core.ldp._mean_duchi_direct_refine_for_testing(gen, v, w + 1, *args) for _ in range(50))


@pytest.mark.parametrize("method", ["duchi", "bitmean"])
@pytest.mark.parametrize("bounds", [(0.0, 600.0), (1e6, 1e6 + 1e-9)])
def test_reports_have_the_law(method, bounds):
    """P(bit = 1 | v) = c(u) at values across the bounds (one of them clipped): 100,000 seeded
    reports per value, |z| < 4.5 per value (false alarm about 7e-6 each, 5e-5 over the test)."""
    low, high = bounds
    oracle = ldp.MeanOracle(method, 1.5, bounds=bounds)
    c = oracle.client(dpnoise.default_rng(31), allow_insecure=True)
    n = 100_000
    for t in (0.0, 0.2, 0.5, 0.77, 1.0, 1.5):
        v = low + t * (high - low)
        bits = np.unpackbits(c.privatize(np.full(n, v)).data["bits"], count=n, bitorder="little")
        p = float(_c(v, low, high, oracle.gamma))
        assert abs(bits.sum() - n * p) / math.sqrt(n * p * (1 - p)) < 4.5, (t, bits.mean(), p)


def test_vector_reports_have_the_law():
    """dimensions = 4: coordinates uniform and each coordinate's bit with its own c(u); 200,000
    reports, |z| < 4.5 per check (false alarm about 7e-6 each, 6e-5 over the test)."""
    oracle = ldp.MeanOracle("duchi", 2.0, bounds=(-1.0, 1.0), dimensions=4)
    row = np.array([-1.0, -0.2, 0.4, 1.0])
    n = 200_000
    r = oracle.client(dpnoise.default_rng(32), allow_insecure=True).privatize(np.tile(row, (n, 1)))
    coords = r.data["coordinates"]
    bits = np.unpackbits(r.data["bits"], count=n, bitorder="little")
    for j, v in enumerate(row):
        sel = coords == j
        assert abs(sel.sum() - n / 4) / math.sqrt(n * 0.25 * 0.75) < 4.5
        p = float(_c(v, -1.0, 1.0, oracle.gamma))
        k = int(sel.sum())
        assert abs(bits[sel].sum() - k * p) / math.sqrt(k * p * (1 - p)) < 4.5


def test_reports_do_not_depend_on_threads():
    values = np.random.default_rng(5).uniform(-10, 700, size=3 * 2**16 + 77)
    oracle = ldp.MeanOracle("duchi", 0.7, bounds=(0.0, 600.0))
    one = oracle._privatize(dpnoise.default_rng(8), values, 1)
    two = oracle._privatize(dpnoise.default_rng(8), values, 2)
    np.testing.assert_array_equal(one["bits"], two["bits"])


def test_memoised_answers_keep_the_grid_first_layout():
    """A memoised device's permanent answer is drawn as before 0.11.0 (layout 1): the same bits as
    the reference loop on the same PRF stream, so an upgraded device re-sends its old answers
    (tests/ldp/data/pre_axes' mean_bitmean_daily blob pins the bytes too)."""
    oracle = ldp.MeanOracle("bitmean", 2.0, bounds=(0.0, 10.0), points=33, instantaneous_epsilon=4.0)
    key = bytes(range(32))
    fp = memo_fingerprint(oracle)
    grid = oracle.grid_values(np.arange(33))
    lo, hi = oracle._kernel_bounds()
    for i in range(33):
        got = oracle._privatize_permanent(memo_generator(key, fp, i), grid[i:i + 1], 1)["bits"]
        _c0, ref, _v = _core.ldp._mean_privatize_reference_for_testing(
            memo_generator(key, fp, i)._core, grid[i:i + 1], 1, oracle.kernel, lo, hi, oracle.gamma.numerator,
            oracle.gamma.denominator, False, 1)
        np.testing.assert_array_equal(got, ref)


def test_layout_is_checked():
    oracle = ldp.MeanOracle("duchi", 1.0)
    for layout in (0, 3):
        with pytest.raises(ValueError, match="layout must be .* got 3|layout must be .* got 0"):
            oracle._mechanism.privatize(dpnoise.default_rng(1)._core, np.zeros(3), 1, 1, layout)
    # the constant-time kernel draws fresh reports only: no memoised (grid-first) layout
    ct = ldp.MeanOracle("duchi", 1.0, constant_time=True)
    with pytest.raises(ValueError, match="fresh reports only, got 1"):
        ct._mechanism.privatize(dpnoise.default_rng(1)._core, np.zeros(3), 1, 1, 1)


def test_the_mechanism_is_kept_and_not_pickled():
    """One C++ mechanism per configuration (built once: a 100-value call does not rebuild its
    certified enclosures); a pickled configuration leaves it behind and rebuilds the same one."""
    oracle = ldp.MeanOracle("hybrid", 1.0, bounds=(0.0, 5.0))
    assert oracle._mechanism is oracle._mechanism
    again = pickle.loads(pickle.dumps(oracle))
    assert "_mechanism_core" not in again.__dict__
    assert (again._mechanism.grid_z, again._mechanism.grid_bits) == (oracle.grid_z, oracle.grid_bits)
    x = np.linspace(-1.0, 6.0, 50)
    a = oracle._privatize(dpnoise.default_rng(3), x, 1)
    b = again._privatize(dpnoise.default_rng(3), x, 1)
    assert all(np.array_equal(a[k], b[k]) for k in a)
