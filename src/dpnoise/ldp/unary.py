"""Unary encoding ("oue", "sue"): each user sends d bits, the true item's bit set with
probability p and every other item's bit with probability q, all independent; reports are
bit-packed, a (users, ceil(d/64)) uint64 matrix (bit b of word j is item 64 j + b).

* ``"oue"``, optimized unary encoding (Wang, Blocki, Li & Jha, USENIX Security 2017, §4.3):
  p = 1/2, q = 1/(e^ε + 1).
* ``"sue"``, symmetric unary encoding, the basic one-time RAPPOR (Erlingsson, Pihur & Korolova,
  CCS 2014; Wang et al. 2017, §4.3): p = e^{ε/2}/(e^{ε/2} + 1), q = 1/(e^{ε/2} + 1).

The randomizer is exact (cpp/include/dpnoise/ldp/unary_encoding.hpp): the other items' ones are
drawn by exact geometric skips (ldp/geometric_skip.hpp), about d q + 1 draws per user, not d.
The aggregator counts the ones of each column over the packed words with carry-save adders
(ldp/packed_column_counts.hpp) and keeps d int64 counts. Reports are d bits, so d is limited
to 2^20; for larger domains use "olh" or "hadamard".
"""
from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from .. import _core
from ..generator import Generator
from ._channels import Channel, layered, olh_variance, oue_bit, sue_bit
from ._frequency import FrequencyAggregator, FrequencyConfiguration
from ._kernels import Kernels, KernelTable
from ._protocol import native
from ._reports import Reports
from ._schema import ROW, ReportField

# a report is d bits: beyond 2^20 (128 KiB per user) unary encoding is the wrong protocol
MAX_UNARY_DOMAIN = 1 << 20


class UnaryAggregator(FrequencyAggregator):
    """d int64 column counts C(x) (state ``counts``; 64 ceil(d/64) entries internally, the
    padding columns always zero)."""

    def _empty_state(self) -> dict[str, np.ndarray]:
        return {"counts": np.zeros(self.protocol.domain_size, dtype=np.int64)}

    def _check_state(self, state: dict[str, np.ndarray], n: int) -> None:
        c = state["counts"]
        if (c < 0).any() or (c > n).any():
            raise ValueError(f"corrupt aggregator state: {self.protocol.name} column counts must be in [0, n]")

    def _check_batch(self, reports: Reports) -> None:
        d = self.protocol.domain_size
        if not _core.ldp.packed_padding_clear(np.ascontiguousarray(reports.data["bits"]), d):
            raise ValueError(f"{self.protocol.name} report bits must be zero beyond column domain_size = {d}")

    def _ingest(self, reports: Reports) -> None:
        d = self.protocol.domain_size
        full = np.zeros(64 * self.protocol.words, dtype=np.int64)
        _core.ldp.packed_column_counts_add(np.ascontiguousarray(reports.data["bits"]), d, full, 1)
        self._state["counts"] += full[:d]

    def _estimate(self) -> np.ndarray:
        _p, q, gap = self.protocol._pq()
        return (self._state["counts"] - self.n * q) / gap


class _UnaryEncoding(FrequencyConfiguration, aggregator=UnaryAggregator):
    """Shared by OUE and SUE. Report: ``bits`` uint64 (users, ceil(d/64)), bit x of a row the
    user's bit for item x. Estimate: ĉ(x) = (C(x) − n q)/(p − q), C(x) the reports with bit x
    set (Wang et al. 2017, §4.3). Variance: n q(1 − q)/(p − q)² + c(x)(1 − p − q)/(p − q)
    (Wang et al. 2017, Eq. 3 with the count-dependent term of the same derivation)."""

    report_fields = (ReportField("bits", ROW, np.uint64, width=lambda p: p.words),)
    longitudinal = True

    def _check_options(self, options: dict[str, Any]) -> dict[str, Any]:
        if self.domain_size > MAX_UNARY_DOMAIN:
            raise ValueError(f"domain_size must be at most 2^20 for {self.name!r} (each report is domain_size "
                             f"bits); use 'olh' or 'hadamard' for larger domains, got {self.domain_size}")
        if self.gamma1 is not None and self.domain_size >= MAX_UNARY_DOMAIN:
            # the per-report layer draws its q₁ bits from the kernel over domain_size + 1 columns,
            # which the core caps at 2^20: refused here, before any client can charge a budget
            raise ValueError(f"instantaneous_epsilon needs domain_size below 2^20 for {self.name!r}, "
                             f"got {self.domain_size}")
        return super()._check_options(options)

    def _extra_row_mask(self, data: dict[str, np.ndarray], n: int) -> np.ndarray:
        tail = self.domain_size % 64
        if not tail or not n:
            return np.ones(n, dtype=bool)
        return (data["bits"][:, -1] >> np.uint64(tail)) == 0

    def cost_units(self, n: int) -> tuple[float, float]:
        """Client: the set bits (about 1 + d q a report); server: n ceil(d/64) words + d."""
        _p, q, _ = self._pq()
        return float(n) * (1 + self.domain_size * q), float(n) * self.words + self.domain_size

    @property
    def words(self) -> int:
        """uint64 words per report."""
        return (self.domain_size + 63) // 64

    def _privatize(self, rng: Generator, items: np.ndarray, threads: int) -> dict[str, np.ndarray]:
        """The kernel row's unary kernel: the exact one (geometric skips), or the packed
        constant-time one (one pass per report over the d columns, each bit "U < T" for a 128-bit
        uniform U and a public threshold T selected by a branch-free compare of the column with
        the item; ldp_randomizers.hpp); no one-hot matrix."""
        g = self.gamma
        items = np.ascontiguousarray(items, dtype=np.int64)
        return {"bits": self.kernels.unary(native(rng), self.name, items, self.domain_size, g.numerator,
                                           g.denominator, threads)}

    def _memo_rows_kernel(self, keys: np.ndarray, fingerprint: bytes, person: bytes, items: np.ndarray,
                          threads: int) -> dict[str, np.ndarray] | None:
        """The permanent bit vectors of memoised rows (OUE's or SUE's, by ``self.name``), from the
        C++ keyed-row kernel: row i the same bits as ``_privatize`` on the ChaCha20 generator keyed
        by the PRF of (``keys[i]``, ``fingerprint``, ``items[i]``). None where the kernel row has
        no keyed-row kernel (the constant-time one: the rows then go one by one)."""
        memo = self.kernels.get("memo_rows")
        if memo is None:
            return None
        g = self.gamma
        return {"bits": memo(keys, fingerprint, person, self.name, items, self.domain_size, g.numerator,
                             g.denominator, threads)}

    def _instantaneous(self, rng: Generator, data: dict[str, np.ndarray], n: int,
                       threads: int) -> dict[str, np.ndarray]:
        """The per-report layer: every bit of the permanent vector B through the protocol's own
        bit channel at ε₁ (P(1 | 1) = p₁, P(1 | 0) = q₁), independently:
        S = (B & K) | (~B & F), K bits Bernoulli(p₁), F bits Bernoulli(q₁), all exact."""
        bits = data["bits"]
        keep = self._channel_bits(rng, bits.shape[0], threads, ones=True)
        fresh = self._channel_bits(rng, bits.shape[0], threads, ones=False)
        out = (bits & keep) | (~bits & fresh)
        tail = self.domain_size % 64
        if tail and out.size:
            out[:, -1] &= np.uint64((1 << tail) - 1)
        return {"bits": out}

    def _channel_bits(self, rng: Generator, n: int, threads: int, *, ones: bool) -> np.ndarray:
        """(n, words) independent bits, Bernoulli(p₁) (``ones``) or Bernoulli(q₁): q₁ bits are the
        other columns of the exact unary kernel at ε₁ for a column d beyond the domain; p₁ = 1/2
        (OUE) bits are raw stream bits, p₁ = 1 − q₁ (SUE) bits the complement of q₁ bits."""
        if ones and self.name == "oue":
            return np.asarray(rng.random_raw((n, self.words), threads=threads), dtype=np.uint64)
        if ones:
            return ~self._channel_bits(rng, n, threads, ones=False)
        g = self.gamma1
        wide = self.kernels.unary(native(rng), self.name, np.full(n, self.domain_size, dtype=np.int64), self.domain_size + 1,
                      g.numerator, g.denominator, threads)
        out = np.ascontiguousarray(wide[:, :self.words])
        tail = self.domain_size % 64
        if tail and n:
            out[:, -1] &= np.uint64((1 << tail) - 1)  # column d (the dummy item) dropped
        return out

    def _channel(self, gamma: Fraction) -> Channel:
        """(p, q, p − q) of one bit at γ."""
        raise NotImplementedError

    def _pq(self) -> Channel:
        """(p, q, p − q) of a report bit given the item: one layer, or both in a row."""
        return layered(self, self._channel)

    def _item_pair_variation(self) -> float:
        """p − q of one bit: two items' reports differ in the laws of two independent bits,
        (Bern(p), Bern(q)) against (Bern(q), Bern(p)) (Wang, Blocki, Li & Jha 2017, §4.3), whose
        total variation is |p − q|."""
        return self._channel(self.gamma)[2]

    def variance_per_user(self) -> float:
        _p, q, gap = self._pq()
        return q * (1 - q) / gap ** 2

    def variance(self, n: int, counts: np.ndarray | None = None) -> np.ndarray:
        p, q, gap = self._pq()
        var = np.full(self.domain_size, n * self.variance_per_user())
        if counts is not None:
            var = var + np.asarray(counts, dtype=np.float64) * (1 - p - q) / gap
        return var


def _unary_kernels(instantaneous_per_column: int) -> KernelTable:
    """OUE's and SUE's table: the exact unary kernel (and its keyed-row one), and the packed
    constant-time one with its decisions: d a report; d + 1 per matrix of q₁ bits (the dummy
    column included) times ``instantaneous_per_column`` (OUE one: its p₁ = 1/2 bits are raw
    stream bits; SUE two: keep and fresh bits)."""
    return KernelTable(
        variable_time=Kernels(unary=_core.ldp.unary_privatize, memo_rows=_core.ldp.memo_unary),
        constant_time=Kernels(unary=_core.ldp.unary_constant_time, draws=lambda c: c.domain_size,
                              instantaneous_draws=lambda c: (c.domain_size + 1) * instantaneous_per_column))


class OUE(_UnaryEncoding, name="oue", cost_rank=3):
    """Optimized unary encoding: p = 1/2, q = 1/(e^ε + 1); variance per user 4e^ε/(e^ε − 1)²
    (Wang et al. 2017, Eq. 7).

    Constant-time kernel: each of the d bits is "U < T" for a 128-bit uniform U, T = 2^127 at the
    item's column and the certified threshold of 1 − 1/(e^ε + 1) elsewhere (the bit then
    complemented), selected by a branch-free compare: d draws a report, so each report is
    (ε, (1 + e^ε)·d·2^-64)-LDP (docs/security.md)."""

    kernel_table = _unary_kernels(1)

    variance_formula = staticmethod(olh_variance)

    _channel = staticmethod(oue_bit)


class SUE(_UnaryEncoding, name="sue"):
    """Symmetric unary encoding (basic one-time RAPPOR): p = e^{ε/2}/(e^{ε/2} + 1),
    q = 1/(e^{ε/2} + 1); variance per user e^{ε/2}/(e^{ε/2} − 1)² (Wang et al. 2017, §4.3).

    Constant-time kernel: every one of the d bits is binary randomized response at γ/2 of the
    item's indicator, drawn by the packed constant-time kernel (the indicator by a branch-free
    compare): d draws a report, so each report is (ε, (1 + e^ε)·d·2^-64)-LDP (docs/security.md)."""

    kernel_table = _unary_kernels(2)

    _channel = staticmethod(sue_bit)
