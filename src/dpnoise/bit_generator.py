"""Bit sources: ChaCha20 (dpnoise's secret-noise generator, also a NumPy BitGenerator) and
PublicStream (public, addressable pseudo-random words that can never serve as a secret source).

``ChaCha20()`` is keyed from the operating system and is secure. ``ChaCha20(seed)`` is keyed
from the seed (an int or a ``numpy.random.SeedSequence``) and is reproducible but NOT secure:
anyone who knows the seed knows the noise.
"""
from __future__ import annotations

import threading
from typing import Any

import numpy as np

from dpnoise import _core
from dpnoise._validate import MAX_SIZE, check_threads, count_of, integer, shape_of

_SEED_LIMIT = 1 << 256
_MAX_SPAWN = 1 << 31  # children per spawn call (each is a Python object)
_U64_LIMIT = 1 << 64


def _spawn_count(n: Any) -> int:
    count = integer(n, "n_children")
    if not 0 <= count <= _MAX_SPAWN:
        raise ValueError(f"n_children must be in [0, 2**31], got {count}")
    return count


def _key_from_seed_sequence(seed_seq: np.random.SeedSequence) -> bytes:
    # 256 bits from the SeedSequence, as NumPy's own bit generators draw their state.
    return np.asarray(seed_seq.generate_state(8, np.uint32), dtype="<u4").tobytes()

# native-order uint64: NumPy keeps one dtype object per builtin type (a byte-swapped one differs)
_UINT64 = np.dtype(np.uint64)


class ChaCha20:
    """The ChaCha20 (RFC 8439) keystream as a source of uniform 64-bit words.

    Parameters
    ----------
    seed : None, int in [0, 2**256), or numpy.random.SeedSequence
        None (default) keys the stream from the operating system (``getrandom``): secure, and a
        forked child re-keys itself so it never repeats its parent's stream. An int makes the
        stream reproducible (the 256-bit key is the seed, little-endian) and NOT secure. A
        ``SeedSequence`` gives the key ``seed_seq.generate_state(8, np.uint32)`` (little-endian
        words); also reproducible and NOT secure.

    Raises
    ------
    ValueError
        For an int seed outside [0, 2**256).
    TypeError
        For a seed of another type.
    dpnoise.EntropyError
        When the operating system cannot supply a key.

    Notes
    -----
    Usable as a NumPy bit generator: ``numpy.random.Generator(dpnoise.ChaCha20())`` draws
    NumPy's distributions from the secure key (those are floating-point samplers, not exact;
    use :class:`dpnoise.Generator` for DP noise). NumPy reads a stream reserved for it
    (``_core.NUMPY_STREAM``), never a word that ``random_raw`` or a dpnoise sampler hands out,
    and holds ``self.lock`` around each of its draws, as it does for its own bit generators.
    Thread-safe: one instance may be used from several threads, and no word is ever handed
    out twice. ``spawn(n)`` gives independent children (see docs/reproducibility.md).
    """

    def __init__(self, seed: int | np.random.SeedSequence | None = None) -> None:
        self._seed: int | None = None
        self._seed_seq: np.random.SeedSequence | None = None
        if seed is None:
            core = _core.GeneratorCore()
        elif isinstance(seed, np.random.SeedSequence):
            self._seed_seq = seed
            core = _core.GeneratorCore(_key_from_seed_sequence(seed))
        else:
            value = integer(seed, "seed")
            if not 0 <= value < _SEED_LIMIT:
                raise ValueError(f"seed must be in [0, 2**256), got {value}")
            self._seed = value
            core = _core.GeneratorCore(value.to_bytes(32, "little"))
        self._setup(core, None)

    def _setup(self, core: Any, origin: str | None) -> None:
        self._core = core
        self._origin = origin  # how a spawned child came to be, for repr
        self.lock = threading.Lock()  # NumPy's Generator holds it around its own calls
        self._capsule = self._core.capsule

    @classmethod
    def _child(cls, core: Any, origin: str, seed_seq: np.random.SeedSequence | None = None) -> ChaCha20:
        child = cls.__new__(cls)
        child._seed = None
        child._seed_seq = seed_seq
        child._setup(core, origin)
        return child

    @property
    def is_secure(self) -> bool:
        """True when keyed from the operating system (or spawned from such a key); False for a
        seeded (test) stream."""
        return bool(self._core.is_secure)

    @property
    def seed(self) -> int | None:
        """The int seed of a reproducible stream, None otherwise."""
        return self._seed

    @property
    def seed_seq(self) -> np.random.SeedSequence | None:
        """The SeedSequence this stream was keyed from, None otherwise."""
        return self._seed_seq

    @property
    def capsule(self) -> Any:
        """The ``BitGenerator`` capsule NumPy's Generator reads."""
        return self._capsule

    def random_raw(self, size: Any = None, output: bool = True, *, threads: int | None = None,
                   out: np.ndarray | None = None) -> Any:
        """Raw 64-bit keystream words (uint64) of the sequential stream, in order.

        ``size=None`` returns one Python int. The words of a request are the same for any
        ``threads``; blocks are generated in parallel when ``threads > 1``. With
        ``output=False`` the stream is advanced by the same number of words and None is
        returned (as NumPy's ``BitGenerator.random_raw``), without generating them.

        Parameters
        ----------
        size : int or tuple of ints, optional
            Output shape; None gives one Python int.
        output : bool, default True
            False only advances the stream.
        threads : int, optional
            Worker threads (the words do not depend on it).
        out : numpy.ndarray of uint64, optional
            Fill this array instead of allocating one (NumPy's ``out=``): it must be uint64,
            C-contiguous and writable, because the words are written into its memory in stream
            order. ``size``, if given, must equal its shape. The words are those a call with
            ``size=out.shape`` would return.

        Returns
        -------
        int, numpy.ndarray of uint64 or None
            The words (``out`` itself when given; None when ``output=False``).

        Raises
        ------
        TypeError
            For a non-bool ``output``.
        ValueError
            For a bad ``size`` or ``threads``.
        """
        if output is True and threads is None:  # the per-call fast paths (anything else: below)
            if out is None:
                if size is None:
                    return int(self._core.next_u64())
                if type(size) is int and 0 <= size <= MAX_SIZE:  # exactly shape_of's rule for an int
                    return self._core.random_raw(size, 1)
            elif (type(out) is np.ndarray and out.dtype is _UINT64 and size is None
                  and out.flags.c_contiguous and out.flags.writeable):
                self._core.random_raw_into(out, 1)
                return out
        if not isinstance(output, (bool, np.bool_)):
            raise TypeError(f"output must be a bool, got {type(output).__name__}")
        nthreads = check_threads(threads)
        if out is not None:
            return self._random_raw_into(out, size, output, nthreads)
        shape = shape_of(size)
        if not output:
            self._core.skip(count_of(shape))
            return None
        if shape is None:
            return int(self._core.next_u64())
        return self._core.random_raw(count_of(shape), nthreads).reshape(shape)

    def _random_raw_into(self, out: Any, size: Any, output: bool, nthreads: int) -> np.ndarray:
        if not isinstance(out, np.ndarray):
            raise TypeError(f"out must be a numpy.ndarray of uint64, got {type(out).__name__}")
        if out.dtype != np.uint64:
            raise TypeError(f"out must be a uint64 array, got dtype {out.dtype}")
        if not out.flags.c_contiguous:
            raise ValueError("out must be C-contiguous (the words are written in stream order)")
        if not out.flags.writeable:
            raise ValueError("out must be writeable")
        if not output:
            raise ValueError("out cannot be combined with output=False")
        if size is not None and shape_of(size) != out.shape:
            raise ValueError(f"size {shape_of(size)} does not match out.shape {out.shape}")
        self._core.random_raw_into(out, nthreads)
        return out

    def spawn(self, n_children: int) -> list[ChaCha20]:
        """``n_children`` new, independent ChaCha20 generators (NumPy's ``BitGenerator.spawn``).

        A generator keyed from a SeedSequence spawns as NumPy does: child i is
        ``ChaCha20(seed_seq.spawn(...)[i])``. Otherwise child j (counting every child this
        generator has spawned) is keyed with the first 32 bytes of block j of the parent's
        reserved stream ``_core.SPAWN_STREAM``: a pseudo-random function of the parent key,
        so seeded children are reproducible from (seed, spawn path) and disjoint from each
        other and from the parent, and children of a secure generator are secure (keyed from
        its secret key; they re-key after a fork, as it does).

        Parameters
        ----------
        n_children : int
            The number of new generators, >= 0.

        Returns
        -------
        list of ChaCha20
            The children.
        """
        count = _spawn_count(n_children)
        if self._seed_seq is not None:
            return [ChaCha20(ss) for ss in self._seed_seq.spawn(count)]
        cores = self._core.spawn(count)
        label = "a secure generator" if self.is_secure else self._what()
        return [ChaCha20._child(core, f"child {i} spawned from {label}") for i, core in enumerate(cores)]

    def _what(self) -> str:
        if self._seed_seq is not None:
            return f"seed_seq={self._seed_seq!r}"
        if self._seed is not None:
            return f"seed={self._seed}"
        return str(self._origin)

    def __repr__(self) -> str:
        if self.is_secure:
            if self._origin is not None:
                return "ChaCha20(secure, spawned from a secure generator)"
            return "ChaCha20(secure, keyed from the OS)"
        return f"ChaCha20({self._what()}, NOT SECURE: reproducible stream for tests and benchmarks)"

    def __reduce__(self) -> Any:
        raise TypeError(
            "ChaCha20 generators cannot be pickled or copied: a copy would repeat the same noise"
        )

    def __deepcopy__(self, memo: Any) -> Any:
        self.__reduce__()

    def __copy__(self) -> Any:
        self.__reduce__()


class PublicStream:
    """PUBLIC pseudo-random words: everybody who knows the seed can compute every word.

    For randomness that is meant to be public, such as the public matrix of a local-DP
    protocol or hash seeds shared with clients. It is NOT a source of secret noise and cannot
    be used as one: ``dpnoise.Generator(PublicStream(...))`` and the mechanisms refuse it with
    TypeError, and it has no NumPy capsule.

    Parameters
    ----------
    seed : int in [0, 2**256) or bytes of length 32
        The public key: an int is taken as 32 little-endian bytes (as ChaCha20(seed)).

    The words are standard ChaCha20 keystream (RFC 8439 block function with a 64-bit block
    counter and a 64-bit stream id): word w of stream s is keystream bytes 8w..8w+7 of stream s
    (little-endian), so anyone can recompute them, and any word is addressable directly.

    Raises
    ------
    ValueError
        For seed bytes not 32 long, or an int seed outside [0, 2**256).
    """

    def __init__(self, seed: int | bytes) -> None:
        if isinstance(seed, (bytes, bytearray)):
            key = bytes(seed)
            if len(key) != 32:
                raise ValueError(f"seed bytes must be exactly 32 bytes long, got {len(key)}")
            self._seed: int | bytes = key
        else:
            value = integer(seed, "seed")
            if not 0 <= value < _SEED_LIMIT:
                raise ValueError(f"seed must be in [0, 2**256), got {value}")
            key = value.to_bytes(32, "little")
            self._seed = value
        self._public = _core.PublicStreamCore(key)

    @property
    def seed(self) -> int | bytes:
        """The public seed."""
        return self._seed

    @staticmethod
    def _index(value: Any, name: str) -> int:
        v = integer(value, name)
        if not 0 <= v < _U64_LIMIT:
            raise ValueError(f"{name} must be in [0, 2**64), got {v}")
        return v

    @staticmethod
    def _length(value: Any, name: str) -> int:
        v = integer(value, name)
        if not 0 <= v <= 1 << 40:
            raise ValueError(f"{name} must be in [0, 2**40], got {v}")
        return v

    def words(self, stream_id: int, offset: int, n: int) -> np.ndarray:
        """Words offset, ..., offset + n - 1 of stream ``stream_id`` (uint64 array of n).

        Parameters
        ----------
        stream_id, offset : int
            The stream and the first word's index, each in [0, 2**64).
        n : int
            How many words, in [0, 2**40].

        Returns
        -------
        numpy.ndarray of uint64
            Shape (n,).

        Raises
        ------
        ValueError
            For an index or length out of range.
        OverflowError
            When the words would pass the end of the stream.
        """
        s = self._index(stream_id, "stream_id")
        o = self._index(offset, "offset")
        k = self._length(n, "n")
        if k and o + k - 1 >= _U64_LIMIT:
            raise OverflowError("offset + n passes the end of the stream (2**64 words)")
        return self._public.words(s, o, k)

    def integers(self, stream_id: int, high: int, n: int) -> np.ndarray:
        """The first n uniform integers in [0, high) of stream ``stream_id`` (uint64 array).

        Exactly uniform (rejection from the stream's words in order); prefix-consistent: the
        first k values of a request for n are the values of a request for k.

        Parameters
        ----------
        stream_id : int
            The stream, in [0, 2**64).
        high : int
            The exclusive bound, in [1, 2**64).
        n : int
            How many values, in [0, 2**40].

        Returns
        -------
        numpy.ndarray of uint64
            n values.

        Raises
        ------
        ValueError
            For an argument out of range.
        """
        s = self._index(stream_id, "stream_id")
        m = integer(high, "high")
        if not 1 <= m < _U64_LIMIT:
            raise ValueError(f"high must be in [1, 2**64), got {m}")
        return self._public.integers_below(s, m, self._length(n, "n"))

    def signs(self, rows: range, columns: range) -> np.ndarray:
        """The block ``rows`` x ``columns`` of the public +-1 matrix (int8, shape
        (len(rows), len(columns))), computed without storing the matrix.

        Entry (r, c) is 1 - 2 * (bit c % 64 of word c // 64 of stream r): random access, so a
        block equals the corresponding slice of any larger block. ``rows`` and ``columns``
        are ``range`` objects with step 1 (or (start, stop) pairs) within [0, 2**64).

        Parameters
        ----------
        rows, columns : range or tuple of (int, int)
            The block's rows (streams) and columns.

        Returns
        -------
        numpy.ndarray of int8
            Entries +1 or -1.

        Raises
        ------
        ValueError
            For a step other than 1, bounds outside [0, 2**64) or more than 2**34 entries.
        TypeError
            For anything but a range or a pair.
        """
        r0, r1 = self._span(rows, "rows")
        c0, c1 = self._span(columns, "columns")
        if (r1 - r0) * (c1 - c0) > 1 << 34:
            raise ValueError("the block has more than 2**34 entries; ask for smaller blocks")
        return self._public.signs(r0, r1 - r0, c0, c1 - c0)

    @staticmethod
    def _span(value: Any, name: str) -> tuple[int, int]:
        if isinstance(value, range):
            if value.step != 1:
                raise ValueError(f"{name} must have step 1, got {value.step}")
            start, stop = value.start, value.stop
        elif isinstance(value, tuple) and len(value) == 2:
            start, stop = integer(value[0], name), integer(value[1], name)
        else:
            raise TypeError(f"{name} must be a range or a (start, stop) pair, got {type(value).__name__}")
        if not 0 <= start <= stop <= _U64_LIMIT:
            raise ValueError(f"{name} must satisfy 0 <= start <= stop <= 2**64, got ({start}, {stop})")
        return start, stop

    def __repr__(self) -> str:
        return f"PublicStream(seed={self._seed!r}, PUBLIC: never use for secret noise)"
