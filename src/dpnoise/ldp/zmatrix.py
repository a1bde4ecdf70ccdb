"""The frequency oracle over a public random matrix Z ∈ {−1,+1}^{d×W} ("zmatrix"; Bassily &
Smith 2015, the basic randomizer; docs/ldp_zmatrix.md).

Z is never stored: entry (x, c) is computed from a public key on both sides
(cpp/include/dpnoise/ldp/public_matrix.hpp). A report is (c, y): the public column c of Z it
uses and y = Z[x, c] kept with probability e^ε/(e^ε + 1), else −Z[x, c] (exact binary randomized
response). The server estimates f̂(x) = (e^ε + 1)/(e^ε − 1) · Σ_i y_i Z[x, c_i] with one sweep
over Z at ``estimate()`` time (cached until the next add or merge).

Columns: by default the caller gives each user a distinct public column (``first_column=`` or
``columns=`` in ``privatize``), e.g. a dense device number assigned at enrolment: the estimator's
variance is then exactly n c² − f(x) and the server's work is d × (columns used)/64 words. Without
them each report draws its column uniformly from [0, W) with the secret generator (independent of
the item): no coordination, still unbiased, but two reports of the same item on one column add 2
to the variance of every other item (docs/ldp_zmatrix.md, "Duplicated columns"). Any number of
reports may share a column: the aggregator keeps each column's sum of y.
"""
from __future__ import annotations

import math
import secrets
from typing import Any

import numpy as np

from .. import _core
from .._errors import CapacityError
from .._validate import check_threads, integer
from ..generator import Generator
from ._aggregator import Aggregator
from ._channels import one_bit_variance
from ._frequency import FrequencyAggregator, FrequencyConfiguration, check_items
from ._kernels import Kernels, KernelTable
from ._protocol import Client, native
from ._reports import Reports
from ._schema import PER_USER, ReportField

DEFAULT_COLUMNS = 1 << 20
MAX_COLUMNS = 1 << 36
DEFAULT_PLANES = 4
MAX_PLANES = 16
MAX_STATE_BYTES = 1 << 30   # W (planes + 1)/8 bytes of aggregator state: 1 GiB at most
_KEY_LIMIT = 1 << 256


def _public_key(value: Any) -> bytes:
    if isinstance(value, (bytes, bytearray)):
        if len(value) != 32:
            raise ValueError(f"public_key bytes must be exactly 32 bytes long, got {len(value)}")
        return bytes(value)
    v = integer(value, "public_key")
    if not 0 <= v < _KEY_LIMIT:
        raise ValueError("public_key must be an int in [0, 2**256) or 32 bytes")
    return v.to_bytes(32, "little")


def _check_columns(columns: Any, width: int) -> np.ndarray:
    arr = np.asarray(columns)
    if arr.size == 0 and not isinstance(columns, np.ndarray):
        arr = arr.astype(np.int64)  # an empty list is an empty batch, not float64
    if arr.dtype == object or not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"columns must be integers, got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise ValueError(f"columns must be a 1-D array, got {arr.ndim}-D")
    if arr.size and (int(arr.min()) < 0 or int(arr.max()) >= width):
        raise ValueError(f"columns must be in [0, {width}) (the 'columns' option)")
    return arr.astype(np.int64, copy=False)


class ZMatrixClient(Client):
    """The zmatrix randomizer: ``privatize(items, first_column=None, columns=None)``."""

    def privatize(self, items: Any, *, first_column: int | None = None, columns: Any = None,
                  threads: int | None = None, device_keys: Any = None) -> Reports:
        """One ε-LDP report per item. The public column of each report: ``columns`` (one int per
        item in [0, W)), or ``first_column`` + 0, 1, 2, ... (dense public user indices), or, with
        neither, drawn uniformly from [0, W) by the secret generator.

        Parameters
        ----------
        items : array_like of int
            One item in [0, d) per user.
        first_column : int, optional
            The first user's public column; the others follow it.
        columns : array_like of int, optional
            One public column per item.
        threads : int, optional
            Worker threads (the output does not depend on it).
        device_keys : optional
            As for :meth:`dpnoise.ldp.Client.privatize` (every client takes it); zmatrix does not
            memoise, so the envelope refuses it (ValueError) and nothing is charged.

        Returns
        -------
        Reports
            One report per item.

        Raises
        ------
        ValueError
            For both ``columns`` and ``first_column``, columns out of [0, W) or of another
            length, items out of the domain, or ``device_keys``.
        """
        if device_keys is not None:  # the envelope's one path: its checks, its message
            if first_column is not None or columns is not None:
                raise ValueError("give device_keys or columns/first_column, not both")
            return super().privatize(items, threads=threads, device_keys=device_keys)
        proto = self.protocol
        assert isinstance(proto, ZMatrix)  # the client of ZMatrix (client=ZMatrixClient) only
        t = check_threads(threads)
        arr = check_items(items, proto.domain_size)
        if first_column is not None and columns is not None:
            raise ValueError("give columns or first_column, not both")
        if first_column is None and columns is None:
            self._charge(int(arr.size))
            data = proto._privatize(self.rng, arr, t)
        else:
            if columns is not None:
                cols = _check_columns(columns, proto.width)
                if cols.size != arr.size:
                    raise ValueError(f"columns must hold one column per item ({arr.size}), got {cols.size}")
            else:
                first = integer(first_column, "first_column")
                if first < 0 or first + arr.size > proto.width:
                    raise ValueError(f"first_column + len(items) must be within [0, {proto.width}] (columns)")
                cols = np.arange(first, first + arr.size, dtype=np.int64)
            self._charge(int(arr.size))
            data = proto._privatize_columns(self.rng, arr, cols, t)
        return proto._reports(int(arr.size), data)


class ZMatrixAggregator(FrequencyAggregator):
    """State: each column's sum of reports, in sign-magnitude bit planes packed 64 columns a
    word (``sign`` (W/64,), ``magnitude`` (planes, W/64), uint64): W(planes + 1)/8 bytes."""

    protocol: ZMatrix

    def _check_state(self, state: dict[str, np.ndarray], n: int) -> None:
        # every report adds ±1 to one column: Σ_c |S_c| = Σ_p 2^p popcount(plane p) <= n
        mag = state["magnitude"]
        total = sum(int(np.unpackbits(mag[p].view(np.uint8)).sum(dtype=np.int64)) << p for p in range(mag.shape[0]))
        if total > n:
            raise ValueError("corrupt aggregator state: zmatrix column sums exceed the number of reports")

    def _empty_state(self) -> dict[str, np.ndarray]:
        nwords = (self.protocol.width + 63) // 64
        return {"sign": np.zeros(nwords, dtype=np.uint64),
                "magnitude": np.zeros((self.protocol.options["planes"], nwords), dtype=np.uint64)}

    def _check_batch(self, reports: Reports) -> None:
        c, y = reports.data["columns"], reports.data["y"]
        if c.size and (int(c.min()) < 0 or int(c.max()) >= self.protocol.width):
            raise ValueError(f"zmatrix report columns must be in [0, {self.protocol.width})")
        if y.size and not np.all((y == 1) | (y == -1)):
            raise ValueError("zmatrix report values y must be -1 or +1")

    def _column_values(self, columns: np.ndarray) -> np.ndarray:
        """The current signed sums of the given columns, read from the bit planes: O(len · planes)."""
        words, bits = columns >> 6, (columns & 63).astype(np.uint64)
        mag = np.zeros(columns.size, dtype=np.int64)
        for p in range(self._state["magnitude"].shape[0]):
            mag += ((self._state["magnitude"][p][words] >> bits) & np.uint64(1)).astype(np.int64) << p
        negative = ((self._state["sign"][words] >> bits) & np.uint64(1)).astype(bool)
        return np.where(negative, -mag, mag)

    def _ingest(self, reports: Reports) -> None:
        cols = reports.data["columns"]
        if cols.size * 8 >= self._state["magnitude"].size:
            # a batch as large as the state: add on copies (O(state + batch)), keep them if the
            # core accepted every report
            sign, mag = self._state["sign"].copy(), self._state["magnitude"].copy()
            try:
                _core.ldp.zmatrix_accumulate(sign, mag, cols.astype(np.uint64), reports.data["y"])
            except OverflowError as exc:  # the state is untouched: the core worked on copies
                raise CapacityError(str(exc)) from None
            self._state = {"sign": sign, "magnitude": mag}
            return
        # a small batch: in place, O(batch log batch): every column's running sum over the batch
        # (in report order, as the core adds them) is checked against the planes first, so the
        # core cannot stop half-way and the state needs no copy
        y = reports.data["y"].astype(np.int64)
        if cols.size:
            order = np.argsort(cols, kind="stable")
            c, v = cols[order], y[order]
            starts = np.flatnonzero(np.r_[True, c[1:] != c[:-1]])
            running = np.cumsum(v)
            running -= np.repeat(np.r_[0, running[starts[1:] - 1]], np.diff(np.r_[starts, c.size]))
            peak = np.maximum.reduceat(running, starts)
            trough = np.minimum.reduceat(running, starts)
            now = self._column_values(c[starts])
            limit = (1 << self._state["magnitude"].shape[0]) - 1
            if (now + peak > limit).any() or (now + trough < -limit).any():
                raise CapacityError(f"a column's sum would leave ±{limit} (the 'planes' option, {self.protocol.options['planes']}): "
                                    "use more planes or spread the reports over more columns")
        _core.ldp.zmatrix_accumulate(self._state["sign"], self._state["magnitude"], cols.astype(np.uint64),
                                 reports.data["y"])

    def _merge_state(self, other: Aggregator) -> None:
        sign, mag = self._state["sign"].copy(), self._state["magnitude"].copy()
        try:
            _core.ldp.zmatrix_merge(sign, mag, other._state["sign"].copy(), other._state["magnitude"].copy())
        except OverflowError as exc:  # the state is untouched: the core worked on copies
            raise CapacityError(str(exc)) from None
        self._state = {"sign": sign, "magnitude": mag}

    def _after_load(self) -> None:
        width = self.protocol.width
        if width % 64:  # bits past column W - 1 must be clear
            tail = ~np.uint64((1 << (width % 64)) - 1)
            if (self._state["sign"][-1] & tail) or (self._state["magnitude"][:, -1] & tail).any():
                raise ValueError("corrupt aggregator state: bits beyond the last column")
        if (self._state["sign"] & ~np.bitwise_or.reduce(self._state["magnitude"], axis=0)).any():
            raise ValueError("corrupt aggregator state: a sign on a column whose sum is zero")

    def column_sums(self, threads: int | None = None) -> np.ndarray:
        """S(x) = Σ_i y_i Z[x, c_i] for every item (int64): one sweep over Z, cached.

        Parameters
        ----------
        threads : int, optional
            Worker threads for the sweep.

        Returns
        -------
        numpy.ndarray of int64
            Shape (d,), read-only.
        """
        t = check_threads(threads)
        return self._cached("column_sums", lambda: _core.ldp.zmatrix_sweep(
            self.protocol.options["public_key"], self._state["sign"], self._state["magnitude"],
            self.protocol.domain_size, t))

    def _estimate(self) -> np.ndarray:
        return self.protocol.scale() * self.column_sums()

    def _estimate_items(self, items: np.ndarray) -> np.ndarray:
        # only the requested rows of Z: O(|items| W/64), whatever d (issue #22 item 6)
        p = self.protocol
        return p.scale() * _core.ldp.zmatrix_sweep_items(p.options["public_key"], self._state["sign"],
                                                         self._state["magnitude"], items, p.domain_size,
                                                         check_threads(None))

    def shared_column_excess(self) -> int:
        """Σ_c S_c² − n over the columns' sums S_c: 0 when every report has a column of its
        own, else twice the sum over pairs of reports sharing a column of y_i y_i′ (cached).

        Returns
        -------
        int
            The excess (may be negative).
        """
        def compute() -> int:
            mag = self._state["magnitude"]
            m = np.zeros(mag.shape[1] * 64, dtype=np.int64)
            for p in range(mag.shape[0]):
                m += np.unpackbits(mag[p].view(np.uint8), bitorder="little").astype(np.int64) << p
            return int(np.dot(m, m)) - self.n
        return self._cached("excess", compute)

    def variance(self, items: Any = None) -> np.ndarray:
        """The protocol's n c² − f(x), plus the shared-column term: two reports on one column
        whose users hold the same item y ≠ x add 2 to Var f̂(x) (docs/ldp_zmatrix.md,
        "Duplicated columns"). Its expectation over Z and the randomizers is
        c² E[Σ_c S_c² − n] (E[y_i y_i′] = (2p − 1)² = 1/c² for such a pair, 0 for users of
        different items), so c² max(Σ_c S_c² − n, 0) estimates it from the state; it is 0 for
        reports on distinct columns. Pairs holding x itself add nothing to Var f̂(x) but are
        counted: the stated variance errs on the large side."""
        if items is None or "estimates" in self._cache:
            var = super().variance(items)
        else:  # the requested items only, as estimate(items): no sweep over the domain
            est = self._estimate_items(self.protocol._query(items))
            var = self._plug_in_variance(est)
        c = self.protocol.scale()
        return var + c * c * max(self.shared_column_excess(), 0)


class ZMatrix(FrequencyConfiguration, name="zmatrix", aggregator=ZMatrixAggregator, client=ZMatrixClient, cost_rank=5):
    """One bit per user over a public random ±1 matrix Z (d rows, ``columns`` columns).

    Options: ``public_key`` (int in [0, 2**256) or 32 bytes; default a fresh random key, part
    of the configuration (``params()``): the key of Z, published before collecting and chosen
    independently of the data; a fixed key would turn the cross terms into a fixed bias of
    order n_y/√W), ``columns`` (W, the number of
    columns of Z, default 2**20: the range of column indices and of the state's size, W/8 bytes
    per plane), ``planes`` (default 4: each column's sum of reports must stay within
    ±(2**planes − 1); one plane suffices when every column is used once).
    The state, W (planes + 1)/8 bytes, is at most 1 GiB.
    Report: ``columns`` int64 and ``y`` int8 (±1), one each per user.
    Constant-time kernel: the client computes Z[x, c] from one ChaCha20 block with no address or
    branch on the item and keeps/flips it with the constant-time binary randomized response
    (docs/security.md); ``privacy_loss()`` is then ApproxDP(ε, (1 + e^ε)·2^-64).
    """

    report_fields = (ReportField("columns", PER_USER, np.int64, bound=lambda p: p.width),
                     ReportField("y", PER_USER, np.int8, allowed=(-1, 1)))
    variance_formula = staticmethod(one_bit_variance)
    example_options = {"columns": 4096}
    kernel_table = KernelTable(variable_time=Kernels(client=_core.ldp.zmatrix_privatize),
                               constant_time=Kernels(client=_core.ldp.zmatrix_privatize_constant_time))

    def _check_options(self, options: dict[str, Any]) -> dict[str, Any]:
        unknown = set(options) - {"public_key", "columns", "planes"}  # (the variants: the envelope's)
        if unknown:
            raise TypeError(f"protocol 'zmatrix' takes no option {sorted(unknown)[0]!r}")
        key = options.get("public_key")
        key = secrets.token_bytes(32) if key is None else _public_key(key)
        width = integer(options.get("columns", DEFAULT_COLUMNS), "columns")
        if not 1 <= width <= MAX_COLUMNS:
            raise ValueError(f"columns must be in [1, 2**36], got {width}")
        planes = integer(options.get("planes", DEFAULT_PLANES), "planes")
        if not 1 <= planes <= MAX_PLANES:
            raise ValueError(f"planes must be in [1, {MAX_PLANES}], got {planes}")
        if ((width + 63) // 64) * 8 * (planes + 1) > MAX_STATE_BYTES:
            raise ValueError(f"columns * (planes + 1) / 8 must be at most 2^30 bytes (the aggregator's state), got "
                             f"columns={width}, planes={planes}")
        return {"public_key": key, "columns": width, "planes": planes}

    def cost_units(self, n: int) -> tuple[float, float]:
        """Server: one column a report, then the sweep: d W/64 words."""
        return float(n), float(n) + float(self.domain_size) * ((self.width + 63) // 64)

    def state_bytes(self) -> int:
        """W (planes + 1)/8 bytes of bit planes."""
        return ((self.width + 63) // 64) * 8 * (self.options["planes"] + 1)

    @property
    def width(self) -> int:
        """W, the number of columns of Z."""
        return int(self.options["columns"])

    def scale(self) -> float:
        """c = (e^γ + 1)/(e^γ − 1): the estimator's factor (1/(2p − 1), p = e^γ/(e^γ + 1)).

        Returns
        -------
        float
            c.
        """
        em1 = math.expm1(float(self.gamma))  # e^γ − 1, accurate for small ε
        return (em1 + 2) / em1

    def _privatize(self, rng: Generator, items: np.ndarray, threads: int) -> dict[str, np.ndarray]:
        # no columns given: one uniform column per report from the secret generator
        cols = rng.integers(0, self.width, size=items.size, threads=threads).astype(np.int64, copy=False)
        return self._privatize_columns(rng, items, cols, threads)

    def _privatize_columns(self, rng: Generator, items: np.ndarray, cols: np.ndarray,
                           threads: int) -> dict[str, np.ndarray]:
        y = self.kernels.client(native(rng), items, cols.astype(np.uint64), self.domain_size, self.options["public_key"],
                   self.gamma.numerator, self.gamma.denominator, threads)
        return {"columns": cols, "y": y}

    def variance_per_user(self) -> float:
        """((e^ε + 1)/(e^ε − 1))² (docs/ldp_zmatrix.md, "Variance")."""
        return one_bit_variance(float(self.gamma))

    def variance(self, n: int, counts: np.ndarray | None = None) -> np.ndarray:
        """n c² − f(x) for reports on distinct columns (docs/ldp_zmatrix.md, "Variance": a
        holder of x contributes c² − 1, any other user c²). With ``counts``, one variance per
        given count (any shape): the items those counts belong to."""
        if counts is None:
            return np.full(self.domain_size, n * self.variance_per_user())
        return n * self.variance_per_user() - np.asarray(counts, dtype=np.float64)
