"""dBitFlip ("dbitflip"): Ding, Kulkarni & Yekhanin, "Collecting telemetry data privately",
NeurIPS 2017, §2.2 (histograms), built for daily collection (§3).

Each device takes ``bits`` = b of the k = domain_size buckets, and sends one bit for each of them:
1 with probability p = e^{ε/2}/(e^{ε/2} + 1) if its item is that bucket, else with probability
q = 1/(e^{ε/2} + 1). An item changes at most two of the bits, so a report is ε-LDP.

The paper draws the b buckets uniformly at random for each device. Here they are one of a
PUBLIC POOL of subsets: row j holds the b buckets at positions j b, ..., j b + b − 1 (mod k) of one
public random permutation of [0, k). A device's row index is secret and uniform, or memoised
with ``client(device_key=)``, so it is constant across days and names one of ``pool_size``
public rows (2^10 by default). With m_v rows holding bucket v out of K, π_v = m_v / K and the
estimator is

    ĉ(v) = Σ_{reports whose row holds v} (bit − q)/(p − q) / π_v,

which is unbiased given the pool, because the row is drawn independently of the item. Its
variance is (n − c_v) q(1 − q)/((p − q)² π_v) + c_v (1 + p(1 − p)/(p − q)²)/π_v − c_v
(docs/ldp.md, "Daily collection"). With π_v = b/k the estimator is n times the paper's h(v).
"""
from __future__ import annotations

import secrets
from typing import Any

import numpy as np

from .. import _core
from .._validate import integer
from ..bit_generator import PublicStream
from ..generator import Generator
from ._aggregator import count_into
from ._channels import Channel, layered, oue_bit, sue_bit
from ._frequency import FrequencyAggregator, FrequencyConfiguration
from ._kernels import Kernels, KernelTable
from ._memo import DEFAULT_POOL_SIZE, check_pool_size
from ._protocol import native
from ._reports import Reports
from ._schema import PER_USER, ReportField

MAX_DBITFLIP_DOMAIN = 1 << 20   # the public permutation is k words
MAX_BITS = 63                   # one uint64 word a report (and one dummy column)
MAX_POOL_CELLS = 1 << 24        # K b: the public pool and the state's ones are K x b int64 (128 MiB)
DEFAULT_BITS = 8
PERMUTATION_STREAM = 0x444246   # "DBF": the public stream whose word ranks give the permutation


class DBitFlipAggregator(FrequencyAggregator):
    """State: ``counts`` (K,), the reports of each pool row, and ``ones`` (K, b), the sum of
    each row's bit t."""

    def _empty_state(self) -> dict[str, np.ndarray]:
        pr = self.protocol
        return {"counts": np.zeros(pr.options["pool_size"], dtype=np.int64),
                "ones": np.zeros((pr.options["pool_size"], pr.options["bits"]), dtype=np.int64)}

    def _check_state(self, state: dict[str, np.ndarray], n: int) -> None:
        c, ones = state["counts"], state["ones"]
        if (c < 0).any() or int(c.sum(dtype=object)) != n or (ones < 0).any() or (ones > c[:, None]).any():
            raise ValueError("corrupt aggregator state: dbitflip counts must sum to n and bound each row's ones")

    def _ingest(self, reports: Reports) -> None:
        j, bits = reports.data["indices"], reports.data["bits"]
        count_into(self._state["counts"], j)
        b = self._state["ones"].shape[1]
        rows, t = np.nonzero((bits[:, None] >> np.arange(b, dtype=np.uint64)) & np.uint64(1))
        count_into(self._state["ones"], j[rows] * b + t)

    def _estimate(self) -> np.ndarray:
        pr = self.protocol
        _p, q, gap = pr._pq()
        rows = pr.pool
        contrib = (self._state["ones"] - q * self._state["counts"][:, None]).ravel()
        total = np.bincount(rows.ravel(), weights=contrib, minlength=pr.domain_size)
        return total / (gap * pr.coverage)


class DBitFlip(FrequencyConfiguration, name="dbitflip", aggregator=DBitFlipAggregator):
    """dBitFlip over k = domain_size buckets. Options: ``bits`` (b, buckets a report covers,
    in [1, min(k, 63)], default min(k, 8)), ``pool_size`` (K public rows, default the larger of
    2^10 and ceil(k/b), so that every bucket is covered; pool_size · bits ≤ 2^24) and ``pool_key`` (the PUBLIC key of the
    permutation, an int in [0, 2^256); default a fresh random key, recorded in ``params()``).
    Report: ``indices`` int64 (the row) and ``bits`` uint64 (bit t for the row's bucket t).
    Supports daily collection (``client(device_key=)``, ``instantaneous_epsilon=``: the bits go
    through the same bit channel at ε₁)."""

    report_fields = (ReportField("indices", PER_USER, np.int64, bound=lambda p: p.options["pool_size"]),
                     ReportField("bits", PER_USER, np.uint64, bound=lambda p: 1 << p.options["bits"]))
    example_options = {"bits": 4}
    longitudinal = True

    def _check_options(self, options: dict[str, Any]) -> dict[str, Any]:
        opts = dict(options)
        k = self.domain_size
        if k > MAX_DBITFLIP_DOMAIN:
            raise ValueError(f"domain_size must be at most 2^20 for {self.name!r} (a public permutation of the "
                             f"buckets), got {k}")
        b = integer(opts.pop("bits", min(k, DEFAULT_BITS)), "bits")
        if not 1 <= b <= min(k, MAX_BITS):
            raise ValueError(f"bits must be in [1, {min(k, MAX_BITS)}] (domain_size and 63), got {b}")
        size = check_pool_size(opts.pop("pool_size", None), max(DEFAULT_POOL_SIZE, -(-k // b)))
        if size * b < k:
            raise ValueError(f"pool_size * bits must cover every bucket (at least domain_size = {k}), got "
                             f"{size} * {b}")
        if size * b > MAX_POOL_CELLS:
            raise ValueError(f"pool_size * bits must be at most 2^24 (the pool and the state are pool_size x bits), "
                             f"got {size} * {b}")
        key = opts.pop("pool_key", None)
        key = secrets.randbits(256) if key is None else integer(key, "pool_key")
        if not 0 <= key < 1 << 256:
            raise ValueError("pool_key must be in [0, 2^256)")
        if opts:
            raise TypeError(f"protocol {self.name!r} takes no option {sorted(opts)[0]!r}")
        return {"bits": b, "pool_size": size, "pool_key": key}

    @property
    def pool(self) -> np.ndarray:
        """The public rows, int64 (K, b): row j is positions j b + t (mod k) of the permutation
        that sorts the public words of stream 0x444246 of ``PublicStream(pool_key)``."""
        if getattr(self, "_pool", None) is None:
            k, b, size = self.domain_size, self.options["bits"], self.options["pool_size"]
            perm = np.argsort(PublicStream(self.options["pool_key"]).words(PERMUTATION_STREAM, 0, k), kind="stable")
            pos = (np.arange(size, dtype=np.int64)[:, None] * b + np.arange(b, dtype=np.int64)) % k
            self._pool = perm[pos].astype(np.int64)
            self._pool.setflags(write=False)
            cover = np.bincount(self._pool.ravel(), minlength=k) / size
            cover.setflags(write=False)
            self._coverage = cover
        return self._pool

    @property
    def coverage(self) -> np.ndarray:
        """π_v: the share of pool rows holding bucket v (float64, k; every one > 0)."""
        _ = self.pool  # computed with it
        return self._coverage

    # (p, q, p − q) of one bit at γ: SUE's channel, p = e^{γ/2}/(e^{γ/2} + 1) (§2.2), drawn by the
    # unary kernels as "sue"
    _channel = staticmethod(sue_bit)
    bit_channel = "sue"

    def _pq(self) -> Channel:
        return layered(self, self._channel)

    def _bits(self, rng: Generator, columns: np.ndarray, gamma: Any, threads: int) -> np.ndarray:
        """b exact bits a report: Bernoulli(p) at ``columns`` (< b), Bernoulli(q) elsewhere; a
        column b is the dummy (no bit is p). SUE's exact kernel over b + 1 columns, the dummy cut."""
        b = self.options["bits"]
        words = self.kernels.unary(native(rng), self.bit_channel, np.ascontiguousarray(columns, dtype=np.int64), b + 1,
                                   gamma.numerator, gamma.denominator, threads)
        return words[:, 0] & np.uint64((1 << b) - 1)

    def _privatize(self, rng: Generator, items: np.ndarray, threads: int) -> dict[str, np.ndarray]:
        pool = self.pool
        j = np.asarray(rng.integers(0, pool.shape[0], size=items.shape[0], threads=threads), dtype=np.int64)
        return {"indices": j, "bits": self.kernels.row_bits(self, rng, items, j, threads)}

    def _located_bits(self, rng: Generator, items: np.ndarray, j: np.ndarray, threads: int) -> np.ndarray:
        """Row j's bits: the item's column in the row located (b, the dummy, if absent), then the
        exact unary kernel's bits for it."""
        hit = self.pool[j] == items[:, None]
        column = np.where(hit.any(axis=1), hit.argmax(axis=1), self.options["bits"])
        return self._bits(rng, column, self.gamma, threads)

    def _gathered_bits(self, rng: Generator, items: np.ndarray, j: np.ndarray, threads: int) -> np.ndarray:
        """Row j's bits with no search for the item: bit t is the bit channel on [pool[j, t] == x],
        the compare branch-free in the kernel over the public rows gathered by the public j."""
        g = self.gamma
        words = self.kernels.unary(native(rng), self.bit_channel, np.ascontiguousarray(items, dtype=np.int64),
                                   self.options["bits"], g.numerator, g.denominator, threads, keys=self.pool[j])
        return np.ascontiguousarray(words[:, 0])

    # the constant-time row: the compare branch-free and the draws constant-time, b a report
    # (ldp_randomizers.hpp), b + 1 for the flips of the per-report layer (the dummy column
    # included); the row j is drawn apart from the item (its rejection tries do not depend on
    # it) and is public in the report
    kernel_table = KernelTable(
        variable_time=Kernels(unary=_core.ldp.unary_privatize, row_bits=_located_bits),
        constant_time=Kernels(unary=_core.ldp.unary_constant_time, row_bits=_gathered_bits,
                              draws=lambda c: c.options["bits"], instantaneous_draws=lambda c: c.options["bits"] + 1))

    def _instantaneous(self, rng: Generator, data: dict[str, np.ndarray], n: int,
                       threads: int) -> dict[str, np.ndarray]:
        """The per-report layer: each bit through the bit channel at ε₁ (symmetric: flipped
        with probability q₁), exact."""
        flips = self._bits(rng, np.full(data["bits"].shape[0], self.options["bits"]), self.gamma1, threads)
        return {"indices": data["indices"], "bits": data["bits"] ^ flips}

    def variance_per_user(self) -> float:
        """q(1 − q)/((p − q)² π) at the mean coverage π = b/k."""
        _p, q, gap = self._pq()
        return q * (1 - q) / (gap ** 2 * (self.options["bits"] / self.domain_size))

    def variance(self, n: int, counts: np.ndarray | None = None) -> np.ndarray:
        """(n − c_v) q(1 − q)/((p − q)² π_v) + c_v ((1 + p(1 − p)/(p − q)²)/π_v − 1)."""
        p, q, gap = self._pq()
        c = np.zeros(self.domain_size) if counts is None else np.asarray(counts, dtype=np.float64)
        pi = self.coverage
        return (n - c) * q * (1 - q) / (gap ** 2 * pi) + c * ((1 + p * (1 - p) / gap ** 2) / pi - 1)

    def cost_units(self, n: int) -> tuple[float, float]:
        """Client: one exact bit draw per covered bucket; server: b counts a report, then k."""
        b = self.options["bits"]
        return float(n) * b, float(n) * b + self.domain_size

    def state_bytes(self) -> int:
        """K (b + 1) int64 counters."""
        return 8 * self.options["pool_size"] * (self.options["bits"] + 1)


class DBitFlipOUE(DBitFlip, name="dbitflip_oue"):
    """dBitFlip with optimized unary encoding's bit channel (Wang, Blocki, Li & Jha, USENIX
    Security 2017, §4.3): bit t is 1 with probability p = 1/2 if the row's bucket t is the item,
    else q = 1/(e^ε + 1). An item changes at most two bits, so a report is ε-LDP (the ratio
    (p/q)·((1 − q)/(1 − p)) = e^ε); the variance per user at coverage π = b/k is
    q(1 − q)/((p − q)² π) = 4e^ε/((e^ε − 1)² π), OUE's over π, below SUE's 4e^{ε/2}/((e^{ε/2} − 1)² π)
    where ε > 0. Options, reports, pool, estimator and daily collection as ``"dbitflip"``."""

    _channel = staticmethod(oue_bit)
    bit_channel = "oue"

    def _instantaneous(self, rng: Generator, data: dict[str, np.ndarray], n: int,
                       threads: int) -> dict[str, np.ndarray]:
        """The per-report layer: each bit B through OUE's channel at ε₁, S = (B & K) | (~B & F),
        K Bernoulli(1/2) (raw stream bits) and F Bernoulli(q₁) (the row's bit kernel for the
        dummy column b), all exact (as unary encoding's "oue")."""
        b = self.options["bits"]
        keep = np.asarray(rng.random_raw(data["bits"].shape[0], threads=threads), dtype=np.uint64)
        fresh = self._bits(rng, np.full(data["bits"].shape[0], b), self.gamma1, threads)
        bits = ((data["bits"] & keep) | (~data["bits"] & fresh)) & np.uint64((1 << b) - 1)
        return {"indices": data["indices"], "bits": bits}
