"""Choosing a frequency oracle: :func:`compare` (each registered protocol's own error, time and
state, from the formulas each protocol states: dpnoise.ldp._channels) and :func:`recommend`,
which decides from every row of :func:`compare` (no protocol is named here)."""
from __future__ import annotations

import math
import time
from typing import Any, TypedDict

import numpy as np

from .._validate import integer, positive
from ..generator import default_rng
from ._frequency import FrequencyConfiguration, check_domain_size
from ._privacy import check_epsilon


class _ComparisonKeys(TypedDict):
    protocol: str
    supported: bool


class ComparisonRow(_ComparisonKeys, total=False):
    """One row of :func:`compare` (a plain dict at run time): ``protocol`` and ``supported``
    always, ``reason`` where unsupported, the rest where the protocol takes the domain."""

    reason: str
    variance_per_user: float
    rms_error: float
    state_bytes: int
    server_grows_with_d: bool
    client_seconds: float
    server_seconds: float | None
    full_estimate: bool


class Recommendation(str):
    """A protocol name (a ``str``: pass it to :func:`dpnoise.ldp.FrequencyOracle`, compare it
    with ``==``) that also says what the choice could not weigh.

    Attributes
    ----------
    note : str
        Empty, or (when :func:`recommend` was not given ``n`` and chose a server whose work grows
        as n·d) the predicted server time at n = 10^6 and a request for ``n``. ``repr`` and
        ``str`` are the name's, so that messages quoting the choice stay short.
    """

    note: str

    def __new__(cls, name: str, note: str = "") -> Recommendation:
        obj = super().__new__(cls, name)
        obj.note = note
        return obj

    def __reduce__(self) -> Any:
        return (Recommendation, (str(self), self.note))


def recommend(epsilon: float, domain_size: int, *, n: Any = None, server_seconds: Any = None,
              memory_bytes: Any = None) -> Recommendation:
    """The name of the frequency oracle with the least stated error at (ε, d, n) among every
    protocol :func:`compare` lists that can estimate the domain and meets the limits.

    Parameters
    ----------
    epsilon : float
        ε per user.
    domain_size : int
        d, the number of items.
    n : int, optional
        The number of reports. Without it, errors and times are taken at :func:`compare`'s
        default n = 10^6, and if the choice is a server whose work per report grows with d
        (O(n·d): OLH, and OUE and SUE beyond d = 64), the result's ``note`` says so, with the
        predicted time, and asks for n.
    server_seconds : float, optional
        The most time the server may spend (add and a full estimate), predicted from a run
        calibrated on this machine (see :func:`compare`), at n (default 10^6).
    memory_bytes : int, optional
        The most memory one aggregator's state may take.

    Returns
    -------
    Recommendation
        A ``str``, the protocol name for :func:`dpnoise.ldp.FrequencyOracle`: the least
        ``variance_per_user`` of :func:`compare` (FLH's is its bound over all data sets), with
        protocols within ``TIE`` (1%) of it counting as tied and ties going to the cheaper one
        (declared ``cost_rank``, then the predicted server time): GRR when d < 3e^ε + 2 (Wang et
        al. 2017, §5), else OLH. A protocol that cannot estimate the whole domain is never
        recommended, unless it estimates given items without it (count-mean sketches: pass the
        candidates to ``estimate(items)``). Its ``note`` is described under ``n``.

    Raises
    ------
    ValueError
        For a bad argument, or when no registered protocol meets the request.

    Examples
    --------
    >>> dpnoise.ldp.recommend(1.0, 10)
    'grr'
    >>> dpnoise.ldp.recommend(2.0, 50_000, n=10**7, server_seconds=5)   # OLH's server is O(n d)
    'hadamard'
    """
    limit_s = None if server_seconds is None else positive(server_seconds, "server_seconds")
    limit_b = None if memory_bytes is None else integer(memory_bytes, "memory_bytes")
    registry = FrequencyConfiguration.registered()
    candidates: list[ComparisonRow] = []
    for row in compare(epsilon, domain_size, n=n):  # validates ε, d and n
        if not row["supported"] or (limit_b is not None and row["state_bytes"] > limit_b):
            continue
        if limit_s is not None and (row["server_seconds"] is None or row["server_seconds"] > limit_s):
            continue
        candidates.append(row)
    if not candidates:
        raise ValueError(f"no registered frequency-oracle protocol can estimate domain_size={domain_size} within "
                         f"the limits given")
    least = min(r["variance_per_user"] for r in candidates)

    def cost(row: ComparisonRow) -> tuple[float, float, str]:
        rank = getattr(registry[row["protocol"]], "cost_rank", None)
        seconds = row["server_seconds"]
        return (math.inf if rank is None else rank, math.inf if seconds is None else seconds, row["protocol"])

    best = min((r for r in candidates if r["variance_per_user"] <= least * (1 + TIE)), key=cost)
    note = ""
    if n is None and best["server_grows_with_d"]:
        seconds = best["server_seconds"]
        at = "" if seconds is None else f": predicted {seconds:.3g} s at the default n = 10^6 on this machine, 10x at 10^7"
        note = f"{best['protocol']}'s server work grows as n·d{at}; pass n= (and server_seconds=) to weigh it"
    return Recommendation(best["protocol"], note)


#: variances within this relative distance of the least are tied (OUE's and OLH's differ by
#: <0.1% at integer g: the same formula, 4e^ε/(e^ε − 1)², Wang et al. 2017, Eqs. 7 and 12)
TIE = 0.01


# -- costs: recommend(..., n=, server_seconds=, memory_bytes=) and compare() -------------------
#: a full-domain estimate must fit in memory (8 bytes an item) and in this much work: beyond, a
#: protocol "cannot estimate the domain" (estimate(items) of candidates may still work)
MAX_ESTIMATE_BYTES = 1 << 36
MAX_ESTIMATE_UNITS = 1e13
_CALIBRATION: dict[tuple[str, float], tuple[float, float]] = {}


def _units(config: Any, n: int) -> tuple[float, float]:
    """(client, server) work units of ``config`` for n reports: the protocol's ``cost_units``."""
    return config.cost_units(n)


def _seconds_per_unit(cls: Any, epsilon: float) -> tuple[float, float]:
    """Client and server seconds per work unit of ``cls`` on this machine: one small timed run
    (2^14 reports, d = 1024), cached for the process."""
    key = (cls.name, round(epsilon, 3))
    if key not in _CALIBRATION:
        config = cls.example(epsilon, 1024)
        n0 = 1 << 14
        items = np.arange(n0, dtype=np.int64) % 1024
        client = config.client(default_rng(12345), allow_insecure=True)  # timing only: never released
        t0 = time.perf_counter()
        reports = client.privatize(items)
        t1 = time.perf_counter()
        config.aggregator().add(reports).estimate()
        t2 = time.perf_counter()
        cu, su = _units(config, n0)
        _CALIBRATION[key] = ((t1 - t0) / cu, (t2 - t1) / su)
    return _CALIBRATION[key]


def _grows_with_d(cls: Any, epsilon: float, config: Any) -> bool:
    """Whether the server's work per report (``cost_units``: its increase from 10^6 to 2·10^6
    reports, per report) is larger at d than at d/2: an O(n·d) server."""
    d = config.domain_size
    if d < 4:
        return False
    try:
        smaller = cls(epsilon, d // 2)
    except ValueError:
        return False

    def per_report(c: Any) -> float:
        return (c.cost_units(2 * 10**6)[1] - c.cost_units(10**6)[1]) / 10**6
    return per_report(config) > per_report(smaller)


def compare(epsilon: float, domain_size: int, *, n: Any = None) -> list[ComparisonRow]:
    """The table :func:`recommend` decides from: one row per registered frequency oracle.

    It never sees the data, so the error it states is each protocol's own, for an item no
    device holds, and where that error depends on the other items' counts it is the largest
    over every data set of n reports: FLH's (and a pooled OLH's) pool term
    Σ_{y≠x} c(y)(c(y) − 1)/((g − 1)k′) taken at all n devices holding one other item,
    n(n − 1)/((g − 1)k′) (``local_hashing.pool_variance_bound``; a protocol declares such a
    bound as ``worst_case_variance(n)``). Real data stay below it: Zipf(1.1) over 50,000 items
    at ε = 2, n = 10^7 measures about a fifth of FLH's bound (docs/ldp.md, "What compare()
    assumes"). A protocol without that declaration is taken at n·``variance_per_user()``.

    Parameters
    ----------
    epsilon, domain_size : float, int
        ε per user and d.
    n : int, optional
        The number of reports (default 10^6) for the time and error columns.

    Returns
    -------
    list of dict
        Sorted by variance: ``protocol``, ``supported`` (False, with ``reason``, when the
        protocol refuses d or cannot estimate the whole domain), ``variance_per_user`` (the
        variance above divided by n), ``rms_error`` (its square root: the standard error of
        one count at n), ``client_seconds`` and ``server_seconds`` (add and a full estimate,
        predicted from a run calibrated on this machine), ``server_grows_with_d`` (True when
        the server's work per report grows with d: an O(n·d) server), ``state_bytes``.

    Raises
    ------
    ValueError
        For a bad ε or domain size, or n < 1.
    """
    eps = check_epsilon(epsilon)
    d = check_domain_size(domain_size)
    n = 10**6 if n is None else integer(n, "n")
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    rows: list[ComparisonRow] = []
    for name, cls in sorted(FrequencyConfiguration.registered().items()):
        assert issubclass(cls, FrequencyConfiguration)  # the family's registry holds its protocols only
        row: ComparisonRow = {"protocol": name, "supported": False}
        try:
            config = cls(eps, d)
        except ValueError as exc:
            row["reason"] = str(exc)
            rows.append(row)
            continue
        bound = getattr(config, "worst_case_variance", None)  # declared where other items' counts matter
        var = float(bound(n)) / n if bound is not None else float(config.variance_per_user())
        cu, su = _units(config, n)
        full = float(d) * 8 <= MAX_ESTIMATE_BYTES and su <= MAX_ESTIMATE_UNITS
        row["variance_per_user"], row["rms_error"] = var, math.sqrt(n * var)
        row["state_bytes"], row["server_grows_with_d"] = int(config.state_bytes()), _grows_with_d(cls, eps, config)
        if not full and not getattr(cls, "estimates_items_only", False):
            row["reason"] = "cannot estimate a domain this large (memory or work of a full estimate)"
            rows.append(row)
            continue
        spu_c, spu_s = _seconds_per_unit(cls, eps)
        row["supported"], row["client_seconds"] = True, cu * spu_c
        row["server_seconds"], row["full_estimate"] = (su * spu_s if full else None), full
        rows.append(row)
    return sorted(rows, key=lambda r: (not r["supported"], r.get("variance_per_user", math.inf)))
