"""``constant_time=True`` on the heavy-hitters methods over integer keys ("pem", "treehist",
"bitstogram"; integer items): the report law of the exact client
(group shares, kept buckets), an (ε, (1 + e^ε)·2^-64) loss, a recorded parameter, heavy hitters
still found; refused over str/bytes items and by string_pem (encoding and hashing a string take
time that depends on its length). Fixed seeds; each statistical check states its false-alarm rate."""
import math

import numpy as np
import pytest

import dpnoise
from dpnoise import ldp
from dpnoise.accounting import ApproxDP, PrivacyBudget

METHODS = ["pem", "treehist", "bitstogram"]


def make(method, constant_time=True, **options):
    return ldp.HeavyHitters(method, 3.0, 16, k=2, k_prime=64, pool_key=3, constant_time=constant_time, **options)


@pytest.mark.parametrize("method", METHODS)
def test_report_law_matches_the_exact_client(method):
    # 40,000 users holding one item. Each group's share and the share of reports that keep the
    # true bucket h_j(key) are binomial; |z| < 5 per check (false-alarm rate < 6e-7 per check,
    # < 1e-4 over the <= 35 checks of this test)
    hh = make(method)
    n, x = 40_000, 0xBEEF
    items = np.full(n, x, dtype=np.int64)
    rep = hh.client(dpnoise.default_rng(1), allow_insecure=True).privatize(items).data
    w = np.array([gr.weight for gr in hh.groups], dtype=float)
    share = np.bincount(rep["groups"], minlength=len(hh.groups))
    z = (share - n * w / w.sum()) / np.sqrt(n * (w / w.sum()) * (1 - w / w.sum()))
    assert np.all(np.abs(z) < 5)
    kp = np.array([gr.k_prime for gr in hh.groups])
    assert np.all(rep["indices"] < kp[rep["groups"]]) and np.all((rep["values"] >= 0) & (rep["values"] < hh.g))
    aux = hh._aux(items.astype(np.uint64))
    keys = np.array([(int(a) << 1 | (x >> hh.groups[l].shift) & 1) if hh.groups[l].kind else x >> hh.groups[l].shift
                     for l, a in zip(rep["groups"], aux if aux is not None else np.zeros(n, dtype=np.uint64))],
                    dtype=np.uint64)
    truth = dpnoise._core.ldp.hh_hash(hh.pool, rep["indices"], keys, hh.g)
    p, _, _ = hh._pq()
    kept = int(np.sum(rep["values"] == truth))
    assert abs(kept - n * p) < 5 * math.sqrt(n * p * (1 - p))


@pytest.mark.parametrize("method", METHODS)
def test_loss_parameter_and_recovery(method):
    hh = make(method)
    assert hh.params()["constant_time"] is True and "constant_time" not in make(method, False).params()
    loss = hh.privacy_loss()
    assert isinstance(loss, ApproxDP) and loss.epsilon == 3.0
    assert loss.delta == pytest.approx((1 + math.exp(3.0)) * 2.0**-64, rel=1e-9)
    assert ldp.Configuration.from_json(hh.to_json()) == hh and hh != make(method, False)
    # 20,000 users, two heavy items of 40% each at ε = 3: found exactly as by the exact client
    # (each heavy prefix > 30 sd above the noise: false-alarm rate < 1e-12)
    g = np.random.default_rng(4)
    items = np.where(g.random(20_000) < 0.8, g.choice([4242, 777], size=20_000), g.integers(0, 1 << 16, size=20_000))
    budget = PrivacyBudget(1e6, 1.0)
    agg = hh.aggregator().add(hh.client(dpnoise.default_rng(5), allow_insecure=True, budget=budget).privatize(items))
    assert {h.item for h in agg.top(2)} == {4242, 777}
    assert budget.spent_epsilon == pytest.approx(3.0 * 20_000)


def test_refused_where_the_time_depends_on_the_item():
    for method in METHODS:
        for item_type, length in (("str", 16), ("str", 8), ("bytes", 4)):
            with pytest.raises(ValueError, match=rf"constant_time=True.*over {item_type} items"):
                ldp.HeavyHitters(method, 2.0, item_type=item_type, max_length=length, constant_time=True)
        with pytest.raises(TypeError, match="constant_time"):
            ldp.HeavyHitters(method, 2.0, constant_time="yes")
        with pytest.raises(ValueError, match="constant_time"):  # (1 + e^ε) 2^-64 >= 1: no guarantee left
            ldp.HeavyHitters(method, 50.0, constant_time=True)
        assert ldp.HeavyHitters(method, 2.0, item_bits=40, constant_time=True).params()["constant_time"] is True
    with pytest.raises(ValueError, match=r"constant_time=True.*frequency: 'cms', 'dbitflip',.* 'grr'"):
        ldp.HeavyHitters("string_pem", 2.0, constant_time=True)
