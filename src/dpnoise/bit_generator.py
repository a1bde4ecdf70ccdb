"""ChaCha20: dpnoise's bit generator, also usable as a NumPy BitGenerator.

``ChaCha20()`` is keyed from the operating system and is secure. ``ChaCha20(seed)`` is keyed
from the seed and is reproducible but NOT secure: anyone who knows the seed knows the noise.
"""
from __future__ import annotations

import threading
from typing import Any, Optional


from dpnoise import _core
from dpnoise._validate import check_threads, count_of, integer, shape_of

_SEED_LIMIT = 1 << 256


class ChaCha20:
    """The ChaCha20 (RFC 8439) keystream as a source of uniform 64-bit words.

    Parameters
    ----------
    seed : int in [0, 2**256), optional
        None (default) keys the stream from the operating system (``getrandom``): secure, and a
        forked child re-keys itself so it never repeats its parent's stream. An int makes the
        stream reproducible (the 256-bit key is the seed, little-endian) and NOT secure.

    Notes
    -----
    Usable as a NumPy bit generator: ``numpy.random.Generator(dpnoise.ChaCha20())`` draws
    NumPy's distributions from the secure stream (those are floating-point samplers, not
    exact; use :class:`dpnoise.Generator` for DP noise). Thread-safe: one instance may be
    used from several threads, and no word is ever handed out twice.
    """

    def __init__(self, seed: Optional[int] = None) -> None:
        if seed is None:
            self._core = _core.ChaCha20Core()
        else:
            seed = integer(seed, "seed")
            if not 0 <= seed < _SEED_LIMIT:
                raise ValueError(f"seed must be in [0, 2**256), got {seed}")
            self._core = _core.ChaCha20Core(seed.to_bytes(32, "little"))
        self._seed = seed
        self.lock = threading.Lock()  # NumPy's Generator holds it around its own calls
        self._capsule = self._core.capsule

    @property
    def is_secure(self) -> bool:
        """True when keyed from the operating system; False for a seeded (test) stream."""
        return bool(self._core.is_secure)

    @property
    def seed(self) -> Optional[int]:
        """The seed of a reproducible stream, None for a secure one."""
        return self._seed

    @property
    def capsule(self) -> Any:
        """The ``BitGenerator`` capsule NumPy's Generator reads."""
        return self._capsule

    def random_raw(self, size: Any = None, *, threads: Optional[int] = None) -> Any:
        """Raw 64-bit keystream words (uint64), in stream order.

        ``size=None`` returns one Python int. The words of a request are the same for any
        ``threads``; blocks are generated in parallel when ``threads > 1``.
        """
        nthreads = check_threads(threads)
        shape = shape_of(size)
        if shape is None:
            return int(self._core.next_u64())
        return self._core.random_raw(count_of(shape), nthreads).reshape(shape)

    def __repr__(self) -> str:
        if self.is_secure:
            return "ChaCha20(secure, keyed from the OS)"
        return f"ChaCha20(seed={self._seed}, NOT SECURE: reproducible stream for tests and benchmarks)"

    def __reduce__(self) -> Any:
        raise TypeError(
            "ChaCha20 generators cannot be pickled or copied: a copy would repeat the same noise"
        )

    def __deepcopy__(self, memo: Any) -> Any:
        self.__reduce__()

    def __copy__(self) -> Any:
        self.__reduce__()
