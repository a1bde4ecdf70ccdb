"""Bitstogram (Bassily et al. 2017): per-bit recovery in hashed buckets, then candidate
estimates. Fixed seeds; margins as in test_heavy_hitters_pem.py (false alarm < 1e-9)."""
import numpy as np
import pytest

import dpnoise
from dpnoise import _core
from dpnoise.ldp import HeavyHitters


def test_recovers_heavy_items_and_strings():
    rng = np.random.default_rng(4)
    heavy = rng.integers(0, 2**32, size=3, dtype=np.uint64)
    x = np.concatenate([np.repeat(heavy, [8000, 6000, 4000]), rng.integers(0, 2**32, size=4000, dtype=np.uint64)])
    # pool_key fixed: the bucket hash is public and keyed by it (a fresh configuration draws a
    # random key, and three heavy items collide in 256 buckets about 1.2% of the time)
    hh = HeavyHitters("bitstogram", 8.0, item_bits=32, k=3, buckets=256, k_prime=1024, k_prime_bits=128, pool_key=1)
    assert len(hh.groups) == 33 and hh.groups[0].weight == 32
    b = hh.bucket(heavy)
    assert len(set(b.tolist())) == 3  # no collision among the heavy items under this key
    top = hh.aggregator().add(hh.client(dpnoise.default_rng(5), allow_insecure=True).privatize(x)).top(3)
    assert [r.item for r in top] == [int(h) for h in heavy]
    for r, true in zip(top, (8000, 6000, 4000)):
        assert abs(r.estimate - true) < 6 * r.stderr

    s = ["heavy", "hitter"] * 4000 + ["x%d" % i for i in range(2000)]
    hs = HeavyHitters("bitstogram", 8.0, max_length=6, k=2, buckets=256, k_prime=1024, k_prime_bits=128, pool_key=1)
    top = hs.aggregator().add(hs.client(dpnoise.default_rng(6), allow_insecure=True).privatize(s)).top(2)
    assert sorted(r.item for r in top) == ["heavy", "hitter"]


def test_bucket_hash_is_public_and_fixed():
    hh = HeavyHitters("bitstogram", 4.0, item_bits=16, buckets=64, pool_key=7)
    x = np.arange(1000, dtype=np.uint64)
    assert np.array_equal(hh.bucket(x), HeavyHitters("bitstogram", 4.0, item_bits=16, buckets=64, pool_key=7).bucket(x))
    assert not np.array_equal(hh.bucket(x), HeavyHitters("bitstogram", 4.0, item_bits=16, buckets=64,
                                                          pool_key=1).bucket(x))
    assert int(hh.bucket(x).max()) < 64


@pytest.mark.parametrize("scale", [1, 1 << 12, 1 << 30])  # int16, int32 and int64 lanes
def test_support_of_many_groups_equals_one_pass_per_group(scale):
    # hh_support_groups hashes each (seed, key) once for all groups: it must give exactly the
    # supports of one hh_support pass per group, for any number of groups (padding), any
    # thread count, and seeds that no group uses (skipped)
    rng = np.random.default_rng(scale)
    pool = rng.integers(0, 2**63, size=(40, 4), dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    G, kp, g = 19, 33, 7
    counts = rng.integers(0, 4, size=(G, kp, g)).astype(np.int64) * scale
    counts[:, 5] = 0  # a seed without a report
    keys = rng.integers(0, 2**64, size=300, dtype=np.uint64)
    want = np.stack([_core.ldp.hh_support(counts[l], pool, keys, 1) for l in range(G)])
    for threads in (1, 3):
        np.testing.assert_array_equal(_core.ldp.hh_support_groups(counts, pool, keys, threads), want)
    with pytest.raises(ValueError, match="counts"):
        _core.ldp.hh_support_groups(-counts - 1, pool, keys, 1)
    with pytest.raises(ValueError, match="counts"):
        _core.ldp.hh_support_groups(counts[0], pool, keys, 1)


def test_bit_recovery_is_unchanged():
    # the 64 bit groups through one hh_support_groups call recover the same bucket candidates
    # as one hh_support pass per bit (the 0.5.0 loop), on a fixed draw
    rng = np.random.default_rng(8)
    heavy = rng.integers(0, 2**64, size=3, dtype=np.uint64)
    x = np.concatenate([np.repeat(heavy, [3000, 2000, 1500]), rng.integers(0, 2**64, size=3000, dtype=np.uint64)])
    hh = HeavyHitters("bitstogram", 8.0, item_bits=64, k=3, buckets=512, k_prime=512, k_prime_bits=64)
    agg = hh.aggregator().add(hh.client(dpnoise.default_rng(9), allow_insecure=True).privatize(x))
    T = 512
    keys0 = np.arange(T, dtype=np.uint64) << np.uint64(1)
    keys = np.concatenate([keys0, keys0 | np.uint64(1)])
    old = np.zeros(T, dtype=np.uint64)
    for j in range(64):
        s = _core.ldp.hh_support(agg._state[f"counts_{j + 1:03d}"], hh.pool, keys, 1)
        old |= (s[T:] > s[:T]).astype(np.uint64) << np.uint64(j)
    cand = np.unique(old[hh.bucket(old) == np.arange(T, dtype=np.uint64)])
    found = hh._find(agg)[0]
    np.testing.assert_array_equal(np.sort(found), cand)
    assert set(heavy.tolist()) <= set(found.tolist())
