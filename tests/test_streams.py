"""Bit sources as stream families: NumPy bit generators as sequential families, spawn,
SeedSequence seeds, the NumPy capsule of ChaCha20, random_raw(output=False) and the public
stream type."""
import os
import pickle
import threading
from fractions import Fraction

import numpy as np
import pytest

import dpnoise
from dpnoise import _core
from dpnoise.bit_generator import PublicStream
from concurrent_runs import gather_from_threads, in_forked_child

stats = pytest.importorskip("scipy.stats")

ALPHA = 1e-6  # false-alarm rate of each goodness-of-fit test below (deterministic seeds)


def words_of(key: bytes, stream: int, first_block: int, nwords: int) -> np.ndarray:
    """Words of a ChaCha20 stream in dpnoise's layout (two little-endian 32-bit halves)."""
    nblocks = (nwords + 7) // 8
    raw = _core.chacha20_stream_words(key, stream, first_block, nblocks, False).astype(np.uint64)
    return (raw[0::2] | (raw[1::2] << np.uint64(32)))[:nwords]


# -- NumPy bit generators as sequential families --------------------------------------------
SAMPLERS = [
    ("discrete_laplace", lambda g, n: g.discrete_laplace(Fraction(7, 3), n)),
    ("discrete_laplace_large", lambda g, n: g.discrete_laplace(5, 5000 + n)),  # table path
    ("discrete_gaussian", lambda g, n: g.discrete_gaussian(2.5, n)),
    ("discrete_gaussian_each", lambda g, n: g.discrete_gaussian([1, 30], size=(n, 2))),
    ("geometric", lambda g, n: g.geometric(scale=3, size=n)),
    ("bernoulli", lambda g, n: g.bernoulli(Fraction(1, 3), n)),
    ("bernoulli_exp", lambda g, n: g.bernoulli_exp(0.7, n)),
    ("integers", lambda g, n: g.integers(-5, 1000, n)),
]


@pytest.mark.parametrize("name,draw", SAMPLERS)
def test_numpy_bit_generator_drives_every_sampler_reproducibly(name, draw):
    a = dpnoise.Generator(np.random.PCG64(2026))
    b = dpnoise.Generator(np.random.PCG64(2026))
    c = dpnoise.Generator(np.random.PCG64(2027))
    xa = [draw(a, 300), draw(a, 300)]
    xb = [draw(b, 300), draw(b, 300)]
    assert np.array_equal(xa[0], xb[0]) and np.array_equal(xa[1], xb[1])
    assert not np.array_equal(xa[0], xa[1])  # the bit generator advanced
    assert not np.array_equal(xa[0], draw(c, 300))
    assert not a.is_secure and isinstance(a.bit_generator, np.random.PCG64)


@pytest.mark.parametrize("cls", [np.random.PCG64, np.random.PCG64DXSM, np.random.Philox, np.random.MT19937, np.random.SFC64])
def test_every_numpy_bit_generator_is_accepted(cls):
    g = dpnoise.Generator(cls(11))
    x = g.discrete_laplace(10, 1000)
    assert np.array_equal(x, dpnoise.Generator(cls(11)).discrete_laplace(10, 1000))
    assert not g.is_secure and "Generator(" in repr(g)
    assert isinstance(g.random_raw(), int) and g.random_raw(3).dtype == np.uint64


def test_numpy_family_reads_the_bit_generators_own_words():
    """A sequential family reads next_uint64 in order: full-range int64 integers are the raw
    words of the bit generator (offset by -2^63), and NumPy continues after them."""
    bg = np.random.PCG64(5)
    g = dpnoise.Generator(bg)
    raw = np.random.PCG64(5).random_raw(6)
    full = g.integers(-(2**63), 2**63, 4)
    assert np.array_equal(full.view(np.uint64), raw[:4] ^ np.uint64(2**63))
    assert np.array_equal(bg.random_raw(2), raw[4:])


def test_generator_over_a_numpy_bit_generator_refuses_copies_and_checks_threads():
    g = dpnoise.Generator(np.random.PCG64(1))
    with pytest.raises(TypeError, match="copied"):
        pickle.dumps(g)
    with pytest.raises(ValueError, match="threads"):
        g.random_raw(3, threads=0)
    assert dpnoise.default_rng(np.random.PCG64(1)).bit_generator.__class__ is np.random.PCG64


def test_numpy_family_output_does_not_depend_on_threads():
    n = 2 * _core.SAMPLES_PER_STREAM + 77
    outs = [dpnoise.Generator(np.random.SFC64(3)).discrete_gaussian(4, n, threads=t) for t in (1, 2, 5)]
    assert np.array_equal(outs[0], outs[1]) and np.array_equal(outs[0], outs[2])


def test_numpy_family_holds_the_bit_generators_lock():
    bg = np.random.PCG64(8)
    g = dpnoise.Generator(bg)
    done = threading.Event()

    def draw():
        g.discrete_laplace(3, 10)
        done.set()

    with bg.lock:
        t = threading.Thread(target=draw)
        t.start()
        assert not done.wait(0.3)  # blocked on the lock NumPy itself uses
    t.join(10)
    assert done.is_set()


def test_numpy_family_shared_across_threads_hands_out_each_word_once():
    """dpnoise and NumPy draw concurrently from one PCG64; with the lock every word is read by
    exactly one of them: the full-range integers (one raw word each, in order) of all threads
    together are distinct."""
    bg = np.random.PCG64(99)
    gens = [dpnoise.Generator(bg) for _ in range(4)]

    def work(g):
        return [g.integers(-(2**63), 2**63, 500) for _ in range(20)]

    allv = np.concatenate(gather_from_threads(work, [(g,) for g in gens]))
    ref = np.sort(dpnoise.Generator(np.random.PCG64(99)).integers(-(2**63), 2**63, allv.size))
    assert np.array_equal(np.sort(allv), ref)


def _chi2(counts, probs):
    counts = np.asarray(counts, dtype=float)
    probs = np.asarray(probs, dtype=float)
    probs = probs / probs.sum()
    stat, p = stats.chisquare(counts, probs * counts.sum())
    return p


def _two_sided_geometric_pmf(t):
    q = np.exp(-1.0 / t)
    return lambda k: (1 - q) / (1 + q) * q ** np.abs(k)


@pytest.mark.parametrize("name", ["laplace", "gaussian", "geometric", "bernoulli", "bernoulli_exp", "integers"])
def test_numpy_family_goodness_of_fit(name):
    """Chi-square against the exact law, alpha = ALPHA, PCG64-driven (fixed seed)."""
    g = dpnoise.Generator(np.random.PCG64(4242))
    n = 100_000
    if name == "laplace":
        t = 2.0
        x = g.discrete_laplace(t, n)
        ks = np.arange(-12, 13)
        pmf = _two_sided_geometric_pmf(t)(ks)
        q = np.exp(-1 / t)
        tail = q ** 13 / (1 + q)  # P(X >= 13) = P(X <= -13)
        pmf[0] += tail
        pmf[-1] += tail
    elif name == "gaussian":
        sigma = 3.0
        x = g.discrete_gaussian(sigma, n)
        ks = np.arange(-12, 13)
        full = np.arange(-200, 201)
        w = np.exp(-full.astype(float) ** 2 / (2 * sigma**2))
        w /= w.sum()
        pmf = w[188:213].copy()
        pmf[0] += w[:188].sum()
        pmf[-1] += w[213:].sum()
    elif name == "geometric":
        t = 3.0
        x = g.geometric(scale=t, size=n)
        q = np.exp(-1 / t)
        ks = np.arange(0, 25)
        pmf = (1 - q) * q ** ks
        pmf[-1] = q ** 24  # P(X >= 24)
    elif name == "bernoulli":
        x = g.bernoulli(Fraction(1, 3), n).astype(np.int64)
        ks = np.arange(2)
        pmf = np.array([2 / 3, 1 / 3])
    elif name == "bernoulli_exp":
        x = g.bernoulli_exp(0.7, n).astype(np.int64)
        ks = np.arange(2)
        pmf = np.array([1 - np.exp(-0.7), np.exp(-0.7)])
    else:
        x = g.integers(0, 37, n)
        ks = np.arange(37)
        pmf = np.full(37, 1 / 37)
    x = np.clip(x, ks[0], ks[-1])
    counts = np.bincount(x - ks[0], minlength=ks.size)
    assert abs(pmf.sum() - 1) < 1e-12
    assert _chi2(counts, pmf) > ALPHA


# -- spawn and SeedSequence ------------------------------------------------------------------
def test_seeded_children_are_reproducible_functions_of_seed_and_path():
    a, b = dpnoise.ChaCha20(5), dpnoise.ChaCha20(5)
    ca, cb = a.spawn(3), b.spawn(2) + b.spawn(1)  # the path counts every child spawned
    for x, y in zip(ca, cb):
        assert np.array_equal(x.random_raw(16), y.random_raw(16))
    assert all(not c.is_secure for c in ca) and "NOT SECURE" in repr(ca[0])
    # grandchildren likewise
    assert np.array_equal(dpnoise.ChaCha20(5).spawn(1)[0].spawn(2)[1].random_raw(8),
                          dpnoise.ChaCha20(5).spawn(1)[0].spawn(2)[1].random_raw(8))


def test_spawn_key_derivation_is_the_documented_one():
    """Child j's key is words 0-7 of block j of the parent's stream SPAWN_STREAM."""
    seed = 123456789
    key = seed.to_bytes(32, "little")
    children = dpnoise.ChaCha20(seed).spawn(3)
    for j, child in enumerate(children):
        block = _core.chacha20_stream_words(key, _core.SPAWN_STREAM, j, 1, False)
        child_key = int.from_bytes(block[:8].astype("<u4").tobytes(), "little")
        assert np.array_equal(child.random_raw(8), dpnoise.ChaCha20(child_key).random_raw(8))


def test_children_are_disjoint_from_each_other_and_the_parent():
    parent = dpnoise.ChaCha20(77)
    kids = parent.spawn(4)
    streams = [parent.random_raw(2000)] + [k.random_raw(2000) for k in kids]
    allw = np.concatenate(streams)
    assert len(np.unique(allw)) == allw.size  # a collision among 10^4 words: p < 1e-11
    gens = dpnoise.default_rng(77).spawn(2)
    assert not np.array_equal(gens[0].discrete_laplace(10, 100), gens[1].discrete_laplace(10, 100))


def test_children_of_a_secure_generator_are_secure_and_fresh():
    for parent in (dpnoise.ChaCha20(), dpnoise.default_rng()):
        kids = parent.spawn(2)
        assert all(k.is_secure for k in kids)
    a, b = dpnoise.ChaCha20().spawn(1)[0], dpnoise.ChaCha20().spawn(1)[0]
    assert not np.array_equal(a.random_raw(4), b.random_raw(4))
    g = dpnoise.default_rng().spawn(3)
    assert all(isinstance(x, dpnoise.Generator) and x.is_secure for x in g)


def test_spawned_children_refuse_to_be_copied():
    for obj in dpnoise.ChaCha20(1).spawn(1) + dpnoise.default_rng().spawn(1):
        with pytest.raises(TypeError, match="copied"):
            pickle.dumps(obj)


def test_seed_sequence_keys_and_spawns_like_numpy():
    ss = np.random.SeedSequence(2026)
    key = np.asarray(ss.generate_state(8, np.uint32), dtype="<u4").tobytes()
    c = dpnoise.ChaCha20(np.random.SeedSequence(2026))
    assert np.array_equal(c.random_raw(8), dpnoise.ChaCha20(int.from_bytes(key, "little")).random_raw(8))
    assert not c.is_secure and c.seed is None and c.seed_seq is not None
    kids = c.spawn(2)
    ref = np.random.SeedSequence(2026).spawn(2)
    for kid, r in zip(kids, ref):
        assert np.array_equal(kid.random_raw(4), dpnoise.ChaCha20(r).random_raw(4))
        assert kid.seed_seq.spawn_key == r.spawn_key
    g = dpnoise.default_rng(np.random.SeedSequence(9))
    assert not g.is_secure
    assert np.array_equal(g.discrete_laplace(4, 50), dpnoise.default_rng(np.random.SeedSequence(9)).discrete_laplace(4, 50))


def test_generator_over_a_numpy_bit_generator_spawns_through_its_seed_sequence():
    kids = dpnoise.Generator(np.random.PCG64(np.random.SeedSequence(4))).spawn(2)
    ref = [dpnoise.Generator(np.random.PCG64(s)) for s in np.random.SeedSequence(4).spawn(2)]
    for k, r in zip(kids, ref):
        assert isinstance(k.bit_generator, np.random.PCG64) and not k.is_secure
        assert np.array_equal(k.discrete_laplace(3, 20), r.discrete_laplace(3, 20))


@pytest.mark.parametrize("n,exc", [(-1, ValueError), (1.5, TypeError), ("2", TypeError), (True, TypeError), (2**40, ValueError)])
def test_bad_spawn_count(n, exc):
    with pytest.raises(exc, match="n_children"):
        dpnoise.ChaCha20(1).spawn(n)
    with pytest.raises(exc, match="n_children"):
        dpnoise.default_rng().spawn(n)


def test_spawn_of_zero_children():
    assert dpnoise.ChaCha20(1).spawn(0) == [] and dpnoise.default_rng(1).spawn(0) == []


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_spawned_secure_child_rekeys_after_fork():
    kid = dpnoise.default_rng().spawn(1)[0]
    kid.random_raw(3)
    child = np.frombuffer(in_forked_child(lambda: kid.random_raw(64).tobytes() + kid.discrete_laplace(10, 64).tobytes()), dtype=np.uint64)
    parent = kid.random_raw(64)
    assert not np.intersect1d(child[:64], parent).size
    assert not np.array_equal(child[64:].view(np.int64), kid.discrete_laplace(10, 64))
    # and a secure child's spawn in the fork derives from the fresh key
    spawned = in_forked_child(lambda: kid.spawn(1)[0].random_raw(8).tobytes())
    assert np.frombuffer(spawned, dtype=np.uint64).tolist() != kid.spawn(1)[0].random_raw(8).tolist()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_seeded_spawned_child_keeps_its_stream_after_fork():
    kid = dpnoise.ChaCha20(3).spawn(1)[0]
    child = np.frombuffer(in_forked_child(lambda: kid.random_raw(16).tobytes()), dtype=np.uint64)
    assert np.array_equal(child, kid.random_raw(16))


# -- the NumPy capsule of ChaCha20 ------------------------------------------------------------
def test_capsule_reads_its_reserved_stream_with_both_halves_of_each_word():
    key = (31).to_bytes(32, "little")
    expected = words_of(key, _core.NUMPY_STREAM, 0, 600)
    g = np.random.Generator(dpnoise.ChaCha20(31))
    full64 = g.integers(0, 2**64 - 1, size=300, dtype=np.uint64, endpoint=True)
    assert np.array_equal(full64, expected[:300])  # 300 words: crosses a refill (256 words)
    # full-range uint32 draws are next_uint32: low half, then high half of the next word
    u32 = g.integers(0, 2**32 - 1, size=10, dtype=np.uint32, endpoint=True)
    halves = np.stack([expected[300:305] & np.uint64(0xFFFFFFFF), expected[300:305] >> np.uint64(32)], axis=1).reshape(-1)
    assert np.array_equal(u32.astype(np.uint64), halves)
    # random(): the top 53 bits of the next word times 2^-53
    d = g.random(3)
    assert np.array_equal(d, (expected[305:308] >> np.uint64(11)).astype(np.float64) * 2.0**-53)


def test_capsule_words_never_repeat_those_of_other_paths():
    bg = dpnoise.ChaCha20(12)
    g = np.random.Generator(bg)
    a = g.integers(0, 2**64 - 1, size=1000, dtype=np.uint64, endpoint=True)
    b = bg.random_raw(1000)
    dg = dpnoise.Generator(bg)
    dg.discrete_laplace(3, 100)  # a sampling request between NumPy draws
    c = g.integers(0, 2**64 - 1, size=1000, dtype=np.uint64, endpoint=True)
    allw = np.concatenate([a, b, c])
    assert len(np.unique(allw)) == allw.size
    # the sequential stream is untouched by NumPy's draws
    assert np.array_equal(b, dpnoise.ChaCha20(12).random_raw(1000))


def test_capsule_from_many_threads_hands_out_each_word_once():
    """Several threads, each with its own numpy Generator over one ChaCha20 (NumPy takes
    bit_generator.lock): the multiset of words equals a single-threaded run of the same seed."""
    bg = dpnoise.ChaCha20(2024)

    def work():
        g = np.random.Generator(bg)
        return [g.integers(0, 2**64 - 1, size=k, dtype=np.uint64, endpoint=True) for k in (1, 7, 300, 1000) * 10]

    allw = np.concatenate(gather_from_threads(work, [()] * 6))
    ref = words_of((2024).to_bytes(32, "little"), _core.NUMPY_STREAM, 0, allw.size)
    assert np.array_equal(np.sort(allw), np.sort(ref))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_capsule_of_a_secure_generator_rekeys_in_a_forked_child():
    bg = dpnoise.ChaCha20()
    g = np.random.Generator(bg)
    g.integers(0, 2**64 - 1, size=3, dtype=np.uint64, endpoint=True)  # words buffered at fork
    child = np.frombuffer(in_forked_child(lambda: g.integers(0, 2**64 - 1, size=64, dtype=np.uint64, endpoint=True).tobytes()),
                          dtype=np.uint64)
    parent = g.integers(0, 2**64 - 1, size=64, dtype=np.uint64, endpoint=True)
    assert not np.intersect1d(child, parent).size


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_capsule_of_a_seeded_generator_continues_in_a_forked_child():
    g = np.random.Generator(dpnoise.ChaCha20(5))
    g.integers(0, 2**64 - 1, size=3, dtype=np.uint64, endpoint=True)
    child = np.frombuffer(in_forked_child(lambda: g.integers(0, 2**64 - 1, size=8, dtype=np.uint64, endpoint=True).tobytes()),
                          dtype=np.uint64)
    assert np.array_equal(child, g.integers(0, 2**64 - 1, size=8, dtype=np.uint64, endpoint=True))


# -- random_raw(output=False) ---------------------------------------------------------------
@pytest.mark.parametrize("skip", [0, 1, 3, 8, 13, 64, 1000, 12345])
def test_random_raw_without_output_advances_the_stream(skip):
    a, b = dpnoise.ChaCha20(6), dpnoise.ChaCha20(6)
    a.random_raw(5)
    assert a.random_raw(skip, output=False) is None
    assert np.array_equal(a.random_raw(20), b.random_raw(25 + skip)[5 + skip:])


def test_random_raw_without_output_scalar_and_shape():
    a, b = dpnoise.ChaCha20(6), dpnoise.ChaCha20(6)
    assert a.random_raw(output=False) is None
    assert a.random_raw((2, 3), output=False) is None
    assert a.random_raw() == int(b.random_raw(8)[7])


def test_random_raw_bad_output():
    with pytest.raises(TypeError, match="output"):
        dpnoise.ChaCha20(1).random_raw(3, output="no")


# -- the public stream -------------------------------------------------------------------------
def test_public_stream_is_standard_chacha20_and_deterministic():
    p = PublicStream(99)
    w = p.words(3, 0, 40)
    assert np.array_equal(w, words_of((99).to_bytes(32, "little"), 3, 0, 40))
    assert np.array_equal(w, PublicStream(99).words(3, 0, 40))
    assert np.array_equal(w, PublicStream((99).to_bytes(32, "little")).words(3, 0, 40))
    assert not np.array_equal(w, PublicStream(100).words(3, 0, 40))
    assert not np.array_equal(w, p.words(4, 0, 40))


@pytest.mark.parametrize("offset,n", [(0, 1), (5, 10), (7, 9), (8, 8), (123, 700), (2**40, 3)])
def test_public_words_are_randomly_addressable(offset, n):
    p = PublicStream(7)
    big = words_of((7).to_bytes(32, "little"), 2, offset // 8, n + 16)[offset % 8: offset % 8 + n]
    assert np.array_equal(p.words(2, offset, n), big)
    assert np.array_equal(p.words(2, offset, n)[1:], p.words(2, offset + 1, n - 1))


def test_public_signs_random_access():
    p = PublicStream(b"\x01" * 32)
    big = p.signs(range(0, 10), range(0, 300))
    assert big.shape == (10, 300) and big.dtype == np.int8 and set(np.unique(big)) == {-1, 1}
    for rows, cols in [(range(3, 7), range(60, 200)), (range(9, 10), range(63, 65)), (range(0, 10), range(0, 300)), (range(2, 2), range(0, 5))]:
        assert np.array_equal(p.signs(rows, cols), big[rows.start:rows.stop, cols.start:cols.stop])
    assert np.array_equal(p.signs((3, 7), (60, 200)), big[3:7, 60:200])
    # entry (r, c) is bit c % 64 of word c // 64 of stream r
    w = p.words(4, 1, 1)[0]
    assert big[4, 64 + 5] == 1 - 2 * ((int(w) >> 5) & 1)
    # far away blocks are addressable too
    far = p.signs(range(2**40, 2**40 + 2), range(2**50, 2**50 + 70))
    assert far.shape == (2, 70)
    assert abs(big.mean()) < 0.1  # 3000 fair signs: |mean| >= 0.1 has p < 1e-7


def test_public_integers_are_uniform_and_prefix_consistent():
    p = PublicStream(5)
    x = p.integers(1, 10, 50_000)
    assert x.dtype == np.uint64 and x.max() < 10
    assert np.array_equal(p.integers(1, 10, 77), x[:77])
    assert stats.chisquare(np.bincount(x.astype(np.int64), minlength=10)).pvalue > ALPHA
    assert np.all(p.integers(0, 1, 5) == 0)
    assert p.integers(0, 2**64 - 1, 3).dtype == np.uint64
    # rejection: for high = 3 * 2^62 a word >= 3 * 2^62 is rejected, so values come from accepted words
    w = p.words(0, 0, 64)
    accepted = w[w < np.uint64(3 * 2**62)]
    assert np.array_equal(p.integers(0, 3 * 2**62, 10), accepted[:10] % np.uint64(3 * 2**62))


def test_public_stream_is_refused_as_a_secret_source():
    ps = PublicStream(1)
    assert "PUBLIC" in type(ps).__doc__ and "PUBLIC" in repr(ps)
    with pytest.raises(TypeError, match="bit_generator"):
        dpnoise.Generator(ps)
    with pytest.raises(TypeError, match="PublicStream"):
        dpnoise.default_rng(ps)
    with pytest.raises(TypeError, match="rng"):
        dpnoise.DiscreteLaplaceMechanism(1.0, rng=ps)
    with pytest.raises(TypeError):
        _core.discrete_laplace(ps._public, 1, 1, 3, 1)  # the core types differ too
    with pytest.raises((TypeError, AttributeError)):
        np.random.Generator(ps)


@pytest.mark.parametrize("seed,exc", [(-1, ValueError), (2**256, ValueError), (b"short", ValueError), (1.0, TypeError), (None, TypeError)])
def test_public_stream_bad_seed(seed, exc):
    with pytest.raises(exc, match="seed"):
        PublicStream(seed)


def test_public_stream_bad_arguments():
    p = PublicStream(1)
    with pytest.raises(ValueError, match="stream_id"):
        p.words(-1, 0, 3)
    with pytest.raises(ValueError, match="offset"):
        p.words(0, 2**64, 3)
    with pytest.raises(OverflowError, match="offset"):
        p.words(0, 2**64 - 2, 3)
    with pytest.raises(ValueError, match="n"):
        p.words(0, 0, -1)
    with pytest.raises(TypeError, match="n"):
        p.words(0, 0, 2.0)
    with pytest.raises(ValueError, match="high"):
        p.integers(0, 0, 3)
    with pytest.raises(ValueError, match="high"):
        p.integers(0, 2**64, 3)
    with pytest.raises(ValueError, match="rows"):
        p.signs(range(0, 10, 2), range(3))
    with pytest.raises(ValueError, match="columns"):
        p.signs(range(3), (5, 2))
    with pytest.raises(TypeError, match="rows"):
        p.signs([0, 1], range(3))
    with pytest.raises(ValueError, match="2\\*\\*34"):
        p.signs(range(2**20), range(2**20))


hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies


@hypothesis.settings(max_examples=60, deadline=None)
@hypothesis.given(r0=st.integers(0, 2**64 - 40), c0=st.integers(0, 2**64 - 400),
                  dr=st.integers(0, 8), dc=st.integers(0, 200), sr=st.integers(0, 8), sc=st.integers(0, 200))
def test_public_signs_any_block_is_a_slice_of_a_larger_one(r0, c0, dr, dc, sr, sc):
    p = PublicStream(2**200 + 3)
    big = p.signs(range(r0, r0 + 30), range(c0, c0 + 400))
    block = p.signs(range(r0 + sr, r0 + sr + dr), range(c0 + sc, c0 + sc + dc))
    assert np.array_equal(block, big[sr:sr + dr, sc:sc + dc])
