"""Every heavy-hitters method over str/bytes items of more than 8 bytes (issue #22 item 1):
"pem" and "treehist" (prefix extension over the bits of x⊥, _strings.py) and "bitstogram" (a
string-aware codec: bucket by the whole string's hash, per-bit oracles over its padded form and
length). Exact bytes found (UTF-8, embedded and trailing NUL, raw bytes), the documented
long-item rule (refused, naming ``items`` and ``max_length``, never the item, nothing charged),
the wire forms (JSON, Arrow, Parquet, records, aggregator state) and the unchanged forms of
max_length <= 8. Small domains and high ε (seconds); the 10^6-device figures are in
benchmarks/test_bench_ldp_strings.py."""
import numpy as np
import pytest

import dpnoise
from dpnoise import ldp
from dpnoise.accounting import PrivacyBudget

METHODS = ["pem", "treehist", "bitstogram"]
HEAVY_STR = ["org.minevivi.lorakelo", "naïve.café.日本", "a\x00b.tool.x", "tail.end\x00\x00", "short"]
HEAVY_BYTES = [b"\xff\xfe\x00raw.bytes", b"\x00" * 12, b"com.example.app", b"z\x00"]


def population(heavy, n, seed, filler):
    """n items: 70% the heavy ones (equal shares), the rest fillers."""
    g = np.random.default_rng(seed)
    pick = g.integers(0, len(heavy), size=n)
    return [heavy[i] if g.random() < 0.7 else filler(g) for i in pick]


def text_filler(g):
    return "com.filler." + str(int(g.integers(0, 10**6)))


def bytes_filler(g):
    return b"f" + bytes(g.integers(0, 256, size=10, dtype=np.uint8))


def config(method, item_type="str", epsilon=8.0, k=5, **options):
    return ldp.HeavyHitters(method, epsilon, item_type=item_type, max_length=24, k=k, pool_key=11, **options)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("item_type,heavy", [("str", HEAVY_STR), ("bytes", HEAVY_BYTES)])
def test_top_returns_the_exact_strings(method, item_type, heavy):
    # ε = 8 (g = 256, p = 0.92), max_length = 24 (B = 200 bits), each heavy string held by ~14-17%
    # of the users. False-alarm rates (a correct implementation failing, over seeds and pool keys;
    # both are fixed here):
    # pem (40,000 users): 18 levels of ~2,200 users, a heavy prefix ~310 reports against a noise
    # sd of ~3 and a keep-th largest noise candidate below ~20; treehist: 25 levels of ~1,600
    # users, ~220 against a threshold of 3 sd (~8): a miss needs a > 50-sd deviation (< 1e-12).
    # bitstogram (100,000 users): 200 bit oracles of ~250 users; a heavy string's bit is read from
    # ~35 holders (Poisson), each kept with p = 0.92, against ~1 colliding report: a wrong bit needs
    # <= 10 holders most of them flipped (~1e-10 per bit, ~1e-7 over the ~1,000 bits read); two
    # heavy strings share one of the 16,384 buckets with probability 6e-4 over pool keys (they do
    # not with pool_key=11). The 5-sigma estimate checks below: 6e-7 per item.
    hh = config(method, item_type, k=len(heavy))
    filler = bytes_filler if item_type == "bytes" else text_filler
    items = population(heavy, 100_000 if method == "bitstogram" else 40_000, 1, filler)
    agg = hh.aggregator().add(hh.client(dpnoise.default_rng(2), allow_insecure=True).privatize(items))
    top = {h.item: h for h in agg.top()}
    assert set(top) == set(heavy) and {type(x) for x in top} == {str if item_type == "str" else bytes}
    for x, e, s in zip(heavy, agg.estimate(heavy), agg.stderr(heavy)):  # 5 sigma: < 6e-7 per item
        count = items.count(x)
        assert abs(e - count) <= 5 * s and abs(top[x].estimate - count) <= 5 * top[x].stderr
    if item_type == "str":
        assert {h.item for h in agg.top(decode=False)} == {x.encode() for x in heavy}


@pytest.mark.parametrize("method", METHODS)
def test_long_items_are_refused_naming_items_and_max_length_and_charge_nothing(method):
    hh = config(method)
    budget = PrivacyBudget(100.0)
    client = hh.client(dpnoise.default_rng(3), allow_insecure=True, budget=budget)
    with pytest.raises(ValueError, match=r"items\[1\] is longer than max_length \(24 bytes\)") as exc:
        client.privatize(["ok", "secret-and-much-much-too-long"])
    assert "secret" not in str(exc.value)
    with pytest.raises(ValueError, match=r"items\[0\].*max_length"):
        client.privatize(["é" * 13])  # 26 UTF-8 bytes: the rule counts bytes
    with pytest.raises(TypeError, match=r"items\[1\] is a int"):
        client.privatize(["ok", 3])
    assert budget.spent_epsilon == 0
    client.privatize(["x" * 24, b"\x00" * 24])  # exactly max_length: accepted, charged once per report
    assert budget.spent_epsilon == pytest.approx(16.0)
    with pytest.raises(ValueError, match=r"items\[2\] is longer"):
        hh.aggregator().estimate(["a", "b", "x" * 25])


@pytest.mark.parametrize("method", METHODS)
def test_bad_string_options_are_named(method):
    with pytest.raises(ValueError, match="max_length"):
        ldp.HeavyHitters(method, 2.0, item_type="str", max_length=256)
    with pytest.raises(ValueError, match="long_items"):
        ldp.HeavyHitters(method, 2.0, item_type="str", max_length=16, long_items="hash")
    with pytest.raises(TypeError, match="item_bits"):
        ldp.HeavyHitters(method, 2.0, 64, item_type="bytes", max_length=16)
    with pytest.raises(TypeError, match="no candidates"):
        ldp.HeavyHitters(method, 2.0, item_type="str", max_length=16).aggregator(candidates=["a"])


@pytest.mark.parametrize("method", METHODS)
def test_short_strings_keep_their_integer_form(method):
    # max_length <= 8: 0.4.0's integer codec and configuration, unchanged
    hh = ldp.HeavyHitters(method, 2.0, item_type="str", max_length=8, pool_key=1)
    assert hh.params()["item_bits"] == 64 and "max_length" not in hh.params() and not hh.strings
    long = ldp.HeavyHitters(method, 2.0, item_type="str", max_length=9, pool_key=1)
    assert long.strings and long.params()["max_length"] == 9 and "item_bits" not in long.params()


@pytest.mark.parametrize("method", METHODS)
def test_wire_forms_round_trip(method, tmp_path):
    pa = pytest.importorskip("pyarrow")
    hh = config(method, epsilon=4.0, k=2)
    again = ldp.Configuration.from_json(hh.to_json())
    assert again == hh and again.fingerprint() == hh.fingerprint() and again.strings
    items = population(HEAVY_STR, 500, 4, text_filler)
    reports = hh.client(dpnoise.default_rng(5), allow_insecure=True).privatize(items)
    table = reports.to_arrow()
    assert isinstance(table, pa.Table) and table.column_names == [f.name for f in hh.report_fields]
    for back in (ldp.Reports.from_arrow(table, hh), ldp.Reports.from_records(reports.to_records(), hh)):
        assert back == reports and back.n == reports.n
        for k in reports.data:
            np.testing.assert_array_equal(back.data[k], reports.data[k])
    path = tmp_path / "r.parquet"
    ldp.arrow.write_parquet(reports, path)
    assert ldp.arrow.read_parquet(path, hh) == reports
    other = config(method, epsilon=2.0, k=2)
    with pytest.raises(ValueError, match="another configuration"):
        ldp.Reports.from_arrow(table, other)
    agg = hh.aggregator().add(reports)
    loaded = type(agg).from_bytes(agg.to_bytes())
    assert [h.item for h in loaded.top(2)] == [h.item for h in agg.top(2)]
    half = hh.aggregator().add(ldp.Reports.from_arrow(table.slice(0, 200), hh))
    half.merge(hh.aggregator().add(ldp.Reports.from_arrow(table.slice(200), hh)))
    np.testing.assert_array_equal(half.estimate(HEAVY_STR), agg.estimate(HEAVY_STR))


@pytest.mark.parametrize("method", METHODS)
def test_clients_do_not_depend_on_threads(method):
    hh = config(method, epsilon=2.0)
    items = population(HEAVY_STR, 3000, 6, text_filler)
    a = hh.client(dpnoise.default_rng(7), allow_insecure=True).privatize(items, threads=1)
    b = hh.client(dpnoise.default_rng(7), allow_insecure=True).privatize(np.array(items, dtype=object), threads=2)
    for k in a.data:
        np.testing.assert_array_equal(a.data[k], b.data[k])


def test_bit_prefix_keys_extend_the_symbol_keys():
    # string_pem.hpp: a prefix of b symbols is the prefix of 8b bits; an incomplete prefix of
    # `bits` bits is its ceil(bits/8) bytes with the bits past `bits` cleared
    core = dpnoise._core.ldp
    items = [b"", b"a", b"abc\x00", b"abcdefgh", "日本語".encode()]
    data = np.frombuffer(b"".join(items), dtype=np.uint8)
    offsets = np.concatenate([[0], np.cumsum([len(x) for x in items])]).astype(np.int64)
    for b in (1, 2, 3, 9):
        sym = core.string_prefix_keys(data, offsets, np.full(len(items), b), 12345, 1)
        bits = core.string_bit_prefix_keys(data, offsets, np.full(len(items), 8 * b), 12345, 1)
        np.testing.assert_array_equal(sym, bits)
    one = np.frombuffer(b"\xab\xff", dtype=np.uint8)
    masked = np.frombuffer(b"\xa8\x00", dtype=np.uint8)  # the first 5 bits of 0xab, then zeros
    off = np.array([0, 2], dtype=np.int64)
    assert core.string_bit_prefix_keys(one, off, np.array([5]), 99, 1)[0] == \
        core.string_bit_prefix_keys(masked, off, np.array([5]), 99, 1)[0]
    other = np.frombuffer(b"\xb3\xff", dtype=np.uint8)  # 10110011: another 5-bit prefix
    assert core.string_bit_prefix_keys(one, off, np.array([5]), 99, 1)[0] != \
        core.string_bit_prefix_keys(other, off, np.array([5]), 99, 1)[0]
    # complete (8 len < bits) against incomplete: the terminator tells them apart
    assert core.string_bit_prefix_keys(one, off, np.array([17]), 99, 1)[0] != \
        core.string_bit_prefix_keys(one, off, np.array([16]), 99, 1)[0]
