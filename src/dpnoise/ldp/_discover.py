"""Registration by presence: importing every public module of a package registers the
configurations its modules define (their classes register themselves through
``Configuration.__init_subclass__``)."""
from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable


def import_public_modules(package: str, path: Iterable[str]) -> None:
    """Import ``package``'s modules and subpackages whose names do not start with ``_``, in
    sorted order (so that registration order, and hence iteration over a registry, is stable)."""
    for info in sorted(pkgutil.iter_modules(list(path)), key=lambda m: m.name):
        if not info.name.startswith("_"):
            importlib.import_module(f"{package}.{info.name}")
