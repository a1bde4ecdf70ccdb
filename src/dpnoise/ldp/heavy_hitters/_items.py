"""Items of a heavy-hitters configuration as unsigned integers of ``item_bits`` bits, and back.

* ``item_type="int"``: integers in [0, 2^item_bits), item_bits in [1, 64] (any integer NumPy
  array or a sequence of Python ints; bool, float, str and mixed batches are refused).
* ``item_type="str"`` / ``"bytes"``: the UTF-8 bytes (or the bytes) of each item, zero-padded
  on the right to L = item_bits/8 bytes (``max_length``) and read as a big-endian integer, so
  that the integer's leading bits are the string's leading bytes (PEM and TreeHist prefixes are
  string prefixes) and the server recovers the strings themselves with no dictionary.
  Items holding a NUL byte are refused (they could not be told from their padding). Items
  longer than L bytes are refused, or with ``long_items="hash"`` replaced by their keyed
  BLAKE2b digest of L bytes (RFC 7693; key ``LONG_ITEM_KEY``, public): such an item can then
  only be named by an aggregator given ``candidates=[...]`` holding it.

Error messages name the position of a bad item, never its value (items are private).
"""
from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..._validate import integer

ITEM_TYPES = ("int", "str", "bytes")
LONG_ITEMS = ("refuse", "hash")
LONG_ITEM_KEY = b"dpnoise.ldp.heavy_hitters.long-items.v1"  # public BLAKE2b key for long items
MAX_ITEM_BITS = 64


def _count(value: Any, name: str, lo: int, hi: int) -> int:
    """An integer argument in [lo, hi]; TypeError/ValueError naming it."""
    v = integer(value, name)
    if not lo <= v <= hi:
        raise ValueError(f"{name} must be in [{lo}, {hi}], got {v}")
    return v


def long_item_digest(data: bytes, length: int) -> bytes:
    """The keyed hash of an item longer than ``length`` bytes: BLAKE2b with the public key
    ``LONG_ITEM_KEY`` and a digest of ``length`` bytes.

    Parameters
    ----------
    data : bytes
        The item's bytes (UTF-8 for strings).
    length : int
        The digest size, 1 to 64 bytes (the configuration's ``max_length``).

    Returns
    -------
    bytes
        ``length`` bytes.
    """
    return hashlib.blake2b(data, digest_size=length, key=LONG_ITEM_KEY).digest()


class ItemCodec:
    """Encoding of one configuration's items (see the module docstring)."""

    def __init__(self, item_type: str | None, item_bits: Any, max_length: Any, long_items: Any) -> None:
        if item_type is None:
            item_type = "str" if max_length is not None else "int"
        if item_type not in ITEM_TYPES:
            raise ValueError(f"item_type must be one of {list(ITEM_TYPES)}, got {item_type!r}")
        if long_items not in LONG_ITEMS:
            raise ValueError(f"long_items must be one of {list(LONG_ITEMS)}, got {long_items!r}")
        if item_type == "int":
            if max_length is not None:
                raise TypeError("max_length applies to str/bytes items only (item_type='str' or 'bytes')")
            if long_items != "refuse":
                raise TypeError("long_items applies to str/bytes items only")
            bits = 32 if item_bits is None else integer(item_bits, "item_bits")
            if not 1 <= bits <= MAX_ITEM_BITS:
                raise ValueError(f"item_bits must be in [1, 64], got {bits}")
        else:
            if max_length is not None:
                length = integer(max_length, "max_length")
                if not 1 <= length <= MAX_ITEM_BITS // 8:
                    raise ValueError(f"max_length must be in [1, 8] bytes for items read as integers (pass item_type='str' "
                                     f"or 'bytes' for byte strings of up to 255 bytes), got {length}")
                if item_bits is not None and integer(item_bits, "item_bits") != 8 * length:
                    raise ValueError(f"item_bits ({item_bits}) must be 8 * max_length ({8 * length})")
                bits = 8 * length
            else:
                bits = 64 if item_bits is None else integer(item_bits, "item_bits")
                if bits % 8 or not 8 <= bits <= MAX_ITEM_BITS:
                    raise ValueError(f"item_bits must be a multiple of 8 in [8, 64] for {item_type} items, got {bits}")
        self.item_type: str = item_type
        self.item_bits: int = bits
        self.long_items: str = long_items

    @property
    def length(self) -> int:
        """L: bytes per str/bytes item."""
        return self.item_bits // 8

    def params(self) -> dict[str, Any]:
        """The codec's part of the configuration's parameters."""
        return {"item_type": self.item_type, "item_bits": self.item_bits, "long_items": self.long_items}

    # -- encoding ------------------------------------------------------------------------------
    def encode(self, items: Any, name: str = "items") -> np.ndarray:
        """The items as a 1-D uint64 array; TypeError/ValueError naming ``name`` (and the
        position of a bad item, never its value)."""
        if self.item_type == "int":
            return self._encode_ints(items, name)
        return self._encode_strings(items, name)

    def _encode_ints(self, items: Any, name: str) -> np.ndarray:
        if isinstance(items, (str, bytes, bytearray)):
            raise TypeError(f"{name} must be an integer array or a sequence of ints (item_type='int'), got "
                            f"{type(items).__name__}")
        if isinstance(items, np.ndarray):
            arr = items
        else:
            try:
                seq = list(items)
            except TypeError:
                raise TypeError(f"{name} must be an integer array or a sequence of ints, got "
                                f"{type(items).__name__}") from None
            arr = np.asarray(seq)
            if arr.dtype.kind not in "iu" and arr.ndim == 1 and all(
                    isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in seq):
                arr = np.array(seq, dtype=object)  # Python ints beyond int64 (NumPy would make floats)
        if arr.ndim != 1:
            raise ValueError(f"{name} must be 1-D, got {arr.ndim}-D")
        if arr.size == 0:
            return np.zeros(0, dtype=np.uint64)
        if arr.dtype == object:
            for i, v in enumerate(arr):
                if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
                    raise TypeError(f"{name}[{i}] is a {type(v).__name__}, not an int (item_type='int'; "
                                    f"mixed batches are refused)")
            vals = [int(v) for v in arr]
            if min(vals) < 0 or max(vals) >> self.item_bits:
                raise ValueError(f"{name} must be in [0, 2^{self.item_bits}) (item_bits)")
            return np.array(vals, dtype=np.uint64)
        if arr.dtype.kind not in "iu":
            raise TypeError(f"{name} must be integers (item_type='int'), got dtype {arr.dtype}"
                            + (" (mixed str/int batches are refused)" if arr.dtype.kind in "US" else ""))
        if arr.dtype.kind == "i" and int(arr.min()) < 0:
            raise ValueError(f"{name} must be in [0, 2^{self.item_bits}) (item_bits); got a negative value")
        if int(arr.max()) >> self.item_bits:
            raise ValueError(f"{name} must be in [0, 2^{self.item_bits}) (item_bits); got a wider value")
        return np.ascontiguousarray(arr, dtype=np.uint64)

    def _encode_strings(self, items: Any, name: str) -> np.ndarray:
        if isinstance(items, (str, bytes, bytearray)):
            raise TypeError(f"{name} must be a sequence of str/bytes, got a single {type(items).__name__}")
        if isinstance(items, np.ndarray) and items.dtype.kind in "iuf b":
            raise TypeError(f"{name} must be str/bytes (item_type={self.item_type!r}), got dtype {items.dtype}")
        try:
            seq = list(items)
        except TypeError:
            raise TypeError(f"{name} must be a sequence of str/bytes, got {type(items).__name__}") from None
        L = self.length
        out = np.empty(len(seq), dtype=np.uint64)
        for i, v in enumerate(seq):
            if isinstance(v, str):
                try:
                    b = v.encode("utf-8")
                except UnicodeEncodeError:  # a lone surrogate: never echo the item
                    raise ValueError(f"{name}[{i}] is not valid Unicode text (it cannot be encoded as UTF-8)") from None
            elif isinstance(v, (bytes, bytearray, np.bytes_)):
                b = bytes(v)
            else:
                raise TypeError(f"{name}[{i}] is a {type(v).__name__}, not str/bytes (item_type={self.item_type!r}; "
                                f"mixed batches are refused)")
            if len(b) > L:
                if self.long_items != "hash":
                    raise ValueError(f"{name}[{i}] is longer than {L} bytes (max_length); pass long_items='hash' to "
                                     f"hash long items")
                b = long_item_digest(b, L)
            elif b"\x00" in b:
                raise ValueError(f"{name}[{i}] contains a NUL byte (it could not be told from the padding)")
            out[i] = int.from_bytes(b.ljust(L, b"\x00"), "big")
        return out

    # -- decoding ------------------------------------------------------------------------------
    def candidate_map(self, candidates: Sequence[Any] | None) -> dict[int, Any]:
        """{encoded value: candidate} for an aggregator's dictionary (long items are hashed)."""
        if candidates is None:
            return {}
        cands = list(candidates)
        codes = self.encode(cands, "candidates")
        return {int(c): v for c, v in zip(codes, cands)}

    def decode(self, values: np.ndarray, candidates: dict[int, Any], decode: bool = True) -> list[Any]:
        """Python items of encoded values: int, or (str/bytes configurations) the candidate of that
        code, else the bytes without their padding, as str when ``decode`` and valid UTF-8."""
        if self.item_type == "int":
            return [int(v) for v in values]
        out: list[Any] = []
        for v in values:
            v = int(v)
            if v in candidates:
                out.append(candidates[v])
                continue
            b = v.to_bytes(self.length, "big").rstrip(b"\x00")
            if decode and self.item_type == "str":
                try:
                    out.append(b.decode("utf-8"))
                    continue
                except UnicodeDecodeError:
                    pass
            out.append(b)
        return out
