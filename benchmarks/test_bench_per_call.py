"""Per-call cost: one scalar draw, one scalar release, a small tensor, a budget charge, measured
against the calls users compare them with, in the same run (issue #32, "Fast at every size").

Each timing is a loop of CALLS calls per round (best round / CALLS: the cost of one call in
steady state, after a warm-up round); the targets compare ratios measured in this session:

  scalar discrete_laplace / discrete_gaussian   <= 2x NumPy's scalar laplace / normal
  scalar Laplace, Gaussian, DiscreteLaplace, DiscreteGaussian, RandomizedResponse releases
                                                <= 3 us each; the first four >= 2x faster than
                                                diffprivlib's randomise (when it is installed)
  the same releases with a budget (each accountant that composes the loss)   <= 5 us
  DP-SGD step with an RDP or PLD budget and sample_rate: 1,000 float32 <= 2x NumPy's
  standard_normal + scale + add; 100 float32 <= 3x
  10^4 DP-SGD steps charged one at a time       <= 0.1 s in all (PLD and RDP)
  report_noisy_max on 1,000 scores              <= 1x NumPy's argmax(scores + gumbel)
  an LDP client's privatize of one item and a one-report add   <= 3 us (GRR, OLH, Hadamard,
                                                CMS), <= 10 us (OUE, SUE), eps = 2, d = 1,024

Absolute targets hold on a quiet machine only: run this file alone (load below ~2).
"""
import time

import numpy as np
import pytest

import dpnoise
from conftest import RESULTS, TIMES, assert_targets, record
from dpnoise.accounting import PrivacyBudget

CALLS = 2000
NP = np.random.default_rng()
RNG = dpnoise.default_rng()
ACCOUNTANTS = ("basic", "advanced", "zcdp", "rdp", "pld")


def per_call(benchmark, key, fn, calls=CALLS, rounds=7):
    """Time ``calls`` calls of fn per round; remember the best time of one call (RESULTS: its
    inverse is the calls per second, so ratio() compares calls)."""
    def loop():
        for _ in range(calls):
            fn()
    record(benchmark, key, loop, calls, rounds=rounds)
    if key in RESULTS:
        TIMES[key] = RESULTS[key]


# -- scalar draws --------------------------------------------------------------------------
def test_numpy_scalar_laplace(benchmark):
    per_call(benchmark, "numpy laplace(0, 10)", lambda: NP.laplace(0.0, 10.0))


def test_numpy_scalar_normal(benchmark):
    per_call(benchmark, "numpy normal(0, 10)", lambda: NP.normal(0.0, 10.0))


def test_scalar_discrete_laplace(benchmark):
    per_call(benchmark, "discrete_laplace(10)", lambda: RNG.discrete_laplace(10))
    x = np.array([RNG.discrete_laplace(10) for _ in range(20000)])
    assert abs(np.var(x) / (2 * np.exp(-0.1) / (1 - np.exp(-0.1)) ** 2) - 1) < 0.1


def test_scalar_discrete_gaussian(benchmark):
    per_call(benchmark, "discrete_gaussian(10)", lambda: RNG.discrete_gaussian(10))
    x = np.array([RNG.discrete_gaussian(10) for _ in range(20000)])
    assert abs(np.std(x) / 10 - 1) < 0.05


# -- scalar releases -------------------------------------------------------------------------
MECHANISMS = {
    "LaplaceMechanism(1)(3.2)": (lambda **kw: dpnoise.LaplaceMechanism(1.0, **kw), 3.2),
    "GaussianMechanism(1, 1e-5)(3.2)": (lambda **kw: dpnoise.GaussianMechanism(1.0, 1e-5, **kw), 3.2),
    "DiscreteLaplaceMechanism(1)(3)": (lambda **kw: dpnoise.DiscreteLaplaceMechanism(1.0, **kw), 3),
    "DiscreteGaussianMechanism(1, 1e-5)(3)": (lambda **kw: dpnoise.DiscreteGaussianMechanism(1.0, 1e-5, **kw), 3),
    "RandomizedResponse(1, 4)(2)": (lambda **kw: dpnoise.RandomizedResponse(1.0, categories=4, **kw), 2),
}


@pytest.mark.parametrize("name", list(MECHANISMS))
def test_scalar_release(benchmark, name):
    make, value = MECHANISMS[name]
    mech = make()
    per_call(benchmark, name, lambda: mech(value))


@pytest.mark.parametrize("accountant", ACCOUNTANTS)
@pytest.mark.parametrize("name", list(MECHANISMS))
def test_scalar_release_with_budget(benchmark, name, accountant):
    make, value = MECHANISMS[name]
    budget = PrivacyBudget(1e12, 0.5, accountant=accountant)
    try:
        mech = make(budget=budget)
    except ValueError:  # this accountant cannot compose the mechanism's loss
        pytest.skip(f"{accountant} does not compose {name}")
    for _ in range(3):
        mech(value)  # warm-up: the budget finds its headroom
    per_call(benchmark, f"{name} +{accountant}", lambda: mech(value), calls=1000, rounds=5)
    assert len(budget.ledger) >= 1000


DIFFPRIVLIB = {
    "LaplaceMechanism(1)(3.2)": ("Laplace", dict(epsilon=1.0, sensitivity=1.0), 3.2),
    "GaussianMechanism(1, 1e-5)(3.2)": ("GaussianAnalytic", dict(epsilon=1.0, delta=1e-5, sensitivity=1.0), 3.2),
    "DiscreteLaplaceMechanism(1)(3)": ("Geometric", dict(epsilon=1.0, sensitivity=1), 3),
    "DiscreteGaussianMechanism(1, 1e-5)(3)": ("GaussianDiscrete", dict(epsilon=1.0, delta=1e-5, sensitivity=1), 3),
}


@pytest.mark.parametrize("name", list(DIFFPRIVLIB))
def test_diffprivlib_randomise(benchmark, name):
    mechanisms = pytest.importorskip("diffprivlib.mechanisms")
    cls, kwargs, value = DIFFPRIVLIB[name]
    mech = getattr(mechanisms, cls)(**kwargs)
    per_call(benchmark, f"diffprivlib {cls}", lambda: mech.randomise(value), calls=1000, rounds=5)


# -- DP-SGD steps ---------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [100, 1000])
def test_numpy_sgd_step(benchmark, n):
    g = np.zeros(n, dtype=np.float32)
    sigma = np.float32(1.1)
    per_call(benchmark, f"numpy sgd step {n}",
             lambda: np.add(g, NP.standard_normal(n, dtype=np.float32) * sigma, out=g), calls=1000)


@pytest.mark.parametrize("accountant", ["rdp", "pld", None])
@pytest.mark.parametrize("n", [100, 1000])
def test_sgd_step(benchmark, n, accountant):
    g = np.zeros(n, dtype=np.float32)
    budget = None if accountant is None else PrivacyBudget(1e12, 1e-5, accountant=accountant)
    mech = dpnoise.GaussianMechanism(noise_multiplier=1.1, sensitivity=1.0,
                                     sample_rate=None if budget is None else 0.01, budget=budget)
    for _ in range(3):
        mech(g, out=g)
    per_call(benchmark, f"sgd step {n} +{accountant}", lambda: mech(g, out=g), calls=1000, rounds=5)
    assert g.dtype == np.float32 and np.isfinite(g).all() and np.std(g) > 1.0  # noise was added, in place


@pytest.mark.parametrize("accountant", ["rdp", "pld"])
def test_ten_thousand_steps_charged(accountant):
    """10^4 identical DP-SGD charges one at a time (no noise drawn): total seconds, and ε read
    at the end equal to one composition by count."""
    mech = dpnoise.GaussianMechanism(noise_multiplier=1.1, sensitivity=1.0, sample_rate=0.01)
    loss = mech.privacy_loss((1000,))
    budget = PrivacyBudget(1e6, 1e-5, accountant=accountant)
    start = time.perf_counter()
    for _ in range(10**4):
        budget.spend(loss, label="GaussianMechanism")
    TIMES[f"10^4 charges +{accountant}"] = time.perf_counter() - start
    reference = dpnoise.accounting.Accountant(accountant).compose(loss, 10**4).get_epsilon(1e-5)
    assert budget.spent_epsilon == pytest.approx(reference, rel=1e-9)


# -- selection --------------------------------------------------------------------------------------
SCORES = NP.standard_normal(1000) * 10


def test_numpy_argmax_gumbel(benchmark):
    per_call(benchmark, "numpy argmax+gumbel 1000", lambda: np.argmax(SCORES + NP.gumbel(size=1000)), calls=500)


def test_report_noisy_max(benchmark):
    per_call(benchmark, "report_noisy_max 1000", lambda: dpnoise.report_noisy_max(SCORES, 1.0), calls=500)


# -- local DP clients ---------------------------------------------------------------------------------
LDP = ("grr", "olh", "hadamard", "cms", "oue", "sue")


@pytest.mark.parametrize("protocol", LDP)
def test_ldp_privatize_one(benchmark, protocol):
    fo = dpnoise.ldp.FrequencyOracle(protocol, epsilon=2.0, domain_size=1024)
    client = fo.client()
    per_call(benchmark, f"ldp {protocol} privatize([item])", lambda: client.privatize([5]), calls=1000, rounds=5)


@pytest.mark.parametrize("protocol", LDP)
def test_ldp_add_one(benchmark, protocol):
    fo = dpnoise.ldp.FrequencyOracle(protocol, epsilon=2.0, domain_size=1024)
    reports = fo.client().privatize([5])
    agg = fo.aggregator()
    per_call(benchmark, f"ldp {protocol} add(1 report)", lambda: agg.add(reports), calls=1000, rounds=5)
    assert agg.n >= 1000


# -- the targets ----------------------------------------------------------------------------------------
def _seconds_targets():
    out = [(name, 3e-6) for name in MECHANISMS]
    out += [(f"{name} +{acc}", 5e-6) for name in MECHANISMS for acc in ACCOUNTANTS
            if f"{name} +{acc}" in TIMES]
    out += [(f"10^4 charges +{acc}", 0.1) for acc in ("rdp", "pld")]
    out += [(f"ldp {p} privatize([item])", 3e-6 if p not in ("oue", "sue") else 1e-5) for p in LDP]
    out += [(f"ldp {p} add(1 report)", 3e-6 if p not in ("oue", "sue") else 1e-5) for p in LDP]
    return out


def _ratio_targets():
    out = [("discrete_laplace(10)", "numpy laplace(0, 10)", 0.5),
           ("discrete_gaussian(10)", "numpy normal(0, 10)", 0.5),
           ("report_noisy_max 1000", "numpy argmax+gumbel 1000", 1.0)]
    for acc in ("rdp", "pld"):
        out += [(f"sgd step 1000 +{acc}", "numpy sgd step 1000", 0.5),
                (f"sgd step 100 +{acc}", "numpy sgd step 100", 1 / 3)]
    for name, (cls, _, _) in DIFFPRIVLIB.items():
        if f"diffprivlib {cls}" in RESULTS:
            out.append((name, f"diffprivlib {cls}", 2.0))
    return out


def test_per_call_report():
    """Print every per-call figure of this session (µs) beside its reference."""
    if not TIMES:
        pytest.skip("benchmarks disabled")
    for key in sorted(TIMES):
        print(f"\n{key:55s} {TIMES[key] * 1e6:10.2f} us" if not key.startswith("10^4") else
              f"\n{key:55s} {TIMES[key]:10.3f} s")


def test_per_call_targets(request):
    assert_targets(request, ratios=_ratio_targets(), seconds=_seconds_targets())
