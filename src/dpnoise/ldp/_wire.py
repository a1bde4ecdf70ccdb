"""The bytes of every LDP blob (report batches and aggregator states): framing, checksums and
format versions, nothing else.

A blob is ``magic || u32le(len(header)) || header (JSON) || arrays || SHA-256(all before)``. The
header names the configuration (its family key, e.g. ``"protocol"`` or ``"method"``, and its
parameters), the number of reports and each array's name, dtype and shape. The magic says which
family and what kind of blob it is; format 1 is the only one so far (written by 0.4.0 and since).
"""
from __future__ import annotations

import hashlib
import json
import math
import struct
from fractions import Fraction
from typing import Any

import numpy as np

FORMAT = 1
#: the most reports one aggregator or batch may count: sums of int64 counters stay far from overflow
MAX_REPORTS = 1 << 62

#: magics of the blobs 0.4.0 wrote; every reader still takes them
FREQUENCY_STATE = b"DPNOISE-LDP\x00"
FREQUENCY_REPORTS = b"DPNOISE-LDPR"
HEAVY_HITTERS_STATE = b"DPNOISE-HHA\x00"
HEAVY_HITTERS_REPORTS = b"DPNOISE-HHR\x00"


def jsonable(params: dict[str, Any]) -> dict[str, Any]:
    """Parameters as JSON values: a Fraction as ``{"fraction": [num, den]}``, bytes as
    ``{"hex": ...}``, everything else as it is."""
    out: dict[str, Any] = {}
    for k, v in params.items():
        if isinstance(v, Fraction):
            out[k] = {"fraction": [v.numerator, v.denominator]}
        elif isinstance(v, (bytes, bytearray)):
            out[k] = {"hex": bytes(v).hex()}
        else:
            out[k] = v
    return out


def from_jsonable(params: dict[str, Any]) -> dict[str, Any]:
    """The inverse of :func:`jsonable`."""
    out: dict[str, Any] = {}
    for k, v in params.items():
        if isinstance(v, dict) and set(v) == {"fraction"}:
            out[k] = Fraction(int(v["fraction"][0]), int(v["fraction"][1]))
        elif isinstance(v, dict) and set(v) == {"hex"}:
            out[k] = bytes.fromhex(v["hex"])
        else:
            out[k] = v
    return out


def frame(magic: bytes, header: dict[str, Any], arrays: list[tuple[str, np.ndarray]]) -> bytes:
    """magic, a little-endian u32 header length, a JSON header (with the arrays' names, dtypes
    and shapes), the arrays' bytes, and a SHA-256 of everything before it."""
    arrays = [(k, np.ascontiguousarray(v)) for k, v in arrays]
    head = json.dumps({**header, "format": FORMAT,
                       "arrays": [[k, v.dtype.str, list(v.shape)] for k, v in arrays]}, sort_keys=True).encode()
    body = magic + struct.pack("<I", len(head)) + head + b"".join(v.tobytes() for _, v in arrays)
    return body + hashlib.sha256(body).digest()


def magic_of(blob: Any, magics: tuple[bytes, ...]) -> bytes:
    """Which of ``magics`` ``blob`` starts with (ValueError if none; TypeError for non-bytes)."""
    if not isinstance(blob, (bytes, bytearray, memoryview)):
        raise TypeError(f"blob must be bytes, got {type(blob).__name__}")
    head = bytes(blob[:12])
    for m in magics:
        if head.startswith(m):
            return m
    raise ValueError("not a serialised dpnoise LDP blob of this kind (bad magic)")


def unframe(blob: Any, magic: bytes, what: str) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The header and arrays of a :func:`frame` blob; ValueError naming ``what`` for anything
    corrupt or truncated, TypeError for a non-bytes argument. Only plain numeric dtypes are
    accepted (never object arrays), and every array must fit the blob exactly."""
    if not isinstance(blob, (bytes, bytearray, memoryview)):
        raise TypeError(f"{what} must be bytes, got {type(blob).__name__}")
    blob = bytes(blob)
    if len(blob) < len(magic) + 4 + 32 or not blob.startswith(magic):
        raise ValueError(f"not a serialised dpnoise {what} (bad magic or too short)")
    body, digest = blob[:-32], blob[-32:]
    if hashlib.sha256(body).digest() != digest:
        raise ValueError(f"corrupt {what}: checksum mismatch")
    (hlen,) = struct.unpack_from("<I", body, len(magic))
    start = len(magic) + 4
    if start + hlen > len(body):
        raise ValueError(f"corrupt {what}: truncated header")
    try:
        header = json.loads(body[start:start + hlen].decode())
        if header["format"] != FORMAT:
            raise ValueError(f"{what} format {header['format']!r} is not supported (this is {FORMAT})")
        specs = [(str(name), np.dtype(dtype), tuple(_dimension(x) for x in shape))
                 for name, dtype, shape in header["arrays"]]
    except (KeyError, TypeError, ValueError, IndexError, RecursionError, UnicodeDecodeError) as exc:
        raise ValueError(f"corrupt {what}: bad header ({type(exc).__name__})") from None
    pos = start + hlen
    arrays: dict[str, np.ndarray] = {}
    for name, dtype, shape in specs:
        if dtype.kind not in "biuf" or dtype.hasobject or any(x < 0 for x in shape) or name in arrays:
            raise ValueError(f"corrupt {what}: array {name!r} has an unsupported dtype or shape")
        count = math.prod(shape)  # Python ints: a forged shape cannot overflow
        size = count * dtype.itemsize
        if pos + size > len(body):
            raise ValueError(f"corrupt {what}: truncated arrays")
        arrays[name] = np.frombuffer(body, dtype=dtype, count=count, offset=pos).reshape(shape).copy()
        pos += size
    if pos != len(body):
        raise ValueError(f"corrupt {what}: trailing bytes after the arrays")
    return header, arrays


def _dimension(x: Any) -> int:
    if not isinstance(x, int) or isinstance(x, bool) or x < 0:
        raise ValueError("array dimensions must be non-negative integers")
    return x


def count_of(header: dict[str, Any], what: str, limit: int) -> int:
    """The header's number of reports ``n``, an int in [0, limit] (ValueError otherwise)."""
    n = header.get("n")
    if not isinstance(n, int) or isinstance(n, bool) or not 0 <= n <= limit:
        raise ValueError(f"corrupt {what}: bad number of reports")
    return n
