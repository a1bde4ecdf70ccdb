"""TreeHist (Bassily, Nissim, Stemmer & Thakurta 2017, "Practical locally private heavy
hitters", NeurIPS, §3): a prefix tree over the items' bits, pruned by a threshold.

Users are split at random (secretly, independently of their items) into L = item_bits/s levels
(s = ``bits_per_level``, default 1: the binary tree of the paper); level l reports, by FLH over
64-bit keys, the first (l + 1)s bits of the item. The server starts from the 2^s children of
the root and, at each level, keeps the prefixes whose estimate exceeds z times the standard
error of an empty prefix (z = ``z``, default 3: a prefix of count 0 survives with probability
about 0.13%), at most ``max_keep`` of them (default 4k, the largest), and extends each by its
2^s children. The last level's estimates are the items' counts.

Differences from the paper (docs/heavy_hitters.md): one report per user (the paper's final
phase, a separate frequency oracle on all users, is here the last level itself), FLH instead of
the paper's Hadamard-based oracle, and a cap on the prefixes kept (bounded server cost).

Str/bytes items of more than 8 bytes (``max_length`` in [9, 255]): the tree is over the
B = 8 (max_length + 1) bits of x⊥ (the string's bytes, then a terminator; _strings.py), with
``bits_per_level`` 8 by default (a 256-ary tree over bytes: 520 binary levels would leave each
level 1/520 of the users); strings that end within a step are candidates too, complete, and
estimated from the pooled counts of the levels where they are complete. Each candidate is kept
when its estimate exceeds z standard errors of an empty key of its own (level or pooled) users.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._base import Group, HeavyHittersConfiguration
from ._items import _count
from ._strings import bit_prefix_candidates

DEFAULT_K_PRIME = 4096  # per level: 16384 would keep 235 MiB of counters for 32-bit items (docs)


class TreeHist(HeavyHittersConfiguration, name="treehist"):
    """Options: ``bits_per_level`` (default 1), ``z`` (threshold in standard errors, default 3),
    ``max_keep`` (prefixes kept per level, default 4k), ``k_prime`` (default 4096 per level)."""


    def _setup(self, options: dict[str, Any]) -> dict[str, Any]:
        B = self.key_bits
        s = _count(options.pop("bits_per_level", 8 if self.strings else 1), "bits_per_level", 1, min(B, 16))
        z = options.pop("z", 3.0)
        if isinstance(z, (bool, np.bool_)) or not isinstance(z, (int, float, np.integer, np.floating)):
            raise TypeError(f"z must be a number, got {type(z).__name__}")
        z = float(z)
        if not (math.isfinite(z) and z >= 0):
            raise ValueError(f"z must be a finite number >= 0, got {z!r}")
        max_keep = _count(options.pop("max_keep", min(4 * self.k, 1 << 16)), "max_keep", min(2 * self.k, 1 << 16), 1 << 16)
        kp = _count(options.pop("k_prime", DEFAULT_K_PRIME), "k_prime", 1, 1 << 20)
        bits = [*list(range(s, B, s)), B]
        self.groups = [Group(1, 0, b if self.strings else B - b, kp) for b in bits]  # as in PEM
        return {"bits_per_level": s, "z": z, "max_keep": max_keep, "k_prime": kp}

    def tracked(self) -> int:
        """2k, at most max_keep: the items the last level keeps."""
        return min(2 * self.k, self.options["max_keep"])

    def max_candidates(self) -> int:
        """M: the last level's candidates, ``max_keep`` x 2^s (2^s with one level); over strings,
        every complete string the kept prefixes can end as.

        Returns
        -------
        int
            The bound the simultaneous intervals of ``top``/``above`` are over.
        """
        if self.strings:
            return bit_prefix_candidates([gr.shift for gr in self.groups], self.codec.max_length,
                                         self.options["max_keep"])
        B = self.item_bits
        bits = [B - gr.shift for gr in self.groups]  # prefix lengths
        return 1 << bits[0] if len(bits) == 1 else min(self.options["max_keep"], 1 << bits[-2]) << (bits[-1] - bits[-2])

    def _find(self, agg: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self.strings:
            return agg.find_string_prefixes(self._alive)
        B, s = self.item_bits, self.options["bits_per_level"]
        bits = [gr.shift for gr in self.groups]
        sizes = agg.group_sizes()
        cand = np.arange(1 << min(s, B), dtype=np.uint64)
        for l in range(len(bits)):
            est, var = agg.group_estimates(l, cand)
            if l == len(bits) - 1:
                return cand, est, var
            n_l = int(sizes[l])
            # stderr of an empty prefix, measured: LDP noise plus collisions with every held prefix
            sd0 = agg.null_stderr(agg.level_counts(l), n_l)
            alive = self._alive(est, sd0)
            if alive.size == 0:
                empty = np.zeros(0)
                return np.zeros(0, dtype=np.uint64), empty, empty
            step = bits[l] - bits[l + 1]
            cand = ((cand[alive][:, None] << np.uint64(step)) | np.arange(1 << step, dtype=np.uint64)[None, :]).ravel()
        raise AssertionError("unreachable")

    def _alive(self, est: np.ndarray, sd0: Any) -> np.ndarray:
        """The candidates above z standard errors of an empty key, at most max_keep, largest first."""
        alive = np.flatnonzero(est >= self.options["z"] * sd0)
        return alive[np.argsort(-est[alive], kind="stable")[: self.options["max_keep"]]]
