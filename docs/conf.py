"""Sphinx configuration of the dpnoise documentation site (issue 36, item 3).

Build: ``PYTHONPATH=src sphinx-build -W --keep-going -b html docs docs/_build/html`` (or
``.ci/docs``). Pages are Markdown (MyST) except the API reference (docs/api/*.rst, autodoc).
"""
from __future__ import annotations

import importlib.util
import logging
import re
import sys
from pathlib import Path

try:  # the installed dpnoise, or the checkout's (which needs its built extension in src/dpnoise)
    import dpnoise
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    import dpnoise

project = "dpnoise"
author = "the dpnoise authors"
copyright = "the dpnoise authors"
release = dpnoise.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "myst_parser",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "examples", "plots"]

myst_heading_anchors = 3

# Nitpicky: every cross-reference must resolve, except to objects outside this site (NumPy, the
# standard library: there is no intersphinx, the build is offline) and to dpnoise objects that
# no public module exports (private modules, e.g. a return annotation dpnoise.ldp._choose.X).
nitpicky = True
nitpick_ignore_regex = [
    (r"py:.*", r"(numpy|np|fractions|decimal|os|typing|collections\.abc|pathlib)\..*"),
    (r"py:.*", r"Fraction|Decimal|ndarray|array_like|optional"),
    (r"py:.*", r"dpnoise(\.\w+)*\._\w+(\.\w+)*"),
]
# References in docstrings of areas other changes are editing (dpnoise.ldp), written relative to a
# module the reference does not document; fix the docstring, then delete its line here.
nitpick_ignore = [
    ("py:func", "methods"),                            # ldp.heavy_hitters._base.HeavyHitters
    ("py:class", "LongitudinalDP"),                    # ldp._frequency.Protocol.privacy_loss
    ("py:func", "dpnoise.ldp.arrow.to_arrow"),         # ldp._reports.Reports.to_arrow
    ("py:func", "dpnoise.ldp.arrow.from_arrow"),       # ldp._reports.Reports.from_arrow
    ("py:func", "clip_nonnegative"),                   # the dpnoise.ldp.postprocess module docstring
    ("py:func", "norm_sub"),                           # the same
    ("py:func", "project_simplex"),                    # the same
    ("py:func", "to_rows"),                            # ldp._schema.report_rows
]

# dpnoise.distributed.spark imports pyspark and pyarrow (the spark extra): whichever is missing is
# mocked, so the site builds without the extra; installed, the real modules are used.
autodoc_mock_imports = [name for name in ("pyarrow", "pyspark", "pandas") if importlib.util.find_spec(name) is None]
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_member_order = "bysource"
autosummary_generate = False
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False

html_theme = "pydata_sphinx_theme"
html_title = f"dpnoise {release}"
html_theme_options = {"navigation_with_keys": False, "show_toc_level": 2}


# -- docstrings are numpydoc plain text ---------------------------------------------------------
# dpnoise's docstrings write math as text: |x|, |noise|/scale, |q_i(D) - q_i(D')|, and names such
# as numpy.bool_ or gaussian_noise_. In reStructuredText those are substitution references and
# hyperlink references, which Sphinx -W rejects. No dpnoise docstring uses either construct, so
# in prose (not in ``literals``, `roles`, literal blocks, doctests or table rows) a "|" and a
# word-final "_" are escaped: they render as written.
_SPAN = re.compile(r"(``.*?``|`[^`]*`_{0,2})")  # inline literals and interpreted text / roles
_BAR = re.compile(r"(?<!\\)\|")
_TRAILING_UNDERSCORE = re.compile(r"(?<=\w)_(?=[^\w]|$)")


def _escape_prose(line: str) -> str:
    parts = _SPAN.split(line)
    for i in range(0, len(parts), 2):  # even parts are outside the spans
        parts[i] = _TRAILING_UNDERSCORE.sub(r"\\_", _BAR.sub(r"\\|", parts[i]))
    return "".join(parts)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def escape_plain_text(app, what, name, obj, options, lines) -> None:
    """autodoc-process-docstring: escape "|" and word-final "_" in the prose of a docstring."""
    literal_indent = None  # inside a literal block (after "::") indented deeper than this
    doctest = False
    for i, line in enumerate(lines):
        stripped = line.strip()
        if literal_indent is not None:
            if not stripped or _indent(line) > literal_indent:
                continue
            literal_indent = None
        if doctest:
            if stripped:
                continue
            doctest = False
        if stripped.startswith(">>>"):
            doctest = True
            continue
        if stripped.startswith(("+-", "+=")) or (len(stripped) > 1 and stripped[0] == stripped[-1] == "|"):
            continue  # a grid table's border or row
        if stripped.startswith(".. "):  # a directive: its body is left as written
            literal_indent = _indent(line)
            continue
        lines[i] = _escape_prose(line)
        if stripped.endswith("::"):
            literal_indent = _indent(line)


# -- warnings suppressed one by one ------------------------------------------------------------
# (where: a substring of the warning's location, what: a substring of its message, why). Each is
# a docstring in an area another change is editing; fix the docstring, then delete its line here
# (tests/test_docs_site.py checks that every entry still matches a docstring that needs it).
SUPPRESSED = [
    ("dpnoise.distributed.spark._jvm_counts.jvm_helper_jar", "Inline literal start-string without end-string",
     "Returns: ``~/.cache/dpnoise``)``/spark/``: a literal cannot start right after ')'"),
]


class _SuppressListed(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        where, what = str(getattr(record, "location", "") or ""), record.getMessage()
        return not any(w in where and m in what for w, m, _ in SUPPRESSED)


def setup(app):
    app.connect("autodoc-process-docstring", escape_plain_text)
    for handler in logging.getLogger("sphinx").handlers:  # first, so a suppressed warning is never counted
        handler.filters.insert(0, _SuppressListed())
