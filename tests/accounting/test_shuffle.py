"""Issue #37 item 4: shuffle-model accounting (dpnoise.accounting.shuffle_amplification and the
ShuffledReports descriptor). Every check here is deterministic (no sampling, so no false-alarm
rate): values are compared with independent brute-force computations written with SciPy."""
import math
import warnings

import numpy as np
import pytest
from scipy.stats import binom

import dpnoise.ldp as ldp
from dpnoise import BudgetExceededError
from dpnoise.accounting import (Accountant, PrivacyBudget, ShuffledReports, loss_from_dict,
                                shuffle_amplification, supported_by)
from dpnoise.accounting.shuffle import _fmt21_closed_form


# ----------------------------------------------------------------- independent references (SciPy)
def _bisect(delta_of, delta, hi):
    """The least ε in [0, hi] with delta_of(ε) <= delta (60 halvings)."""
    if delta_of(0.0) <= delta:
        return 0.0
    lo = 0.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if delta_of(mid) <= delta:
            hi = mid
        else:
            lo = mid
    return hi


def _hockey(P, Q, eps):
    e = math.exp(eps)
    return max(np.sum(np.maximum(P - e * Q, 0)), np.sum(np.maximum(Q - e * P, 0)))


def rr_pair(eps0, n, ones):
    """Binary RR shuffled among n users: the count of ones when `ones + 1` vs `ones` users hold 1."""
    p = math.exp(eps0) / (1 + math.exp(eps0))
    def law(t):
        return np.convolve(binom.pmf(np.arange(t + 1), t, p), binom.pmf(np.arange(n - t + 1), n - t, 1 - p))
    return law(ones + 1), law(ones)


def exact_rr_window(eps0, n, delta):
    """The two binomial mixtures of the issue (other users all holding 0), over a window of C of
    ±15 standard deviations computed with SciPy's log-pmf (the mass outside it is added)."""
    p = math.exp(eps0) / (1 + math.exp(eps0))
    q = 1 - p
    m = n - 1
    sd = math.sqrt(m * p * q)
    lo, hi = int(max(0, m * q - 15 * sd - 10)), int(min(m, m * q + 15 * sd + 10))
    c = np.arange(lo, hi + 1)
    s = np.exp(binom.logpmf(c, m, q))
    out = binom.cdf(lo - 1, m, q) + binom.sf(hi, m, q)
    s1, s0 = np.concatenate([[0], s]), np.concatenate([s, [0]])
    P, Q = p * s1 + q * s0, q * s1 + p * s0
    return _bisect(lambda e: _hockey(P, Q, e) + out, delta, eps0)


def sup_rr_epsilon(eps0, n, delta):
    """The exact ε of shuffled binary RR: the worst over every number of other users holding 1."""
    P, Q = (np.array(x) for x in zip(*(rr_pair(eps0, n, t) for t in range(n))))

    def worst(eps):
        e = math.exp(eps)
        return max(np.max(np.sum(np.maximum(P - e * Q, 0), axis=1)), np.max(np.sum(np.maximum(Q - e * P, 0), axis=1)))
    return _bisect(worst, delta, eps0)


def fmt21_brute(eps0, n, delta, clone=None):
    """FMT21 Thm 3.2's δ(ε) summed over every c (no bucketing, no windows)."""
    r = math.exp(-eps0) if clone is None else clone
    a = math.exp(eps0) / (1 + math.exp(eps0))
    w = binom.pmf(np.arange(n), n - 1, r)
    pairs = []
    for c in range(n):
        b = binom.pmf(np.arange(c + 1), c, 0.5)
        b1, b0 = np.concatenate([[0], b]), np.concatenate([b, [0]])
        pairs.append((a * b1 + (1 - a) * b0, (1 - a) * b1 + a * b0))
    return _bisect(lambda e: sum(wc * _hockey(P, Q, e) for wc, (P, Q) in zip(w, pairs) if wc > 0), delta, eps0)


# ----------------------------------------------------------------- bad input
@pytest.mark.parametrize("kwargs, name", [
    (dict(epsilon0=0.0), "epsilon0"), (dict(epsilon0=-1.0), "epsilon0"), (dict(epsilon0=math.nan), "epsilon0"),
    (dict(epsilon0=math.inf), "epsilon0"), (dict(epsilon0=101.0), "epsilon0"),
    (dict(n=0), "n"), (dict(n=-5), "n"),
    (dict(delta=0.0), "delta"), (dict(delta=1.0), "delta"), (dict(delta=-1e-9), "delta"),
    (dict(delta=math.nan), "delta"), (dict(delta=2.0), "delta"),
])
def test_bad_input_raises_value_error_naming_the_argument(kwargs, name):
    args = dict(epsilon0=1.0, n=1000, delta=1e-8)
    args.update(kwargs)
    with pytest.raises(ValueError, match=rf"^{name} "):
        shuffle_amplification(args["epsilon0"], args["n"], args["delta"])
    with pytest.raises(ValueError, match=rf"^{name} "):
        ShuffledReports(args["epsilon0"], args["n"], args["delta"])


@pytest.mark.parametrize("args", [(1.0, 1000.0, 1e-8), (1.0, True, 1e-8), ("1", 10, 1e-8), (1.0, 10, None)])
def test_wrong_types_raise_type_error(args):
    with pytest.raises(TypeError):
        shuffle_amplification(*args)


def test_configurations_the_bounds_do_not_cover_are_refused():
    with pytest.raises(TypeError, match="configuration"):
        shuffle_amplification(1.0, 100, 1e-8, configuration="grr")
    ct = ldp.FrequencyOracle("grr", epsilon=1.0, domain_size=4, constant_time=True)  # (ε, δ0)-LDP
    with pytest.raises(ValueError, match="configuration"):
        shuffle_amplification(1.0, 100, 1e-8, configuration=ct)
    bigger = ldp.FrequencyOracle("grr", epsilon=2.0, domain_size=4)
    with pytest.raises(ValueError, match="configuration"):
        shuffle_amplification(1.0, 100, 1e-8, configuration=bigger)


def test_no_amplification_returns_epsilon0_with_a_warning():
    with pytest.warns(UserWarning, match="no amplification"):
        assert shuffle_amplification(2.0, 1, 1e-8) == 2.0
    # ε0 = 8 among 10^4 users: ~3 clones; at δ = 1e-8 there is nothing to gain
    with pytest.warns(UserWarning, match="no amplification"):
        assert shuffle_amplification(8.0, 10**4, 1e-8) == 8.0


# ----------------------------------------------------------------- the generic (FMT21) bound
@pytest.mark.parametrize("eps0, n", [(1.0, 60), (3.0, 60), (1.0, 150), (4.0, 600)])
def test_generic_bound_is_never_below_exact_shuffled_rr_over_every_dataset(eps0, n):
    for delta in (1e-3, 1e-6):
        exact = sup_rr_epsilon(eps0, n, delta)
        assert exact > 0
        assert shuffle_amplification(eps0, n, delta) >= exact


@pytest.mark.parametrize("eps0", [0.5, 1.0, 2.0, 4.0, 8.0])
@pytest.mark.parametrize("n", [10**3, 10**4, 10**6, 10**8])
def test_generic_bound_is_never_below_exact_rr_nor_above_the_closed_form(eps0, n):
    delta = 1e-8
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # no amplification at (8, 10^3), (8, 10^4)
        ours = shuffle_amplification(eps0, n, delta)
    assert exact_rr_window(eps0, n, delta) <= ours <= eps0
    closed = _fmt21_closed_form(eps0, n, delta)
    if closed is not None:
        assert ours <= closed
    if n >= 10**6:  # where Thm 3.1 applies it must apply here (ε0 <= log(n / (16 log(2/δ))))
        assert closed is not None or eps0 > math.log(n / (16 * math.log(2 / delta)))


@pytest.mark.parametrize("eps0, n", [(1.0, 400), (2.0, 1500), (4.0, 3000)])
def test_generic_bound_matches_fmt21_summed_over_every_clone_count(eps0, n):
    """The bucketing and windows only add: ours is >= the brute-force Thm 3.2 value, and close."""
    delta = 1e-6
    brute = fmt21_brute(eps0, n, delta)
    ours = shuffle_amplification(eps0, n, delta)
    assert brute <= ours <= brute * 1.01


def test_more_users_never_cost_privacy_and_a_larger_epsilon0_never_gains():
    eps = [shuffle_amplification(2.0, n, 1e-8) for n in (10**4, 10**5, 10**6, 10**7)]
    assert all(a > b for a, b in zip(eps, eps[1:]))
    eps = [shuffle_amplification(e0, 10**6, 1e-8) for e0 in (0.5, 1.0, 2.0, 4.0)]
    assert all(a < b for a, b in zip(eps, eps[1:]))


# ----------------------------------------------------------------- configurations
@pytest.mark.parametrize("n", [10**4, 10**6, 10**8])
@pytest.mark.parametrize("eps0", [1.0, 2.0, 4.0, 8.0])
def test_binary_grr_is_a_proved_bound_above_the_exact_two_mixture_value(eps0, n):
    """Binary GRR takes the proved clone bound, never below the exact value of shuffled binary RR
    (issue 37's target of 'within 5%' is NOT met: 1.2-1.43x at these points; the two-mixture value
    itself is not used, since its pair of datasets is not proved to be the worst)."""
    delta = 1e-8
    exact = exact_rr_window(eps0, n, delta)
    fo = ldp.FrequencyOracle("grr", epsilon=eps0, domain_size=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # (8, 10^4): no amplification
        ours = shuffle_amplification(eps0, n, delta, configuration=fo)
    # SciPy's binomial pmf at n = 10^8 is off by ~2e-7 relative (checked against mpmath at 40
    # digits; ours by 2e-12), which moves its ε by < 1e-6 relative: hence the 1e-5 below
    assert exact * (1 - 1e-5) <= ours <= exact * 1.45


@pytest.mark.parametrize("d", [3, 10, 1000])
def test_kary_grr_is_never_looser_than_the_generic_bound(d):
    for eps0, n in [(1.0, 10**5), (4.0, 10**6), (8.0, 10**8)]:
        fo = ldp.FrequencyOracle("grr", epsilon=eps0, domain_size=d)
        generic = shuffle_amplification(eps0, n, 1e-8)
        ours = shuffle_amplification(eps0, n, 1e-8, configuration=fo)
        assert 0 < ours <= generic
        if math.exp(eps0) > 2 * (d - 1):  # GRR's clone probability 2/(e^ε0+d-1) beats e^-ε0 there
            assert ours < 0.95 * generic


def test_kary_grr_clone_bound_matches_its_brute_force_sum():
    eps0, n, d, delta = 3.0, 1000, 4, 1e-6
    den = math.exp(eps0) + d - 1
    fo = ldp.FrequencyOracle("grr", epsilon=eps0, domain_size=d)
    # δ_GRR(ε) = (e^ε0 + 1)/(e^ε0 + d - 1)·FMT-sum with clone probability 2/(e^ε0 + d - 1)
    w = (math.exp(eps0) + 1) / den
    brute = fmt21_brute(eps0, n, delta / w, clone=2 / den)
    ours = shuffle_amplification(eps0, n, delta, configuration=fo)
    assert brute <= ours <= brute * 1.01


def _krr_histogram_law(values, d, eps0):
    """The law of the histogram of k-ary RR reports of ``values`` ({histogram: probability})."""
    p, q = math.exp(eps0) / (math.exp(eps0) + d - 1), 1 / (math.exp(eps0) + d - 1)
    law = {(0,) * d: 1.0}
    for v in values:
        new = {}
        for h, pr in law.items():
            for o in range(d):
                h2 = h[:o] + (h[o] + 1,) + h[o + 1:]
                new[h2] = new.get(h2, 0.0) + pr * (p if o == v else q)
        law = new
    return law


@pytest.mark.parametrize("d", [3, 4])
def test_kary_grr_bound_is_never_below_exact_shuffled_krr(d):
    """Shuffled k-RR is its histogram: enumerated exactly for n = 40 on four dataset pairs."""
    eps0, n, delta = 2.0, 40, 1e-3
    fo = ldp.FrequencyOracle("grr", epsilon=eps0, domain_size=d)
    ours = shuffle_amplification(eps0, n, delta, configuration=fo)
    for others in ([0] * 39, [2] * 39, [0] * 20 + [2] * 19, [0] * 13 + [1] * 13 + [2] * 13):
        P, Q = _krr_histogram_law(others + [0], d, eps0), _krr_histogram_law(others + [1], d, eps0)
        keys = sorted(set(P) | set(Q))
        Pv, Qv = np.array([P.get(k, 0.0) for k in keys]), np.array([Q.get(k, 0.0) for k in keys])
        exact = _bisect(lambda e: _hockey(Pv, Qv, e), delta, eps0)
        assert 0 < exact <= ours


def test_other_configurations_get_the_generic_bound():
    fo = ldp.FrequencyOracle("oue", epsilon=2.0, domain_size=16)
    assert shuffle_amplification(2.0, 10**5, 1e-8, configuration=fo) == shuffle_amplification(2.0, 10**5, 1e-8)


# ----------------------------------------------------------------- the accountant event
def test_descriptor_round_trips_and_says_which_accountants_compose_it():
    fo = ldp.FrequencyOracle("grr", epsilon=2.0, domain_size=2)
    for loss in (ShuffledReports(2.0, 10**6, 1e-9), ShuffledReports(2.0, 10**6, 1e-9, configuration=fo)):
        back = loss_from_dict(loss.to_dict())
        assert back == loss and back.approx_dp() == loss.approx_dp()
        assert {"basic", "advanced", "pld"} <= set(supported_by(loss))
    assert ShuffledReports(2.0, 10**6, 1e-9).approx_dp() == (shuffle_amplification(2.0, 10**6, 1e-9), 1e-9)


def test_thirty_days_of_shuffled_reports_compose():
    day = ShuffledReports(2.0, 10**6, 1e-9)
    eps_day, _ = day.approx_dp()
    basic = Accountant("basic", neighbours="replace").compose(day, 30).get_epsilon(3.1e-8)
    assert basic == pytest.approx(30 * eps_day, rel=1e-12)
    advanced = Accountant("advanced", neighbours="replace").compose(day, 30).get_epsilon(1e-6)
    pld = Accountant("pld", neighbours="replace").compose(day, 30).get_epsilon(1e-6)
    assert eps_day < pld < advanced < basic
    # one day through the PLD: the clone pair's profile, a hair above the (ε, δ) point
    one = Accountant("pld", neighbours="replace").compose(day).get_epsilon(1e-9)
    assert eps_day <= one <= eps_day * 1.01


def test_a_budget_holds_a_month_of_daily_collections_and_refuses_the_next():
    day = ShuffledReports(2.0, 10**6, 1e-9)
    month = Accountant("advanced", neighbours="replace").compose(day, 30).get_epsilon(1e-6)
    budget = PrivacyBudget(epsilon=month * 1.001, delta=1e-6, accountant="advanced", neighbours="replace")
    for _ in range(30):
        budget.spend(day)
    with pytest.raises(BudgetExceededError):
        budget.spend(day)


def test_every_n_up_to_2_62_is_answered_and_more_users_never_cost():
    fo = ldp.FrequencyOracle("grr", epsilon=1.0, domain_size=2)
    for config in (None, fo):
        eps = [shuffle_amplification(1.0, n, 1e-8, configuration=config) for n in (10**9, 10**10, 10**12, 2**62)]
        assert 0 < eps[-1] <= eps[-2] <= eps[1] < eps[0]
    assert ShuffledReports(1.0, 2**62, 1e-8).approx_dp()[0] == shuffle_amplification(1.0, 2**62, 1e-8)


@pytest.mark.parametrize("eps0", [2.0**-50, 1e-6, 0.01])
def test_tiny_epsilon0_is_still_an_upper_bound(eps0):
    """A pure ε0 guarantee is (0, δ')-DP with δ' = (e^ε0 - 1)/(e^ε0 + 1); at δ above that, 0 is
    the truth, and any value in [0, ε0] is an upper bound; at δ below it the bound is positive."""
    for n in (2, 10, 10**6):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # no amplification at n = 2
            eps = shuffle_amplification(eps0, n, 1e-8)
        assert 0 <= eps <= eps0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # at 2^-50: no amplification, ε0 itself
        assert shuffle_amplification(eps0, 2, math.tanh(eps0 / 2) / 10) > 0


def test_shuffled_reports_are_refused_under_add_remove_neighbours():
    """The shuffle bounds fix n (replace-one neighbours): an add/remove accountant or budget
    refuses the event instead of composing a bound that does not hold for it."""
    day = ShuffledReports(2.0, 10**6, 1e-9)
    with pytest.raises(ValueError, match="replace"):
        Accountant("advanced").compose(day)
    with pytest.raises(ValueError, match="replace"):
        PrivacyBudget(epsilon=5.0, delta=1e-6, accountant="advanced").spend(day)
    Accountant("advanced", neighbours="replace").compose(day)
