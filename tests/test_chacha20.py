"""ChaCha20 against RFC 8439, and the keystream layout of dpnoise's streams."""
from __future__ import annotations

import pathlib
from typing import Any, Callable, Iterator, Optional

import numpy as np
import numpy.typing as npt
import pytest

import dpnoise
from dpnoise import _core

# RFC 8439 §2.3.2 (block function) and Appendix A.1 test vectors #1, #2, #3, #5.
RFC_VECTORS = [
    (bytes(range(32)), 1, bytes.fromhex("000000090000004a00000000"),
     "10f1e7e4d13b5915500fdd1fa32071c4c7d1f4c733c068030422aa9ac3d46c4e"
     "d2826446079faa0914c2d705d98b02a2b5129cd1de164eb9cbd083e8a2503c4e"),
    (bytes(32), 0, bytes(12),
     "76b8e0ada0f13d90405d6ae55386bd28bdd219b8a08ded1aa836efcc8b770dc7"
     "da41597c5157488d7724e03fb8d84a376a43b8f41518a11cc387b669b2ee6586"),
    (bytes(32), 1, bytes(12),
     "9f07e7be5551387a98ba977c732d080dcb0f29a048e3656912c6533e32ee7aed"
     "29b721769ce64e43d57133b074d839d531ed1f28510afb45ace10a1f4b794d6f"),
    (bytes(31) + b"\x01", 1, bytes(12),
     "3aeb5224ecf849929b9d828db1ced4dd832025e8018b8160b82284f3c949aa5a"
     "8eca00bbb4a73bdad192b5c42f73f2fd4e273644c8b36125a64addeb006c13a0"),
    (bytes(32), 0, bytes(11) + b"\x02",
     "c2c64d378cd536374ae204b9ef933fcd1a8b2288b3dfa49672ab765b54ee27c7"
     "8a970e0e955c14f3a88e741b97c286f75f8fc299e8148362fa198a39531bed6d"),
]


@pytest.mark.parametrize("key,counter,nonce,expected", RFC_VECTORS)
def test_rfc8439_block_vectors(key: bytes, counter: int, nonce: bytes, expected: str) -> None:
    assert _core.chacha20_block(key, counter, nonce).hex() == expected


def test_simd_and_portable_paths_agree_across_counter_carry() -> None:
    key = bytes(range(100, 132))
    # start just below 2^32 so the 64-bit counter carries inside an 8-block SIMD batch
    first = (1 << 32) - 5
    a = _core.chacha20_stream_words(key, 77, first, 37, True)
    b = _core.chacha20_stream_words(key, 77, first, 37, False)
    assert np.array_equal(a, b)


def test_counter_wraparound_is_refused() -> None:
    with pytest.raises(OverflowError):
        _core.chacha20_stream_words(bytes(32), 0, (1 << 64) - 2, 3, True)


def test_seeded_stream_is_standard_chacha20_keystream() -> None:
    """seed -> 256-bit little-endian key; the sequential stream is stream id 0, block 0, 1, ..."""
    seed = 0x0123456789ABCDEF_FEDCBA9876543210_00112233445566778899AABBCCDDEEFF
    words = dpnoise.ChaCha20(seed).random_raw(40)
    key = seed.to_bytes(32, "little")
    raw = _core.chacha20_stream_words(key, 0, 0, 5, False)
    expect = raw[0::2].astype(np.uint64) | (raw[1::2].astype(np.uint64) << np.uint64(32))
    assert np.array_equal(words, expect)


def test_stream_matches_an_independent_implementation() -> None:
    crypto = pytest.importorskip("cryptography.hazmat.primitives.ciphers")
    key = bytes(range(7, 39))
    for stream, counter in [(0, 0), (5, 3), (2**40 + 1, 2**32 - 1)]:
        # dpnoise layout: words 12-13 = 64-bit block counter, 14-15 = 64-bit stream id
        nonce16 = counter.to_bytes(8, "little") + stream.to_bytes(8, "little")
        enc = crypto.Cipher(crypto.algorithms.ChaCha20(key, nonce16), mode=None).encryptor()
        expected = np.frombuffer(enc.update(bytes(64)), dtype="<u4")
        ours = _core.chacha20_stream_words(key, stream, counter, 1, True)
        assert np.array_equal(ours, expected)


def test_backend_is_reported() -> None:
    assert _core.chacha20_backend() in {"avx512f", "avx512vl", "avx2", "portable"}


# --- every kernel (16-block AVX-512F, 8-block AVX-512VL / AVX2, portable) writes the same words --

KERNELS = _core._chacha20_kernels_for_testing()
ForceKernel = Callable[[Optional[str]], None]  # (evaluated at run time: no "|" on Python 3.9)


@pytest.fixture
def force_kernel() -> Iterator[Callable[[str | None], None]]:
    yield _core._force_chacha20_kernel_for_testing
    _core._force_chacha20_kernel_for_testing(None)


def test_the_fastest_kernel_is_chosen() -> None:
    assert KERNELS[0] == "portable"
    assert _core.chacha20_backend() == KERNELS[-1]
    if not _core.X86_SIMD_BUILT:  # another CPU, or the forced-portable build (DPNOISE_NO_SIMD)
        assert KERNELS == ["portable"]
        return
    # a CPU with AVX-512F gets the 16-block kernel on 512-bit vectors
    cpuinfo = pathlib.Path("/proc/cpuinfo")
    flags = cpuinfo.read_text().split() if cpuinfo.exists() else []
    if "avx512f" in flags and "avx2" in flags:
        assert KERNELS[-1] == "avx512f"


# Counters chosen so that the 64-bit counter carries at every position of a 16-block group
# (first lane, middle, last lane, inside a later group) and lengths around 8 and 16 blocks.
FIRST_BLOCKS = [0, 3, 2**32 - 1, 2**32 - 9, 2**32 - 16, 2**32 - 20, 2**40 + 5, 2**64 - 2000]
NBLOCKS = [1, 2, 7, 8, 9, 15, 16, 17, 23, 24, 31, 32, 33, 47, 48, 255, 257, 1000]


@pytest.mark.parametrize("first", FIRST_BLOCKS)
def test_every_kernel_writes_the_portable_words(force_kernel: ForceKernel, first: int) -> None:
    key = bytes(range(50, 82))
    for nblocks in NBLOCKS:
        want = _core.chacha20_stream_words(key, 2**63 + 7, first, nblocks, False)
        for kernel in KERNELS:
            force_kernel(kernel)
            got = _core.chacha20_stream_words(key, 2**63 + 7, first, nblocks, True)
            assert np.array_equal(got, want), (kernel, first, nblocks)


def _words_of_stream(seed: int, n: int) -> npt.NDArray[np.uint64]:
    """Words 0..n-1 of the sequential stream (id 0) of ChaCha20(seed), from the portable kernel."""
    raw = _core.chacha20_stream_words(seed.to_bytes(32, "little"), 0, 0, (n + 7) // 8, False)
    return (raw[0::2].astype(np.uint64) | (raw[1::2].astype(np.uint64) << np.uint64(32)))[:n]


# Call lengths in words: buffered tails, whole 8- and 16-block groups and what lies between, and
# calls long enough for several 4096-block tasks (threads=2 splits those).
CALL_WORDS = [1, 3, 8, 64, 127, 128, 129, 5, 1024, 1023, 136, 2**15 + 3, 7, 4096 * 8 * 2 + 77, 2, 200]


@pytest.mark.parametrize("threads", [1, 2])
def test_every_kernel_gives_the_same_stream_across_calls(force_kernel: ForceKernel, threads: int) -> None:
    seed = 0x5EED_0F_C4A_C4A_20
    want = _words_of_stream(seed, sum(CALL_WORDS))
    for kernel in KERNELS:
        force_kernel(kernel)
        rng = dpnoise.ChaCha20(seed)
        parts = []
        for i, n in enumerate(CALL_WORDS):
            if i % 3 == 2:  # some calls into a preallocated buffer, one at a misaligned offset
                buf = np.zeros(n + 1, dtype=np.uint64)[1:]
                rng.random_raw(out=buf, threads=threads)
                parts.append(buf.copy())
            else:
                parts.append(rng.random_raw(n, threads=threads))
        assert np.array_equal(np.concatenate(parts), want), kernel


def test_every_kernel_gives_the_same_samples_and_numpy_words(force_kernel: ForceKernel) -> None:
    # samplers read reserved streams through 16-block refills, NumPy's interface through 32-block ones
    outs = []
    for kernel in KERNELS:
        force_kernel(kernel)
        rng = dpnoise.default_rng(2024)
        outs.append((rng.discrete_laplace(10, 3 * _core.SAMPLES_PER_STREAM + 5, threads=2),
                     # ChaCha20 is a BitGenerator to NumPy through its capsule, not by subclassing
                     np.random.Generator(dpnoise.ChaCha20(7)).integers(0, 2**63, 5000)))  # type: ignore[arg-type]
    for lap, ints in outs[1:]:
        assert np.array_equal(lap, outs[0][0]) and np.array_equal(ints, outs[0][1])


def test_forcing_a_kernel_refuses_bad_names(force_kernel: ForceKernel) -> None:
    with pytest.raises(ValueError, match="kernel must be one of"):
        force_kernel("avx1024")
    with pytest.raises(TypeError, match="kernel must be a str or None"):
        force_kernel(3)  # type: ignore[arg-type]  # the wrong type on purpose


# --- random_raw(out=): NumPy's out= for the raw keystream -------------------------------------

def test_random_raw_out_fills_the_same_words_in_place() -> None:
    buf = np.zeros((3, 5), dtype=np.uint64)
    got = dpnoise.default_rng(seed=11).random_raw(out=buf)
    assert got is buf
    want = dpnoise.default_rng(seed=11).random_raw((3, 5))
    assert np.array_equal(buf, want)
    # the stream goes on where it stopped, as after an allocating call
    a, b = dpnoise.ChaCha20(5), dpnoise.ChaCha20(5)
    a.random_raw(out=np.empty(1000, dtype=np.uint64), threads=2)
    b.random_raw(1000)
    assert a.random_raw(4).tolist() == b.random_raw(4).tolist()


def test_random_raw_out_refuses_what_it_cannot_fill() -> None:
    rng = dpnoise.default_rng(seed=1)
    with pytest.raises(TypeError, match="out must be a uint64 array"):
        rng.random_raw(out=np.zeros(4, dtype=np.int64))
    with pytest.raises(TypeError, match="out must be a numpy.ndarray"):
        rng.random_raw(out=[0, 0])  # type: ignore[arg-type]  # the wrong type on purpose
    with pytest.raises(ValueError, match="C-contiguous"):
        rng.random_raw(out=np.zeros((4, 4), dtype=np.uint64).T)
    ro = np.zeros(4, dtype=np.uint64)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="writeable"):
        rng.random_raw(out=ro)
    with pytest.raises(ValueError, match="does not match out.shape"):
        rng.random_raw(3, out=np.zeros(4, dtype=np.uint64))
    with pytest.raises(ValueError, match="ChaCha20 bit generator only"):
        dpnoise.Generator(np.random.PCG64(1)).random_raw(out=np.zeros(4, dtype=np.uint64))


def test_random_raw_out_refuses_a_byte_swapped_uint64_in_both_layers() -> None:
    """A big-endian uint64 is not the words in native order: the Python wrapper and the
    extension's own check both refuse it (the extension accepted any 8-byte unsigned dtype)."""
    swapped = np.zeros(4, dtype=np.dtype(np.uint64).newbyteorder())
    with pytest.raises(TypeError, match="uint64"):
        dpnoise.default_rng(seed=1).random_raw(out=swapped)
    with pytest.raises(TypeError, match="uint64"):
        dpnoise.ChaCha20(1)._core.random_raw_into(swapped, 1)
    assert not swapped.any()


@pytest.mark.parametrize("size", [None, 0, 1, 100, (100,), np.int64(100)])
def test_random_raw_per_call_paths_give_the_words_of_the_general_path(size: Any) -> None:
    """The per-call fast paths (size None or an int, no threads, out of a plain native uint64
    array) return the words the general path does, and the stream goes on alike."""
    a, b = dpnoise.ChaCha20(9), dpnoise.ChaCha20(9)
    fast = a.random_raw(size)
    slow = b.random_raw(size, threads=1)
    if size is None:
        assert isinstance(fast, int) and fast == slow
    else:
        assert fast.dtype == np.uint64 and fast.shape == slow.shape and np.array_equal(fast, slow)
    buf = np.empty(37, dtype=np.uint64)
    assert a.random_raw(out=buf) is buf
    assert np.array_equal(buf, b.random_raw(37, threads=1))
    assert a.random_raw(3).tolist() == b.random_raw(3).tolist()
