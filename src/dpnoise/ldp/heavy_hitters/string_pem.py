"""String PEM: heavy hitters over str/bytes items of up to ``max_length`` bytes (default 64),
found with their exact bytes and no dictionary: prefix extension (PEM, Wang, Li & Jha 2019,
IEEE TDSC 18(2), §4; the prefix tree of Bassily, Nissim, Stemmer & Thakurta 2017, "Practical
locally private heavy hitters", NeurIPS) over BYTES, with a terminator so that strings of every
length end somewhere.

Each string x is read as x⊥ (its bytes, then a terminator). There are L = max_length + 1 levels;
level l reports the first b_l = l + 1 symbols of x⊥: the prefix x[:b_l] when len(x) >= b_l
(incomplete), else the whole string with its terminator (complete). A user's client draws its
level from the SECRET generator before reading the item (uniformly, or with the public integer
``level_weights``), hashes that prefix to a 64-bit
key with a keyed polynomial hash (public key; cpp/include/dpnoise/ldp/string_pem.hpp) and reports
the key through the fast-local-hashing oracle every heavy-hitters method uses: one report
(level, pool index, bucket), the whole ε on it, so the protocol is ε-LDP (``PureDP(ε)``).

Server (``top``/``above``): at level 0 the candidates are the 256 one-byte prefixes and the
empty string; at each level the ``keep`` candidates with the largest estimates survive; a
surviving incomplete prefix of b bytes becomes 256 incomplete candidates of b + 1 bytes at the
next level (one per next byte) and one complete candidate (the string that ends there). A
complete string's key is the same at every level from its length on, so it is estimated from
the SUM of those levels' counts (all levels l >= len(x)): for a 23-byte string, 42 of the 65
levels' users. Nothing enumerates the domain: the server evaluates at most L × 257 × keep
candidates, each in O(k′) (``_core.ldp.hh_support``).

Items: str (UTF-8; ``item_type="str"``, the default) or bytes/bytearray (``item_type="bytes"``),
any bytes included (UTF-8, embedded and trailing NUL), one per user; NumPy ``U``/``S`` arrays are
read element by element (NumPy itself drops their trailing NULs). An item longer than
``max_length`` bytes is refused with a ValueError naming its position and ``max_length``
(documented rule: no truncation, no hashing). ``top()`` returns str for ``item_type="str"`` (bytes
when the found bytes are not valid UTF-8, or with ``decode=False``) and bytes for
``item_type="bytes"``.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from ... import _core
from ...generator import Generator
from .._kernels import Kernels, KernelTable
from .._protocol import native
from ._base import Group, HeavyHittersConfiguration, HHAggregator
from ._items import _count
from ._strings import _pack_rows, _PackedStrings, _StringCodec, prefix_hash_key

MAX_KEEP = 1 << 16
MAX_LEVEL_WEIGHT = 1 << 32
DEFAULT_K_PRIME = 2048     # the pool term's share of a found string's variance: ~40% at 10^6 users (docs/heavy_hitters.md)


class StringAggregator(HHAggregator):
    """The string_pem server: :class:`HHAggregator`'s state, merge and wire format; ``top``,
    ``above`` and ``estimate(items)`` over strings."""

    def _item_estimates(self, items: Any) -> tuple[np.ndarray, np.ndarray]:
        if items is None:
            raise TypeError("heavy hitters do not enumerate their domain: pass the items to estimate")
        pr = self.protocol
        assert isinstance(pr, StringPEM)  # the aggregator of StringPEM only
        packed = pr.codec.encode(items)
        n_items = packed.shape[0]
        est, var = np.zeros(n_items), np.zeros(n_items)
        if self.n == 0 or n_items == 0:
            return est, var
        if pr.codec.fixed:  # integers: the last level's prefix is the whole item
            last = pr.levels - 1
            self._need(last, last)
            return self.count_estimates(self.level_counts(last), int(self.group_sizes()[last]),
                                      pr._keys(packed, np.full(n_items, pr.levels), self.threads), pr.options["k_prime"])
        # a string of λ bytes is complete, with one key, at every level l >= λ (8(l + 1) > 8λ bits)
        return self.pooled_estimates(packed, [8 * (lvl + 1) for lvl in range(pr.levels)], pr.options["k_prime"])

    def _need(self, first: int, last: int) -> None:
        """ValueError unless levels first..last (which estimate the items) have reports."""
        if int(self.group_sizes()[first:last + 1].sum()) == 0:
            raise ValueError("too few reports: the levels that estimate these items have none yet")


class StringPEM(HeavyHittersConfiguration, name="string_pem", aggregator=StringAggregator):
    """Heavy hitters over strings of up to ``max_length`` bytes (see the module docstring).

    Parameters
    ----------
    epsilon : float
        ε per user.
    item_bits : int, optional
        Integer items of this many bits (in [1, 64]; then ``item_type`` defaults to "int" and the
        items are read as ceil(item_bits/8) big-endian bytes, with no terminator level).
    item_type : {"str", "bytes", "int"}
        What ``top()`` returns (default "str", or "int" with ``item_bits``); str and bytes
        configurations accept both str and bytes items.
    max_length : int
        Longest str/bytes item in bytes, in [1, 255] (default 64); longer items are refused.
    k : int
        Heavy hitters wanted (default 10).
    g, pool_key
        As for every heavy-hitters method.
    keep : int
        Candidates that survive each level (default max(8k, 64), at most 2^16); top() holds
        keep × 256 prefixes of up to max_length bytes per level (16 MiB for keep = 1024 and
        64-byte strings).
    k_prime : int
        Public hash functions (default 2048), shared by all levels.
    level_weights : sequence of int, optional
        Public integer weights w_l >= 1, one per level (``levels`` of them): a client reports
        level l with probability w_l / sum(w). Default: equal (and then absent from ``params()``:
        the configuration, its wire format and its client stream are those of the uniform
        levels). The estimator scales each level by the users it received, so any weights keep
        it unbiased; docs/heavy_hitters.md says when unequal ones help (little). ``params()``
        records them as comma-separated text, which is accepted too.

    Raises
    ------
    TypeError, ValueError
        For a bad option, naming it.

    Examples
    --------
    >>> import dpnoise
    >>> hh = dpnoise.ldp.HeavyHitters("string_pem", 4.0, max_length=32, k=1, k_prime=64)
    >>> agg = hh.aggregator().add(hh.client().privatize(["org.example.app"] * 3000 + ["com.other"] * 100))
    >>> agg.top(1)[0].item
    'org.example.app'
    """

    codec: _StringCodec
    example_options: ClassVar[dict[str, Any]] = {"k_prime": 256, "max_length": 24}
    # one row: its prefix hash's time depends on the string's length
    kernel_table = KernelTable(variable_time=Kernels(client=HeavyHittersConfiguration._fused_client, check=HeavyHittersConfiguration._any_items))

    def __init__(self, epsilon: float, item_bits: Any = None, *, item_type: Any = None, max_length: Any = None,
                 k: Any = 10, g: Any = None, pool_key: Any = None, **options: Any) -> None:
        self._string_codec = _StringCodec(item_type, item_bits, max_length)
        super().__init__(epsilon, k=k, g=g, pool_key=pool_key, **options)

    def _setup(self, options: dict[str, Any]) -> dict[str, Any]:
        self.codec = self._string_codec
        keep = _count(options.pop("keep", min(max(8 * self.k, 64), MAX_KEEP)), "keep", self.k, MAX_KEEP)
        kp = _count(options.pop("k_prime", DEFAULT_K_PRIME), "k_prime", 1, 1 << 20)
        weights = options.pop("level_weights", None)
        self.groups = [Group(1, 0, 0, kp) for _ in range(self.levels)]
        self.hash_key = prefix_hash_key(self.pool_key)  # in [1, p): the polynomial hash's public point
        if weights is None:  # uniform levels: today's configuration, its params and client stream unchanged
            return {"keep": keep, "k_prime": kp}
        return {"keep": keep, "k_prime": kp, "level_weights": self._check_weights(weights)}

    def _check_weights(self, weights: Any) -> str:
        """``level_weights`` (L integers in [1, 2^32], or their comma-separated form, which
        ``params()`` records: hashable and JSON-stable) canonical; TypeError/ValueError naming it."""
        if isinstance(weights, str):
            try:
                weights = [int(w) for w in weights.split(",")]
            except ValueError:
                raise ValueError("level_weights as text must be comma-separated integers") from None
        elif isinstance(weights, bytes) or not hasattr(weights, "__len__"):
            raise TypeError(f"level_weights must be a sequence of {self.levels} integers, one per level")
        if len(weights) != self.levels:
            raise ValueError(f"level_weights must have one entry per level ({self.levels}), got {len(weights)}")
        return ",".join(str(_count(w, "level_weights", 1, MAX_LEVEL_WEIGHT)) for w in weights)

    def __repr__(self) -> str:
        items = "".join(f", {k}={v!r}" for k, v in self.codec.params().items())
        extra = "".join(f", {k}={v!r}" for k, v in self.options.items())
        return f"HeavyHitters('string_pem', epsilon={self.epsilon}{items}, k={self.k}{extra})"

    @property
    def levels(self) -> int:
        """L: level l reports the first l + 1 symbols of x⊥; L = max_length + 1 for strings,
        max_length for integers (all of max_length bytes: their last prefix is the item)."""
        return self.codec.max_length + (0 if self.codec.fixed else 1)

    # -- items and clients ----------------------------------------------------------------------
    @classmethod
    def example(cls, epsilon: float = 4.0, item_bits: Any = None) -> StringPEM:
        """A small instance, for tests, demos and benchmarks that iterate the registry.

        Parameters
        ----------
        epsilon : float
            ε per user.
        item_bits : int, optional
            Integer items of this many bits; default: strings of up to 24 bytes.

        Returns
        -------
        StringPEM
            k = 4, k′ = 256.
        """
        if item_bits is not None:
            return cls(epsilon, item_bits, k=4, k_prime=256)
        return cls(epsilon, k=4, **cls.example_options)

    def example_items(self, n: int, seed: int = 0) -> np.ndarray:
        """Test items with four heavy ones (NumPy, seeded: test data only).

        Parameters
        ----------
        n : int
            How many items.
        seed : int
            NumPy seed.

        Returns
        -------
        numpy.ndarray
            ``n`` strings (object array): half of them four heavy ones (one with non-ASCII
            UTF-8, one with an embedded NUL), the rest uniform over 60 others; integers as for
            every heavy-hitters method when item_type="int".
        """
        if self.codec.fixed:
            return super().example_items(n, seed)
        gen = np.random.default_rng(seed)
        heavy = ["org.example.mail", "café.niño.app", "a\x00b.tool", "io.x"]
        alphabet = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz.", dtype=np.uint8)
        others = ["com." + bytes(alphabet[gen.integers(0, alphabet.size, size=int(gen.integers(3, 16)))]).decode()
                  for _ in range(60)]
        vocab = np.array(heavy + others, dtype=object)
        pick = np.where(gen.random(n) < 0.5, gen.integers(0, 4, size=n), gen.integers(4, vocab.size, size=n))
        return vocab[pick]

    # the two below take packed strings, not the envelope's int64 array (only .shape[0] is read
    # between them): not expressible without making every configuration generic in its items
    def _encode(self, items: Any) -> _PackedStrings:  # type: ignore[override]
        return self.codec.encode(items)

    def _privatize(self, rng: Generator, x: _PackedStrings, threads: int) -> dict[str, np.ndarray]:  # type: ignore[override]
        levels = list(range(1, self.levels + 1))  # b_l = l + 1
        weights = self.options.get("level_weights")
        cumulative = [] if weights is None else np.cumsum([int(w) for w in weights.split(",")]).tolist()
        gr, j, v = _core.ldp.string_pem_privatize(native(rng), x.data, x.offsets, levels, cumulative, self.pool,
                                                  self.options["k_prime"], self.hash_key, self.g,
                                                  self.gamma.numerator, self.gamma.denominator, threads)
        return {"groups": gr, "indices": j, "values": v}

    def aggregator(self, candidates: Sequence[Any] | None = None, *, threads: Any = None) -> StringAggregator:
        """An empty aggregator.

        Parameters
        ----------
        candidates : None
            Refused (TypeError): string_pem needs no dictionary.
        threads : int, optional
            Threads for the support sums of top/above.

        Returns
        -------
        StringAggregator
        """
        return StringAggregator(self, candidates, threads=threads)

    # -- server ---------------------------------------------------------------------------------
    def _keys(self, packed: _PackedStrings, prefix: np.ndarray, threads: int) -> np.ndarray:
        """The 64-bit keys of the first ``prefix[i]`` symbols of item i followed by ⊥."""
        return _core.ldp.string_prefix_keys(packed.data, packed.offsets, np.ascontiguousarray(prefix, dtype=np.int64),
                                            self.hash_key, threads)

    def _estimate_rows(self, agg: HHAggregator, rows: np.ndarray, b: int, counts: np.ndarray,
                       users: int) -> tuple[np.ndarray, np.ndarray]:
        """count_estimates of the first b symbols of each row's x⊥ (none when no user reported)."""
        if not rows.shape[0] or users == 0:
            return np.zeros(0), np.zeros(0)
        return agg.count_estimates(counts, users, self._keys(_pack_rows(rows), np.full(rows.shape[0], b),
                                                                 agg.threads), self.options["k_prime"])

    def max_candidates(self) -> int:
        """M: the complete strings ``top`` can estimate, the empty one then at most ``keep`` per
        later level (1 + keep (L − 1)); for integer items the last level's keep x 256 prefixes.

        Returns
        -------
        int
            The bound the simultaneous intervals of ``top``/``above`` are over.
        """
        keep, L = self.options["keep"], self.levels
        if self.codec.fixed:
            return 256 if L == 1 else min(keep, 256 ** (L - 1)) * 256
        return 1 + keep * (L - 1)

    def _find(self, agg: HHAggregator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        keep, L = self.options["keep"], self.levels
        sizes = agg.group_sizes()
        level = [agg.level_counts(l) for l in range(L)]  # each (k′, g)
        pooled = level[0].copy()
        for counts in level[1:]:
            pooled += counts  # the levels >= lvl, updated below
        users = agg.n
        prefixes = np.arange(256, dtype=np.uint8)[:, None]     # incomplete candidates, b bytes each
        complete = np.zeros((0 if self.codec.fixed else 1, 0), dtype=np.uint8)  # complete, b - 1 bytes each
        found: list[np.ndarray] = []
        found_est: list[np.ndarray] = []
        found_var: list[np.ndarray] = []
        byte = np.arange(256, dtype=np.uint8)
        for lvl in range(L):
            b, counts, n_l = lvl + 1, level[lvl], int(sizes[lvl])
            ce, cv = self._estimate_rows(agg, complete, b, pooled, users)
            pe, pv = self._estimate_rows(agg, prefixes, b, counts, n_l)
            if self.codec.fixed and b == L:  # integers: the last level's prefixes are the items
                found, found_est, found_var = [*found, prefixes[:pe.size]], [*found_est, pe], [*found_var, pv]
                break
            best = np.argsort(-np.concatenate([ce, pe]), kind="stable")[:keep]
            done = best[best < ce.size]
            found, found_est, found_var = [*found, complete[done]], [*found_est, ce[done]], [*found_var, cv[done]]
            grow = prefixes[best[best >= ce.size] - ce.size] if pe.size else prefixes[:0]
            pooled -= counts
            users -= n_l
            complete = grow[:0] if self.codec.fixed else grow
            prefixes = np.empty((0, b + 1), dtype=np.uint8) if b + 1 > self.codec.max_length else np.concatenate(
                [np.repeat(grow, 256, axis=0), np.tile(byte, grow.shape[0])[:, None]], axis=1)
            if not grow.shape[0]:
                break
        items = np.array([row.tobytes() for rows in found for row in rows] + [None], dtype=object)[:-1]
        return items, np.concatenate(found_est or [np.zeros(0)]), np.concatenate(found_var or [np.zeros(0)])
