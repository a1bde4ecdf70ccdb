"""Numeric mean and sum oracles (dpnoise.ldp.MeanOracle): exact ε-LDP ratios of the grid
mechanisms, the kernels' laws, unbiasedness, stated against empirical standard errors, the
papers' worst-case variances, vectors, bad input, serialisation and merging."""
import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest

import dpnoise
from dpnoise import _core, ldp
from dpnoise.accounting.losses import PureDP
from dpnoise.ldp import _wire
from dpnoise.ldp.numeric import MeanAggregator
from dpnoise.ldp.numeric.mean import MEAN_STATE
from dpnoise.ldp.numeric import _formulas as F
from ldp_merging import merged_three_ways

METHODS = ["duchi", "piecewise", "hybrid", "bitmean"]
# the stderr contract also for 1BitMean's two layers (daily collection), drawn fresh: a bit at ε∞ = ε
# then binary randomized response at ε₁ = ε
CASES = METHODS + ["bitmean+instantaneous"]


def oracle_of(case, eps):
    if case == "bitmean+instantaneous":
        return ldp.MeanOracle("bitmean", eps, bounds=(0.0, 10.0), instantaneous_epsilon=eps)
    return ldp.MeanOracle(case, eps, bounds=(0.0, 10.0))
K = 32  # the input grid t = m / 2^K


def client(oracle, seed=1):
    return oracle.client(dpnoise.default_rng(seed), allow_insecure=True)


def decode(oracle, reports):
    """Each report as its real value y on [-C, C] (E[y] = t): Duchi's bit as ±C, Piecewise's z as
    z/2^G (an independent reading of the report layout, not the aggregator's code)."""
    n = reports.n
    c = F.duchi_scale(oracle.estimator_epsilon)  # with two layers: C∞ C₁
    if oracle.method in ("duchi", "bitmean"):
        bits = np.unpackbits(reports.data["bits"], bitorder="little")[:n]
        return np.where(bits == 1, c, -c)
    z = reports.data["values"].astype(np.float64) / 2.0 ** oracle.grid_bits
    if oracle.method == "piecewise":
        return z
    kinds = np.unpackbits(reports.data["kinds"], bitorder="little")[:n]
    return np.where(kinds == 1, np.where(reports.data["values"] == 1, c, -c), z)


def to_t(oracle, v):
    v = min(max(v, oracle.low), oracle.high)
    return (2 * v - oracle.low - oracle.high) / (oracle.high - oracle.low)


# ---------------------------------------------------------------- exact ε-LDP on the grid
def pm_density(Z, G, m):
    """The continuous Piecewise mechanism on the grid, in z units (y = z/2^G), for t = m/2^K: the
    window [a, b] and the densities inside and outside it, as exact Fractions."""
    P, Q = Z + 2**G, Z - 2**G
    a = Fraction(P * m - Q * 2**K, 2 ** (K + 1))
    return a, a + Q, Fraction(P, 2 * Z * Q), Fraction(Q, 2 * Z * P)


def pm_pmf(Z, G, m, z):
    """P(report = z | m) = ∫ hat(y − z) f(y) dy (randomized rounding of the continuous Y)."""
    a, b, inside, outside = pm_density(Z, G, m)

    def integral(lo, hi, dens):  # ∫_lo^hi (1 − |y − z|) dens dy over lo < hi within [z−1, z+1]
        total = Fraction(0)
        for s, e in ((max(lo, z - 1), min(hi, z)), (max(lo, z), min(hi, z + 1))):
            if s < e:
                # hat is 1 − |y − z|: integrate the linear piece exactly
                total += dens * ((e - s) - Fraction(abs((e - z) * abs(e - z) - (s - z) * abs(s - z)), 2))
        return total

    return integral(Fraction(-Z), a, outside) + integral(a, b, inside) + integral(b, Fraction(Z), outside)


@pytest.mark.parametrize("eps", [0.5, 1.0, 3.0])
def test_piecewise_grid_exact_ldp_ratios(eps):
    """Exact pmf of the grid Piecewise report for inputs t = m/2^K at both ends, the middle and
    odd grid points: it sums to 1 near every breakpoint we enumerate, every ratio between two
    inputs is at most ((Z + 2^G)/(Z − 2^G))², the bound is attained, and that bound is <= e^γ
    (mpmath at 60 digits; C~ = Z/2^G was rounded up from a certified enclosure)."""
    oracle = ldp.MeanOracle("piecewise", eps, bounds=(-1.0, 1.0))
    Z, G = oracle.grid_z, oracle.grid_bits
    inputs = [-(2**K), -12345, 0, 987654321, 2**K]
    zs = set()
    for m in inputs:
        a, b, _, _ = pm_density(Z, G, m)
        for edge in (math.floor(a), math.floor(b), -Z, Z):
            zs.update(range(max(-Z, edge - 2), min(Z, edge + 3) + 1))
    zs.update([0, 1, -1])
    pmf = {m: {z: pm_pmf(Z, G, m, z) for z in sorted(zs)} for m in inputs}
    bound = Fraction(Z + 2**G, Z - 2**G) ** 2
    worst = max(pmf[m][z] / pmf[m2][z] for m in inputs for m2 in inputs for z in zs)
    assert worst == bound
    with mpmath.workdps(60):
        assert mpmath.mpf(bound.numerator) / bound.denominator <= mpmath.exp(
            mpmath.mpf(oracle.gamma.numerator) / oracle.gamma.denominator)
        c = (mpmath.exp(mpmath.mpf(eps) / 4) + mpmath.exp(-mpmath.mpf(eps) / 4)) / (
            mpmath.exp(mpmath.mpf(eps) / 4) - mpmath.exp(-mpmath.mpf(eps) / 4))
        assert c <= mpmath.mpf(Z) / 2**G <= c + mpmath.mpf(2) ** -G  # C <= C~ < C + 2^-G
    # the whole pmf sums to 1 and has mean t exactly: z near a breakpoint enumerated, the runs of
    # z between them (whose hat lies inside one piece) summed in closed form
    for m in (-(2**K), 987654321):
        a, b, inside, outside = pm_density(Z, G, m)
        near = set()
        for edge in (-Z, math.floor(a), math.floor(b), Z):
            near.update(z for z in range(edge - 2, edge + 4) if -Z <= z <= Z)
        total = sum(pm_pmf(Z, G, m, z) for z in near)
        mean = sum(z * pm_pmf(Z, G, m, z) for z in near)
        marks = sorted(near)
        for lo, hi in zip(marks[:-1], marks[1:]):
            if hi - lo > 1:  # the run lo+1 .. hi-1
                first, last = lo + 1, hi - 1
                dens = inside if a <= first - 1 and last + 1 <= b else outside
                count = last - first + 1
                total += dens * count
                mean += dens * Fraction((first + last) * count, 2)
        assert total == 1
        assert mean / 2**G == Fraction(m, 2**K)  # unbiased, exactly


@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_duchi_exact_ldp_ratio_and_certified_bounds(eps):
    """Duchi's bit: P(1 | m) = 1/2 + m κ/2^(K+1), κ = tanh(γ/2). The ratio of any two inputs is at
    most (1 + κ)/(1 − κ) = e^γ exactly (attained at m = ±2^K), and the kernel's certified 64-bit
    bounds enclose κ and e^{−γ/2} (the hybrid's choice)."""
    oracle = ldp.MeanOracle("hybrid", eps, bounds=(0.0, 1.0))
    _, _, (klo, khi), (elo, ehi) = _core.ldp.mean_grid(2, 0.0, 1.0, oracle.gamma.numerator,
                                                       oracle.gamma.denominator, True)
    with mpmath.workdps(60):
        g = mpmath.mpf(oracle.gamma.numerator) / oracle.gamma.denominator
        kappa = mpmath.tanh(g / 2)
        assert klo <= kappa * mpmath.mpf(2) ** 64 <= khi and khi - klo <= 4
        assert elo <= mpmath.exp(-g / 2) * mpmath.mpf(2) ** 64 <= ehi and ehi - elo <= 4
        p = {m: mpmath.mpf(1) / 2 + m * kappa / 2 ** (K + 1) for m in (-(2**K), -5, 0, 7, 2**K)}
        worst = max(max(p[a] / p[b], (1 - p[a]) / (1 - p[b])) for a in p for b in p)
        assert abs(worst - mpmath.exp(g)) < mpmath.mpf(10) ** -50 and mpmath.exp(g) <= mpmath.exp(eps)


@pytest.mark.parametrize("ct", [False, True])
def test_kernel_laws_chi_square(ct):
    """The samplers against their exact laws, 200,000 reports per case, default and
    constant-time kernels. Duchi: P(1 | t) for t in {−1, −0.4, 0.7}; two-sided z within 4.5
    (false alarm 7e-6 each). Piecewise at t = 0.3: six bins (below the window, its three thirds,
    above; their exact masses from the pmf's integral) against the chi-square critical value
    30.9 (5 df, α = 1e-5)."""
    n = 200_000
    oracle = ldp.MeanOracle("duchi", 1.0, bounds=(-1.0, 1.0), constant_time=ct)
    kappa = math.tanh(float(oracle.gamma) / 2)
    for i, t in enumerate([-1.0, -0.4, 0.7]):
        r = client(oracle, seed=10 + i).privatize(np.full(n, t))
        ones = np.unpackbits(r.data["bits"], bitorder="little")[:n].sum()
        p = 0.5 + t * kappa / 2  # −0.4 and 0.7 are not on the 2^-32 grid: rounding keeps the mean
        assert abs(ones - n * p) < 4.5 * math.sqrt(n * p * (1 - p))

    pm = ldp.MeanOracle("piecewise", 1.0, bounds=(-1.0, 1.0), constant_time=ct)
    Z, G = pm.grid_z, pm.grid_bits
    m = 2 * round(0.15 * 2**K)  # even: t = m/2^K maps to the grid point m with no rounding
    t = m / 2**K
    a, b, inside, outside = pm_density(Z, G, m)
    # bins in y units: the rounding moves mass by less than one grid step 2^-G (negligible
    # here: 2^-57 against bin masses > 0.05, far below the test's resolution)
    cuts = [a, a + (b - a) / 3, a + 2 * (b - a) / 3, b]
    edges = [Fraction(-Z)] + cuts + [Fraction(Z)]
    exact = [(inside if a <= lo and hi <= b else outside) * (hi - lo) for lo, hi in zip(edges[:-1], edges[1:])]
    assert sum(exact) == 1
    probs = np.array([float(p) for p in exact])
    assert abs(probs.sum() - 1) < 1e-12
    r = client(pm, seed=3).privatize(np.full(n, t))
    z = r.data["values"].astype(np.float64)
    counts = np.histogram(z, bins=np.array([float(e) for e in edges]))[0]
    chi2 = ((counts - n * probs) ** 2 / (n * probs)).sum()
    assert chi2 < 30.9


# the constant-time grid (exact/constant_time/mean_mechanisms.hpp) takes bounds whose digits lie
# within 93 bits of the larger one's magnitude: its own cases, including negative bounds and a
# value (2^-300) below its fixed-point unit, which it rounds to 0 (up-probability 2^-269 -> 0)
GRID_CASES = {False: ((1.0, 0.0, 3.0), (0.5 + 2.0**-34, 2.0**-100, 1.0), (2.0**-300, -1.0, 1.0)),
              True: ((1.0, 0.0, 3.0), (0.1, -1.0, 7.0), (-2.5, -3.0, 0.5), (2.0**-300, -1.0, 1.0))}


@pytest.mark.parametrize("ct", [False, True])
def test_input_grid_exact_rounding(ct):
    """The input grid alone: m = 2 index − 2^32 with index = ⌊u 2^32⌋ + Bernoulli(frac), u the
    value's exact position (v − low)/(high − low). Cases: 1 in (0, 3) (up-probability 1/3, the
    128-bit path); 0.5 + 2^-34 in (2^-100, 1) and 2^-300 in (−1, 1) (the arbitrary-size path:
    the exponents span more than 94 bits; probabilities about 1/4 and 2^-269); then the bounds and
    values beyond them (exact ends). 200,000 draws each: the up-frequency within 4.5 standard
    errors of the exact probability (false alarm 7e-6)."""
    n = 200_000
    gen = dpnoise.default_rng(11)
    for v, low, high in GRID_CASES[ct]:
        pos = (Fraction(v) - Fraction(low)) * 2**32 / (Fraction(high) - Fraction(low))
        j = math.floor(pos)
        p = float(pos - j)
        m = _core.ldp._mean_input_grid_for_testing(gen._core, np.full(n, v), low, high, ct)
        assert set(np.unique(m).tolist()) <= {2 * j - 2**32, 2 * j + 2 - 2**32}
        ups = int((m == 2 * j + 2 - 2**32).sum())
        assert abs(ups - n * p) <= 4.5 * math.sqrt(n * p * (1 - p)) + 1e-9, (v, ups, n * p)
    ends = _core.ldp._mean_input_grid_for_testing(gen._core, np.array([0.0, 3.0, -1e300, 7.0, 5e-324]), 0.0, 3.0, ct)
    assert list(ends[:4]) == [-(2**32), 2**32, -(2**32), 2**32] and ends[4] in (-(2**32), -(2**32) + 2)
    with pytest.raises(ValueError, match="finite"):
        _core.ldp._mean_input_grid_for_testing(gen._core, np.array([np.nan]), 0.0, 1.0, ct)


# ---------------------------------------------------------------- unbiasedness and stderr
def runs_of(oracle, values, runs, seed):
    """`runs` independent estimates of the mean, each over len(values) users, from one batch."""
    n = len(values)
    r = client(oracle, seed).privatize(np.tile(values, runs))
    y = decode(oracle, r).reshape(runs, n)
    est = oracle.midpoint + y.mean(axis=1) * oracle.half_width
    return est, r


def aggregator_of_run(oracle, reports, n, i):
    data = {}
    for name, arr in reports.data.items():
        per = n // 8 if name in ("bits", "kinds") else n
        data[name] = arr[i * per:(i + 1) * per].copy()
    return oracle.aggregator().add(oracle.reports(data, n))


@pytest.mark.parametrize("method", CASES)
@pytest.mark.parametrize("eps", [0.5, 1.0, 2.0, 4.0])
def test_unbiased_and_stated_stderr_matches_empirical(method, eps):
    """1,600 seeded runs of 800 users all holding 3.0 in bounds (0, 10) (t = −0.4): the mean of
    the estimates within 4.5 standard errors of 3.0 (false alarm 7e-6), and the stated
    mean_stderr (averaged over 40 runs' aggregators, which also reproduce the decoded estimates)
    within 10% of the empirical standard deviation (its relative standard error is 1.8%: 10% is
    5.6 of them)."""
    oracle = oracle_of(method, eps)
    n, runs = 800, 1600
    est, reports = runs_of(oracle, np.full(n, 3.0), runs, seed=int(eps * 100) + CASES.index(method))
    emp = est.std(ddof=1)
    assert abs(est.mean() - 3.0) < 4.5 * emp / math.sqrt(runs)
    stated = []
    for i in range(40):
        agg = aggregator_of_run(oracle, reports, n, i)
        assert math.isclose(agg.mean(), est[i], rel_tol=1e-9, abs_tol=1e-9)
        assert math.isclose(agg.sum(), n * est[i], rel_tol=1e-9, abs_tol=1e-6)
        stated.append(agg.mean_stderr())
        assert math.isclose(agg.sum_stderr(), n * stated[-1], rel_tol=1e-12)
    assert abs(np.mean(stated) / emp - 1) < 0.10, (np.mean(stated), emp)


@pytest.mark.parametrize("method", CASES)
def test_stderr_never_too_small_on_spread_data(method):
    """Users spread over the whole range (and beyond: clipped), 1,600 runs of 800: the stated
    standard error is at least 0.9 times the empirical one (it includes the users' own spread,
    so it is conservative), and the estimate is unbiased for the clipped mean (4.5 SE)."""
    oracle = oracle_of(method, 2.0)
    n, runs = 800, 1600
    values = np.linspace(-3.0, 12.0, n)
    est, reports = runs_of(oracle, values, runs, seed=5)
    truth = np.clip(values, 0, 10).mean()
    emp = est.std(ddof=1)
    assert abs(est.mean() - truth) < 4.5 * emp / math.sqrt(runs)
    stated = np.mean([aggregator_of_run(oracle, reports, n, i).mean_stderr() for i in range(40)])
    assert stated >= 0.9 * emp, (stated, emp)


# ---------------------------------------------------------------- worst-case variances
@pytest.mark.parametrize("eps", [0.5, 1.0, 2.0, 4.0])
def test_worst_case_variance_matches_papers(eps):
    """Per user, at each mechanism's worst input, on [-1, 1], 400,000 users: the empirical
    variance within 2% of the paper's formula (its relative standard error is at most 0.5%, for
    Piecewise at ε = 4; 2% is 4 of them: false alarm below 1e-4 per case). Duchi and 1BitMean: ((e^ε + 1)/(e^ε − 1))² at t = 0; Piecewise:
    4e^{ε/2}/(3(e^{ε/2} − 1)²) at |t| = 1; hybrid: constant in t when it mixes (checked at 0 and
    1), Duchi's at t = 0 otherwise (ε = 0.5 < ε*). The grid
    versions' exact worst cases are within 1e-9 relative of the formulas (C~ − C < 2^-37)."""
    n = 400_000
    worst_input = {"duchi": 0.0, "bitmean": 0.0, "piecewise": 1.0, "hybrid": 1.0}
    for method in METHODS:
        oracle = ldp.MeanOracle(method, eps, bounds=(-1.0, 1.0))
        formula = oracle.worst_case_variance()
        assert math.isclose(oracle.grid_worst_case_variance(), formula, rel_tol=1e-9)
        assert oracle.grid_worst_case_variance() >= formula * (1 - 1e-15)
        paper = {"duchi": ((math.exp(eps) + 1) / (math.exp(eps) - 1)) ** 2,
                 "piecewise": 4 * math.exp(eps / 2) / (3 * (math.exp(eps / 2) - 1) ** 2)}
        paper["bitmean"] = paper["duchi"]
        s = math.exp(eps / 2)
        paper["hybrid"] = ((s + 3) / (3 * s * (s - 1)) + (math.exp(eps) + 1) ** 2 / (s * (math.exp(eps) - 1) ** 2)
                           if eps > 0.61 else paper["duchi"])
        assert math.isclose(formula, paper[method], rel_tol=1e-12)
        mixes = method == "hybrid" and oracle.mixes
        for t in ([0.0, 1.0] if mixes else [0.0 if method == "hybrid" else worst_input[method]]):
            y = decode(oracle, client(oracle, seed=int(eps * 10)).privatize(np.full(n, t)))
            assert abs(y.var() / formula - 1) < 0.02, (method, t, y.var(), formula)


def test_hybrid_never_worse_than_the_others():
    """Over ε from 2^-10 to 20: the hybrid's worst case is at most Duchi's and Piecewise's (and
    strictly below both where it mixes, ε > ε* ≈ 0.61, Wang et al. 2019)."""
    eps_star = None
    for eps in np.geomspace(2**-10, 20, 400):
        h, d, p = (F.worst_case_variance(m, eps) for m in (F.HYBRID, F.DUCHI_BIT, F.PIECEWISE))
        assert h <= d and h <= p
        if F.hybrid_mixes(eps) and eps_star is None:
            eps_star = eps
            assert h < d and h < p
    assert 0.6 < eps_star < 0.63
    for eps in (0.3, 1.0, 5.0):
        grid = [ldp.MeanOracle(m, eps, bounds=(-1.0, 1.0)).grid_worst_case_variance()
                for m in ("hybrid", "duchi", "piecewise")]
        assert grid[0] <= min(grid[1:])


# ---------------------------------------------------------------- behaviour
def test_clipping_and_estimates_not_clipped():
    """Values beyond the bounds count as the bounds; the mean is not clipped to the bounds
    (with every user at the top, about half of the runs estimate above it)."""
    oracle = ldp.MeanOracle("piecewise", 1.0, bounds=(0.0, 1.0))
    est, _ = runs_of(oracle, np.array([5.0, 1.0, 1e300] * 100), 400, seed=2)
    assert (est > 1.0).mean() > 0.3
    assert abs(est.mean() - 1.0) < 4.5 * est.std(ddof=1) / math.sqrt(400)


def test_vectors_one_coordinate_per_user():
    """dimensions=3: each user reports one uniform coordinate; per-coordinate means unbiased (4.5
    SE over 1,000 runs, false alarm 7e-6 each) with the stated stderr within 10% of the
    empirical (relative SE 2.2%: 10% is 4.5 of them; values constant per coordinate)."""
    oracle = ldp.MeanOracle("hybrid", 2.0, bounds=(-5.0, 5.0), dimensions=3)
    truth = np.array([-4.0, 0.5, 3.0])
    n, runs = 1200, 1000
    est, stated = [], []
    for i in range(runs):
        r = client(oracle, seed=100 + i).privatize(np.tile(truth, (n, 1)))
        assert set(r.data) == {"kinds", "values", "coordinates"}
        agg = oracle.aggregator().add(r)
        est.append(agg.mean())
        stated.append(agg.mean_stderr())
        assert agg.sum().shape == (3,)
    est, stated = np.array(est), np.array(stated)
    emp = est.std(axis=0, ddof=1)
    assert (np.abs(est.mean(axis=0) - truth) < 4.5 * emp / math.sqrt(runs)).all()
    assert (np.abs(stated.mean(axis=0) / emp - 1) < 0.10).all(), (stated.mean(axis=0), emp)
    counts = np.bincount(r.data["coordinates"], minlength=3)
    assert counts.sum() == n and (np.abs(counts - n / 3) < 4.5 * math.sqrt(n * 2 / 9)).all()


def test_empty_and_tiny_aggregators():
    oracle = ldp.MeanOracle("duchi", 1.0, bounds=(0.0, 1.0), dimensions=2)
    agg = oracle.aggregator()
    assert np.isnan(agg.mean()).all() and np.isnan(agg.mean_stderr()).all()
    agg.add(client(oracle).privatize(np.array([[0.5, 0.5]])))
    se = agg.mean_stderr()
    assert np.isfinite(se).sum() == 1  # one coordinate has its one user: the worst case bound
    assert math.isclose(np.nanmax(se), math.sqrt(oracle.worst_case_variance()))


def test_threads_do_not_change_reports_and_values_far_below_the_bounds_scale():
    oracle = ldp.MeanOracle("hybrid", 1.0, bounds=(0.0, 1.0))
    values = np.concatenate([np.linspace(0, 1, 200_000), [1e-300, 5e-324, 1e-20, -0.0]])
    a = client(oracle, 9).privatize(values, threads=1)
    b = client(oracle, 9).privatize(values, threads=2)
    assert all(np.array_equal(a.data[k], b.data[k]) for k in a.data)


def test_privacy_loss_repr_and_equality():
    oracle = ldp.MeanOracle("bitmean", 1.5, bounds=(0, 600))
    assert oracle.privacy_loss() == PureDP(1.5)
    assert oracle == ldp.MeanOracle("bitmean", 1.5, bounds=(0.0, 600.0))
    assert oracle != ldp.MeanOracle("duchi", 1.5, bounds=(0, 600))
    assert "bitmean" in repr(oracle) and "MeanAggregator" in repr(oracle.aggregator())


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize("values, error, match", [
    ([1.0, float("nan")], ValueError, "values must be finite"),
    ([1.0, float("inf")], ValueError, "values must be finite"),
    (np.array([-np.inf]), ValueError, "values must be finite"),
    (["a", "b"], TypeError, "values must be real"),
    ([1.0, None], TypeError, "values must be real"),
    (np.array([1 + 2j]), TypeError, "values must be real"),
    (np.array([True, False]), TypeError, "values must be real"),
    ([[1.0, 2.0]], ValueError, "values must have shape"),
    ([[1.0], [2.0, 3.0]], TypeError, "values must be"),
])
def test_bad_values_refused_without_echo(values, error, match):
    oracle = ldp.MeanOracle("piecewise", 1.0, bounds=(0.0, 1.0))
    with pytest.raises(error, match=match) as exc:
        client(oracle).privatize(values)
    assert "nan" not in str(exc.value).lower().replace("nan and", "") and "3.0" not in str(exc.value)


def test_bad_parameters():
    with pytest.raises(ValueError, match="method"):
        ldp.MeanOracle("laplace", 1.0, bounds=(0, 1))
    with pytest.raises(ValueError, match="epsilon"):
        ldp.MeanOracle("duchi", 0.0, bounds=(0, 1))
    with pytest.raises(ValueError, match="epsilon"):
        ldp.MeanOracle("duchi", float("nan"), bounds=(0, 1))
    with pytest.raises(ValueError, match="low < high"):
        ldp.MeanOracle("duchi", 1.0, bounds=(1, 1))
    with pytest.raises(ValueError, match="finite"):
        ldp.MeanOracle("duchi", 1.0, bounds=(0, float("inf")))
    with pytest.raises(ValueError, match="high − low"):
        ldp.MeanOracle("duchi", 1.0, bounds=(-1.7e308, 1.7e308))
    with pytest.raises(TypeError, match="bounds"):
        ldp.MeanOracle("duchi", 1.0, bounds=1.0)
    with pytest.raises(TypeError, match="low"):
        ldp.MeanOracle("duchi", 1.0, bounds=("0", 1))
    with pytest.raises(ValueError, match="dimensions"):
        ldp.MeanOracle("duchi", 1.0, bounds=(0, 1), dimensions=0)
    with pytest.raises(dpnoise.InsecureGeneratorError):
        ldp.MeanOracle("duchi", 1.0, bounds=(0, 1)).client(dpnoise.default_rng(1))
    with pytest.raises(TypeError, match="rng"):
        ldp.MeanOracle("duchi", 1.0, bounds=(0, 1)).client(np.random.default_rng(1))


# ---------------------------------------------------------------- serialisation and merging
@pytest.mark.parametrize("method", METHODS)
def test_serialisation_round_trip_and_corruption_refused(method):
    oracle = ldp.MeanOracle(method, 1.0, bounds=(-2.0, 7.0), dimensions=2)
    reports = client(oracle).privatize(np.random.default_rng(0).uniform(-3, 8, size=(1001, 2)))
    back = ldp.Reports.from_bytes(reports.to_bytes())
    assert back == reports and back.family == "mean"
    assert back.params == reports.params and all(np.array_equal(back.data[k], reports.data[k]) for k in reports.data)
    agg = oracle.aggregator().add(back)
    blob = agg.to_bytes()
    loaded = MeanAggregator.from_bytes(blob)
    assert loaded.n == agg.n and np.array_equal(loaded.mean(), agg.mean())
    assert np.array_equal(loaded.mean_stderr(), agg.mean_stderr())
    for bad in (blob[:-1], blob[:40], blob[:60] + bytes([blob[60] ^ 1]) + blob[61:], b"junk", b""):
        with pytest.raises(ValueError):
            MeanAggregator.from_bytes(bad)
    with pytest.raises(TypeError):
        MeanAggregator.from_bytes("text")
    with pytest.raises(ValueError):
        ldp.Reports.from_bytes(agg.to_bytes())  # a state is not a report batch
    assert ldp.Configuration.from_json(oracle.to_json()) == oracle
    # a valid checksum over tampered content: counts that do not add up, impossible sums
    header = {"method": oracle.name, "params": _wire.jsonable(oracle.params()), "n": agg.n}
    for name, change in (("users", lambda s: s.__setitem__("users", s["users"] + 1)),
                         ("duchi_ones", lambda s: s.__setitem__("duchi_ones", s["duchi_users"] + 5)),
                         ("pm_sum_squares", lambda s: s.__setitem__("pm_sum_squares", s["pm_sum_squares"] * 0 + 7))):
        state = {k: v.copy() for k, v in agg._state.items()}
        change(state)
        forged = _wire.frame(MEAN_STATE, header, sorted(state.items()))
        with pytest.raises(ValueError, match="corrupt"):
            MeanAggregator.from_bytes(forged)


@pytest.mark.parametrize("method", METHODS)
def test_three_way_merge_equal_and_other_configurations_refused(method):
    oracle = ldp.MeanOracle(method, 2.0, bounds=(0.0, 1.0))
    c = client(oracle, 4)
    rng = np.random.default_rng(1)
    batches = [c.privatize(rng.uniform(0, 1, size=s)) for s in (999, 1, 5000)]
    one, left, right = merged_three_ways(oracle, batches)
    for agg in (left, right):
        assert agg.n == one.n == 6000
        assert agg.to_bytes() == one.to_bytes()
        assert agg.mean() == one.mean() and agg.mean_stderr() == one.mean_stderr()
    other = ldp.MeanOracle(method, 2.0, bounds=(0.0, 2.0))
    with pytest.raises(ValueError, match="different configuration"):
        other.aggregator().add(batches[0])
    with pytest.raises(ValueError, match="different configuration"):
        other.aggregator().merge(one)
    fo = ldp.FrequencyOracle("grr", 2.0, 4)
    with pytest.raises(ValueError, match="different configuration"):
        oracle.aggregator().add(fo.client(dpnoise.default_rng(1), allow_insecure=True).privatize([1, 2]))
    with pytest.raises(TypeError):
        one.estimate([1])


@pytest.mark.parametrize("method", METHODS)
def test_malformed_batches_refused_and_aggregator_unchanged(method):
    oracle = ldp.MeanOracle(method, 1.0, bounds=(0.0, 1.0), dimensions=2)
    good = client(oracle).privatize(np.full((16, 2), 0.5))
    agg = oracle.aggregator().add(good)
    before = agg.to_bytes()
    bad_batches = []
    for name in good.data:
        arr = good.data[name].copy()
        if name == "coordinates":
            arr[3] = 2
        elif name == "values":
            arr[:] = oracle.grid_z + 1 if method == "piecewise" else 7
        elif name in ("bits", "kinds"):
            arr = arr[:-1]
        bad_batches.append({**good.data, name: arr})
    bad_batches.append({k: v for k, v in good.data.items() if k != "coordinates"})
    bad_batches.append({**good.data, "coordinates": good.data["coordinates"].astype(np.int32)})
    for data in bad_batches:
        with pytest.raises(ValueError):
            agg.add(ldp.Reports(oracle.name, oracle.fingerprint(), 16, data, "mean"))
    assert agg.to_bytes() == before


# ---------------------------------------------------------------- the fast paths (issue #35 item 5)
def _reference_reports(oracle, values, seed):
    """The reports of the reference loop (exact grid map and bit per value, no fixed-point path)."""
    cfg = oracle
    lo, hi = cfg._kernel_bounds()  # noqa: E741
    return _core.ldp._mean_privatize_reference_for_testing(
        dpnoise.default_rng(seed)._core, np.ascontiguousarray(values, dtype=np.float64), cfg.dimensions, cfg.kernel,
        lo, hi, cfg.gamma.numerator, cfg.gamma.denominator, cfg.mixes, 1)


ADVERSARIAL = {
    # bounds: values that hit the fixed-point path's edges: on the 2^-32 grid (first digit 0),
    # clipped, ±0, subnormal, far below the bounds' scale (map()'s wide branch), near the bounds
    (0.0, 600.0): [0.0, 300.0, 150.0, 600.0, -1.0, 601.0, 5e-324, 1e-300, 1e-20, 599.9999999999999, 1e-12, 37.5],
    (-1.0, 1.0): [-0.0, 0.0, -1.0, 1.0, 0.5, -0.25, 2.0 ** -32, -(2.0 ** -33), 1e-300, -1e-300, 0.999999999],
    (0.1, 0.7): [0.1, 0.7, 0.4, 0.1000000000000001, 0.3, 0.2, 0.6999999999999999],
    (1e6, 1e6 + 1.0): [1e6, 1e6 + 0.5, 1e6 + 0.25, 1e6 + 1e-9, 1e6 + 0.999],   # width 2^-20 of the magnitude
    (-3e300, 1e300): [0.0, 1e299, -2e300, 1.0, -1e-300],
    (0.0, 1024.0): [1.0, 512.0, 3.0, 1023.0, 0.5, 2.0 ** -30, 1023.9999999999999],  # a power-of-two width
}


@pytest.mark.parametrize("bounds", sorted(ADVERSARIAL))
@pytest.mark.parametrize("method", METHODS)
def test_fast_client_same_reports_as_the_reference_loop(method, bounds):
    """The client's fixed-point grid (numeric_grid.hpp map_fast) and branch-free bits read the same
    random bits and give the same reports as the exact loop, value by value, on edge values and on
    random ones (several 2^16-report streams; dimensions 1 and 3)."""
    g = np.random.default_rng(11)
    low, high = bounds
    edge = np.array(ADVERSARIAL[bounds], dtype=np.float64)
    span = high / 2 - low / 2
    rand = low + 2 * span * g.random(140_000)
    for values, dims in ((np.concatenate([np.repeat(edge, 50), rand]), 1), (rand[:30_000].reshape(-1, 3), 3)):
        oracle = ldp.MeanOracle(method, 1.3, bounds=bounds, dimensions=dims)
        # the grid-first layout: memoised answers (every method), and fresh Piecewise/hybrid reports
        # (fresh Duchi bits read the stream directly: tests/ldp/test_mean_direct_bit.py)
        got = [oracle._privatize_permanent(dpnoise.default_rng(5), values, 2)]
        if method in ("piecewise", "hybrid"):
            got.append(client(oracle, seed=5).privatize(values, threads=2).data)
        coords, bits, ints = _reference_reports(oracle, values, seed=5)
        ref = {"bits": bits, "kinds": bits, "values": ints, "coordinates": coords}
        for data in got:
            for f in oracle.report_fields:
                np.testing.assert_array_equal(data[f.name], ref[f.name], err_msg=f.name)


@pytest.mark.parametrize("method", ["piecewise", "hybrid"])
def test_server_lane_sums_exact_at_the_range_edges(method):
    """The 64-bit lane sums (carried once per 2^15 reports) equal Python's exact integer sums for
    batches of |z| = Z, mixed signs and partial blocks; one report out of range anywhere refuses
    the batch and leaves the state as it was."""
    oracle = ldp.MeanOracle(method, 0.4, bounds=(0.0, 1.0))
    z = oracle.grid_z
    g = np.random.default_rng(12)
    n = 3 * 2**15 + 13
    values = np.where(g.random(n) < 0.5, z, -z).astype(np.int64)
    values[::7] = g.integers(-z, z + 1, size=values[::7].size)
    values[: 2**15] = z  # one whole block at the maximum
    data = {"values": values}
    duchi = np.zeros(n, dtype=bool)
    if method == "hybrid":
        duchi = g.random(n) < 0.3
        values[duchi] = g.integers(0, 2, size=int(duchi.sum()))
        data["kinds"] = np.packbits(duchi, bitorder="little")
    agg = oracle.aggregator().add(oracle.reports(data, n))
    pm = values[~duchi].tolist()
    s = agg._state
    sums = int(s["pm_sum"][0, 0]) + (int(s["pm_sum"][0, 1]) << 64)
    sums -= (1 << 128) if sums >> 127 else 0
    squares = sum(int(s["pm_sum_squares"][0, i]) << (64 * i) for i in range(3))
    assert sums == sum(pm) and squares == sum(v * v for v in pm)
    assert int(s["users"][0]) == n and int(s["duchi_users"][0]) == int(duchi.sum())
    assert int(s["duchi_ones"][0]) == int(values[duchi].sum())
    before = agg.to_bytes()
    for where, bad in ((n - 1, z + 1), (2**15 + 3, -z - 1), (5, np.iinfo(np.int64).min)):
        broken = values.copy()
        broken[where] = bad
        if method == "hybrid":
            duchi_b = duchi.copy()
            duchi_b[where] = False
            data = {"values": broken, "kinds": np.packbits(duchi_b, bitorder="little")}
        else:
            data = {"values": broken}
        with pytest.raises(ValueError, match="out of the report range"):
            agg.add(oracle.reports(data, n))
        assert agg.to_bytes() == before
    if method == "hybrid":  # a Duchi report other than 0 or 1
        broken = values.copy()
        i = int(np.flatnonzero(duchi)[-1])
        broken[i] = 2
        with pytest.raises(ValueError, match="out of the report range"):
            agg.add(oracle.reports({"values": broken, "kinds": np.packbits(duchi, bitorder="little")}, n))
        assert agg.to_bytes() == before
