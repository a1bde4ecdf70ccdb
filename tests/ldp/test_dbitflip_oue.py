"""dBitFlip with optimized unary encoding's bit channel ("dbitflip_oue"): a protocol variant added
with no list edited (the contract suite, tests/ldp/test_contract.py, runs it for being
registered: round trips, unbiasedness and the stated variance). Here: the report law of both
kernel rows, the privacy ratio, the variance it states against SUE's, and daily collection.
Statistical checks use fixed seeds and state their false-alarm rates."""
import itertools
import math

import numpy as np
import pytest

import dpnoise
from dpnoise import ldp

EPS, D, B = 2.0, 8, 4
N = 40_000


def config(**opts):
    return ldp.FrequencyOracle("dbitflip_oue", EPS, D, bits=B, pool_key=3, **opts)


@pytest.mark.parametrize("constant_time", [False, True])
def test_report_law_is_oue_on_the_row(constant_time):
    """40,000 users holding item 0: in rows holding 0, its bit is 1 w.p. 1/2, every other bit
    w.p. q = 1/(e^ε + 1); in rows without 0, every bit w.p. q. Each of the 2B frequencies is
    within 5 standard errors (two-sided 5.7e-7 each, 8 checks: false alarm < 5e-6)."""
    fo = config(constant_time=constant_time)
    reports = fo.client(dpnoise.default_rng(11), allow_insecure=True).privatize(np.zeros(N, dtype=np.int64))
    rows = fo.pool[reports.data["indices"]]
    bits = (reports.data["bits"][:, None] >> np.arange(B, dtype=np.uint64)) & np.uint64(1)
    q = 1 / (math.exp(EPS) + 1)
    hit = rows == 0
    checked = {True: 0, False: 0}
    for t in range(B):  # (the item sits at one position of the rows that hold it)
        for holds, p in ((True, 0.5), (False, q)):
            sel = bits[hit[:, t] == holds, t].astype(np.float64)
            if sel.size:
                assert sel.size > 1000
                assert abs(sel.mean() - p) < 5 * math.sqrt(p * (1 - p) / sel.size), (t, holds, sel.mean(), p)
                checked[holds] += 1
    assert checked[True] >= 1 and checked[False] == B
    assert fo.kernels is type(fo).kernel_table.row(constant_time)


def test_privacy_ratio_is_exactly_e_epsilon():
    """For every pair of items and every report of a row, P(report | x) / P(report | x') <= e^γ
    (γ the exact rational ε the kernels use), with equality for two items both in the row."""
    fo = config()
    p, q, _ = fo._pq()
    row = fo.pool[0]
    worst = 0.0
    for x, y in itertools.permutations(list(range(D)), 2):
        for report in itertools.product((0, 1), repeat=B):
            def prob(item):
                return math.prod((p if row[t] == item else q) if s else (1 - (p if row[t] == item else q))
                                 for t, s in enumerate(report))
            worst = max(worst, prob(x) / prob(y))
    assert worst == pytest.approx(math.exp(float(fo.gamma)), rel=1e-12)


def test_states_oue_variance_below_sue_and_supports_the_variants():
    sue = ldp.FrequencyOracle("dbitflip", EPS, 64, bits=8, pool_key=1)
    oue = ldp.FrequencyOracle("dbitflip_oue", EPS, 64, bits=8, pool_key=1)
    e = math.exp(EPS)
    assert oue.variance_per_user() == pytest.approx(4 * e / ((e - 1) ** 2 * (8 / 64)), rel=1e-12)
    assert oue.variance_per_user() < sue.variance_per_user()
    assert type(oue).supports("constant_time") and type(oue).supports("daily")
    assert oue.privacy_loss() == dpnoise.accounting.PureDP(EPS)
    assert oue != sue and ldp.Configuration.from_json(oue.to_json()) == oue


def test_daily_collection_is_unbiased_and_memoised():
    """Two layers (ε∞ = 2, ε₁ = 1): 200 seeded runs of 2,000 users, the mean error of each of
    the 8 items within 4.5 standard errors of 0 (two-sided 6.8e-6 each: false alarm < 6e-5);
    a device with a key repeats its permanent answer."""
    truth = np.repeat(np.arange(D), [800, 500, 300, 200, 100, 60, 30, 10])
    errors = []
    for r in range(200):
        fo = ldp.FrequencyOracle("dbitflip_oue", EPS, D, bits=B, pool_key=r, instantaneous_epsilon=1.0)
        agg = fo.aggregator().add(fo.client(dpnoise.default_rng(500 + r), allow_insecure=True).privatize(truth))
        errors.append(agg.estimate() - np.bincount(truth, minlength=D))
    errors = np.array(errors)
    se = errors.std(axis=0, ddof=1) / math.sqrt(len(errors))
    assert (np.abs(errors.mean(axis=0)) < 4.5 * se).all()
    fo = config()
    key = bytes(range(32))
    a = fo.client(dpnoise.default_rng(1), allow_insecure=True, device_key=key).privatize([5, 5, 2])
    b = fo.client(dpnoise.default_rng(2), allow_insecure=True, device_key=key).privatize([5])
    assert a.data["bits"][0] == a.data["bits"][1] == b.data["bits"][0]
    assert a.data["indices"][0] == b.data["indices"][0]
