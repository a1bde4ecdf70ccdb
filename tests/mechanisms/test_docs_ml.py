"""The complete Python examples of docs/ml.md run as written (a doc cannot drift from the code),
and the numpydoc examples of the mechanisms and selection modules pass as doctests."""
from __future__ import annotations

import doctest
import importlib
import pathlib
import re

import pytest

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "ml.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)


def test_docs_ml_has_examples():
    assert len(BLOCKS) >= 2


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_docs_ml_example_runs(index, capsys):
    exec(compile(BLOCKS[index], f"docs/ml.md block {index}", "exec"), {"__name__": "__docs__"})


MODULES = ["dpnoise.mechanisms.laplace", "dpnoise.mechanisms.gaussian", "dpnoise.mechanisms.histogram",
           "dpnoise.mechanisms.kde", "dpnoise.mechanisms.randomized_response", "dpnoise.mechanisms.bounds",
           "dpnoise.selection.noisy_max", "dpnoise.selection.sparse_vector", "dpnoise._validate"]


@pytest.mark.parametrize("name", MODULES)
def test_numpydoc_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0
