"""The exact k-ary randomized-response kernel (cpp/include/dpnoise/exact/randomized_response.hpp,
bound as _core.randomized_response).

It keeps the true category with probability p = 1/(1 + (k-1) e^-gamma) (decided by uniform bits
against certified bounds of p, refined exactly in the rare undecided band) and otherwise reports
one of the k - 1 others uniformly. These tests check (1) the kernel's certified enclosure of p
against 400-digit decimal arithmetic, and from it the privacy guarantee itself: the exact
probability ratio P(out = j | x) / P(out = j | x') <= e^epsilon (not sampled); (2) the sampled
keep rate and the law of the other categories by chi-square, for the normal kernel and with
every keep decision forced through the exact refinement path; (3) bad inputs. Every
statistical test is a chi-square at false-alarm rate ALPHA = 1e-6 with fixed seeds.
"""
from decimal import Decimal, getcontext
from fractions import Fraction

import numpy as np
import pytest

import dpnoise
from dpnoise import _core
from dpnoise.mechanisms.randomized_response import _epsilon_down

from .test_distributions import ALPHA

stats = pytest.importorskip("scipy.stats")


def exact_keep_probability(k, gamma):
    """p = 1/(1 + (k-1) e^-gamma) as a 400-digit Decimal."""
    getcontext().prec = 400
    g = Decimal(gamma.numerator) / Decimal(gamma.denominator)
    return 1 / (1 + (k - 1) * (-g).exp())


def core_gen(seed):
    return dpnoise.default_rng(seed)._core


# (k, epsilon): binary, small k, epsilon tiny and 30, k = 10^9 and k = 2^62
CASES = [(2, 1.0), (2, 30.0), (3, 0.5), (10, 2.0), (10, 1e-9), (1000, 5.0), (1000, 7.3), (10**9, 30.0),
         (2**62, 40.0), (7, 0.0)]


@pytest.mark.parametrize("k,epsilon", CASES + [(5, 1e6), (2, 2.0**-60)])
@pytest.mark.parametrize("limbs", [1, 2, 4])
def test_keep_probability_enclosure_and_privacy_ratio(k, epsilon, limbs):
    """The kernel's certified [lo, hi] contains the exact p, and so do its 32-bit decision
    bounds. From that enclosure, the worst-case ratio of the probabilities of one output under
    two inputs, P(j = x | x) / P(j = x | x') = (k-1) p / (1-p), is enclosed and must contain
    e^gamma, with gamma <= epsilon (epsilon rounded down to the rational the kernel takes):
    the kernel's exact p gives epsilon-LDP."""
    getcontext().prec = 400
    getcontext().Emax = 10**9
    gamma = _epsilon_down(epsilon)
    assert gamma <= Fraction(epsilon)
    if gamma > 65536:
        gamma = Fraction(65536)  # the kernel lowers gamma to 2^16 (more privacy)
    lo, hi, lo32, hi32 = _core._randomized_response_keep_bounds_for_testing(
        k, _epsilon_down(epsilon).numerator, _epsilon_down(epsilon).denominator, limbs)
    scale = Decimal(2) ** (64 * limbs)
    p = exact_keep_probability(k, gamma)
    assert Decimal(lo) <= p * scale <= Decimal(hi)
    assert Decimal(lo32) <= p * 2**32 <= Decimal(hi32) and hi32 - lo32 <= 2
    assert hi - lo <= 4096 * k  # tight: a few thousand units of 2^-64L per unit of k - 1
    e_gamma = (Decimal(gamma.numerator) / Decimal(gamma.denominator)).exp()
    p_lo = Decimal(lo) / scale
    ratio_lo = (k - 1) * p_lo / (1 - p_lo)
    assert ratio_lo <= e_gamma <= Decimal(epsilon).exp()
    if hi < 2 ** (64 * limbs):
        p_hi = Decimal(hi) / scale
        ratio_hi = (k - 1) * p_hi / (1 - p_hi)
        assert e_gamma <= ratio_hi
        if limbs >= 2 and gamma <= 64:
            assert ratio_hi - ratio_lo <= ratio_lo * Decimal(2) ** -40


def keep_and_offsets(values, out, k):
    """Keep indicator and, for the changed values, the other category's rank among the k - 1
    others ((out - x) mod k, minus 1: uniform on [0, k-2] under the exact law)."""
    keep = out == values
    rank = (out[~keep] - values[~keep]) % k - 1
    return keep, rank


def check_law(values, out, k, p):
    assert out.dtype == np.int64 and out.shape == values.shape
    assert ((out >= 0) & (out < k)).all()
    keep, rank = keep_and_offsets(values, out, k)
    n = values.size
    # keep vs not keep: chi-square with one degree of freedom (binomial), unless a cell's
    # expected count is below 1e-4 (then that outcome must simply not occur, P <= 1e-4)
    exp_keep, exp_change = n * p, n * (1 - p)
    if exp_change < 1e-4:
        assert keep.all()
    elif exp_keep < 1e-4:
        assert not keep.any()
    else:
        stat = (keep.sum() - exp_keep) ** 2 / exp_keep + ((~keep).sum() - exp_change) ** 2 / exp_change
        crit = stats.chi2.isf(ALPHA, 1)
        assert stat < crit, f"keep rate: chi-square {stat:.1f} >= {crit:.1f}"
    # the other categories: uniform over the k - 1 others, grouped into at most 20 equal-ish
    # ranges of rank (exact expected mass per range), when enough changes were drawn
    m = rank.size
    if m >= 200 and k > 2:
        nb = min(k - 1, 20)
        edges = np.linspace(0, k - 1, nb + 1).round().astype(np.int64)
        counts = np.histogram(rank, bins=edges)[0]
        expected = np.diff(edges) / (k - 1) * m
        stat = ((counts - expected) ** 2 / expected).sum()
        crit = stats.chi2.isf(ALPHA, nb - 1)
        assert stat < crit, f"other categories: chi-square {stat:.1f} >= {crit:.1f}"


@pytest.mark.parametrize("k,epsilon", CASES)
def test_sampled_law_matches(k, epsilon):
    n = 200_000
    gamma = _epsilon_down(epsilon)
    rng = np.random.default_rng(7)
    values = rng.integers(0, min(k, 2**62), n, dtype=np.int64)
    out = _core.randomized_response(core_gen(51), values, k, gamma.numerator, gamma.denominator, 2)
    check_law(values, out, k, float(exact_keep_probability(k, gamma)))


@pytest.mark.parametrize("k,epsilon", [(2, 1.0), (10, 2.0), (10, 1e-9), (10**9, 30.0), (7, 0.0), (3, 0.5)])
def test_forced_refinement_path_matches(k, epsilon):
    """Every keep decision through the exact refinement (ms each at most): the same law."""
    n = 20_000
    gamma = _epsilon_down(epsilon)
    values = np.random.default_rng(8).integers(0, k, n, dtype=np.int64)
    out = _core._randomized_response_forced_refinement_for_testing(
        core_gen(52), values, k, gamma.numerator, gamma.denominator)
    check_law(values, out, k, float(exact_keep_probability(k, gamma)))


def test_output_is_independent_of_threads_and_seeded():
    values = np.arange(300_000, dtype=np.int64) % 10
    a = _core.randomized_response(core_gen(3), values, 10, 1, 1, 1)
    b = _core.randomized_response(core_gen(3), values, 10, 1, 1, 4)
    c = _core.randomized_response(core_gen(4), values, 10, 1, 1, 1)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_any_layout_and_shape():
    values = (np.arange(24, dtype=np.int32) % 5).reshape(4, 6)[:, ::2]  # strided, int32
    out = _core.randomized_response(core_gen(5), values, 5, 2, 1, 1)
    assert out.shape == values.shape and out.dtype == np.int64
    flat = _core.randomized_response(core_gen(5), np.ascontiguousarray(values, dtype=np.int64), 5, 2, 1, 1)
    assert np.array_equal(out, flat)
    assert _core.randomized_response(core_gen(5), np.zeros(0, dtype=np.int64), 5, 2, 1, 1).shape == (0,)


def test_gamma_parts_beyond_64_bits():
    """gamma_num and gamma_den are Python ints of any size (here about 2^70): the same law."""
    num, den = 73 * 2**66 + 1, 10 * 2**66
    lo, hi, lo32, hi32 = _core._randomized_response_keep_bounds_for_testing(1000, num, den, 2)
    p = exact_keep_probability(1000, Fraction(num, den))
    assert Decimal(lo) <= p * Decimal(2) ** 128 <= Decimal(hi)
    values = np.random.default_rng(10).integers(0, 1000, 200_000, dtype=np.int64)
    out = _core.randomized_response(core_gen(9), values, 1000, num, den, 2)
    check_law(values, out, 1000, float(p))


def test_huge_k_and_large_epsilon_complete():
    """The cost that motivated the kernel: k = 10^9, epsilon = 30 took ~10^9 rejection rounds per
    value; the kernel uses O(1) bits per value (no timing assertion here)."""
    gamma = _epsilon_down(30.0)
    values = np.arange(10**5, dtype=np.int64) * 9973 % 10**9
    out = _core.randomized_response(core_gen(6), values, 10**9, gamma.numerator, gamma.denominator, 2)
    assert out.shape == values.shape and ((out >= 0) & (out < 10**9)).all()


SECRET = 123456789


@pytest.mark.parametrize("bad", [np.array([0, 1, SECRET]), np.array([0, -SECRET, 1])])
def test_out_of_range_values_are_refused_without_echo(bad):
    with pytest.raises(ValueError, match="values") as info:
        _core.randomized_response(core_gen(1), bad, 10, 1, 1, 1)
    assert str(SECRET) not in str(info.value)


def test_bad_arguments():
    g = core_gen(1)
    v = np.zeros(3, dtype=np.int64)
    with pytest.raises(TypeError, match="values"):
        _core.randomized_response(g, np.zeros(3), 10, 1, 1, 1)  # floats are not categories
    with pytest.raises(ValueError, match="categories"):
        _core.randomized_response(g, v, 1, 1, 1, 1)
    with pytest.raises(OverflowError, match="categories"):
        _core.randomized_response(g, v, 2**62 + 1, 1, 1, 1)
    with pytest.raises(ValueError, match="gamma_den"):
        _core.randomized_response(g, v, 10, 1, 0, 1)
    with pytest.raises(ValueError, match="gamma_num"):
        _core.randomized_response(g, v, 10, -1, 1, 1)
