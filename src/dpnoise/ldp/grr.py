"""k-ary randomized response ("grr"): each user reports the true item with probability
p = e^ε/(e^ε + d − 1), else one of the other d − 1 uniformly (Warner 1965; Kairouz, Oh &
Viswanath 2016). The randomizer is the exact kernel of the central ``RandomizedResponse``
mechanism (cpp/include/dpnoise/exact/randomized_response.hpp): one kernel for both."""
from __future__ import annotations

import math
from typing import Dict, Optional

import numpy as np

from .. import _core
from ..generator import Generator
from ._protocol import Aggregator, Protocol, Reports, grr_variance, register


@register
class GRR(Protocol):
    """k-ary randomized response over d items. Report: one int64 per user. Estimate:
    ĉ(x) = (C(x) − n q)/(p − q), C(x) the reports equal to x, q = 1/(e^ε + d − 1) (Wang et al.
    2017, §4.1). Variance: n q(1 − q)/(p − q)² + c(x)(1 − p − q)/(p − q)."""

    name = "grr"

    def _privatize(self, rng: Generator, items: np.ndarray, threads: int) -> Dict[str, np.ndarray]:
        return {"values": _core.ldp.grr_privatize(rng._core, items, self.domain_size, self.gamma.numerator, self.gamma.denominator, threads)}

    def _pq(self) -> tuple:
        """(p, q, p − q): p = e^γ/(e^γ + d − 1), q = 1/(e^γ + d − 1), from e^γ − 1 (expm1) so that
        p − q = (e^γ − 1)/(e^γ + d − 1) stays accurate for small ε."""
        em1 = math.expm1(float(self.gamma))
        den = em1 + self.domain_size
        return (em1 + 1) / den, 1.0 / den, em1 / den

    def variance_per_user(self) -> float:
        return grr_variance(float(self.gamma), self.domain_size)

    def variance(self, n: int, counts: Optional[np.ndarray] = None) -> np.ndarray:
        p, q, gap = self._pq()
        var = np.full(self.domain_size, n * self.variance_per_user())
        if counts is not None:
            var = var + counts * (1 - p - q) / gap
        return var


class GRRAggregator(Aggregator):
    _report_keys = frozenset({"values"})

    def _empty_state(self) -> Dict[str, np.ndarray]:
        return {"counts": np.zeros(self.protocol.domain_size, dtype=np.int64)}

    def _check_batch(self, reports: Reports) -> None:
        v = reports.data.get("values")
        if not isinstance(v, np.ndarray) or v.dtype != np.int64 or v.shape != (reports.n,):
            raise ValueError("grr reports must hold 'values': int64 of one value per user")
        if v.size and (int(v.min()) < 0 or int(v.max()) >= self.protocol.domain_size):
            raise ValueError(f"grr report values must be in [0, {self.protocol.domain_size})")

    def _check_state(self, state: Dict[str, np.ndarray], n: int) -> None:
        c = state["counts"]
        if (c < 0).any() or int(c.sum(dtype=object)) != n:
            raise ValueError("corrupt aggregator state: grr counts must be non-negative and sum to n")

    def _ingest(self, reports: Reports) -> None:
        self._state["counts"] = self._state["counts"] + np.bincount(reports.data["values"],
                                                                    minlength=self.protocol.domain_size)

    def _estimate(self) -> np.ndarray:
        p, q, gap = self.protocol._pq()
        return (self._state["counts"] - self.n * q) / gap


GRR.aggregator_class = GRRAggregator
