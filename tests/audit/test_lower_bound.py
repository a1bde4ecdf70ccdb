"""epsilon_lower_bound and search_pairs: bounds on mechanisms of known ε, the flawed ones
refuted, the events reusable, and every bad input refused with a clear exception.

All randomness is seeded, so each assertion below is deterministic; the comments give the
probability that it would fail for a fresh seed (its false-alarm rate)."""
import math

import numpy as np
import pytest

import dpnoise
from dpnoise.audit import AuditResult, MechanismError, epsilon_lower_bound, search_pairs
from dpnoise.audit.catalogue import _batched_histogram, _batched_scalar_plan


def numpy_rr(eps, seed):
    """Binary randomized response with keep probability e^ε/(1 + e^ε) (float threshold: its
    true ε differs from eps by ~1e-16)."""
    g = np.random.default_rng(seed)
    keep = math.exp(eps) / (1 + math.exp(eps))
    return lambda x: np.where(g.random(np.shape(x)) < keep, x, 1 - np.asarray(x))


def test_randomized_response_bound_close_to_and_below_the_truth():
    mech = dpnoise.RandomizedResponse(1.0, 2, rng=dpnoise.default_rng(11), allow_insecure=True)
    r = epsilon_lower_bound(mech, 0, 1, trials=200_000, vectorized=True, seed=3)
    assert isinstance(r, AuditResult)
    # a bound above 1 happens with probability <= alpha = 0.05; below 0.95 the audit would be
    # weak: with 100k held-out runs per input the bound's slack is about 0.02
    assert 0.95 < r.epsilon <= 1.0
    assert r.held_out + r.train_trials * 2 == 200_000 or r.held_out + 2 * r.train_trials >= 199_999
    assert set(r.hits) and r.hits[r.favoured] > r.hits[1 - r.favoured]
    assert r.p_lower <= r.hits[r.favoured] / r.held_out
    assert r.p_upper >= r.hits[1 - r.favoured] / r.held_out
    assert "epsilon >=" in str(r)


def test_naive_numpy_laplace_is_refuted_by_the_float_bits():
    g = np.random.default_rng(5)
    r = epsilon_lower_bound(lambda x: g.laplace(x, 1.0), 0.0, 1.0, trials=50_000, vectorized=True, seed=1)
    # Mironov (2012): outputs of 1 + Lap in (0, 1/2) carry a trailing zero bit that 0 + Lap's
    # often lack; the claim is epsilon = 1
    assert r.epsilon > 5.0
    assert "float bits" in str(r.event)


def test_dpnoise_laplace_within_its_claim_and_miscalibration_refuted():
    good = _batched_scalar_plan(dpnoise.LaplaceMechanism(1.0, rng=dpnoise.default_rng(2), allow_insecure=True))
    bad = _batched_scalar_plan(dpnoise.LaplaceMechanism(2.0, rng=dpnoise.default_rng(2), allow_insecure=True))
    r_good = epsilon_lower_bound(good, 0.0, 1.0, trials=200_000, vectorized=True, seed=4)
    r_bad = epsilon_lower_bound(bad, 0.0, 1.0, trials=200_000, vectorized=True, seed=4)
    assert 0.8 < r_good.epsilon <= 1.0       # above 1: probability <= 0.05 (the guarantee)
    assert r_bad.epsilon > 1.5               # true epsilon is 2 (scale for 2 claimed as 1)
    assert r_bad.refutes(1.0) and not r_good.refutes(1.0)


def test_batched_scalar_plan_matches_release():
    """The catalogue audits LaplaceMechanism through its scalar plan over a batch: the outputs
    must follow the same law as release() (two-sample KS, false-alarm rate 1e-3)."""
    stats = pytest.importorskip("scipy.stats")
    mech = dpnoise.LaplaceMechanism(1.0, rng=dpnoise.default_rng(8), allow_insecure=True)
    one_by_one = np.array([mech.release(0.3) for _ in range(3000)])
    batched = _batched_scalar_plan(mech)(np.full(3000, 0.3))
    assert stats.ks_2samp(one_by_one, batched).pvalue > 1e-3
    k = mech.plan((), np.float64).k
    assert np.all(np.ldexp(batched, -k) == np.round(np.ldexp(batched, -k)))  # on the same grid


def test_batched_histogram_matches_release():
    """Same for Histogram's plan over a batch of copies of one dataset (KS on each count: on
    integer data it is conservative; false-alarm rate <= 4e-3 over the 4 counts)."""
    stats = pytest.importorskip("scipy.stats")
    mech = dpnoise.Histogram(1.0, categories=4, rng=dpnoise.default_rng(9), allow_insecure=True)
    data = [0, 1, 2, 3, 0]
    one_by_one = np.array([mech.release(data) for _ in range(2000)])
    batched = _batched_histogram(mech)(np.broadcast_to(np.array(data), (2000, 5)))
    assert batched.shape == (2000, 4)
    for j in range(4):
        assert stats.ks_2samp(one_by_one[:, j], batched[:, j]).pvalue > 1e-3


def test_event_can_be_reused_on_fresh_outputs():
    rr = numpy_rr(1.0, 9)
    r = epsilon_lower_bound(rr, 0, 1, trials=20_000, vectorized=True, seed=1)
    fresh0, fresh1 = rr(np.zeros(20_000, np.int64)), rr(np.ones(20_000, np.int64))
    f0, f1 = r.event.contains(fresh0).mean(), r.event.contains(fresh1).mean()
    # the chosen event is {y = 0} or {y = 1}: frequencies e^ε/(1+e^ε) and 1/(1+e^ε)
    hi, lo = math.e / (1 + math.e), 1 / (1 + math.e)
    assert sorted([f0, f1]) == pytest.approx([lo, hi], abs=0.02)  # 6 sd: false alarm < 1e-8


def test_per_call_mechanism_vector_and_string_outputs():
    g = np.random.default_rng(3)
    q = 1 - math.exp(-1.0)  # G1 - G2 for geometric G: discrete Laplace, ε = 1 for a shift of 1

    def vec(x):  # (not x + g.laplace(): float noise, which the audit rightly refutes)
        return np.array([x + g.geometric(q) - g.geometric(q), g.geometric(q) - g.geometric(q)], float)
    r = epsilon_lower_bound(vec, 0.0, 1.0, trials=4000, seed=2)
    assert 0.0 <= r.epsilon <= 1.0
    assert "y[0]" in str(r.event) or "y in a set" in str(r.event) or "sum" in str(r.event)
    words = lambda x: "yes" if g.random() < (0.75 if x else 0.25) else "no"  # noqa: E731  ε = ln 3
    r = epsilon_lower_bound(words, 1, 0, trials=4000, seed=2)
    assert 0.5 < r.epsilon <= math.log(3)
    assert "yes" in str(r.event) or "no" in str(r.event)


def test_nan_and_constant_outputs():
    g = np.random.default_rng(4)
    r = epsilon_lower_bound(lambda x: np.full(len(x), 7.0), 0.0, 1.0, trials=2000, vectorized=True, seed=0)
    assert r.epsilon == 0.0
    # NaN only ever from x1: the event {NaN} has p0 = 0, a large bound
    nanny = lambda x: np.where((np.asarray(x) == 1) & (g.random(len(x)) < 0.5), np.nan, g.random(len(x)))  # noqa: E731
    r = epsilon_lower_bound(nanny, 0.0, 1.0, trials=20_000, vectorized=True, seed=0)
    assert r.favoured == 1 and r.epsilon > 5


def test_delta_lowers_the_bound():
    a = epsilon_lower_bound(numpy_rr(1.0, 1), 0, 1, trials=20_000, vectorized=True, seed=1)
    b = epsilon_lower_bound(numpy_rr(1.0, 1), 0, 1, trials=20_000, vectorized=True, seed=1, delta=0.3)
    assert b.epsilon < a.epsilon and b.delta == 0.3
    c = epsilon_lower_bound(numpy_rr(1.0, 1), 0, 1, trials=20_000, vectorized=True, seed=1, delta=0.9)
    assert c.epsilon == 0.0  # no event is likelier than delta = 0.9


def test_batches_are_concatenated():
    calls = []
    g = np.random.default_rng(0)

    def mech(x):
        calls.append(len(x))
        return x + g.laplace(size=len(x))
    r = epsilon_lower_bound(mech, 0.0, 1.0, trials=2500, vectorized=True, batch_size=1000, seed=0)
    assert calls == [1000, 1000, 500] * 2
    assert r.trials == 2500


def test_seed_makes_the_split_reproducible():
    outs = [epsilon_lower_bound(numpy_rr(1.0, 5), 0, 1, trials=5000, vectorized=True, seed=9) for _ in range(2)]
    assert outs[0].hits == outs[1].hits and outs[0].epsilon == outs[1].epsilon


def test_search_pairs_bonferroni():
    mech = dpnoise.DiscreteLaplaceMechanism(1.0, rng=dpnoise.default_rng(1), allow_insecure=True)
    res = search_pairs(mech, [(0, 0), (0, 1)], trials=50_000, vectorized=True, seed=3, alpha=0.1)
    assert len(res.results) == 2 and all(r.alpha == pytest.approx(0.05) for r in res.results)
    assert res.best is res.results[1] and res.epsilon == res.best.epsilon
    # identical inputs: any positive bound is a false alarm (probability <= 0.05)
    assert res.results[0].epsilon < 0.1 and 0.8 < res.results[1].epsilon <= 1.0


# -- bad input ---------------------------------------------------------------------------------
def ok(x):
    return np.zeros(len(x))


@pytest.mark.parametrize("trials", [0, 999, -5])
def test_trials_too_few(trials):
    with pytest.raises(ValueError, match="trials"):
        epsilon_lower_bound(ok, 0, 1, trials=trials, vectorized=True)


@pytest.mark.parametrize("trials", [1000.5, "2000", None])
def test_trials_not_an_integer(trials):
    with pytest.raises(TypeError, match="trials"):
        epsilon_lower_bound(ok, 0, 1, trials=trials, vectorized=True)


@pytest.mark.parametrize("alpha", [0, 1, -0.1, 1.5, float("nan"), float("inf")])
def test_alpha_outside_unit_interval(alpha):
    with pytest.raises(ValueError, match="alpha"):
        epsilon_lower_bound(ok, 0, 1, trials=1000, vectorized=True, alpha=alpha)


@pytest.mark.parametrize("delta", [1, -0.01, 2, float("nan")])
def test_delta_outside(delta):
    with pytest.raises(ValueError, match="delta"):
        epsilon_lower_bound(ok, 0, 1, trials=1000, vectorized=True, delta=delta)


@pytest.mark.parametrize("kwargs,match", [({"train_fraction": 0}, "train_fraction"),
                                          ({"train_fraction": 1}, "train_fraction"),
                                          ({"batch_size": 0}, "batch_size"),
                                          ({"max_train": 1}, "max_train")])
def test_other_options(kwargs, match):
    with pytest.raises(ValueError, match=match):
        epsilon_lower_bound(ok, 0, 1, trials=1000, vectorized=True, **kwargs)


def test_not_callable_and_bad_seed():
    with pytest.raises(TypeError, match="mechanism must be callable"):
        epsilon_lower_bound(3, 0, 1, trials=1000)
    with pytest.raises(TypeError, match="seed"):
        epsilon_lower_bound(ok, 0, 1, trials=1000, vectorized=True, seed="x")
    with pytest.raises(TypeError, match="vectorized"):
        epsilon_lower_bound(ok, 0, 1, trials=1000, vectorized="yes")


def test_mechanism_that_raises_is_wrapped():
    def boom(x):
        raise KeyError("inner")
    with pytest.raises(MechanismError, match=r"raised KeyError on x0 \(trial 0\)") as info:
        epsilon_lower_bound(boom, 0, 1, trials=1000)
    assert isinstance(info.value.__cause__, KeyError)
    with pytest.raises(MechanismError, match="raised KeyError on x0"):
        epsilon_lower_bound(boom, 0, 1, trials=1000, vectorized=True)

    def late(x):
        if x == 1:
            raise ValueError("no")
        return 0
    with pytest.raises(MechanismError, match="on x1"):
        epsilon_lower_bound(late, 0, 1, trials=1000)


def test_wrong_shapes():
    with pytest.raises(MechanismError, match="one output per copy"):
        epsilon_lower_bound(lambda x: np.zeros(3), 0, 1, trials=1000, vectorized=True)
    with pytest.raises(MechanismError, match="one output per copy"):
        epsilon_lower_bound(lambda x: 0.0, 0, 1, trials=1000, vectorized=True)
    g = np.random.default_rng(0)
    with pytest.raises(MechanismError, match="shape changed"):
        epsilon_lower_bound(lambda x: np.zeros(int(g.integers(1, 3))), 0, 1, trials=1000)
    with pytest.raises(MechanismError, match="differ in shape"):
        epsilon_lower_bound(lambda x: np.zeros(2 + x), 0, 1, trials=1000)
    with pytest.raises(MechanismError, match="complex"):
        epsilon_lower_bound(lambda x: 1j, 0, 1, trials=1000)
    with pytest.raises(MechanismError, match="cannot be compared"):
        epsilon_lower_bound(lambda x: "a" if x else 1.0, 0, 1, trials=1000)


def test_search_pairs_bad_input():
    with pytest.raises(ValueError, match="at least one"):
        search_pairs(ok, [], trials=1000)
    with pytest.raises(ValueError, match=r"pairs\[1\]"):
        search_pairs(ok, [(0, 1), (0, 1, 2)], trials=1000)
    with pytest.raises(ValueError, match="alpha"):
        search_pairs(ok, [(0, 1)], trials=1000, alpha=0)
