"""k-ary randomized response ("grr"): each user reports the true item with probability
p = e^ε/(e^ε + d − 1), else one of the other d − 1 uniformly (Warner 1965; Kairouz, Oh &
Viswanath 2016). The randomizer is the exact kernel of the central ``RandomizedResponse``
mechanism (cpp/include/dpnoise/exact/randomized_response.hpp): one kernel for both."""
from __future__ import annotations

import math
from typing import Dict, Optional

import numpy as np

from ..generator import Generator
from ._protocol import Aggregator, Protocol, Reports, grr_variance, register


@register
class GRR(Protocol):
    """k-ary randomized response over d items. Report: one int64 per user. Estimate:
    ĉ(x) = (C(x) − n q)/(p − q), C(x) the reports equal to x, q = 1/(e^ε + d − 1) (Wang et al.
    2017, §4.1). Variance: n q(1 − q)/(p − q)² + c(x)(1 − p − q)/(p − q)."""

    name = "grr"

    def _privatize(self, rng: Generator, items: np.ndarray, threads: int) -> Dict[str, np.ndarray]:
        return {"values": rng._randomized_response(items, self.domain_size, self.gamma, threads=threads)}

    def _pq(self) -> tuple:
        e = math.exp(float(self.gamma))
        return e / (e + self.domain_size - 1), 1.0 / (e + self.domain_size - 1)

    def variance_per_user(self) -> float:
        return grr_variance(float(self.gamma), self.domain_size)

    def variance(self, n: int, counts: Optional[np.ndarray] = None) -> np.ndarray:
        p, q = self._pq()
        var = np.full(self.domain_size, n * self.variance_per_user())
        if counts is not None:
            var = var + counts * (1 - p - q) / (p - q)
        return var


class GRRAggregator(Aggregator):
    def _empty_state(self) -> Dict[str, np.ndarray]:
        return {"counts": np.zeros(self.protocol.domain_size, dtype=np.int64)}

    def _check_batch(self, reports: Reports) -> None:
        v = reports.data.get("values")
        if not isinstance(v, np.ndarray) or v.dtype != np.int64 or v.shape != (reports.n,):
            raise ValueError("grr reports must hold 'values': int64 of one value per user")
        if v.size and (int(v.min()) < 0 or int(v.max()) >= self.protocol.domain_size):
            raise ValueError(f"grr report values must be in [0, {self.protocol.domain_size})")

    def _ingest(self, reports: Reports) -> None:
        self._state["counts"] = self._state["counts"] + np.bincount(reports.data["values"],
                                                                    minlength=self.protocol.domain_size)

    def _estimate(self) -> np.ndarray:
        p, q = self.protocol._pq()
        return (self._state["counts"] - self.n * q) / (p - q)


GRR.aggregator_class = GRRAggregator
