"""Heavy hitters over long strings with no dictionary ("string_pem", issue #22 item 1): exact
bytes found (UTF-8, embedded and trailing NUL, bytes items), the documented long-item rule, bad
input named, threads-independent clients, and stated standard errors against empirical ones
(issue #22 item 7). Small sizes (seconds); the 10^6-device targets are in
benchmarks/test_bench_ldp_strings.py. The contract suite (tests/ldp/test_contract.py) runs on it
too, through the registry."""
import numpy as np
import pytest

import dpnoise
from dpnoise import ldp

HEAVY_STR = ["org.minevivi.lorakelo.keyboard.shop", "naïve.café.日本", "a\x00b", "tail\x00\x00", "x"]
HEAVY_BYTES = [b"\xff\xfe\x00raw", b"\x00", b"com.example", b"z\x00"]


def rng(seed):
    return dpnoise.default_rng(seed)


def population(heavy, n, seed, filler=lambda g: "com.filler." + str(int(g.integers(0, 10**6)))):
    """n items: 60% the heavy ones (equal shares), the rest distinct-ish fillers."""
    g = np.random.default_rng(seed)
    pick = g.integers(0, len(heavy), size=n)
    return [heavy[i] if g.random() < 0.6 else filler(g) for i in pick]


@pytest.mark.parametrize("item_type,heavy", [("str", HEAVY_STR), ("bytes", HEAVY_BYTES)])
def test_top_returns_the_exact_strings(item_type, heavy):
    # 20,000 users, ε = 4, 41 levels of ~490 users: each heavy string holds >= 2,400 users, >= 58
    # per level, against a level's noise sd of ~6 and a survival threshold of <= 2.7 sd (the keep-th
    # of ~256 keep noise prefixes): a miss needs a > 6-sigma deviation (false-alarm rate < 1e-8)
    hh = ldp.HeavyHitters("string_pem", 4.0, item_type=item_type, max_length=40, k=len(heavy), k_prime=256,
                          pool_key=7)
    filler = (lambda g: b"f" + bytes(g.integers(0, 256, size=6, dtype=np.uint8))) if item_type == "bytes" else \
        (lambda g: "com.filler." + str(int(g.integers(0, 10**6))))
    items = population(heavy, 20_000, 1, filler)
    agg = hh.aggregator().add(hh.client(rng(2), allow_insecure=True).privatize(items))
    top = agg.top()
    assert {h.item for h in top} == set(heavy)
    assert all(type(h.item) is (str if item_type == "str" else bytes) for h in top)
    est = agg.estimate(heavy)
    truth = np.array([items.count(x) for x in heavy])
    assert np.all(np.abs(est - truth) <= 5 * agg.stderr(heavy))  # 5 sigma: < 6e-7 per item
    if item_type == "str":
        raw = agg.top(decode=False)
        assert {h.item for h in raw} == {x.encode() for x in heavy}


def test_long_items_are_refused_naming_position_and_max_length():
    hh = ldp.HeavyHitters("string_pem", 2.0, max_length=8)
    client = hh.client()
    with pytest.raises(ValueError, match=r"items\[1\] is longer than max_length \(8 bytes\)") as exc:
        client.privatize(["ok", "secret-and-long"])
    assert "secret" not in str(exc.value)
    with pytest.raises(ValueError, match=r"items\[0\].*max_length"):
        client.privatize(["ééééé"])  # 10 UTF-8 bytes: the rule counts bytes
    client.privatize(["12345678", b"\x00" * 8])  # exactly max_length: accepted
    with pytest.raises(ValueError, match=r"items\[2\] is longer"):
        hh.aggregator().estimate(["a", "b", "123456789"])


@pytest.mark.parametrize("bad,error,match", [
    ([1, 2], TypeError, r"items\[0\] is a int"),
    (["a", 3.0], TypeError, r"items\[1\] is a float"),
    ("abc", TypeError, "single str"),
    (np.arange(3), TypeError, "dtype"),
    (np.array([["a"]]), ValueError, "1-D"),
    (["ok", "\ud800"], ValueError, r"items\[1\] is not valid Unicode"),
])
def test_bad_items_are_named(bad, error, match):
    with pytest.raises(error, match=match):
        ldp.HeavyHitters("string_pem", 2.0).client().privatize(bad)


def test_bad_options_are_named():
    with pytest.raises(TypeError, match="item_bits"):
        ldp.HeavyHitters("string_pem", 2.0, 64, item_type="str")
    with pytest.raises(TypeError, match="max_length"):
        ldp.HeavyHitters("string_pem", 2.0, 16, max_length=4)
    with pytest.raises(ValueError, match="max_length"):
        ldp.HeavyHitters("string_pem", 2.0, max_length=0)
    with pytest.raises(ValueError, match="item_type"):
        ldp.HeavyHitters("string_pem", 2.0, item_type="float")
    with pytest.raises(ValueError, match="keep"):
        ldp.HeavyHitters("string_pem", 2.0, keep=1)
    with pytest.raises(TypeError, match="no candidates"):
        ldp.HeavyHitters("string_pem", 2.0).aggregator(candidates=["a"])
    with pytest.raises(TypeError, match="no option"):
        ldp.HeavyHitters("string_pem", 2.0, s0=3)


def test_arrays_and_threads_give_the_same_reports():
    hh = ldp.HeavyHitters("string_pem", 2.0, max_length=24, k_prime=64, pool_key=3)
    items = population(["abc", "déf", "g\x00h"], 3000, 4)
    one = hh.client(rng(5), allow_insecure=True).privatize(items, threads=1).to_bytes()
    two = hh.client(rng(5), allow_insecure=True).privatize(np.array(items, dtype=object), threads=2).to_bytes()
    assert one == two
    assert hh.client(rng(5), allow_insecure=True).privatize(np.array(items)).to_bytes() == one  # a NumPy 'U' array
    assert hh.client(rng(6), allow_insecure=True).privatize(items).to_bytes() != one


def test_tiny_populations_return_what_they_found():
    hh = ldp.HeavyHitters("string_pem", 4.0, max_length=12, k_prime=16)
    for n in (0, 1, 5):
        agg = hh.aggregator().add(hh.client().privatize(["abc"] * n))
        assert len(agg.top()) <= hh.tracked()


SKEWED = tuple([1, 1] + [6] * 12 + [2] * 19)  # 33 levels of max_length=32: most users on bytes 2..13


@pytest.mark.parametrize("method,weights", [("string_pem", None), ("string_pem", SKEWED), ("pem", None),
                                            ("treehist", None), ("bitstogram", None)])
def test_stated_stderr_matches_the_empirical_one(method, weights):
    # with level_weights too: the estimator scales each level (or pooled levels) by the users it
    # OBSERVED there, so unequal public shares keep it unbiased and its stated variance right.
    # 300 independent runs (fresh client randomness AND a fresh public pool per run, as by
    # default) of the same 3,000 users (every method over str items of max_length 32); the stated variance (mean over runs) against the mean
    # squared error around the true counts, summed over 4 items of 3 lengths. Relative sd of the
    # ratio ~ sqrt(2/300)/sqrt(4) ≈ 0.04 (more if correlated): a stderr off by more than 10% (a
    # variance ratio outside [0.81, 1.21]) is beyond ~4.5 sds (false-alarm rate < 1e-5)
    heavy = ["org.app.one", "io.b", "net.three.long.name.example", "org.app.ones"]
    items = population(heavy, 3000, 9)
    truth = np.array([items.count(x) for x in heavy], dtype=float)
    err, stated = [], []
    for r in range(300):
        opts = {} if weights is None else {"level_weights": weights}
        hh = ldp.HeavyHitters(method, 2.0, item_type="str", max_length=32, k_prime=64, pool_key=1000 + r, **opts)
        agg = hh.aggregator().add(hh.client(rng(r), allow_insecure=True).privatize(items))
        err.append(agg.estimate(heavy) - truth)
        stated.append(agg.variance(heavy))
    ratio = (np.array(err) ** 2).mean(axis=0).sum() / np.mean(stated, axis=0).sum()
    print(f"{method} MSE / stated variance (level_weights={weights}): {ratio:.3f}")
    assert 0.81 <= ratio <= 1.21, ratio


def test_level_weights_set_the_level_shares():
    hh = ldp.HeavyHitters("string_pem", 2.0, max_length=32, k_prime=64, level_weights=SKEWED, pool_key=2)
    n = 200_000
    groups = hh.client(rng(11), allow_insecure=True).privatize(["org.example"] * n).data["groups"]
    observed = np.bincount(groups, minlength=hh.levels)
    expected = n * np.array(SKEWED) / sum(SKEWED)
    chi2 = float(((observed - expected) ** 2 / expected).sum())
    # 32 degrees of freedom: P(chi2 > 70) ≈ 1.3e-4 under the stated shares (false-alarm rate)
    assert chi2 < 70, chi2
    assert hh.params()["level_weights"] == ",".join(map(str, SKEWED))
    assert ldp.Configuration.from_json(hh.to_json()).fingerprint() == hh.fingerprint()


def test_equal_level_weights_reproduce_the_default_client_stream():
    # the default configuration (no level_weights) keeps its parameters and its client stream; equal
    # weights draw the same levels from the same secret words (a uniform u < L, level u)
    default = ldp.HeavyHitters("string_pem", 2.0, max_length=24, k_prime=64, pool_key=3)
    equal = ldp.HeavyHitters("string_pem", 2.0, max_length=24, k_prime=64, pool_key=3, level_weights=[1] * 25)
    assert "level_weights" not in default.params() and equal.fingerprint() != default.fingerprint()
    items = population(["abc", "déf", "g\x00h"], 3000, 4)
    one = default.client(rng(5), allow_insecure=True).privatize(items).data
    two = equal.client(rng(5), allow_insecure=True).privatize(items).data
    assert all(np.array_equal(one[k], two[k]) for k in ("groups", "indices", "values"))


@pytest.mark.parametrize("weights,error,match", [
    ([1] * 24, ValueError, r"one entry per level \(25\)"),
    ([1] * 24 + [0], ValueError, "level_weights"),
    ([1.5] * 25, TypeError, "level_weights"),
    ("1,x", ValueError, "level_weights"),
    (b"ab", TypeError, "level_weights"),
    (3, TypeError, "level_weights"),
])
def test_bad_level_weights_are_named(weights, error, match):
    with pytest.raises(error, match=match):
        ldp.HeavyHitters("string_pem", 2.0, max_length=24, level_weights=weights)


def test_integer_items_are_bytes_without_a_terminator():
    # 16-bit IDs, 8,000 users, 3 heavy ones of >= 1,200 users: as for strings, a miss needs a
    # > 7-sigma deviation (false-alarm rate < 1e-9)
    hh = ldp.HeavyHitters("string_pem", 4.0, 16, k=3, k_prime=256, pool_key=11)
    assert hh.levels == 2 and hh.codec.params() == {"item_type": "int", "item_bits": 16}
    g = np.random.default_rng(3)
    items = np.where(g.random(8000) < 0.6, g.choice([7, 0xABCD, 0x0100], size=8000), g.integers(0, 1 << 16, 8000))
    agg = hh.aggregator().add(hh.client(rng(4), allow_insecure=True).privatize(items))
    assert {h.item for h in agg.top()} == {7, 0xABCD, 0x0100}
    assert all(type(h.item) is int for h in agg.top())
    with pytest.raises(ValueError, match="item_bits"):
        hh.client().privatize([1 << 16])


def test_prefix_keys_are_the_documented_polynomial_hash():
    # string_pem.hpp: little-endian 32-bit words of the prefix (last one zero-padded), then
    # 2 len + complete, by Horner's rule at the key, mod 2^61 - 1
    p = (1 << 61) - 1

    def reference(key, data, b):
        complete = len(data) < b
        m = len(data) if complete else b
        data, h = data[:m], 0
        for i in range(0, m, 4):
            h = (h * key + int.from_bytes(data[i:i + 4].ljust(4, b"\x00"), "little")) % p
        return (h * key + 2 * m + complete) % p

    items = [b"", b"a", b"abc\x00", b"abcd", b"abcde", "日本語のテキスト".encode(), b"\x00" * 9, bytes(range(64))]
    g = np.random.default_rng(0)
    for key in (1, 12345, p - 2):
        prefix = np.array([int(g.integers(1, len(x) + 3)) for x in items])
        data = np.frombuffer(b"".join(items), dtype=np.uint8)
        offsets = np.concatenate([[0], np.cumsum([len(x) for x in items])]).astype(np.int64)
        got = dpnoise._core.ldp.string_prefix_keys(data, offsets, prefix, key, 1)
        assert [int(v) for v in got] == [reference(key, x, int(b)) for x, b in zip(items, prefix)]
    with pytest.raises(ValueError, match="key"):
        dpnoise._core.ldp.string_prefix_keys(data, offsets, prefix, 0, 1)
