"""The 1-bit Hadamard frequency oracle ("hadamard"): each user sends a secret uniform row index
j of the Hadamard matrix of order D (the domain padded to a power of two) and one bit,
H[j, x] kept with probability e^ε/(e^ε + 1), else flipped (Bassily & Smith 2015, §4, with
Hadamard rows as the public matrix; Bassily, Nissim, Stemmer & Thakurta 2017). The server sums the ±1 reports per row (state O(D)) and
decodes every item at once with one fast Walsh–Hadamard transform: O(n + D log D).
The client and the sums run in C++ (cpp/include/dpnoise/ldp/hadamard_response.hpp); the keep
decision is the exact binary randomized-response kernel. See docs/ldp_hadamard.md."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import _core
from ..generator import Generator
from ._channels import one_bit_variance
from ._frequency import FrequencyAggregator, FrequencyConfiguration
from ._kernels import Kernels, KernelTable
from ._protocol import native
from ._reports import Reports
from ._schema import PACKED, PER_USER, ReportField

# The server keeps one int64 per row of the padded domain: 2^30 rows is 8 GiB.
MAX_PADDED_SIZE = 1 << 30


def padded_size(domain_size: int) -> int:
    """D = the least power of two >= domain_size.

    Parameters
    ----------
    domain_size : int
        d >= 1.

    Returns
    -------
    int
        D.
    """
    return 1 << (int(domain_size) - 1).bit_length()


class HadamardAggregator(FrequencyAggregator):
    """State: ``row_sums`` (int64, D): the sum of the ±1 reports of each row."""

    _count_table = ("row_sums", ("rows",), "bits")

    def _empty_state(self) -> dict[str, np.ndarray]:
        return {"row_sums": np.zeros(self.protocol.padded_size, dtype=np.int64)}

    def _check_state(self, state: dict[str, np.ndarray], n: int) -> None:
        # every report adds ±1 to one row: Σ_j |S_j| <= n (and the transform stays exact)
        if int(np.abs(state["row_sums"]).sum(dtype=object)) > n:
            raise ValueError("corrupt aggregator state: hadamard row sums exceed the number of reports")

    def _check_batch(self, reports: Reports) -> None:
        _core.ldp.hadamard_check_reports(reports.data["rows"], reports.data["bits"], reports.n,
                                         self.protocol.padded_size)

    def _ingest(self, reports: Reports) -> None:
        _core.ldp.hadamard_accumulate(self._state["row_sums"], reports.data["rows"], reports.data["bits"],
                                      reports.n)

    def _estimate(self) -> np.ndarray:
        # Σ_j S[j] H[j, x] for every x, exact in int64 (|Σ_j S[j]| <= n)
        sums = _core.ldp.walsh_hadamard_transform(self._state["row_sums"])[: self.protocol.domain_size]
        return sums * self.protocol.scale()


class Hadamard(FrequencyConfiguration, name="hadamard", aggregator=HadamardAggregator, cost_rank=4):
    """1-bit Hadamard response over d items, padded to D = 2^⌈log2 d⌉ rows.

    Report: ``rows`` (int64, the row j of each user, uniform on [0, D), drawn from the secret
    generator independently of the item) and ``bits`` (uint8, one bit per user packed
    little-endian, ceil(n/8) bytes; bit 1 means −1). Estimate:
    ĉ(x) = (e^ε + 1)/(e^ε − 1) · Σ_i y_i H[j_i, x]. Variance: n((e^ε + 1)/(e^ε − 1))² − c(x)
    exactly (docs/ldp_hadamard.md).

    Raises
    ------
    ValueError
        Beyond the checks of :class:`~dpnoise.ldp.FrequencyOracle`: when D would exceed 2^30
        (the server keeps one count per row).
    """

    report_fields = (ReportField("rows", PER_USER, np.int64, bound=lambda p: p.padded_size),
                     ReportField("bits", PACKED, np.uint8))
    variance_formula = staticmethod(one_bit_variance)

    def __init__(self, epsilon: float, domain_size: int, **options: Any) -> None:
        super().__init__(epsilon, domain_size, **options)
        if padded_size(self.domain_size) > MAX_PADDED_SIZE:
            raise ValueError(f"domain_size must be at most 2^30 for 'hadamard' (the server keeps one count per "
                             f"row of the padded domain), got {self.domain_size}")

    def cost_units(self, n: int) -> tuple[float, float]:
        """Server: one row sum a report, then one transform of D log2 D."""
        D = self.padded_size
        return float(n), float(n) + D * max(1, D.bit_length() - 1)

    def state_bytes(self) -> int:
        """D int64 row sums."""
        return 8 * self.padded_size

    @property
    def padded_size(self) -> int:
        """D, the domain padded to a power of two (the rows of the Hadamard matrix)."""
        return padded_size(self.domain_size)

    # the constant-time row: H[j, x] as the parity of j & x by xor folding (no table, no branch)
    # and the keep decision constant-time (ldp_randomizers.hpp): one draw a report
    kernel_table = KernelTable(variable_time=Kernels(client=_core.ldp.hadamard_privatize),
                               constant_time=Kernels(client=_core.ldp.hadamard_constant_time))

    def _privatize(self, rng: Generator, items: np.ndarray, threads: int) -> dict[str, np.ndarray]:
        g = self.gamma
        rows, bits = self.kernels.client(native(rng), items, self.padded_size, g.numerator, g.denominator, threads)
        return {"rows": rows, "bits": bits}

    def scale(self) -> float:
        """(e^ε + 1)/(e^ε − 1) = 1/(2p − 1), the de-biasing factor (ε the exact rational γ).

        Returns
        -------
        float
            The factor (> 1).
        """
        em1 = math.expm1(float(self.gamma))  # e^γ − 1, accurate for small ε
        return (em1 + 2) / em1

    def _item_pair_variation(self) -> float:
        """(e^γ − 1)/(2(e^γ + 1)): the row is uniform and independent of the item, and two
        distinct columns of a Sylvester–Hadamard matrix differ in exactly half the rows, where the
        bit is binary randomized response of opposite values (Bassily & Smith 2015, §4)."""
        return 0.5 / self.scale()

    def variance_per_user(self) -> float:
        """((e^ε + 1)/(e^ε − 1))²: one kept-or-flipped ±1 bit (docs/ldp_hadamard.md)."""
        return one_bit_variance(float(self.gamma))

    def variance(self, n: int, counts: np.ndarray | None = None) -> np.ndarray:
        """n c² − c(x), exactly (docs/ldp_hadamard.md)."""
        # each user's term s·y·H[j, x] has square s² and mean 1{x_i = x}: n s² − c(x) in all
        var = np.full(self.domain_size, n * self.variance_per_user())
        if counts is not None:
            var = var - np.asarray(counts, dtype=np.float64)
        return var
