"""Bitstogram (Bassily, Nissim, Stemmer & Thakurta 2017, "Practical locally private heavy
hitters", NeurIPS, §4): hash items into T buckets, recover each bit of each bucket's heavy item
with a per-bit frequency oracle, then estimate the recovered candidates.

A public hash t(x) in [0, T) (hash_family64.hpp, seed words 0..3 of public stream 0x48484231)
maps items to buckets. Each user's client picks secretly, independently of the item:
  * the candidate oracle (probability w_c/(w_c + item_bits), w_c = ``candidate_weight``,
    default item_bits: half the users): FLH over the full item x;
  * else a uniform bit index j: FLH over the key (t(x), bit j of x), a domain of 2T.
Server: for each bit j and bucket t, bit j of the bucket's candidate is 1 iff the support of
(t, 1) exceeds that of (t, 0) (same users, so comparing supports is comparing unbiased
estimates); the T reconstructed candidates are kept if they hash back to their bucket (an empty
or mixed bucket gives noise, which does so with probability 1/T), then estimated by the
candidate oracle. Per-bit oracle: FLH, not Hadamard or Z (their ±1 reports have about 14x the
variance of OLH/FLH at ε = 4; with g = 2, 1-bit reports everywhere, recall fell from 1.00 to 0.26:
docs/heavy_hitters.md).

Str/bytes items of more than 8 bytes (``max_length`` = M in [9, 255]), a string-aware codec: the
bucket is t(key(x)), key(x) the keyed polynomial hash of the whole string (string_pem.hpp); the
candidate oracle reports key(x); bit j of x is bit j (most significant first) of its B = 8 (M + 1)
-bit padded form, its M bytes zero-padded then one byte holding len(x). The server reads each
bucket's padded form bit by bit as above, keeps it when its length byte is at most M, the bytes
past that length are zero and the string hashes back to the bucket, and so recovers the exact
bytes (any bytes: UTF-8, NULs). Default T = 16384 for strings (the B = 8 (M + 1) bit oracles
make the server's support pass B/64 times as long as for 64-bit integers).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ... import _core
from ...bit_generator import PublicStream
from ._base import Group, HeavyHittersConfiguration
from ._items import _count
from ._strings import complete_keys

BUCKET_STREAM = 0x48484231   # "HHB1": the public bucket hash
DEFAULT_BUCKETS = 65536
DEFAULT_STRING_BUCKETS = 16384
DEFAULT_K_PRIME = 16384
DEFAULT_K_PRIME_BITS = 256


class Bitstogram(HeavyHittersConfiguration, name="bitstogram"):
    """Options: ``buckets`` (T, default 65536), ``k_prime`` (candidate oracle, default 16384),
    ``k_prime_bits`` (each per-bit oracle, default 256), ``candidate_weight`` (default
    item_bits), ``keep`` (items tracked, default 2k)."""


    def _setup(self, options: dict[str, Any]) -> dict[str, Any]:
        B = self.key_bits
        T = _count(options.pop("buckets", DEFAULT_STRING_BUCKETS if self.strings else DEFAULT_BUCKETS), "buckets", 2,
                   1 << 20)
        kp = _count(options.pop("k_prime", DEFAULT_K_PRIME), "k_prime", 1, 1 << 20)
        kb = _count(options.pop("k_prime_bits", DEFAULT_K_PRIME_BITS), "k_prime_bits", 1, 1 << 20)
        wc = _count(options.pop("candidate_weight", B), "candidate_weight", 1, 1 << 20)
        keep = _count(options.pop("keep", min(2 * self.k, 1 << 16)), "keep", self.k, 1 << 16)
        # strings: group 0's key is the whole string's (a prefix of B > 8 M bits: complete)
        self.groups = [Group(wc, 0, B if self.strings else 0, kp)] + [Group(1, 1, j, kb) for j in range(B)]
        self._bucket_seed: np.ndarray | None = None
        return {"buckets": T, "k_prime": kp, "k_prime_bits": kb, "candidate_weight": wc, "keep": keep}

    def bucket(self, items: np.ndarray) -> np.ndarray:
        """t(x): the public bucket of each item (uint64 array).

        Parameters
        ----------
        items : numpy.ndarray
            Item keys (converted to uint64).

        Returns
        -------
        numpy.ndarray of uint64
            One bucket in [0, buckets) per item.
        """
        if self._bucket_seed is None:
            self._bucket_seed = PublicStream(self.pool_key).words(BUCKET_STREAM, 0, 4).reshape(1, 4)
        x = np.ascontiguousarray(items, dtype=np.uint64)
        return _core.ldp.hh_hash(self._bucket_seed, np.zeros(x.size, dtype=np.int64), x, self.options["buckets"]).astype(np.uint64)

    def _item_group(self) -> int:
        return 0  # the candidate oracle reports whole items

    def _aux(self, items: Any) -> np.ndarray | None:
        return self.bucket(complete_keys(items, self.hash_key, 1) if self.strings else items)

    def max_candidates(self) -> int:
        """M = T (``buckets``): one reconstructed candidate per bucket.

        Returns
        -------
        int
            The bound the simultaneous intervals of ``top``/``above`` are over.
        """
        return self.options["buckets"]

    def _find(self, agg: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        T = self.options["buckets"]
        keys0 = np.arange(T, dtype=np.uint64) << np.uint64(1)
        keys = np.concatenate([keys0, keys0 | np.uint64(1)])
        # the bit groups 1..B share k′, g and the pool: one pass hashes each (seed, key) once for
        # all B groups (hh_support_groups) instead of one pass per bit; their counts are one
        # contiguous slice of the flat state, viewed as (B, k′_bits, g)
        o, B = agg._offsets, self.key_bits
        counts = agg._flat[o[1]:o[B + 1]].reshape(B, -1, self.g)
        s = _core.ldp.hh_support_groups(counts, self.pool, keys, agg.threads)
        if self.strings:
            return self._find_strings(agg, s[:, T:] > s[:, :T])
        # bit j of bucket t's candidate is row j of the comparison: pack the rows into 8 bytes
        # per bucket, least significant first
        packed = np.zeros((8, T), dtype=np.uint8)
        packed[:(self.item_bits + 7) // 8] = np.packbits(s[:, T:] > s[:, :T], axis=0, bitorder="little")
        x = np.ascontiguousarray(packed.T).view("<u8").ravel().astype(np.uint64)
        ok = self.bucket(x) == np.arange(T, dtype=np.uint64)
        cand = np.unique(x[ok])
        est, var = agg.group_estimates(0, cand)
        return cand, est, var

    def _find_strings(self, agg: Any, ones: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The strings of the buckets whose padded forms are ``ones`` ((B, T) bools, bit j of bucket t)."""
        M = self.codec.max_length
        rows = np.packbits(ones, axis=0, bitorder="big").T  # (T, M + 1): padded bytes, then the length
        length = rows[:, M].astype(np.int64)
        ok = length <= M
        ok &= ~np.any((rows[:, :M] != 0) & (np.arange(M)[None, :] >= length[:, None]), axis=1)  # zero padding
        strings = [rows[t, :length[t]].tobytes() for t in np.flatnonzero(ok)]
        if not strings:
            empty = np.zeros(0)
            return np.zeros(0, dtype=object), empty, empty
        keys = complete_keys(self.codec.encode(strings, "candidates"), self.hash_key, agg.threads)
        found = np.flatnonzero(self.bucket(keys) == np.flatnonzero(ok).astype(np.uint64))  # each string has one bucket
        est, var = agg.group_estimates(0, keys[found])
        items = np.array([strings[i] for i in found] + [None], dtype=object)[:-1]
        return items, est, var
