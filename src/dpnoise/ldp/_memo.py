"""Memoised (daily) collection: device keys, the PRF and the permanent answers it draws.

The permanent randomisation at ε∞ (the configuration's ``epsilon``) of a device that reports
the same item again and again is memoised: it is drawn from a ChaCha20 stream keyed by a
pseudo-random function of (device key, item, configuration fingerprint), keyed BLAKE2b
(RFC 7693, §2.5: keyed mode, a PRF), so a device gives the same permanent answer every time and
stores nothing (RAPPOR, Erlingsson, Pihur & Korolova, CCS 2014, §3). The per-report layer over
it is the envelope's (dpnoise.ldp._protocol.Client); privacy is dpnoise.ldp._privacy.

Report fields that stay the same across a device's reports (OLH's hash seed, FLH's pool index)
come from a PUBLIC pool (2^10 entries by default), chosen by the PRF: they say which of a few
public values the device drew, never who it is.

Many rows at once go through the configuration's keyed-row C++ kernel where its selected
kernel row has one (``_memo_rows_kernel``; a constant-time row has none), else row by row
through its randomizer on each row's PRF stream (every row the same calls).
"""
from __future__ import annotations

import hashlib
import json
from typing import Any, Callable

import numpy as np

from .._validate import integer
from ..bit_generator import ChaCha20
from ..generator import Generator
from . import _wire

DEVICE_KEY_BYTES = 32
DEFAULT_POOL_SIZE = 1 << 10
MAX_POOL_SIZE = 1 << 24
# the BLAKE2b personalisation of the memoisation PRF (RFC 7693, §2.8: domain separation)
_MEMO_PERSON = b"dpnoise-memo-v1"
# parameters of the instantaneous layer: not part of the permanent answer's PRF input, so
# changing ε₁ does not draw a new permanent answer (which would spend ε∞ again)
_INSTANT_PARAMS = ("instantaneous_epsilon", "instantaneous_gamma")


def check_device_key(value: Any, name: str = "device_key") -> bytes:
    """The device key as 32 bytes: TypeError for anything but bytes/bytearray, ValueError for
    another length, each naming ``name`` (e.g. ``device_keys[3]``; the message never shows the
    key)."""
    if not isinstance(value, (bytes, bytearray)):
        raise TypeError(f"{name} must be 32 bytes (e.g. secrets.token_bytes(32)), got {type(value).__name__}")
    if len(value) != DEVICE_KEY_BYTES:
        raise ValueError(f"{name} must be exactly 32 bytes, got {len(value)}")
    return bytes(value)


def check_pool_size(value: Any, default: int, name: str = "pool_size") -> int:
    """The size of a public pool of constant report fields, in [1, 2^24]."""
    k = default if value is None else integer(value, name)
    if not 1 <= k <= MAX_POOL_SIZE:
        raise ValueError(f"{name} must be in [1, 2^24], got {k}")
    return k


def memo_fingerprint(config: Any) -> bytes:
    """The configuration as the PRF sees it: its family, name and every parameter of the
    permanent layer (the instantaneous layer's excluded), hashed to 32 bytes."""
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


def _memo_rows(config: Any, keys: np.ndarray, fingerprint: bytes, items: np.ndarray) -> list[dict[str, np.ndarray]]:
    """Row i's permanent answer, from key ``keys[i]`` (or ``keys[0]`` for a one-row key array) and
    ``items[i]``: the same calls for every row, whatever its item (the constant-time path), the
    item passed to the PRF as its 8 little-endian bytes."""
    raw = np.ascontiguousarray(items, dtype="<i8").view(np.uint8).reshape(-1, 8)
    k = keys.shape[0] > 1
    return [config._privatize_permanent(memo_generator(keys[i * k].tobytes(), fingerprint, raw[i].tobytes()),
                              items[i:i + 1], 1) for i in range(items.shape[0])]


def memoised_batch(config: Any, keys: np.ndarray, fingerprint: bytes, items: np.ndarray,
                   threads: int = 1) -> dict[str, np.ndarray]:
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
        return config._privatize_permanent(memo_generator(bytes(DEVICE_KEY_BYTES), fingerprint, 0), items, 1)
    return {name: np.concatenate([r[name] for r in rows]) for name in rows[0]}


def memoised_reports(config: Any, device_key: bytes, fingerprint: bytes, items: np.ndarray,
                     encode: Callable[[np.ndarray], np.ndarray] | None = None) -> dict[str, np.ndarray]:
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
    if encode is None and config.constant_time:
        # every item its own row (the same answer for a repeated item: the PRF is deterministic),
        # so that the work does not depend on how many items are distinct
        items = np.ascontiguousarray(items, dtype=np.int64)
        rows = _memo_rows(config, np.frombuffer(device_key, dtype=np.uint8).reshape(1, -1), fingerprint, items)
        if rows:
            return {name: np.concatenate([r[name] for r in rows]) for name in rows[0]}
    enc = (lambda x: x) if encode is None else encode
    distinct, inverse = np.unique(items, return_inverse=True)
    if distinct.size == 0:
        return config._privatize_permanent(memo_generator(device_key, fingerprint, 0), enc(items), 1)
    rows = [config._privatize_permanent(memo_generator(device_key, fingerprint, int(x)), enc(distinct[i:i + 1]), 1)
            for i, x in enumerate(distinct)]
    return {name: np.concatenate([r[name] for r in rows])[inverse] for name in rows[0]}
