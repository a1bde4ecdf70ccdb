"""k-ary randomized response ("grr"): each user reports the true item with probability
p = e^ε/(e^ε + d − 1), else one of the other d − 1 uniformly (Warner 1965; Kairouz, Oh &
Viswanath 2016). The randomizer is the exact kernel of the central ``RandomizedResponse``
mechanism (cpp/include/dpnoise/exact/randomized_response.hpp): one kernel for both."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from .. import _core
from ..generator import Generator
from ._aggregator import count_into
from ._channels import Channel, grr_variance, layered, symmetric_layers
from ._frequency import FrequencyAggregator, FrequencyConfiguration
from ._kernels import Kernels, KernelTable
from ._protocol import native
from ._reports import Reports
from ._schema import PER_USER, ReportField, values_within


class GRRAggregator(FrequencyAggregator):
    """State: ``counts`` (int64, d), the reports of each item."""

    _count_table = ("counts", ("values",), None)

    def _empty_state(self) -> dict[str, np.ndarray]:
        return {"counts": np.zeros(self.protocol.domain_size, dtype=np.int64)}

    def _check_batch(self, reports: Reports) -> None:
        if not values_within(reports.data["values"], self.protocol.domain_size):
            raise ValueError(f"grr report values must be in [0, {self.protocol.domain_size})")

    def _check_state(self, state: dict[str, np.ndarray], n: int) -> None:
        c = state["counts"]
        if (c < 0).any() or int(c.sum(dtype=object)) != n:
            raise ValueError("corrupt aggregator state: grr counts must be non-negative and sum to n")

    def _ingest(self, reports: Reports) -> None:
        count_into(self._state["counts"], reports.data["values"])

    def _estimate(self) -> np.ndarray:
        _p, q, gap = self.protocol._pq()
        return (self._state["counts"] - self.n * q) / gap


class GRR(FrequencyConfiguration, name="grr", aggregator=GRRAggregator, cost_rank=0):
    """k-ary randomized response over d items. Report: one int64 per user. Estimate:
    ĉ(x) = (C(x) − n q)/(p − q), C(x) the reports equal to x, q = 1/(e^ε + d − 1) (Wang et al.
    2017, §4.1). Variance: n q(1 − q)/(p − q)² + c(x)(1 − p − q)/(p − q).

    Kernels: the exact k-ary randomized response (a keyed-row kernel for memoised batches) and
    a constant-time one (keep/flip and the other item from a fixed number of random words,
    selected by masks; docs/security.md), one decision a report. The variant is a configuration
    parameter: its reports and states are refused by the default configuration's readers, and
    the reverse."""

    report_fields = (ReportField("values", PER_USER, np.int64, bound=lambda p: p.domain_size),)
    variance_formula = staticmethod(grr_variance)
    longitudinal = True
    # the constant-time row has no keyed-row kernel: memoised rows go one by one (_memo.py)
    kernel_table = KernelTable(
        variable_time=Kernels(rr=_core.ldp.grr_privatize, memo_rows=_core.ldp.memo_grr),
        constant_time=Kernels(rr=_core.randomized_response_constant_time))

    def _privatize(self, rng: Generator, items: np.ndarray, threads: int) -> dict[str, np.ndarray]:
        g = self.gamma
        return {"values": self.kernels.rr(native(rng), items, self.domain_size, g.numerator, g.denominator, threads)}

    def _memo_rows_kernel(self, keys: np.ndarray, fingerprint: bytes, person: bytes, items: np.ndarray,
                          threads: int) -> dict[str, np.ndarray] | None:
        """The permanent values of memoised rows, row i d-ary randomized response of ``items[i]``
        on the ChaCha20 stream keyed by the PRF of (``keys[i]``, ``fingerprint``, ``items[i]``)
        (``person``: the PRF's BLAKE2b personalisation), the same values as ``_privatize`` on
        that row's generator, in one C++ pass. None where the kernel row has no keyed-row kernel
        (the constant-time one): such rows go one by one through ``_privatize``."""
        memo = self.kernels.get("memo_rows")
        if memo is None:
            return None
        g = self.gamma
        return {"values": memo(keys, fingerprint, person, items, self.domain_size, g.numerator, g.denominator, threads)}

    def _instantaneous(self, rng: Generator, data: dict[str, np.ndarray], n: int,
                       threads: int) -> dict[str, np.ndarray]:
        """The per-report layer: d-ary randomized response at ε₁ of the permanent value."""
        g = self.gamma1
        return {"values": self.kernels.rr(native(rng), data["values"], self.domain_size, g.numerator, g.denominator,
                                          threads)}

    def _pq_at(self, gamma: Fraction) -> Channel:
        """(p, q, p − q): p = e^γ/(e^γ + d − 1), q = 1/(e^γ + d − 1), from e^γ − 1 (expm1) so that
        p − q = (e^γ − 1)/(e^γ + d − 1) stays accurate for small ε."""
        em1 = math.expm1(float(gamma))
        den = em1 + self.domain_size
        return (em1 + 1) / den, 1.0 / den, em1 / den

    def _pq(self) -> Channel:
        """(p, q, p − q) of the report given the item: one layer, or both in a row."""
        return layered(self, self._pq_at, symmetric_layers(self.domain_size))

    def _item_pair_variation(self) -> float:
        """p − q = (e^γ − 1)/(e^γ + d − 1): two items' laws differ on their own two outputs only
        (k-ary randomized response; Kairouz, Oh & Viswanath 2016)."""
        return self._pq_at(self.gamma)[2]

    def variance_per_user(self) -> float:
        """(e^ε + d − 2)/(e^ε − 1)² (Wang et al. 2017, Eq. 2); q(1 − q)/(p − q)² with both
        layers' (p, q) (the same Eq. 3)."""
        if self.gamma1 is None:  # the paper's closed form, bit for bit as recommend() states it
            return grr_variance(float(self.gamma), self.domain_size)
        _p, q, gap = self._pq()
        return q * (1 - q) / gap ** 2

    def variance(self, n: int, counts: np.ndarray | None = None) -> np.ndarray:
        """n q(1 − q)/(p − q)² + c(x)(1 − p − q)/(p − q) (Wang et al. 2017, Eq. 3)."""
        p, q, gap = self._pq()
        var = np.full(self.domain_size, n * self.variance_per_user())
        if counts is not None:
            var = var + counts * (1 - p - q) / gap
        return var
