"""Regression tests for the LDP and heavy-hitters defects found by adversarial use (issue 23,
defects 2, 3, 4, 8, 9, 10, 11, 12 and the group-size part of 1). Each failed on 0.4.0."""
import numpy as np
import pytest

import dpnoise
from dpnoise import ldp


def rng(seed=0):
    return dpnoise.default_rng(seed)


@pytest.mark.parametrize("method", ldp.heavy_hitters.methods())
@pytest.mark.parametrize("devices", [1, 2, 5, 17])
def test_top_on_a_tiny_population_returns_what_it_can(method, devices):
    # defect 2: "group 0 has none" from top() when a group had no users
    hh = ldp.HeavyHitters(method, 4.0, 16, k=4, k_prime=64)
    agg = hh.aggregator().add(hh.client(rng(devices), allow_insecure=True).privatize(np.arange(devices) % 3))
    found = agg.top()
    assert len(found) <= 4
    assert all(isinstance(h.estimate, float) and h.ci_low <= h.estimate <= h.ci_high for h in found)
    # above() returns found items only, largest first
    floor = min((h.estimate for h in found), default=0.0)
    above = agg.above(floor)
    assert [h.estimate for h in above] == sorted((h.estimate for h in above), reverse=True)
    assert {h.item for h in found} <= {h.item for h in above} and all(h.estimate >= floor for h in above)


def test_group_sizes_are_computed_once_per_state():
    # defect 1 (TreeHist recounted every group's size once per level, in Python ints)
    hh = ldp.HeavyHitters("treehist", 4.0, 16, k=4, k_prime=64)
    agg = hh.aggregator().add(hh.client(rng(1), allow_insecure=True).privatize(np.arange(2000) % 5))
    first = agg.group_sizes()
    assert agg.group_sizes() is first and int(first.sum()) == 2000
    agg.add(hh.client(rng(2), allow_insecure=True).privatize(np.arange(10)))
    assert agg.group_sizes() is not first and int(agg.group_sizes().sum()) == 2010


def test_zmatrix_state_is_capped():
    # defect 3: columns up to 2^36 and planes up to 16 (a 40-146 GB aggregator) were accepted
    with pytest.raises(ValueError, match="2\\^30 bytes"):
        ldp.FrequencyOracle("zmatrix", 1.0, 100, columns=2**36)
    with pytest.raises(ValueError, match="2\\^30 bytes"):
        ldp.FrequencyOracle("zmatrix", 1.0, 100, columns=2**30, planes=16)
    ldp.FrequencyOracle("zmatrix", 1.0, 100, columns=2**30, planes=7)  # exactly 1 GiB: accepted


@pytest.mark.parametrize("epsilon", [16.0, 17.0, 30.0, 60.0, 100.0])
def test_default_flh_works_at_every_accepted_epsilon(epsilon):
    # defect 4: "use a smaller k_prime or g" for ε >= ~16.7 with neither option given
    fo = ldp.FrequencyOracle("flh", epsilon, 1000)
    assert fo.g <= 4096 and fo.options["k_prime"] * fo.g <= 2**24
    agg = fo.aggregator().add(fo.client(rng(3), allow_insecure=True).privatize(np.arange(200) % 10))
    assert abs(agg.estimate([0])[0] - 20) < 10


@pytest.mark.parametrize("name", ldp.protocols())
def test_bool_items_are_refused(name):
    # defect 8: FO clients took True as 1 (docs/ldp.md says TypeError; heavy hitters refuse them)
    client = ldp.FrequencyConfiguration.registered()[name].example().client(rng(), allow_insecure=True)
    with pytest.raises(TypeError, match="items"):
        client.privatize(np.array([True, False]))
    with pytest.raises(TypeError, match="items"):
        client.privatize([True, 2])


def test_zmatrix_empty_batch_with_empty_columns():
    # defect 9: "columns must be integers, got dtype float64" for privatize([], columns=[])
    fo = ldp.FrequencyOracle("zmatrix", 1.0, 10, columns=64)
    reports = fo.client(rng(), allow_insecure=True).privatize([], columns=[])
    assert reports.n == 0 and fo.aggregator().add(reports).n == 0


@pytest.mark.parametrize("method", ldp.heavy_hitters.methods())
def test_large_k_does_not_blame_an_option_the_user_did_not_pass(method):
    # defect 10: HeavyHitters("pem", 4.0, k=2**16) said "keep must be in [65536, 65536], got 131072"
    hh = ldp.HeavyHitters(method, 4.0, 32, k=2**16, k_prime=16)
    assert hh.tracked() <= 2**16


@pytest.mark.parametrize("family,name", [(f, n) for f, b in sorted(ldp.Configuration.families().items())
                                         for n in sorted(b.registered())])
def test_merge_into_itself_is_refused(family, name):
    # defect 11: merge(self) silently doubled every count
    config = ldp.Configuration.families()[family].registered()[name].example()
    agg = config.aggregator().add(config.client(rng(4), allow_insecure=True).privatize(config.example_items(30)))
    with pytest.raises(ValueError, match="itself"):
        agg.merge(agg)
    assert agg.n == 30


def test_public_keys_default_to_fresh_random_keys():
    # defect 12: zmatrix, FLH and heavy hitters defaulted to key 0 (a fixed public matrix or pool
    # turns the cross terms into a fixed bias); the key is recorded in params()
    a, b = ldp.FrequencyOracle("zmatrix", 1.0, 10), ldp.FrequencyOracle("zmatrix", 1.0, 10)
    assert a.options["public_key"] != b.options["public_key"] and len(a.params()["public_key"]) == 32
    a, b = ldp.FrequencyOracle("flh", 1.0, 10), ldp.FrequencyOracle("flh", 1.0, 10)
    assert a.params()["pool_key"] != b.params()["pool_key"]
    a, b = ldp.HeavyHitters("pem", 4.0, 16), ldp.HeavyHitters("pem", 4.0, 16)
    assert a.params()["pool_key"] != b.params()["pool_key"]
    # an explicit key is honoured, and a configuration rebuilt from its params is the same one
    assert ldp.FrequencyOracle("flh", 1.0, 10, pool_key=5).params()["pool_key"] == 5
    assert ldp.Configuration.from_json(a.to_json()) == a


@pytest.mark.parametrize("name", ldp.protocols())
def test_frequency_oracles_have_top_and_above(name):
    # issue 22 item 4: the same records as heavy hitters (item, estimate, stderr, interval)
    # margins of at least 5 standard errors (about 100 here), whatever the random public keys
    fo = ldp.FrequencyConfiguration.registered()[name].example(4.0, 16)
    items = np.repeat(np.arange(16), [4000, 3000, 2000] + [10] * 13)
    agg = fo.aggregator().add(fo.client(rng(5), allow_insecure=True).privatize(items))
    top = agg.top(3)
    assert [h.item for h in top] == [0, 1, 2]
    est, se = agg.estimate(), agg.stderr()
    for h in top:
        assert h.estimate == est[h.item] and h.stderr == pytest.approx(se[h.item])
        assert h.ci_low < h.estimate < h.ci_high
    assert [h.item for h in agg.above(1500)] == [0, 1, 2]
    assert [h.item for h in agg.top(16)] == list(np.argsort(-est, kind="stable"))
    with pytest.raises(ValueError, match="m must be"):
        agg.top(17)


@pytest.mark.parametrize("name", ["cms", "hcms"])
def test_sketch_estimates_of_given_items_do_not_enumerate_the_domain(name):
    # issue 22 item 6: estimate(items) computed all d estimates (8 TiB at d = 2^40)
    fo = ldp.FrequencyOracle(name, 2.0, 2**40, hashes=32, width=256)
    items = np.array([5, 2**39 + 3, 2**40 - 1] * 200)
    agg = fo.aggregator().add(fo.client(rng(6), allow_insecure=True).privatize(items))
    est = agg.estimate([5, 2**39 + 3, 2**40 - 1, 77])
    assert est.shape == (4,) and np.all(np.abs(est[:3] - 200) < 150)
    small = ldp.FrequencyOracle(name, 2.0, 500, hashes=32, width=256)
    a = small.aggregator().add(small.client(rng(7), allow_insecure=True).privatize(np.arange(400) % 50))
    np.testing.assert_allclose(a.estimate([0, 7, 499]), a.estimate()[[0, 7, 499]])


def test_zmatrix_small_batches_are_checked_before_the_core_adds_in_place():
    # a one- or two-report add must not copy the state (issue 21: 310 ms at W = 2^30), so the
    # running column sums are checked first; an intermediate overflow is refused, state unchanged
    fo = ldp.FrequencyOracle("zmatrix", 1.0, 10, columns=1 << 16, planes=2, public_key=9)
    agg = fo.aggregator()
    ones = fo.reports({"columns": np.full(3, 5, np.int64), "y": np.ones(3, np.int8)}, 3)
    for i in range(3):
        agg.add(fo.reports({"columns": np.array([5]), "y": np.array([1], np.int8)}, 1))
    before = agg.to_bytes()
    with pytest.raises(dpnoise.CapacityError, match="planes"):
        agg.add(fo.reports({"columns": np.array([5, 5]), "y": np.array([1, -1], np.int8)}, 2))  # 4 on the way
    assert agg.to_bytes() == before
    agg.add(fo.reports({"columns": np.array([5, 5]), "y": np.array([-1, 1], np.int8)}, 2))  # 2 then 3: fine
    assert agg._column_values(np.array([5]))[0] == 3 and agg.n == 5
    with pytest.raises(ValueError):  # a CapacityError is a ValueError too
        agg.add(ones)
