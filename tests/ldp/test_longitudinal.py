"""Daily collection (issue 22, item 3): memoised clients (``client(device_key=)``), the
instantaneous layer (``instantaneous_epsilon=``), public pools for constant fields, ``budget=``
on clients, and the aggregator's debiasing of both layers."""
import numpy as np
import pytest

import dpnoise
from dpnoise import ldp
from dpnoise.accounting import PrivacyBudget
from dpnoise.ldp.longitudinal import averaging_attack

LONGITUDINAL = ["dbitflip", "flh", "grr", "olh", "oue", "sue"]
# options that fix each configuration's public pool (a random key otherwise)
POOLS = {"olh": {"pool_size": 64, "pool_key": 7}, "flh": {"k_prime": 64, "pool_key": 7},
         "dbitflip": {"bits": 4, "pool_size": 64, "pool_key": 7}}


def key(*path):
    """A device key for tests (seeded: reproducible)."""
    return np.random.default_rng(list(path)).integers(0, 256, 32, dtype=np.uint8).tobytes()


def two_layers(name, d=16, eps=2.0, eps1=1.0, **kw):
    return ldp.FrequencyOracle(name, eps, d, instantaneous_epsilon=eps1, **kw)


def seeded(seed):
    return dpnoise.default_rng(seed)


@pytest.mark.parametrize("name", LONGITUDINAL)
def test_memoised_answer_repeats_and_depends_on_key_and_item(name):
    # without the instantaneous layer a memoised device sends the same report every day
    fo = ldp.FrequencyOracle(name, 2.0, 200, **POOLS.get(name, {}))
    day = [fo.client(seeded(s), allow_insecure=True, device_key=key(1)).privatize([5, 9, 5]) for s in range(3)]
    for r in day[1:]:
        assert r == day[0]
    first = day[0].data
    for f in first:  # the same item gives the same row within a batch
        np.testing.assert_array_equal(first[f][0], first[f][2])
    # other devices: their answers differ (over 40 devices, nearly surely not all equal)
    others = [fo.client(seeded(0), allow_insecure=True, device_key=key(2, i)).privatize([5]) for i in range(40)]
    assert len({o.to_bytes() for o in others}) > 1


@pytest.mark.parametrize("name", LONGITUDINAL)
def test_instantaneous_layer_varies_and_keeps_the_permanent_answer(name):
    opts = POOLS.get(name, {})
    plain = ldp.FrequencyOracle(name, 2.0, 200, **opts)
    both = ldp.FrequencyOracle(name, 2.0, 200, instantaneous_epsilon=0.5, **opts)
    reports = [both.client(seeded(s), allow_insecure=True, device_key=key(3)).privatize([11]) for s in range(12)]
    assert len({r.to_bytes() for r in reports}) > 1  # consecutive reports differ
    # the two-layer configuration travels (JSON, states) and refuses the one-layer one's reports
    assert ldp.Configuration.from_json(both.to_json()) == both
    agg = both.aggregator().add(ldp.Reports.concat(reports))
    assert ldp.Aggregator.from_bytes(agg.to_bytes()).to_bytes() == agg.to_bytes()
    with pytest.raises(ValueError, match="different configuration"):
        plain.aggregator().add(reports[0])
    # the permanent layer's PRF ignores ε₁: its answer is the plain configuration's memoised one
    perm = plain.client(device_key=key(3)).privatize([11]).data
    for field in ("seeds", "indices"):  # constant fields stay, from the public pool
        if field in perm:
            for r in reports:
                np.testing.assert_array_equal(r.data[field], perm[field])
    if "seeds" in perm:
        assert any((row == perm["seeds"][0]).all() for row in plain.pool)


def test_privacy_loss_states_both_layers():
    fo = two_layers("grr", eps=3.0, eps1=0.5)
    loss = fo.privacy_loss()
    assert (loss.epsilon, loss.permanent_epsilon, loss.instantaneous_epsilon) == (0.5, 3.0, 0.5)
    assert loss.to_dict() == {"type": "PureDP", "epsilon": 0.5}
    assert ldp.FrequencyOracle("grr", 3.0, 16).privacy_loss().epsilon == 3.0
    again = ldp.Configuration.from_json(fo.to_json())
    assert again == fo and again.privacy_loss() == loss
    assert fo != ldp.FrequencyOracle("grr", 3.0, 16)


def test_budget_charged_once_per_report_before_randomness():
    fo = two_layers("grr", eps1=0.5)
    budget = PrivacyBudget(2.0)
    client = fo.client(seeded(4), allow_insecure=True, budget=budget, device_key=key(4))
    client.privatize([1, 2])
    assert budget.spent_epsilon == pytest.approx(1.0)
    # refused items: nothing charged
    with pytest.raises(ValueError):
        client.privatize([99])
    assert budget.spent_epsilon == pytest.approx(1.0)
    client.privatize([3, 3])
    # over budget: refused before any randomness (the generator is where a fresh one would be)
    rng = seeded(5)
    broke = fo.client(rng, allow_insecure=True, budget=budget)
    with pytest.raises(dpnoise.BudgetExceededError):
        broke.privatize([1])
    assert rng.random_raw() == seeded(5).random_raw()
    assert budget.spent_epsilon == pytest.approx(2.0)
    # a plain configuration charges its ε per report
    b2 = PrivacyBudget(10.0)
    ldp.FrequencyOracle("oue", 1.5, 16).client(budget=b2).privatize([0, 1, 2])
    assert b2.spent_epsilon == pytest.approx(4.5)


@pytest.mark.parametrize("bad,exc", [("k" * 32, TypeError), (None, None), (b"x" * 31, ValueError),
                                     (b"x" * 33, ValueError), (12345, TypeError)])
def test_device_key_type_and_length(bad, exc):
    fo = two_layers("grr")
    if exc is None:
        fo.client(device_key=bad)  # None: no memoisation
        return
    with pytest.raises(exc, match="device_key"):
        fo.client(device_key=bad)


def test_refused_up_front_where_not_supported():
    declared = [n for n, c in ldp.FrequencyConfiguration.registered().items() if c.supports("daily")]
    assert set(LONGITUDINAL) <= set(declared)  # (and any protocol added since)
    for name in ldp.protocols():
        if name in declared:
            continue
        fo = ldp.FrequencyConfiguration.registered()[name].example()
        with pytest.raises(ValueError, match="device_key.*'grr'"):
            fo.client(device_key=key(0))
        with pytest.raises(ValueError, match="instantaneous_epsilon.*'grr'"):
            type(fo)(2.0, 64, instantaneous_epsilon=1.0, **type(fo).example_options)
    # OLH memoises only seeds from a public pool
    with pytest.raises(ValueError, match="device_key.*pool"):
        ldp.FrequencyOracle("olh", 2.0, 100).client(device_key=key(0))
    for bad, exc in ((0.0, ValueError), (float("nan"), ValueError), ("1", TypeError)):
        with pytest.raises(exc, match="instantaneous_epsilon"):
            two_layers("grr", eps1=bad)
    with pytest.raises(TypeError, match="budget"):
        two_layers("grr").client(budget=1.0)


def test_heavy_hitters_and_means_refuse_device_key():
    for fam, base in ldp.Configuration.families().items():
        if fam == "frequency":
            continue
        for name, cls in base.registered().items():
            with pytest.raises(ValueError, match="device_key"):
                cls.example().client(device_key=key(0))


def _aggregate_devices(fo, items, run):
    """One aggregation of one memoised report per device (fresh device keys each run)."""
    rng = seeded(1000 + run)
    reports = [fo.client(rng, allow_insecure=True, device_key=key(run, i)).privatize(items[i:i + 1])
               for i in range(items.size)]
    return fo.aggregator().add(ldp.Reports.concat(reports))


@pytest.mark.parametrize("name", LONGITUDINAL)
def test_both_layers_debiased_and_variance_stated(name):
    # 40 independent aggregations of the same 150 memoised devices (new device keys and fresh
    # instantaneous randomness per run). (1) the mean of the 40 estimates is within 5 standard
    # errors of the truth for every item (stated stderr / sqrt(40); false alarm < 16 * 6e-7 under
    # the normal approximation); (2) the empirical variance summed over the 16 items against the
    # stated one lies in [0.7, 1.45] (relative sd of the ratio about sqrt(2/39)/4 ≈ 0.057 for
    # independent items: beyond 5 of them, false-alarm rate < 1e-5 per protocol). A memoised
    # report costs ~1 ms (the C++ kernels' per-call set-up), hence the small sizes.
    fo = two_layers(name, d=16, eps=2.0, eps1=1.5, **POOLS.get(name, {}))
    items = fo.example_items(150, seed=6)
    truth = np.bincount(items, minlength=16)
    runs = [_aggregate_devices(fo, items, r) for r in range(40)]
    est = np.array([a.estimate() for a in runs])
    stated = np.mean([a.variance() for a in runs], axis=0)
    assert np.all(np.abs(est.mean(axis=0) - truth) <= 5 * np.sqrt(stated / len(runs))), (est.mean(axis=0), truth)
    ratio = est.var(axis=0, ddof=1).sum() / stated.sum()
    assert 0.7 <= ratio <= 1.45, ratio


def test_thirty_day_attack_small():
    # OLH ε∞ = 2, d = 2,000, 150 devices, Zipf(1.1) items, 30 days. Fresh randomness: the
    # averaging server's accuracy climbs far above one day's; memoised (+ ε₁ = 1): at most 8
    # points above one day. Fixed seeds: deterministic; the margins (fresh gains ~60 points,
    # memoised ~2 in the benchmark's setting) are many binomial sds (~4 points at n = 150) wide.
    d, n, days = 2000, 150, 30
    prior = np.arange(1, d + 1, dtype=float) ** -1.1
    prior /= prior.sum()
    items = np.random.default_rng(0).choice(d, size=n, p=prior)
    acc = {}
    for label, opts, memo in (("fresh", {}, False), ("memo", {"instantaneous_epsilon": 1.0, "pool_key": 3}, True)):
        fo = ldp.FrequencyOracle("olh", 2.0, d, **opts)
        rng = seeded(7)
        clients = [fo.client(rng, allow_insecure=True, device_key=key(8, i) if memo else None) for i in range(n)]
        days_ = [[c.privatize(items[i:i + 1]) for i, c in enumerate(clients)] for _ in range(days)]
        for t in (1, days):
            reports = [ldp.Reports.concat([days_[k][i] for k in range(t)]) for i in range(n)]
            acc[label, t] = float(np.mean(averaging_attack(fo, reports, prior, memoised=memo) == items))
    assert acc["fresh", days] - acc["fresh", 1] >= 0.3, acc
    assert acc["memo", days] - acc["memo", 1] <= 0.08, acc


def test_every_registered_client_takes_a_budget():
    # every family's client charges privacy_loss() once per report (zmatrix's own privatize too)
    for fam, base in ldp.Configuration.families().items():
        for name, cls in base.registered().items():
            config = cls.example()
            budget = PrivacyBudget(1000.0)
            config.client(seeded(9), allow_insecure=True, budget=budget).privatize(config.example_items(7))
            assert budget.spent_epsilon == pytest.approx(7 * config.privacy_loss().epsilon), (fam, name)
            assert budget.insecure_releases == 1


def test_alpha_point_rounding_unbiased_and_stable():
    from dpnoise.ldp.longitudinal import alpha_point_round

    # over devices (their α), the rounded grid value averages to the value: 4,000 devices at 3.3
    # on the grid 0, 1, ..., 10; rounded values are 3 or 4 (sd <= 0.5): |mean − 3.3| <= 5 sd/sqrt(n)
    # has false-alarm rate < 6e-7
    idx = np.array([alpha_point_round([3.3], (0, 10), 11, key(20, i))[0] for i in range(4000)])
    assert set(idx) <= {3, 4} and abs(idx.mean() - 3.3) <= 5 * 0.5 / np.sqrt(4000)
    # one device: values moving inside its own rounding cell keep the same index
    k = key(21)
    base = alpha_point_round([5.0], (0, 10), 11, k)[0]
    cell = np.linspace(4.0, 5.0, 201)
    idx = alpha_point_round(cell, (0, 10), 11, k)
    # one threshold (the device's α) splits the cell: 4 below it, 5 above, the same every day
    assert base == 5 and set(idx) <= {4, 5} and (np.diff(idx) >= 0).all()
    np.testing.assert_array_equal(idx, alpha_point_round(cell, (0, 10), 11, k))
    thresholds = {float(cell[np.argmax(alpha_point_round(cell, (0, 10), 11, key(22, i)) == 5)]) for i in range(20)}
    assert len(thresholds) > 10  # devices' α differ
    assert list(alpha_point_round([-3, 0, 10, 99], (0, 10), 11, k)) == [0, 0, 10, 10]
    with pytest.raises(ValueError, match="finite"):
        alpha_point_round([np.nan], (0, 10), 11, k)
    with pytest.raises(TypeError, match="device_key"):
        alpha_point_round([1.0], (0, 10), 11, "key")
    with pytest.raises(TypeError, match="values"):
        alpha_point_round(["a"], (0, 10), 11, k)


def test_dbitflip_unbiased_with_uneven_pool_coverage():
    # 64 rows x 4 buckets over d = 50: coverage π_v is 5/64 or 6/64, so the estimator must divide
    # by each bucket's own π_v. 100 fresh aggregations of 1,000 users: every item's mean estimate
    # within 5 stated standard errors (false alarm < 50 * 6e-7) and the summed variance ratio in
    # [0.7, 1.45] (relative sd about sqrt(2/99)/sqrt(50) ≈ 0.02)
    fo = ldp.FrequencyOracle("dbitflip", 1.0, 50, bits=4, pool_size=64, pool_key=3)
    assert fo.coverage.min() < fo.coverage.max()
    items = fo.example_items(1000, seed=1)
    truth = np.bincount(items, minlength=50)
    runs = [fo.aggregator().add(fo.client(seeded(r), allow_insecure=True).privatize(items)) for r in range(100)]
    est = np.array([a.estimate() for a in runs])
    stated = np.mean([a.variance() for a in runs], axis=0)
    assert np.all(np.abs(est.mean(axis=0) - truth) <= 5 * np.sqrt(stated / len(runs)))
    assert 0.7 <= est.var(axis=0, ddof=1).sum() / stated.sum() <= 1.45
    with pytest.raises(ValueError, match="cover every bucket"):
        ldp.FrequencyOracle("dbitflip", 1.0, 50, bits=4, pool_size=12)
    with pytest.raises(ValueError, match="bits"):
        ldp.FrequencyOracle("dbitflip", 1.0, 50, bits=64)


@pytest.mark.parametrize("method", ["pem", "treehist", "bitstogram", "string_pem"])
def test_heavy_hitters_refuse_instantaneous_epsilon_naming_who_has_it(method):
    # was a TypeError (unexpected keyword) from the method's constructor
    with pytest.raises(ValueError, match=r"instantaneous_epsilon .*'grr'"):
        dpnoise.ldp.HeavyHitters(method, 4.0, instantaneous_epsilon=1.0)


@pytest.mark.parametrize("name", ["oue", "sue"])
def test_unary_two_layers_at_the_largest_domain_are_refused_before_any_charge(name):
    # the per-report layer needs a kernel over d + 1 columns (the core caps it at 2^20): at
    # d = 2^20 privatize used to charge the budget and then fail in the kernel
    with pytest.raises(ValueError, match="instantaneous_epsilon"):
        ldp.FrequencyOracle(name, 2.0, 2**20, instantaneous_epsilon=1.0)
    ldp.FrequencyOracle(name, 2.0, 2**20 - 1, instantaneous_epsilon=1.0)  # just below still works
