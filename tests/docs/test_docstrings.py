"""numpydoc sections on every public definition of dpnoise, as numpy has them (issue 20, item 7).

What is checked (run this file with ``-s`` or read the failure message for the offender list,
one ``module.qualname: missing ...`` line per definition):

* every public module (no path component starting with ``_``) imports and has a docstring;
* every public function and class reachable from a public module, including those re-exported
  from private modules by a public ``__init__``, and every public method, classmethod,
  staticmethod and property defined on a public class (dunders and ``_private`` names are
  skipped; a member a class only inherits is checked once, on the class that defines it, and
  so is a class attribute bound to a function defined elsewhere; a lambda cannot hold a
  docstring and is left to the base member it overrides):

  - has a docstring of its own (a property needs nothing more: one paragraph is enough);
  - has a ``Parameters`` section when it takes parameters other than ``self``/``cls``;
  - has a ``Returns`` (or ``Yields``) section when it returns something: its return annotation
    is not ``None`` (without an annotation: a ``return <value>`` or ``yield`` in its body);
  - has a ``Raises`` section when its own body holds a ``raise`` statement (best effort: a
    bare re-raise does not count, nor a ``raise`` inside a nested function);
  - an override may leave a section to the documented base method it overrides (with the same
    parameter names), as Sphinx and ``inspect.getdoc`` inherit it; its own docstring still says
    what this override does.

* a class takes its constructor's sections: ``Parameters`` when ``__init__`` (or a dataclass's
  generated one) takes arguments (a dataclass may list its fields under ``Attributes``
  instead, as result records do; a class whose ``__init__`` takes the same parameters as its
  base's may leave them to the base class's docstring), ``Raises`` when ``__init__``'s body
  raises.

A second test runs every ``>>>`` example in those docstrings with doctest.
"""
from __future__ import annotations

import ast
import dataclasses
import doctest
import importlib
import inspect
import pkgutil
import re
import textwrap
from types import ModuleType

import numpy as np
import pytest

import dpnoise

SECTION = re.compile(r"^\s*(Parameters|Returns|Yields|Raises|Examples|Other Parameters|See Also|Notes"
                     r"|Attributes|Methods|Warns|References)\s*\n\s*-{3,}\s*$", re.M)


def sections(doc: str | None) -> set:
    """Names of the numpydoc sections (a title underlined with dashes) in ``doc``."""
    return set(SECTION.findall(doc or ""))


def _public(name: str) -> bool:
    return not name.startswith("_")


def public_modules() -> list:
    """Every importable public module of dpnoise: (name, module or the import error)."""
    found = [("dpnoise", dpnoise)]
    for info in pkgutil.walk_packages(dpnoise.__path__, "dpnoise."):
        if not all(_public(part) for part in info.name.split(".")[1:]):
            continue
        try:
            found.append((info.name, importlib.import_module(info.name)))
        except ImportError as exc:  # an optional extra missing: reported, never skipped silently
            found.append((info.name, exc))
    return found


def _ours(obj) -> bool:
    module = getattr(obj, "__module__", None) or ""
    return (module == "dpnoise" or module.startswith("dpnoise.")) and module != "dpnoise._core"


def _defined_in(obj, module: ModuleType) -> bool:
    """Defined in ``module`` or, for a package without ``__all__``, in one of its submodules (a
    name a module merely imports from elsewhere is checked where it is defined)."""
    home = getattr(obj, "__module__", None) or ""
    return home == module.__name__ or (hasattr(module, "__path__") and home.startswith(module.__name__ + "."))


def public_definitions():
    """(qualified name, kind, object, owner class or None) of every definition to check, once."""
    seen: set = set()
    out = []
    for _, module in public_modules():
        if not isinstance(module, ModuleType):
            continue
        names = getattr(module, "__all__", None) or [n for n in vars(module) if _public(n) and _defined_in(
            getattr(module, n), module)]
        for name in names:
            obj = getattr(module, name, None)
            if not (inspect.isfunction(obj) or inspect.isclass(obj)) or not _ours(obj):
                continue
            if not _public(obj.__name__) and not _public(name):
                continue
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            out.append((f"{obj.__module__}.{obj.__qualname__}", "class" if inspect.isclass(obj) else
                        "function", obj, None))
            if inspect.isclass(obj):
                for member, raw in vars(obj).items():
                    if not _public(member):
                        continue
                    if isinstance(raw, property):
                        kind, func = "property", raw.fget
                    elif isinstance(raw, (staticmethod, classmethod)):
                        kind, func = "method", raw.__func__
                    elif inspect.isfunction(raw):
                        kind, func = "method", raw
                    else:
                        continue
                    if not func.__qualname__.startswith(obj.__qualname__ + ".") or func.__name__ == "<lambda>":
                        continue  # an alias of a function defined elsewhere (checked there) or a lambda
                    out.append((f"{obj.__module__}.{obj.__qualname__}.{member}", kind, func, obj))
    return out


def _own_body(func) -> ast.AST | None:
    try:
        source = textwrap.dedent(inspect.getsource(func))
    except (OSError, TypeError):
        return None
    tree = ast.parse(source)
    return tree.body[0] if tree.body and isinstance(tree.body[0], (ast.FunctionDef, ast.AsyncFunctionDef)) else None


def _walk_own(node):
    """The nodes of a function body, not descending into nested functions, lambdas or classes."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        yield child
        yield from _walk_own(child)


def _raises(func) -> bool:
    body = _own_body(func)
    return body is not None and any(isinstance(n, ast.Raise) and n.exc is not None for n in _walk_own(body))


def _returns(func) -> str | None:
    """'Returns' or 'Yields' when the function gives something back, else None."""
    body = _own_body(func)
    own = list(_walk_own(body)) if body is not None else []
    if any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in own):
        return "Yields"
    annotation = body.returns if body is not None else None
    if annotation is not None:
        text = ast.unparse(annotation)
        return None if text in ("None", "'None'", "NoReturn", "Never") else "Returns"
    if any(isinstance(n, ast.Return) and n.value is not None and not (
            isinstance(n.value, ast.Constant) and n.value.value is None) for n in own):
        return "Returns"
    return None


def _takes_parameters(func, skip_first: bool) -> bool:
    try:
        params = list(inspect.signature(func).parameters)
    except (TypeError, ValueError):
        return False
    if skip_first and params:
        params = params[1:]
    return bool(params)


def _base_doc(owner, name: str, func) -> str:
    """The docstrings of the base-class methods ``name`` up the MRO, as long as they take the
    same parameters (a section written once on the root definition serves every override)."""
    try:
        params = list(inspect.signature(func).parameters)
    except (TypeError, ValueError):
        return ""
    docs = []
    for base in owner.__mro__[1:]:
        raw = vars(base).get(name)
        if raw is None:
            continue
        base_func = raw.fget if isinstance(raw, property) else getattr(raw, "__func__", raw)
        try:
            same = list(inspect.signature(base_func).parameters) == params
        except (TypeError, ValueError):
            same = False
        if not same:
            break
        docs.append(base_func.__doc__ or "")
    return "\n".join(docs)


def _base_class_doc(cls, init) -> str:
    """The docstring of the nearest base class whose own ``__init__`` takes the same parameters."""
    params = list(inspect.signature(init).parameters)
    for base in cls.__mro__[1:]:
        base_init = vars(base).get("__init__")
        if inspect.isfunction(base_init):
            return (vars(base).get("__doc__") or "") if list(inspect.signature(base_init).parameters) == params else ""
    return ""


def _is_method(func, owner) -> bool:
    raw = vars(owner).get(func.__name__) if owner is not None else None
    return owner is not None and not isinstance(raw, staticmethod)


def missing_sections(qualname: str, kind: str, obj, owner) -> list:
    """What the docstring of one definition lacks (empty when it is complete)."""
    doc = obj.__doc__ if kind != "class" else vars(obj).get("__doc__")
    if kind == "class" and dataclasses.is_dataclass(obj) and (doc or "").startswith(obj.__name__ + "("):
        doc = None  # the signature @dataclass writes when the class has no docstring
    if not doc or not doc.strip():  # and, so that one pass shows all the work, its sections
        return ["docstring"] + ([] if kind == "property" else _sections_missing(qualname, kind, obj, owner, ""))
    return [] if kind == "property" else _sections_missing(qualname, kind, obj, owner, doc)


def _sections_missing(qualname: str, kind: str, obj, owner, doc: str) -> list:
    have = sections(doc)
    if kind == "class":
        need = []
        init = vars(obj).get("__init__")
        if init is None and dataclasses.is_dataclass(obj):
            init = obj.__init__
        init = init if inspect.isfunction(init) else None
        fields = {"Parameters", "Attributes"} if dataclasses.is_dataclass(obj) else {"Parameters"}
        if init is not None and _takes_parameters(init, True) \
                and not (have | sections(_base_class_doc(obj, init))) & fields:
            need.append("Parameters")
        if init is not None and _raises(init) and "Raises" not in have and "Raises" not in sections(init.__doc__):
            need.append("Raises")
        return need
    if owner is not None:
        have |= sections(_base_doc(owner, qualname.rsplit(".", 1)[1], obj))
    need = []
    if _takes_parameters(obj, _is_method(obj, owner)) and "Parameters" not in have:
        need.append("Parameters")
    gives = _returns(obj)
    if gives and not have & {"Returns", "Yields"}:
        need.append(gives)
    if _raises(obj) and "Raises" not in have:
        need.append("Raises")
    return need


def _optional_missing(exc: ImportError) -> bool:
    """An optional extra (pyarrow, pyspark, ...) is not installed: not dpnoise's own failure."""
    missing = getattr(exc, "name", None) or ""
    return bool(missing) and missing != "dpnoise" and not missing.startswith("dpnoise.")


def offenders() -> list:
    """Every ``module.qualname: missing ...`` line, sorted (modules that need a missing optional
    extra are left to :func:`test_every_public_module_was_checked`)."""
    lines = []
    for name, module in public_modules():
        if not isinstance(module, ModuleType):
            if not _optional_missing(module):
                lines.append(f"{name}: cannot import ({module})")
        elif not (module.__doc__ or "").strip():
            lines.append(f"{name}: missing module docstring")
    for qualname, kind, obj, owner in public_definitions():
        need = missing_sections(qualname, kind, obj, owner)
        if need:
            lines.append(f"{qualname}: missing {', '.join(need)}")
    return sorted(lines)


def test_every_public_definition_has_numpydoc_sections():
    found = offenders()
    report = "\n".join(found)
    print(f"{len(found)} definitions lack numpydoc sections:\n{report}" if found else "no offenders")
    assert not found, f"{len(found)} public definitions lack numpydoc sections:\n{report}"


def test_every_public_module_was_checked():
    unchecked = [f"{name} ({module})" for name, module in public_modules()
                 if not isinstance(module, ModuleType) and _optional_missing(module)]
    if unchecked:
        pytest.skip("not checked, an optional extra is missing: " + "; ".join(unchecked))


def test_the_checker_finds_what_is_missing():
    """The checker itself: it must flag each kind of gap (so the test above can fail)."""
    def bare(x):
        if x:
            raise ValueError("x")
        return x

    def complete(x) -> int:
        """Do it.

        Parameters
        ----------
        x : int
            Input.

        Returns
        -------
        int
            Output.

        Raises
        ------
        ValueError
            Never really.
        """
        if x:
            raise ValueError("x")
        return x

    def half(x) -> int:
        """Only a summary."""
        raise ValueError(str(x))

    def generator(n):
        """Count.

        Parameters
        ----------
        n : int
            How far.
        """
        yield from range(n)

    assert missing_sections("bare", "function", bare, None) == ["docstring", "Parameters", "Returns", "Raises"]
    assert missing_sections("complete", "function", complete, None) == []
    assert missing_sections("half", "function", half, None) == ["Parameters", "Returns", "Raises"]
    assert missing_sections("generator", "function", generator, None) == ["Yields"]

    class Base:
        """A base.

        Parameters
        ----------
        a : int
            A.
        """

        def __init__(self, a):
            self.a = a

        def scaled(self, x) -> int:
            """Scale.

            Parameters
            ----------
            x : int
                Factor.

            Returns
            -------
            int
                a × x.
            """
            return self.a * x

    class Same(Base):
        """Inherits the constructor's and the method's sections."""

        def __init__(self, a):
            super().__init__(a)

        def scaled(self, x) -> int:
            """Twice the base's."""
            return 2 * super().scaled(x)

    class Other(Base):
        """Takes another argument, undocumented."""

        def __init__(self, a, b):
            if b is None:
                raise ValueError("b")
            super().__init__(a + b)

        def scaled(self, y) -> int:
            """Renamed parameter: the base's sections no longer apply."""
            return y

    assert missing_sections("Same", "class", Same, None) == []
    assert missing_sections("Same.scaled", "method", Same.scaled, Same) == []
    assert missing_sections("Other", "class", Other, None) == ["Parameters", "Raises"]
    assert missing_sections("Other.scaled", "method", Other.scaled, Other) == ["Parameters", "Returns"]


def _examples():
    for qualname, kind, obj, _ in public_definitions():
        doc = obj.__doc__ if kind != "class" else vars(obj).get("__doc__")
        if doc and ">>>" in doc:
            yield pytest.param(qualname, doc, obj.__module__, id=qualname)


@pytest.mark.parametrize(("qualname", "doc", "module"), list(_examples()))
def test_docstring_examples_run(qualname, doc, module):
    """Each example runs in its module's namespace (as doctest does), with dpnoise and np."""
    parser = doctest.DocTestParser()
    globs = {**vars(importlib.import_module(module)), "dpnoise": dpnoise, "np": np}
    test = parser.get_doctest(doc, globs, qualname, None, 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    out: list = []
    runner.run(test, out=out.append)
    assert runner.failures == 0, "".join(out)
