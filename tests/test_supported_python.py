"""The package imports on the oldest Python it claims (requires-python >= 3.9).

Python 3.9 evaluates annotations at definition time, so an annotation written ``X | Y`` (PEP
604, Python 3.10) in a module without ``from __future__ import annotations`` raises TypeError
when the module is imported there: dpnoise 0.8.0 did not import on 3.9 for one such annotation.
CI runs the wheel's smoke suite on 3.9 (.ci/wheel); this test finds the same defect on any
Python, in every module, without a 3.9 interpreter.
"""
import ast
import pathlib

import dpnoise

PACKAGE = pathlib.Path(dpnoise.__file__).parent


def _has_future_annotations(tree: ast.Module) -> bool:
    return any(isinstance(n, ast.ImportFrom) and n.module == "__future__" and any(a.name == "annotations" for a in n.names)
               for n in tree.body)


def _runtime_annotations(tree: ast.Module):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            yield from (x.annotation for x in a.posonlyargs + a.args + a.kwonlyargs)
            yield from (v.annotation for v in (a.vararg, a.kwarg) if v is not None)
            yield node.returns
        elif isinstance(node, ast.AnnAssign):
            yield node.annotation


def test_no_pep604_union_evaluated_at_import():
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if _has_future_annotations(tree):
            continue
        for ann in _runtime_annotations(tree):
            if ann is not None and any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.BitOr) for n in ast.walk(ann)):
                bad.append(f"{path.relative_to(PACKAGE)}:{ann.lineno}: {ast.unparse(ann)}")
    assert not bad, "annotations Python 3.9 cannot evaluate (use Optional/Union or a __future__ import):\n" + "\n".join(bad)
