"""The 1-bit Hadamard frequency oracle ("hadamard", dpnoise.ldp.hadamard): exact LDP ratios from
the randomizer's pmf, the kernel's law against that pmf, unbiasedness and the exact variance
n s² − c(x), the transform, merge, serialisation and malformed batches."""
import itertools
import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest

import dpnoise
import dpnoise.ldp.hadamard  # noqa: F401  (registers "hadamard")
from dpnoise import _core, ldp
from dpnoise.ldp.hadamard import padded_size

EPS = 2.0


def fo(d=6, eps=EPS):
    return ldp.FrequencyOracle("hadamard", eps, d)


def client(f, seed=1):
    return f.client(dpnoise.default_rng(seed), allow_insecure=True)


def hadamard_matrix(D):
    j = np.arange(D)
    parity = np.array([[bin(a & b).count("1") & 1 for b in j] for a in j])
    return 1 - 2 * parity


def unpack(bits, n):
    return np.unpackbits(bits, bitorder="little")[:n]


def pmf_exponents(D, x):
    """The randomizer's pmf, exactly: P(j, y | x) = (1/D) p^a (1 − p)^(1 − a) with a = 1 when
    the report y (0 for +1, 1 for −1) equals H[j, x]'s bit: returned as a[(j, y)]."""
    return {(j, y): int(y == (bin(j & x).count("1") & 1)) for j in range(D) for y in (0, 1)}


@pytest.mark.parametrize("d", [2, 3, 5, 8])
def test_exact_ldp_ratios(d):
    """For every pair of inputs and every output (j, y): P(j, y | x) / P(j, y | x') =
    (p/(1 − p))^(a − a') with a − a' in {−1, 0, 1}, and p/(1 − p) = e^γ exactly (k = 2
    randomized response), γ the exact rational <= ε. So every ratio is <= e^γ <= e^ε, and the
    bound is attained (some output has a − a' = 1): exact, no sampling."""
    f = fo(d, 1.7)
    D = f.padded_size
    assert D == padded_size(d) and D >= d and D & (D - 1) == 0 and D < 2 * d
    assert f.gamma <= Fraction(1.7)
    # the pmf sums to 1: for each j exactly one y has a = 1, so Σ = (1/D) Σ_j (p + 1 − p) = 1
    for x in range(d):
        a = pmf_exponents(D, x)
        assert all(a[(j, 0)] + a[(j, 1)] == 1 for j in range(D))
    worst = -2
    for x, x2 in itertools.permutations(range(d), 2):
        a, a2 = pmf_exponents(D, x), pmf_exponents(D, x2)
        worst = max(worst, max(a[o] - a2[o] for o in a))
    assert worst == 1  # ratio e^γ attained, never exceeded
    # and the keep probability of the kernel is e^γ/(e^γ + 1): its certified 32-bit bounds
    # enclose it (the exact refinement decides inside them)
    lo, hi, lo32, hi32 = _core._randomized_response_keep_bounds_for_testing(2, f.gamma.numerator,
                                                                            f.gamma.denominator, 2)
    with mpmath.workdps(80):  # p to 80 digits: far finer than the enclosure (width < 2^-118)
        e = mpmath.exp(mpmath.mpf(f.gamma.numerator) / f.gamma.denominator)
        p = e / (e + 1)
        assert lo <= p * mpmath.mpf(2) ** 128 <= hi and hi - lo < 2**10
        assert lo32 <= p * 2**32 <= hi32 and hi32 - lo32 <= 2


def test_kernel_law_chi_square():
    """The client's empirical law of (j, y) for item x = 5, d = 6 (D = 8: 16 cells) against the
    exact pmf: chi-square with 15 d.o.f. at alpha = 1e-6 (critical value 56.49). A kernel that
    keeps with probability off by 0.01 fails it (checked below)."""
    f = fo(6)
    n, x, D = 400_000, 5, 8
    r = client(f, 3).privatize(np.full(n, x))
    y = unpack(r.data["bits"], n)
    counts = np.bincount(r.data["rows"] * 2 + y, minlength=2 * D)
    p = math.exp(float(f.gamma)) / (math.exp(float(f.gamma)) + 1)
    a = pmf_exponents(D, x)
    expected = np.array([(p if a[(j, b)] else 1 - p) / D for j in range(D) for b in (0, 1)]) * n
    assert float(((counts - expected) ** 2 / expected).sum()) < 56.49
    wrong = np.array([(p - 0.01 if a[(j, b)] else 1 - p + 0.01) / D for j in range(D) for b in (0, 1)]) * n
    assert float(((counts - wrong) ** 2 / wrong).sum()) > 56.49


def run_estimates(f, truth, runs, seed):
    """Estimates of every item over `runs` independent seeded runs of the users `truth`,
    computed from the reports by the definition ĉ(x) = s Σ_i y_i H[j_i, x] (NumPy)."""
    n, D = truth.size, f.padded_size
    r = client(f, seed).privatize(np.tile(truth, runs))
    y = 1 - 2 * unpack(r.data["bits"], n * runs).astype(np.int64)
    run = np.repeat(np.arange(runs), n)
    sums = np.bincount(run * D + r.data["rows"], weights=y, minlength=runs * D).reshape(runs, D)
    return f.scale() * (sums @ hadamard_matrix(D))[:, : f.domain_size], r


def test_unbiased_and_variance_matches_formula():
    """4,000 seeded runs of 1,000 users (d = 6, skewed: 600 users hold item 0): every item's mean
    error within 4.5 standard errors of 0 (false alarm < 7e-6 per item) and its empirical
    variance within 10% of variance(n, counts) = n s² − c(x) (relative standard error 2.2%:
    10% is 4.5 of them). The count term matters: without it item 0 is off by 50%."""
    d, runs = 6, 4000
    f = fo(d)
    truth = np.repeat(np.arange(d), [600, 200, 100, 60, 40, 0])
    est, reports = run_estimates(f, truth, runs, seed=7)
    c = np.bincount(truth, minlength=d)
    var = f.variance(truth.size, c)
    assert np.allclose(var, truth.size * ((math.e**2 + 1) / (math.e**2 - 1)) ** 2 - c)
    assert (np.abs(est.mean(axis=0) - c) < 4.5 * np.sqrt(var / runs)).all()
    emp = est.var(axis=0, ddof=1)
    assert np.allclose(emp, var, rtol=0.10)
    assert not math.isclose(emp[0], truth.size * f.variance_per_user(), rel_tol=0.10)
    # the aggregator computes exactly these estimates (run 0)
    n = truth.size
    agg = f.aggregator().add(ldp.Reports("hadamard", f.fingerprint(), n, {
        "rows": reports.data["rows"][:n].copy(), "bits": reports.data["bits"][: n // 8].copy()}))
    assert np.allclose(agg.estimate(), est[0], rtol=0, atol=1e-9)
    assert np.allclose(agg.variance(), f.variance(n, np.minimum(agg.estimate(), n)))  # −c(x): unclipped below


def test_walsh_hadamard_transform_is_the_matrix_product():
    rng = np.random.default_rng(0)
    for D in (1, 2, 4, 16, 64):
        v = rng.integers(-1000, 1000, size=D)
        assert np.array_equal(_core.ldp.walsh_hadamard_transform(v), v @ hadamard_matrix(D))
    with pytest.raises(ValueError, match="power of two"):
        _core.ldp.walsh_hadamard_transform(np.zeros(12, dtype=np.int64))


def test_reports_layout_and_threads_independence():
    f = fo(1000)
    items = np.random.default_rng(1).integers(0, 1000, size=200_003)
    one = client(f, 5).privatize(items, threads=1)
    two = client(f, 5).privatize(items, threads=2)
    assert np.array_equal(one.data["rows"], two.data["rows"]) and np.array_equal(one.data["bits"], two.data["bits"])
    assert one.data["rows"].dtype == np.int64 and one.data["bits"].dtype == np.uint8
    assert one.data["bits"].shape == ((items.size + 7) // 8,)
    assert one.data["rows"].min() >= 0 and one.data["rows"].max() < 1024
    assert one.data["bits"][-1] >> (items.size % 8) == 0  # zero padding
    # rows are uniform and independent of the item: all 1024 rows used roughly equally
    hist = np.bincount(one.data["rows"], minlength=1024)
    assert hist.min() > 100 and hist.max() < 300
    # a secure generator works without allow_insecure
    assert len(f.client().privatize(items[:10])) == 10


def _reports(f, n, rows, bits):
    return ldp.Reports("hadamard", f.fingerprint(), n, {"rows": rows, "bits": bits})


def test_malformed_batches_refused_and_aggregator_unchanged():
    f = fo(6)  # D = 8
    agg = f.aggregator().add(client(f).privatize([0, 1, 2, 3, 4]))
    before = agg.to_bytes()
    good_rows, good_bits = np.array([0, 7, 3], dtype=np.int64), np.array([0b101], dtype=np.uint8)
    agg_copy = f.aggregator().add(_reports(f, 3, good_rows, good_bits))  # the template is valid
    assert agg_copy.n == 3
    bad = [
        (_reports(f, 3, np.array([0, 8, 3]), good_bits), r"rows must be in \[0, padded_size\)"),
        (_reports(f, 3, np.array([0, -1, 3]), good_bits), "rows"),
        (_reports(f, 3, good_rows.astype(np.int32), good_bits), "rows"),
        (_reports(f, 3, good_rows[:2], good_bits), "rows"),
        (_reports(f, 3, good_rows, np.array([0b101, 0], dtype=np.uint8)), "bits"),
        (_reports(f, 3, good_rows, np.array([0b1101], dtype=np.uint8)), "padding"),
        (_reports(f, 3, good_rows, good_bits.astype(np.int64)), "bits"),
        (ldp.Reports("hadamard", f.fingerprint(), 3, {"rows": good_rows}), "bits"),
        (ldp.Reports("hadamard", f.fingerprint(), 3, {"rows": good_rows, "bits": good_bits, "x": good_bits}), "exactly"),
        (ldp.Reports("hadamard", fo(6, 1.0).fingerprint(), 3, {"rows": good_rows, "bits": good_bits}),
         "different configuration"),
        (ldp.Reports("hadamard", fo(7).fingerprint(), 3, {"rows": good_rows, "bits": good_bits}),
         "different configuration"),
        (ldp.Reports("grr", f.fingerprint(), 3, {"values": good_rows}), "different configuration"),
    ]
    for reports, message in bad:
        with pytest.raises(ValueError, match=message):
            agg.add(reports)
    with pytest.raises(ValueError, match="different configuration"):
        agg.merge(fo(8).aggregator())
    with pytest.raises(TypeError):
        agg.add({"rows": good_rows})
    assert agg.to_bytes() == before


@pytest.mark.parametrize("items,error", [
    ([0, 6], ValueError), ([-1], ValueError), ([0.5], TypeError), (np.zeros((2, 2), dtype=int), ValueError),
])
def test_bad_items(items, error):
    with pytest.raises(error, match="items"):
        client(fo(6)).privatize(items)


def test_bad_parameters_and_generators():
    with pytest.raises(ValueError, match="domain_size"):
        ldp.FrequencyOracle("hadamard", 1.0, (1 << 30) + 1)
    assert fo(1 << 30).padded_size == 1 << 30
    with pytest.raises(TypeError, match="option"):
        ldp.FrequencyOracle("hadamard", 1.0, 10, rows=3)
    with pytest.raises(dpnoise.InsecureGeneratorError):
        fo().client(dpnoise.default_rng(1))
    with pytest.raises(ValueError, match="power of two"):
        _core.ldp.hadamard_privatize(dpnoise.default_rng(1)._core, np.zeros(2, dtype=np.int64), 12, 2, 1, 1)


def test_privacy_loss_variance_and_registration():
    f = fo(100)
    assert "hadamard" in ldp.protocols()
    assert f.privacy_loss().pure_epsilon() == EPS
    s2 = ((math.exp(EPS) + 1) / (math.exp(EPS) - 1)) ** 2
    assert math.isclose(f.variance_per_user(), s2)
    assert np.allclose(f.variance(1000), 1000 * s2)
    empty = f.aggregator()
    assert np.array_equal(empty.estimate(), np.zeros(100)) and np.array_equal(empty.variance(), np.zeros(100))
