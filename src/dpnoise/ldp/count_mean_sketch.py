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
from typing import Any, Dict, Optional

import numpy as np

from .. import _core
from .._validate import integer
from ..generator import Generator
from ._protocol import Aggregator, Protocol, Reports, check_items, register

DEFAULT_HASHES = 256
DEFAULT_WIDTH = 1024
MAX_HASHES = 1 << 16
MAX_WIDTH = 1 << 16
MAX_SKETCH = 1 << 26  # k·m int64 counters (512 MiB)


class _Sketch(Protocol):
    """Options and formulas shared by "cms" and "hcms"."""

    def _check_options(self, options: Dict[str, Any]) -> Dict[str, Any]:
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

    def _collision_terms(self) -> tuple:
        """(m/(m−1))², the hash-randomness variance of one other user's collision indicator
        average Var(π) = (m − 1)/(k m²), and E[π²] = (m + k − 1)/(k m²)."""
        k, m = self.hashes, self.width
        return (m / (m - 1)) ** 2, (m - 1) / (k * m * m), (m + k - 1) / (k * m * m)

    def _hash_variance(self, var: np.ndarray, counts: Optional[np.ndarray]) -> np.ndarray:
        # over the random hash key: Σ_{y ≠ x} c(y)² Var(π_y)
        if counts is None:
            return var
        c = np.asarray(counts, dtype=np.float64)
        g, vpi, _ = self._collision_terms()
        return var + g * (float(np.dot(c, c)) - c * c) * vpi


@register
class CountMeanSketch(_Sketch):
    """Count-mean sketch: report (hash index l, m signs), every sign of the one-hot ±1 vector at
    h_l(x) flipped with probability 1/(e^{ε/2} + 1). Variance (over users' randomness and the
    random hash key): (m/(m−1))² [n (c² − 1)/4 + (n − c(x)) (k−1)(m−1)/(k m²)
    + Σ_{y≠x} c(y)² (m−1)/(k m²)], c = (e^{ε/2} + 1)/(e^{ε/2} − 1) (docs/ldp_hadamard.md)."""

    name = "cms"

    def _privatize(self, rng: Generator, items: np.ndarray, threads: int) -> Dict[str, np.ndarray]:
        g = self.gamma
        index, vectors = _core.ldp.cms_privatize(rng._core, items, self._key(), self.hashes, self.width,
                                                 g.numerator, g.denominator, threads)
        return {"hash_index": index, "vectors": vectors}

    def scale(self) -> float:
        hm1 = math.expm1(float(self.gamma) / 2)  # e^{γ/2} − 1, accurate for small ε
        return (hm1 + 2) / hm1

    def variance_per_user(self) -> float:
        g, _, _ = self._collision_terms()
        k, m = self.hashes, self.width
        return g * ((self.scale() ** 2 - 1) / 4 + (k - 1) * (m - 1) / (k * m * m))

    def variance(self, n: int, counts: Optional[np.ndarray] = None) -> np.ndarray:
        var = np.full(self.domain_size, n * self.variance_per_user())
        if counts is not None:
            g, _, _ = self._collision_terms()
            k, m = self.hashes, self.width
            var = var - g * np.asarray(counts, dtype=np.float64) * (k - 1) * (m - 1) / (k * m * m)
        return self._hash_variance(var, counts)


class CountMeanSketchAggregator(Aggregator):
    """State: ``signs`` (int64, k × m): per hash, the sums of the reported signs; ``users``
    (int64, k): reports per hash."""

    def _empty_state(self) -> Dict[str, np.ndarray]:
        p = self.protocol
        return {"signs": np.zeros((p.hashes, p.width), dtype=np.int64), "users": np.zeros(p.hashes, dtype=np.int64)}

    _report_keys = frozenset({"hash_index", "vectors"})

    def _check_state(self, state: Dict[str, np.ndarray], n: int) -> None:
        users, signs = state["users"], state["signs"]
        # each report adds ±1 to every column of its hash's row
        if (users < 0).any() or int(users.sum(dtype=object)) != n or (np.abs(signs) > users[:, None]).any():
            raise ValueError("corrupt aggregator state: cms users must sum to n and bound every row's sign sums")

    def _check_batch(self, reports: Reports) -> None:
        p = self.protocol
        idx, vec = reports.data["hash_index"], reports.data["vectors"]
        if not isinstance(idx, np.ndarray) or idx.dtype != np.int64 or idx.shape != (reports.n,):
            raise ValueError("cms reports: 'hash_index' must be int64, one per report")
        if not isinstance(vec, np.ndarray) or vec.dtype != np.uint8 or vec.shape != (reports.n, p.width // 8):
            raise ValueError("cms reports: 'vectors' must be uint8 of shape (n, width/8)")
        _core.ldp.cms_check_reports(idx, vec, reports.n, p.hashes, p.width)

    def _ingest(self, reports: Reports) -> None:
        _core.ldp.cms_accumulate(self._state["signs"], self._state["users"], reports.data["hash_index"],
                                 reports.data["vectors"], reports.n)

    def _estimate(self) -> np.ndarray:
        p = self.protocol
        m = p.width
        gathered = _core.ldp.sketch_gather(p._key(), p.hashes, m, self._state["signs"], p.domain_size, False)
        # (1/k) Σ_l M[l, h_l(x)] with M = k((c/2) T + N/2): (c/2) G(x) + n/2 (Apple 2017, Alg. 2)
        return (m / (m - 1)) * (p.scale() / 2 * gathered + self.n / 2 - self.n / m)


CountMeanSketch.aggregator_class = CountMeanSketchAggregator


@register
class HadamardCountMeanSketch(_Sketch):
    """Hadamard count-mean sketch: report (hash index l, coefficient a, one bit), the bit
    H[a, h_l(x)] kept with probability e^ε/(e^ε + 1). Variance (over users' randomness and the
    random hash key): (m/(m−1))² [n c² − c(x) − (n − c(x))(m + k − 1)/(k m²)
    + Σ_{y≠x} c(y)² (m−1)/(k m²)], c = (e^ε + 1)/(e^ε − 1) (docs/ldp_hadamard.md)."""

    name = "hcms"

    def _privatize(self, rng: Generator, items: np.ndarray, threads: int) -> Dict[str, np.ndarray]:
        g = self.gamma
        index, coefficient, bits = _core.ldp.hcms_privatize(rng._core, items, self._key(), self.hashes, self.width,
                                                            g.numerator, g.denominator, threads)
        return {"hash_index": index, "coefficient": coefficient, "bits": bits}

    def scale(self) -> float:
        em1 = math.expm1(float(self.gamma))
        return (em1 + 2) / em1

    def variance_per_user(self) -> float:
        g, _, epi2 = self._collision_terms()
        return g * (self.scale() ** 2 - epi2)

    def variance(self, n: int, counts: Optional[np.ndarray] = None) -> np.ndarray:
        var = np.full(self.domain_size, n * self.variance_per_user())
        if counts is not None:
            g, _, epi2 = self._collision_terms()
            var = var - g * np.asarray(counts, dtype=np.float64) * (1 - epi2)
        return self._hash_variance(var, counts)


class HadamardCountMeanSketchAggregator(Aggregator):
    """State: ``bit_sums`` (int64, k × m): per (hash, coefficient), the sum of the ±1 bits."""

    def _empty_state(self) -> Dict[str, np.ndarray]:
        p = self.protocol
        return {"bit_sums": np.zeros((p.hashes, p.width), dtype=np.int64)}

    _report_keys = frozenset({"hash_index", "coefficient", "bits"})

    def _check_state(self, state: Dict[str, np.ndarray], n: int) -> None:
        # each report adds ±1 to one (hash, coefficient) cell
        if int(np.abs(state["bit_sums"]).sum(dtype=object)) > n:
            raise ValueError("corrupt aggregator state: hcms bit sums exceed the number of reports")

    def _check_batch(self, reports: Reports) -> None:
        p = self.protocol
        for key in ("hash_index", "coefficient"):
            v = reports.data[key]
            if not isinstance(v, np.ndarray) or v.dtype != np.int64 or v.shape != (reports.n,):
                raise ValueError(f"hcms reports: {key!r} must be int64, one per report")
        bits = reports.data["bits"]
        if not isinstance(bits, np.ndarray) or bits.dtype != np.uint8 or bits.shape != ((reports.n + 7) // 8,):
            raise ValueError("hcms reports: 'bits' must be uint8, ceil(n/8) packed bytes")
        _core.ldp.hcms_check_reports(reports.data["hash_index"], reports.data["coefficient"], bits, reports.n,
                                     p.hashes, p.width)

    def _ingest(self, reports: Reports) -> None:
        _core.ldp.hcms_accumulate(self._state["bit_sums"], reports.data["hash_index"], reports.data["coefficient"],
                                  reports.data["bits"], reports.n)

    def _estimate(self) -> np.ndarray:
        p = self.protocol
        m = p.width
        # M = k c T H (row-wise transform); (1/k) Σ_l M[l, h_l(x)] = c G(x) (Apple 2017, Alg. 4)
        gathered = _core.ldp.sketch_gather(p._key(), p.hashes, m, self._state["bit_sums"], p.domain_size, True)
        return (m / (m - 1)) * (p.scale() * gathered - self.n / m)


HadamardCountMeanSketch.aggregator_class = HadamardCountMeanSketchAggregator
