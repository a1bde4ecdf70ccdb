"""Daily (longitudinal) collection: the same item reported again and again.

Two layers, as in RAPPOR (Erlingsson, Pihur & Korolova, CCS 2014, §3):

* the **permanent** randomisation at ε∞ (the configuration's ``epsilon``) is memoised: it is
  drawn from a ChaCha20 stream keyed by a pseudo-random function of (device key, item,
  configuration fingerprint), keyed BLAKE2b (RFC 7693, §2.5: keyed mode, a PRF), so a device
  that reports the same item again gives the same permanent answer and stores nothing;
* the **instantaneous** randomisation at ε₁ (``instantaneous_epsilon=``), fresh for every
  report, is the protocol's own randomizer applied to the permanent answer (a symbol for GRR and
  the hashing protocols, each bit for unary encoding), so consecutive reports differ.

Report fields that stay the same across a device's reports (OLH's hash seed, FLH's pool index)
come from a PUBLIC pool (2^10 entries by default), chosen by the PRF: they say which of a few
public values the device drew, never who it is.

Privacy (docs/ldp.md, "Daily collection"): every report is a post-processing of the permanent
answer, so all reports of one item together are ε∞-LDP; the instantaneous layer is ε₁-LDP about
its input, so each report (and, by composition, T reports) also costs at most ε₁ (T ε₁).

With ``constant_time=True`` both layers' decisions go through the constant-time kernels: the
permanent one on the PRF-keyed stream, row by row (the keyed-row C++ kernel has no
constant-time variant; every row costs the same calls), the instantaneous one on the client's
generator; the loss is :func:`constant_time_loss`.
"""
from __future__ import annotations

__all__ = ["LongitudinalDP", "alpha_point_round", "averaging_attack"]

import hashlib
import math
import json
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from .._validate import check_epsilon as _check_epsilon
from ..accounting.budget import PrivacyBudget
from ..accounting.losses import PrivacyLoss, PureDP, WithinTotalVariation
from ..bit_generator import ChaCha20
from ..generator import Generator

DEVICE_KEY_BYTES = 32
DEFAULT_POOL_SIZE = 1 << 10
MAX_POOL_SIZE = 1 << 24
# the BLAKE2b personalisation of the memoisation PRF (RFC 7693, §2.8: domain separation)
_MEMO_PERSON = b"dpnoise-memo-v1"
# parameters of the instantaneous layer: not part of the permanent answer's PRF input, so
# changing ε₁ does not draw a new permanent answer (which would spend ε∞ again)
_INSTANT_PARAMS = ("instantaneous_epsilon", "instantaneous_gamma")


@dataclass(frozen=True)
class LongitudinalDP(PureDP):
    """The privacy loss of a two-layer (memoised) configuration.

    ``epsilon`` is what one report is charged, min(ε₁, ε∞) (each report is ε₁-LDP about the
    permanent answer, an ε∞-LDP one, so a budget composing one charge per report is sound);
    ``permanent_epsilon`` (ε∞) bounds all reports of one item together, however many
    (RAPPOR, Erlingsson et al. 2014, §4). A budget ledger records it as ``PureDP(epsilon)``.

    Parameters
    ----------
    epsilon : float
        What one report costs: min(ε₁, ε∞).
    permanent_epsilon : float
        ε∞, the bound on all reports of one item together.
    instantaneous_epsilon : float
        ε₁ again, under its own name.
    """

    permanent_epsilon: float = 0.0
    instantaneous_epsilon: float = 0.0

    def to_dict(self) -> Dict[str, Any]:
        """The ledger entry: ``PureDP(epsilon)``, what one report is charged.

        Returns
        -------
        dict
            ``{"type": "PureDP", "epsilon": ε₁}``.
        """
        return {"type": "PureDP", "epsilon": self.epsilon}


def constant_time_loss(loss: LongitudinalDP, permanent_draws: int, instantaneous_draws: int) -> PrivacyLoss:
    """What one report of a two-layer ``constant_time=True`` configuration is charged:
    ``WithinTotalVariation(loss, η)``, η = (m∞ + m₁)·2^-64, m∞ and m₁ the constant-time decisions
    of the permanent and the per-report layer (each within total variation 2^-64 of exact:
    _release/constant_time.py).

    Proof (docs/security.md, "Daily collection in constant time"). Exact: the permanent answer
    A ~ R∞(x) once, report t is Y_t ~ R₁(A). Constant time: A' ~ R'∞(x), Y'_t ~ R'₁(A') with
    TV(R'∞(x), R∞(x)) <= m∞τ and TV(R'₁(a), R₁(a)) <= m₁τ for every a (τ = 2^-64, the PRF
    taken as a random function). Hybrids swapping one layer's draw at a time (the permanent
    draw once, then each report's) bound the total variation between any constant-time and
    exact transcript of T reports, other releases interleaved adaptively, by m∞τ + T·m₁τ <=
    T·η: so charging η with every report covers it, and the accountants add (1 + e^ε)·Ση to the
    exact composition's δ (WithinTotalVariation; Dwork & Roth 2014, Prop. 2.1 for the
    post-processing, the coupling lemma for TV). The exact transcript is charged ``loss`` per
    report as without constant time.

    Parameters
    ----------
    loss : LongitudinalDP
        The exact two-layer configuration's per-report loss.
    permanent_draws, instantaneous_draws : int
        m∞ and m₁.

    Returns
    -------
    WithinTotalVariation
        ``loss`` within total variation (m∞ + m₁)·2^-64.
    """
    return WithinTotalVariation(loss, (permanent_draws + instantaneous_draws) * 2.0**-64)


def check_device_key(value: Any, name: str = "device_key") -> bytes:
    """The device key as 32 bytes: TypeError for anything but bytes/bytearray, ValueError for
    another length, each naming ``name`` (e.g. ``device_keys[3]``; the message never shows the
    key)."""
    if not isinstance(value, (bytes, bytearray)):
        raise TypeError(f"{name} must be 32 bytes (e.g. secrets.token_bytes(32)), got {type(value).__name__}")
    if len(value) != DEVICE_KEY_BYTES:
        raise ValueError(f"{name} must be exactly 32 bytes, got {len(value)}")
    return bytes(value)


def check_instantaneous(config: Any, value: Any) -> Tuple[Optional[float], Any]:
    """(ε₁, its exact rational γ₁) for ``instantaneous_epsilon`` (None, None when absent);
    ValueError naming the argument and the protocols that support it for other protocols."""
    if value is None:
        return None, None
    if not config.longitudinal:
        raise ValueError(f"instantaneous_epsilon is supported by the protocols {supporting(config)} only, "
                         f"not {config.name!r}")
    from ._protocol import MAX_EPSILON, MIN_EPSILON, exact_gamma

    eps1 = _check_epsilon(value, "instantaneous_epsilon", minimum=MIN_EPSILON, maximum=MAX_EPSILON)
    return eps1, exact_gamma(eps1)


def check_pool_size(value: Any, default: int, name: str = "pool_size") -> int:
    """The size of a public pool of constant report fields, in [1, 2^24]."""
    from .._validate import integer

    k = default if value is None else integer(value, name)
    if not 1 <= k <= MAX_POOL_SIZE:
        raise ValueError(f"{name} must be in [1, 2^24], got {k}")
    return k


def supporting(config: Any) -> List[str]:
    """The registered protocols of ``config``'s family that support daily collection; for a
    family with none (heavy hitters), those of every family."""
    own = sorted(n for n, c in config.registered().items() if getattr(c, "longitudinal", False))
    return own or sorted(n for base in config.families().values() for n, c in base.registered().items()
                         if getattr(c, "longitudinal", False))


def check_budget(budget: Any, loss: Any) -> Optional[PrivacyBudget]:
    """``budget`` (None or a :class:`dpnoise.accounting.PrivacyBudget` whose accountant can
    compose ``loss``), checked when the client is made."""
    if budget is None:
        return None
    if not isinstance(budget, PrivacyBudget):
        raise TypeError(f"budget must be a dpnoise.accounting.PrivacyBudget, got {type(budget).__name__}")
    budget.accountant.check_supported(loss)
    if budget.delta == 0 and loss.pure_epsilon() is None:  # e.g. constant_time=True: δ > 0 per report
        raise ValueError(f"budget has delta = 0 but each report spends {loss!r}, which has a delta term "
                         "(constant_time=True): give the PrivacyBudget a delta > 0")
    exact = loss.loss if isinstance(loss, WithinTotalVariation) else loss
    if isinstance(exact, LongitudinalDP) and exact.epsilon < exact.instantaneous_epsilon \
            and budget.accountant.kind != "basic":
        # a report charged ε∞ < ε₁ is, given the reports before it, only known to be
        # min(ε₁, 2ε∞)-DP (its law is a mixture over the posterior of the permanent answer, whose
        # ratio between two items is at most e^(2ε∞)); the charge is sound for the pointwise sum
        # of pure losses (basic composition: all reports of an item <= ε∞ together) but not shown
        # for accountants composing per-step conditional bounds (advanced, zCDP, RDP, PLD)
        raise ValueError(f"budget: the {budget.accountant.kind!r} accountant cannot compose reports charged "
                         f"epsilon = {exact.permanent_epsilon:g} (below instantaneous_epsilon = "
                         f"{exact.instantaneous_epsilon:g}); use accountant='basic' or instantaneous_epsilon <= epsilon")
    return budget


def memo_fingerprint(config: Any) -> bytes:
    """The configuration as the PRF sees it: its family, name and every parameter of the
    permanent layer (the instantaneous layer's excluded), hashed to 32 bytes."""
    from . import _wire

    params = {k: v for k, v in config.params().items() if k not in _INSTANT_PARAMS}
    text = json.dumps({"family": config.family, "name": config.name, "params": _wire.jsonable(params)},
                      sort_keys=True)
    return hashlib.blake2b(text.encode(), digest_size=32).digest()


def memo_generator(device_key: bytes, fingerprint: bytes, item: Any) -> Generator:
    """The generator of one (device, item, configuration)'s permanent answer: ChaCha20 (RFC 8439)
    keyed with BLAKE2b_key(fingerprint || item) (RFC 7693 keyed mode as a PRF). It is secret as
    long as the device key is; it is reproducible on purpose (that is the memoisation), so it
    is never handed out and never re-keys after a fork. ``item`` is an int or its 8 bytes
    (int64 little-endian, as constant-time callers pass it: no int conversion whose time depends
    on the value); the BLAKE2b input is always 32 + 8 bytes."""
    h = hashlib.blake2b(key=device_key, digest_size=32, person=_MEMO_PERSON)
    h.update(fingerprint)
    h.update(item if isinstance(item, bytes) else int(item).to_bytes(8, "little", signed=True))
    return Generator(ChaCha20(int.from_bytes(h.digest(), "little")))


def check_device_keys(client: Any, value: Any, n: int) -> np.ndarray:
    """``device_keys`` of ``client.privatize``: one 32-byte key per item, as a C-contiguous uint8
    (n, 32) array (from an (n, 32) uint8 array or a sequence of n bytes objects). TypeError or
    ValueError naming the argument (never a key) for anything else, and for a client that
    memoises already (``device_key=``) or a configuration that cannot memoise a batch."""
    config = client.protocol
    if client.device_key is not None:
        raise ValueError("device_keys: this client memoises with its own device_key already; make a client "
                         "without device_key to privatize a batch of devices")
    if config.family != "frequency":
        raise ValueError(f"device_keys is supported by frequency oracles only, not {config.name!r}")
    if isinstance(value, np.ndarray):
        if value.dtype != np.uint8 or value.ndim != 2 or value.shape[1] != DEVICE_KEY_BYTES:
            raise TypeError("device_keys must be a uint8 array of shape (len(items), 32) or a sequence of "
                            "32-byte bytes")
        keys = np.ascontiguousarray(value)
    else:
        if isinstance(value, (bytes, bytearray, str)) or not hasattr(value, "__len__"):
            raise TypeError(f"device_keys must be a sequence of 32-byte keys, one per item, got {type(value).__name__}")
        keys = np.frombuffer(b"".join(check_device_key(k, f"device_keys[{i}]") for i, k in enumerate(value)),
                             dtype=np.uint8).reshape(-1, DEVICE_KEY_BYTES)
    if keys.shape[0] != n:
        raise ValueError(f"device_keys must hold one key per item: {keys.shape[0]} keys for {n} items")
    # the configuration can memoise (e.g. OLH has a pool), whatever n: an empty batch too
    config._check_device_key(keys[0].tobytes() if n else bytes(DEVICE_KEY_BYTES))
    return keys


def _memo_rows(config: Any, keys: np.ndarray, fingerprint: bytes, items: np.ndarray) -> List[Dict[str, np.ndarray]]:
    """Row i's permanent answer, from key ``keys[i]`` (or ``keys[0]`` for a one-row key array) and
    ``items[i]``: the same calls for every row, whatever its item (the constant-time path), the
    item passed to the PRF as its 8 little-endian bytes."""
    raw = np.ascontiguousarray(items, dtype="<i8").view(np.uint8).reshape(-1, 8)
    k = keys.shape[0] > 1
    return [config._privatize(memo_generator(keys[i * k].tobytes(), fingerprint, raw[i].tobytes()),
                              items[i:i + 1], 1) for i in range(items.shape[0])]


def memoised_batch(config: Any, keys: np.ndarray, fingerprint: bytes, items: np.ndarray,
                   threads: int = 1) -> Dict[str, np.ndarray]:
    """The permanent answers of many devices, row i for (``keys[i]``, ``items[i]``) (keys from
    :func:`check_device_keys`): the keyed-row kernel where the protocol has one, else the
    configuration's randomizer on each row's PRF generator."""
    items = np.ascontiguousarray(items, dtype=np.int64)
    # the configuration's C++ keyed-row kernel (same bits as memo_generator row by row), if any
    fast = config._memo_rows_kernel(keys, fingerprint, _MEMO_PERSON, items, threads)
    if fast is not None:
        return fast
    rows = _memo_rows(config, keys, fingerprint, items)
    if not rows:
        return config._privatize(memo_generator(bytes(DEVICE_KEY_BYTES), fingerprint, 0), items, 1)
    return {name: np.concatenate([r[name] for r in rows]) for name in rows[0]}


def memoised_reports(config: Any, device_key: bytes, fingerprint: bytes, items: np.ndarray,
                     encode: Optional[Callable[[np.ndarray], np.ndarray]] = None) -> Dict[str, np.ndarray]:
    """The permanent answers of one device for ``items`` (one report per item): the
    configuration's own randomizer, run once per distinct item on that item's PRF stream
    (``fingerprint``: :func:`memo_fingerprint` of ``config``). ``encode`` maps items (ints, the
    PRF input) to the randomizer's input (default: the items; the mean oracles' grid index to
    its grid value)."""
    if encode is None:
        key = np.frombuffer(device_key, dtype=np.uint8).reshape(1, DEVICE_KEY_BYTES)
        fast = config._memo_rows_kernel(key, fingerprint, _MEMO_PERSON, np.ascontiguousarray(items, dtype=np.int64), 1)
        if fast is not None:
            return fast
    if encode is None and config.options.get("constant_time"):
        # every item its own row (the same answer for a repeated item: the PRF is deterministic),
        # so that the work does not depend on how many items are distinct
        items = np.ascontiguousarray(items, dtype=np.int64)
        rows = _memo_rows(config, np.frombuffer(device_key, dtype=np.uint8).reshape(1, -1), fingerprint, items)
        if rows:
            return {name: np.concatenate([r[name] for r in rows]) for name in rows[0]}
    enc = (lambda x: x) if encode is None else encode
    distinct, inverse = np.unique(items, return_inverse=True)
    if distinct.size == 0:
        return config._privatize(memo_generator(device_key, fingerprint, 0), enc(items), 1)
    rows = [config._privatize(memo_generator(device_key, fingerprint, int(x)), enc(distinct[i:i + 1]), 1)
            for i, x in enumerate(distinct)]
    return {name: np.concatenate([r[name] for r in rows])[inverse] for name in rows[0]}


def symmetric_two_layers(p_perm: float, gap_perm: float, p_inst: float, gap_inst: float,
                         k: int) -> Tuple[float, float, float]:
    """(P, Q, P − Q) of two k-ary symmetric channels in a row (keep probabilities p, the others
    (1 − p)/(k − 1) each): P = p∞ p₁ + (1 − p∞)(1 − p₁)/(k − 1), Q = (1 − P)/(k − 1), and
    P − Q = (p∞ − q∞)(p₁ − q₁) (the product of the two channels' gaps, accurate for small ε)."""
    P = p_perm * p_inst + (1 - p_perm) * (1 - p_inst) / (k - 1)
    return P, (1 - P) / (k - 1), gap_perm * gap_inst


def binary_two_layers(perm: Tuple[float, float, float], inst: Tuple[float, float, float]) -> Tuple[float, float, float]:
    """(P, Q, P − Q) of a bit through two channels (p = P(1 | 1), q = P(1 | 0) each):
    P = p∞ p₁ + (1 − p∞) q₁, Q = q∞ p₁ + (1 − q∞) q₁, P − Q = (p∞ − q∞)(p₁ − q₁)
    (RAPPOR, Erlingsson et al. 2014, §3, q* and p*)."""
    p, q, gap = perm
    p1, q1, gap1 = inst
    return p * p1 + (1 - p) * q1, q * p1 + (1 - q) * q1, gap * gap1


def averaging_attack(config: Any, reports: Any, prior: Any, *, memoised: bool) -> np.ndarray:
    """The server's best guess of each device's item from all its reports: what daily reports
    reveal (the attack of issue 22; docs/ldp.md, "Daily collection"). For OLH configurations.

    Parameters
    ----------
    config : Protocol
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
    from .. import _core

    if config.name != "olh":
        raise ValueError(f"config must be an 'olh' configuration, got {config.name!r}")
    d, g = config.domain_size, config.g
    log_prior = np.log(np.asarray(prior, dtype=np.float64))
    items = np.arange(d, dtype=np.int64)
    guesses = np.empty(len(reports), dtype=np.int64)
    if memoised:
        perm = local_pq(config.gamma, g)
        inst = local_pq(config.gamma1, g) if config.gamma1 is not None else None
    else:
        p, q, _ = config._pq()
        step = math.log(p) - math.log((1 - p) / (g - 1))  # a supporting report's log-likelihood ratio
    for i, r in enumerate(reports):
        seeds, values = np.ascontiguousarray(r.data["seeds"]), np.ascontiguousarray(r.data["values"])
        if not memoised:
            score = step * _core.ldp.olh_support(seeds, values, g, d, 1)
        else:
            # one seed (memoised); likelihood of the days given each permanent bucket b
            if inst is None:
                like = np.zeros(g)
                like[values[0]] = 1.0  # reports repeat the permanent bucket
            else:
                counts = np.bincount(values, minlength=g)
                like = np.exp(counts * math.log(inst[0]) + (values.size - counts) * math.log(inst[1]))
            h = _core.ldp.local_hash(np.repeat(seeds[:1], d, axis=0), items, g)
            # P(days | x) = p∞ L(h(x)) + q∞ (Σ L − L(h(x)))
            score = np.log(perm[0] * like[h] + perm[1] * (like.sum() - like[h]) + 1e-300)
        guesses[i] = int(np.argmax(log_prior + score))
    return guesses


def local_pq(gamma: Any, g: int) -> Tuple[float, float]:
    """(keep, each other) probabilities of g-ary randomized response at γ: e^γ/(e^γ + g − 1) and
    1/(e^γ + g − 1) (Kairouz, Oh & Viswanath 2016)."""
    e = math.exp(float(gamma))
    return e / (e + g - 1), 1.0 / (e + g - 1)


def alpha_point_round(values: Any, bounds: Tuple[float, float], points: int, device_key: Any) -> np.ndarray:
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
    from .._validate import integer

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
