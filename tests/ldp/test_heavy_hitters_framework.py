"""The heavy-hitters framework: the 64-bit hash family, the client's report distribution (the
privacy guarantee), reports and states (serialisation, corruption, other configurations,
merge) and the estimates' confidence intervals.

Statistical tests use fixed seeds; each states its false-alarm rate (for a correct
implementation, the probability that the assertion fails on a fresh seed)."""
import math

import numpy as np
import pytest

import dpnoise
from dpnoise import _core
from dpnoise.accounting.losses import PureDP
from dpnoise.ldp import HeavyHitters, HHAggregator, HHReports


def client(hh, seed=0):
    return hh.client(dpnoise.default_rng(seed), allow_insecure=True)


def test_hash_uniform_and_support_matches_bruteforce():
    hh = HeavyHitters("pem", 4.0, item_bits=32, k_prime=64)
    pool = hh.pool
    assert pool.shape == (64, 4) and pool.dtype == np.uint64
    keys = np.arange(200_000, dtype=np.uint64)  # structured (consecutive) keys
    g = 7
    b = _core.ldp.hh_hash(pool, np.full(keys.size, 3), keys, g)
    obs = np.bincount(b, minlength=g)
    exp = keys.size / g
    chi2 = float(((obs - exp) ** 2 / exp).sum())
    assert chi2 < 22.46  # chi-square, 6 d.f., alpha = 0.001
    # hh_support == the sum over pool rows of counts[j, h_j(key)], by brute force
    rng = np.random.default_rng(1)
    counts = rng.integers(0, 5, size=(64, g)).astype(np.int64)
    counts[5] = 0  # an unused row is skipped
    cand = rng.integers(0, 2**63, size=300, dtype=np.uint64)
    want = np.zeros(cand.size, dtype=np.int64)
    for j in range(64):
        want += counts[j, _core.ldp.hh_hash(pool, np.full(cand.size, j), cand, g)]
    assert np.array_equal(_core.ldp.hh_support(counts, pool, cand, 2), want)
    with pytest.raises(TypeError):
        _core.ldp.hh_support(counts, pool, cand.astype(np.float64), 1)
    with pytest.raises(ValueError):
        _core.ldp.hh_support(counts, pool, np.array([-1]), 1)


def test_report_distribution_privacy():
    # Every report (l, j, y) has y = h_j(key_l(x)) with probability p = e^γ/(e^γ + g − 1), else
    # each other bucket equally: the likelihood ratio of two items is at most p(g − 1)/(1 − p) = e^ε.
    # Checked empirically: the rate of y = h_j(key) is p within 5 sigma (false alarm < 1e-6), and
    # groups are uniform (chi-square alpha = 0.001).
    hh = HeavyHitters("pem", 2.0, item_bits=16, k_prime=32, s0=8, eta=4)
    n = 200_000
    x = np.full(n, 0xBEEF, dtype=np.uint64)
    rep = client(hh, 3).privatize(x)
    l, j, y = rep.data["groups"], rep.data["indices"], rep.data["values"]
    shifts = np.array([gr.shift for gr in hh.groups], dtype=np.uint64)
    keys = x >> shifts[l]
    hit = _core.ldp.hh_hash(hh.pool, j, keys, hh.g) == y
    p, _, _ = hh._pq()
    assert abs(hit.mean() - p) < 5 * math.sqrt(p * (1 - p) / n)
    assert p * (hh.g - 1) / (1 - p) == pytest.approx(math.exp(2.0))
    obs = np.bincount(l, minlength=len(hh.groups))
    exp = n / len(hh.groups)
    assert float(((obs - exp) ** 2 / exp).sum()) < 13.82  # 2 d.f., alpha = 0.001
    assert int(j.max()) < 32 and int(y.max()) < hh.g
    loss = hh.privacy_loss()
    assert isinstance(loss, PureDP) and loss.epsilon == 2.0


def test_secure_rng_required():
    hh = HeavyHitters("pem", 4.0, item_bits=16, k_prime=16)
    with pytest.raises(dpnoise.InsecureGeneratorError):
        hh.client(dpnoise.default_rng(0))
    with pytest.raises(TypeError):
        hh.client(np.random.default_rng(0))
    assert len(hh.client().privatize([1, 2, 3])) == 3


@pytest.mark.parametrize("method", ["pem", "bitstogram", "treehist"])
def test_serialisation_merge_and_bad_input(method):
    hh = HeavyHitters(method, 6.0, item_bits=16, k_prime=64, k=2)
    x = np.array([7] * 500 + [1234] * 300 + list(range(200)), dtype=np.uint16)
    r1, r2 = client(hh, 1).privatize(x), client(hh, 2).privatize(x)
    a = hh.aggregator().add(r1)
    b = hh.aggregator().add(r2)
    both = hh.aggregator().add(r1).add(r2)
    a.merge(b)
    assert a.n == both.n == 2 * x.size
    assert all(np.array_equal(a._state[k], both._state[k]) for k in both._state)
    blob = a.to_bytes()
    c = HHAggregator.from_bytes(blob)
    assert c.n == a.n and c.top(2) == a.top(2)
    # a flipped byte anywhere is refused
    for pos in (0, len(blob) // 2, len(blob) - 1):
        bad = bytearray(blob)
        bad[pos] ^= 1
        with pytest.raises(ValueError):
            HHAggregator.from_bytes(bytes(bad))
    with pytest.raises(TypeError):
        HHAggregator.from_bytes("text")
    # report batches round-trip; corrupt ones are refused
    rb = r1.to_bytes()
    r1b = HHReports.from_bytes(rb)
    assert r1b.n == r1.n and all(np.array_equal(r1b.data[k], r1.data[k]) for k in r1.data)
    with pytest.raises(ValueError):
        HHReports.from_bytes(rb[:-1] + bytes([rb[-1] ^ 1]))
    # another configuration's reports: refused, aggregator unchanged
    other = HeavyHitters(method, 5.0, item_bits=16, k_prime=64, k=2)
    before = {k: v.copy() for k, v in a._state.items()}
    with pytest.raises(ValueError, match="different configuration"):
        a.add(client(other).privatize(x))
    with pytest.raises(ValueError, match="different configuration"):
        a.merge(other.aggregator())
    with pytest.raises(TypeError):
        a.add(x)
    # a tampered batch (out-of-range values) is refused before any change
    d = dict(r1.data)
    d["values"] = d["values"].copy()
    d["values"][3] = hh.g
    with pytest.raises(ValueError, match="buckets"):
        a.add(HHReports(r1.method, r1.params, r1.n, d))
    d = dict(r1.data)
    d["groups"] = d["groups"][:-1]
    with pytest.raises(ValueError, match="groups"):
        a.add(HHReports(r1.method, r1.params, r1.n, d))
    assert a.n == 2 * x.size and all(np.array_equal(a._state[k], before[k]) for k in before)
    with pytest.raises(ValueError, match="m must be"):
        a.top(hh.tracked() + 1)
    assert hh.aggregator().top(1) == []


def test_estimates_unbiased_with_honest_ci():
    # 40 independent runs of a 1-level PEM (12-bit items, all estimated): the true count of the
    # heavy item lies in the 95% CI in most runs, and the mean error is within 4 standard errors
    # of the mean (false alarm < 1e-4 each; the CI check: fewer than 30 of 40 covered has
    # probability < 1e-4 for a 95% interval).
    hh = HeavyHitters("pem", 2.0, item_bits=12, k_prime=512, k=1)
    assert len(hh.groups) == 1
    x = np.array([100] * 2000 + list(range(1000, 3000)) * 4, dtype=np.int64)
    covered, errs, ses = 0, [], []
    for s in range(40):
        top = hh.aggregator().add(client(hh, 100 + s).privatize(x)).top(1)[0]
        assert top.item == 100
        covered += top.ci_low <= 2000 <= top.ci_high
        errs.append(top.estimate - 2000)
        ses.append(top.stderr)
    assert covered >= 30
    assert abs(np.mean(errs)) < 4 * np.mean(ses) / math.sqrt(40)


def test_consistent_checksum_but_bad_content_is_refused():
    # a state re-framed with a valid checksum but tampered content: negative counts, counts that
    # do not add up to n, a misnamed group, another dtype; report batches with wrong dtypes
    from dpnoise.ldp._wire import HEAVY_HITTERS_STATE as _STATE_MAGIC
    from dpnoise.ldp._wire import frame as _frame, jsonable as _jsonable

    hh = HeavyHitters("pem", 4.0, item_bits=12, k_prime=8, k=1)
    agg = hh.aggregator().add(client(hh).privatize(np.arange(100) % 7))
    header = {"method": "pem", "params": _jsonable(hh.params()), "n": agg.n}

    def frame(state, n=agg.n):
        return _frame(_STATE_MAGIC, {**header, "n": n}, sorted(state.items()))

    good = dict(agg._state)
    assert HHAggregator.from_bytes(frame(good)).n == 100
    neg = {k: v.copy() for k, v in good.items()}
    k0 = sorted(neg)[0]
    neg[k0][0, 0] -= 1000
    with pytest.raises(ValueError, match="does not match"):
        HHAggregator.from_bytes(frame(neg))
    with pytest.raises(ValueError, match="add up"):
        HHAggregator.from_bytes(frame(good, n=101))
    with pytest.raises(ValueError, match="arrays do not match"):
        HHAggregator.from_bytes(frame({"counts_999": good[k0]}))
    with pytest.raises(ValueError, match="does not match"):
        HHAggregator.from_bytes(frame({k: v.astype(np.int32) for k, v in good.items()}))
    bad_params = _frame(_STATE_MAGIC, {**header, "params": {**header["params"], "k_prime": 0}}, sorted(good.items()))
    with pytest.raises(ValueError, match="bad parameters"):
        HHAggregator.from_bytes(bad_params)
    rep = client(hh).privatize([1, 2, 3])
    for name in ("groups", "indices", "values"):
        d = dict(rep.data)
        d[name] = d[name].astype(np.float64)
        with pytest.raises(ValueError, match=name):
            hh.aggregator().add(HHReports(rep.method, rep.params, rep.n, d))


def test_tiny_epsilon_and_forged_headers():
    # the smallest ε accepted, 2^-50 (e^ε − 1 in floats loses 2 of its bits; expm1 none):
    # p − 1/g is computed through expm1, so the estimates stay finite
    hh = HeavyHitters("pem", 2.0 ** -50, item_bits=8, k_prime=4, k=1)
    agg = hh.aggregator().add(client(hh).privatize(np.arange(50) % 3))
    assert np.all(np.isfinite(agg.estimate([0, 1, 2]))) and np.all(np.isfinite(agg.variance([0, 1, 2])))
    assert agg.top(1) == []  # nothing 50 reports at ε = 2^-50 can tell from 0 (issue #33 item 10)
    # a forged (re-checksummed) header: params of the wrong type, an unknown method
    from dpnoise.ldp._wire import frame as _frame
    from dpnoise.ldp._wire import HEAVY_HITTERS_REPORTS as _REPORTS_MAGIC, HEAVY_HITTERS_STATE as _STATE_MAGIC

    for params in ([1, 2], "x", {"method": "nope"}, {"method": "pem", "epsilon": "x"}):
        for magic, load in ((_STATE_MAGIC, HHAggregator.from_bytes), (_REPORTS_MAGIC, HHReports.from_bytes)):
            with pytest.raises(ValueError, match="corrupt"):
                load(_frame(magic, {"method": "pem", "params": params, "n": 0}, []))
