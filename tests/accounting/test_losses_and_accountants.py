"""Accountants checked against closed forms, against each other and (when installed) dp-accounting."""
import math

import numpy as np
import pytest

from dpnoise.accounting import (
    KINDS, RDP, ZCDP, Accountant, ApproxDP, DiscreteGaussian, DiscreteLaplace, Gaussian, Laplace,
    PoissonSampled, PrivacyLossDistribution, PureDP, RandomizedResponse, ReportNoisyMax,
    group_privacy, loss_from_dict, parallel_composition, supported_by,
)
from dpnoise.accounting import conversions as conv


def normal_cdf(x):
    return 0.5 * math.erfc(-x / math.sqrt(2))


def balle_wang_delta(eps, sigma, sens=1.0):
    # Balle & Wang 2018, Thm 8, written out independently of the library
    a = sens / (2 * sigma)
    b = eps * sigma / sens
    return normal_cdf(a - b) - math.exp(eps) * normal_cdf(-a - b)


def balle_wang_epsilon(delta, sigma):
    lo, hi = 0.0, 100.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if balle_wang_delta(mid, sigma) <= delta else (mid, hi)
    return hi


ALL_LOSSES = [
    PureDP(0.5), ApproxDP(0.5, 1e-7), ZCDP(0.02), RDP((2.0, 4.0, 8.0, 32.0), (0.05, 0.1, 0.2, 0.8)),
    Laplace(2.0), DiscreteLaplace(3.0, 2), Gaussian(4.0), DiscreteGaussian(4.0, 1), DiscreteGaussian(4.0, 1, 2),
    RandomizedResponse(0.7), RandomizedResponse(1.1, categories=4),
    ReportNoisyMax(0.5, "laplace"), ReportNoisyMax(0.5, "permute_and_flip"),
    ReportNoisyMax(0.5, "exponential_mechanism"),
    PoissonSampled(Gaussian(1.0), 0.05), PoissonSampled(Laplace(1.0), 0.1),
    PoissonSampled(RandomizedResponse(1.0), 0.2),
    parallel_composition(Laplace(2.0), Gaussian(3.0)),
]


def test_thousand_fold_gaussian_pld_matches_balle_wang():
    exact = balle_wang_epsilon(1e-6, 50 / math.sqrt(1000))
    # through the accountant (Gaussians combine exactly) ...
    acc = Accountant("pld").compose(Gaussian(50.0), 1000)
    assert acc.get_epsilon(1e-6) == pytest.approx(exact, rel=1e-9)
    # ... and through the discretised PLD alone (FFT power of one Gaussian's PLD)
    pld = PrivacyLossDistribution.from_loss(Gaussian(50.0), count=1000)
    eps = pld.get_epsilon_for_delta(1e-6)
    assert exact <= eps <= exact * (1 + 1e-4)


@pytest.mark.parametrize("loss", ALL_LOSSES, ids=lambda x: repr(x)[:40])
@pytest.mark.parametrize("kind", KINDS)
def test_count_equals_repeated_composition(kind, loss):
    if kind not in supported_by(loss):
        with pytest.raises(ValueError, match="supported by"):
            Accountant(kind).compose(loss)
        return
    n = 5
    once = Accountant(kind).compose(loss, n)
    rep = Accountant(kind)
    for _ in range(n):
        rep.compose(loss)
    for delta in (1e-3, 1e-6):
        a, b = once.get_epsilon(delta), rep.get_epsilon(delta)
        assert a == pytest.approx(b, rel=1e-6, abs=1e-9), (kind, delta)
    # and n uses cost more than one (unless nothing is spent)
    assert once.get_epsilon(1e-6) >= Accountant(kind).compose(loss).get_epsilon(1e-6)


@pytest.mark.parametrize("loss", [x for x in ALL_LOSSES if x.has_profile()], ids=lambda x: repr(x)[:40])
def test_pld_is_pessimistic_and_close_for_one_use(loss):
    """Connect-the-dots on a loss grid of width h is never optimistic, and no more pessimistic
    than the exact profile one grid step earlier: δ(ε) <= δ_PLD(ε) <= δ(ε - h), on and off the
    grid (up to float rounding)."""
    h = 1e-4
    pld = PrivacyLossDistribution.from_loss(loss, h)
    for eps in (0.0, 0.00003, 0.05, 0.123456, 0.3, 0.5, 1.0, 1.00007, 2.0, 3.0):
        exact = float(loss.delta_for_epsilon(eps))
        got = pld.get_delta_for_epsilon(eps)
        assert got >= exact - 1e-15  # never optimistic
        assert got <= float(loss.delta_for_epsilon(eps - h)) * (1 + 1e-15) + 1e-15


def test_kov_optimal_composition_matches_formula():
    # KOV 2015 Thm 3.3 at its breakpoints ε = (k - 2i) ε0, written out with exact binomials
    eps0, delta0, k = 0.3, 1e-6, 20
    acc = Accountant("advanced").compose(ApproxDP(eps0, delta0), k)
    e = math.exp(eps0)
    for i in range(0, k // 2):
        eps = (k - 2 * i) * eps0
        dprime = sum(math.comb(k, l) * (e ** (k - l) - e ** (k - 2 * i + l)) for l in range(i)) / (1 + e) ** k
        formula = 1 - (1 - delta0) ** k * (1 - dprime)
        assert acc.get_delta(eps) == pytest.approx(formula, rel=1e-9, abs=1e-15)
    # and the PLD accountant (exact for pure-DP worst cases) agrees with it
    pld = Accountant("pld").compose(PureDP(eps0), k)
    for i in range(1, k // 2):
        eps = (k - 2 * i) * eps0
        assert pld.get_delta(eps) == pytest.approx(Accountant("advanced").compose(PureDP(eps0), k).get_delta(eps), rel=2e-3)


def test_advanced_beats_drv_and_basic():
    k, eps0, dprime = 100, 0.1, 1e-6
    drv_eps, drv_delta = conv.advanced_composition_drv(eps0, 0.0, k, dprime)
    acc = Accountant("advanced").compose(PureDP(eps0), k)
    assert acc.get_epsilon(drv_delta) <= drv_eps
    assert acc.get_epsilon(drv_delta) < k * eps0
    het = Accountant("advanced").compose(PureDP(0.1), 50).compose(PureDP(0.2), 50)
    assert het.get_epsilon(1e-6) < 50 * 0.3
    # heterogeneous bound equals KOV Thm 3.5 evaluated by hand
    a = 50 * (math.tanh(0.05) * 0.1 + math.tanh(0.1) * 0.2)
    s = 50 * (0.01 + 0.04)
    b2 = a + math.sqrt(2 * s * math.log(1e6))
    b1 = a + math.sqrt(2 * s * math.log(math.e + math.sqrt(s) / 1e-6))
    assert het.get_epsilon(1e-6) == pytest.approx(min(15.0, b1, b2), rel=1e-12)


def test_basic_composition_sums():
    acc = Accountant("basic").compose(PureDP(0.25)).compose(ApproxDP(0.5, 1e-6), 2).compose(Laplace(4.0))
    assert acc.get_epsilon(2e-6) == pytest.approx(1.5)
    assert acc.get_epsilon(1e-6) == math.inf
    assert acc.get_delta(1.5) == pytest.approx(2e-6)
    assert acc.get_delta(1.4) == 1.0


def test_zcdp_conversions_match_formulas():
    rho, delta = 0.5, 1e-6
    acc = Accountant("zcdp").compose(ZCDP(0.1), 3).compose(Gaussian(2.0))  # ρ = 0.3 + 1/8
    rho = 0.3 + 0.125
    bs = rho + 2 * math.sqrt(rho * math.log(1 / delta))  # Bun–Steinke Prop 1.3
    alphas = 1 + np.geomspace(1e-4, 1e4, 400001)
    cks = np.min(alphas * rho + np.log1p(-1 / alphas) - (math.log(delta) + np.log(alphas)) / (alphas - 1))
    got = acc.get_epsilon(delta)
    assert got <= bs
    assert got == pytest.approx(float(cks), rel=1e-7)
    # the δ direction inverts it
    assert acc.get_delta(got) == pytest.approx(delta, rel=1e-4)


def test_rdp_conversion_matches_formula_and_curves():
    acc = Accountant("rdp").compose(Gaussian(5.0), 10)
    alphas = 1 + np.geomspace(1e-4, 1e4, 400001)
    rdp = alphas * 10 / 50.0
    best = np.min(rdp + np.log1p(-1 / alphas) - (math.log(1e-5) + np.log(alphas)) / (alphas - 1))
    assert acc.get_epsilon(1e-5) == pytest.approx(float(best), rel=1e-7)
    # Laplace RDP at α → ∞ tends to the pure ε, and is below it
    assert Laplace(2.0).rdp(1e4) == pytest.approx(0.5, rel=1e-3)
    assert Laplace(2.0).rdp(2.0) < 0.5


@pytest.mark.parametrize("alpha", [2, 3, 8, 32])
@pytest.mark.parametrize("q,sigma", [(0.01, 1.0), (0.1, 2.0), (0.5, 0.8)])
def test_subsampled_gaussian_rdp_matches_integer_order_closed_form(alpha, q, sigma):
    # Mironov, Talwar & Zhang 2019, §3.3: A_α = Σ_k C(α,k) (1-q)^{α-k} q^k exp((k²-k)/(2σ²))
    logs = [math.log(math.comb(alpha, k)) + (alpha - k) * math.log1p(-q) + k * math.log(q)
            + (k * k - k) / (2 * sigma**2) for k in range(alpha + 1)]
    top = max(logs)
    closed = (top + math.log(sum(math.exp(v - top) for v in logs))) / (alpha - 1)
    assert PoissonSampled(Gaussian(sigma), q).rdp(alpha) == pytest.approx(closed, rel=1e-6)


def test_single_use_profiles():
    assert Gaussian(1.0).delta_for_epsilon(1.0) == pytest.approx(balle_wang_delta(1.0, 1.0), rel=1e-12)
    assert Gaussian(3.730631).epsilon_for_delta(1e-5) == pytest.approx(1.0, rel=1e-5)
    # Laplace: δ(ε) = 1 - e^{(ε - a)/2} on [-a, a], checked by numerical integration
    b, eps = 1.5, 0.2
    x = np.linspace(-60, 60, 2_000_001)
    p = np.exp(-np.abs(x - 1) / b) / (2 * b)
    qd = np.exp(-np.abs(x) / b) / (2 * b)
    numeric = np.sum(np.clip(p - math.exp(eps) * qd, 0, None)) * (x[1] - x[0])
    assert Laplace(b).delta_for_epsilon(eps) == pytest.approx(numeric, rel=1e-5)
    # pure mechanisms: δ(ε) = 0 at their ε, > 0 just below
    for loss, e in [(DiscreteLaplace(2.0, 3), 1.5), (RandomizedResponse(1.0, 3), 1.0), (PureDP(0.7), 0.7)]:
        assert loss.delta_for_epsilon(e) == 0.0
        assert loss.delta_for_epsilon(0.99 * e) > 0.0
    # discrete Gaussian: the profile of CKS Thm 7 by direct summation
    s, d = 2.0, 1
    xs = np.arange(-60, 61)
    w = np.exp(-xs**2 / (2 * s * s))
    pmf = w / w.sum()
    eps = 0.3
    direct = sum(max(0.0, pmf[i] - math.exp(eps) * (pmf[i - d] if i - d >= 0 else 0)) for i in range(len(xs)))
    assert DiscreteGaussian(s, d).delta_for_epsilon(eps) == pytest.approx(direct, rel=1e-9)


@pytest.mark.parametrize("sigma,sens,coords", [(2.0, 1, 2), (1.3, 2, 2), (3.0, 1, 3)])
def test_discrete_gaussian_on_several_coordinates(sigma, sens, coords):
    """A shift of `coords` independent discrete Gaussians by `sens` each: δ(ε) by brute-force
    summation over all output tuples, ρ = cΔ²/2σ², and never looser than one output shifted by
    the L1 total (sensitivity cΔ), which is what the replace-one histogram used before."""
    xs = np.arange(-40, 41)
    w = np.exp(-xs**2 / (2 * sigma * sigma))
    pmf = w / w.sum()
    shifted = np.exp(-(xs - sens) ** 2 / (2 * sigma * sigma)) / w.sum()
    p, q = pmf, shifted
    for _ in range(coords - 1):  # joint pmfs of the tuples, flattened
        p, q = np.outer(p, pmf).ravel(), np.outer(q, shifted).ravel()
    loss = DiscreteGaussian(sigma, sens, coords)
    for eps in (0.0, 0.4, 1.5):
        direct = np.sum(np.clip(q - math.exp(eps) * p, 0, None))
        assert loss.delta_for_epsilon(eps) == pytest.approx(direct, rel=1e-9, abs=1e-300)
        assert loss.delta_for_epsilon(eps) <= DiscreteGaussian(sigma, sens * coords).delta_for_epsilon(eps)
    assert loss.zcdp_rho() == pytest.approx(coords * sens**2 / (2 * sigma**2))
    assert loss_from_dict(loss.to_dict()) == loss
    assert group_privacy(loss, 3) == DiscreteGaussian(sigma, 3 * sens, coords)
    with pytest.raises(TypeError, match="coordinates"):
        DiscreteGaussian(sigma, sens, 2.0)


def test_poisson_profile_is_amplified_and_matches_formula():
    base, q = Laplace(1.0), 0.1
    loss = PoissonSampled(base, q)
    for eps in (0.01, 0.05, 0.1):
        # remove direction: q δ(log(1 + (e^ε - 1)/q)) (Balle, Barthe & Gaboardi 2018)
        rem = q * base.delta_for_epsilon(math.log1p(math.expm1(eps) / q))
        assert loss.delta_for_epsilon(eps) >= rem - 1e-15
    assert loss.pure_epsilon() == pytest.approx(math.log1p(q * math.expm1(1.0)))
    assert loss.delta_for_epsilon(loss.pure_epsilon()) == pytest.approx(0.0, abs=1e-12)


def test_group_privacy_and_parallel():
    assert group_privacy(PureDP(0.5), 3) == PureDP(1.5)
    g = group_privacy(ApproxDP(0.5, 1e-6), 3)
    assert (g.epsilon, g.delta) == pytest.approx((1.5, 3 * math.exp(1.0) * 1e-6))
    assert group_privacy(ZCDP(0.1), 3).rho == pytest.approx(0.9)
    assert group_privacy(Gaussian(2.0), 2) == Gaussian(2.0, 2.0)
    assert group_privacy(DiscreteLaplace(2.0, 1), 4) == DiscreteLaplace(2.0, 4)
    par = parallel_composition([Laplace(1.0), Laplace(4.0), PureDP(0.2)])
    assert par.pure_epsilon() == 1.0
    assert Accountant("pld").compose(par).get_epsilon(1e-6) == pytest.approx(
        Accountant("pld").compose(Laplace(1.0)).get_epsilon(1e-6), rel=1e-3)


def test_bad_input():
    with pytest.raises(ValueError, match="epsilon"):
        PureDP(-0.1)
    with pytest.raises(ValueError, match="NaN"):
        PureDP(float("nan"))
    with pytest.raises(ValueError, match="delta"):
        ApproxDP(1.0, 1.5)
    with pytest.raises(ValueError, match="sigma"):
        Gaussian(0.0)
    with pytest.raises(ValueError, match="sigma"):
        Gaussian(float("inf"))
    with pytest.raises(TypeError, match="scale"):
        Laplace("1")
    with pytest.raises(ValueError, match="integer"):
        DiscreteLaplace(1.0, 1.5)
    with pytest.raises(ValueError, match="rate"):
        PoissonSampled(Gaussian(1.0), 0.0)
    with pytest.raises(ValueError, match="categories"):
        RandomizedResponse(1.0, 1)
    with pytest.raises(ValueError, match="kind"):
        Accountant("moments")
    with pytest.raises(ValueError, match="neighbours"):
        Accountant("pld", "swap")
    acc = Accountant("rdp").compose(Gaussian(1.0))
    with pytest.raises(ValueError, match="count"):
        acc.compose(Gaussian(1.0), 0)
    with pytest.raises(TypeError, match="count"):
        acc.compose(Gaussian(1.0), 2.0)
    with pytest.raises(ValueError, match="delta"):
        acc.get_epsilon(-1e-9)
    with pytest.raises(ValueError, match="delta"):
        acc.get_epsilon(float("nan"))
    with pytest.raises(ValueError, match="epsilon"):
        acc.get_delta(-1.0)
    with pytest.raises(ValueError, match=r"'zcdp', 'rdp', 'pld'"):
        Accountant("basic").compose(Gaussian(1.0))
    with pytest.raises(ValueError, match="'rdp', 'pld'"):
        Accountant("zcdp").compose(PoissonSampled(Gaussian(1.0), 0.1))
    with pytest.raises(ValueError, match="add/remove"):
        Accountant("pld", "replace").compose(PoissonSampled(Gaussian(1.0), 0.1))
    with pytest.raises(TypeError, match="descriptor"):
        Accountant("pld").compose(1.0)


def test_gaussian_needs_delta():
    assert Accountant("pld").compose(Gaussian(1.0)).get_epsilon(0.0) == math.inf
    assert Accountant("zcdp").compose(Gaussian(1.0)).get_epsilon(0.0) == math.inf


def test_descriptors_round_trip_through_dicts():
    from dpnoise.accounting import loss_from_dict
    for loss in ALL_LOSSES:
        assert loss_from_dict(loss.to_dict()) == loss
