"""Docstring sections that many mechanisms and selection classes share, written once.

A docstring holds a marker line (``{release_parameters}``, ``{construction_errors}``) where the section goes, and the
class or function is decorated with :func:`shared_docs`, which puts the section in (as numpy
and matplotlib interpolate their shared docstring parts)."""
from __future__ import annotations

from typing import Any, TypeVar

T = TypeVar("T")

SECTIONS = {
    "{release_parameters}": """rng : dpnoise.Generator, optional
        A secure generator (default ``dpnoise.default_rng()``).
    budget : dpnoise.accounting.PrivacyBudget, optional
        Charged once per release, before any noise is drawn.
    threads : int, optional
        Threads for the kernel (default: every CPU the process may use; the output does not depend on it).
    allow_insecure : bool, default False
        Accept a seeded generator (tests only).""",
    "{construction_errors}": """Raises
    ------
    TypeError
        For arguments of the wrong type.
    ValueError
        For out-of-range parameters (named in the message).
    dpnoise.InsecureGeneratorError
        For a seeded generator without ``allow_insecure=True``.""",
}


def shared_docs(obj: T) -> T:
    """Replace every shared-section marker in ``obj.__doc__`` by its section."""
    doc: Any = obj.__doc__
    if doc:
        for marker, text in SECTIONS.items():
            doc = doc.replace(marker, text)
        obj.__doc__ = doc
    return obj
