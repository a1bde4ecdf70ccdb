"""Issue 34 item 7: ``dpnoise.bench`` is a small package (registry, harness, stats, report,
comparison, figures) whose public names stay importable from ``dpnoise.bench`` itself; the
benchmark suites' shared code imports no test module."""
import ast
import importlib
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]

# every name tests, docs and the demo import from dpnoise.bench before the split (0.8.x)
PUBLIC = ("BUILTIN_MODULE", "Context", "ENTRY_POINT_GROUP", "KNOWN_METRICS", "MAX_UTILITY_REPEATS", "METRIC_GOALS",
          "METRIC_LABELS", "MISSING", "PLOT_FORMATS", "Peer", "RecordError", "SCHEMA", "SCHEMA_VERSION", "Workload",
          "best_time", "compare", "format_comparison", "format_table", "load_record", "load_workloads", "loaded",
          "machine_info", "make_context", "mann_whitney_greater", "plot", "plot_caption", "register", "run",
          "run_workload", "select", "summarize", "summarize_utility", "t_quantile_975", "time_calls",
          "utility_figures", "workloads")


def test_public_names_import_from_the_package():
    bench = importlib.import_module("dpnoise.bench")
    missing = [n for n in PUBLIC if not hasattr(bench, n)]
    assert not missing
    assert set(bench.__all__) <= set(dir(bench))
    # names the docs cite as dpnoise.bench.X
    cited = set()
    for page in (ROOT / "docs").glob("*.md"):
        cited |= set(re.findall(r"dpnoise\.bench\.([A-Za-z_][A-Za-z_0-9]*)", page.read_text()))
    modules = {"registry", "harness", "stats", "report", "comparison", "figures"}
    assert not [n for n in cited - modules if not hasattr(bench, n)]


@pytest.mark.parametrize("module", ["registry", "harness", "stats", "report", "comparison", "figures"])
def test_each_part_is_a_module_with_one_job(module):
    mod = importlib.import_module(f"dpnoise.bench.{module}")
    assert mod.__doc__ and len(pathlib.Path(mod.__file__).read_text().splitlines()) < 600


def _imported_modules(path):
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.module


def test_benchmarks_shared_code_imports_no_test_module():
    """conftest.py and the benchmark scripts are imported by every suite (or run alone): a test
    module imported from them runs its module-level workload (10^6 strings) and couples them to it."""
    shared = [p for p in (ROOT / "benchmarks").glob("*.py") if not p.name.startswith("test_")]
    assert any(p.name == "conftest.py" for p in shared)
    bad = [(p.name, m) for p in shared for m in _imported_modules(p) if m.split(".")[-1].startswith("test_")]
    assert not bad
