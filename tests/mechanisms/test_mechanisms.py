"""Mechanisms: the floating-point attack, exact privacy ratios, calibration, accuracy, bad input.

Statistical checks use fixed seeds; each chi-square/binomial threshold is stated with its
false-alarm rate (alpha = 1e-6 unless noted)."""
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

import dpnoise
from dpnoise.accounting import Gaussian
from dpnoise.mechanisms import (
    DiscreteGaussianMechanism, DiscreteLaplaceMechanism, GaussianMechanism, GeometricMechanism,
    Histogram, LaplaceMechanism, PrivateKDE, RandomizedResponse, analytic_gaussian_sigma,
    classic_gaussian_sigma, discrete_error_lower_bound, error_lower_bound, posterior_bounds,
    hall_rinaldo_wasserman_sigma,
)

ALPHA = 1e-6


def seeded(seed=1):
    return dpnoise.default_rng(seed)


def finer_than_2_53(y):
    """Mironov's distinguisher: an output in (0, 1/4) that is not a multiple of 2^-53 cannot be
    fl(1 + n) for any double n (every such sum in (0, 1/2) is a multiple of 2^-53)."""
    y = np.asarray(y, dtype=float)
    sel = (y > 0) & (y < 0.25)
    return sel & (np.ldexp(y, 53) != np.rint(np.ldexp(y, 53)))


def test_mironov_attack_breaks_float_laplace_but_not_ours():
    n = 200_000
    nprng = np.random.default_rng(7)
    for b in (0.5, 1.0, 4.0):
        from0 = 0.0 + nprng.laplace(0.0, b, n)
        from1 = 1.0 + nprng.laplace(0.0, b, n)
        hits0, hits1 = finer_than_2_53(from0).mean(), finer_than_2_53(from1).mean()
        assert hits1 == 0.0  # impossible from input 1 ...
        assert hits0 > 0.01  # ... yet common from input 0: the outputs give the input away
    for eps in (0.25, 1.0, 8.0):
        mech = LaplaceMechanism(eps, 1.0, rng=seeded(3), allow_insecure=True)
        k, sens, scale = mech.grid(1)
        out0 = np.array([mech(0.0) for _ in range(2000)])
        out1 = np.array([mech(1.0) for _ in range(2000)])
        assert finer_than_2_53(out0).mean() == 0 and finer_than_2_53(out1).mean() == 0
        # identical support: every output from either input is a multiple of the same grid,
        # and the discrete Laplace noise gives every grid point positive probability
        for out in (out0, out1):
            assert np.all(np.ldexp(out, -k) == np.rint(np.ldexp(out, -k)))


def dlap_pmf(y, centre, t):
    r = math.exp(-1 / t)
    return (1 - r) / (1 + r) * np.exp(-np.abs(y - centre) / t)


def test_discrete_laplace_mechanism_exact_ratios_and_fit():
    for eps, sens in ((0.5, 1), (1.0, 3), (2.0, 2)):
        mech = DiscreteLaplaceMechanism(eps, sens, rng=seeded(11), allow_insecure=True)
        t = float(mech.scale)
        y = np.arange(-200, 201)
        p0, p1 = dlap_pmf(y, 0, t), dlap_pmf(y, sens, t)
        assert np.max(np.maximum(p0 / p1, p1 / p0)) <= math.exp(eps) * (1 + 1e-12)
        s = mech(np.zeros(50_000, dtype=np.int64))
        lo, hi = -int(4 * t) - 1, int(4 * t) + 1
        obs = np.array([np.sum(s <= lo)] + [np.sum(s == v) for v in range(lo + 1, hi)] + [np.sum(s >= hi)])
        pmf = dlap_pmf(np.arange(lo + 1, hi), 0, t)
        tail = (1 - pmf.sum()) / 2
        exp = np.concatenate([[tail], pmf, [tail]]) * s.size
        assert stats.chisquare(obs, exp).pvalue > ALPHA
    assert issubclass(GeometricMechanism, DiscreteLaplaceMechanism)


def test_grid_laplace_ratio_bound_on_neighbouring_reals():
    mech = LaplaceMechanism(0.7, 2.5)
    k, sens, scale = mech.grid(1)
    rng = np.random.default_rng(5)
    for _ in range(200):
        x = rng.uniform(-50, 50)
        x2 = x + rng.uniform(-2.5, 2.5)
        v, v2 = round(x / 2**k), round(x2 / 2**k)
        assert abs(v - v2) <= sens  # the widened sensitivity covers the rounding
    assert sens / scale <= Fraction(0.7) * (1 + Fraction(1, 10**12))


def test_randomized_response_exact_ratios_and_fit():
    for eps, k in ((0.5, 2), (1.0, 4), (2.0, 7)):
        mech = RandomizedResponse(eps, k, rng=seeded(21), allow_insecure=True)
        p = mech.keep_probability
        q = (1 - p) / (k - 1)
        assert p / q == pytest.approx(math.exp(eps), rel=1e-12)
        s = mech(np.zeros(60_000, dtype=np.int64))
        obs = np.bincount(s, minlength=k)
        exp = np.array([p] + [q] * (k - 1)) * s.size
        assert stats.chisquare(obs, exp).pvalue > ALPHA
    tc = RandomizedResponse.two_coin(rng=seeded(22), allow_insecure=True)
    assert tc.epsilon == pytest.approx(math.log(3))
    yes = tc(np.ones(40_000, dtype=np.int64)).mean()
    # binomial check of P(yes | yes) = 3/4: |z| < 4.89 has false-alarm rate 1e-6
    assert abs(yes - 0.75) / math.sqrt(0.75 * 0.25 / 40_000) < 4.89


def test_randomized_response_estimates_are_unbiased():
    truth = np.repeat(np.arange(5), [5000, 3000, 1000, 800, 200])
    mech = RandomizedResponse(1.0, 5, rng=seeded(31), allow_insecure=True)
    est = np.mean([mech.estimate_counts(mech(truth)) for _ in range(40)], axis=0)
    width = mech.accuracy(1e-6, truth.size) / math.sqrt(40)
    assert np.all(np.abs(est - np.bincount(truth)) < width)


def test_discrete_gaussian_mechanism_meets_epsilon_delta_exactly():
    mech = DiscreteGaussianMechanism(1.0, 1e-5, 2)
    s = mech.sigma
    y = np.arange(-int(30 * s) - 5, int(30 * s) + 6)
    w = np.exp(-(y.astype(float) ** 2) / (2 * s * s))
    p0 = w / w.sum()
    p1 = np.exp(-((y - 2.0) ** 2) / (2 * s * s)) / w.sum()
    assert np.sum(np.clip(p0 - math.e * p1, 0, None)) <= 1e-5
    assert np.sum(np.clip(p1 - math.e * p0, 0, None)) <= 1e-5


def normal_cdf(x):
    return 0.5 * math.erfc(-x / math.sqrt(2))


def test_analytic_gaussian_matches_balle_wang():
    def delta(eps, sigma):  # Balle & Wang 2018, Thm 8, written out here independently
        return normal_cdf(1 / (2 * sigma) - eps * sigma) - math.exp(eps) * normal_cdf(-1 / (2 * sigma) - eps * sigma)
    lo, hi = 1.0, 10.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if delta(1.0, mid) <= 1e-5 else (mid, hi)
    assert analytic_gaussian_sigma(1.0, 1e-5, 1.0) == pytest.approx(hi, rel=1e-9)
    assert classic_gaussian_sigma(0.5, 1e-5) == pytest.approx(math.sqrt(2 * math.log(1.25e5)) / 0.5)
    assert hall_rinaldo_wasserman_sigma(0.5, 1e-5) == pytest.approx(math.sqrt(2 * math.log(2e5)) / 0.5)
    with pytest.raises(ValueError, match="epsilon < 1"):
        classic_gaussian_sigma(1.5, 1e-5)
    # the grid mechanism's σ is the analytic one up to the 1/1024 widening
    g = GaussianMechanism(1.0, 1e-5)
    assert hi <= g.sigma <= hi * 1.002
    r = GaussianMechanism(rho=0.5)
    assert r.privacy_loss().zcdp_rho() <= 0.5 + 1e-12


@pytest.mark.parametrize("make,shape", [
    (lambda: LaplaceMechanism(1.0, 1.0, rng=seeded(41), allow_insecure=True), (100,)),
    (lambda: GaussianMechanism(1.0, 1e-5, rng=seeded(42), allow_insecure=True), (100,)),
    (lambda: GaussianMechanism(0.5, 1e-6, 2.0, rng=seeded(43), allow_insecure=True), ()),
])
def test_accuracy_coverage(make, shape):
    mech = make()
    beta, trials = 0.1, 1500
    x = np.linspace(-3, 3, int(np.prod(shape)) or 1).reshape(shape) if shape else 0.3
    w = mech.accuracy(beta, shape)
    fails = sum(np.max(np.abs(np.asarray(mech(x)) - x)) > w for _ in range(trials))
    # P(fail) <= beta; one-sided binomial bound at z = 4.75 (false-alarm rate 1e-6)
    assert fails <= trials * beta + 4.75 * math.sqrt(trials * beta * (1 - beta))
    # and the bound is not vacuous: the textbook ln(d/β)·Δ/ε is of the same size for Laplace
    if isinstance(mech, LaplaceMechanism):
        assert w <= 1.05 * math.log(100 / beta) / 1.0 + 0.01


def test_histogram_sensitivity_and_coverage():
    data = np.random.default_rng(0).uniform(0, 1, 5000)
    ar = Histogram(1.0, bins=10, range=(0, 1))
    rep = Histogram(1.0, bins=10, range=(0, 1), neighbours="replace")
    assert ar.privacy_loss().pure_epsilon() == pytest.approx(1.0)
    assert ar.privacy_loss().sensitivity == 1 and rep.privacy_loss().sensitivity == 2
    h = Histogram(1.0, bins=10, range=(0, 1), rng=seeded(51), allow_insecure=True)
    truth = h.counts(data)
    w = h.accuracy(0.1)
    fails = sum(np.max(np.abs(h(data) - truth)) > w for _ in range(500))
    assert fails <= 50 + 4.75 * math.sqrt(45)
    g = Histogram(1.0, delta=1e-6, categories=3, noise="gaussian", rng=seeded(52), allow_insecure=True)
    assert g(np.array([0, 1, 1, 2])).shape == (3,)
    # replace-one with Gaussian noise: two counts move by 1 (L2 √2), not one count by 2
    gr = Histogram(1.0, delta=1e-6, categories=3, noise="gaussian", neighbours="replace")
    loss = gr.privacy_loss()
    assert (loss.sensitivity, loss.coordinates) == (1, 2)
    assert loss.delta_for_epsilon(1.0) <= 1e-6
    coarse = DiscreteGaussianMechanism(1.0, 1e-6, 2).sigma
    assert gr.plan().param < 0.75 * coarse  # about 1/√2 of the old calibration
    with pytest.raises(ValueError, match="range"):
        Histogram(1.0, bins=10)


def test_private_kde_shape_and_noise_scale():
    grid = np.linspace(-3, 3, 61)
    kde = PrivateKDE(1.0, 1e-5, 0.4, grid, rng=seeded(61), allow_insecure=True)
    data = np.random.default_rng(1).normal(size=2000)
    n = data.size
    assert kde.sensitivity(n) == pytest.approx(math.sqrt(2) / (n * math.sqrt(2 * math.pi) * 0.4))
    diffs = np.array([kde(data) - kde.density(data) for _ in range(300)])
    sd = diffs.std(axis=0).mean()
    assert sd == pytest.approx(kde.noise_scale(n), rel=0.1)
    # neighbouring grid points are strongly correlated, as the kernel says
    c = np.corrcoef(diffs[:, 30], diffs[:, 31])[0, 1]
    assert c == pytest.approx(math.exp(-(0.1**2) / (2 * 0.16)), abs=0.1)
    assert isinstance(kde.privacy_loss(n), Gaussian)
    with pytest.raises(ValueError, match="epsilon"):
        PrivateKDE(2.0, 1e-5, 0.4, grid)


def test_seed_helpers():
    lo, up = posterior_bounds(0.5, 1.1)
    assert up == pytest.approx(math.exp(1.1) / (math.exp(1.1) + 1))
    assert lo == pytest.approx(1 / (1 + math.exp(1.1)))
    assert error_lower_bound(1.0, 0.0, 2.0) == pytest.approx(1 / (1 + math.e))
    assert discrete_error_lower_bound(0.0, 0.0, 11) == pytest.approx(10 / 11)
    with pytest.raises(ValueError, match="prior"):
        posterior_bounds(1.5, 1.0)


def test_budget_is_checked_before_noise():
    budget = dpnoise.PrivacyBudget(1.0)
    mech = LaplaceMechanism(0.6, rng=seeded(71), allow_insecure=True, budget=budget)
    mech(1.0)
    with pytest.raises(dpnoise.BudgetExceededError):
        mech(1.0)
    # the refused release drew nothing: the stream continues where one release left it
    ref = LaplaceMechanism(0.6, rng=seeded(71), allow_insecure=True)
    ref(1.0)
    assert mech.rng.random_raw() == ref.rng.random_raw()
    assert len(budget.ledger) == 1


@pytest.mark.parametrize("ctor", [
    lambda **kw: LaplaceMechanism(**kw), lambda **kw: DiscreteLaplaceMechanism(**kw),
    lambda **kw: RandomizedResponse(**kw),
])
@pytest.mark.parametrize("eps", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_epsilon(ctor, eps):
    with pytest.raises(ValueError, match="epsilon"):
        ctor(epsilon=eps)


def test_bad_input_named_and_before_noise():
    with pytest.raises(ValueError, match="delta"):
        LaplaceMechanism(1.0, delta=1.0)
    with pytest.raises(ValueError, match="delta"):
        GaussianMechanism(1.0, float("nan"))
    with pytest.raises(ValueError, match="sensitivity"):
        LaplaceMechanism(1.0, sensitivity=-1.0)
    with pytest.raises(ValueError, match="granularity"):
        LaplaceMechanism(1.0, granularity=0.3)
    with pytest.raises(ValueError, match="calibration"):
        GaussianMechanism(1.0, 1e-5, calibration="magic")
    m = LaplaceMechanism(1.0, budget=dpnoise.PrivacyBudget(10.0))
    with pytest.raises(ValueError, match="finite"):
        m(np.array([1.0, np.nan]))
    with pytest.raises(TypeError, match="numeric"):
        m("12")
    assert m.budget.ledger == []  # nothing was charged for the refused inputs
    with pytest.raises(ValueError, match=r"\[0, 3\)"):
        RandomizedResponse(1.0, 3, out_of_domain="raise")(np.array([0, 3]))
    with pytest.raises(TypeError, match="integers"):
        DiscreteLaplaceMechanism(1.0)(1.5)
    with pytest.raises(ValueError, match="beta"):
        LaplaceMechanism(1.0).accuracy(1.5)


def test_delta_laplace_uses_the_pure_to_approximate_calibration():
    m = DiscreteLaplaceMechanism(1.0, 1, delta=1e-3)
    # b >= Δ/(ε - ln(1-δ)) (docs/mechanisms.md, Lemma 1) and the exact profile meets (ε, δ)
    assert float(m.scale) >= 1 / (1.0 - math.log1p(-1e-3))
    assert m.privacy_loss().delta_for_epsilon(1.0) <= 1e-3


def test_outputs_are_exact_grid_multiples_for_arrays_any_strides():
    x = np.arange(40, dtype=np.float32).reshape(8, 5)[:, ::2]  # float32, non-contiguous
    m = LaplaceMechanism(1.0, rng=seeded(81), allow_insecure=True)
    y = m(x)
    k, _, _ = m.grid(x.size)
    assert y.shape == x.shape and y.dtype == np.float32  # float32 kept (issue 24)
    y = y.astype(np.float64)  # small values: the float32 outputs are the exact grid values
    assert np.all(np.ldexp(y, -k) == np.rint(np.ldexp(y, -k)))


def test_more_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="delta"):
        error_lower_bound(1.0, 1.5, 2.0)
    with pytest.raises(ValueError, match="diameter"):
        error_lower_bound(1.0, 0.0, -1.0)
    with pytest.raises(ValueError, match="size"):
        discrete_error_lower_bound(1.0, 0.0, 1)
    with pytest.raises(ValueError, match="epsilon"):
        posterior_bounds(0.5, -1.0)
    grid = np.linspace(0, 1, 5)
    with pytest.raises(ValueError, match="bandwidth"):
        PrivateKDE(1.0, 1e-5, 0.0, grid)
    with pytest.raises(ValueError, match="grid"):
        PrivateKDE(1.0, 1e-5, 0.1, np.zeros((2, 2, 2)))
    with pytest.raises(ValueError, match="data"):
        PrivateKDE(1.0, 1e-5, 0.1, grid)(np.zeros((3, 2)))
    with pytest.raises(ValueError, match="bins"):
        Histogram(1.0, bins=[0.0, 1.0, 0.5])
    with pytest.raises(ValueError, match="categories"):
        Histogram(1.0, categories=0)
    with pytest.raises(TypeError, match="bins"):
        Histogram(1.0)
    with pytest.raises(ValueError, match="noise"):
        Histogram(1.0, categories=3, noise="cauchy")
    with pytest.raises(ValueError, match="delta"):
        Histogram(1.0, categories=3, noise="gaussian")


def test_grid_conversions_equal_ldexp_and_refuse_overflow():
    """to_grid/from_grid multiply by 2^k instead of calling np.ldexp (several times faster);
    they must give the same values for every exponent a granularity can have, including
    subnormal results and ties, and refuse results that overflow a double."""
    from dpnoise._release import grid as _grid

    rng = np.random.default_rng(1)
    for k in [-1074, -1060, -1030, -1022, -60, -30, -1, 0, 1, 30, 1000, 1023]:
        x = np.concatenate([rng.normal(size=500) * 2.0 ** rng.integers(-1074, 1000, 500),
                            np.array([0.5, 1.5, 2.5, -0.5, -2.5]) * 2.0 ** max(min(k, 1000), -1000)])
        with np.errstate(over="ignore", invalid="ignore"):
            expected = np.rint(np.ldexp(x, -k))
        if np.all(np.abs(expected) <= 2**52):
            assert np.array_equal(_grid.to_grid(x, k), expected.astype(np.int64)), k
        else:
            with pytest.raises(OverflowError):
                _grid.to_grid(x, k)
        v = rng.integers(-2**53, 2**53, 500) if k <= 970 else rng.integers(-1, 2, 500)
        assert np.array_equal(_grid.from_grid(v, k), np.ldexp(v, k)), k
    with pytest.raises(OverflowError, match="overflows"):
        _grid.from_grid(np.array([3], dtype=np.int64), 1023)


@pytest.mark.parametrize("sensitivity", [1e-3, 1e-9, 0.5, 3.7, 1e5])
def test_gaussian_mechanism_accepts_any_positive_sensitivity(sensitivity):
    """Sensitivities below 1 used to fail while estimating the grid (an integer part of 0
    reached the discrete-Gaussian descriptor). Scalar releases still meet (ε, δ) exactly."""
    m = GaussianMechanism(1.0, 1e-5, sensitivity, rng=seeded(61), allow_insecure=True)
    assert m.privacy_loss().delta_for_epsilon(1.0) <= 1e-5
    assert 3.7 < m.sigma / sensitivity < 3.8  # the analytic σ for (1, 1e-5), plus the grid's widening
    assert np.isfinite(m(0.25))
    assert m(np.full(4, 0.25)).shape == (4,)


@pytest.mark.parametrize("coordinates,exc", [(0, ValueError), (-2, ValueError), (1.5, TypeError),
                                             (True, TypeError), ("2", TypeError)])
def test_coordinates_bad_input_names_the_argument(coordinates, exc):
    with pytest.raises(exc, match="coordinates"):
        DiscreteGaussianMechanism(1.0, 1e-5, 1, coordinates=coordinates)
    with pytest.raises(exc, match="coordinates"):
        dpnoise.accounting.DiscreteGaussian(2.0, 1, coordinates)
