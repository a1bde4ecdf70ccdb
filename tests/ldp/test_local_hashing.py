"""Local hashing ("olh", "flh"): the hash family, the exact privacy ratio of the randomizer,
its empirical law, unbiasedness and variance, merge, serialisation and bad input.
Statistical tests use fixed seeds; each states its false-alarm rate."""
import math
from fractions import Fraction

import numpy as np
import pytest

import dpnoise
import dpnoise.ldp.local_hashing as lh
from dpnoise import _core, ldp

EPS = 2.0


def client(fo, seed=1):
    return fo.client(dpnoise.default_rng(seed), allow_insecure=True)


def fmix32(x):
    """MurmurHash3's 32-bit finaliser, FLH's public scrambling of items."""
    x ^= x >> 16
    x = (x * 0x85EBCA6B) % 2**32
    x ^= x >> 13
    x = (x * 0xC2B2AE35) % 2**32
    return x ^ (x >> 16)


def py_bucket(a, b, x, g, scramble=False):
    """The hash family by its definition, in Python integers."""
    k = fmix32(x) if scramble else x
    return ((((a * k + b) % 2**64) >> 32) * g) >> 32


def support_numpy(seeds, values, d, g, scramble=False):
    """C(x) = #{i : values_i = h_{seeds_i}(x)} by brute force (the kernel's definition)."""
    n = len(values)
    return np.array([(_core.ldp.local_hash(seeds, np.full(n, x), g, scramble) == values).sum() for x in range(d)])


# ------------------------------------------------------------------------------ hash family
def test_hash_family_matches_its_definition():
    r = np.random.default_rng(0)
    seeds = r.integers(0, 2**64, size=(500, 2), dtype=np.uint64)
    items = r.integers(0, 2**32, size=500)
    for g in (2, 3, 8, 1000, 2**32):
        for scramble in (False, True):
            got = _core.ldp.local_hash(seeds, items, g, scramble)
            want = [py_bucket(int(a), int(b), int(x), g, scramble) for (a, b), x in zip(seeds, items)]
            assert got.tolist() == want
    assert len({fmix32(x) for x in range(100_000)}) == 100_000  # (a bijection: no collisions here)


def test_hash_collision_rate_is_one_over_g():
    """For random seeds, P[h(x) = h(x')] = 1/g (+ < 2^-64 g/4): 400,000 seeds on adjacent and
    distant pairs, binomial z-test at 5 sigma (false alarm < 1e-6 per pair)."""
    r = np.random.default_rng(1)
    m, g = 400_000, 7
    seeds = r.integers(0, 2**64, size=(m, 2), dtype=np.uint64)
    for x, y in ((0, 1), (5, 6), (0, 2**31), (12345, 999_999)):
        same = (_core.ldp.local_hash(seeds, np.full(m, x), g) == _core.ldp.local_hash(seeds, np.full(m, y), g)).mean()
        assert abs(same - 1 / g) < 5 * math.sqrt((1 / g) * (1 - 1 / g) / m)


# ---------------------------------------------------------------------------------- privacy
def _keep_enclosure(g, gamma):
    lo, hi, _, _ = _core._randomized_response_keep_bounds_for_testing(g, gamma.numerator, gamma.denominator, 2)
    return Fraction(lo, 2**128), Fraction(hi, 2**128)


@pytest.mark.parametrize("name,eps,d", [("olh", 2.0, 6), ("olh", 0.7, 5), ("flh", 2.0, 6), ("flh", 1.3, 4)])
def test_exact_ldp_ratio(name, eps, d):
    """Every output (seed, value) has probability P(seed) P(value | h_seed(x)), P(seed) the same
    for every x (uniform 128-bit seed for OLH, uniform pool index for FLH) and P(value | bucket)
    the exact GRR pmf over g buckets (p = e^γ/(e^γ + g − 1) enclosed to 2^-128 by the kernel's
    certified bounds). Over a fixed set of seeds and every pair of inputs, the ratio is at
    most e^ε."""
    opts = {"k_prime": 12, "pool_key": 99} if name == "flh" else {}
    fo = ldp.FrequencyOracle(name, eps, d, **opts)
    g, gamma = fo.g, fo.gamma
    p_lo, p_hi = _keep_enclosure(g, gamma)
    assert p_hi - p_lo < Fraction(1, 2**100)
    if name == "flh":
        seeds, seed_prob = fo.pool, Fraction(1, fo.options["k_prime"])
    else:
        seeds, seed_prob = np.random.default_rng(3).integers(0, 2**64, size=(40, 2), dtype=np.uint64), Fraction(1, 2**128)
    worst = Fraction(0)
    for a, b in seeds:
        buckets = [py_bucket(int(a), int(b), x, g, name == "flh") for x in range(d)]
        for p in (p_lo, p_hi):  # the exact p lies between: the ratio is monotone in p
            q = (1 - p) / (g - 1)
            pmf = [[seed_prob * (p if v == h else q) for v in range(g)] for h in buckets]
            for row in pmf:
                assert sum(row) == seed_prob
            for x in range(d):
                for y in range(d):
                    worst = max(worst, max(pmf[x][v] / pmf[y][v] for v in range(g)))
    assert float(worst) <= math.exp(eps) * (1 + 1e-12)
    assert float(gamma) <= eps


def test_seed_is_drawn_independently_of_the_item():
    """The same generator stream gives the same seeds (indices) whatever the items: the seed is
    drawn first and the randomized response consumes the same bits for every input."""
    items_a = np.zeros(70_000, dtype=np.int64)
    items_b = np.random.default_rng(0).integers(0, 50, size=70_000)
    fo = ldp.FrequencyOracle("olh", EPS, 50)
    assert np.array_equal(client(fo, 5).privatize(items_a).data["seeds"], client(fo, 5).privatize(items_b).data["seeds"])
    fo = ldp.FrequencyOracle("flh", EPS, 50, k_prime=100)
    assert np.array_equal(client(fo, 5).privatize(items_a).data["indices"],
                          client(fo, 5).privatize(items_b).data["indices"])


def test_output_does_not_depend_on_threads():
    items = np.random.default_rng(0).integers(0, 100, size=300_000)
    for name in ("olh", "flh"):
        fo = ldp.FrequencyOracle(name, EPS, 100)
        one = client(fo, 9).privatize(items, threads=1).data
        two = client(fo, 9).privatize(items, threads=2).data
        assert all(np.array_equal(one[k], two[k]) for k in one)


def _chi2(counts, probs):
    expected = np.asarray(probs) * counts.sum()
    return float(((counts - expected) ** 2 / expected).sum())


@pytest.mark.parametrize("name", ["olh", "flh"])
def test_kernel_law_chi_square(name):
    """200,000 users holding item 3: the offset (value − h_seed(3)) mod g is 0 with probability
    p and each other offset with (1 − p)/(g − 1): chi-square, g − 1 = 7 d.o.f., alpha 1e-6
    (critical 40.52). The seeds' top 4 bits (OLH: of a and of b, 15 d.o.f., critical 56.49) or
    the pool indices (FLH, k′ = 64, 63 d.o.f., critical 131.37) are uniform. Family-wise false
    alarm < 3e-6."""
    n = 200_000
    opts = {"k_prime": 64} if name == "flh" else {}
    fo = ldp.FrequencyOracle(name, EPS, 10, **opts)
    g = fo.g
    assert g == 8
    r = client(fo, 11).privatize(np.full(n, 3)).data
    seeds = r["seeds"] if name == "olh" else np.ascontiguousarray(fo.pool[r["indices"]])
    offset = (r["values"] - _core.ldp.local_hash(seeds, np.full(n, 3), g, name == "flh")) % g
    p = fo._pq()[0]
    assert _chi2(np.bincount(offset, minlength=g), [p] + [(1 - p) / (g - 1)] * (g - 1)) < 40.52
    if name == "olh":
        for col in (0, 1):
            top = (r["seeds"][:, col] >> np.uint64(60)).astype(np.int64)
            assert _chi2(np.bincount(top, minlength=16), [1 / 16] * 16) < 56.49
    else:
        assert _chi2(np.bincount(r["indices"], minlength=64), [1 / 64] * 64) < 131.37


# --------------------------------------------------------------------- estimates, variance
TRUTH = np.repeat(np.arange(5), [400, 300, 200, 80, 20])


def test_olh_unbiased_and_variance_matches_formula():
    """4,000 seeded runs of 1,000 users (d = 5): the mean error of every item is within 4.5
    standard errors of 0 and the empirical variance within 10% of variance(n, counts) (false
    alarm < 1e-5 per item for the mean; the variance's relative standard error is 2.2%, so
    10% is 4.5 of them: < 1e-5 per item)."""
    d, runs, n = 5, 4000, 1000
    fo = ldp.FrequencyOracle("olh", EPS, d)
    r = client(fo, 7).privatize(np.tile(TRUTH, runs)).data
    support = np.stack([(_core.ldp.local_hash(r["seeds"], np.full(runs * n, x), fo.g) == r["values"])
                        .reshape(runs, n).sum(axis=1) for x in range(d)], axis=1)
    est = fo.estimate_from_support(support, n)
    true_counts = np.bincount(TRUTH, minlength=d)
    var = fo.variance(n, true_counts)
    assert np.abs(est.mean(axis=0) - true_counts).max() < 4.5 * np.sqrt(var / runs).min()
    assert np.allclose(est.var(axis=0, ddof=1), var, rtol=0.10)
    # the aggregator computes exactly this estimate
    agg = fo.aggregator().add(ldp.Reports("olh", fo.fingerprint(), n, {"seeds": r["seeds"][:n].copy(),
                                                                      "values": r["values"][:n].copy()}))
    assert np.allclose(agg.estimate(), est[0])


def test_flh_unbiased_over_pools_and_variance_with_pool_term():
    """2,000 runs of 1,000 users, each with a fresh public pool (pool_key = run) of k′ = 16
    seeds, so the pool term Σ_{y≠x} c(y)(c(y) − 1)/((g − 1) k′) dominates the variance
    (up to 3.7x OLH's): mean error within 4.5 standard errors of 0 (< 1e-5 per item) and the
    empirical variance within 10% of variance(n, counts) (relative standard error 3.2%: 3.1
    of them, false alarm < 2e-3 per item, 1e-2 for the five)."""
    d, runs, n, k = 5, 2000, 1000, 16
    true_counts = np.bincount(TRUTH, minlength=d)
    est = np.empty((runs, d))
    rng = dpnoise.default_rng(8)
    for run in range(runs):
        fo = ldp.FrequencyOracle("flh", EPS, d, k_prime=k, pool_key=run)
        est[run] = fo.aggregator().add(fo.client(rng, allow_insecure=True).privatize(TRUTH)).estimate()
    var = fo.variance(n, true_counts)
    assert (fo.pool_variance(true_counts) > fo.variance(n)).any()
    assert np.abs(est.mean(axis=0) - true_counts).max() < 4.5 * np.sqrt(var / runs).min()
    assert np.allclose(est.var(axis=0, ddof=1), var, rtol=0.10)


def test_aggregators_match_brute_force_support():
    items = np.random.default_rng(2).integers(0, 3000, size=2500)
    fo = ldp.FrequencyOracle("olh", 1.5, 3000)
    r = client(fo, 4).privatize(items).data
    agg = fo.aggregator().add(ldp.Reports("olh", fo.fingerprint(), len(items), r))
    assert np.array_equal(agg._state["support"], support_numpy(r["seeds"], r["values"], 3000, fo.g))
    for eps in (1.5, 4.0):  # g = 5 and g = 56 (permute and generic lookups)
        fo = ldp.FrequencyOracle("flh", eps, 3000, k_prime=40)
        rep = client(fo, 4).privatize(items)
        seeds = np.ascontiguousarray(fo.pool[rep.data["indices"]])
        agg = fo.aggregator().add(rep)
        assert np.array_equal(agg.support(), support_numpy(seeds, rep.data["values"], 3000, fo.g, True))


def test_flh_pool_is_the_public_stream():
    fo = ldp.FrequencyOracle("flh", EPS, 100, k_prime=50, pool_key=1234)
    words = dpnoise.PublicStream(1234).words(lh.POOL_STREAM, 0, 100)
    assert np.array_equal(fo.pool, words.reshape(50, 2))
    assert not fo.pool.flags.writeable


# -------------------------------------------------------------- merge, bytes, bad input
def _reports(fo, n, **data):
    return ldp.Reports(fo.name, fo.fingerprint(), n, data)


def test_malformed_batches_refused_and_aggregator_unchanged():
    olh = ldp.FrequencyOracle("olh", EPS, 20)
    flh = ldp.FrequencyOracle("flh", EPS, 20, k_prime=10)
    seeds = np.zeros((3, 2), dtype=np.uint64)
    vals = np.array([0, 1, 7])
    bad_olh = [
        _reports(olh, 3, seeds=seeds, values=np.array([0, 1, 8])),           # value >= g
        _reports(olh, 3, seeds=seeds, values=np.array([0, -1, 2])),
        _reports(olh, 3, seeds=seeds.astype(np.int64), values=vals),         # seed dtype
        _reports(olh, 3, seeds=seeds[:, :1].copy(), values=vals),            # seed shape
        _reports(olh, 4, seeds=seeds, values=vals),                          # length
        _reports(olh, 3, seeds=seeds, values=vals.astype(np.int32)),
        _reports(olh, 3, values=vals),
    ]
    bad_flh = [
        _reports(flh, 3, indices=np.array([0, 10, 1]), values=vals),         # index >= k′
        _reports(flh, 3, indices=np.array([0, 1, 2]), values=np.array([0, 9, 1])),
        _reports(flh, 3, indices=np.array([0, 1]), values=vals),
        _reports(flh, 3, indices=np.array([0.0, 1, 2]), values=vals),
    ]
    for fo, bad in ((olh, bad_olh), (flh, bad_flh)):
        agg = fo.aggregator().add(client(fo).privatize(np.arange(20)))
        before = agg.to_bytes()
        for rep in bad:
            with pytest.raises(ValueError):
                agg.add(rep)
        assert agg.to_bytes() == before
    agg = olh.aggregator()
    with pytest.raises(ValueError, match="different configuration"):
        agg.add(client(flh).privatize([1, 2]))
    with pytest.raises(ValueError, match="different configuration"):
        flh.aggregator().merge(ldp.FrequencyOracle("flh", EPS, 20, k_prime=10, pool_key=1).aggregator())
    assert agg.n == 0


def test_options_and_parameters():
    fo = ldp.FrequencyOracle("olh", 2.0, 100)
    assert fo.g == 8 and lh.optimal_buckets(Fraction(1)) == 4 and lh.optimal_buckets(100) == 2**32
    assert ldp.FrequencyOracle("olh", 0.01, 10).g == 2
    assert ldp.FrequencyOracle("olh", 2.0, 100, g=3).g == 3
    assert fo.variance_per_user() == pytest.approx(4 * math.e**2 / (math.e**2 - 1) ** 2, rel=0.02)
    f = ldp.FrequencyOracle("flh", 2.0, 100)
    # the public pool key defaults to a fresh random key, recorded in the configuration (issue 23, defect 12)
    assert {k: v for k, v in f.options.items() if k != "pool_key"} == {"g": 8, "k_prime": 10_000}
    assert 0 <= f.options["pool_key"] < 2**256 and f.options["pool_key"] != ldp.FrequencyOracle("flh", 2.0, 100).options["pool_key"]
    assert f.params()["pool_key"] == f.options["pool_key"]
    for name, opts, err in [("olh", {"g": 1}, ValueError), ("olh", {"g": 2**32 + 1}, ValueError),
                            ("olh", {"g": 2.5}, TypeError), ("olh", {"k_prime": 5}, TypeError),
                            ("flh", {"k_prime": 0}, ValueError), ("flh", {"pool_key": -1}, ValueError),
                            ("flh", {"pool_key": 2**256}, ValueError), ("flh", {"k_prime": 2**22}, ValueError),
                            ("flh", {"hashes": 3}, TypeError)]:
        with pytest.raises(err, match="g|k_prime|pool_key|option"):
            ldp.FrequencyOracle(name, 2.0, 100, **opts)
    with pytest.raises(ValueError, match="domain_size"):
        ldp.FrequencyOracle("olh", 2.0, 2**32 + 1)
    with pytest.raises(dpnoise.InsecureGeneratorError):
        fo.client(dpnoise.default_rng(1))
    for items, err in (([0, 100], ValueError), ([-1], ValueError), ([0.5], TypeError)):
        with pytest.raises(err, match="items"):
            client(fo).privatize(items)
    assert {"olh", "flh"} <= set(ldp.protocols())
