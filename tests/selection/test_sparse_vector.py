"""AboveThreshold (the sparse vector technique of Lyu, Su & Li 2017, Algorithm 1) with exact noise.

What is checked: bad inputs fail before any charge or noise; the budget is charged once, before
any noise; a session halts after max_positives TRUEs; the privacy guarantee itself, as exact
probability ratios of the whole output distribution on neighbouring query vectors; and the
sampled outputs against that exact distribution (chi-square).

Statistical tests: chi-square at false-alarm rate ALPHA = 1e-6 each, on fixed seeds (so each
either always passes or always fails). Tests with planted far-away queries rely on the noise
staying below 10^8 scale units, whose probability of failing is below e^-10^7 (never, in practice).
"""
import copy
import itertools
import math
import pickle
from fractions import Fraction

import numpy as np
import pytest

import dpnoise
from dpnoise import BudgetExceededError, InsecureGeneratorError, PrivacyBudget
from dpnoise.accounting.losses import PureDP
from dpnoise.selection.sparse_vector import AboveThreshold, AboveThresholdSession

stats = pytest.importorskip("scipy.stats")

ALPHA = 1e-6
TAIL = 1e-15  # the exact sums over the threshold noise stop where its two tails hold < TAIL
FAR = 10**9  # a query this far from the threshold is on its side with probability 1 - e^-10^7


def seeded(seed=1):
    return dpnoise.default_rng(seed)


def svt(epsilon=1.0, threshold=0.0, seed=1, **kw):
    return AboveThreshold(epsilon, threshold, rng=seeded(seed), allow_insecure=True, **kw)


# -- the exact output distribution ---------------------------------------------------------------
def dlap_pmf(x, t):
    r = math.exp(-1.0 / float(t))
    return (1 - r) / (1 + r) * r ** np.abs(x).astype(float)


def dlap_survival(x, t):
    """P(X >= x) for X ~ DLap(t) (P(x) ∝ exp(-|x|/t)), elementwise over integers x:
    r^x/(1+r) for x >= 0, 1 - r^(1-x)/(1+r) below."""
    r = math.exp(-1.0 / float(t))
    x = np.asarray(x, dtype=float)
    return np.where(x >= 0, r ** np.maximum(x, 0) / (1 + r), 1 - r ** np.maximum(1 - x, 0) / (1 + r))


def outcomes(n, c):
    """Every possible output: a set of fewer than c indices (all n queries answered) or of c."""
    return [A for size in range(c + 1) for A in itertools.combinations(range(n), size)]


def exact_distribution(units, threshold_units, t1, t2, c):
    """P(output = A) for every A, with queries and threshold in grid units: the sum over the
    threshold noise η of P(η) · Π_i P(q_i + ν_i >= T + η) or its complement, over the queries
    answered (all, or up to the c-th TRUE), truncated to |η| <= M with P(|η| > M) < TAIL."""
    q = np.asarray(units, dtype=np.int64)
    r1 = math.exp(-1.0 / float(t1))
    m = math.ceil(math.log(TAIL * (1 + r1) / 2) / math.log(r1))  # 2 r^(M+1)/(1+r) < TAIL
    eta = np.arange(-m, m + 1)
    weight = dlap_pmf(eta, t1)
    above = dlap_survival(threshold_units + eta[None, :] - q[:, None], t2)  # P(q_i + ν_i >= ρ)
    probs = {}
    for A in outcomes(len(q), c):
        last = A[-1] if len(A) == c else len(q) - 1
        prod = np.ones_like(weight)
        for i in range(last + 1):
            prod = prod * (above[i] if i in A else 1 - above[i])
        probs[A] = float((weight * prod).sum())
    return probs


def plan_distribution(mech, queries, dtype):
    p = mech.plan((len(queries),), dtype)
    units = mech._prepare(np.asarray(queries, dtype=dtype))[0]
    return exact_distribution(units, p.threshold_units, p.threshold_scale, p.query_scale, p.max_positives)


def worst_log_ratio(dist, base, neighbours):
    worst = 0.0
    for d in neighbours:
        P, Q = dist(base), dist(np.asarray(base) + np.asarray(d))
        for A in P:
            worst = max(worst, abs(math.log(P[A]) - math.log(Q[A])))
    return worst


BASE = [1, 3, 0, 2]  # integer query answers, sensitivity 1, threshold 2
ALL_NEIGHBOURS = list(itertools.product([-1, 0, 1], repeat=len(BASE)))
MONOTONE_NEIGHBOURS = list(itertools.product([0, 1], repeat=len(BASE))) + \
    list(itertools.product([-1, 0], repeat=len(BASE)))


# -- bad input -----------------------------------------------------------------------------------
@pytest.mark.parametrize("eps", [0.0, -1.0, float("nan"), float("inf"), 101.0])
def test_bad_epsilon(eps):
    with pytest.raises(ValueError, match="epsilon"):
        svt(eps)


@pytest.mark.parametrize("kw, exc, name", [
    (dict(threshold=float("nan")), ValueError, "threshold"),
    (dict(threshold=float("inf")), ValueError, "threshold"),
    (dict(threshold="1"), TypeError, "threshold"),
    (dict(max_positives=0), ValueError, "max_positives"),
    (dict(max_positives=-2), ValueError, "max_positives"),
    (dict(max_positives=1.0), TypeError, "max_positives"),
    (dict(max_positives=True), TypeError, "max_positives"),
    (dict(sensitivity=0.0), ValueError, "sensitivity"),
    (dict(sensitivity=float("nan")), ValueError, "sensitivity"),
    (dict(monotonic="yes"), TypeError, "monotonic"),
    (dict(epsilon=1e-14), ValueError, "epsilon"),  # 4c/ε > 2^44: the scale would pass 2^44 grid units
    (dict(max_positives=2**50), ValueError, "max_positives"),
])
def test_bad_parameters(kw, exc, name):
    with pytest.raises(exc, match=name):
        svt(**kw)


def test_insecure_generator_needs_allow_insecure():
    with pytest.raises(InsecureGeneratorError, match="allow_insecure"):
        AboveThreshold(1.0, 0.0, rng=seeded())
    with pytest.raises(TypeError, match="rng"):
        AboveThreshold(1.0, 0.0, rng=np.random.default_rng(1))
    AboveThreshold(1.0, 0.0)  # the default generator is secure


@pytest.mark.parametrize("queries, exc, match", [
    (np.zeros((2, 3)), ValueError, "1-D"),
    (3.0, ValueError, "1-D"),
    (np.array(["a", "b"]), TypeError, "queries"),
    (np.array([1.0, None], dtype=object), TypeError, "queries"),
    (np.array([1 + 2j]), TypeError, "queries"),
    (np.array([0.0, np.nan]), ValueError, "queries must be finite"),
    (np.array([np.inf, 0.0]), ValueError, "queries must be finite"),
])
def test_bad_queries_fail_before_any_charge_or_noise(queries, exc, match):
    budget = PrivacyBudget(10.0)
    mech = svt(budget=budget, seed=7)
    with pytest.raises(exc, match=match):
        mech.release(queries)
    assert len(budget.ledger) == 0
    assert mech.rng.random_raw() == seeded(7).random_raw()


# -- the budget: once, before any noise ---------------------------------------------------------
def test_release_charges_once_and_refusal_draws_nothing():
    budget = PrivacyBudget(1.0)
    mech = svt(0.6, budget=budget, seed=11)
    mech.release(np.array([1.0, 2.0, 3.0]))
    assert len(budget.ledger) == 1 and budget.ledger[0]["loss"] == PureDP(0.6).to_dict()
    assert budget.ledger[0]["label"] == "AboveThreshold" and budget.ledger[0]["insecure"] is True
    with pytest.raises(BudgetExceededError):
        mech.release(np.array([1.0, 2.0, 3.0]))
    # the refused release drew nothing: the stream continues where the first release left it
    ref = svt(0.6, seed=11)
    ref.release(np.array([1.0, 2.0, 3.0]))
    assert mech.rng.random_raw() == ref.rng.random_raw()
    assert len(budget.ledger) == 1


def test_session_charges_once_at_start_and_refusal_draws_nothing():
    budget = PrivacyBudget(1.0)
    mech = svt(0.6, budget=budget, seed=12, max_positives=2)
    session = mech.start()
    assert len(budget.ledger) == 1
    for q in [-FAR, -FAR, 0.5, -FAR]:
        session.test(q)
    assert len(budget.ledger) == 1  # the queries spend nothing more
    with pytest.raises(BudgetExceededError):
        mech.start()
    ref = svt(0.6, seed=12, max_positives=2)
    ref_session = ref.start()
    for q in [-FAR, -FAR, 0.5, -FAR]:
        ref_session.test(q)
    assert mech.rng.random_raw() == ref.rng.random_raw()


def test_privacy_loss_and_empty_release():
    budget = PrivacyBudget(1.0)
    mech = svt(0.5, budget=budget)
    assert mech.privacy_loss() == PureDP(0.5) == mech.privacy_loss((10,))
    assert mech.privacy_loss((0,)) == PureDP(0.0)
    out = mech.release(np.array([], dtype=float))
    assert out.dtype == np.int64 and out.shape == (0,)
    assert budget.spent_epsilon == 0.0


# -- what a release returns ---------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.int64, np.float64])
@pytest.mark.parametrize("monotonic", [False, True])
def test_release_reports_the_first_c_planted_positives_across_chunks(dtype, monotonic):
    queries = np.full(200_000, -FAR, dtype=dtype)
    planted = [5, 1023, 1024, 3000, 70_000, 70_001, 199_999]
    queries[planted] = FAR
    for c in (1, 3, 7, 10):
        mech = svt(2.0, threshold=0.5, max_positives=c, monotonic=monotonic, seed=c)
        out = mech.release(queries)
        assert out.dtype == np.int64
        assert out.tolist() == planted[:c]
    assert svt(threshold=FAR * 2).release(np.full(10, FAR, dtype=dtype)).tolist() == []


def test_release_stops_drawing_noise_after_the_c_th_positive():
    """Both releases stop in their first chunk: they draw the same noise (the rest of the
    2·10^6 queries would have taken 40 more chunks)."""
    a, b = svt(seed=21), svt(seed=21)
    short, long = np.full(10**6, -float(FAR)), np.full(2 * 10**6, -float(FAR))
    short[0] = long[0] = FAR
    assert a.release(short).tolist() == b.release(long).tolist() == [0]
    assert a.rng.random_raw() == b.rng.random_raw()


def test_integer_and_real_paths():
    mech = svt(1.0, threshold=2.5, sensitivity=1, max_positives=2)
    ip, rp = mech.plan((4,), np.int64), mech.plan((4,), np.float64)
    # integer path: the integers themselves, T -> ceil(T), Δ' = Δ
    assert ip.k is None and ip.sensitivity == 1 and ip.threshold_units == 3
    assert ip.threshold_scale == 2 and ip.query_scale == 8  # Δ/ε1 and 2cΔ/ε2
    # real path: the grid 2^-10 (widening at most 1/1024), Δ' = floor(Δ/2^k) + 1
    assert rp.k == -10 and rp.sensitivity == 1025 and rp.threshold_units == 2560
    assert rp.threshold_scale == 2050 and rp.query_scale == 8200
    mono = svt(1.0, threshold=2.5, max_positives=2, monotonic=True).plan((4,), np.int64)
    assert mono.query_scale == 4  # cΔ/ε2
    # a threshold between grid points: ceil keeps every comparison as with T itself
    assert svt(threshold=-2.5).plan((1,), np.int64).threshold_units == -2
    assert svt(threshold=1e300).plan((1,), np.int64).threshold_units == math.ceil(Fraction(1e300))
    # a non-integral sensitivity, or integer scales beyond 2^44, use a grid for integers too
    assert svt(sensitivity=1.5).plan((1,), np.int64).k == -10
    assert svt(1e-10, sensitivity=10**4).plan((1,), np.int64).k is not None


def test_accuracy_bound_holds():
    """With beta = 0.01, queries at T - α - 1 should be reported in at most 1% of releases;
    we allow 25 of 500 (P(Binomial(500, 0.01) >= 25) < ALPHA)."""
    mech = svt(1.0, threshold=10, seed=31)
    alpha = mech.accuracy(0.01, (20,), np.int64)
    assert alpha == mech.accuracy(0.01, 20, np.int64) > 0
    assert stats.binom.sf(24, 500, 0.01) < ALPHA
    below = np.full(20, 10 - int(alpha) - 1)
    assert sum(len(mech.release(below)) for _ in range(500)) < 25
    assert mech.accuracy(0.01, (20,)) == pytest.approx(alpha, rel=0.02)  # the grid: about the same


# -- the interactive session --------------------------------------------------------------------
@pytest.mark.parametrize("c", [1, 3])
def test_session_halts_after_max_positives(c):
    session = svt(max_positives=c, seed=41).start()
    assert isinstance(session, AboveThresholdSession)
    assert session.remaining == c and not session.halted
    for _ in range(5):
        assert session.test(-FAR) is False
    for i in range(c):
        assert session.test(FAR) is True
        assert session.positives == i + 1 and session.remaining == c - i - 1
    assert session.halted and session.tested == 5 + c
    for q in (FAR, -FAR):
        with pytest.raises(RuntimeError, match="halted after max_positives"):
            session.test(q)
    assert session.tested == 5 + c


def test_session_inputs():
    session = svt(seed=42, max_positives=2).start()
    with pytest.raises(ValueError, match="finite"):
        session.test(float("nan"))
    with pytest.raises(ValueError, match="single number"):
        session.test([1.0, 2.0])
    with pytest.raises(TypeError, match="query"):
        session.test("1")
    assert session.tested == 0
    assert session.test(-(2**80)) is False and session.test(2**80) is True  # clamped, not refused
    int_session = svt(seed=43).start(np.int64)
    with pytest.raises(TypeError, match="integers"):
        int_session.test(1.5)
    assert int_session.test(np.int8(-100)) is False


def test_session_cannot_be_copied():
    session = svt().start()
    for dup in (copy.copy, copy.deepcopy, pickle.dumps):
        with pytest.raises(TypeError, match="copied"):
            dup(session)
    assert "threshold" not in repr(session)  # the noisy threshold is secret


# -- the privacy guarantee, exactly -------------------------------------------------------------
@pytest.mark.parametrize("epsilon", [0.5, 1.0, 2.0])
@pytest.mark.parametrize("c", [1, 2])
@pytest.mark.parametrize("monotonic", [False, True])
def test_exact_privacy_ratios(epsilon, c, monotonic):
    """Every output's probability changes by at most e^ε between neighbouring query vectors
    (each query moves by at most Δ = 1; all in the same direction when monotonic), summing
    exactly over the noise (threshold-noise tails < 1e-15 dropped; 1e-9 relative slack)."""
    mech = svt(epsilon, threshold=2, max_positives=c, monotonic=monotonic)
    dist = lambda q: plan_distribution(mech, q, np.int64)  # noqa: E731
    assert abs(sum(dist(BASE).values()) - 1) < 1e-12
    neighbours = MONOTONE_NEIGHBOURS if monotonic else ALL_NEIGHBOURS
    assert worst_log_ratio(dist, BASE, neighbours) <= epsilon + 1e-9


def test_exact_privacy_check_can_fail():
    """The check is not vacuous: the monotonic noise (half the scale) on non-monotone
    neighbours exceeds e^ε on this very example (log-ratio about 1.29 at ε = 1)."""
    mono = svt(1.0, threshold=2, monotonic=True)
    dist = lambda q: plan_distribution(mono, q, np.int64)  # noqa: E731
    assert worst_log_ratio(dist, BASE, ALL_NEIGHBOURS) > 1.2


def test_exact_privacy_ratios_on_the_grid():
    """Real queries on the grid 2^-10 (Δ' = 1025 units): neighbours move each query by up to
    Δ = 1 (then rounded), and the ratios stay within e^ε."""
    mech = svt(1.0, threshold=1.05)
    base = np.array([0.3, 1.7, -0.2])
    dist = lambda q: plan_distribution(mech, q, np.float64)  # noqa: E731
    moves = list(itertools.product([-1.0, -0.4999, 0.0, 0.7, 1.0], repeat=3))
    assert worst_log_ratio(dist, base, moves) <= 1.0 + 1e-9


# -- the sampled outputs against the exact distribution ----------------------------------------
def chi_square(draws, probs):
    keys = list(probs)
    index = {A: i for i, A in enumerate(keys)}
    counts = np.zeros(len(keys))
    for A in draws:
        counts[index[tuple(A)]] += 1
    expected = np.array([probs[A] for A in keys]) * len(draws)
    assert expected.min() > 20, "bins too small for the chi-square approximation"
    stat = ((counts - expected) ** 2 / expected).sum()
    crit = stats.chi2.isf(ALPHA, len(keys) - 1)
    assert stat < crit, f"chi-square {stat:.1f} >= critical {crit:.1f} (df={len(keys) - 1}, alpha={ALPHA})"


def test_releases_follow_the_exact_distribution():
    mech = svt(1.0, threshold=2, seed=51)
    q = np.array(BASE)
    chi_square([mech.release(q).tolist() for _ in range(40_000)], plan_distribution(mech, BASE, np.int64))


def test_sessions_follow_the_exact_distribution():
    """The session answers with the same law as a release (c = 2, monotonic noise)."""
    mech = svt(1.0, threshold=2, seed=52, max_positives=2, monotonic=True)
    draws = []
    for _ in range(20_000):
        session, hits = mech.start(np.int64), []
        for i, q in enumerate(BASE):
            if session.halted:
                break
            if session.test(q):
                hits.append(i)
        draws.append(hits)
    chi_square(draws, plan_distribution(mech, BASE, np.int64))


def test_real_releases_follow_the_exact_distribution():
    mech = svt(1.0, threshold=1.05, seed=53, max_positives=2)
    q = np.array([0.3, 1.7, -0.2, 1.1])
    chi_square([mech.release(q).tolist() for _ in range(40_000)], plan_distribution(mech, q, np.float64))
