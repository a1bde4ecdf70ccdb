"""The table-driven exact samplers (cpp/include/dpnoise/exact/table_samplers.hpp).

They decide each comparison "uniform R < c" from 32 bits against certified bounds of c and, in
the rare undecided band, refine R and c exactly. These tests check (1) the certified
enclosures of e^(+-x) against 300-digit decimal arithmetic, (2) the distributions produced
when every decisive comparison is forced through the exact refinement path, and (3) that the
table path and the CKS path produce the same law (two-sample chi-square). Each statistical
test is a chi-square at false-alarm rate ALPHA = 1e-6 with fixed seeds.
"""
import math
from decimal import Decimal, getcontext
from fractions import Fraction

import numpy as np
import pytest

import dpnoise
from dpnoise import _core
from dpnoise._rational import scale_pair, sigma_to_variance_pair, to_fraction

from .test_distributions import ALPHA, bins_from_cdf, chi_square_ok, gaussian_cdf, laplace_cdf

stats = pytest.importorskip("scipy.stats")


@pytest.mark.parametrize("negative,num,den", [
    (True, 1, 1), (True, 0, 5), (True, 3, 10), (True, 10**6, 7), (False, 1, 3), (False, 5, 2),
    (True, 2**100 + 3, 2**90 + 1), (True, 123456789, 1000), (True, 7, 2**62), (True, 2**200 + 1, 3**120),
])
@pytest.mark.parametrize("limbs", [1, 2, 3, 6])
def test_enclosures_contain_the_exact_value(negative, num, den, limbs):
    getcontext().prec = 400
    lo, hi = _core._exp_enclosure_for_testing(negative, num, den, limbs)
    x = Decimal(num) / Decimal(den)
    value = ((-x).exp() if negative else x.exp()) * Decimal(2) ** (64 * limbs)
    assert Decimal(lo) <= value <= Decimal(hi)
    assert hi - lo <= 2000  # and they are tight (a few dozen units of the last limb)


def draw(kind, param, n, seed, path):
    gen = dpnoise.default_rng(seed)._core
    if kind in ("laplace", "geometric"):
        num, den = scale_pair(to_fraction(param, "scale"), "scale")
    else:
        num, den = sigma_to_variance_pair(to_fraction(param, "sigma"), "sigma")
    name = "geometric" if kind == "geometric" else f"discrete_{kind}"
    if path == "forced":  # the table sampler with every decision refined exactly
        return _core._sample_forced_refinement_for_testing(name, gen, num, den, n)
    return getattr(_core, f"_{name}_{path}")(gen, num, den, n, 1)


def fit(samples, cdf, span):
    edges, probs, _ = bins_from_cdf(cdf, -span, span, target=20)
    stat, crit = chi_square_ok(samples, edges, probs)
    assert stat < crit, f"chi-square {stat:.1f} >= {crit:.1f}"


@pytest.mark.parametrize("kind,param,n", [
    ("laplace", 0.3, 3000), ("laplace", Fraction(7, 3), 3000), ("laplace", 10, 3000), ("laplace", 1025, 3000),
    ("laplace", 123457, 3000), ("laplace", Fraction(10**6 + 1, 3), 3000), ("gaussian", 0.3, 3000), ("gaussian", Fraction(7, 3), 3000), ("gaussian", 10, 3000),
    # sigma >= 146 uses bucketed rejection, whose exact path sums a series (ms per draw)
    ("gaussian", 3823.9, 300), ("gaussian", 10**6, 300),
])
def test_exact_refinement_path_fits(kind, param, n):
    s = draw(kind, param, n, 11, "forced")
    cdf = laplace_cdf(param) if kind == "laplace" else gaussian_cdf(param)
    edges, probs, _ = bins_from_cdf(cdf, -int(40 * float(param)) - 40, int(40 * float(param)) + 40,
                                    target=20 if n >= 3000 else 6)
    stat, crit = chi_square_ok(s, edges, probs)
    assert stat < crit, f"chi-square {stat:.1f} >= {crit:.1f}"


@pytest.mark.parametrize("kind,param", [
    ("laplace", 0.5), ("laplace", 10), ("laplace", 10**6), ("laplace", 2**40 + 17),
    # large scales with a denominator (sampled as e^(-s/t) directly), just past the direct
    # path's limit of 146, and beyond 2^48 (where l and the other fields take two reads)
    ("laplace", Fraction(10**6 + 1, 3)), ("laplace", Fraction(14631, 100)), ("laplace", 2**52 + 5),
    ("geometric", Fraction(7, 3)), ("geometric", 10**6), ("geometric", Fraction(7 * 10**5 + 1, 9)),
    ("gaussian", 0.5), ("gaussian", 10), ("gaussian", 146.5), ("gaussian", 3823.9), ("gaussian", 10**6),
])
def test_table_and_cks_paths_agree(kind, param):
    n = 200_000
    a = draw(kind, param, n, 21, "table")
    b = draw(kind, param, n, 22, "cks")
    both = np.concatenate([a, b])
    edges = np.unique(np.quantile(both, np.linspace(0, 1, 41)[1:-1]).round())
    edges = np.concatenate([[np.iinfo(np.int64).min], edges + 0.5, [np.iinfo(np.int64).max]]).astype(float)
    ca, cb = np.histogram(a, edges)[0], np.histogram(b, edges)[0]
    keep = (ca + cb) > 0
    table = np.vstack([ca[keep], cb[keep]])
    _, p, _, _ = stats.chi2_contingency(table)
    assert p > ALPHA, f"table and CKS samples differ (p = {p:.2g})"


def residue_bin_probabilities(kind, scale, block, nbins):
    """Exact law of (|Y| mod block) grouped into nbins equal ranges, for the geometric law
    P[Y = y] = (1 - q) q^y (y >= 0) or the discrete Laplace P[Y = y] = c q^|y|, c = (1-q)/(1+q),
    with q = e^(-1/scale). Sums of q^y over residue classes are geometric series."""
    tau = float(scale)
    width = block // nbins
    whole = -math.expm1(-block / tau)  # 1 - q^block

    def run(a, b):  # sum of q^y for y = a..b-1 over all blocks, times (1 - q)
        return math.exp(-a / tau) * -math.expm1(-(b - a) / tau) / whole

    edges = [i * width for i in range(nbins)] + [block]
    if kind == "geometric":
        probs = [run(a, b) for a, b in zip(edges[:-1], edges[1:])]
    else:
        one_minus_q, q = -math.expm1(-1 / tau), math.exp(-1 / tau)
        c = one_minus_q / (1 + q)
        # |Y| = 0 has mass c, |Y| = y >= 1 mass 2 c q^y; in residue terms: 2 x (geometric law)
        # scaled by c / (1 - q), minus the missing half at y = 0
        probs = [2 * c / one_minus_q * run(a, b) for a, b in zip(edges[:-1], edges[1:])]
        probs[0] -= c
    return np.array(edges, dtype=float), np.array(probs)


@pytest.mark.parametrize("kind", ["laplace", "geometric"])
@pytest.mark.parametrize("scale", [Fraction(14631, 100), 10**6, Fraction(10**6 + 1, 3), 2**52 + 5])
def test_large_scale_residues_follow_the_exact_law(kind, scale):
    """The large-scale path writes |Y| = H 2^k + L and draws L by rejection; the distribution
    of L is a fine structure (a tilt of a few percent across each block of 2^k values) that
    the whole-range tests cannot see. This checks the residues |Y| mod 2^k, for the block
    size 2^k that path uses, against their exact law (chi-square, 10^6 samples)."""
    tau = float(scale)
    k = 0
    while math.ceil(tau / 2**k) > 32:
        k += 1
    block = 2**k
    nbins = min(block, 16)
    s = np.abs(draw(kind, scale, 10**6, 31, "table")) % block
    edges, probs = residue_bin_probabilities(kind, scale, block, nbins)
    assert abs(probs.sum() - 1) < 1e-12
    stat, crit = chi_square_ok(s, edges, probs)
    assert stat < crit, f"chi-square {stat:.1f} >= {crit:.1f}"


def gaussian_offset_bin_probabilities(sigma, block, nbins):
    """Exact law of (|Y| mod block) grouped into nbins equal ranges, for the discrete Gaussian
    P[Y = y] proportional to e^(-y^2 / (2 sigma^2)) (|Y| = 0 has weight 1, |Y| = y > 0 weight 2)."""
    y = np.arange(0, int(13 * sigma) + block, dtype=np.float64)  # the mass beyond 13 sigma is below 1e-36
    w = np.exp(-(y * y) / (2.0 * sigma * sigma)) * np.where(y == 0, 1.0, 2.0)
    per_offset = np.bincount((y.astype(np.int64) % block), weights=w, minlength=block)
    probs = per_offset.reshape(nbins, block // nbins).sum(axis=1)
    return np.arange(0, block + 1, block // nbins, dtype=float), probs / probs.sum()


@pytest.mark.parametrize("sigma,block", [(1169, 16), (146 * 2**13 + 1, 2**14)])
def test_gaussian_offsets_follow_the_exact_law(sigma, block):
    """For sigma >= 146 the table path proposes |Y| = j B + o with o uniform in [0, B) and
    accepts with probability e^(-(2 j B o + o^2) / (2 sigma^2)); at sigma / B = 73 (the largest
    buckets it uses) that tilts the offsets by about 1.4% across a bucket, which the
    whole-range tests cannot see. This checks |Y| mod B against its exact law (chi-square,
    4 * 10^7 samples in chunks)."""
    nbins = 16
    edges, probs = gaussian_offset_bin_probabilities(sigma, block, nbins)
    rng = dpnoise.default_rng(41)
    counts = np.zeros(nbins, dtype=np.int64)
    for _ in range(4):
        s = np.abs(rng.discrete_gaussian(sigma, 10**7)) % block
        counts += np.histogram(s, bins=edges)[0]
    expected = probs * counts.sum()
    stat = ((counts - expected) ** 2 / expected).sum()
    crit = stats.chi2.isf(ALPHA, nbins - 1)
    assert stat < crit, f"chi-square {stat:.1f} >= {crit:.1f}"


@pytest.mark.parametrize("kind", ["laplace", "gaussian"])
def test_per_element_parameters_use_tables_and_keep_the_law(kind):
    """With an array of parameters, each distinct value used by enough elements gets its own
    tables (the others use CKS). Every column must still follow its exact law (chi-square at
    ALPHA per column); the mix includes a value used once per row block and one used rarely."""
    params = np.array([0.5, 10.0, 3000.0])
    n = 200_000
    rng = dpnoise.default_rng(71)
    draw_fn = rng.discrete_laplace if kind == "laplace" else rng.discrete_gaussian
    x = draw_fn(params, size=(n, 3))
    rare = draw_fn(np.array([7.0] * 50 + [2.0]), size=51)  # 2.0 is used once: the CKS path
    assert rare.shape == (51,)
    for j, p in enumerate(params):
        cdf = laplace_cdf(p) if kind == "laplace" else gaussian_cdf(p)
        edges, probs, _ = bins_from_cdf(cdf, -int(40 * p) - 40, int(40 * p) + 40, target=30)
        stat, crit = chi_square_ok(x[:, j], edges, probs)
        assert stat < crit, f"{kind}({p}): chi-square {stat:.1f} >= {crit:.1f}"


def test_forced_refinement_hook_refuses_unknown_laws_and_bad_parameters():
    gen = dpnoise.default_rng(1)._core
    with pytest.raises(ValueError, match="law"):
        _core._sample_forced_refinement_for_testing("laplace", gen, 1, 1, 10)
    with pytest.raises(ValueError, match="scale"):
        _core._sample_forced_refinement_for_testing("geometric", gen, 1, 0, 10)
    with pytest.raises(OverflowError, match="scale"):
        _core._sample_forced_refinement_for_testing("discrete_laplace", gen, 2**62 + 1, 1, 10)
