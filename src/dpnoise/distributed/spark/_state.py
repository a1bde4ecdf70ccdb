"""The state directory of :func:`aggregate_stream`: one file holding every merged aggregator
state, the last committed micro-batch id and the stream's configuration, replaced atomically.

Layout of ``<state>/stream-state.dpnoise``::

    MAGIC (16 bytes) | header length (8 bytes, little-endian) | header (UTF-8 JSON)
    | the aggregator states, one after another (``Aggregator.to_bytes``, each with its own
      SHA-256) | SHA-256 of everything before it (32 bytes)

The header holds the format version, the configuration (the oracle's JSON, the report column,
the key column and its Spark type), the streaming query's id, the last committed batch id, the
rows with a null key, and one entry per key: its value, rows, malformed rows and state length.

A commit writes a new file beside the old one (``.tmp-*``), flushes and fsyncs it, renames it
over the old one (``os.replace``: atomic on POSIX) and fsyncs the directory, so that a reader
(or a restarted driver) sees the whole old file or the whole new one, never a mix, and a
machine crash after the commit keeps it. Writers take an exclusive ``flock`` on
``<state>/.lock`` for the read-merge-write; readers need no lock. A file that fails any check
(magic, lengths, checksum, header, an aggregator state) is refused with ValueError and never
written to; no message shows a state's or a key's contents."""
from __future__ import annotations

import contextlib
import datetime
import fcntl
import hashlib
import json
import os
import struct
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

STATE_FILE = "stream-state.dpnoise"
LOCK_FILE = ".lock"
MAGIC = b"dpnoise-stream\x00\x01"  # the last byte is the format version
_HEADER_LIMIT = 1 << 30


@dataclass
class Entry:
    """One key's merged aggregator state (its ``to_bytes``), rows seen, malformed rows."""

    blob: bytes
    rows: int
    malformed: int


@dataclass
class StreamFile:
    """The decoded state file. ``config`` is what a stream must match; ``entries`` maps the
    key's JSON value (None without a key) to its :class:`Entry`."""

    config: dict[str, Any]
    query_id: str | None = None
    batch_id: int = -1
    unkeyed: int = 0
    entries: dict[Any, Entry] = field(default_factory=dict)


def state_path(directory: str) -> str:
    return os.path.join(directory, STATE_FILE)


# -- key values <-> JSON ------------------------------------------------------------------------
#: Spark key types a stream accepts, by ``simpleString``: integers, strings, dates
KEY_TYPES = ("tinyint", "smallint", "int", "bigint", "string", "date")


def key_to_json(value: Any, key_type: str | None) -> Any:
    if key_type == "date":
        return value.isoformat()
    if key_type == "string":
        return str(value)
    return int(value)


def key_from_json(value: Any, key_type: str | None) -> Any:
    if key_type == "date":
        return datetime.date.fromisoformat(value)
    return value


# -- encoding ---------------------------------------------------------------------------------------
def encode(state: StreamFile) -> bytes:
    entries, blobs = [], []
    for key, e in state.entries.items():
        entries.append({"key": key, "rows": int(e.rows), "malformed": int(e.malformed), "bytes": len(e.blob)})
        blobs.append(e.blob)
    header = json.dumps({"format": 1, "config": state.config, "query_id": state.query_id,
                         "batch_id": int(state.batch_id), "unkeyed": int(state.unkeyed), "entries": entries},
                        sort_keys=True, separators=(",", ":")).encode()
    body = b"".join([MAGIC, struct.pack("<Q", len(header)), header, *blobs])
    return body + hashlib.sha256(body).digest()


class CorruptState(ValueError):
    """A state file that fails a check (never read further, never written to)."""


def decode(blob: bytes, path: str) -> StreamFile:
    """The state in ``blob`` (read from ``path``); CorruptState saying what is wrong, never
    what the file holds."""
    def bad(why: str) -> CorruptState:
        return CorruptState(f"the stream state file {path} is corrupt or truncated ({why}); it was left as it "
                            "is: restore it from a copy, or start a new state directory with a new checkpoint")

    fixed = len(MAGIC) + 8
    if len(blob) < fixed + 32:
        raise bad(f"{len(blob)} bytes, shorter than any state file")
    if blob[:len(MAGIC) - 1] != MAGIC[:-1]:
        raise bad("not a dpnoise stream state file")
    if blob[len(MAGIC) - 1] != MAGIC[-1]:
        raise bad(f"format version {blob[len(MAGIC) - 1]}, this dpnoise reads {MAGIC[-1]}")
    if hashlib.sha256(blob[:-32]).digest() != blob[-32:]:
        raise bad("checksum mismatch")
    (n,) = struct.unpack("<Q", blob[len(MAGIC):fixed])
    if n > min(_HEADER_LIMIT, len(blob) - fixed - 32):
        raise bad("header length out of range")
    try:
        header = json.loads(blob[fixed:fixed + n].decode())
        config = header["config"]
        entries = header["entries"]
        state = StreamFile(config=config, query_id=header["query_id"], batch_id=int(header["batch_id"]),
                           unkeyed=int(header["unkeyed"]))
        if not isinstance(config, dict) or not isinstance(entries, list) or header.get("format") != 1:
            raise ValueError
        if state.query_id is not None and not isinstance(state.query_id, str):
            raise ValueError
        offset = fixed + n
        for e in entries:
            size = int(e["bytes"])
            if size < 0 or offset + size > len(blob) - 32:
                raise ValueError
            key = e["key"]
            if key in state.entries or not (key is None or isinstance(key, (str, int))):
                raise ValueError
            state.entries[key] = Entry(bytes(blob[offset:offset + size]), int(e["rows"]), int(e["malformed"]))
            offset += size
        if offset != len(blob) - 32:
            raise ValueError
    except (ValueError, KeyError, TypeError, UnicodeDecodeError, AttributeError):
        raise bad("unreadable header") from None
    return state


def read(directory: str) -> StreamFile | None:
    """The state of ``directory``, or None when it holds no state file."""
    path = state_path(directory)
    try:
        with open(path, "rb") as fh:  # the file renamed over it later is another inode: never torn
            blob = fh.read()
    except FileNotFoundError:
        return None
    return decode(blob, path)


def write(directory: str, state: StreamFile) -> None:
    """Replace the state file atomically: write a temporary file in the same directory, flush
    and fsync it, rename it over the state file, fsync the directory."""
    blob = encode(state)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(blob)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, state_path(directory))
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def remove_stale_temporaries(directory: str) -> None:
    """Temporary files left by a writer that died before its rename (call under the lock)."""
    for name in os.listdir(directory):
        if name.startswith(".tmp-"):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(directory, name))


@contextlib.contextmanager
def locked(directory: str) -> Iterator[None]:
    """An exclusive ``flock`` on ``<directory>/.lock`` (released when the process dies, too)."""
    fd = os.open(os.path.join(directory, LOCK_FILE), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


# -- the configuration a state directory is written for -------------------------------------------
def describe(config: dict[str, Any]) -> str:
    """One line naming a configuration: the oracle, the column and the key."""
    from ...ldp import Configuration

    try:
        oracle = repr(Configuration.from_json(config.get("oracle")))
    except (ValueError, TypeError):
        oracle = "a configuration this version cannot rebuild"
    key = config.get("key")
    return (f"{oracle}, column {config.get('column')!r}, "
            + (f"key {key!r} ({config.get('key_type')})" if key is not None else "no key"))


def check_config(found: dict[str, Any], wanted: dict[str, Any], directory: str) -> None:
    if found != wanted:
        raise ValueError(f"the state directory {directory} was written for another configuration "
                         f"({describe(found)}) than this stream ({describe(wanted)}); it was left as it is: "
                         "use another state directory (and checkpoint) for this stream")


def check_oracle(found: dict[str, Any], oracle: Any, directory: str) -> None:
    from ._arrow import config_json

    if found.get("oracle") != config_json(oracle):
        raise ValueError(f"the state directory {directory} holds the states of another configuration "
                         f"({describe(found)}) than the oracle ({oracle!r})")


def load_entries(state: StreamFile, oracle: Any, directory: str) -> list[tuple[Any, Any, Entry]]:
    """(key JSON value, aggregator, entry) for every entry, each state loaded with
    ``from_bytes`` (checked) and required to be ``oracle``'s."""
    cls = type(oracle.aggregator())
    out = []
    for key, e in state.entries.items():
        try:
            agg = cls.from_bytes(e.blob)
        except ValueError:
            raise CorruptState(f"the stream state file {state_path(directory)} holds an aggregator state that does "
                               "not load (corrupt, or of another configuration); it was left as it is") from None
        if agg.protocol != oracle:
            raise CorruptState(f"the stream state file {state_path(directory)} holds an aggregator state of another "
                               "configuration; it was left as it is")
        out.append((key, agg, e))
    return out
