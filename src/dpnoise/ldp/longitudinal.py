"""Daily (longitudinal) collection, the public helpers: what a server learns from a device's
daily reports (:func:`averaging_attack`, the attack of issue 22) and the α-point rounding of
numeric values before memoised collection (:func:`alpha_point_round`).

Daily collection itself is one layer of the envelope (docs/ldp.md, "Daily collection"): a
configuration with ``instantaneous_epsilon`` composes its permanent randomizer at ε∞ (memoised
with ``client(device_key=)``: dpnoise.ldp._memo) and a fresh one at ε₁ (dpnoise.ldp._protocol,
``Client``), every family charged by one rule (dpnoise.ldp._privacy.report_loss), the
estimators debiasing both layers with the channel algebra of dpnoise.ldp._channels.
"""
from __future__ import annotations

__all__ = ["LongitudinalDP", "alpha_point_round", "averaging_attack"]

import hashlib
import math
from typing import Any

import numpy as np

from .. import _core
from .._validate import integer
from ._channels import local_pq

# the memoisation PRF under the names the benchmarks import (benchmarks/test_bench_ldp_longitudinal.py)
from ._memo import check_device_key, memo_fingerprint, memo_generator  # noqa: F401
from ._privacy import LongitudinalDP


def averaging_attack(config: Any, reports: Any, prior: Any, *, memoised: bool) -> np.ndarray:
    """The server's best guess of each device's item from all its reports: what daily reports
    reveal (the attack of issue 22; docs/ldp.md, "Daily collection"). For OLH configurations.

    Parameters
    ----------
    config : FrequencyConfiguration
        An ``"olh"`` configuration (with or without a pool or an instantaneous layer).
    reports : sequence of Reports
        Per device, its reports of all days (one Reports batch per device, one row a day).
    prior : array_like
        The probability of each item (the server knows the population's law).
    memoised : bool
        The clients memoise (every report of a device shares one permanent answer: the attacker
        combines the days through it) or not (independent reports: the log-likelihoods add).

    Returns
    -------
    numpy.ndarray
        int64 guesses, one per device: argmax over x of log prior(x) + log P(reports | x).

    Raises
    ------
    ValueError
        For a configuration that is not OLH.
    """
    if config.name != "olh":
        raise ValueError(f"config must be an 'olh' configuration, got {config.name!r}")
    d, g = config.domain_size, config.g
    log_prior = np.log(np.asarray(prior, dtype=np.float64))
    items = np.arange(d, dtype=np.int64)
    guesses = np.empty(len(reports), dtype=np.int64)
    if memoised:
        perm = local_pq(config.gamma, g)
        inst = local_pq(config.gamma1, g) if config.gamma1 is not None else None

        def score(seeds: np.ndarray, values: np.ndarray) -> np.ndarray:
            # one seed (memoised); likelihood of the days given each permanent bucket b
            if inst is None:
                like = np.zeros(g)
                like[values[0]] = 1.0  # reports repeat the permanent bucket
            else:
                counts = np.bincount(values, minlength=g)
                like = np.exp(counts * math.log(inst[0]) + (values.size - counts) * math.log(inst[1]))
            h = _core.ldp.local_hash(np.repeat(seeds[:1], d, axis=0), items, g)
            # P(days | x) = p∞ L(h(x)) + q∞ (Σ L − L(h(x)))
            return np.log(perm[0] * like[h] + perm[1] * (like.sum() - like[h]) + 1e-300)
    else:
        p, _q, _ = config._pq()
        step = math.log(p) - math.log((1 - p) / (g - 1))  # a supporting report's log-likelihood ratio

        def score(seeds: np.ndarray, values: np.ndarray) -> np.ndarray:
            return step * _core.ldp.olh_support(seeds, values, g, d, 1)
    for i, r in enumerate(reports):
        seeds, values = np.ascontiguousarray(r.data["seeds"]), np.ascontiguousarray(r.data["values"])
        guesses[i] = int(np.argmax(log_prior + score(seeds, values)))
    return guesses


def alpha_point_round(values: Any, bounds: tuple[float, float], points: int, device_key: Any) -> np.ndarray:
    """α-point rounding (Ding, Kulkarni & Yekhanin, NeurIPS 2017, §3.1): numeric values (counts,
    minutes) to the indices of ``points`` equally spaced grid points on ``bounds``, for daily
    collection with ``"dbitflip"`` (``domain_size=points``) or any memoising protocol.

    A value between grid points i and i + 1, at fraction f of the way, goes to i + 1 iff f > α,
    where α in [0, 1) is the device's secret uniform offset, a PRF of its key (keyed BLAKE2b), so
    the device stores nothing. Over α the rounded grid value has expectation the clipped value
    (unbiased for means and sums). A value that moves a little from day to day keeps its index,
    and so its memoised report, unless it crosses the device's own threshold. The rounding is
    pre-processing in float64 (its probabilities are off by < 2^-52); the privacy comes from the
    exact randomizer the index is then given to, whatever the index.

    Parameters
    ----------
    values : array_like
        Finite numbers; values outside ``bounds`` are clipped to them first.
    bounds : (float, float)
        low < high, the first and last grid points.
    points : int
        Grid points, in [2, 2^40].
    device_key : bytes
        The device's 32-byte key (as for ``client(device_key=)``).

    Returns
    -------
    numpy.ndarray
        int64 indices in [0, points).

    Raises
    ------
    TypeError
        For non-numeric values or a device key that is not bytes.
    ValueError
        For NaN or infinite values, bad bounds, points outside [2, 2^40], or a key that is not
        32 bytes.
    """
    key = check_device_key(device_key)
    k = integer(points, "points")
    if not 2 <= k <= 1 << 40:  # a frequency oracle's largest domain (exact in float64)
        raise ValueError(f"points must be in [2, 2^40], got {k}")
    try:
        low, high = (float(b) for b in bounds)
    except (TypeError, ValueError):
        raise TypeError("bounds must be two numbers (low, high)") from None
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise ValueError("bounds must be finite with low < high")
    x = np.asarray(values)
    if x.dtype.kind not in "iuf" or x.dtype == np.bool_:
        raise TypeError(f"values must be numbers, got dtype {x.dtype}")
    x = x.astype(np.float64).reshape(-1)
    if not np.isfinite(x).all():
        raise ValueError("values must be finite (no NaN or infinity)")
    s = 1.0 if math.isfinite(high - low) else 0.5  # a width beyond float64: in halves (exact there)
    pos = (np.clip(x, low, high) * s - low * s) / (high * s - low * s) * (k - 1)
    below = np.minimum(np.floor(pos), k - 2)
    h = hashlib.blake2b(key=key, digest_size=8, person=b"dpnoise-alpha-v1")
    alpha = int.from_bytes(h.digest(), "little") / 2.0 ** 64
    return (below + (pos - below > alpha)).astype(np.int64)
