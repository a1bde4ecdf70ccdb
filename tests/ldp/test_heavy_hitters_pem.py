"""PEM (Wang, Li & Jha 2019): recovery of heavy items and strings, level layout, top/above.

Fixed seeds. Recovery tests use margins of many standard errors: with the stated n and ε the
heavy items' counts exceed the next by > 8 stderr, so a correct implementation fails with
probability < 1e-9 on a fresh seed."""
import numpy as np
import pytest

import dpnoise
from dpnoise.ldp import HeavyHitters


def workload(bits, seed=0):
    rng = np.random.default_rng(seed)
    heavy = rng.integers(0, 2**bits, size=3, dtype=np.uint64)
    noise = rng.integers(0, 2**bits, size=6000, dtype=np.uint64)
    x = np.concatenate([np.repeat(heavy, [6000, 4000, 2500]), noise])
    return heavy, rng.permutation(x)


def test_level_layout_defaults():
    hh = HeavyHitters("pem", 4.0, item_bits=32)
    assert hh.level_bits() == [12, 22, 32] and hh.options["eta"] == 10
    hh64 = HeavyHitters("pem", 4.0, item_bits=64)
    assert hh64.level_bits() == [14, 24, 34, 44, 54, 64]
    assert HeavyHitters("pem", 4.0, item_bits=10).level_bits() == [10]
    assert HeavyHitters("pem", 4.0, item_bits=32, s0=8, eta=8).level_bits() == [8, 16, 24, 32]
    assert HeavyHitters("pem", 4.0, item_bits=32, k=100).level_bits() == [11, 18, 25, 32]  # keep 200: η = 7


@pytest.mark.parametrize("bits", [20, 64])
def test_recovers_heavy_items(bits):
    heavy, x = workload(bits)
    hh = HeavyHitters("pem", 6.0, item_bits=bits, k=3, k_prime=1024)
    agg = hh.aggregator().add(hh.client(dpnoise.default_rng(1), allow_insecure=True).privatize(x))
    top = agg.top(3)
    assert [r.item for r in top] == [int(h) for h in heavy]
    for r, true in zip(top, (6000, 4000, 2500)):
        assert abs(r.estimate - true) < 6 * r.stderr
        assert r.ci_low < r.estimate < r.ci_high
    assert [r.item for r in agg.above(3000)] == [int(h) for h in heavy[:2]]
    assert agg.above(1e9) == []
    assert isinstance(top[0].item, int)


def test_recovers_strings_without_dictionary():
    words = ["kiwi", "banana", "apple", "zucchini"]
    x = ["kiwi"] * 3000 + ["banana"] * 2000 + ["apple"] * 1200 + ["zucchini"] * 100
    rng = np.random.default_rng(3)
    x += ["".join(chr(97 + int(c)) for c in rng.integers(0, 26, 6)) for _ in range(3000)]
    hh = HeavyHitters("pem", 6.0, max_length=8, k=3, k_prime=1024)
    top = hh.aggregator().add(hh.client(dpnoise.default_rng(2), allow_insecure=True).privatize(x)).top(3)
    assert [r.item for r in top] == words[:3]
    assert hh.privacy_loss().epsilon == 6.0


def test_large_epsilon_default_state_is_bounded():
    # the optimal g = round(e^ε + 1) would need 3 x 16384 x e^20 counters at ε = 20; the default
    # caps g at 256, an explicit g is honoured
    hh = HeavyHitters("pem", 20.0, item_bits=32)
    assert hh.g == 256 and HeavyHitters("pem", 4.0).g == 56
    assert HeavyHitters("pem", 20.0, item_bits=32, g=1024, k_prime=64).g == 1024
    with pytest.raises(ValueError, match="counters"):
        HeavyHitters("pem", 20.0, item_bits=32, g=65536)
