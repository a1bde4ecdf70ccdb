"""The per-call fast path (issue #32) keeps every guarantee of the general path.

Each test pits the fast path (prepared scalar laws, one-call scalar and array routes, the
budget's repeated-event lane) against the general path or a fresh object, with twin seeded
generators: the same call must give the same output, the same errors, the same charges.
"""
import os
import threading

import numpy as np
import pytest

import dpnoise
from dpnoise import BudgetExceededError
from dpnoise.accounting import Accountant, PrivacyBudget
from dpnoise.generator import _prepared_laws


def twins(seed=7):
    return dpnoise.default_rng(seed), dpnoise.default_rng(seed)


# -- Generator: prepared scalar laws --------------------------------------------------------------
@pytest.mark.parametrize("name,value", [
    ("discrete_laplace", 10), ("discrete_laplace", 0.37), ("discrete_gaussian", 10.0),
    ("discrete_gaussian", 3), ("geometric", 2.5), ("bernoulli", 0.3), ("bernoulli_exp", 1.25),
])
def test_prepared_scalar_draw_is_the_unprepared_draw(name, value):
    a, b = twins()
    kw = (lambda v: {"scale": v}) if name == "geometric" else (lambda v: {})
    call = (lambda g, v: getattr(g, name)(**kw(v))) if name == "geometric" else (lambda g, v: getattr(g, name)(v))
    fast = [call(a, value) for _ in range(300)]  # type(value) is exact: prepared, cached
    slow = [call(b, np.array(value)) for _ in range(300)]  # a 0-d array: the unprepared path
    assert fast == slow
    assert type(fast[0]) is type(slow[0])  # numpy.int64 / numpy.bool_, as before


def test_prepared_law_is_reused_and_bounded():
    rng = dpnoise.default_rng(1)
    rng.discrete_laplace(12.5)
    key = ("discrete_laplace", "scale", float, 12.5)
    law = _prepared_laws[key]
    rng.discrete_laplace(12.5)
    assert _prepared_laws[key] is law  # converted once
    for i in range(600):  # more distinct parameters than the cache holds: it stays bounded
        rng.discrete_laplace(1.0 + i)
    assert len(_prepared_laws) <= 256


def test_prepared_cache_never_serves_a_different_type_or_value():
    rng = dpnoise.default_rng(2)
    rng.discrete_laplace(1)  # cached for int 1
    with pytest.raises(TypeError, match="bool"):
        rng.discrete_laplace(True)  # equal to 1 and of equal hash, but refused
    with pytest.raises(ValueError, match="NaN"):
        rng.discrete_laplace(float("nan"))
    with pytest.raises(ValueError):
        rng.discrete_laplace(-1.0)
    with pytest.raises(OverflowError):
        rng.discrete_laplace(2.0**60)
    with pytest.raises(OverflowError):  # and again: a refused value is never cached
        rng.discrete_laplace(2.0**60)
    p = np.array([1.0, 2.0])  # arrays are never cached: a mutated array gives its new law
    rng.discrete_laplace(p)
    p[:] = 2.0**60
    with pytest.raises(OverflowError):
        rng.discrete_laplace(p)


def test_prepared_scalar_checks_threads():
    rng = dpnoise.default_rng(3)
    with pytest.raises((TypeError, ValueError)):
        rng.discrete_laplace(10, threads=0)


def test_prepared_laws_from_eight_threads_match_sequential_draws():
    """One cached law (the module's cache is shared) used by 8 threads at once, each with its
    own seeded generator: every thread's draws equal the sequential draws of its twin."""
    rng0 = dpnoise.default_rng(0)
    rng0.discrete_gaussian(7.5)  # the law is now cached
    seeds = list(range(100, 108))
    results = {}
    barrier = threading.Barrier(8)

    def work(seed):
        g = dpnoise.default_rng(seed)
        barrier.wait()
        results[seed] = [g.discrete_gaussian(7.5) for _ in range(2000)]

    threads = [threading.Thread(target=work, args=(s,)) for s in seeds]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for s in seeds:
        g = dpnoise.default_rng(s)
        assert results[s] == [g.discrete_gaussian(np.array(7.5)) for _ in range(2000)]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_fast_paths_across_a_fork_draw_fresh_noise():
    """A secure generator and a mechanism used (so warm: prepared law, plan, scalar route) before
    a fork: the child's fast-path draws are not the parent's (the generator re-keys)."""
    rng = dpnoise.default_rng()
    mech = dpnoise.LaplaceMechanism(1.0, rng=rng)
    rng.discrete_laplace(1e6)
    mech(3.2)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        try:
            os.close(r)
            values = [int(rng.discrete_laplace(1e6)) for _ in range(4)] + [mech(3.2) for _ in range(4)]
            os.write(w, repr(values).encode())
        finally:
            os._exit(0)
    os.close(w)
    child = eval(os.read(r, 1 << 16).decode())
    os.close(r)
    os.waitpid(pid, 0)
    parent = [int(rng.discrete_laplace(1e6)) for _ in range(4)] + [mech(3.2) for _ in range(4)]
    assert child[:4] != parent[:4] and child[4:] != parent[4:]


# -- mechanisms: the one-call routes ------------------------------------------------------------------
def _mechanisms(rng, **kw):
    return {
        "laplace": (dpnoise.LaplaceMechanism(1.0, rng=rng, allow_insecure=True, **kw), [3.2, np.float64(-1.5), 7, 10**30]),
        "laplace_granular": (dpnoise.LaplaceMechanism(1.0, granularity=2.0**-8, rng=rng, allow_insecure=True, **kw), [3.2, 5]),
        "gaussian": (dpnoise.GaussianMechanism(1.0, 1e-5, rng=rng, allow_insecure=True, **kw), [3.2, 1e300, -0.0, 4]),
        "discrete_laplace": (dpnoise.DiscreteLaplaceMechanism(1.0, rng=rng, allow_insecure=True, **kw), [3, np.int64(-9), 2**70]),
        "discrete_gaussian": (dpnoise.DiscreteGaussianMechanism(1.0, 1e-5, rng=rng, allow_insecure=True, **kw), [3, -(2**80)]),
        "rr": (dpnoise.RandomizedResponse(1.0, categories=4, rng=rng, allow_insecure=True, **kw), [2, np.int64(0), 3]),
    }


@pytest.mark.parametrize("which", ["laplace", "laplace_granular", "gaussian", "discrete_laplace",
                                   "discrete_gaussian", "rr"])
def test_scalar_route_equals_general_path_and_a_new_mechanism(which):
    a, b = twins(11)
    warm, values = _mechanisms(a)[which]
    for v in values:  # warm the routes
        warm(v)
    cold, _ = _mechanisms(b)[which]
    for v in values:
        cold._release_general(v, None)  # b's stream moves as a's did
    for v in values * 20:
        got, want = warm(v), cold._release_general(v, None)
        assert got == want and type(got) is type(want)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n", [1, 2, 100, 1000, 5000])
@pytest.mark.parametrize("which", ["laplace", "gaussian", "dpsgd"])
def test_array_route_equals_general_path(which, n, dtype):
    a, b = twins(12)

    def make(rng):
        if which == "dpsgd":
            return dpnoise.GaussianMechanism(noise_multiplier=1.1, sensitivity=1.0, rng=rng, allow_insecure=True)
        return _mechanisms(rng)[which][0]

    fast, slow = make(a), make(b)
    x = np.random.default_rng(0).normal(size=n).astype(dtype) * 10
    for _ in range(3):
        got = fast(x)
        want = slow._release_general(x, None)
        assert got.dtype == want.dtype == dtype and np.array_equal(got, want)
        buf, ref = x.copy(), x.copy()
        assert fast(buf, out=buf) is buf
        slow._release_general(ref, ref)
        assert np.array_equal(buf, ref)
        strided = np.repeat(x, 2)[::2]  # a strided input, a contiguous out
        out1, out2 = np.empty_like(x), np.empty_like(x)
        fast(strided, out=out1)
        slow._release_general(strided, out2)
        assert np.array_equal(out1, out2)


def test_cache_never_changes_what_is_drawn():
    """A warm mechanism and a new one, given twin seeded generators and the same call, give the
    same output, at every size and route."""
    a, b = twins(13)
    warm = dpnoise.GaussianMechanism(noise_multiplier=2.0, sensitivity=1.0, rng=a, allow_insecure=True)
    x = np.linspace(-1, 1, 1000, dtype=np.float32)
    for _ in range(5):
        warm(x.copy())  # warm: plan, kernel, tables, route
    b.random_raw(0)
    cold_out = []
    for _ in range(5):
        cold = dpnoise.GaussianMechanism(noise_multiplier=2.0, sensitivity=1.0, rng=b, allow_insecure=True)
        cold_out.append(cold(x.copy()))
    a2, b2 = twins(14)
    warm = dpnoise.GaussianMechanism(noise_multiplier=2.0, sensitivity=1.0, rng=a2, allow_insecure=True)
    warm(x.copy())
    warm_out = [warm(x.copy()) for _ in range(5)]
    cold = [dpnoise.GaussianMechanism(noise_multiplier=2.0, sensitivity=1.0, rng=b2, allow_insecure=True)
            for _ in range(6)]
    cold[0](x.copy())
    assert all(np.array_equal(w, c(x.copy())) for w, c in zip(warm_out, cold[1:]))


@pytest.mark.parametrize("accountant", ["basic", "pld"])
def test_fast_scalar_validates_then_charges_then_draws(accountant):
    a, b = twins(15)
    budget = PrivacyBudget(2.5, 1e-6, accountant=accountant)
    mech = dpnoise.LaplaceMechanism(1.0, rng=a, allow_insecure=True, budget=budget)
    mech(1.0)
    mech(1.0)
    with pytest.raises(ValueError, match="finite"):
        mech(float("nan"))  # refused before the charge
    with pytest.raises(ValueError, match="finite"):
        mech(np.float64("inf"))
    assert len(budget.ledger) == 2
    with pytest.raises(BudgetExceededError):
        mech(1.0)  # a third ε = 1 does not fit 2.5
    assert len(budget.ledger) == 2
    assert all(e["insecure"] for e in budget.ledger)  # the fast lane records a seeded generator
    # nothing was drawn by the refused calls: a's stream is where b's is after two releases
    twin = dpnoise.LaplaceMechanism(1.0, rng=b, allow_insecure=True)
    twin(1.0), twin(1.0)
    assert a.random_raw() == b.random_raw()


def test_fast_array_validates_then_charges_then_draws():
    a, b = twins(16)
    budget = PrivacyBudget(1e9, 1e-5, accountant="rdp")
    mech = dpnoise.GaussianMechanism(noise_multiplier=1.1, sensitivity=1.0, sample_rate=0.01, rng=a,
                                     allow_insecure=True, budget=budget)
    g = np.zeros(1000, dtype=np.float32)
    mech(g, out=g)
    bad = g.copy()
    bad[500] = np.nan
    with pytest.raises(ValueError, match="finite"):
        mech(bad, out=bad)
    assert np.isnan(bad[500]) and np.array_equal(np.delete(bad, 500), np.delete(g, 500))  # untouched
    with pytest.raises(TypeError, match="dtype"):
        mech(g, out=np.zeros(1000, dtype=np.float64))  # the general path's error, before any charge
    assert len(budget.ledger) == 1
    twin = dpnoise.GaussianMechanism(noise_multiplier=1.1, sensitivity=1.0, rng=b, allow_insecure=True)
    h = np.zeros(1000, dtype=np.float32)
    twin(h, out=h)
    assert np.array_equal(g, h) and a.random_raw() == b.random_raw()


def test_fast_scalar_out_of_domain_category_takes_the_general_path():
    rng = dpnoise.default_rng(17)
    clip = dpnoise.RandomizedResponse(1.0, categories=4, rng=rng, allow_insecure=True, out_of_domain="clamp")
    assert 0 <= clip(9) < 4 and 0 <= clip(-3) < 4
    strict = dpnoise.RandomizedResponse(1.0, categories=4, rng=rng, allow_insecure=True, out_of_domain="raise")
    with pytest.raises(ValueError):
        strict(4)


def test_constant_time_mechanisms_keep_their_kernels():
    rng = dpnoise.default_rng(18)
    mech = dpnoise.LaplaceMechanism(1.0, rng=rng, allow_insecure=True, constant_time=True)
    out = mech(3.2)
    assert isinstance(out, np.floating)  # the constant-time kernel's NumPy scalar, not the fast route
    assert mech.__dict__["_scalar_routes"][float] is None
    x = np.zeros(100)
    assert mech(x).dtype == np.float64 and mech.__dict__["_array_routes"][(100,)] == (None, None)


def test_release_path_refuses_a_seeded_generator():
    with pytest.raises(dpnoise.InsecureGeneratorError):
        dpnoise.LaplaceMechanism(1.0, rng=dpnoise.default_rng(1))


def test_plan_pickles_without_its_kernel():
    import pickle
    mech = dpnoise.LaplaceMechanism(1.0)
    mech(3.2)
    plan = mech._plan_for((), np.float64)
    assert plan.__dict__.get("_kernel") is not None
    back = pickle.loads(pickle.dumps(plan))
    assert back == plan and back.prepared_kernel() is not None


def test_one_mechanism_from_eight_threads_charges_every_release():
    budget = PrivacyBudget(1e9, 0.0, accountant="basic")
    mech = dpnoise.LaplaceMechanism(0.5, budget=budget)
    barrier = threading.Barrier(8)

    def work():
        barrier.wait()
        for _ in range(500):
            mech(1.0)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(budget.ledger) == 4000
    assert budget.spent_epsilon == pytest.approx(4000 * 0.5, rel=1e-12)


# -- selection ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.int16, np.bool_])
def test_selection_route_equals_general_path(dtype):
    a, b = twins(19)
    fast = dpnoise.ReportNoisyMax(1.0, rng=a, allow_insecure=True)
    slow = dpnoise.ReportNoisyMax(1.0, rng=b, allow_insecure=True)
    scores = (np.random.default_rng(1).normal(size=(5, 200)) * 20).astype(dtype)
    for x in (scores, scores[0], scores.T.copy().T):
        for _ in range(3):
            got, want = fast(x), slow._release_general(x, None)
            assert np.array_equal(got, want) and type(got) is type(want)


def test_selection_route_checks_before_charging():
    budget = PrivacyBudget(10.0)
    rnm = dpnoise.ReportNoisyMax(1.0, budget=budget)
    scores = np.zeros(100)
    rnm(scores)
    scores[7] = np.inf
    with pytest.raises(ValueError, match="finite"):
        rnm(scores)
    assert len(budget.ledger) == 1


def test_report_noisy_max_function_reuses_its_mechanism_with_the_callers_rng():
    a, b = twins(20)
    scores = np.arange(50.0)
    got = [dpnoise.report_noisy_max(scores, 1.0, rng=a, allow_insecure=True) for _ in range(20)]
    want = [dpnoise.ReportNoisyMax(1.0, rng=b, allow_insecure=True)(scores) for _ in range(20)]
    assert got == want
    c = dpnoise.default_rng(20)  # another generator: never served by the mechanism cached for a
    assert [dpnoise.report_noisy_max(scores, 1.0, rng=c, allow_insecure=True) for _ in range(20)] == want
    with pytest.raises(dpnoise.InsecureGeneratorError):
        dpnoise.report_noisy_max(scores, 1.0, rng=c)


# -- budgets: O(1) repeated charges, exact at the boundary --------------------------------------------
LOSSES = {
    "basic": dpnoise.accounting.Laplace(scale=1.0),
    "advanced": dpnoise.accounting.Laplace(scale=1.0),
    "zcdp": dpnoise.accounting.Gaussian(sigma=1.0),
    "rdp": dpnoise.accounting.PoissonSampled(dpnoise.accounting.Gaussian(sigma=1.1), 0.05),
    "pld": dpnoise.accounting.Laplace(scale=1.0),
}
BUDGETS = {"basic": (7.5, 0.0), "advanced": (7.5, 1e-6), "zcdp": (6.0, 1e-6), "rdp": (3.0, 1e-5), "pld": (12.0, 1e-6)}


@pytest.mark.parametrize("kind", list(LOSSES))
def test_repeated_charges_refuse_exactly_at_the_boundary(kind):
    loss = LOSSES[kind]
    eps, delta = BUDGETS[kind]
    budget = PrivacyBudget(eps, delta, accountant=kind)
    accepted = 0
    while True:
        try:
            budget.spend(loss, label="step")
        except BudgetExceededError:
            break
        accepted += 1
        assert accepted < 100000
    # the boundary by brute force: the last count whose composition fits, by one fresh
    # accountant per count (the budget's slack included)
    def fits(m):
        return Accountant(kind).compose(loss, m).get_epsilon(delta) <= eps * (1 + 1e-12)
    assert fits(accepted) and not fits(accepted + 1)
    assert len(budget.ledger) == accepted
    assert budget.spent_epsilon == pytest.approx(Accountant(kind).compose(loss, accepted).get_epsilon(delta), rel=1e-9)
    with pytest.raises(BudgetExceededError):  # refused again, at once
        budget.spend(loss, label="step")


def test_fast_lane_ledger_entries_are_independent_copies():
    budget = PrivacyBudget(100.0)
    loss = dpnoise.accounting.Laplace(scale=1.0)
    for _ in range(5):
        budget.spend(loss, label="x")
    ledger = budget.ledger
    ledger[3]["loss"]["scale"] = 99.0
    assert all(e["loss"]["scale"] == 1.0 for e in budget.ledger)
    assert budget.to_dict()["totals"]["releases"] == 5


def test_interleaved_events_keep_the_ledger_exact():
    budget = PrivacyBudget(50.0, accountant="basic")
    a, b = dpnoise.accounting.Laplace(scale=1.0), dpnoise.accounting.Laplace(scale=2.0)
    for i in range(40):
        budget.spend(a if i % 3 else b, label=str(i % 2))
    want = sum(1.0 if i % 3 else 0.5 for i in range(40))
    assert budget.spent_epsilon == pytest.approx(want)
    assert [e["label"] for e in budget.ledger] == [str(i % 2) for i in range(40)]


def test_many_selection_release_over_budget_is_refused_at_once():
    """Issue 33, defect 8: a release that cannot fit is refused with BudgetExceededError, never a
    different error, and quickly (no look-ahead composition of a large batch)."""
    import time
    budget = PrivacyBudget(2.0, 1e-6, accountant="pld")
    rnm = dpnoise.ReportNoisyMax(1.0, noise="laplace", budget=budget)
    for rows in (3, 100, 1000):
        start = time.perf_counter()
        with pytest.raises(BudgetExceededError):
            rnm(np.zeros((rows, 10)))
        assert time.perf_counter() - start < 30  # was 1.2 s, 12 s and a ValueError
    assert budget.ledger == []


def test_float16_out_names_what_is_taken():
    """Issue 33, minor: a float16 tensor with out= is refused naming float16 and the dtypes out=
    takes, before any charge."""
    budget = PrivacyBudget(10.0, 1e-5, accountant="rdp")
    mech = dpnoise.GaussianMechanism(noise_multiplier=1.0, sensitivity=1.0, sample_rate=0.1, budget=budget)
    x = np.zeros(10, dtype=np.float16)
    with pytest.raises(TypeError, match=r"float16.*float32 or float64"):
        mech(x, out=x)
    assert budget.ledger == [] and np.all(x == 0)



def test_a_copied_mechanism_charges_its_own_budget():
    """The scalar routes hold the plan's parts only: a copy made after the routes were built
    charges the budget and draws from the generator it holds, not the original's."""
    import copy
    first, second = PrivacyBudget(10.0), PrivacyBudget(10.0)
    mech = dpnoise.LaplaceMechanism(1.0, budget=first)
    mech(1.0)
    twin = copy.copy(mech)
    twin.budget = second
    twin(1.0)
    assert len(first.ledger) == 1 and len(second.ledger) == 1
