"""``constant_time=True`` on the mechanisms and on the GRR randomizer (issue 25; docs/security.md,
"Constant-time sampling").

Output laws: chi-square against the exact law of the ideal mechanism (the constant-time law is
within total variation 2^-64 per draw of it, invisible at 400 000 samples), fixed seeds,
false-alarm rate ALPHA = 1e-6 per test (statistical.test_distributions: a seeded run always
passes or always fails). Also: the privacy statement (ApproxDP with the (1 + e^ε)·d·2^-64
term), refusals of out-of-range parameters before any charge, and outputs that are NumPy
scalars (no Python-int conversion of the noise).
"""
import math

import numpy as np
import pytest

import dpnoise
from dpnoise.accounting import PrivacyBudget
from dpnoise import _core
from dpnoise.accounting import Accountant
from dpnoise.accounting.losses import (
    ApproxDP, DiscreteGaussian, PoissonSampled, PureDP, WithinTotalVariation, loss_from_dict,
)
from dpnoise.ldp import FrequencyOracle

from spy_budget import SpyBudget
from statistical.test_distributions import ALPHA, gaussian_cdf, laplace_cdf, run_gof

stats = pytest.importorskip("scipy.stats")

N = 400_000
TV = 2.0**-64


def seeded(seed):
    return dict(rng=dpnoise.default_rng(seed), allow_insecure=True, constant_time=True)


# --------------------------------------------------------------------------- output laws
# (mechanism, input dtype); the exact law of the noise in grid units comes from the plan
ADDITIVE = {
    "discrete_laplace": (lambda s: dpnoise.DiscreteLaplaceMechanism(0.1, **s), np.int64),
    "discrete_gaussian": (lambda s: dpnoise.DiscreteGaussianMechanism(1.0, 1e-5, sensitivity=3, **s), np.int64),
    "laplace_grid": (lambda s: dpnoise.LaplaceMechanism(1.0, sensitivity=0.7, **s), np.float64),
    "laplace_integers": (lambda s: dpnoise.LaplaceMechanism(0.5, sensitivity=2, **s), np.int64),
    "gaussian_grid": (lambda s: dpnoise.GaussianMechanism(1.0, 1e-5, sensitivity=0.3, **s), np.float64),
    "gaussian_float32": (lambda s: dpnoise.GaussianMechanism(2.0, 1e-6, **s), np.float32),
}


@pytest.mark.parametrize("name", sorted(ADDITIVE))
def test_additive_noise_fits_the_exact_law(name):
    make, dtype = ADDITIVE[name]
    mech = make(seeded(2525))
    x = np.full(N, 3, dtype=dtype)  # 3 is on every grid used here
    plan = mech.plan(x.shape, dtype)
    assert plan.constant_time
    y = mech(x)
    assert y.dtype == (np.int64 if plan.k is None else dtype)
    noise = (y.astype(np.float64) - 3) / 2.0**(plan.k or 0)  # exact: multiples of 2^k
    assert np.array_equal(noise, np.rint(noise))
    cdf = laplace_cdf if plan.law == "laplace" else gaussian_cdf
    # bins on [-6, 6] parameters (the two outer bins are open): the tables stay small at the
    # grid mechanisms' parameters of up to 2^20 grid units
    run_gof(noise.astype(np.int64), cdf(plan.param), int(6 * float(plan.param)) + 10)


def test_float32_release_is_the_float64_release_rounded():
    x64 = np.linspace(-50, 50, 10_001)
    a = dpnoise.GaussianMechanism(1.0, 1e-5, **seeded(7))(x64.astype(np.float32))
    b = dpnoise.GaussianMechanism(1.0, 1e-5, **seeded(7))(x64.astype(np.float32).astype(np.float64))
    assert a.dtype == np.float32
    np.testing.assert_array_equal(a, b.astype(np.float32))


def test_integer_release_is_clamp_plus_the_generators_constant_time_noise():
    values = np.array([0, 5, -7, 2**62, -(2**63), 123456789] * 100, dtype=np.int64)
    out = dpnoise.DiscreteLaplaceMechanism(0.25, **seeded(11))(values)
    noise = dpnoise.default_rng(11).discrete_laplace(4, size=values.size, constant_time=True)
    np.testing.assert_array_equal(out, np.clip(values, -(2**61), 2**61) + noise)


def test_uint64_above_2_63_saturates_instead_of_wrapping():
    values = np.array([2**64 - 1, 2**63, 5], dtype=np.uint64)
    out = dpnoise.DiscreteLaplaceMechanism(0.25, **seeded(12))(values)
    noise = dpnoise.default_rng(12).discrete_laplace(4, size=3, constant_time=True)
    np.testing.assert_array_equal(out, np.array([2**61, 2**61, 5]) + noise)


def rr_expected(k, epsilon, x):
    p = 1 / (1 + (k - 1) * math.exp(-epsilon))
    probs = np.full(k, (1 - p) / (k - 1))
    probs[x] = p
    return probs


def chi_square_categories(out, probs):
    counts = np.bincount(out, minlength=len(probs))
    assert counts.size == len(probs)
    expected = probs * out.size
    stat = float(((counts - expected) ** 2 / expected).sum())
    crit = float(stats.chi2.isf(ALPHA, len(probs) - 1))
    assert stat < crit, f"chi-square {stat:.1f} >= {crit:.1f} (alpha={ALPHA})"


@pytest.mark.parametrize("k,epsilon,x", [(2, 1.0, 1), (5, 1.0, 2), (1000, 5.0, 999)])
def test_randomized_response_fits_the_exact_law(k, epsilon, x):
    rr = dpnoise.RandomizedResponse(epsilon, k, **seeded(2526))
    out = rr(np.full(N, x))
    chi_square_categories(out, rr_expected(k, float(rr.epsilon), x))


def test_randomized_response_clamps_by_masks():
    """Out-of-domain records are the nearest end category (the kernel's masks, no Python
    check): the same outputs as the clamped input, from the same seed."""
    values = np.array([-3, 99, -(2**63), 2**63 - 1, 0, 4] * 1000)
    a = dpnoise.RandomizedResponse(1.0, 5, **seeded(13))(values)
    b = dpnoise.RandomizedResponse(1.0, 5, **seeded(13))(np.clip(values, 0, 4))
    np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="outside"):
        dpnoise.RandomizedResponse(1.0, 5, out_of_domain="raise", **seeded(13))(values)


@pytest.mark.parametrize("position", [0, 500, 999])
@pytest.mark.parametrize("bad", [-1, 5, -(2**63), 2**63 - 1])
def test_randomized_response_raise_scans_every_value_and_charges_nothing(bad, position):
    """out_of_domain="raise" in constant time: one vectorised count over the whole batch, then
    one exception (wherever the bad value is); nothing is charged, no noise drawn."""
    budget = SpyBudget(10.0, 1e-6)
    mech = dpnoise.RandomizedResponse(1.0, 5, out_of_domain="raise", budget=budget, **seeded(14))
    values = np.arange(1000) % 5
    values[position] = bad
    with pytest.raises(ValueError, match="outside"):
        mech(values)
    assert budget.calls == []
    ok = mech(np.arange(1000) % 5)  # in domain: released, charged once
    assert ok.shape == (1000,) and len(budget.calls) == 1


def test_randomized_response_table_is_built_at_construction_not_after_the_charge(monkeypatch):
    """The constant-time table is certified by the constructor and held by the plan: a release
    builds nothing (any table build after construction would fail here), and a failing build
    fails the constructor with nothing charged."""
    built = []
    real = _core.ConstantTimeRandomizedResponseTable

    def table(*args):
        built.append(args)
        return real(*args)

    monkeypatch.setattr(_core, "ConstantTimeRandomizedResponseTable", table)
    budget = SpyBudget(10.0, 1e-6)
    mech = dpnoise.RandomizedResponse(1.0, 5, budget=budget, **seeded(15))
    assert len(built) == 1 and budget.calls == []

    def broken(*args, **kw):
        raise RuntimeError("a table built during the release")

    monkeypatch.setattr(_core, "ConstantTimeRandomizedResponseTable", broken)
    monkeypatch.setattr(_core, "randomized_response_constant_time", broken)  # builds its table itself
    assert mech(np.arange(20) % 5).shape == (20,) and len(budget.calls) == 1
    with pytest.raises(RuntimeError, match="table"):
        dpnoise.RandomizedResponse(2.0, 7, budget=budget, **seeded(15))
    assert len(budget.calls) == 1


def test_grr_constant_time_fits_the_exact_law_and_is_a_configuration_parameter():
    fo = FrequencyOracle("grr", epsilon=2.0, domain_size=8, constant_time=True)
    reports = fo.client(dpnoise.default_rng(2527), allow_insecure=True).privatize(np.full(N, 3))
    chi_square_categories(reports.data["values"], rr_expected(8, float(fo.gamma), 3))
    plain = FrequencyOracle("grr", epsilon=2.0, domain_size=8)
    assert fo != plain and "constant_time" not in plain.params()  # older blobs keep matching
    assert type(fo).from_json(fo.to_json()) == fo
    loss = fo.privacy_loss()
    assert isinstance(loss, ApproxDP) and loss.delta == pytest.approx((1 + math.exp(2.0)) * TV, rel=1e-9)
    with pytest.raises(TypeError, match="constant_time"):
        FrequencyOracle("grr", epsilon=2.0, domain_size=8, constant_time="yes")


# --------------------------------------------------------------------------- privacy statement
def test_losses_carry_the_failure_term():
    lap = dpnoise.DiscreteLaplaceMechanism(0.5, **seeded(1))
    loss = lap.privacy_loss((10,))
    assert isinstance(loss, ApproxDP) and loss.epsilon == pytest.approx(0.5)
    assert loss.delta >= (1 + math.exp(0.5)) * 10 * TV
    assert loss.delta == pytest.approx((1 + math.exp(0.5)) * 10 * TV, rel=1e-9)
    g = dpnoise.GaussianMechanism(1.0, 1e-5, **seeded(1))
    gl = g.privacy_loss((3,))
    assert gl.epsilon == 1.0 and 0 < gl.delta - (1 + math.e) * 3 * TV <= 1e-5
    rr = dpnoise.RandomizedResponse(1.0, 4, **seeded(1))
    assert rr.privacy_loss((1000,)).delta == pytest.approx((1 + math.e) * TV, rel=1e-9)  # per record
    assert dpnoise.LaplaceMechanism(1.0, **seeded(1)).privacy_loss((0,)).pure_epsilon() == 0


def test_budget_is_charged_the_approx_loss():
    budget = PrivacyBudget(2.0, 1e-9)
    mech = dpnoise.DiscreteLaplaceMechanism(1.0, budget=budget, **seeded(3))
    mech(np.arange(4))
    assert budget.spent_delta >= (1 + math.e) * 4 * TV


@pytest.mark.parametrize("make", [
    lambda s: dpnoise.DiscreteLaplaceMechanism(1.0, **s),
    lambda s: dpnoise.DiscreteGaussianMechanism(1.0, 1e-5, **s),
    lambda s: dpnoise.LaplaceMechanism(1.0, **s),
    lambda s: dpnoise.GaussianMechanism(1.0, 1e-5, **s),
    lambda s: dpnoise.RandomizedResponse(1.0, 3, **s),
], ids=["dlap", "dgauss", "lap", "gauss", "rr"])
def test_scalar_release_is_a_numpy_scalar(make):
    y = make(seeded(4))(2)
    assert isinstance(y, np.generic) and np.ndim(y) == 0  # no int()/float() of the value


# --------------------------------------------------------------------------- refusals
REFUSED = {  # constructor calls that must fail, with a pattern of the message
    "dlap_scale": (lambda s: dpnoise.DiscreteLaplaceMechanism(1e-7, **s), r"2\^20"),
    "dlap_delta_term": (lambda s: dpnoise.DiscreteLaplaceMechanism(50.0, **s), "no \\(epsilon, delta\\)"),
    "dgauss_sigma": (lambda s: dpnoise.DiscreteGaussianMechanism(1e-3, 1e-10, sensitivity=1000, **s), r"2\^20"),
    "dgauss_rho_sigma": (lambda s: dpnoise.DiscreteGaussianMechanism(rho=1e-14, **s), r"2\^20"),
    "lap_epsilon": (lambda s: dpnoise.LaplaceMechanism(1e-7, **s), r"2\^20"),
    "lap_granularity": (lambda s: dpnoise.LaplaceMechanism(1.0, granularity=2.0**-30, **s), r"2\^20"),
    "lap_exponent": (lambda s: dpnoise.LaplaceMechanism(1.0, sensitivity=2.0**-1000, granularity=2.0**-1010, **s),
                     r"\[-1000, 960\]"),
    "lap_integer_path": (lambda s: dpnoise.LaplaceMechanism(1.0, sensitivity=2**30, **s), r"2\^20"),
    "gauss_granularity": (lambda s: dpnoise.GaussianMechanism(1.0, 1e-5, granularity=2.0**-40, **s), r"2\^20"),
    "gauss_multiplier": (lambda s: dpnoise.GaussianMechanism(noise_multiplier=1.1, granularity=2.0**-20, **s),
                         r"2\^20"),
    "gauss_rho_granularity": (lambda s: dpnoise.GaussianMechanism(rho=0.1, granularity=2.0**-30, **s), r"2\^20"),
    "rr_delta_term": (lambda s: dpnoise.RandomizedResponse(60.0, 3, **s), "no \\(epsilon, delta\\)"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_out_of_range_parameters_are_refused_before_any_charge(case):
    make, pattern = REFUSED[case]
    budget = PrivacyBudget(100.0, 0.5, accountant="basic")
    rng = dpnoise.default_rng(5)
    with pytest.raises(ValueError, match=pattern):
        make(dict(rng=rng, allow_insecure=True, budget=budget, constant_time=True))
    assert budget.ledger == [] and budget.spent_epsilon == 0
    assert rng.integers(0, 2**62) == dpnoise.default_rng(5).integers(0, 2**62)  # the stream is untouched


def test_a_release_out_of_range_for_its_shape_is_refused_before_the_charge():
    budget = PrivacyBudget(10.0, 1e-6, accountant="basic")
    mech = dpnoise.LaplaceMechanism(1.0, budget=budget, **seeded(6))  # the scalar plan fits
    with pytest.raises(ValueError, match=r"2\^20"):
        mech(np.zeros(2**21))  # L1 over 2^21 coordinates: scale >= d/epsilon = 2^21 grid units
    assert budget.ledger == []


@pytest.mark.parametrize("bad", ["yes", 1, None])
def test_constant_time_must_be_a_bool(bad):
    with pytest.raises(TypeError, match="constant_time"):
        dpnoise.LaplaceMechanism(1.0, constant_time=bad)


def test_zcdp_accountant_refuses_epsilon_delta_constant_time_releases_and_says_what_to_pass():
    budget = PrivacyBudget(1.0, 1e-6, accountant="zcdp")
    with pytest.raises(ValueError, match="cannot compose.*rho="):
        dpnoise.DiscreteGaussianMechanism(1.0, 1e-5, budget=budget, **seeded(8))
    assert budget.ledger == []


# --------------------------------------------------------------------------- rho= / noise_multiplier=
TARGETS = {  # constant-time mechanisms with a ρ or noise-multiplier target: (make, draws for shape (3,))
    "dgauss_rho": (lambda **s: dpnoise.DiscreteGaussianMechanism(rho=0.05, sensitivity=2, **s), 3),
    "gauss_rho": (lambda **s: dpnoise.GaussianMechanism(rho=0.05, sensitivity=0.5, **s), 3),
    "gauss_multiplier": (lambda **s: dpnoise.GaussianMechanism(noise_multiplier=1.1, **s), 3),
}


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_rho_targets_are_charged_the_exact_loss_within_total_variation(name):
    make, draws = TARGETS[name]
    loss = make(**seeded(10)).privacy_loss((3,))
    exact = make(rng=dpnoise.default_rng(10), allow_insecure=True).privacy_loss((3,))
    assert loss == WithinTotalVariation(exact, draws * TV)  # same σ and grid as the default path
    assert loss_from_dict(loss.to_dict()) == loss  # file-backed ledgers
    assert make(**seeded(10)).privacy_loss((0,)) == PureDP(0.0)


@pytest.mark.parametrize("kind", ["zcdp", "rdp", "pld"])
@pytest.mark.parametrize("name", sorted(TARGETS))
def test_rho_targets_compose_in_every_accountant_with_the_transfer_term(name, kind):
    """The budget composes the exact losses and adds (1 + e^ε)·Σ d·2^-64 to δ: exactly that
    much more than the default mechanism's charge, and never more than the budget's δ."""
    make, draws = TARGETS[name]
    ct, exact = PrivacyBudget(10.0, 1e-6, accountant=kind), PrivacyBudget(10.0, 1e-6, accountant=kind)
    make(budget=ct, **seeded(11))(np.zeros(3, dtype=np.int64))
    make(budget=exact, rng=dpnoise.default_rng(11), allow_insecure=True)(np.zeros(3, dtype=np.int64))
    acc, base = ct.accountant, exact.accountant
    for eps in (9.0, 10.0):  # where the exact δ is far below the term, so that it shows in floats
        added = acc.get_delta(eps) - base.get_delta(eps)
        assert added == pytest.approx((1 + math.exp(eps)) * draws * TV, rel=1e-6)
    eps = acc.get_epsilon(1e-6)  # a point the accountant states must hold with the added term
    assert eps >= base.get_epsilon(1e-6) and base.get_delta(eps) + (1 + math.exp(eps)) * draws * TV <= 1e-6
    assert acc.get_epsilon(0.0) == math.inf  # no pure guarantee is left


def test_a_zcdp_budget_refuses_what_only_the_exact_release_fits():
    """A δ below (1 + e^0)·Σ η leaves no ε at which the transfer term fits: refused, although the
    exact releases fit; a δ of 10^-15 leaves room."""
    near = WithinTotalVariation(DiscreteGaussian(4.0), TV)
    small = PrivacyBudget(10.0, 1.9 * 5 * TV, accountant="zcdp")
    assert small.can_spend(DiscreteGaussian(4.0), 5) and not small.can_spend(near, 5)
    with pytest.raises(dpnoise.BudgetExceededError):
        small.spend(near, 5)
    assert small.ledger == []
    assert PrivacyBudget(10.0, 1e-15, accountant="zcdp").can_spend(near, 5)
    assert Accountant("zcdp").compose(near, 5).get_epsilon(0.0) == math.inf


def test_basic_budget_refuses_rho_targets_naming_the_accountants_that_compose_them():
    with pytest.raises(ValueError, match="'zcdp'.*'pld'"):
        dpnoise.DiscreteGaussianMechanism(rho=0.1, budget=PrivacyBudget(1.0, 1e-6), **seeded(12))


def test_constant_time_noise_multiplier_with_sampling_composes_in_rdp():
    budget = PrivacyBudget(8.0, 1e-5, accountant="rdp")
    mech = dpnoise.GaussianMechanism(noise_multiplier=1.1, sample_rate=0.01, budget=budget, **seeded(13))
    loss = mech.privacy_loss((4,))
    assert isinstance(loss, WithinTotalVariation) and isinstance(loss.loss, PoissonSampled)
    mech(np.zeros(4))
    assert mech.grid(4)[2] <= 2**20 and budget.spent_epsilon > 0


def test_out_equals_the_returned_release():
    x = np.linspace(-3, 3, 1000)
    buf = x.copy()
    a = dpnoise.LaplaceMechanism(1.0, **seeded(9))(x)
    dpnoise.LaplaceMechanism(1.0, **seeded(9))(buf, out=buf)
    np.testing.assert_array_equal(a, buf)
