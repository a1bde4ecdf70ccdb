"""DiscreteGaussianVector: a proven (ε, δ) profile for a vector of discrete Gaussians, and
least_sigma, the bounded-time σ calibration built on profiles."""
import itertools
import math

import numpy as np
import pytest

from dpnoise.accounting import (
    Accountant, DiscreteGaussian, DiscreteGaussianVector, Gaussian, Laplace, PrivacyBudget,
    PureDP, group_privacy, least_sigma, loss_from_dict, supported_by,
)
from dpnoise.accounting import conversions as conv
from dpnoise.accounting.pld import PrivacyLossDistribution

EPS_GRID = np.linspace(-0.5, 4.0, 19)


def exact_profile(sigma, shift, eps):
    """δ(ε) of (N_Z(shift, σ²I), N_Z(0, σ²I)) on Z^d by brute-force summation over a box."""
    d = len(shift)
    k = int(math.ceil(12 * sigma)) + max(abs(m) for m in shift) + 1  # mass outside < 1e-30
    axis = np.arange(-k, k + 1, dtype=float)
    grids = np.meshgrid(*([axis] * d), indexing="ij")
    log_q = sum(-(g**2) / (2 * sigma**2) for g in grids)
    log_p = sum(-((g - m) ** 2) / (2 * sigma**2) for g, m in zip(grids, shift))
    z = np.exp(log_q).sum()
    p, q = np.exp(log_p) / z, np.exp(log_q) / z
    return np.array([np.maximum(p - math.exp(e) * q, 0.0).sum() for e in eps])


def integer_shifts(l2, d):
    r = int(math.floor(l2))
    for mu in itertools.product(range(-r, r + 1), repeat=d):
        if any(mu) and sum(m * m for m in mu) <= l2 * l2:
            yield mu


@pytest.mark.parametrize("sigma", [0.4, 0.7, 1.0, 1.6, 3.0])
@pytest.mark.parametrize("l2", [1.0, 1.5, 2.3])
@pytest.mark.parametrize("d", [1, 2])
def test_profile_is_never_below_the_exact_profile(sigma, l2, d):
    bound = DiscreteGaussianVector(sigma, l2, d).delta_for_epsilon(EPS_GRID)
    for mu in integer_shifts(l2, d):
        exact = exact_profile(sigma, mu, EPS_GRID)
        assert np.all(bound >= exact * (1 - 1e-9) - 1e-15), (mu, bound - exact)


def test_profile_is_close_to_the_worst_exact_profile_in_two_dimensions():
    # σ = 3, Δ = 2.3 in Z²: shifts (1,0),(1,1),(2,0),(2,1); the bound should be near the worst
    loss = DiscreteGaussianVector(3.0, 2.3, 2)
    eps = np.array([0.1, 0.3, 0.6])
    worst = np.max([exact_profile(3.0, mu, eps) for mu in integer_shifts(2.3, 2)], axis=0)
    bound = loss.delta_for_epsilon(eps)
    assert np.all(bound <= 1.6 * worst)  # the sup over real shifts of norm 2.3 is a bit larger


def test_sub_unit_sensitivity_means_no_integer_neighbour():
    loss = DiscreteGaussianVector(1.0, 0.9, 3)
    assert loss.delta_for_epsilon(0.0) == 0.0
    assert loss.delta_for_epsilon(-1.0) == pytest.approx(-math.expm1(-1.0))


# Typical vector release: Δ = 40 grid units + √d rounding, d = 100, ε = 1, δ = 1e-6.
TYPICAL = dict(l2=40.0 + math.sqrt(100), d=100, epsilon=1.0, delta=1e-6)


def test_profile_is_tighter_than_the_zcdp_route_at_typical_parameters():
    l2, d = TYPICAL["l2"], TYPICAL["d"]
    for sigma in (120.0, 211.0, 400.0):
        loss = DiscreteGaussianVector(sigma, l2, d)
        for eps in (0.25, 0.5, 1.0, 2.0):
            zcdp = conv.zcdp_to_delta(loss.zcdp_rho(), eps)
            assert loss.delta_for_epsilon(eps) <= zcdp
    # at σ = 211 (the calibrated value), δ(1) ≈ 1.0e-6 by the profile and ≈ 4.5e-6 by zCDP
    loss = DiscreteGaussianVector(211.0, l2, d)
    assert loss.delta_for_epsilon(1.0) < 1.1e-6 < 4e-6 < conv.zcdp_to_delta(loss.zcdp_rho(), 1.0)


def test_calibrated_sigma_is_smaller_than_the_zcdp_one():
    l2, d, eps, delta = TYPICAL["l2"], TYPICAL["d"], TYPICAL["epsilon"], TYPICAL["delta"]
    vec = least_sigma(lambda s: DiscreteGaussianVector(s, l2, d), eps, delta, start=l2)
    analytic = least_sigma(lambda s: Gaussian(s, l2), eps, delta, start=l2)
    zcdp = l2 / math.sqrt(2 * _least_rho(eps, delta))
    # measured: vec 211.237, analytic 211.234, zCDP 226.544 — 6.8% less noise than zCDP, and
    # within 2e-5 of the continuous analytic Gaussian
    assert vec <= 0.94 * zcdp
    assert analytic <= vec <= analytic * (1 + 1e-4)
    assert DiscreteGaussianVector(vec, l2, d).delta_for_epsilon(eps) <= delta


def _least_rho(eps, delta):
    lo, hi = 0.0, 10.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if conv.zcdp_to_epsilon(mid, delta) <= eps else (lo, mid)
    return lo


def test_supported_by_every_accountant_that_takes_discrete_gaussian():
    loss = DiscreteGaussianVector(211.0, 50.0, 100)
    assert set(supported_by(DiscreteGaussian(4.0, 1))) <= set(supported_by(loss))
    assert {"zcdp", "rdp", "pld"} <= set(supported_by(loss))
    # pld: the composed bound is above the profile (pessimistic) and well below zCDP's
    eps_pld = Accountant("pld").compose(loss).get_epsilon(1e-6)
    eps_profile = loss.epsilon_for_delta(1e-6)
    eps_zcdp = Accountant("zcdp").compose(loss).get_epsilon(1e-6)
    assert eps_profile <= eps_pld <= eps_profile + 1e-4 < eps_zcdp
    assert Accountant("rdp").compose(loss).get_epsilon(1e-6) <= eps_zcdp * (1 + 1e-9)
    budget = PrivacyBudget(1.01, 1e-6, accountant="pld")
    budget.spend(loss)
    assert budget.spent_epsilon == pytest.approx(eps_pld)
    again = PrivacyBudget.from_dict(budget.to_dict())
    assert again.spent_epsilon == pytest.approx(eps_pld)


def test_pld_from_the_profile_dominates_it():
    loss = DiscreteGaussianVector(3.0, 2.5, 6)
    pld = PrivacyLossDistribution.from_loss(loss, 1e-3)
    for eps in (0.0, 0.3, 0.9, 1.7, 3.0):
        assert pld.get_delta_for_epsilon(eps) >= loss.delta_for_epsilon(eps) * (1 - 1e-12)


def test_round_trip_and_group_privacy():
    loss = DiscreteGaussianVector(7.5, 3.25, 12)
    assert loss_from_dict(loss.to_dict()) == loss
    assert group_privacy(loss, 3) == DiscreteGaussianVector(7.5, 9.75, 12)
    assert group_privacy(loss, 3).zcdp_rho() == pytest.approx(9 * loss.zcdp_rho())


@pytest.mark.parametrize("args, exc, name", [
    ((0.0, 1.0, 2), ValueError, "sigma"),
    ((float("nan"), 1.0, 2), ValueError, "sigma"),
    ((1.0, -1.0, 2), ValueError, "l2_sensitivity"),
    ((1.0, float("inf"), 2), ValueError, "l2_sensitivity"),
    ((1.0, 1.0, 0), ValueError, "dimension"),
    ((1.0, 1.0, 2.5), TypeError, "dimension"),
    ((1.0, "1", 2), TypeError, "l2_sensitivity"),
    ((1e-200, 1.0, 2), OverflowError, "l2_sensitivity"),
])
def test_bad_arguments_name_themselves(args, exc, name):
    with pytest.raises(exc, match=name):
        DiscreteGaussianVector(*args)


# ------------------------------------------------------------------ least_sigma
def test_least_sigma_is_least_within_tolerance_and_bounded_in_evaluations():
    calls = []

    def make(s):
        calls.append(s)
        return Gaussian(s, 3.0)

    sigma = least_sigma(make, 0.5, 1e-8, start=1e-3)
    assert Gaussian(sigma, 3.0).delta_for_epsilon(0.5) <= 1e-8
    assert Gaussian(sigma * (1 - 2e-9), 3.0).delta_for_epsilon(0.5) > 1e-8
    assert len(calls) <= 60
    calls.clear()
    assert least_sigma(make, 0.5, 1e-8, start=1e6) == pytest.approx(sigma, rel=2e-9)
    assert len(calls) <= 60


def test_least_sigma_with_pure_target_uses_the_pure_epsilon():
    scale = least_sigma(lambda b: Laplace(b, 2.0), 0.5, 0.0, start=1.0)
    assert scale == pytest.approx(4.0, rel=2e-9) and scale >= 4.0
    with pytest.raises(ValueError, match="no sigma"):
        least_sigma(lambda s: Gaussian(s), 1.0, 0.0, start=1.0)


def test_least_sigma_bad_arguments():
    with pytest.raises(TypeError, match="make_loss"):
        least_sigma(3.0, 1.0, 1e-5, start=1.0)
    with pytest.raises(TypeError, match="make_loss"):
        least_sigma(lambda s: s, 1.0, 1e-5, start=1.0)
    with pytest.raises(ValueError, match="epsilon"):
        least_sigma(Gaussian, -1.0, 1e-5, start=1.0)
    with pytest.raises(ValueError, match="delta"):
        least_sigma(Gaussian, 1.0, 2.0, start=1.0)
    with pytest.raises(ValueError, match="start"):
        least_sigma(Gaussian, 1.0, 1e-5, start=0.0)
    with pytest.raises(ValueError, match="rtol"):
        least_sigma(Gaussian, 1.0, 1e-5, start=1.0, rtol=1.0)
    assert least_sigma(lambda s: PureDP(0.1), 1.0, 0.0, start=1.0) <= 1e-299  # always met
