"""Goodness of fit of the exact samplers against their exact distributions.

Every test is a chi-square (or binomial z) test at false-alarm rate ALPHA = 1e-6 per test.
The seeded runs are deterministic (fixed seeds: they either always pass or always fail);
the runs from the secure generator are random, and with about 40 such tests the whole
suite's false-alarm probability is below 1e-4.
"""
from fractions import Fraction

import numpy as np
import pytest

import dpnoise

stats = pytest.importorskip("scipy.stats")

ALPHA = 1e-6
N = 400_000
Z = stats.norm.isf(ALPHA / 2)  # two-sided z threshold, about 4.89


def chi_square_ok(samples, edges, probs):
    """Counts in bins [edges[i], edges[i+1]) against expected probabilities (must sum to 1)."""
    counts = np.histogram(samples, bins=edges)[0]
    assert counts.sum() == len(samples), "samples fell outside the bins"
    expected = probs * len(samples)
    stat = ((counts - expected) ** 2 / expected).sum()
    crit = stats.chi2.isf(ALPHA, len(probs) - 1)
    return stat, crit


def bins_from_cdf(cdf, lo, hi, target=60):
    """Data-independent integer bins: edges where the cdf crosses equal steps, with the two
    outermost bins open (covering the tails)."""
    ks = np.arange(lo, hi + 1)
    F = cdf(ks)
    qs = np.linspace(0, 1, target + 1)[1:-1]
    cut = np.unique(ks[np.searchsorted(F, qs)])
    edges = np.concatenate([[np.iinfo(np.int64).min], cut + 0.5, [np.iinfo(np.int64).max]]).astype(float)
    cdf_at = np.concatenate([[0.0], cdf(cut), [1.0]])
    probs = np.diff(cdf_at)
    keep = probs > 0
    return edges, probs, keep


def laplace_cdf(scale):
    q = np.exp(-1.0 / float(scale))

    def cdf(k):
        k = np.asarray(k, dtype=float)
        # P[X <= k]; P[X > k] = q^(k+1)/(1+q) for k >= 0, symmetric below.
        upper = np.exp((np.abs(k) + np.where(k >= 0, 1, 0)) * np.log(q)) / (1 + q)
        return np.where(k >= 0, 1 - upper, np.exp(np.abs(k) * np.log(q)) / (1 + q))

    return cdf


def gaussian_cdf(sigma):
    sigma = float(sigma)
    if sigma > 1e4:  # Poisson summation: the discrete and continuous laws agree to ~exp(-2 pi^2 sigma^2)
        return lambda k: stats.norm.cdf((np.asarray(k, float) + 0.5) / sigma)
    m = int(14 * sigma) + 40
    ks = np.arange(-m, m + 1)
    w = np.exp(-(ks.astype(float) ** 2) / (2 * sigma**2))
    c = np.cumsum(w) / w.sum()
    return lambda k: c[np.clip(np.asarray(k) + m, 0, 2 * m)]


def run_gof(samples, cdf, span):
    edges, probs, _ = bins_from_cdf(cdf, -span, span)
    stat, crit = chi_square_ok(samples, edges, probs)
    assert stat < crit, f"chi-square {stat:.1f} >= critical {crit:.1f} (df={len(probs)-1}, alpha={ALPHA})"


SCALES = [0.3, Fraction(7, 3), 10, 10**6]


FAMILIES = {
    # name: (draw, exact cdf, half-width of the binned range in units of the parameter)
    "discrete_laplace": (lambda rng, v: rng.discrete_laplace(v, N), laplace_cdf, 40),
    "discrete_gaussian": (lambda rng, v: rng.discrete_gaussian(v, N), gaussian_cdf, 12),
}


@pytest.mark.parametrize("param", SCALES, ids=str)
@pytest.mark.parametrize("which", ["seeded", "secure"])
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_sampler_fits_exact_pmf(family, param, which):
    draw, cdf, width = FAMILIES[family]
    rng = dpnoise.default_rng(1234) if which == "seeded" else dpnoise.default_rng()
    run_gof(draw(rng, param), cdf(param), int(width * float(param)) + 10)


@pytest.mark.parametrize("scale", SCALES[:3], ids=str)
def test_geometric_fits_exact_pmf(scale):
    x = dpnoise.default_rng(77).geometric(scale=scale, size=N)
    q = np.exp(-1.0 / float(scale))
    top = int(40 * float(scale)) + 10
    ks = np.arange(0, top)
    F = 1 - q ** (ks + 1.0)
    cut = np.unique(ks[np.searchsorted(F, np.linspace(0, 1, 40)[1:-1])])
    edges = np.concatenate([[-0.5], cut + 0.5, [np.iinfo(np.int64).max]])
    probs = np.diff(np.concatenate([[0.0], 1 - q ** (cut + 1.0), [1.0]]))
    stat, crit = chi_square_ok(x, edges, probs)
    assert stat < crit


@pytest.mark.parametrize("scale", [0.3, 10])
def test_laplace_and_gaussian_are_symmetric(scale):
    rng = dpnoise.default_rng(5)
    for x in (rng.discrete_laplace(scale, N), rng.discrete_gaussian(scale, N)):
        pos, neg = int((x > 0).sum()), int((x < 0).sum())
        m = pos + neg
        assert abs(pos - m / 2) <= Z * np.sqrt(m / 4)


def test_discrete_laplace_tail_frequency():
    """P[|X| >= k] = 2 q^k / (1+q) at k = 5 scales (exp(-5) territory)."""
    scale, k = 10, 50
    x = dpnoise.default_rng(9).discrete_laplace(scale, 4 * N)
    q = np.exp(-1 / scale)
    p = 2 * q**k / (1 + q)
    hits = int((np.abs(x) >= k).sum())
    assert abs(hits - p * len(x)) <= Z * np.sqrt(len(x) * p * (1 - p))


@pytest.mark.parametrize("gamma", [0, Fraction(1, 3), 0.5, 1, Fraction(7, 3), 6])
@pytest.mark.parametrize("which", ["seeded", "secure"])
def test_bernoulli_exp_frequency(gamma, which):
    rng = dpnoise.default_rng(31) if which == "seeded" else dpnoise.default_rng()
    x = rng.bernoulli_exp(gamma, N)
    p = np.exp(-float(gamma))
    hits = int(x.sum())
    if p == 1:
        assert hits == N
    else:
        assert abs(hits - p * N) <= Z * np.sqrt(N * p * (1 - p))


@pytest.mark.parametrize("p", [Fraction(1, 3), 0.3, Fraction(999, 1000), Fraction(1, 2**40) * 2**30])
def test_bernoulli_frequency(p):
    x = dpnoise.default_rng(32).bernoulli(p, N)
    pf = float(p)
    assert abs(int(x.sum()) - pf * N) <= Z * np.sqrt(N * pf * (1 - pf))


@pytest.mark.parametrize("n", [1, 3, 10, 1000, 2**33 + 1])
def test_integers_are_uniform(n):
    x = dpnoise.default_rng(33).integers(0, n, size=N)
    bins = min(n, 50)
    edges = np.linspace(0, n, bins + 1)
    counts = np.histogram(x, bins=edges)[0]
    # exact bin probabilities: number of integers in each [edge_i, edge_{i+1})
    ints = np.diff(np.ceil(edges)).astype(float)
    expected = ints / n * N
    stat = ((counts - expected) ** 2 / expected).sum() if bins > 1 else 0.0
    assert (x >= 0).all() and (x < n).all()
    if bins > 1:
        assert stat < stats.chi2.isf(ALPHA, bins - 1)


def test_raw_words_are_uniform_bits():
    w = dpnoise.default_rng(34).random_raw(N // 4)
    bits = np.unpackbits(w.view(np.uint8)).reshape(-1, 64).sum(axis=0)
    m = len(w)
    assert np.all(np.abs(bits - m / 2) <= Z * np.sqrt(m / 4))
