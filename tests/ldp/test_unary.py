"""Unary encoding ("oue", "sue"): the exact privacy ratio, the randomizer's law (chi-square
against the exact pmf, on both geometric-skip paths), unbiasedness and variance, the packed
column counts, merge and serialisation, bad input."""
import itertools
import math

import numpy as np
import pytest

import dpnoise
import dpnoise.ldp.unary  # noqa: F401  (registers "oue" and "sue")
from dpnoise import _core, ldp
from ldp_estimates import assert_unbiased_with_stated_variance

EPS = 2.0
PROTOCOLS = ("oue", "sue")


def client(fo, seed=1):
    return fo.client(dpnoise.default_rng(seed), allow_insecure=True)


def unpack(bits, d):
    """(users, d) 0/1 matrix of packed reports (little-endian bits within each word)."""
    return np.unpackbits(bits.view(np.uint8), axis=1, bitorder="little")[:, :d]


def report_pmf(fo, x):
    """The exact law of one report for item x: {bit tuple: probability} from p and q."""
    p, q = fo._pq()[:2]
    d = fo.domain_size
    pmf = {}
    for out in itertools.product((0, 1), repeat=d):
        pr = 1.0
        for y, b in enumerate(out):
            s = p if y == x else q
            pr *= s if b else 1 - s
        pmf[out] = pr
    return pmf


@pytest.mark.parametrize("name", PROTOCOLS)
@pytest.mark.parametrize("eps", [0.3, 2.0, 7.0])
def test_privacy_ratio_of_every_output_is_at_most_e_eps(name, eps):
    d = 4
    fo = ldp.FrequencyOracle(name, eps, d)
    pmfs = [report_pmf(fo, x) for x in range(d)]
    for pmf in pmfs:
        assert math.isclose(sum(pmf.values()), 1.0, rel_tol=1e-12)
    worst = max(a[o] / b[o] for a in pmfs for b in pmfs for o in a)
    assert worst <= math.exp(eps) * (1 + 1e-12)
    assert worst == pytest.approx(math.exp(float(fo.gamma)), rel=1e-9)  # the bound is attained


@pytest.mark.parametrize("name,eps", [("oue", 2.0), ("sue", 2.0), ("oue", 0.2), ("sue", 9.0)])
def test_kernel_law_chi_square(name, eps):
    """All 16 outputs for d = 4 and item 2, 400,000 reports, against the exact pmf: chi-square,
    15 d.o.f., alpha = 1e-6 (critical value 56.49); cells expected below 5 are pooled."""
    d, n = 4, 400_000
    fo = ldp.FrequencyOracle(name, eps, d)
    bits = unpack(client(fo, 11).privatize(np.full(n, 2)).data["bits"], d)
    codes = bits @ (1 << np.arange(d))
    observed = np.bincount(codes, minlength=16).astype(float)
    pmf = report_pmf(fo, 2)
    expected = np.array([pmf[tuple((c >> np.arange(d)) & 1)] for c in range(16)]) * n
    small = expected < 5
    obs = np.append(observed[~small], observed[small].sum())
    exp_ = np.append(expected[~small], expected[small].sum())
    keep = exp_ > 0
    chi2 = float(((obs[keep] - exp_[keep]) ** 2 / exp_[keep]).sum())
    assert chi2 < 56.49


@pytest.mark.parametrize("eps", [2.0, 7.0, 12.0])
def test_geometric_skip_columns_and_ones_per_row(eps):
    """The other bits over a long row, on the single-table path (eps 2: scale 8.4) and the
    H 2^k + L path (eps 7: scale 1098, k = 6; eps 12: k = 13): every column's count of ones is
    Binomial(n, q), tested as one chi-square over 255 columns (alpha = 1e-6, critical 377.1 at
    255 d.o.f.), and the number of ones per row against Binomial(d - 1, q) (pooled cells,
    chi-square alpha = 1e-6 with its critical value from the d.o.f.)."""
    from scipy.stats import binom, chi2 as chi2_law

    d = 256
    fo = ldp.FrequencyOracle("oue", eps, d)
    n = 200_000 if eps < 10 else 1_000_000
    bits = client(fo, 5).privatize(np.zeros(n, dtype=np.int64)).data["bits"]
    q = fo._pq()[1]
    counts = np.zeros(256, dtype=np.int64)
    _core.ldp.packed_column_counts_add(bits, d, counts, 1)
    c = counts[1:].astype(float)
    stat = float(((c - n * q) ** 2 / (n * q * (1 - q))).sum())
    assert stat < 377.1
    ones = bits.copy()
    ones[:, 0] &= ~np.uint64(1)
    per_row = np.bitwise_count(ones).sum(axis=1)
    observed = np.bincount(per_row, minlength=d).astype(float)
    expected = binom.pmf(np.arange(d), d - 1, q) * n
    big = expected >= 5
    obs = np.append(observed[big], observed[~big].sum())
    exp_ = np.append(expected[big], expected[~big].sum())
    dof = max(1, len(obs) - 1)
    assert float(((obs - exp_) ** 2 / exp_).sum()) < chi2_law.isf(1e-6, dof)


def test_huge_epsilon_and_long_rows():
    # eps = 100: q < 1e-43, so only true bits (OUE: a fair coin; SUE: kept); d = 2^20
    fo = ldp.FrequencyOracle("sue", 100.0, 1 << 20)
    bits = client(fo).privatize(np.array([0, 5, (1 << 20) - 1])).data["bits"]
    assert bits.shape == (3, 1 << 14)
    assert [list(np.flatnonzero(r)) for r in unpack(bits, 1 << 20)] == [[0], [5], [(1 << 20) - 1]]
    fo = ldp.FrequencyOracle("oue", 100.0, 70)
    bits = unpack(client(fo).privatize(np.full(4000, 69)).data["bits"], 70)
    assert bits[:, :69].sum() == 0 and 1800 < bits[:, 69].sum() < 2200  # fair coin: 8.9 sigma


@pytest.mark.parametrize("name", PROTOCOLS)
def test_unbiased_and_variance_matches_formula(name):
    """2,000 independent seeded runs of 1,000 users (d = 5): the mean error of every item's
    estimate within 4.5 standard errors of 0 and the empirical variance within 10% of
    variance(n, true counts) (false alarm < 1e-4 per item for the mean; the variance's relative
    standard error is 3.2%, so 10% is over 3 of them)."""
    d, runs, n = 5, 2000, 1000
    fo = ldp.FrequencyOracle(name, EPS, d)
    truth = np.repeat(np.arange(d), [400, 300, 200, 80, 20])
    bits = client(fo, 7).privatize(np.tile(truth, runs)).data["bits"].reshape(runs, n)
    est = assert_unbiased_with_stated_variance(fo, np.stack([unpack(r[:, None], d).sum(axis=0) for r in bits]), truth)
    agg = fo.aggregator().add(ldp.Reports(name, fo.fingerprint(), n, {"bits": bits[0][:, None].copy()}))
    assert np.allclose(agg.estimate(), est[0])


def test_variance_formulas():
    e = math.exp(EPS)
    oue = ldp.FrequencyOracle("oue", EPS, 1024)
    assert oue.variance_per_user() == pytest.approx(4 * e / (e - 1) ** 2, rel=1e-12)
    h = math.exp(EPS / 2)
    sue = ldp.FrequencyOracle("sue", EPS, 1024)
    assert sue.variance_per_user() == pytest.approx(h / (h - 1) ** 2, rel=1e-12)
    p, q = oue._pq()[:2]
    v = oue.variance(1000, np.full(1024, 10.0))
    assert v[0] == pytest.approx(1000 * 4 * e / (e - 1) ** 2 + 10 * (1 - p - q) / (p - q))


@pytest.mark.parametrize("d", [1, 2, 63, 64, 65, 200, 1024, 1000])
def test_packed_column_counts_match_unpacked(d):
    """Carry-save counts equal a plain unpack-and-sum, for row counts around the 16-row groups
    and the 63-group flush (1008 rows)."""
    rng = np.random.default_rng(d)
    w = (d + 63) // 64
    for n in (0, 1, 15, 16, 17, 1008, 1009, 5000):
        bits = rng.integers(0, 2**64, size=(n, w), dtype=np.uint64, endpoint=False)
        if d % 64:
            bits[:, -1] &= np.uint64((1 << (d % 64)) - 1)
        counts = np.zeros(64 * w, dtype=np.int64)
        _core.ldp.packed_column_counts_add(bits, d, counts, 1)
        assert np.array_equal(counts[:d], unpack(bits, d).sum(axis=0))
        assert not counts[d:].any()
        two = np.zeros(64 * w, dtype=np.int64)
        _core.ldp.packed_column_counts_add(bits, d, two, 2)
        assert np.array_equal(counts, two)


def test_reports_do_not_depend_on_threads():
    fo = ldp.FrequencyOracle("oue", EPS, 300)
    items = np.random.default_rng(0).integers(0, 300, size=5000)
    one = client(fo, 9).privatize(items, threads=1).data["bits"]
    two = client(fo, 9).privatize(items, threads=2).data["bits"]
    assert np.array_equal(one, two)


def test_malformed_batches_refused_and_aggregator_unchanged():
    fo = ldp.FrequencyOracle("oue", EPS, 70)
    agg = fo.aggregator().add(client(fo).privatize([0, 1, 69]))
    before = agg.to_bytes()
    good = client(fo).privatize([3, 4]).data["bits"]
    fp = fo.fingerprint()
    padded = good.copy()
    padded[1, 1] |= np.uint64(1) << np.uint64(6)  # column 70: beyond the domain
    cases = [
        ({"bits": good.astype(np.int64)}, 2, "uint64"),
        ({"bits": good[:, :1].copy()}, 2, "shape"),
        ({"bits": good}, 3, "shape"),
        ({"bits": good.reshape(-1)}, 2, "shape"),
        ({"bits": padded}, 2, "beyond column"),
        ({"values": np.array([1, 2])}, 2, "bits"),
        ({"bits": good, "extra": good}, 2, "bits"),
    ]
    with pytest.raises(TypeError, match="dict of NumPy arrays"):  # refused when the batch is built
        ldp.Reports("oue", fp, 2, {"bits": [[1, 2], [3, 4]]})
    for data, n, msg in cases:
        with pytest.raises(ValueError, match=msg):
            agg.add(ldp.Reports("oue", fp, n, data))
    with pytest.raises(ValueError, match="different configuration"):
        agg.add(client(ldp.FrequencyOracle("sue", EPS, 70)).privatize([0]))
    with pytest.raises(ValueError, match="different configuration"):
        agg.add(client(ldp.FrequencyOracle("oue", 1.0, 70)).privatize([0]))
    with pytest.raises(ValueError, match="different configuration"):
        agg.merge(ldp.FrequencyOracle("oue", EPS, 71).aggregator())
    assert agg.to_bytes() == before
    # a Fortran-ordered but otherwise valid batch is accepted (copied)
    agg.add(ldp.Reports("oue", fp, 2, {"bits": np.asfortranarray(good)}))
    assert agg.n == 5


@pytest.mark.parametrize("items,error", [
    ([0, 70], ValueError), ([-1], ValueError), ([0.5], TypeError), (["a"], TypeError),
    (np.zeros((2, 2), dtype=int), ValueError),
])
def test_bad_items(items, error):
    with pytest.raises(error, match="items"):
        client(ldp.FrequencyOracle("oue", EPS, 70)).privatize(items)


def test_bad_parameters_and_generators():
    for name in PROTOCOLS:
        with pytest.raises(ValueError, match="olh"):
            ldp.FrequencyOracle(name, 1.0, (1 << 20) + 1)
        ldp.FrequencyOracle(name, 1.0, 1 << 20)
        with pytest.raises(TypeError, match="option"):
            ldp.FrequencyOracle(name, 1.0, 10, hashes=3)
        with pytest.raises(dpnoise.InsecureGeneratorError):
            ldp.FrequencyOracle(name, 1.0, 10).client(dpnoise.default_rng(1))
    fo = ldp.FrequencyOracle("oue", 1.0, 10)
    assert fo.client().rng.is_secure
    assert fo.client().privatize(np.arange(10)).data["bits"].shape == (10, 1)
    assert fo.privacy_loss().pure_epsilon() == 1.0
    assert {"oue", "sue"} <= set(ldp.protocols())
    # the binding refuses directly what the protocol would have refused
    g = dpnoise.default_rng(1)
    with pytest.raises(ValueError, match="2\\^20"):
        _core.ldp.unary_privatize(g._core, "oue", np.zeros(1, np.int64), (1 << 20) + 1, 1, 1, 1)
    with pytest.raises(ValueError, match="protocol"):
        _core.ldp.unary_privatize(g._core, "olh", np.zeros(1, np.int64), 10, 1, 1, 1)
    with pytest.raises(ValueError, match="gamma"):
        _core.ldp.unary_privatize(g._core, "oue", np.zeros(1, np.int64), 10, 0, 1, 1)


def test_estimates_on_zipf_items():
    """A realistic run: 200,000 users, Zipf(1.1) over d = 1024, eps = 2: every estimate within
    5 standard errors of the truth (false alarm about 6e-7 per item, 6e-4 over 1,024 items)."""
    d, n = 1024, 200_000
    rng = np.random.default_rng(3)
    weights = 1.0 / np.arange(1, d + 1) ** 1.1
    items = rng.choice(d, size=n, p=weights / weights.sum())
    truth = np.bincount(items, minlength=d)
    for name in PROTOCOLS:
        fo = ldp.FrequencyOracle(name, EPS, d)
        agg = fo.aggregator().add(client(fo, 4).privatize(items))
        z = (agg.estimate() - truth) / np.sqrt(fo.variance(n, truth))
        assert np.abs(z).max() < 5
        assert agg.estimate([0, 1]).shape == (2,)


@pytest.mark.parametrize("gamma,forced,n", [
    ("2", False, 400_000), ("7", False, 400_000), ("12", False, 400_000), ("1/3", False, 400_000),
    ("2", True, 20_000), ("7", True, 20_000), ("1/3", True, 20_000),
])
def test_geometric_skip_gap_law(gamma, forced, n):
    """The gap sampler alone against P[Y >= j] = r^j, r = 1/(1 + e^-gamma): Y binned into 20
    cells of equal probability mass (by r^j), chi-square alpha = 1e-6 (critical value at the
    cells' d.o.f.); on the single-table path (gamma 2, 1/3) and the H 2^k + L path (7, 12), and
    with every decision forced through the exact refinement (the rare path's law)."""
    from fractions import Fraction

    from scipy.stats import chi2 as chi2_law

    g = Fraction(gamma)
    gaps, low_bits, m = _core.ldp._geometric_skip_for_testing(dpnoise.default_rng(21)._core, g.numerator,
                                                              g.denominator, n, 2**62, forced)
    assert (low_bits == 0) == (g < 5) and m >= 28
    r = 1 / (1 + math.exp(-float(g)))
    # cell edges e_0 = 0 < e_1 < ... : e_b the least j with r^j <= 1 - b/20
    edges = sorted({math.ceil(math.log(1 - b / 20) / math.log(r) - 1e-12) for b in range(20)})
    observed = np.histogram(gaps, bins=edges + [np.inf])[0].astype(float)
    tail = np.array([r ** e for e in edges] + [0.0])
    expected = (tail[:-1] - tail[1:]) * n
    assert gaps.min() >= 0
    stat = float(((observed - expected) ** 2 / expected).sum())
    assert stat < chi2_law.isf(1e-6, len(edges) - 1)
