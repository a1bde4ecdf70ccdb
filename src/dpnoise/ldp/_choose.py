"""Choosing a frequency oracle: the per-user variance formulas of the literature and
:func:`recommend`, which weighs them over every registered protocol that declares a cost
(class members ``cost_rank`` and ``variance_formula``; no protocol is named here)."""
from __future__ import annotations

import math
from typing import Any, List, Tuple


def grr_variance(epsilon: float, d: int) -> float:
    """k-ary randomized response: (e^ε + d − 2)/(e^ε − 1)² (Wang et al. 2017, Eq. 2)."""
    em1 = math.expm1(epsilon)  # e^ε − 1, accurate for small ε
    return (em1 + d - 1) / em1 ** 2


def olh_variance(epsilon: float, d: int = 0) -> float:
    """OUE and OLH: 4e^ε/(e^ε − 1)² (Wang et al. 2017, Eqs. 7 and 12)."""
    em1 = math.expm1(epsilon)
    return 4 * (em1 + 1) / em1 ** 2


def one_bit_variance(epsilon: float, d: int = 0) -> float:
    """One kept-or-flipped ±1 bit per user (Hadamard, Z): ((e^ε + 1)/(e^ε − 1))²."""
    em1 = math.expm1(epsilon)
    return ((em1 + 2) / em1) ** 2


def recommend(epsilon: float, domain_size: int, *, n: Any = None, server_seconds: Any = None,
              memory_bytes: Any = None) -> str:
    """The name of the registered frequency oracle with the least variance per user at (ε, d)
    among those that can estimate the domain and meet the limits.

    Parameters
    ----------
    epsilon : float
        ε per user.
    domain_size : int
        d, the number of items.
    n : int, optional
        The number of reports (for the time limit; default 10^6).
    server_seconds : float, optional
        The most time the server may spend (add and a full estimate), predicted from a run
        calibrated on this machine (see :func:`compare`).
    memory_bytes : int, optional
        The most memory one aggregator's state may take.

    Returns
    -------
    str
        A protocol name for :func:`dpnoise.ldp.FrequencyOracle`. Without limits, ties go to the
        cheaper protocol (its ``cost_rank``): GRR when d < 3e^ε + 2 (Wang et al. 2017, §5), else
        OLH. A protocol that cannot estimate the whole domain (memory or work of a full estimate
        beyond reach) is never recommended, unless it estimates given items without it
        (count-mean sketches: pass the candidates to ``estimate(items)``).

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
    from .._validate import integer, positive
    from ._frequency import Protocol, check_domain_size
    from ._protocol import check_epsilon

    eps = check_epsilon(epsilon)
    d = check_domain_size(domain_size)
    limit_s = None if server_seconds is None else positive(server_seconds, "server_seconds")
    limit_b = None if memory_bytes is None else integer(memory_bytes, "memory_bytes")
    rows = {r["protocol"]: r for r in compare(eps, d, n=n)} if (limit_s or n is not None or d * 8 > MAX_ESTIMATE_BYTES
                                                               or limit_b is not None) else None
    candidates: List[Tuple[float, int, str]] = []
    for cls in Protocol.registered().values():
        rank: Any = getattr(cls, "cost_rank", None)
        if rank is None:
            continue
        if rows is not None:
            row = rows[cls.name]
            if not row["supported"] or (limit_b is not None and row["state_bytes"] > limit_b):
                continue
            if limit_s is not None and (row["server_seconds"] is None or row["server_seconds"] > limit_s):
                continue
        else:
            try:  # a protocol may not support this domain (unary: d bits per report; hashing: 32-bit keys)
                config = cls(eps, d)
            except ValueError:
                continue
            if config.cost_units(10**6)[1] > MAX_ESTIMATE_UNITS:
                continue
        candidates.append((cls.variance_formula(eps, d), rank, cls.name))
    if not candidates:
        raise ValueError(f"no registered frequency-oracle protocol can estimate domain_size={d} within the limits given")
    return min(candidates)[2]


# -- costs: recommend(..., n=, server_seconds=, memory_bytes=) and compare() -------------------
#: a full-domain estimate must fit in memory (8 bytes an item) and in this much work: beyond, a
#: protocol "cannot estimate the domain" (estimate(items) of candidates may still work)
MAX_ESTIMATE_BYTES = 1 << 36
MAX_ESTIMATE_UNITS = 1e13
_CALIBRATION: dict = {}


def _units(config: Any, n: int) -> Tuple[float, float]:
    """(client, server) work units of ``config`` for n reports: the protocol's ``cost_units``."""
    return config.cost_units(n)


def _seconds_per_unit(cls: Any, epsilon: float) -> Tuple[float, float]:
    """Client and server seconds per work unit of ``cls`` on this machine: one small timed run
    (2^14 reports, d = 1024), cached for the process."""
    import time

    import numpy as np

    from ..generator import default_rng

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


def compare(epsilon: float, domain_size: int, *, n: Any = None) -> List[dict]:
    """The table :func:`recommend` decides from: one row per registered frequency oracle.

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
        protocol refuses d or cannot estimate the whole domain), ``variance_per_user``,
        ``rms_error`` (the standard error of one count at n), ``client_seconds`` and
        ``server_seconds`` (add and a full estimate, predicted from a run calibrated on this
        machine), ``state_bytes``.

    Raises
    ------
    ValueError
        For a bad ε or domain size, or n < 1.
    """
    from .._validate import integer
    from ._frequency import Protocol, check_domain_size
    from ._protocol import check_epsilon

    eps = check_epsilon(epsilon)
    d = check_domain_size(domain_size)
    n = 10**6 if n is None else integer(n, "n")
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    rows = []
    for name, cls in sorted(Protocol.registered().items()):
        row: dict = {"protocol": name, "supported": False}
        try:
            config = cls(eps, d)
        except ValueError as exc:
            row["reason"] = str(exc)
            rows.append(row)
            continue
        var = float(config.variance_per_user())
        cu, su = _units(config, n)
        full = float(d) * 8 <= MAX_ESTIMATE_BYTES and su <= MAX_ESTIMATE_UNITS
        row.update(variance_per_user=var, rms_error=math.sqrt(n * var), state_bytes=int(config.state_bytes()))
        if not full and not getattr(cls, "estimates_items_only", False):
            row["reason"] = "cannot estimate a domain this large (memory or work of a full estimate)"
            rows.append(row)
            continue
        spu_c, spu_s = _seconds_per_unit(cls, eps)
        row.update(supported=True, client_seconds=cu * spu_c, server_seconds=su * spu_s if full else None,
                   full_estimate=full)
        rows.append(row)
    return sorted(rows, key=lambda r: (not r["supported"], r.get("variance_per_user", math.inf)))
