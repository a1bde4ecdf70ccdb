"""The frequency oracle over a public random matrix Z ("zmatrix"): Z itself (three code paths
agree; a statistical sanity check of the fast public generator), the exact LDP guarantee, the
randomizer's law, the server's sweep against brute force, unbiasedness and variance, duplicated
columns, merge, serialisation and bad input."""
import hashlib
import math

import numpy as np
import pytest

import dpnoise
import dpnoise.ldp.zmatrix  # noqa: F401  (registers the protocol)
from dpnoise import _core, ldp
from dpnoise.bit_generator import PublicStream

EPS = 2.0
M64 = (1 << 64) - 1
GAMMA = 0x9E3779B97F4A7C15


def zm(d=8, eps=EPS, **opts):
    return ldp.FrequencyOracle("zmatrix", eps, d, **opts)


def client(fo, seed=1):
    return fo.client(dpnoise.default_rng(seed), allow_insecure=True)


def key_bytes(k):
    return k.to_bytes(32, "little")


# -- reference implementation of Z, in Python integers (docs/ldp_zmatrix.md, "The matrix") -----
def ref_mix(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def ref_word(key, row, w):
    seed = int(PublicStream(key).words(0, row, 1)[0])
    return ref_mix((seed + (w + 1) * GAMMA) & M64)


def ref_entry(key, row, col):
    return 1 - 2 * ((ref_word(key, row, col // 64) >> (col % 64)) & 1)


def entries(key, rows, cols, d, table=True):
    """Z[rows, cols] (±1) through the client's C++ path."""
    bits = _core.ldp.zmatrix_entry_bits(key_bytes(key), np.asarray(rows, np.int64), np.asarray(cols, np.uint64), d, table)
    return 1 - 2 * bits.astype(np.int64)


# -- Z ---------------------------------------------------------------------------------------------
def test_client_and_server_compute_the_same_matrix():
    """The client's entries (row-seed table, and one ChaCha20 block per entry), the server's
    block words and a pure-Python reference agree entry for entry."""
    key, d = 12345, 300
    rng = np.random.default_rng(0)
    rows = rng.integers(0, d, size=400)
    cols = rng.integers(0, 1 << 20, size=400)
    a = entries(key, rows, cols, d, table=True)
    b = entries(key, rows, cols, d, table=False)
    words = _core.ldp.zmatrix_words(key_bytes(key), 0, d, 0, (1 << 20) // 64)
    c = 1 - 2 * ((words[rows, cols // 64] >> (cols % 64).astype(np.uint64)) & np.uint64(1)).astype(np.int64)
    ref = np.array([ref_entry(key, int(r), int(k)) for r, k in zip(rows[:60], cols[:60])])
    assert np.array_equal(a, b) and np.array_equal(a, c) and np.array_equal(a[:60], ref)
    assert int(words[5, 7]) == ref_word(key, 5, 7)
    # a different key is a different matrix
    assert not np.array_equal(a, entries(key + 1, rows, cols, d))


def test_fast_public_generator_statistical_sanity():
    """2^20 words of Z (256 rows x 4096 words): (1) the 64 bit positions are each 1 with
    frequency 1/2: chi-square over 64 positions (64 d.o.f., alpha = 1e-6, critical 132.8); (2) byte
    values: chi-square, 255 d.o.f., alpha = 1e-6, critical 377.1; (3) neighbouring rows and neighbouring
    words agree on half their bits (z within 5, alpha ~ 6e-7 each)."""
    w = _core.ldp.zmatrix_words(key_bytes(7), 1000, 256, 50, 4096)
    n = w.size
    bits = np.unpackbits(w.view(np.uint8), bitorder="little").reshape(n, 64)
    ones = bits.sum(axis=0).astype(float)
    chi_bits = float((((ones - n / 2) ** 2) / (n / 2) + ((n - ones - n / 2) ** 2) / (n / 2)).sum())
    assert chi_bits < 132.8
    bytes_ = np.bincount(w.view(np.uint8).ravel(), minlength=256).astype(float)
    e = w.view(np.uint8).size / 256
    assert float(((bytes_ - e) ** 2 / e).sum()) < 377.1
    for a, b in ((w[1:], w[:-1]), (w[:, 1:], w[:, :-1])):
        agree = np.unpackbits((~(a ^ b)).view(np.uint8)).sum()
        total = a.size * 64
        assert abs((agree - total / 2) / math.sqrt(total / 4)) < 5


# -- the privacy guarantee -----------------------------------------------------------------------
def test_exact_ldp_ratio_on_a_small_domain():
    """For every column c (public, independent of the item) and output y, P(y | x, c) is p or
    1 - p with p = e^γ/(e^γ + 1): every ratio over two inputs is 1 or p/(1-p) = e^γ <= e^ε."""
    d, width, key = 4, 256, 3
    fo = zm(d, 1.3, columns=width, public_key=key)
    e = math.exp(float(fo.gamma))
    p = e / (e + 1)
    Z = entries(key, np.repeat(np.arange(d), width), np.tile(np.arange(width), d), d).reshape(d, width)
    worst = 0.0
    for c in range(width):
        for y in (-1, 1):
            probs = [p if y == Z[x, c] else 1 - p for x in range(d)]
            worst = max(worst, max(probs) / min(probs))
    assert worst == pytest.approx(e, rel=1e-12) and float(fo.gamma) <= 1.3


def test_randomizer_law_chi_square():
    """For items 0 and 3, 200,000 reports on columns 0..199,999: the number with y = Z[x, c]
    against Binomial(n, p): chi-square, 1 d.o.f., alpha = 1e-6 (critical 23.93)."""
    n, d, key = 200_000, 4, 11
    fo = zm(d, columns=n, public_key=key)
    e = math.exp(float(fo.gamma))
    p = e / (e + 1)
    for item in (0, 3):
        r = client(fo, 5 + item).privatize(np.full(n, item), first_column=0)
        z = entries(key, np.full(n, item), np.arange(n), d)
        kept = int((r.data["y"] == z).sum())
        chi = (kept - n * p) ** 2 / (n * p) + (n - kept - n * (1 - p)) ** 2 / (n * (1 - p))
        assert chi < 23.93


# -- the server ------------------------------------------------------------------------------------
@pytest.mark.parametrize("width,planes", [(200, 1), (1000, 3), (64 * 2048 + 77, 2)])
def test_sweep_equals_brute_force(width, planes):
    """The packed sweep's S(x) equals Σ_i y_i Z[x, c_i] computed entry by entry, with columns
    repeated (sums up to ±3 need 2 planes), cancelling, and spread over several sweep blocks."""
    d, key = 37, 99
    fo = zm(d, columns=width, planes=planes, public_key=key)
    rng = np.random.default_rng(width)
    n = 300
    items = rng.integers(0, d, size=n)
    if planes == 1:
        cols = rng.permutation(width)[:min(n, width)]
        items = items[:cols.size]
    else:
        cols = np.concatenate([rng.integers(0, width, size=n - 6), [width - 1] * 3, [0] * 3])
    r = client(fo, 2).privatize(items, columns=cols)
    agg = fo.aggregator().add(r)
    Z = entries(key, np.repeat(np.arange(d), cols.size), np.tile(cols, d), d).reshape(d, cols.size)
    brute = (Z * r.data["y"].astype(np.int64)).sum(axis=1)
    assert np.array_equal(agg.column_sums(), brute)
    assert np.allclose(agg.estimate(), fo.scale() * brute)
    for threads, simd in ((3, True), (1, False), (2, False)):  # the vector and scalar loops agree
        assert np.array_equal(agg.column_sums(), _core.ldp.zmatrix_sweep(key_bytes(key), agg._state["sign"],
                                                                    agg._state["magnitude"], d, threads, simd))


@pytest.mark.parametrize("planes", [4, 5, 6])
def test_sweep_with_many_planes_equals_brute_force(planes):
    """Hand-made reports with heavy duplication (the last column holding +min(40, 2^planes - 1), others up to ±(2^planes
    - 1)): every plane count path (unrolled 4, generic 5 and 6; vector and scalar) is exact."""
    d, width, key = 21, 64 * 300 + 5, 8
    fo = zm(d, columns=width, planes=planes, public_key=key)
    rng = np.random.default_rng(planes)
    cols = np.concatenate([rng.integers(0, 40, size=400), rng.integers(0, width, size=2000),
                           np.full(min(40, 2 ** planes - 1), width - 1)]).astype(np.int64)
    y = np.where(rng.random(cols.size) < 0.5, 1, -1).astype(np.int8)
    y[-min(40, 2 ** planes - 1):] = 1
    r = ldp.Reports("zmatrix", fo.fingerprint(), cols.size, {"columns": cols, "y": y})
    agg = fo.aggregator().add(r)  # (fixed seed: no column exceeds the planes)
    assert int(agg._state["magnitude"][planes - 1].any()) == 1  # the top plane is used
    Z = entries(key, np.repeat(np.arange(d), cols.size), np.tile(cols, d), d).reshape(d, cols.size)
    brute = (Z * y.astype(np.int64)).sum(axis=1)
    assert np.array_equal(agg.column_sums(), brute)
    assert np.array_equal(brute, _core.ldp.zmatrix_sweep(key_bytes(key), agg._state["sign"], agg._state["magnitude"],
                                                     d, 1, False))


def test_unbiased_and_variance_matches_formula():
    """2,000 independent runs of 1,000 users (d = 5), run r on columns [1000 r, 1000 (r + 1)) of
    one Z (disjoint columns of Z are independent draws): the mean error of every item's estimate
    is within 4.5 standard errors of 0 and the empirical variance within 10% of variance() =
    n c² − f(x) (false alarm < 1e-4 per item for the mean; the variance's relative standard error
    is about 3.2%, so 10% is over 3 of them)."""
    d, runs, n, key = 5, 2000, 1000, 2024
    fo = zm(d, columns=runs * n, planes=1, public_key=key)
    truth = np.repeat(np.arange(d), [400, 300, 200, 80, 20])
    items = np.tile(truth, runs)
    r = client(fo, 7).privatize(items, first_column=0)
    y = r.data["y"].astype(np.int64)
    cols = np.arange(runs * n)
    est = np.stack([fo.scale() * (entries(key, np.full(cols.size, x), cols, d) * y).reshape(runs, n).sum(axis=1)
                    for x in range(d)], axis=1)
    true_counts = np.bincount(truth, minlength=d)
    var = fo.variance(n, true_counts)
    c2 = fo.scale() ** 2
    assert np.allclose(var, n * c2 - true_counts)
    se = np.sqrt(var / runs)
    assert (np.abs(est.mean(axis=0) - true_counts) < 4.5 * se).all()
    assert np.allclose(est.var(axis=0, ddof=1), var, rtol=0.10)
    # the aggregator computes exactly these estimates (run 0, and runs 0..1 together)
    one = fo.aggregator().add(ldp.Reports("zmatrix", fo.fingerprint(), n, {"columns": r.data["columns"][:n], "y": r.data["y"][:n]}))
    assert np.allclose(one.estimate(), est[0])
    two = one.add(ldp.Reports("zmatrix", fo.fingerprint(), n, {"columns": r.data["columns"][n:2 * n], "y": r.data["y"][n:2 * n]}))
    assert np.allclose(two.estimate(), est[0] + est[1])


def test_shared_columns_variance_derivation():
    """docs/ldp_zmatrix.md, "Duplicated columns": 2,000 runs of 1,000 users who all hold item 0,
    two users per column (run r on columns [500 r, 500 (r + 1))): still unbiased (4.5 standard
    errors), Var f̂(0) = n c² − n (holders: no covariance) and Var f̂(1) = n c² + 2 · 500 (each
    same-item pair adds 2), both within 10% (relative standard error about 3.2%)."""
    d, runs, n, key = 3, 2000, 1000, 77
    fo = zm(d, columns=runs * n // 2, planes=2, public_key=key)
    cols = (np.arange(runs * n) // n) * (n // 2) + (np.arange(runs * n) % (n // 2))
    r = client(fo, 12).privatize(np.zeros(runs * n, dtype=np.int64), columns=cols)
    y = r.data["y"].astype(np.int64)
    est = np.stack([fo.scale() * (entries(key, np.full(cols.size, x), cols, d) * y).reshape(runs, n).sum(axis=1)
                    for x in range(d)], axis=1)
    c2 = fo.scale() ** 2
    truth = np.array([n, 0, 0])
    var = np.array([n * c2 - n, n * c2 + 2 * (n // 2), n * c2 + 2 * (n // 2)])
    assert (np.abs(est.mean(axis=0) - truth) < 4.5 * np.sqrt(var / runs)).all()
    assert np.allclose(est.var(axis=0, ddof=1), var, rtol=0.10)


def test_default_random_columns_are_uniform_and_unbiased():
    """Without columns the client draws them uniformly from [0, W) (secret generator): the
    estimate is still Σ y Z over the reports' columns, close to the truth (within 5 stderr)."""
    d, width = 16, 1 << 12
    fo = zm(d, columns=width)
    items = np.random.default_rng(3).integers(0, 4, size=20_000)
    r = client(fo, 9).privatize(items)
    assert r.data["columns"].min() >= 0 and r.data["columns"].max() < width
    counts = np.bincount(r.data["columns"], minlength=width)  # uniform: chi-square, 4095 dof, alpha 1e-6
    e = items.size / width
    assert float(((counts - e) ** 2 / e).sum()) < 4539.7
    agg = fo.aggregator().add(r)
    truth = np.bincount(items, minlength=d)
    assert (np.abs(agg.estimate() - truth) < 5 * agg.stderr()).all()


# -- duplicated columns, merge, serialisation --------------------------------------------------------
def test_duplicated_columns_each_contribute():
    """The same batch added twice doubles S exactly; a column's running sum beyond 2^planes - 1
    is refused (ValueError naming the planes) with the aggregator unchanged."""
    fo = zm(10, columns=500, planes=2)
    r = client(fo).privatize(np.arange(300) % 10, first_column=100)
    agg = fo.aggregator().add(r)
    once = agg.column_sums().copy()
    agg.add(r)
    assert np.array_equal(agg.column_sums(), 2 * once) and agg.n == 600
    y = r.data["y"][:1]
    triple = ldp.Reports("zmatrix", fo.fingerprint(), 4, {"columns": np.full(4, 100, np.int64), "y": np.repeat(y, 4)})
    before = agg.to_bytes()
    with pytest.raises(ValueError, match="planes"):
        agg.add(triple)  # column 100 already holds 2 y: 6 > 3
    assert agg.to_bytes() == before
    with pytest.raises(ValueError, match="planes"):
        agg.merge(fo.aggregator().add(r).add(r))
    assert agg.to_bytes() == before
    # opposite reports on one column cancel: the state is that of no report there
    fo1 = zm(10, columns=64, planes=1)
    pair = ldp.Reports("zmatrix", fo1.fingerprint(), 2, {"columns": np.array([5, 5]), "y": np.array([1, -1], np.int8)})
    a = fo1.aggregator().add(pair)
    assert not a._state["sign"].any() and not a._state["magnitude"].any() and a.n == 2


def test_estimate_is_cached_until_the_next_change():
    fo = zm(20, columns=1000)
    agg = fo.aggregator().add(client(fo).privatize(np.arange(100) % 20, first_column=0))
    s = agg.column_sums()
    assert agg.column_sums() is s
    agg.add(client(fo).privatize([3], first_column=500))
    assert agg.column_sums() is not s


def _resealed(agg, mutate):
    """agg's serialisation with its last state array's bytes changed and a valid checksum."""
    body = bytearray(agg.to_bytes()[:-32])
    mutate(body)
    return bytes(body) + hashlib.sha256(bytes(body)).digest()


def test_states_that_no_reports_can_produce_are_refused():
    fo = zm(6, columns=100, planes=1)  # 2 words; bits 100..127 unused
    agg = fo.aggregator()
    sign_offset = len(agg.to_bytes()) - 32 - 16  # arrays sorted: magnitude (1, 2), then sign (2,)

    def stray_bit(body):  # a magnitude bit past column 99 (last byte of magnitude's last word)
        body[sign_offset - 1] |= 0x80

    def lone_sign(body):  # a sign on an empty column
        body[sign_offset] |= 0x01

    for mutate in (stray_bit, lone_sign):
        with pytest.raises(ValueError, match="corrupt"):
            ldp.Aggregator.from_bytes(_resealed(agg, mutate))


# -- bad input ---------------------------------------------------------------------------------------
def test_malformed_batches_refused_and_aggregator_unchanged():
    fo, other = zm(6, columns=100), zm(6, columns=100, public_key=1)
    agg = fo.aggregator().add(client(fo).privatize([0, 1, 2], first_column=0))
    before = agg.to_bytes()
    fp = fo.fingerprint()
    good_c, good_y = np.array([4, 5]), np.array([1, -1], np.int8)
    bad = [
        {"columns": good_c, "y": np.array([1, 0], np.int8)},
        {"columns": good_c, "y": np.array([1, 2], np.int8)},
        {"columns": np.array([4, 100]), "y": good_y},
        {"columns": np.array([-1, 4]), "y": good_y},
        {"columns": good_c.astype(np.int32), "y": good_y},
        {"columns": good_c, "y": good_y.astype(np.int64)},
        {"columns": good_c[:1], "y": good_y},
        {"y": good_y},
    ]
    for data in bad:
        with pytest.raises(ValueError, match="zmatrix report"):
            agg.add(ldp.Reports("zmatrix", fp, 2, data))
    with pytest.raises(ValueError, match="different configuration"):
        agg.add(client(other).privatize([0, 1], first_column=0))
    with pytest.raises(ValueError, match="different configuration"):
        agg.merge(other.aggregator())
    assert agg.to_bytes() == before


@pytest.mark.parametrize("options,error,match", [
    ({"public_key": -1}, ValueError, "public_key"), ({"public_key": 1 << 256}, ValueError, "public_key"),
    ({"public_key": b"short"}, ValueError, "public_key"), ({"public_key": 1.5}, TypeError, "public_key"),
    ({"columns": 0}, ValueError, "columns"), ({"columns": (1 << 36) + 1}, ValueError, "columns"),
    ({"planes": 0}, ValueError, "planes"), ({"planes": 17}, ValueError, "planes"),
    ({"hashes": 2}, TypeError, "option"),
])
def test_bad_options(options, error, match):
    with pytest.raises(error, match=match):
        zm(8, **options)


def test_bad_columns_and_items():
    fo = zm(8, columns=100)
    c = client(fo)
    for kwargs, error, match in [
        ({"columns": [0, 1]}, ValueError, "one column per item"),
        ({"columns": [0, 1, 100]}, ValueError, r"\[0, 100\)"),
        ({"columns": [0.0, 1.0, 2.0]}, TypeError, "columns"),
        ({"first_column": 98}, ValueError, "first_column"),
        ({"first_column": -1}, ValueError, "first_column"),
        ({"first_column": 0, "columns": [0, 1, 2]}, ValueError, "not both"),
    ]:
        with pytest.raises(error, match=match):
            c.privatize([1, 2, 3], **kwargs)
    with pytest.raises(ValueError, match="items"):
        c.privatize([0, 8], first_column=0)
    with pytest.raises(TypeError, match="items"):
        c.privatize([0.5], first_column=0)
    with pytest.raises(dpnoise.InsecureGeneratorError):
        fo.client(dpnoise.default_rng(1))
    assert fo.client().rng.is_secure


def test_reports_do_not_depend_on_threads():
    fo = zm(1000, columns=1 << 18)
    items = np.random.default_rng(1).integers(0, 1000, size=150_000)
    a = client(fo, 4).privatize(items, first_column=0, threads=1)
    b = client(fo, 4).privatize(items, first_column=0, threads=3)
    assert np.array_equal(a.data["y"], b.data["y"])
    agg = fo.aggregator().add(a)
    assert np.array_equal(agg.column_sums(threads=1),
                          _core.ldp.zmatrix_sweep(fo.options["public_key"], agg._state["sign"], agg._state["magnitude"], 1000, 2))


def test_privacy_loss_and_variance_per_user():
    fo = zm(8)
    e = math.exp(EPS)
    assert fo.privacy_loss().pure_epsilon() == EPS
    assert fo.variance_per_user() == pytest.approx(((e + 1) / (e - 1)) ** 2)
    assert "zmatrix" in ldp.protocols()


# -- estimate/variance/stderr(items) without the sweep over the domain (issue #22 item 6) -------
@pytest.mark.parametrize("planes", [1, 3])
def test_estimates_of_given_items_equal_the_full_sweep(planes):
    # the items path sweeps only the requested rows of Z: the same integers as the full sweep,
    # so identical estimates, variances and stderrs (equality, not closeness), in any order,
    # repeated, through the vector and the scalar loops
    d, key = 300, 5
    fo = zm(d, columns=1 << 14, planes=planes, public_key=key)
    x = fo.example_items(3000, seed=planes)
    reports = client(fo, 3).privatize(x) if planes > 1 else client(fo, 3).privatize(x[:2000], first_column=7)
    items = [299, 0, 17, 17, 42, 150]
    fresh = fo.aggregator().add(reports)  # nothing cached: the items path
    full = fo.aggregator().add(reports)
    whole = full.estimate()
    assert "estimates" not in fresh._cache
    np.testing.assert_array_equal(fresh.estimate(items), whole[items])
    np.testing.assert_array_equal(fresh.variance(items), full.variance()[items])
    np.testing.assert_array_equal(fresh.stderr(items), full.stderr()[items])
    assert "estimates" not in fresh._cache  # no full sweep was made
    for threads, simd in ((1, False), (2, True)):
        s = _core.ldp.zmatrix_sweep_items(key_bytes(key), fresh._state["sign"], fresh._state["magnitude"],
                                          np.array(items, np.uint64), d, threads, simd)
        np.testing.assert_array_equal(s, full.column_sums()[items])
    with pytest.raises(ValueError):
        fresh.estimate([d])
    with pytest.raises(ValueError, match="items"):
        _core.ldp.zmatrix_sweep_items(key_bytes(key), fresh._state["sign"], fresh._state["magnitude"],
                                      np.array([d], np.uint64), d, 1, True)


def test_estimates_of_given_items_at_d_2_40():
    # d = 2^40 (a full sweep would be 8 TiB of estimates): a few candidates are estimated from
    # their rows of Z only. Z's row r does not depend on d, so the rows r < 64 must give exactly
    # the full sweep of the same reports under d = 64; the heavy items far up the domain are
    # within 5 stated stderrs of their counts (false alarm < 6e-7 each; fixed seeds)
    key, W = 11, 1 << 16
    big = zm(2**40, columns=W, public_key=key)
    heavy = np.array([3, 2**39 + 5, 2**40 - 1], dtype=np.int64)
    x = np.concatenate([np.repeat(heavy, [3000, 2000, 1000]), np.arange(4000, dtype=np.int64) * 7919])
    reports = client(big, 4).privatize(x, first_column=0)
    agg = big.aggregator().add(reports)
    est, se = agg.estimate(heavy), agg.stderr(heavy)
    assert est.shape == se.shape == (3,)
    assert np.all(np.abs(est - [3000, 2000, 1000]) < 5 * se)
    np.testing.assert_allclose(agg.variance(heavy), se ** 2, rtol=1e-12)
    small = zm(64, columns=W, public_key=key)
    low = small.aggregator().add(small.reports(dict(reports.data), reports.n))
    np.testing.assert_array_equal(agg.estimate([3, 0, 63]), low.estimate()[[3, 0, 63]])
    np.testing.assert_array_equal(agg.variance([3, 63]), low.variance()[[3, 63]])
