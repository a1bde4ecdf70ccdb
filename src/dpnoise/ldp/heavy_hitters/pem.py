"""PEM, the prefix-extending method (Wang, Li & Jha 2019, "Locally differentially private heavy
hitter identification", IEEE TDSC 18(2), §4).

Users are split at random (by their own clients, secretly, independently of their items) into
L levels; level l reports, by FLH over 64-bit keys, the first b_l bits of the item, with
b_0 = s0 and b_{l+1} = min(b_l + η, item_bits), b_{L−1} = item_bits. The server estimates all
2^s0 prefixes of level 0, keeps the ``keep`` (default 2k) largest, extends each by every η-bit
suffix, estimates those ``keep`` x 2^η candidates at the next level, and so on; the last level's
estimates are the items' counts. Nothing enumerates the domain: the server evaluates
2^s0 + (L − 1) keep 2^η candidates, each in O(k′).

Defaults (docs/heavy_hitters.md): η = floor(log2(32768/keep)) (at most 32768 candidates per
level; η = 10 for k = 10), L = 1 + ceil((item_bits − s_max)/η) with s_max = max(13,
ceil(log2 keep) + η), and s0 = item_bits − (L − 1)η, so that every level extends by exactly η
bits: for 32-bit items and k = 10, levels of 12, 22 and 32 bits; for 64-bit items 6 levels
(14, 24, ..., 64).

Str/bytes items of more than 8 bytes (``max_length`` in [9, 255]): the same levels over the
B = 8 (max_length + 1) bits of x⊥ (the string's bytes, then a terminator; _strings.py): level l
reports the first b_l bits of x when 8 len(x) >= b_l, else the whole string, complete (one key at
every level from there on). Each kept prefix is extended by every η-bit suffix and by every
string that ends within the step; a complete string is estimated from the pooled counts of the
levels where it is complete. For max_length = 64 and k = 10: 52 levels of 10 bits.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._base import Group, HeavyHittersConfiguration
from ._items import _count
from ._strings import bit_prefix_candidates

CANDIDATE_BUDGET = 32768  # η = 10 for keep = 20: 3 levels for 32-bit items (measured: recall 1.00 vs 0.96 with 8192, docs/heavy_hitters.md)
MAX_DEFAULT_K_PRIME = 16384
# top() costs (candidates over all levels) x k′ hash evaluations (hh_support): the default k′ is
# the largest power of two <= 16384 that keeps it within 2^28 (about 0.3 s of one core): 4096
# for 32-bit items (45,056 candidates), 2048 for 64-bit ones (118,784). Fewer shared hash
# functions add FLH's pool term Σ c(c − 1)/((g − 1) k′) to the variance (stated by
# group_estimates); measured recall: docs/heavy_hitters.md ("PEM's k′")
HASH_BUDGET = 1 << 28
# strings (max_length > 8): k′ = 2048 as string_pem. The hash budget would give 256 for 64-byte
# strings (10^6 candidates), and then the pool term of the heaviest names (Σ c²/(g k′), not in a
# noise candidate's stated variance) let a noise string reach the top 10 at 10^6 devices
# (measured: 8,764 against the 10th name's 13,529; docs/heavy_hitters.md, "Long strings")
STRING_K_PRIME = 2048
MAX_CANDIDATES = 1 << 22


class PEM(HeavyHittersConfiguration, name="pem"):
    """Options: ``keep`` (prefixes kept per level, default 2k), ``s0`` and ``eta`` (bits of the
    first level and bits added per level; defaults above), ``k_prime`` (public hash functions per
    level, default: see HASH_BUDGET, 4096 for 32-bit and 2048 for 64-bit items at k = 10)."""


    def _setup(self, options: dict[str, Any]) -> dict[str, Any]:
        B = self.key_bits
        keep = _count(options.pop("keep", min(2 * self.k, 1 << 16)), "keep", self.k, 1 << 16)
        eta = options.pop("eta", None)
        eta = max(1, min(B, math.floor(math.log2(max(2, CANDIDATE_BUDGET // keep))))) if eta is None else \
            _count(eta, "eta", 1, B)
        s0 = options.pop("s0", None)
        if s0 is None:
            s_max = max(13, math.ceil(math.log2(keep)) + eta)
            count = 1 + max(0, math.ceil((B - s_max) / eta))  # the number of levels
            s0 = B - (count - 1) * eta if count > 1 else B
        s0 = _count(s0, "s0", 1, B)
        if (1 << s0) > MAX_CANDIDATES or keep * (1 << eta) > MAX_CANDIDATES:
            raise ValueError("s0 and eta must keep the candidates per level at most 2^22 (2^s0 and keep * 2^eta)")
        levels = self._levels(B, s0, eta)
        kp = options.pop("k_prime", None)
        if kp is None and self.strings:
            kp = STRING_K_PRIME
        elif kp is None:
            candidates = (1 << s0) + sum(keep << (b - a) for a, b in zip(levels, levels[1:]))
            kp = 1 << max(0, min(MAX_DEFAULT_K_PRIME, HASH_BUDGET // candidates).bit_length() - 1)
        kp = _count(kp, "k_prime", 1, 1 << 20)
        # the key of group l: x >> (B − b_l) for integers, the first b_l bits of x⊥ for strings
        self.groups = [Group(1, 0, b if self.strings else B - b, kp) for b in levels]
        return {"keep": keep, "s0": s0, "eta": eta, "k_prime": kp}

    @staticmethod
    def _levels(B: int, s0: int, eta: int) -> list[int]:
        bits = [s0]
        while bits[-1] < B:
            bits.append(min(bits[-1] + eta, B))
        return bits

    def level_bits(self) -> list[int]:
        """b_l: the prefix length of each level.

        Returns
        -------
        list of int
            Increasing prefix lengths, the last one ``item_bits``.
        """
        return self._levels(self.key_bits, self.options["s0"], self.options["eta"])

    def max_candidates(self) -> int:
        """M: the last level's candidates, ``keep`` x 2^(b_{L-1} − b_{L-2}) (2^s0 with one level);
        over strings, every complete string the kept prefixes can end as.

        Returns
        -------
        int
            The bound the simultaneous intervals of ``top``/``above`` are over.
        """
        bits = self.level_bits()
        if self.strings:
            return bit_prefix_candidates(bits, self.codec.max_length, self.options["keep"])
        return 1 << bits[0] if len(bits) == 1 else min(self.options["keep"], 1 << bits[-2]) << (bits[-1] - bits[-2])

    def _find(self, agg: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        bits = self.level_bits()
        keep = self.options["keep"]
        if self.strings:  # the `keep` largest of each level's candidates (levels with no users give none)
            return agg.find_string_prefixes(
                lambda est, sd0: (o := np.argsort(-est, kind="stable"))[np.isfinite(sd0[o])][:keep])
        cand = np.arange(1 << bits[0], dtype=np.uint64)
        for l, b in enumerate(bits):
            est, var = agg.group_estimates(l, cand)
            if l == len(bits) - 1:
                return cand, est, var
            best = cand[np.argsort(-est, kind="stable")[:keep]]
            step = bits[l + 1] - b
            cand = ((best[:, None] << np.uint64(step)) | np.arange(1 << step, dtype=np.uint64)[None, :]).ravel()
        raise AssertionError("unreachable")
