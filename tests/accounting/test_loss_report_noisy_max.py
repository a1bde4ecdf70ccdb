"""ReportNoisyMax with a batch of selections (issue #11): validation, scaling, serialisation, the
m-fold loss distribution against closed forms, and the bounded-range RDP against brute force.

Every check here is deterministic (closed forms, fixed seeds); none is statistical, so none has a
false-alarm rate."""
import math

import numpy as np
import pytest
from scipy.stats import binom

from dpnoise.accounting import (
    Accountant, PrivacyBudget, PrivacyLossDistribution, ReportNoisyMax, loss_from_dict,
)
from dpnoise.accounting.losses.base import _atoms_rdp, _rr_atoms

METHODS = ("laplace", "permute_and_flip", "exponential_mechanism")


# ------------------------------------------------------------------ validation
@pytest.mark.parametrize("bad, error", [
    (0, ValueError), (-1, ValueError), (1.5, TypeError), (2.0, TypeError), (True, TypeError),
    ("3", TypeError), (2**63, OverflowError), (None, TypeError),
])
def test_bad_selections_are_refused_by_name(bad, error):
    with pytest.raises(error, match="selections"):
        ReportNoisyMax(1.0, selections=bad)


def test_selections_accepts_numpy_integers_and_the_upper_limit():
    assert ReportNoisyMax(1.0, selections=np.int64(3)).selections == 3
    assert type(ReportNoisyMax(1.0, selections=np.int64(3)).selections) is int
    assert ReportNoisyMax(1.0, selections=2**62).pure_epsilon() == 2.0**62


def test_default_is_one_selection_and_unchanged():
    one = ReportNoisyMax(0.5)
    assert one.selections == 1 and one == ReportNoisyMax(0.5, "exponential_mechanism", 1)
    assert one.pure_epsilon() == 0.5 and one.zcdp_rho() == 0.5**2 / 8
    losses, masses, inf = one._loss_atoms("remove")
    ref = _rr_atoms(0.5, 2)
    assert np.array_equal(losses, ref[0]) and np.array_equal(masses, ref[1]) and inf == 0.0


# ------------------------------------------------------------------ scaling
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("m", [1, 2, 7, 1000])
def test_pure_epsilon_rho_and_rdp_scale_with_selections(method, m):
    eps = 0.3
    loss = ReportNoisyMax(eps, method, selections=m)
    one = ReportNoisyMax(eps, method)
    assert loss.pure_epsilon() == pytest.approx(m * eps, rel=1e-15)
    assert loss.approx_dp() == (pytest.approx(m * eps, rel=1e-15), 0.0)
    rho1 = eps**2 / 8 if method == "exponential_mechanism" else eps**2 / 2
    assert loss.zcdp_rho() == pytest.approx(m * rho1, rel=1e-15)
    for alpha in (1.01, 2.0, 10.0, 300.0):
        assert loss.rdp(alpha) == pytest.approx(m * one.rdp(alpha), rel=1e-15)


# ------------------------------------------------------------------ serialisation
@pytest.mark.parametrize("loss", [
    ReportNoisyMax(0.25), ReportNoisyMax(0.25, "laplace", 1), ReportNoisyMax(0.25, "permute_and_flip", 12),
    ReportNoisyMax(1.5, "exponential_mechanism", 2**40),
])
def test_to_dict_round_trip(loss):
    data = loss.to_dict()
    assert loss_from_dict(data) == loss
    assert ("selections" in data) == (loss.selections != 1)  # one selection: the old format


def test_dict_without_selections_means_one():
    old = {"type": "ReportNoisyMax", "epsilon": 0.4, "method": "laplace"}
    assert loss_from_dict(old) == ReportNoisyMax(0.4, "laplace", selections=1)


@pytest.mark.parametrize("bad", [0, 1.5, True, 2**63])
def test_bad_selections_in_a_dict_raise_value_error_naming_it(bad):
    with pytest.raises((ValueError, OverflowError), match="selections"):
        loss_from_dict({"type": "ReportNoisyMax", "epsilon": 0.4, "selections": bad})


def test_budget_ledger_round_trip_keeps_selections():
    budget = PrivacyBudget(10.0, 1e-6, accountant="rdp")
    budget.spend(ReportNoisyMax(0.1, selections=20), label="top-20")
    again = PrivacyBudget.from_dict(budget.to_dict())
    assert again.ledger[0]["loss"]["selections"] == 20
    assert again.spent_epsilon == pytest.approx(budget.spent_epsilon, rel=1e-12)


# ------------------------------------------------------------------ m selections == m compositions
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("m", [1, 3, 10])
def test_pld_accountant_batch_equals_repeated_composition(method, m):
    """Both routes are pessimistic discretisations of the same m-fold randomized response; the
    batch is discretised once, the repetition m times, so they agree to the grid's error."""
    eps = 0.7
    batch = Accountant("pld").compose(ReportNoisyMax(eps, method, selections=m))
    rep = Accountant("pld")
    for _ in range(m):
        rep.compose(ReportNoisyMax(eps, method))
    exact = ReportNoisyMax(eps, method, selections=m)
    for e in (0.0, 0.5, 1.0, 2.5, 0.9 * m * eps):
        b, r = batch.get_delta(e), rep.get_delta(e)
        assert b == pytest.approx(r, rel=1e-3, abs=1e-12), e
        assert b >= float(exact.delta_for_epsilon(e)) - 1e-15  # never optimistic
    for d in (1e-3, 1e-6):
        assert batch.get_epsilon(d) == pytest.approx(rep.get_epsilon(d), rel=1e-3, abs=1e-4)


@pytest.mark.parametrize("kind", ["rdp", "zcdp", "basic"])
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("m", [1, 3, 10])
def test_other_accountants_batch_equals_repeated_composition(kind, method, m):
    eps = 0.7
    batch = Accountant(kind).compose(ReportNoisyMax(eps, method, selections=m))
    rep = Accountant(kind)
    for _ in range(m):
        rep.compose(ReportNoisyMax(eps, method))
    for d in (1e-3, 1e-6):
        assert batch.get_epsilon(d) == pytest.approx(rep.get_epsilon(d), rel=1e-9)
    if kind == "rdp":
        for alpha in (1.5, 4.0, 32.0):
            assert batch.rdp(alpha) == pytest.approx(rep.rdp(alpha), rel=1e-12)


def test_batch_and_count_multiply():
    """R rows with top-k: compose(ReportNoisyMax(ε, selections=k), count=R) is R·k selections."""
    a = Accountant("pld").compose(ReportNoisyMax(0.2, selections=4), count=5)
    b = Accountant("pld").compose(ReportNoisyMax(0.2, selections=20))
    for e in (0.5, 1.0, 2.0):
        assert a.get_delta(e) == pytest.approx(b.get_delta(e), rel=1e-3, abs=1e-12)


# ------------------------------------------------------------------ the m-fold atoms, closed form
def rr_composition_delta(eps, m, eps_prime):
    """δ(ε') of m-fold binary randomized response, written out with exact binomials:
    Σ_j C(m,j) p^j q^{m-j} (1 - e^{ε' - (2j-m)ε})_+ with p = e^ε/(1+e^ε)."""
    p = 1 / (1 + math.exp(-eps))
    return math.fsum(math.comb(m, j) * p**j * (1 - p) ** (m - j) * -math.expm1(eps_prime - (2 * j - m) * eps)
                     for j in range(m + 1) if (2 * j - m) * eps > eps_prime)


@pytest.mark.parametrize("eps, m", [(0.7, 1), (0.7, 3), (0.3, 10), (1.0, 25), (0.05, 200), (4.0, 30)])
def test_m_fold_atoms_match_the_closed_form(eps, m):
    loss = ReportNoisyMax(eps, "laplace", selections=m)
    for e in (-1.0, 0.0, 0.1, 0.5 * eps, eps, 2.2, m * eps / 3, m * eps - 1e-9, m * eps):
        want = rr_composition_delta(eps, m, e)
        got = float(loss.delta_for_epsilon(e))
        assert got == pytest.approx(want, rel=1e-12, abs=1e-300), e
    assert float(loss.delta_for_epsilon(m * eps)) == 0.0


@pytest.mark.parametrize("eps, m", [(1.0, 10_000), (0.01, 1_000_000), (0.5, 3_000)])
def test_large_m_window_is_exact_up_to_a_pessimistic_tail(eps, m):
    """For large m only a window of the binomial is kept; the rest (<= 1e-18) is put at infinite
    loss. Check masses and δ against SciPy's binomial over all m+1 values."""
    losses, masses, inf = ReportNoisyMax(eps, selections=m)._loss_atoms("remove")
    assert losses.size < 20 * math.sqrt(m) + 100  # a window, not m+1 atoms
    assert 0.0 <= inf <= 1e-18
    assert math.fsum(masses) + inf == pytest.approx(1.0, abs=1e-12)
    j = np.arange(m + 1)
    pmf = binom.pmf(j, m, 1 / (1 + math.exp(-eps)))
    loss_all = (2.0 * j - m) * eps
    idx = np.round((losses / eps + m) / 2).astype(np.int64)
    np.testing.assert_allclose(masses, pmf[idx], rtol=1e-9)
    for e in (0.0, 0.5 * m * eps * math.tanh(eps / 2), math.sqrt(m) * eps):
        sel = loss_all > e
        want = math.fsum(pmf[sel] * -np.expm1(e - loss_all[sel]))
        got = float(ReportNoisyMax(eps, selections=m).delta_for_epsilon(e))
        assert got == pytest.approx(want, rel=1e-9, abs=1e-17)


def test_pld_of_the_batch_is_pessimistic_and_close():
    """Connect-the-dots on a grid of width h: δ(ε) <= δ_PLD(ε) <= δ(ε - h) (Doroshenko et al. 2022),
    here for the batch's binomial atoms against the closed form."""
    h, eps, m = 1e-4, 0.3, 40
    pld = PrivacyLossDistribution.from_loss(ReportNoisyMax(eps, selections=m), h)
    for e in (0.0, 0.31, 1.0, 2.00003, 4.5):
        got = pld.get_delta_for_epsilon(e)
        assert rr_composition_delta(eps, m, e) - 1e-15 <= got <= rr_composition_delta(eps, m, e - h) + 1e-15


def test_huge_batches_are_refused_by_pld_but_not_by_rdp():
    huge = ReportNoisyMax(1e-3, selections=2**62)
    assert not huge.has_profile()
    with pytest.raises(ValueError, match="supported by"):
        Accountant("pld").compose(huge)
    with pytest.raises(ValueError, match="no privacy profile"):
        huge.delta_for_epsilon(1.0)
    assert math.isfinite(Accountant("rdp").compose(ReportNoisyMax(1e-9, selections=10**12)).get_epsilon(1e-6))
    # a large ε concentrates the binomial: 2^62 selections still have a small window
    assert ReportNoisyMax(40.0, selections=2**62).has_profile()


def test_zero_epsilon_batch_spends_nothing():
    loss = ReportNoisyMax(0.0, selections=10**9)
    for kind in ("basic", "zcdp", "pld"):
        assert Accountant(kind).compose(loss).get_epsilon(1e-6) == 0.0
    assert Accountant("rdp").compose(loss).rdp(2.0) == 0.0


# ------------------------------------------------------------------ bounded-range RDP
def renyi(p, q, alpha):
    """D_α(P‖Q) for finite distributions with full support (Mironov 2017, Def. 3), in logs."""
    v = alpha * np.log(p) + (1 - alpha) * np.log(q)
    top = float(np.max(v))
    return (top + math.log(float(np.sum(np.exp(v - top))))) / (alpha - 1)


def two_point(eps, t):
    """The ε-BR pair with losses t and t-ε (P-mass (e^ε - e^t)/(e^ε - 1) at loss t)."""
    a = (math.exp(eps) - math.exp(t)) / math.expm1(eps)
    p = np.array([a, 1 - a])
    q = p * np.exp(-np.array([t, t - eps]))
    return p, q


def two_point_renyi(eps, t, alpha):
    """D_α of two_point(eps, t) = log E_P[e^{(α-1)L}]/(α-1), written to keep its digits near α = 1
    and ε = 0 (where renyi() above loses them): (t-ε) + log(1 + a(e^{(α-1)ε} - 1))/(α-1)."""
    a = math.expm1(t - eps) / math.expm1(-eps)
    lam = alpha - 1
    if lam * eps < 700:
        return (t - eps) + math.log1p(a * math.expm1(lam * eps)) / lam
    return t + math.log(a + (1 - a) * math.exp(-lam * eps)) / lam


ORDERS = (1.001, 1.1, 1.5, 2.0, 3.0, 8.0, 32.0, 256.0, 1e4)


@pytest.mark.parametrize("eps", [0.01, 0.3, 1.0, 3.0, 10.0])
def test_bounded_range_rdp_is_the_max_over_two_point_pairs(eps):
    """The closed-form maximiser is checked against a search: the divergence of the two-point
    pair over 4000 values of t (uniform, and geometric towards t = ε where the maximiser sits
    for large α), refined between the best one's neighbours. The closed form is never below the
    best of them, and above it by at most the search's own miss (second order in its step)."""
    em = ReportNoisyMax(eps, "exponential_mechanism")
    ts = np.concatenate([np.linspace(0.0, eps, 2001)[1:-1], eps - np.geomspace(1e-13 * eps, eps, 2001)[:-1]])
    ts.sort()
    for alpha in ORDERS:
        vals = [two_point_renyi(eps, float(t), alpha) for t in ts]
        i = int(np.argmax(vals))  # then 2001 points between the best one's neighbours
        around = np.linspace(ts[max(i - 1, 0)], ts[min(i + 1, ts.size - 1)], 2001)
        best = max(max(vals), max(two_point_renyi(eps, float(t), alpha) for t in around))
        got = em.rdp(alpha)
        assert got >= best * (1 - 1e-14)
        assert got <= best * (1 + 1e-10)  # the rounding allowance is 64 ulp of ε
    # and the stable formula agrees with the plain one where the plain one is accurate
    for t in (0.2 * eps, 0.5 * eps, 0.9 * eps):
        plain = renyi(*two_point(eps, t), 2.0)
        assert two_point_renyi(eps, t, 2.0) == pytest.approx(plain, rel=1e-9, abs=1e-15)


def test_bounded_range_rdp_bounds_random_bounded_range_pairs():
    """Any pair whose loss takes values in an interval of width ε (random, up to 6 outcomes,
    fixed seed) has Rényi divergence at most the descriptor's, in both directions."""
    rng = np.random.default_rng(20240611)
    for _ in range(400):
        eps = float(rng.choice([0.05, 0.5, 1.0, 2.0, 6.0]))
        k = int(rng.integers(2, 7))
        q = rng.dirichlet(np.ones(k))
        r = rng.uniform(0.0, eps, size=k)  # log(P/Q) = r - log Σ q e^r: range <= ε
        p = q * np.exp(r)
        p /= p.sum()
        bound = ReportNoisyMax(eps, "exponential_mechanism")
        for alpha in (1.05, 2.0, 7.0, 60.0):
            b = bound.rdp(alpha)
            assert renyi(p, q, alpha) <= b + 1e-12
            assert renyi(q, p, alpha) <= b + 1e-12


def test_exponential_mechanism_pairs_are_within_the_bound():
    """The exponential mechanism itself (weights e^{ε u/2}, |u - u'| <= 1) on small domains."""
    rng = np.random.default_rng(7)
    for _ in range(200):
        eps = float(rng.choice([0.1, 1.0, 4.0]))
        u = rng.normal(0, 3, size=int(rng.integers(2, 8)))
        v = u + rng.choice([-1.0, 0.0, 1.0], size=u.size)  # a neighbour's scores
        p = np.exp(eps * u / 2 - np.max(eps * u / 2))
        q = np.exp(eps * v / 2 - np.max(eps * v / 2))
        p, q = p / p.sum(), q / q.sum()
        for alpha in (1.5, 4.0, 40.0):
            assert renyi(p, q, alpha) <= ReportNoisyMax(eps).rdp(alpha) + 1e-12


@pytest.mark.parametrize("eps", [1e-6, 0.01, 0.3, 1.0, 5.0])
def test_bounded_range_rdp_beats_both_older_bounds(eps):
    em = ReportNoisyMax(eps, "exponential_mechanism")
    for alpha in ORDERS + (1e8, 1e13):
        rr = _atoms_rdp(_rr_atoms(eps, 2), alpha)
        assert em.rdp(alpha) <= min(rr, alpha * eps**2 / 8, eps)
        assert em.rdp(alpha) <= ReportNoisyMax(eps, "laplace").rdp(alpha)
    if eps >= 0.3:  # strictly better than ε²/8-zCDP where ε is not small
        assert em.rdp(10.0) < 0.95 * 10.0 * eps**2 / 8
        assert em.rdp(100.0) < 0.6 * 100.0 * eps**2 / 8


def test_bounded_range_rdp_known_values():
    """Values of max_t D_α at ε = 1, computed independently to 12 digits with mpmath
    (60 digits, maximiser from the stationarity condition, cross-checked on a 400-point grid)."""
    em = ReportNoisyMax(1.0)
    assert em.rdp(2.0) == pytest.approx(0.240229013917, rel=1e-11)
    assert em.rdp(10.0) == pytest.approx(0.689833573183, rel=1e-11)
    assert em.rdp(100.0) == pytest.approx(0.948065875858, rel=1e-11)


def test_many_exponential_selections_cost_less_under_rdp_than_other_methods():
    m, eps = 100, 0.1
    em = Accountant("rdp").compose(ReportNoisyMax(eps, "exponential_mechanism", m)).get_epsilon(1e-6)
    zc = Accountant("zcdp").compose(ReportNoisyMax(eps, "exponential_mechanism", m)).get_epsilon(1e-6)
    lap = Accountant("rdp").compose(ReportNoisyMax(eps, "laplace", m)).get_epsilon(1e-6)
    assert em <= zc * (1 + 1e-9)
    assert em < lap


@pytest.mark.parametrize("method", ["laplace", "permute_and_flip", "exponential_mechanism"])
def test_advanced_accountant_composes_a_batch_as_separate_selections(method):
    """A batch of m selections is m events for the (ε, δ) accountants: the optimal homogeneous
    composition (KOV) applies, not basic composition of one (m·ε, 0) event."""
    from dpnoise.accounting import Accountant

    batch = Accountant("advanced").compose(ReportNoisyMax(0.1, method, selections=100)).get_epsilon(1e-6)
    repeated = Accountant("advanced").compose(ReportNoisyMax(0.1, method), 100).get_epsilon(1e-6)
    assert batch == pytest.approx(repeated, rel=1e-12)
    assert batch < 10.0 * 0.6  # well below basic composition's 10
