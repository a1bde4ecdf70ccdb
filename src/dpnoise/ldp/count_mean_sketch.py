"""Apple's count-mean sketch ("cms") and its Hadamard variant ("hcms") (Apple Differential
Privacy Team 2017, "Learning with Privacy at Scale", Algorithms 1-4), with exact randomization
and the collision correction f̂(x) = (m/(m − 1)) ((1/k) Σ_l M[l, h_l(x)] − n/m).

Options: ``hashes`` k (default 256), ``width`` m (a power of two in [8, 2^16], default 1024) and
``public_key`` (an int in [0, 2^256): the key of the PUBLIC hash family, h_l(x) = the low
log2(m) bits of word x of stream l of ``dpnoise.PublicStream(public_key)``; default a fresh
random key, which is part of the configuration: clients and aggregators of one oracle share it,
and serialised states carry it). Each user's hash index (and HCMS coefficient) is drawn from the
secret generator and sent in the report. See docs/ldp_hadamard.md."""
from __future__ import annotations

import math
import secrets
from typing import Any

import numpy as np

from .. import _core
from .._validate import integer
from ..generator import Generator
from ._frequency import FrequencyAggregator, FrequencyConfiguration, check_items
from ._kernels import Kernels, KernelTable
from ._protocol import native
from ._reports import Reports
from ._schema import PACKED, PER_USER, ROW, ReportField

DEFAULT_HASHES = 256
DEFAULT_WIDTH = 1024
MAX_HASHES = 1 << 16
MAX_WIDTH = 1 << 16
MAX_SKETCH = 1 << 26  # k·m int64 counters (512 MiB)


class _Sketch(FrequencyConfiguration):
    """Options and formulas shared by "cms" and "hcms"."""

    example_options = {"hashes": 16, "width": 64}

    def _check_options(self, options: dict[str, Any]) -> dict[str, Any]:
        unknown = set(options) - {"hashes", "width", "public_key"}
        if unknown:
            raise TypeError(f"protocol {self.name!r} takes no option {sorted(unknown)[0]!r}")
        k = integer(options.get("hashes", DEFAULT_HASHES), "hashes")
        if not 1 <= k <= MAX_HASHES:
            raise ValueError(f"hashes must be in [1, 2^16], got {k}")
        m = integer(options.get("width", DEFAULT_WIDTH), "width")
        if not 8 <= m <= MAX_WIDTH or m & (m - 1):
            raise ValueError(f"width must be a power of two in [8, 2^16], got {m}")
        if k * m > MAX_SKETCH:
            raise ValueError(f"hashes * width must be at most 2^26 (the server's sketch), got {k * m}")
        key = options.get("public_key")
        key = secrets.randbits(256) if key is None else integer(key, "public_key")
        if not 0 <= key < 1 << 256:
            raise ValueError("public_key must be in [0, 2^256)")
        return {"hashes": k, "width": m, "public_key": key}

    #: estimate(items) gathers only the given items: a domain too large to enumerate still works
    estimates_items_only = True

    def state_bytes(self) -> int:
        """k m int64 sketch cells."""
        return 8 * self.hashes * (self.width + 1)

    @property
    def hashes(self) -> int:
        return self.options["hashes"]

    @property
    def width(self) -> int:
        return self.options["width"]

    def _key(self) -> bytes:
        return self.options["public_key"].to_bytes(32, "little")

    def hash_values(self, items: Any) -> np.ndarray:
        """h_l(x) for every hash l and the given items: int64 (hashes, len(items)) (public)."""
        arr = check_items(items, self.domain_size)
        out = np.empty((self.hashes, arr.size), dtype=np.int64)
        for l in range(self.hashes):
            out[l] = _core.ldp.sketch_hash(self._key(), self.hashes, self.width, l, arr)
        return out

    def _collision_terms(self) -> tuple[float, float, float]:
        """(m/(m−1))², the hash-randomness variance of one other user's collision indicator
        average Var(π) = (m − 1)/(k m²), and E[π²] = (m + k − 1)/(k m²)."""
        k, m = self.hashes, self.width
        return (m / (m - 1)) ** 2, (m - 1) / (k * m * m), (m + k - 1) / (k * m * m)

    def _holder_saving(self) -> float:
        """How much less a holder of x adds to Var f̂(x) than a non-holder, per user, over g."""
        raise NotImplementedError

    def variance(self, n: int, counts: np.ndarray | None = None,
                 sum_squares: float | None = None) -> np.ndarray:
        """The class docstring's variance, over users' randomness and the random hash key.

        Parameters
        ----------
        n : int
            The number of reports.
        counts : numpy.ndarray, optional
            The (estimated) counts of every item (shape (d,)), or of the items of interest only
            when ``sum_squares`` is given; without it the count-dependent terms are left out.
        sum_squares : float, optional
            Σ_y c(y)² over the whole domain (default: from ``counts``, which must then cover it).

        Returns
        -------
        numpy.ndarray
            float64 variances, shape (d,), or that of ``counts``.
        """
        if counts is None:
            return np.full(self.domain_size, n * self.variance_per_user())
        c = np.asarray(counts, dtype=np.float64)
        total = float(np.dot(c, c)) if sum_squares is None else float(sum_squares)
        g, vpi, _ = self._collision_terms()
        # holders' own term, then over the random hash key Σ_{y ≠ x} c(y)² Var(π_y), where
        # Σ_{y ≠ x} c(y)² = Σ_y c(y)² − c(x)² (docs/ldp_hadamard.md, "Variance")
        return n * self.variance_per_user() - g * c * self._holder_saving() + g * np.maximum(total - c * c, 0) * vpi


def _gather(p: _Sketch, table: np.ndarray, items: np.ndarray) -> np.ndarray:
    """G(x) = Σ_l table[l, h_l(x)] for the given items only: O(k |items|) public hashes."""
    h = p.hash_values(items)
    return table[np.arange(p.hashes)[:, None], h].sum(axis=0, dtype=np.int64)


def _rows_wht(table: np.ndarray) -> np.ndarray:
    """Each row times the Sylvester–Hadamard matrix H[a, b] = (−1)^popcount(a & b) (exact in int64:
    |row sums| <= n)."""
    t = table.astype(np.int64, copy=True)
    k, m = t.shape
    h = 1
    while h < m:
        v = t.reshape(k, m // (2 * h), 2, h)
        a, b = v[:, :, 0, :].copy(), v[:, :, 1, :].copy()
        v[:, :, 0, :] = a + b
        v[:, :, 1, :] = a - b
        h *= 2
    return t


class _SketchAggregator(FrequencyAggregator):
    """What the two sketch aggregators share: the estimate over the whole domain gathers the
    state's table ``_TABLE`` (Hadamard-transformed first when ``_HADAMARD``) in one C++ pass."""

    _TABLE = ""
    _HADAMARD = False

    def _estimate(self) -> np.ndarray:
        p = self.protocol
        gathered = _core.ldp.sketch_gather(p._key(), p.hashes, p.width, self._state[self._TABLE], p.domain_size,
                                           self._HADAMARD)
        return self._from_gathered(gathered)

    def _from_gathered(self, gathered: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _cell_squares(self) -> tuple[float, float, float]:
        """(Σ_{l,b} Y[l, b]², its users' noise part, Σ_l n_l² or its expectation), Y[l, b] the
        unbiased count of row l's users hashed to b (below)."""
        raise NotImplementedError

    def _sum_squares(self) -> float:
        """An estimate of S2 = Σ_y c(y)² from the k × m state alone, O(k m) (cached).

        Derived here for Apple 2017's sketches (Algorithms 2 and 4; docs/ldp_hadamard.md,
        "Variance" for the notation). Let Y[l, b] be the unbiased count of the users who chose
        row l and whose item hashes to b: CMS (c·signs + n_l)/2, HCMS c·(row l of bit_sums)·Hᵀ.
        Given the hashes, E Y[l, b] = C_l[b] = Σ_y c_l(y) 1{h_l(y) = b} (c_l(y): holders of y on
        row l), and E Σ_b Y[l, b]² = Σ_b C_l[b]² + noise_l with noise_l = n_l m (c² − 1)/4 (CMS:
        independent cells of variance (c² − 1)/4 a user) or n_l (m c² − 1) (HCMS: a user adds
        U² = c² to each of the m cells; users' cross terms are the collisions in Σ_b C_l[b]²,
        less its own 1). Over the independent uniform hash values, E Σ_b C_l[b]² =
        (1 − 1/m) Σ_y c_l(y)² + n_l²/m; over the uniform secret rows, E Σ_l Σ_y c_l(y)² =
        S2/k + n (1 − 1/k). So with Q = Σ_{l,b} Y² − noise − Σ_l n_l²/m (HCMS, which does not
        keep n_l: E Σ_l n_l² = n²/k + n(1 − 1/k)),

            Ŝ2 = k (Q/(1 − 1/m) − n (1 − 1/k))   is unbiased for S2.

        It is clipped to S2's range for n users over d items, [the balanced Σ c², n²]: clipping
        only raises a too-small value or lowers an impossible one (never below the truth's range:
        the stated variance errs toward more)."""
        def compute() -> float:
            n, k, m, d = self.n, self.protocol.hashes, self.protocol.width, self.protocol.domain_size
            if n == 0:
                return 0.0
            squares, noise, rows_sq = self._cell_squares()
            q = (squares - noise - rows_sq / m) / (1 - 1 / m)
            estimate = k * (q - n * (1 - 1 / k))
            share, extra = divmod(n, d)  # the least Σ c² of n users over d items: balanced counts
            low = extra * (share + 1) ** 2 + (d - extra) * share ** 2
            return float(min(max(estimate, low), n * n))
        return self._cached("sum_squares", compute)

    def variance(self, items: Any = None) -> np.ndarray:
        """Per-item variance of the estimates over users' randomness and the random hash key:
        the protocol's formula with the estimates (at most n) as the items' counts and the
        collision term's Σ_y c(y)² estimated from the sketch itself (never from d estimates).

        Parameters
        ----------
        items : array_like, optional
            The items (default: every item of the domain). Given items cost O(k |items| + k m):
            a domain of 2^40 items works with a candidate list.

        Returns
        -------
        numpy.ndarray
            float64 variances, in squared users.

        Raises
        ------
        TypeError, ValueError
            For items that are not integers in [0, domain_size).
        """
        est = self._estimates() if items is None else self.estimate(items)
        # not clipped at 0: the holders' saving is linear in c(x), and the unbiased ĉ keeps it
        # unbiased (clipped, a rare item's E ĉ > 0 took ~20% off its stated variance at n = 5)
        counts = np.minimum(est, self.n)
        # Σ_{y≠x} c(y)² = Ŝ2 − ĉ(x)² subtracts E ĉ(x)² = c(x)² + V: solving V = v + B·V, B = g·Var(π)
        # = 1/(k(m − 1)) the collision weight, gives V = v/(1 − B) (<= 7/6 v; ~1 + 2^-10 at k=16, m=64)
        g, vpi, _ = self.protocol._collision_terms()
        return self.protocol.variance(self.n, counts, self._sum_squares()) / (1 - g * vpi)


class CountMeanSketchAggregator(_SketchAggregator):
    """State: ``signs`` (int64, k × m): per hash, the sums of the reported signs; ``users``
    (int64, k): reports per hash."""

    _TABLE = "signs"

    def _empty_state(self) -> dict[str, np.ndarray]:
        p = self.protocol
        return {"signs": np.zeros((p.hashes, p.width), dtype=np.int64), "users": np.zeros(p.hashes, dtype=np.int64)}

    def _check_state(self, state: dict[str, np.ndarray], n: int) -> None:
        users, signs = state["users"], state["signs"]
        # each report adds ±1 to every column of its hash's row
        if (users < 0).any() or int(users.sum(dtype=object)) != n or (np.abs(signs) > users[:, None]).any():
            raise ValueError("corrupt aggregator state: cms users must sum to n and bound every row's sign sums")

    def _check_batch(self, reports: Reports) -> None:
        p = self.protocol
        _core.ldp.cms_check_reports(reports.data["hash_index"], reports.data["vectors"], reports.n, p.hashes, p.width)

    def _ingest(self, reports: Reports) -> None:
        _core.ldp.cms_accumulate(self._state["signs"], self._state["users"], reports.data["hash_index"],
                                 reports.data["vectors"], reports.n)

    def _estimate_items(self, items: np.ndarray) -> np.ndarray:
        return self._from_gathered(_gather(self.protocol, self._state["signs"], items))

    def _cell_squares(self) -> tuple[float, float, float]:
        # Y = (c·signs + n_l)/2: each user's cell value (c ṽ + 1)/2 has variance (c² − 1)/4
        c, m = self.protocol.scale(), self.protocol.width
        signs = self._state["signs"].astype(np.float64)
        users = self._state["users"].astype(np.float64)
        y = (c * signs + users[:, None]) / 2
        return float(np.einsum("ij,ij->", y, y)), m * self.n * (c * c - 1) / 4, float(np.dot(users, users))

    def _from_gathered(self, gathered: np.ndarray) -> np.ndarray:
        # (1/k) Σ_l M[l, h_l(x)] with M = k((c/2) T + N/2): (c/2) G(x) + n/2 (Apple 2017, Alg. 2)
        p, m = self.protocol, self.protocol.width
        return (m / (m - 1)) * (p.scale() / 2 * gathered + self.n / 2 - self.n / m)


class CountMeanSketch(_Sketch, name="cms", aggregator=CountMeanSketchAggregator, cost_rank=6):
    """Count-mean sketch: report (hash index l, m signs), every sign of the one-hot ±1 vector at
    h_l(x) flipped with probability 1/(e^{ε/2} + 1). Variance (over users' randomness and the
    random hash key): (m/(m−1))² [n (c² − 1)/4 + (n − c(x)) (k−1)(m−1)/(k m²)
    + Σ_{y≠x} c(y)² (m−1)/(k m²)], c = (e^{ε/2} + 1)/(e^{ε/2} − 1) (docs/ldp_hadamard.md)."""

    report_fields = (ReportField("hash_index", PER_USER, np.int64, bound=lambda p: p.hashes),
                     ReportField("vectors", ROW, np.uint8, width=lambda p: p.width // 8))
    variance_formula = staticmethod(lambda epsilon, d: CountMeanSketch(epsilon, d).variance_per_user())

    def cost_units(self, n: int) -> tuple[float, float]:
        """Client and server: m signs a report; a full estimate k d gathers."""
        return float(n) * self.width, float(n) * self.width + float(self.hashes) * self.domain_size

    # the constant-time row: the hash index by multiply-shift, the m signs by branch-free
    # compares of each coordinate with h_l(x) and m constant-time flip decisions
    # (ldp_randomizers.hpp): m + 1 draws a report (the hash index and one flip per coordinate)
    kernel_table = KernelTable(variable_time=Kernels(client=_core.ldp.cms_privatize),
                               constant_time=Kernels(client=_core.ldp.cms_constant_time, draws=lambda c: c.width + 1))

    def _privatize(self, rng: Generator, items: np.ndarray, threads: int) -> dict[str, np.ndarray]:
        g = self.gamma
        index, vectors = self.kernels.client(native(rng), items, self._key(), self.hashes, self.width, g.numerator, g.denominator,
                                threads)
        return {"hash_index": index, "vectors": vectors}

    def scale(self) -> float:
        """c = (e^{ε/2} + 1)/(e^{ε/2} − 1): each sign is flipped with probability 1/(e^{ε/2} + 1).

        Returns
        -------
        float
            c > 1.
        """
        hm1 = math.expm1(float(self.gamma) / 2)  # e^{γ/2} − 1, accurate for small ε
        return (hm1 + 2) / hm1

    def variance_per_user(self) -> float:
        """The class docstring's formula for an item no user holds, per user."""
        g, _, _ = self._collision_terms()
        k, m = self.hashes, self.width
        return g * ((self.scale() ** 2 - 1) / 4 + (k - 1) * (m - 1) / (k * m * m))

    def _holder_saving(self) -> float:
        k, m = self.hashes, self.width
        return (k - 1) * (m - 1) / (k * m * m)


class HadamardCountMeanSketchAggregator(_SketchAggregator):
    """State: ``bit_sums`` (int64, k × m): per (hash, coefficient), the sum of the ±1 bits."""

    _TABLE = "bit_sums"
    _HADAMARD = True
    _count_table = ("bit_sums", ("hash_index", "coefficient"), "bits")

    def _empty_state(self) -> dict[str, np.ndarray]:
        p = self.protocol
        return {"bit_sums": np.zeros((p.hashes, p.width), dtype=np.int64)}

    def _check_state(self, state: dict[str, np.ndarray], n: int) -> None:
        # each report adds ±1 to one (hash, coefficient) cell
        if int(np.abs(state["bit_sums"]).sum(dtype=object)) > n:
            raise ValueError("corrupt aggregator state: hcms bit sums exceed the number of reports")

    def _check_batch(self, reports: Reports) -> None:
        p = self.protocol
        _core.ldp.hcms_check_reports(reports.data["hash_index"], reports.data["coefficient"], reports.data["bits"],
                                     reports.n, p.hashes, p.width)

    def _ingest(self, reports: Reports) -> None:
        _core.ldp.hcms_accumulate(self._state["bit_sums"], reports.data["hash_index"], reports.data["coefficient"],
                                  reports.data["bits"], reports.n)

    def _estimate_items(self, items: np.ndarray) -> np.ndarray:
        transformed = self._cached("transformed", lambda: _rows_wht(self._state["bit_sums"]))
        return self._from_gathered(_gather(self.protocol, transformed, items))

    def _cell_squares(self) -> tuple[float, float, float]:
        # Y = c·(bit_sums row)·Hᵀ, so Σ_b Y[l, b]² = c² m Σ_a bit_sums[l, a]² (Parseval); each
        # user adds c² to every cell (U² = c²) less its own 1 counted in Σ_b C_l[b]²
        c, k, m, n = self.protocol.scale(), self.protocol.hashes, self.protocol.width, self.n
        sums = self._state["bit_sums"].astype(np.float64)
        return c * c * m * float(np.einsum("ij,ij->", sums, sums)), n * (m * c * c - 1), n * n / k + n * (1 - 1 / k)

    def _from_gathered(self, gathered: np.ndarray) -> np.ndarray:
        # M = k c T H (row-wise transform); (1/k) Σ_l M[l, h_l(x)] = c G(x) (Apple 2017, Alg. 4)
        p, m = self.protocol, self.protocol.width
        return (m / (m - 1)) * (p.scale() * gathered - self.n / m)


class HadamardCountMeanSketch(_Sketch, name="hcms", aggregator=HadamardCountMeanSketchAggregator, cost_rank=7):
    """Hadamard count-mean sketch: report (hash index l, coefficient a, one bit), the bit
    H[a, h_l(x)] kept with probability e^ε/(e^ε + 1). Variance (over users' randomness and the
    random hash key): (m/(m−1))² [n c² − c(x) − (n − c(x))(m + k − 1)/(k m²)
    + Σ_{y≠x} c(y)² (m−1)/(k m²)], c = (e^ε + 1)/(e^ε − 1) (docs/ldp_hadamard.md)."""

    report_fields = (ReportField("hash_index", PER_USER, np.int64, bound=lambda p: p.hashes),
                     ReportField("coefficient", PER_USER, np.int64, bound=lambda p: p.width),
                     ReportField("bits", PACKED, np.uint8))
    variance_formula = staticmethod(lambda epsilon, d: HadamardCountMeanSketch(epsilon, d).variance_per_user())

    def cost_units(self, n: int) -> tuple[float, float]:
        """Server: one cell a report, k row transforms (m log2 m) and k d gathers."""
        m = self.width
        return float(n), float(n) + self.hashes * m * max(1, m.bit_length() - 1) + float(self.hashes) * self.domain_size

    # the constant-time row: the hash index by multiply-shift, H[a, h_l(x)] by a parity (no
    # table), the keep decision constant-time (ldp_randomizers.hpp): 2 draws a report
    kernel_table = KernelTable(variable_time=Kernels(client=_core.ldp.hcms_privatize),
                               constant_time=Kernels(client=_core.ldp.hcms_constant_time, draws=2))

    def _privatize(self, rng: Generator, items: np.ndarray, threads: int) -> dict[str, np.ndarray]:
        g = self.gamma
        index, coefficient, bits = self.kernels.client(native(rng), items, self._key(), self.hashes, self.width, g.numerator,
                                          g.denominator, threads)
        return {"hash_index": index, "coefficient": coefficient, "bits": bits}

    def scale(self) -> float:
        """c = (e^ε + 1)/(e^ε − 1): the one bit is kept with probability e^ε/(e^ε + 1).

        Returns
        -------
        float
            The de-biasing factor.
        """
        em1 = math.expm1(float(self.gamma))
        return (em1 + 2) / em1

    def variance_per_user(self) -> float:
        """The class docstring's formula for an item no user holds, per user."""
        g, _, epi2 = self._collision_terms()
        return g * (self.scale() ** 2 - epi2)

    def _holder_saving(self) -> float:
        return 1 - self._collision_terms()[2]
