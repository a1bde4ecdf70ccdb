"""The frequency-oracle framework (dpnoise.ldp) on its first protocol, k-ary randomized response:
reports and aggregators, merge, serialisation, estimates and their variance, bad input."""
import math

import numpy as np
import pytest

import dpnoise
from dpnoise import ldp
from ldp_estimates import assert_unbiased_with_stated_variance

EPS = 2.0


def grr(d=10, eps=EPS):
    return ldp.FrequencyOracle("grr", eps, d)


def client(fo, seed=1):
    return fo.client(dpnoise.default_rng(seed), allow_insecure=True)


def test_grr_privacy_ratio_is_exactly_e_eps():
    # the randomizer's pmf: p on the true item, q elsewhere; every ratio p/q = e^gamma <= e^eps
    for d in (2, 3, 17):
        fo = grr(d, 1.3)
        p, q = fo._pq()[:2]
        assert math.isclose(p + (d - 1) * q, 1.0)
        assert p / q == pytest.approx(math.exp(float(fo.gamma)), rel=1e-12)
        assert float(fo.gamma) <= 1.3


def test_grr_kernel_law_chi_square():
    """The randomizer's output law against its pmf: chi-square, 9 d.o.f., alpha = 1e-6 (critical
    value 49.3)."""
    fo = grr(10)
    r = client(fo, 3).privatize(np.full(200_000, 4))
    counts = np.bincount(r.data["values"], minlength=10)
    p, q = fo._pq()[:2]
    expected = np.where(np.arange(10) == 4, p, q) * 200_000
    assert float(((counts - expected) ** 2 / expected).sum()) < 49.3


def test_unbiased_and_variance_matches_formula():
    """2,000 independent seeded runs of 1,000 users (d = 5): the mean error of every item's
    estimate is within 4.5 standard errors of 0 and the empirical variance within 10% of
    variance() (false alarm: < 1e-4 per item for the mean; the variance's relative standard
    error here is 3.2%, so 10% is over 3 of them)."""
    d, runs, n = 5, 2000, 1000
    fo = grr(d)
    truth = np.repeat(np.arange(d), [400, 300, 200, 80, 20])
    rep = client(fo, 7).privatize(np.tile(truth, runs)).data["values"].reshape(runs, n)
    est = assert_unbiased_with_stated_variance(fo, np.stack([np.bincount(r, minlength=d) for r in rep]), truth)
    # and the aggregator computes exactly this estimate
    agg = fo.aggregator()
    agg.add(ldp.Reports("grr", fo.fingerprint(), n, {"values": rep[0]}))
    assert np.allclose(agg.estimate(), est[0])


def test_other_configuration_refused_and_aggregator_unchanged():
    fo, other = grr(6), grr(6, eps=1.0)
    agg = fo.aggregator().add(client(fo).privatize([0, 1, 2]))
    before = agg.to_bytes()
    with pytest.raises(ValueError, match="different configuration"):
        agg.add(client(other).privatize([0, 1]))
    with pytest.raises(ValueError, match="different configuration"):
        agg.merge(other.aggregator())
    bad = ldp.Reports("grr", fo.fingerprint(), 2, {"values": np.array([0, 6])})
    with pytest.raises(ValueError, match=r"\[0, 6\)"):
        agg.add(bad)
    with pytest.raises(ValueError):
        agg.add(ldp.Reports("grr", fo.fingerprint(), 3, {"values": np.array([0, 1])}))
    with pytest.raises(TypeError):
        agg.add([0, 1])
    assert agg.to_bytes() == before


@pytest.mark.parametrize("items,error", [
    ([0, 10], ValueError), ([-1], ValueError), ([0.5], TypeError), (["a"], TypeError),
    (np.zeros((2, 2), dtype=int), ValueError),
])
def test_bad_items(items, error):
    with pytest.raises(error, match="items"):
        client(grr(10)).privatize(items)


def test_bad_parameters_and_generators():
    with pytest.raises(ValueError, match="protocol"):
        ldp.FrequencyOracle("nope", 1.0, 10)
    for eps in (0, -1, float("nan"), 1000):
        with pytest.raises((ValueError, TypeError), match="epsilon"):
            ldp.FrequencyOracle("grr", eps, 10)
    for d in (1, 2.5, 2**41):
        with pytest.raises((ValueError, TypeError), match="domain_size"):
            ldp.FrequencyOracle("grr", 1.0, d)
    with pytest.raises(TypeError, match="option"):
        ldp.FrequencyOracle("grr", 1.0, 10, hashes=3)
    with pytest.raises(dpnoise.InsecureGeneratorError):
        grr().client(dpnoise.default_rng(1))
    assert grr().client().rng.is_secure


def test_recommend_and_privacy_loss():
    assert ldp.recommend(2.0, 10) == "grr"
    assert grr().privacy_loss().pure_epsilon() == EPS
    assert "grr" in ldp.protocols()


# -- report batches on the wire ----------------------------------------------------------------
def test_reports_round_trip_through_bytes():
    fo = grr()
    items = np.random.default_rng(5).integers(0, fo.domain_size, 500)
    reports = client(fo, 6).privatize(items)
    again = dpnoise.ldp.Reports.from_bytes(reports.to_bytes())
    assert again.protocol == reports.protocol and again.params == reports.params and again.n == 500
    np.testing.assert_array_equal(again.data["values"], reports.data["values"])
    a = fo.aggregator().add(reports)
    b = fo.aggregator().add(again)
    np.testing.assert_array_equal(a.estimate(), b.estimate())


def test_corrupt_report_bytes_are_refused():
    fo = grr()
    blob = client(fo, 7).privatize(np.arange(10) % fo.domain_size).to_bytes()
    for i in (0, 14, len(blob) // 2, len(blob) - 1):
        bad = bytearray(blob)
        bad[i] ^= 0x40
        with pytest.raises(ValueError):
            dpnoise.ldp.Reports.from_bytes(bytes(bad))
    for cut in (0, 10, len(blob) - 1):
        with pytest.raises(ValueError):
            dpnoise.ldp.Reports.from_bytes(blob[:cut])
    with pytest.raises(TypeError, match="bytes"):
        dpnoise.ldp.Reports.from_bytes("text")
    with pytest.raises(ValueError, match="magic"):  # an aggregator state is not a report batch
        dpnoise.ldp.Reports.from_bytes(fo.aggregator().to_bytes())


def test_reports_from_bytes_refuse_object_arrays():
    from dpnoise.ldp import _wire as W

    fo = grr()
    header = {"protocol": "grr", "n": 1, "params": W.jsonable(dict(fo.fingerprint()))}
    blob = W.frame(W.FREQUENCY_REPORTS, header, [("values", np.zeros(1, dtype=np.int64))])
    assert dpnoise.ldp.Reports.from_bytes(blob).n == 1
    forged = blob.replace(b'"<i8"', b'"|O8"')  # re-checksummed below, so only the dtype check can refuse it
    body = forged[:-32]
    import hashlib

    with pytest.raises(ValueError, match="dtype"):
        dpnoise.ldp.Reports.from_bytes(body + hashlib.sha256(body).digest())


def test_aggregator_from_bytes_of_the_wrong_class():
    state = grr().aggregator().to_bytes()
    assert isinstance(dpnoise.ldp.Aggregator.from_bytes(state), dpnoise.ldp.Aggregator)

    class Other(dpnoise.ldp.Aggregator):
        pass
    with pytest.raises(ValueError, match="not a Other"):
        Other.from_bytes(state)
