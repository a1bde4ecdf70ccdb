"""Bitstogram (Bassily et al. 2017): per-bit recovery in hashed buckets, then candidate
estimates. Fixed seeds; margins as in test_heavy_hitters_pem.py (false alarm < 1e-9)."""
import numpy as np

import dpnoise
from dpnoise.ldp import HeavyHitters


def test_recovers_heavy_items_and_strings():
    rng = np.random.default_rng(4)
    heavy = rng.integers(0, 2**32, size=3, dtype=np.uint64)
    x = np.concatenate([np.repeat(heavy, [8000, 6000, 4000]), rng.integers(0, 2**32, size=4000, dtype=np.uint64)])
    hh = HeavyHitters("bitstogram", 8.0, item_bits=32, k=3, buckets=256, k_prime=1024, k_prime_bits=128)
    assert len(hh.groups) == 33 and hh.groups[0].weight == 32
    b = hh.bucket(heavy)
    assert len(set(b.tolist())) == 3  # no collision among the heavy items in this fixed draw
    top = hh.aggregator().add(hh.client(dpnoise.default_rng(5), allow_insecure=True).privatize(x)).top(3)
    assert [r.item for r in top] == [int(h) for h in heavy]
    for r, true in zip(top, (8000, 6000, 4000)):
        assert abs(r.estimate - true) < 6 * r.stderr

    s = ["heavy", "hitter"] * 4000 + ["x%d" % i for i in range(2000)]
    hs = HeavyHitters("bitstogram", 8.0, max_length=6, k=2, buckets=256, k_prime=1024, k_prime_bits=128)
    top = hs.aggregator().add(hs.client(dpnoise.default_rng(6), allow_insecure=True).privatize(s)).top(2)
    assert sorted(r.item for r in top) == ["heavy", "hitter"]


def test_bucket_hash_is_public_and_fixed():
    hh = HeavyHitters("bitstogram", 4.0, item_bits=16, buckets=64, pool_key=7)
    x = np.arange(1000, dtype=np.uint64)
    assert np.array_equal(hh.bucket(x), HeavyHitters("bitstogram", 4.0, item_bits=16, buckets=64, pool_key=7).bucket(x))
    assert not np.array_equal(hh.bucket(x), HeavyHitters("bitstogram", 4.0, item_bits=16, buckets=64,
                                                          pool_key=1).bucket(x))
    assert int(hh.bucket(x).max()) < 64
