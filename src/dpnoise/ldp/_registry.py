"""The registry of LDP configuration families: which family a blob's magic or a JSON names.
(Each family's own protocols are registered on its base class, ``Configuration.registered()``.)"""
from __future__ import annotations

import json
from typing import Any

from . import _wire

FAMILIES: dict[str, type[Any]] = {}


def family_of_magic(blob: Any, attr: str) -> type[Any]:
    """The family whose ``attr`` magic (``_state_magic`` or ``_reports_magic``) starts ``blob``."""
    magic = _wire.magic_of(blob, tuple(getattr(f, attr) for f in FAMILIES.values()))
    return next(f for f in FAMILIES.values() if getattr(f, attr) == magic)


def is_configuration(obj: Any) -> bool:
    """Whether ``obj`` is a configuration of a registered family."""
    return isinstance(obj, tuple(FAMILIES.values()))


def configuration_of(family: str, name: str, params: dict[str, Any]) -> Any:
    """The configuration ``family``/``name`` with exactly ``params`` (ValueError otherwise)."""
    try:
        cls = FAMILIES[family].registered()[name]
    except KeyError:
        raise ValueError(f"unknown configuration {family!r}/{name!r}") from None
    return cls.from_params(params)


def from_json(text: Any) -> Any:
    """The configuration ``Configuration.to_json`` wrote (see there)."""
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8", "replace")
    if not isinstance(text, str):
        raise TypeError(f"text must be str, got {type(text).__name__}")
    try:
        doc = json.loads(text)
        fam = FAMILIES[doc["family"]]
    except (ValueError, KeyError, TypeError, RecursionError) as exc:
        raise ValueError(f"not a dpnoise LDP configuration ({type(exc).__name__})") from None
    return fam._from_header({fam._header_key: doc.get("name"), "params": doc.get("params")}, "configuration")
