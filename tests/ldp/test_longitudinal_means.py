"""Daily collection of means (issue 22, item 3, with 1BitMean: Ding, Kulkarni & Yekhanin,
NeurIPS 2017, §3-4): α-point rounding to the ``points`` grid, the memoised bit of a grid point
(``client(device_key=)``), the instantaneous layer (``instantaneous_epsilon=``), the refusals of
the other methods, and the memoised estimate's unbiasedness and stated standard error."""
import math

import numpy as np
import pytest

import dpnoise
from dpnoise import ldp
from dpnoise.accounting import PrivacyBudget
from dpnoise.ldp._memo import memo_fingerprint
from dpnoise.ldp.longitudinal import LongitudinalDP, alpha_point_round
from dpnoise.ldp.numeric import _formulas as F

BOUNDS = (0.0, 600.0)  # minutes a day


def device(*path):
    """A device key for tests (seeded: reproducible)."""
    return np.random.default_rng([0x6D65616E, *path]).bytes(32)


def bits_of(reports):
    return np.unpackbits(reports.data["bits"], count=reports.n, bitorder="little")


def memo_client(oracle, key, seed=0, **kw):
    return oracle.client(dpnoise.default_rng(seed), allow_insecure=True, device_key=key, **kw)


def test_refused_up_front_where_not_supported():
    for method in ("duchi", "piecewise", "hybrid"):
        with pytest.raises(ValueError, match="instantaneous_epsilon.*'bitmean'"):
            ldp.MeanOracle(method, 1.0, BOUNDS, instantaneous_epsilon=0.5)
        with pytest.raises(ValueError, match="points.*'bitmean'"):
            ldp.MeanOracle(method, 1.0, BOUNDS, points=11)
        with pytest.raises(ValueError, match="device_key.*'bitmean'"):
            ldp.MeanOracle(method, 1.0, BOUNDS).client(device_key=device(0))
    # heavy hitters have no daily collection: their refusal names the protocols that do
    with pytest.raises(ValueError, match="device_key.*'bitmean'.*'grr'"):
        ldp.HeavyHitters("pem", 4.0, item_bits=32).client(device_key=device(0))
    with pytest.raises(ValueError, match="device_key.*points="):
        ldp.MeanOracle("bitmean", 1.0, BOUNDS).client(device_key=device(0))
    for bad, exc in ((1, ValueError), (2**24 + 1, ValueError), (7.0, TypeError), ("7", TypeError)):
        with pytest.raises(exc, match="points"):
            ldp.MeanOracle("bitmean", 1.0, BOUNDS, points=bad)
    with pytest.raises(ValueError, match="points.*dimensions"):
        ldp.MeanOracle("bitmean", 1.0, BOUNDS, dimensions=3, points=11)
    for bad, exc in ((0.0, ValueError), (float("nan"), ValueError), ("1", TypeError)):
        with pytest.raises(exc, match="instantaneous_epsilon"):
            ldp.MeanOracle("bitmean", 1.0, BOUNDS, instantaneous_epsilon=bad)
    oracle = ldp.MeanOracle("bitmean", 1.0, BOUNDS, points=11)
    for bad, exc in ((b"k" * 31, ValueError), ("k" * 32, TypeError)):
        with pytest.raises(exc, match="device_key"):
            oracle.client(device_key=bad)
    # refused values charge nothing and never echo a value
    budget = PrivacyBudget(10.0)
    client = memo_client(oracle, device(1), budget=budget)
    for bad, exc in (([np.nan], ValueError), ([np.inf], ValueError), (["a"], TypeError)):
        with pytest.raises(exc, match="values") as info:
            client.privatize(bad)
        assert "nan" not in str(info.value).lower().replace("nan and", "")
    assert budget.spent_epsilon == 0
    assert client.privatize([]).n == 0


def test_memoised_bit_repeats_while_the_value_stays_in_its_cell():
    oracle = ldp.MeanOracle("bitmean", 1.0, BOUNDS, points=61)  # a grid point every 10 minutes
    key = device(2)
    cell = np.linspace(120.0, 130.0, 101)  # one device's day values drifting through a cell
    index = alpha_point_round(cell, BOUNDS, 61, key)
    assert set(index) == {12, 13}  # the device's own threshold α splits the cell
    days = [bits_of(memo_client(oracle, key, seed=s).privatize(cell)) for s in range(3)]
    for d in days[1:]:
        np.testing.assert_array_equal(d, days[0])  # fresh generators: the same answers every day
    for i in (12, 13):  # one memoised bit per grid point
        assert len(set(days[0][index == i])) == 1
    # leaving the cell and coming back gives the memoised answer again
    trip = bits_of(memo_client(oracle, key).privatize([cell[0], 410.0, 590.0, cell[0]]))
    assert trip[0] == trip[3] == days[0][0]
    # other devices: 60 devices at one value do not all send the same bit (P(1) in (0.27, 0.73))
    others = [bits_of(memo_client(oracle, device(3, i)).privatize([123.0]))[0] for i in range(60)]
    assert 0 < sum(others) < 60
    # the PRF's configuration: ε₁ is left out (the permanent bit is the same), the rest is in
    both = ldp.MeanOracle("bitmean", 1.0, BOUNDS, instantaneous_epsilon=0.3, points=61)
    assert memo_fingerprint(both) == memo_fingerprint(oracle)
    for other in (ldp.MeanOracle("bitmean", 1.0, BOUNDS, points=31), ldp.MeanOracle("bitmean", 1.5, BOUNDS, points=61),
                  ldp.MeanOracle("bitmean", 1.0, (0.0, 500.0), points=61)):
        assert memo_fingerprint(other) != memo_fingerprint(oracle)


def test_instantaneous_layer_varies_travels_and_is_charged():
    plain = ldp.MeanOracle("bitmean", 2.0, BOUNDS, points=61)
    both = ldp.MeanOracle("bitmean", 2.0, BOUNDS, instantaneous_epsilon=0.5, points=61)
    budget = PrivacyBudget(100.0)
    client = memo_client(both, device(4), seed=3, budget=budget)
    reports = [client.privatize([123.0]) for _ in range(40)]
    # each report keeps the permanent bit w.p. e^0.5/(e^0.5 + 1) = 0.62: 40 equal reports have
    # probability < 1e-8
    assert len({int(bits_of(r)[0]) for r in reports}) == 2
    assert budget.spent_epsilon == pytest.approx(40 * 0.5)  # ε₁ per report
    assert both.privacy_loss() == LongitudinalDP(0.5, permanent_epsilon=2.0, instantaneous_epsilon=0.5)
    assert plain.privacy_loss().epsilon == 2.0
    assert "instantaneous_epsilon=0.5, points=61" in repr(both)
    assert ldp.Configuration.from_json(both.to_json()) == both
    agg = both.aggregator().add(ldp.Reports.concat(reports))
    assert ldp.Aggregator.from_bytes(agg.to_bytes()).to_bytes() == agg.to_bytes()
    with pytest.raises(ValueError, match="different configuration"):
        plain.aggregator().add(reports[0])
    # fresh clients of a two-layer configuration draw both layers: no key needed
    assert both.client().privatize(np.full(5, 3.0)).n == 5


def test_report_is_charged_min_of_both_layers_as_frequency_oracles():
    """ε₁ > ε∞: a report is an ε₁ channel over an ε∞-LDP bit, so it costs min(ε₁, ε∞) = ε∞, as
    FrequencyOracle(..., instantaneous_epsilon=) charges (the budget and privacy_loss agree)."""
    mean = ldp.MeanOracle("bitmean", 1.0, BOUNDS, instantaneous_epsilon=3.0, points=61)
    freq = ldp.FrequencyOracle("grr", 1.0, 4, instantaneous_epsilon=3.0)
    assert mean.privacy_loss() == LongitudinalDP(1.0, permanent_epsilon=1.0, instantaneous_epsilon=3.0)
    assert mean.privacy_loss().epsilon == freq.privacy_loss().epsilon == 1.0
    budget = PrivacyBudget(100.0)
    mean.client(dpnoise.default_rng(5), allow_insecure=True, budget=budget).privatize(np.full(7, 3.0))
    assert budget.spent_epsilon == pytest.approx(7 * 1.0)


@pytest.mark.parametrize("eps,eps1", [(2.0, 1.5), (1e-6, 3e-6), (0.5, 60.0), (45.0, 50.0), (100.0, 100.0)])
def test_two_layers_are_one_duchi_bit(eps, eps1):
    # a bit at ε∞ then binary RR at ε₁ is Duchi's bit with C = C∞ C₁ (P(+) = 1/2 + t/(2 C∞ C₁)),
    # and its ε is below both layers'
    e = F.two_layer_epsilon(eps, eps1)
    assert e <= min(eps, eps1) * (1 + 1e-12)
    assert math.isclose(F.duchi_scale(e), F.duchi_scale(eps) * F.duchi_scale(eps1), rel_tol=1e-9)


def test_memoised_mean_unbiased_and_stated_stderr_matches_empirical():
    """The contract of daily collection for means. 600 runs; in each, 25 devices with NEW keys
    (so new α and new permanent bits) all holding 123.4 minutes on a coarse grid (points = 7: a
    grid point every 100 minutes, every device rounds to 100 or 200, 200 with probability
    0.234 over α), ε∞ = 2, ε₁ = 1.5, fresh instantaneous flips. Over α and both layers a report
    is Duchi's bit at the composed ε, so the exact variance of a run's mean is
    (C∞²C₁² − t²) half_width² / 25.
    (1) The mean of the 600 estimates is within 5 empirical standard errors of 123.4 (false
        alarm 6e-7).
    (2) The empirical variance against the exact one: (R − 1) s²/σ² is chi-square with 599 dof
        (nearly: the estimate is a sum of 25 bits); [0.80, 1.22] holds it with false alarm
        < 1e-4.
    (3) The stated mean_stderr (root mean square over the runs) within 10% of the empirical
        standard deviation: the latter's relative standard error is 1/sqrt(2 · 599) = 2.9%, so
        10% is 3.5 of them (two-sided false alarm 5e-4); and within 3% of the exact one.
    A memoised report costs about 1 ms (one kernel call per device and grid point), hence the
    sizes."""
    oracle = ldp.MeanOracle("bitmean", 2.0, BOUNDS, instantaneous_epsilon=1.5, points=7)
    runs, n, value = 600, 25, 123.4
    rng = dpnoise.default_rng(11)
    est, stated = np.empty(runs), np.empty(runs)
    for r in range(runs):
        batch = [oracle.client(rng, allow_insecure=True, device_key=device(5, r, i)).privatize([value])
                 for i in range(n)]
        agg = oracle.aggregator().add(ldp.Reports.concat(batch))
        est[r], stated[r] = agg.mean(), agg.mean_stderr()
    t = (2 * value - BOUNDS[0] - BOUNDS[1]) / (BOUNDS[1] - BOUNDS[0])
    exact = math.sqrt((F.duchi_scale(oracle.estimator_epsilon) ** 2 - t * t) / n) * oracle.half_width
    emp = est.std(ddof=1)
    assert abs(est.mean() - value) <= 5 * emp / math.sqrt(runs), (est.mean(), emp)
    assert 0.80 <= (emp / exact) ** 2 <= 1.22, (emp, exact)
    rms_stated = math.sqrt(np.mean(stated ** 2))
    assert abs(rms_stated / emp - 1) < 0.10, (rms_stated, emp)
    assert abs(rms_stated / exact - 1) < 0.03, (rms_stated, exact)
