"""The documentation site and the README front page (issue 36, items 3 and 4).

* Every name in the ``__all__`` of every public module listed in the issue has an entry in the
  API reference (docs/api/*.rst): an autodoc directive (``.. autoclass:: dpnoise.ldp.Reports``),
  a ``py:`` directive (a re-export pointing at its documented home, or a constant), or, for a
  module, its ``automodule``. A name added to an ``__all__`` without an entry fails here, and so
  does an entry whose name no longer exists. The build itself (``.ci/docs``: sphinx-build -W)
  checks that every entry renders.
* README.md is a front page: at most 200 lines, the two commands exactly as they were, how to
  build the docs and a wheel, and links that resolve.
* docs/conf.py's plain-text escaping and its list of suppressed warnings do what they say.

Nothing here is statistical.
"""
from __future__ import annotations

import importlib
import importlib.util
import inspect
import io
import re
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
API = DOCS / "api"
README = ROOT / "README.md"
MODULES = ("dpnoise", "dpnoise.ldp", "dpnoise.accounting", "dpnoise.audit", "dpnoise.mechanisms",
           "dpnoise.selection", "dpnoise.integrations", "dpnoise.distributed.spark")
DIRECTIVE = re.compile(r"^\.\. (auto\w+|py:\w+):: +([\w.]+)[ \t]*\n((?:[ \t]+:.*\n)*)", re.M)
ALIAS = re.compile(r"the same (?:class|function) as :(?:class|func):`([\w.]+)`")
# pages whose ```python blocks are fragments shown, not run, from before the site (issue 36); a
# new page with Python code joins tests/docs/test_readme.py's pages or marks complete examples
FRAGMENT_PAGES = {"accounting.md", "auditing.md", "bench.md", "heavy_hitters.md", "integrations.md", "ldp.md",
                  "ldp_hadamard.md", "ldp_hashing.md", "ldp_numeric.md", "ldp_unary.md", "ldp_zmatrix.md",
                  "mechanisms.md", "ml.md", "reproducibility.md", "scaling.md", "security.md", "selection.md",
                  "sparse_vector.md", "samplers.md", "cpp.md", "cython.md"}

pytestmark = pytest.mark.skipif(not DOCS.is_dir(), reason="needs the source tree (docs/)")


def member(module: types.ModuleType, name: str):
    """``module.name``; a submodule named in ``__all__`` is imported, as ``import *`` would."""
    try:
        return getattr(module, name)
    except AttributeError:
        return importlib.import_module(f"{module.__name__}.{name}")


def resolve(dotted: str):
    """The object a dotted name of the API reference names (module, then attributes)."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for part in parts[i:]:
            obj = member(obj, part)
        return obj
    raise ImportError(dotted)


def entries() -> dict:
    """{dotted name: (directive, options text, page name)} of every directive in docs/api."""
    found = {}
    for page in sorted(API.glob("*.rst")):
        for match in DIRECTIVE.finditer(page.read_text(encoding="utf-8")):
            found[match.group(2)] = (match.group(1), match.group(3), page.name)
    return found


def test_every_listed_module_declares_all():
    missing = [name for name in MODULES if not isinstance(getattr(importlib.import_module(name), "__all__", None),
                                                           (list, tuple))]
    assert not missing, f"modules without __all__: {missing}"


@pytest.mark.parametrize("module_name", MODULES)
def test_every_name_in_all_has_an_api_entry(module_name):
    module = importlib.import_module(module_name)
    declared = entries()
    missing = []
    for name in module.__all__:
        obj = member(module, name)
        if isinstance(obj, types.ModuleType):
            ok = declared.get(obj.__name__, ("",))[0] == "automodule"
        else:
            ok = f"{module_name}.{name}" in declared
        if not ok:
            missing.append(name)
    assert not missing, f"{module_name}.__all__ names without an entry in docs/api/*.rst: {missing}"


def test_every_api_entry_names_something_that_exists():
    stale = []
    for name in entries():
        try:
            resolve(name)
        except (ImportError, AttributeError):
            stale.append(name)
    assert not stale, f"docs/api entries naming nothing: {stale}"


def test_every_object_is_documented_in_full_once():
    """autodoc'd once (two full entries of one object collide in Sphinx); other names point at it."""
    homes: dict = {}
    for name, (directive, _, _page) in entries().items():
        if directive.startswith("auto") and directive != "automodule":
            homes.setdefault(id(resolve(name)), []).append(name)
    assert all(len(names) == 1 for names in homes.values()), [n for n in homes.values() if len(n) > 1]


def test_reexport_entries_point_at_the_same_object():
    checked = 0
    for page in API.glob("*.rst"):
        text = page.read_text(encoding="utf-8")
        for match in DIRECTIVE.finditer(text):
            if match.group(1) not in ("py:class", "py:function"):
                continue
            body = text[match.end():match.end() + 300]
            target = ALIAS.search(body)
            assert target, f"{page.name}: {match.group(2)} does not say which documented object it is"
            assert resolve(match.group(2)) is resolve(target.group(1)), match.group(2)
            assert target.group(1) in entries(), f"{target.group(1)} has no entry"
            checked += 1
    assert checked >= 10  # dpnoise re-exports the mechanisms, selection and PrivacyBudget


def test_constant_entries_show_the_current_value():
    for name, (directive, options, _) in entries().items():
        value = re.search(r":value: (.*)", options)
        if directive == "py:data" and value:
            assert repr(resolve(name)) == value.group(1), f"docs/api: {name} shows {value.group(1)}"


def test_the_api_index_lists_every_page():
    toctree = set(re.findall(r"^   (\w+)$", (API / "index.rst").read_text(encoding="utf-8"), re.M))
    assert toctree == {p.stem for p in API.glob("*.rst")} - {"index"}


def test_readme_is_a_front_page():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    first_bash = re.search(r"```bash\n(.*?)```", text, re.S).group(1)
    commands = [line for line in first_bash.splitlines() if line and not line.startswith("#")]
    assert commands == ["pip install . && dpnoise demo", "pip install '.[test,spark]' && pytest"]
    assert "pip wheel . --no-deps -w dist" in text and "bash .ci/docs" in text


def test_readme_links_resolve():
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README.read_text(encoding="utf-8"))
    local = [link for link in links if "://" not in link]
    assert local, "README.md links into no docs page"
    broken = [link for link in local if not (ROOT / link).is_file()]
    assert not broken, f"README.md links to missing files: {broken}"


def test_pages_with_python_code_run_in_the_tests():
    import sys
    sys.path.insert(0, str(ROOT / "tests" / "docs"))
    try:
        from test_readme import tour_pages
    finally:
        sys.path.pop(0)
    run = {p.name for p in tour_pages()}
    unrun = [p.name for p in DOCS.glob("*.md")
             if "```python" in p.read_text(encoding="utf-8") and p.name not in run | FRAGMENT_PAGES]
    assert not unrun, f"docs pages whose Python code no test runs: {unrun}"


# -- docs/conf.py --------------------------------------------------------------------------------

def _conf():
    spec = importlib.util.spec_from_file_location("dpnoise_docs_conf", DOCS / "conf.py")
    conf = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conf)
    return conf


def test_plain_text_math_and_names_are_escaped_in_prose_only():
    conf = _conf()
    lines = ["P(x) ∝ exp(-|x|/10), see numpy.bool_ and gaussian_noise_.",
             "``|x|`` and :func:`gaussian_noise_` stay as written",
             "| a | b |",
             ">>> int(3) | 4",
             "7",
             "",
             "Example::",
             "",
             "    y = a | b_",
             "",
             "after |x|"]
    conf.escape_plain_text(None, "function", "f", None, {}, lines)
    assert lines == [r"P(x) ∝ exp(-\|x\|/10), see numpy.bool\_ and gaussian_noise\_.",
                     "``|x|`` and :func:`gaussian_noise_` stay as written",
                     "| a | b |",
                     ">>> int(3) | 4",
                     "7",
                     "",
                     "Example::",
                     "",
                     "    y = a | b_",
                     "",
                     r"after \|x\|"]


def test_every_suppressed_warning_is_still_needed():
    """Each entry of conf.SUPPRESSED names a docstring that still raises its warning: once the
    docstring is fixed, this fails and the entry is deleted."""
    docutils_core = pytest.importorskip("docutils.core")
    conf = _conf()
    assert conf.SUPPRESSED, "nothing suppressed: delete this test's reason to exist"
    for where, what, why in conf.SUPPRESSED:
        assert why
        stream = io.StringIO()
        doc = inspect.getdoc(resolve(where))
        docutils_core.publish_doctree(doc, settings_overrides={"warning_stream": stream, "report_level": 2,
                                                               "halt_level": 5})
        assert what in stream.getvalue(), f"{where}: no longer raises {what!r}; delete it from SUPPRESSED"


def test_every_ignored_reference_is_still_written_somewhere():
    """conf.nitpick_ignore lists broken references by name: once no docstring writes one, its
    line goes (so the list cannot hide a new broken reference of the same name for long)."""
    conf = _conf()
    sources = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "src" / "dpnoise").rglob("*.py"))
    for role, target in conf.nitpick_ignore:
        pattern = rf":{role.split(':')[1]}:`~?{re.escape(target)}`"
        assert re.search(pattern, sources), f"no docstring writes {pattern}: delete it from nitpick_ignore"
