"""The output law and the privacy guarantee of dpnoise.report_noisy_max (issue #11).

The exact laws come from _exact_selection.py (permute-and-flip for noise="exponential", the
exponential mechanism for noise="gumbel", discrete-Laplace report-noisy-max for noise="laplace",
top-k by peeling), all under the documented calibration gamma = epsilon / (2 sensitivity), or
epsilon / sensitivity when monotonic=True.

* Goodness of fit: each case is ONE call on a matrix of DRAWS = 10^5 identical rows (a seeded
  generator, allow_insecure=True), and a chi-square of the counts against the exact law, cells of
  expected count < 5 pooled, at false-alarm rate ALPHA = 1e-6 per test. The seeds are fixed, so
  a run is deterministic; for a correct implementation the chance that some fixed seed fails is
  at most 134 * 1e-6 < 1.4e-4 for the whole file (134 chi-square tests; Bonferroni).
  Power at 10^5 draws (noncentrality from the exact laws): every single case detects a gamma off
  by a factor 2 and ties broken to the first index (power ~1); permute-and-flip vs the
  exponential mechanism at the same gamma and a gamma 10% too large are detected in most cases.
* Privacy: exact probability ratios P_q(r) / P_q'(r) <= e^epsilon over every neighbour q' of small
  score vectors (no sampling, so no alpha), with a check that the neighbour set is sharp enough to
  reject a gamma 25% too large; the API's law at the worst neighbour is then fitted by chi-square,
  so the ratios bound what the API actually samples.
"""
from __future__ import annotations

import math
import zlib

import numpy as np
import pytest

import dpnoise

try:  # tests/selection as a package (an __init__.py) or as a plain directory (the rootdir rule)
    from ._exact_selection import (
        continuous_laplace_noisy_max_law, gamma_of, law, permute_and_flip_law,
        permute_and_flip_law_by_orders, top_k_peeling_law, worst_log_ratio,
    )
except ImportError:
    from _exact_selection import (
        continuous_laplace_noisy_max_law, gamma_of, law, permute_and_flip_law,
        permute_and_flip_law_by_orders, top_k_peeling_law, worst_log_ratio,
    )

stats = pytest.importorskip("scipy.stats")

ALPHA = 1e-6
DRAWS = 100_000
NOISES = ["exponential", "gumbel", "laplace"]
EPSILONS = [0.5, 1.0, 2.0]
VECTORS = {
    "spread": [0, 1, 2, 5],
    "all_tied": [3, 3, 3],
    "tie_at_bottom": [0, 0, 4, 1, 2],
    "negative": [-7, -2, 0, -3],
}


def seeded_rng(*key):
    """A fixed seed per test case (crc32 of the case, not Python's salted hash)."""
    return dpnoise.default_rng(zlib.crc32(repr(key).encode()))


def select_rows(row, epsilon, key, *, draws=DRAWS, dtype=np.int64, **options):
    """One call of report_noisy_max on `draws` identical rows; the (draws,) or (draws, k) indices."""
    matrix = np.tile(np.asarray(row, dtype=dtype), (draws, 1))
    out = dpnoise.report_noisy_max(matrix, epsilon, rng=seeded_rng(*key), allow_insecure=True, **options)
    k = options.get("k", 1)
    assert isinstance(out, np.ndarray) and out.dtype == np.int64
    assert out.shape == ((draws,) if k == 1 else (draws, k))
    assert out.min() >= 0 and out.max() < len(row)
    return out


def pooled_chi_square(counts, probs):
    """Pearson's statistic with cells of expected count < 5 pooled (in increasing order of
    expected count, until each pool reaches 5); returns (statistic, degrees of freedom).
    A count in a cell of probability 0 fails at once."""
    counts = np.asarray(counts, dtype=np.float64)
    probs = np.asarray(probs, dtype=np.float64)
    assert abs(math.fsum(probs) - 1.0) < 1e-12, "the exact law must sum to 1"
    impossible = probs == 0
    assert counts[impossible].sum() == 0, "an output of probability 0 occurred"
    counts, probs = counts[~impossible], probs[~impossible]
    expected = probs * counts.sum()
    cells, pool_obs, pool_exp = [], 0.0, 0.0
    for i in np.argsort(expected, kind="stable"):  # smallest first: small cells pool together
        pool_obs += counts[i]
        pool_exp += expected[i]
        if pool_exp >= 5:
            cells.append((pool_obs, pool_exp))
            pool_obs = pool_exp = 0.0
    if pool_exp > 0:  # the last pool is still below 5: it joins the pool before it
        if cells:
            o, e = cells.pop()
            pool_obs, pool_exp = pool_obs + o, pool_exp + e
        cells.append((pool_obs, pool_exp))
    obs = np.array([c[0] for c in cells])
    exp = np.array([c[1] for c in cells])
    assert len(cells) >= 2, "too few cells for a chi-square test"
    return float(((obs - exp) ** 2 / exp).sum()), len(cells) - 1


def assert_fits(samples, probs, what):
    counts = np.bincount(np.asarray(samples).ravel(), minlength=len(probs))
    assert len(counts) == len(probs), f"{what}: an index out of range"
    stat, df = pooled_chi_square(counts, probs)
    crit = stats.chi2.isf(ALPHA, df)
    assert stat < crit, f"{what}: chi-square {stat:.1f} >= critical {crit:.1f} (df={df}, alpha={ALPHA})"


def pair_codes(selected, n):
    """Ordered tuples of indices (rows of `selected`) as integers in base n."""
    code = np.zeros(selected.shape[0], dtype=np.int64)
    for col in range(selected.shape[1]):
        code = code * n + selected[:, col]
    return code


def joint_probs(joint, n, k):
    """The peeling law as a vector indexed by the base-n code of the ordered tuple (0 elsewhere)."""
    probs = np.zeros(n**k)
    for tup, p in joint.items():
        c = 0
        for i in tup:
            c = c * n + i
        probs[c] = p
    return probs


# --- the references themselves --------------------------------------------------------------


@pytest.mark.parametrize("row", [[0, 1, 2, 5], [3, 3, 3], [0, 0, 4, 1, 2], [-7, -2, 0, -3], [0, 9, 9, 1, 4, 4]])
@pytest.mark.parametrize("gamma", [0.25, 1.0, 3.0])
def test_permute_and_flip_by_orders_equals_formula(row, gamma):
    """Enumeration over all n! visiting orders == p_r * E[1/(1+|A_-r|)] (no sampling)."""
    by_orders = permute_and_flip_law_by_orders(row, gamma)
    formula = permute_and_flip_law(row, gamma)
    np.testing.assert_allclose(formula, by_orders, rtol=1e-13, atol=0)
    assert abs(math.fsum(formula) - 1) < 1e-14


@pytest.mark.parametrize("noise", NOISES)
def test_references_match_float_monte_carlo(noise):
    """Each reference against a NumPy float Monte Carlo of the mechanism's definition (2*10^5
    draws, fixed seed, chi-square at ALPHA). The laws were first checked this way at 10^6 draws
    on every case of this file (throwaway script; smallest p-value 0.03 over 72 cases)."""
    row, epsilon, n_draws = [0, 0, 4, 1, 2], 1.0, 200_000
    gamma = gamma_of(epsilon)
    q = np.asarray(row, dtype=np.float64)
    gen = np.random.default_rng(20261122)
    if noise == "exponential":  # permute-and-flip: uniform order, accept r with exp(-gamma(q* - q_r))
        order = np.argsort(gen.random((n_draws, len(q))), axis=1)
        accept = gen.random((n_draws, len(q))) < np.exp(-gamma * (q.max() - q))[order]
        picks = order[np.arange(n_draws), np.argmax(accept, axis=1)]
    elif noise == "gumbel":  # argmax of gamma q + Gumbel = the exponential mechanism
        picks = np.argmax(gamma * q + gen.gumbel(size=(n_draws, len(q))), axis=1)
    else:  # discrete Laplace = difference of two geometrics; a uniform key in [0, 1/2) breaks ties
        s = math.exp(-gamma)
        z = gen.geometric(1 - s, (n_draws, len(q))) - gen.geometric(1 - s, (n_draws, len(q)))
        picks = np.argmax(q + z + 0.5 * gen.random((n_draws, len(q))), axis=1)
    assert_fits(picks, law(noise, row, epsilon), f"reference {noise}")


# --- goodness of fit of the API -------------------------------------------------------------


@pytest.mark.parametrize("monotonic", [False, True])
@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("name", list(VECTORS))
@pytest.mark.parametrize("noise", NOISES)
def test_law_of_one_selection(noise, name, epsilon, monotonic):
    """k=1 on 10^5 identical rows: chi-square against the exact law (ALPHA per case; 72 cases)."""
    row = VECTORS[name]
    picks = select_rows(row, epsilon, ("k1", noise, name, epsilon, monotonic), noise=noise, monotonic=monotonic)
    assert_fits(picks, law(noise, row, epsilon, 1, monotonic), f"{noise} {row} eps={epsilon} monotonic={monotonic}")


@pytest.mark.parametrize("epsilon", [1.0, 8.0])
@pytest.mark.parametrize("row", [[3, 3, 3], [5, 3, 5, 3, 5]])
def test_laplace_ties_are_fair(row, epsilon):
    """Discrete noise ties: equal scores must win equally often. With monotonic=True, gamma =
    epsilon, so at epsilon=8 most rows tie at the noisy maximum and a biased tie-break shows at
    once. Chi-square against the exact law (uniform over the tied top scores), ALPHA per case."""
    probs = law("laplace", row, epsilon, 1, True)
    top = [i for i, v in enumerate(row) if v == max(row)]
    np.testing.assert_allclose(probs[top], probs[top[0]], rtol=1e-12)
    picks = select_rows(row, epsilon, ("ties", tuple(row), epsilon), noise="laplace", monotonic=True)
    assert_fits(picks, probs, f"laplace ties {row} eps={epsilon}")


@pytest.mark.parametrize("noise", NOISES)
def test_axis_zero_has_the_same_law(noise):
    """Candidates down the columns (axis=0) of a (n, 10^5) matrix: the same law (ALPHA)."""
    row, epsilon = [0, 1, 2, 5], 1.0
    matrix = np.tile(np.asarray(row, dtype=np.int64)[:, None], (1, DRAWS))
    picks = dpnoise.report_noisy_max(matrix, epsilon, noise=noise, axis=0, rng=seeded_rng("axis0", noise),
                                     allow_insecure=True)
    assert picks.shape == (DRAWS,) and picks.dtype == np.int64
    assert_fits(picks, law(noise, row, epsilon), f"{noise} axis=0")


@pytest.mark.parametrize("dtype,row", [(t, [0, 1, 2, 5]) for t in
                                       ("int8", "int16", "int32", "uint8", "uint16", "uint32", "uint64")]
                         + [(t, [-7, -2, 0, -3]) for t in ("int8", "int16", "int32")])
def test_integer_dtypes_have_the_same_law(dtype, row):
    """Integer scores of any integer dtype: the discrete-Laplace law of the int64 case (ALPHA)."""
    picks = select_rows(row, 1.0, ("dtype", dtype, tuple(row)), dtype=np.dtype(dtype), noise="laplace")
    assert_fits(picks, law("laplace", row, 1.0), f"laplace {dtype} {row}")


def test_one_dimensional_scores_give_plain_indices():
    """A 1-D score vector gives one int for k=1 and an int64 array of k distinct indices."""
    row = np.array([0, 1, 2, 5])
    for noise in NOISES:
        one = dpnoise.report_noisy_max(row, 1.0, noise=noise, rng=seeded_rng("1d", noise), allow_insecure=True)
        assert isinstance(one, (int, np.integer)) and 0 <= one < 4
        two = dpnoise.report_noisy_max(row, 1.0, noise=noise, k=2, rng=seeded_rng("1d2", noise),
                                       allow_insecure=True)
        assert isinstance(two, np.ndarray) and two.dtype == np.int64 and two.shape == (2,)
        assert two[0] != two[1] and two.min() >= 0 and two.max() < 4


# --- top-k by peeling -----------------------------------------------------------------------


@pytest.mark.parametrize("monotonic", [False, True])
@pytest.mark.parametrize("row", [[0, 1, 2, 5], [0, 0, 4, 1, 2]])
@pytest.mark.parametrize("noise", NOISES)
def test_top_two_joint_law(noise, row, monotonic):
    """k=2: distinct indices in every row, and the law of the ordered pair (first, second) is
    the peeling law (chi-square over the n(n-1) ordered pairs, ALPHA per case)."""
    epsilon, n = 1.0, len(row)
    picks = select_rows(row, epsilon, ("top2", noise, tuple(row), monotonic), noise=noise, k=2,
                        monotonic=monotonic)
    assert np.all(picks[:, 0] != picks[:, 1]), "top-k repeated an index"
    probs = joint_probs(top_k_peeling_law(noise, row, epsilon, 2, 1, monotonic), n, 2)
    assert_fits(pair_codes(picks, n), probs, f"top-2 {noise} {row} monotonic={monotonic}")


@pytest.mark.parametrize("noise", NOISES)
def test_full_ranking_is_a_permutation_with_the_peeling_law(noise):
    """k = n: every row a permutation of the candidates; the law of the 24 rankings of
    [0, 1, 2, 5] is the peeling law (chi-square, ALPHA)."""
    row, epsilon, n = [0, 1, 2, 5], 2.0, 4
    picks = select_rows(row, epsilon, ("rank", noise), noise=noise, k=n)
    assert np.all(np.sort(picks, axis=1) == np.arange(n)), "a ranking is not a permutation"
    probs = joint_probs(top_k_peeling_law(noise, row, epsilon, n), n, n)
    assert_fits(pair_codes(picks, n), probs, f"ranking {noise}")


# --- privacy: exact ratios on neighbours ----------------------------------------------------

PRIVACY_ROWS = [[0, 1, 2, 5], [0, 1, 1, 3]]  # spread scores, and a tie (discrete-noise ties)


@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("monotonic", [False, True])
@pytest.mark.parametrize("noise", NOISES)
def test_documented_calibration_is_epsilon_dp(noise, monotonic, epsilon):
    """max over every neighbour q' (each score moved by -1, 0 or +1; monotonic: all moves >= 0
    or all <= 0) and every output r of |log P_q(r) - log P_q'(r)| <= epsilon, exactly (no
    sampling), under gamma = gamma_of(epsilon, 1, monotonic). So that this cannot pass
    vacuously, the same neighbours must show a violation with gamma 25% larger."""
    for row in PRIVACY_ROWS:
        worst, _ = worst_log_ratio(noise, row, epsilon, 1, monotonic)
        assert worst <= epsilon * (1 + 1e-12), f"{noise} {row}: log-ratio {worst!r} > epsilon {epsilon}"
        too_big = 1.25 * gamma_of(epsilon, 1, monotonic)
        loose, _ = worst_log_ratio(noise, row, epsilon, 1, monotonic, gamma=too_big)
        assert loose > epsilon * 1.05, f"{noise} {row}: the neighbours cannot see a 25% miscalibration"


@pytest.mark.parametrize("monotonic", [False, True])
@pytest.mark.parametrize("noise", NOISES)
def test_calibration_scales_with_sensitivity(noise, monotonic):
    """Sensitivity 2 (moves in {-2, ..., 2}) on [0, 2, 5] at epsilon = 1: exact log-ratios <=
    epsilon under gamma = gamma_of(1, 2, monotonic), and a violation with gamma 25% larger."""
    row, epsilon = [0, 2, 5], 1.0
    worst, _ = worst_log_ratio(noise, row, epsilon, 2, monotonic)
    assert worst <= epsilon * (1 + 1e-12), f"{noise}: log-ratio {worst!r} > epsilon"
    loose, _ = worst_log_ratio(noise, row, epsilon, 2, monotonic, gamma=1.25 * gamma_of(epsilon, 2, monotonic))
    assert loose > epsilon * 1.05


@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("monotonic", [False, True])
@pytest.mark.parametrize("noise", NOISES)
def test_api_law_at_the_worst_neighbour(noise, monotonic, epsilon):
    """The API samples the law whose ratios were bounded: chi-square (ALPHA) at the neighbour q'
    of [0, 1, 2, 5] with the largest exact log-ratio (the base row is fitted in
    test_law_of_one_selection)."""
    _, worst_row = worst_log_ratio(noise, [0, 1, 2, 5], epsilon, 1, monotonic)
    picks = select_rows(worst_row, epsilon, ("worst", noise, monotonic, epsilon), noise=noise, monotonic=monotonic)
    assert_fits(picks, law(noise, worst_row, epsilon, 1, monotonic), f"{noise} at {worst_row}")


@pytest.mark.parametrize("monotonic", [False, True])
@pytest.mark.parametrize("noise", NOISES)
def test_api_law_with_sensitivity_two(noise, monotonic):
    """sensitivity=2 is passed through to gamma: chi-square (ALPHA) at the worst neighbour of
    [0, 2, 5] (a gamma calibrated to sensitivity 1 instead is detected: it doubles gamma)."""
    _, worst_row = worst_log_ratio(noise, [0, 2, 5], 1.0, 2, monotonic)
    picks = select_rows(worst_row, 1.0, ("sens2", noise, monotonic), noise=noise, monotonic=monotonic,
                        sensitivity=2)
    assert_fits(picks, law(noise, worst_row, 1.0, 2, monotonic), f"{noise} sensitivity 2 at {worst_row}")


# --- real scores ----------------------------------------------------------------------------


@pytest.mark.parametrize("noise", NOISES)
def test_real_scores_follow_the_unrounded_law(noise):
    """Loose sanity check of the float path: [0.0, 0.5, 1.0, 2.5] with sensitivity 0.5 at
    epsilon = 1 (all four values lie on any grid 2^k, k <= -1, so rounding moves nothing, and
    the only changes are the widened sensitivity 0.5 + 2^k and, for laplace, noise on the grid
    instead of continuous). The reference is the law of the unrounded scores with sensitivity
    0.5: gamma = 1 for permute-and-flip and the exponential mechanism, and report-noisy-max with
    CONTINUOUS Laplace noise of scale 1 (the fine-grid limit of discrete Laplace on 2^k).
    With the house default grid (widening <= 1/1024 of the sensitivity, mechanisms/_grid.py, so
    2^-11 here) the exact grid law differs from this reference by a chi-square noncentrality
    < 0.1 at 10^5 draws (negligible); a grid of 2^-6 (widening 1/32) would be ~25-70 (borderline
    detected), and ignoring the sensitivity (gamma halved) > 6000. Chi-square at ALPHA."""
    row, epsilon, sensitivity = [0.0, 0.5, 1.0, 2.5], 1.0, 0.5
    gamma = gamma_of(epsilon, sensitivity)
    if noise == "laplace":
        probs = continuous_laplace_noisy_max_law(row, 1.0 / gamma)
    else:
        probs = law(noise, row, epsilon, sensitivity)
    picks = select_rows(row, epsilon, ("real", noise), dtype=np.float64, noise=noise, sensitivity=sensitivity)
    assert_fits(picks, probs, f"{noise} real scores")
