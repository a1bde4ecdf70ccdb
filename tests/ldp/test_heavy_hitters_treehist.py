"""TreeHist (Bassily et al. 2017): threshold-pruned prefix tree. Fixed seeds; margins as in
test_heavy_hitters_pem.py (false alarm < 1e-9)."""
import numpy as np
import pytest

import dpnoise
from dpnoise.ldp import HeavyHitters


@pytest.mark.parametrize("step", [1, 4])
def test_recovers_heavy_items(step):
    rng = np.random.default_rng(7)
    heavy = rng.integers(0, 2**16, size=2, dtype=np.uint64)
    x = np.concatenate([np.repeat(heavy, [20000, 12000]), rng.integers(0, 2**16, size=8000, dtype=np.uint64)])
    hh = HeavyHitters("treehist", 8.0, item_bits=16, k=2, bits_per_level=step, k_prime=512)
    assert len(hh.groups) == 16 // step
    top = hh.aggregator().add(hh.client(dpnoise.default_rng(8), allow_insecure=True).privatize(x)).top(2)
    assert [r.item for r in top] == [int(h) for h in heavy]


def test_nothing_above_threshold_gives_no_items():
    # uniform items: no prefix of the first level is far above... every level-0 prefix holds about
    # half the users, so the tree survives; with an absurd z nothing does and top() is empty
    hh = HeavyHitters("treehist", 4.0, item_bits=8, k=1, z=1e6, k_prime=64)
    x = np.arange(256, dtype=np.uint64).repeat(4)
    assert hh.aggregator().add(hh.client(dpnoise.default_rng(9), allow_insecure=True).privatize(x)).top(1) == []
