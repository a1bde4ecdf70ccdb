"""Str/bytes items of up to ``max_length`` bytes (in [1, 255]) for every heavy-hitters method:
packed byte strings (``_StringCodec``), their keys (the keyed polynomial prefix hash of
cpp/include/dpnoise/ldp/string_pem.hpp, over symbols or bits), and the server's prefix
extension over the BITS of x⊥ shared by "pem" and "treehist" over strings (string_pem is its
special case of one byte per level).

A string x of λ bytes is read as x⊥, its bytes (most significant bit first) then a terminator.
A level of b bits reports the first b bits of x (incomplete) when 8λ >= b, else x⊥ (complete:
its key is the same at every such level). With levels b_0 < ... < b_{L-1}, b_{L-1} > 8
max_length, the server extends each surviving incomplete prefix P of b_{l-1} bits by every
(b_l − b_{l-1})-bit suffix (incomplete candidates) and by every string of λ bytes that starts
with P and ends in this step, b_{l-1} <= 8λ < b_l (complete candidates, estimated from the
counts of all levels l' >= l, where they are complete). ``select`` keeps candidates per level
(PEM: the ``keep`` largest; TreeHist: those above z standard errors of an empty key).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ... import _core
from ...bit_generator import PublicStream
from ._items import ItemCodec, _count

HASH_STREAM = 0x53504B31  # "SPK1": word 0 of this public stream (pool_key) is the prefix-hash key
PRIME = (1 << 61) - 1      # the prefix hash's field (string_pem.hpp)
DEFAULT_MAX_LENGTH = 64
MAX_LENGTH = 255
ITEM_TYPES = ("str", "bytes", "int")


def prefix_hash_key(pool_key: int) -> int:
    """The public point of the polynomial prefix hash, in [1, 2^61 − 1): from word 0 of public
    stream HASH_STREAM of the configuration's pool key.

    Parameters
    ----------
    pool_key : int
        The configuration's public pool key.

    Returns
    -------
    int
        The hash key.
    """
    word = int(PublicStream(pool_key).words(HASH_STREAM, 0, 1)[0])
    return 1 + word % (PRIME - 1)


@dataclass(frozen=True)
class _PackedStrings:
    """Checked items, packed: item i is ``data[offsets[i]:offsets[i + 1]]``."""

    data: np.ndarray     # uint8
    offsets: np.ndarray  # int64, n + 1

    @property
    def shape(self) -> tuple[int]:
        return (self.offsets.size - 1,)

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)


def _pack_rows(rows: np.ndarray) -> _PackedStrings:
    """Equal-length byte strings (a (m, w) uint8 matrix) as :class:`_PackedStrings`."""
    m, w = rows.shape
    return _PackedStrings(np.ascontiguousarray(rows).reshape(-1), np.arange(m + 1, dtype=np.int64) * w)


class _StringCodec:
    """The items of a string_pem configuration (and of every method's configurations over str/bytes
    of more than 8 bytes) as byte strings: str/bytes checked and packed in
    C++ (``_core.ldp.string_pack``); integers (``item_type="int"``, checked by
    :class:`~dpnoise.ldp.heavy_hitters._items.ItemCodec`) as ceil(item_bits/8) big-endian bytes."""

    def __init__(self, item_type: Any, item_bits: Any, max_length: Any) -> None:
        if item_type is None:
            item_type = "int" if item_bits is not None else "str"
        if item_type not in ITEM_TYPES:
            raise ValueError(f"item_type must be one of {list(ITEM_TYPES)}, got {item_type!r}")
        self.item_type: str = item_type
        self.ints: ItemCodec | None = None
        if item_type == "int":
            if max_length is not None:
                raise TypeError("max_length applies to str/bytes items only (item_type='str' or 'bytes')")
            self.ints = ItemCodec("int", item_bits, None, "refuse")
            self.max_length: int = (self.ints.item_bits + 7) // 8
        else:
            if item_bits is not None:
                raise TypeError("item_bits applies to integer items only: str/bytes items are bounded by max_length")
            self.max_length = _count(DEFAULT_MAX_LENGTH if max_length is None else max_length, "max_length", 1,
                                     MAX_LENGTH)

    @property
    def fixed(self) -> bool:
        """Every item has exactly max_length bytes (integers): no terminator level is needed."""
        return self.ints is not None

    @property
    def item_bits(self) -> int:
        """The bits of an integer item; 8 × max_length for strings (informational)."""
        return self.ints.item_bits if self.ints is not None else 8 * self.max_length

    def params(self) -> dict[str, Any]:
        """The codec's part of the configuration's parameters."""
        if self.ints is not None:
            return {"item_type": "int", "item_bits": self.ints.item_bits}
        return {"item_type": self.item_type, "max_length": self.max_length}

    def encode(self, items: Any, name: str = "items") -> _PackedStrings:
        """The items packed; TypeError/ValueError naming ``name`` and a bad item's position,
        never its value (items longer than ``max_length`` bytes are refused)."""
        if self.ints is not None:
            x = self.ints.encode(items, name)
            rows = x.astype(">u8").view(np.uint8).reshape(-1, 8)[:, 8 - self.max_length:]
            return _pack_rows(rows)
        if isinstance(items, (str, bytes, bytearray)):
            raise TypeError(f"{name} must be a sequence of str/bytes, got a single {type(items).__name__}")
        if isinstance(items, np.ndarray):
            if items.ndim != 1:
                raise ValueError(f"{name} must be 1-D, got {items.ndim}-D")
            if items.dtype.kind not in "OUS":
                raise TypeError(f"{name} must be str/bytes (item_type={self.item_type!r}), got dtype {items.dtype}")
        try:
            data, offsets = _core.ldp.string_pack(items, self.max_length)
        except (TypeError, ValueError) as exc:
            raise type(exc)(str(exc).replace("items", name, 1)) from None
        return _PackedStrings(data, offsets)

    def candidate_map(self, candidates: Sequence[Any] | None) -> dict[int, Any]:
        """No dictionary is needed (or taken): found strings are spelled out byte by byte."""
        if candidates is not None:
            raise TypeError("this configuration takes no candidates: it finds strings without a dictionary")
        return {}

    def decode(self, values: np.ndarray, candidates: dict[int, Any], decode: bool = True) -> list[Any]:
        """The found byte strings as Python items: int (item_type="int"), str (when ``decode``,
        valid UTF-8 and item_type="str") or bytes."""
        if self.ints is not None:
            return [int.from_bytes(b, "big") for b in values]
        if not decode or self.item_type != "str":
            return [bytes(b) for b in values]
        # the text when the bytes are valid UTF-8 (then, and only then, it re-encodes to them)
        texts = [bytes(b).decode("utf-8", errors="replace") for b in values]
        return [t if t.encode("utf-8") == b else bytes(b) for t, b in zip(texts, values)]


def bit_prefix_keys(packed: _PackedStrings, bits: Any, hash_key: int, threads: int) -> np.ndarray:
    """The 64-bit keys of the first ``bits[i]`` bits of item i's x⊥ (complete when 8 len < bits).

    Parameters
    ----------
    packed : _PackedStrings
        The items.
    bits : int or array of int
        Prefix lengths in bits, >= 1 (one, or one per item).
    hash_key : int
        :func:`prefix_hash_key`.
    threads : int
        Worker threads.

    Returns
    -------
    numpy.ndarray of uint64
    """
    b = np.broadcast_to(np.asarray(bits, dtype=np.int64), packed.shape)
    return _core.ldp.string_bit_prefix_keys(packed.data, packed.offsets, np.ascontiguousarray(b), hash_key, threads)


def complete_keys(packed: _PackedStrings, hash_key: int, threads: int) -> np.ndarray:
    """The keys of the whole items (complete: the terminator included)."""
    return bit_prefix_keys(packed, 8 * packed.lengths + 1, hash_key, threads)


def extend_rows(rows: np.ndarray, offset: int, width: int, nbytes: int) -> np.ndarray:
    """Every row of ``rows`` (uint8, (m, w), bits past ``offset`` zero) followed at bit ``offset``
    by each of the 2^width values of ``width`` bits (most significant first), as rows of
    ``nbytes`` bytes: (m 2^width, nbytes), row r 2^width + s = rows[r] | s << ..."""
    m = rows.shape[0]
    base = np.zeros((m, nbytes), dtype=np.uint8)
    w = min(rows.shape[1], nbytes)
    base[:, :w] = rows[:, :w]
    values = np.arange(1 << width, dtype=np.int64)[:, None]
    bits = ((values >> np.arange(width - 1, -1, -1)) & 1).astype(np.uint8)
    grid = np.zeros((1 << width, 8 * nbytes), dtype=np.uint8)
    grid[:, offset:offset + width] = bits
    patterns = np.packbits(grid, axis=1) if nbytes else np.zeros((1 << width, 0), dtype=np.uint8)
    return (base[:, None, :] | patterns[None, :, :]).reshape(m << width, nbytes)


Selector = Callable[[np.ndarray, np.ndarray], np.ndarray]


def bit_prefix_candidates(level_bits: Sequence[int], max_length: int, cap: int) -> int:
    """The most complete strings :func:`find_by_bit_prefixes` can estimate (its returnable
    candidates) when ``select`` keeps at most ``cap`` incomplete prefixes per level: at level l,
    each of the S_l surviving prefixes (S_0 = 1, the empty one) of b_{l-1} bits ends as every
    string of λ bytes with b_{l-1} <= 8λ < b_l, 2^(8λ − b_{l-1}) of them per λ.

    Parameters
    ----------
    level_bits : sequence of int
        b_l, strictly increasing.
    max_length : int
        The longest string.
    cap : int
        The most incomplete prefixes kept per level.

    Returns
    -------
    int
        The bound M >= 1.
    """
    survivors, prev, total = 1, 0, 0
    for b in level_bits:
        for lam in range(-(-prev // 8), min(max_length, (b - 1) // 8) + 1):
            total += survivors << (8 * lam - prev)
        if b > 8 * max_length:
            break
        survivors = min(cap, survivors << (b - prev))
        prev = b
    return max(total, 1)


def find_by_bit_prefixes(level_bits: Sequence[int], max_length: int,
                         estimate: Callable[[int, np.ndarray, int, bool], tuple[np.ndarray, np.ndarray, np.ndarray]],
                         select: Selector) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Prefix extension over the bits of x⊥ (module docstring).

    Parameters
    ----------
    level_bits : sequence of int
        b_l, strictly increasing, the last above 8 max_length.
    max_length : int
        The longest string.
    estimate : callable
        ``estimate(level, rows, bits, complete)`` -> (estimates, variances, empty-key stderr) of
        the rows (uint8 (m, w)): their first ``bits`` bits at ``level`` (incomplete), or the
        whole rows as complete strings pooled over the levels >= ``level``.
    select : callable
        ``select(estimates, empty_stderr)`` -> the indices kept (incomplete ones survive,
        complete ones are found).

    Returns
    -------
    tuple
        (items: object array of bytes, estimates, variances) of the found strings.
    """
    survivors = np.zeros((1, 0), dtype=np.uint8)
    prev = 0
    found: list[bytes] = []
    found_est: list[np.ndarray] = []
    found_var: list[np.ndarray] = []
    for lvl, b in enumerate(level_bits):
        rows: list[np.ndarray] = []
        parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        for lam in range(-(-prev // 8), min(max_length, (b - 1) // 8) + 1):  # prev <= 8λ < b: complete here
            rows_l = extend_rows(survivors, prev, 8 * lam - prev, lam)
            rows.append(rows_l)
            parts.append(estimate(lvl, rows_l, 8 * lam + 1, True))
        n_complete = sum(r.shape[0] for r in rows)
        if b <= 8 * max_length:
            grow = extend_rows(survivors, prev, b - prev, -(-b // 8))
            parts.append(estimate(lvl, grow, b, False))
        else:
            grow = np.zeros((0, 0), dtype=np.uint8)
        if not parts:
            break
        est = np.concatenate([p[0] for p in parts])
        var = np.concatenate([p[1] for p in parts])
        sd0 = np.concatenate([p[2] for p in parts])
        kept = select(est, sd0)
        done = kept[kept < n_complete]
        if done.size:
            flat = [r for rows_l in rows for r in rows_l]
            found.extend(flat[i].tobytes() for i in done)
            found_est.append(est[done])
            found_var.append(var[done])
        survivors = grow[kept[kept >= n_complete] - n_complete] if grow.shape[0] else grow[:0]
        prev = b
        if not survivors.shape[0]:
            break
    items = np.array([*found, None], dtype=object)[:-1]
    return items, np.concatenate(found_est or [np.zeros(0)]), np.concatenate(found_var or [np.zeros(0)])
