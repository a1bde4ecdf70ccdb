"""``constant_time=True`` on the bit randomizers ("oue", "sue" through the packed kernel,
"dbitflip", "hadamard", "cms", "hcms"; cpp/include/dpnoise/exact/constant_time/
ldp_randomizers.hpp): the exact report law of each, which is the default client's law (the same
formula the default path is tested against), checked by chi-square on small domains with fixed
seeds. Each test states its false-alarm rate; critical values are scipy.stats.chi2.isf(1e-6, df)."""
import math

import numpy as np
import pytest

import dpnoise
from dpnoise import ldp

N = 200_000
CRITICAL = {3: 30.66, 7: 40.52, 15: 56.49, 31: 83.64, 511: 677.60}  # chi-square, alpha 1e-6


def reports(fo, items, seed):
    return fo.client(dpnoise.default_rng(seed), allow_insecure=True).privatize(items).data


def chi2(counts, probs):
    expected = np.asarray(probs, dtype=np.float64) * counts.sum()
    return float(((counts - expected) ** 2 / expected).sum())


def unpack(words, width):
    """(n, width) 0/1 int64 columns of packed little-endian uint64 or uint8 rows."""
    bits = np.unpackbits(np.ascontiguousarray(words).view(np.uint8), axis=1, bitorder="little")
    return bits[:, :width].astype(np.int64)


def patterns(bits):
    """The row of 0/1 columns as an integer (column c is bit c)."""
    return (bits << np.arange(bits.shape[1])).sum(axis=1)


def product_law(width, prob_one):
    """P[pattern v] = Π_c (prob_one[c] if bit c of v else 1 − prob_one[c])."""
    return [math.prod(prob_one[c] if (v >> c) & 1 else 1 - prob_one[c] for c in range(width)) for v in range(1 << width)]


@pytest.mark.parametrize("d, item", [(4, 1), (4, 2), (3, 2)])
@pytest.mark.parametrize("name", ["oue", "sue"])
def test_unary_joint_law(name, d, item):
    """200,000 users holding one item of d = 4 or 3: the 2^d reports have the product law of
    independent bits, P(1) = p at the item's column and q elsewhere (Wang et al. 2017 §4.3).
    The item at an odd and an even column, and a domain that is not a multiple of 2 (the kernel
    decides 64 columns at a time, the last block partial) are covered. Chi-square, 2^d − 1 d.o.f.,
    alpha 1e-6 each (6 tests: false alarm < 6e-6). Padding bits zero (deterministic)."""
    fo = ldp.FrequencyOracle(name, 2.0, d, constant_time=True)
    words = reports(fo, np.full(N, item), 41)["bits"]
    assert words.shape == (N, 1) and not (words >> np.uint64(d)).any()
    p, q, _ = fo._pq()
    probs = product_law(d, [p if c == item else q for c in range(d)])
    assert chi2(np.bincount(words[:, 0].astype(np.int64), minlength=1 << d), probs) < CRITICAL[(1 << d) - 1]


@pytest.mark.parametrize("name", ["oue", "sue"])
def test_unary_spans_words(name):
    """d = 130 (three words, 62 padding bits), 5,000 users holding item 129: column 129 has p n
    ones and each other column q n: |count − n p| < 5.3 sd for all 130 columns (normal
    approximation, two-sided 1.2e-7 each: false alarm < 2e-5)."""
    fo = ldp.FrequencyOracle(name, 1.0, 130, constant_time=True)
    n = 5_000
    words = reports(fo, np.full(n, 129), 33)["bits"]
    assert words.shape == (n, 3) and not (words[:, 2] >> np.uint64(2)).any()
    cols = unpack(words, 130).sum(axis=0)
    p, q, _ = fo._pq()
    want = np.where(np.arange(130) == 129, p, q) * n
    sd = np.sqrt(want * (1 - want / n))
    assert (np.abs(cols - want) < 5.3 * sd).all()


def test_dbitflip_joint_law_given_the_row():
    """200,000 users holding item 2 of d = 4, b = 2 buckets a row, 8 public rows: the row index
    is uniform (chi-square 7 d.o.f.); given the row, bit t is 1 with probability p where the row's
    bucket t is 2 and q elsewhere, independently: e = bits xor [bucket = 2] has the product law of
    Bernoulli(q) bits (chi-square 3 d.o.f.). Alpha 1e-6 each: false alarm < 2e-6."""
    fo = ldp.FrequencyOracle("dbitflip", 1.0, 4, bits=2, pool_size=8, pool_key=12345, constant_time=True)
    r = reports(fo, np.full(N, 2), 42)
    j, bits = r["indices"], r["bits"].astype(np.int64)
    assert not (bits >> 2).any()
    assert chi2(np.bincount(j, minlength=8), [1 / 8] * 8) < CRITICAL[7]
    hit = (fo.pool[j] == 2).astype(np.int64)
    e = bits ^ patterns(hit)
    p, q, _ = fo._pq()
    assert chi2(np.bincount(e, minlength=4), product_law(2, [q, q])) < CRITICAL[3]


def test_hadamard_report_law():
    """200,000 users holding item 5 of d = 8 (D = 8 rows): P(j, bit) = (1/8)(p if bit =
    parity(j & 5) else 1 − p), p = e^ε/(e^ε + 1) (Bassily & Smith 2015 §4). Chi-square over the
    16 cells, 15 d.o.f., alpha 1e-6."""
    fo = ldp.FrequencyOracle("hadamard", 1.5, 8, constant_time=True)
    r = reports(fo, np.full(N, 5), 43)
    bits = unpack(r["bits"][None, :], N)[0]
    p = math.exp(1.5) / (math.exp(1.5) + 1)
    cells = r["rows"] * 2 + bits
    probs = [(p if b == bin(j & 5).count("1") % 2 else 1 - p) / 8 for j in range(8) for b in (0, 1)]
    assert chi2(np.bincount(cells, minlength=16), probs) < CRITICAL[15]


def test_hcms_report_law():
    """200,000 users holding item 3 (k = 2 hashes, width 8): P(l, a, bit) = (1/2)(1/8)(p if bit =
    parity(a & h_l(3)) else 1 − p), p = e^ε/(e^ε + 1) (Apple 2017, Algorithm 3). Chi-square over
    32 cells, 31 d.o.f., alpha 1e-6."""
    fo = ldp.FrequencyOracle("hcms", 1.0, 16, hashes=2, width=8, public_key=99, constant_time=True)
    r = reports(fo, np.full(N, 3), 44)
    h = fo.hash_values([3])[:, 0]
    bits = unpack(r["bits"][None, :], N)[0]
    p = math.exp(1.0) / (math.exp(1.0) + 1)
    cells = (r["hash_index"] * 8 + r["coefficient"]) * 2 + bits
    probs = [(p if b == bin(a & int(h[l])).count("1") % 2 else 1 - p) / 16
             for l in range(2) for a in range(8) for b in (0, 1)]
    assert chi2(np.bincount(cells, minlength=32), probs) < CRITICAL[31]


def test_cms_report_law():
    """200,000 users holding item 3 (k = 2 hashes, width 8, ε = 0.5): P(l, v) = (1/2) Π_b (1 − f
    if v_b = s_b else f), s the one-hot signs at h_l(3) (bit 0 = +1 there, 1 = −1 elsewhere),
    f = 1/(e^{ε/2} + 1) (Apple 2017, Algorithm 1). Chi-square over the 512 cells (smallest
    expectation about 140), 511 d.o.f., alpha 1e-6."""
    fo = ldp.FrequencyOracle("cms", 0.5, 16, hashes=2, width=8, public_key=7, constant_time=True)
    r = reports(fo, np.full(N, 3), 45)
    h = fo.hash_values([3])[:, 0]
    f = 1 / (math.exp(0.25) + 1)
    probs = []
    for l in range(2):
        s = [0 if b == h[l] else 1 for b in range(8)]
        probs += [0.5 * math.prod((1 - f) if ((v >> b) & 1) == s[b] else f for b in range(8)) for v in range(256)]
    cells = r["hash_index"] * 256 + r["vectors"][:, 0].astype(np.int64)
    assert chi2(np.bincount(cells, minlength=512), probs) < CRITICAL[511]


def test_cms_spans_blocks():
    """Width 128 (two 64-coordinate blocks of the kernel), 5,000 users holding item 3, ε = 1:
    coordinate b of a report is 1 (−1) with probability f = 1/(e^{ε/2} + 1) where b = h_l(3) and
    1 − f elsewhere (Apple 2017, Algorithm 1), so column b's count of ones has mean
    Σ_i P_i(b) and variance n f (1 − f): |count − mean| < 5.3 sd for all 128 columns (normal
    approximation, two-sided 1.2e-7 each: false alarm < 2e-5)."""
    fo = ldp.FrequencyOracle("cms", 1.0, 16, hashes=2, width=128, public_key=5, constant_time=True)
    n = 5_000
    r = reports(fo, np.full(n, 3), 46)
    h = fo.hash_values([3])[:, 0]
    f = 1 / (math.exp(0.5) + 1)
    at = np.arange(128)[None, :] == h[r["hash_index"]][:, None]
    want = np.where(at, f, 1 - f).sum(axis=0)
    cols = unpack(r["vectors"], 128).sum(axis=0)
    assert (np.abs(cols - want) < 5.3 * math.sqrt(n * f * (1 - f))).all()


@pytest.mark.parametrize("name", ["hadamard", "cms", "hcms"])
def test_wide_domains_and_items(name):
    """Items far apart (0 and d − 1 of d = 2^20) give reports of the declared shapes that the
    configuration's aggregator accepts (the hash and the parity read the whole item)."""
    opts = {"hashes": 4, "width": 16} if name != "hadamard" else {}
    fo = ldp.FrequencyOracle(name, 1.0, 1 << 20, constant_time=True, **opts)
    r = fo.client(dpnoise.default_rng(3), allow_insecure=True).privatize(np.array([0, (1 << 20) - 1] * 8))
    agg = fo.aggregator().add(r)
    assert agg.n == 16


@pytest.mark.parametrize("name", ["oue", "sue", "dbitflip", "hadamard", "cms", "hcms"])
def test_reports_do_not_depend_on_threads(name):
    """Chunk c of the reports reads stream c: the same seed gives the same reports with 1 and 3
    threads (5,000 users: several chunks for the unary kernel, whose unit is 1,024 reports)."""
    opts = {"hashes": 4, "width": 16, "public_key": 1} if name in ("cms", "hcms") else {}
    opts = {"pool_key": 1} if name == "dbitflip" else opts
    fo = ldp.FrequencyOracle(name, 1.0, 70, constant_time=True, **opts)
    x = np.arange(5_000) % 70
    one, three = (fo.client(dpnoise.default_rng(8), allow_insecure=True).privatize(x, threads=t).data for t in (1, 3))
    assert one.keys() == three.keys() and all(np.array_equal(one[k], three[k]) for k in one)


def test_kernel_bad_input():
    """The binding names the bad argument before any draw."""
    from dpnoise import _core
    from dpnoise.ldp._protocol import native

    gen = native(dpnoise.default_rng(1))
    x = np.zeros(3, dtype=np.int64)
    with pytest.raises(ValueError, match="protocol"):
        _core.ldp.unary_constant_time(gen, "grr", x, 8, 1, 1, 1)
    with pytest.raises(ValueError, match="columns"):
        _core.ldp.unary_constant_time(gen, "sue", x, 0, 1, 1, 1)
    with pytest.raises(ValueError, match="keys"):
        _core.ldp.unary_constant_time(gen, "sue", x, 4, 1, 1, 1, keys=np.zeros((3, 5), dtype=np.int64))
    with pytest.raises(ValueError, match="padded_size"):
        _core.ldp.hadamard_constant_time(gen, x, 6, 1, 1, 1)
    with pytest.raises(ValueError, match="width"):
        _core.ldp.cms_constant_time(gen, x, bytes(32), 4, 12, 1, 1, 1)
    with pytest.raises(ValueError, match="public_key"):
        _core.ldp.hcms_constant_time(gen, x, bytes(31), 4, 16, 1, 1, 1)
