"""Docstring sections that many mechanisms and selection classes share, written once.

A docstring holds a marker line (``{release_parameters}``, ``{constant_time}``,
``{construction_errors}``) where the section goes, and the
class or function is decorated with :func:`shared_docs`, which puts the section in (as numpy
and matplotlib interpolate their shared docstring parts)."""
from __future__ import annotations

from typing import Any, Callable, Protocol, TypeVar

T = TypeVar("T")


class _Named(Protocol):
    """What docs_from_template decorates: a function or class (it has a name)."""

    __name__: str


N = TypeVar("N", bound=_Named)

SECTIONS = {
    "{release_parameters}": """rng : dpnoise.Generator, optional
        A secure generator (default ``dpnoise.default_rng()``).
    budget : dpnoise.accounting.PrivacyBudget, optional
        Charged once per release, before any noise is drawn.
    threads : int, optional
        Threads for the kernel (default None: every CPU the process may use, or os.cpu_count()
        where the affinity mask cannot be read; the output does not depend on it). Note that
        ``Generator`` methods default to one thread instead.
    allow_insecure : bool, default False
        Accept a seeded generator (tests only).""",
    "{constant_time}": """constant_time : bool, default False
        Constant-time noise (docs/security.md): running time, random bits and memory accesses
        independent of the input's values, the noise and the random bits. Each release is then
        (ε, δ + (1 + e^ε)·d·2^-64)-DP for d noise values (charged as ``ApproxDP``); the noise
        parameter must be at most 2^20 grid units (ValueError naming the range otherwise), and
        a scalar release is a NumPy scalar.""",
    "{construction_errors}": """Raises
    ------
    TypeError
        For arguments of the wrong type.
    ValueError
        For out-of-range parameters (named in the message).
    dpnoise.InsecureGeneratorError
        For a seeded generator without ``allow_insecure=True``.""",
    "{epsilon_parameter}": """epsilon : float
        ε in (0, 100].""",
}
# More markers: ``{epsilon_parameter}``, and ``{release_sections}`` (the end of a release class's
# Parameters and its Raises section: ``{release_parameters}`` and ``{construction_errors}`` in one).
SECTIONS["{release_sections}"] = SECTIONS["{release_parameters}"] + "\n\n    " + SECTIONS["{construction_errors}"]


def shared_docs(obj: T) -> T:
    """Replace every shared-section marker in ``obj.__doc__`` by its section."""
    doc: Any = obj.__doc__
    if doc:
        for marker, text in SECTIONS.items():
            doc = doc.replace(marker, text)
        obj.__doc__ = doc
    return obj


def docs_from_template(template: str, **fields: str) -> Callable[[N], N]:
    """Decorator: append ``template`` (the numpydoc sections a family of functions shares) to
    the object's docstring, with ``{name}`` (the object's name) and ``fields`` filled in: the
    sections of functions that differ in a few words are written once (as pandas' ``@doc``)."""
    def deco(obj: N) -> N:
        doc: Any = obj.__doc__
        section = template.format(name=obj.__name__, **fields)
        obj.__doc__ = (doc or "").rstrip() + "\n" + section
        return shared_docs(obj)
    return deco
