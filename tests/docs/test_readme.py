"""README.md's code runs as written (issue 33, item 7), and so does the code of the pages its
sections moved to (issue 36: docs/getting_started.md, docs/guide_*.md, docs/performance.md).

Every fenced ```python block of each of those pages is run in order, in one namespace per page,
as a reader who pastes them one after the other into one interpreter would: a block may use the
names an earlier block of the same page defined, never a name that no block defines. An
intended error is shown with try/except in the block itself. Shell (```bash) blocks and
indented snippets are not run. (The other docs pages mark their complete examples, which
tests/docs/test_docs_examples.py builds and runs.)

Each block is compiled with its page as the file name and its own line numbers, so a failure
points at the page's line. A block must stay quick (the README's examples are small): one that
takes more than BLOCK_SECONDS fails, which catches e.g. a budget that spends minutes refusing a
release.

The Spark block needs pyspark and Java: it is run (with every block before it) in a fresh
interpreter of its own, so that its session is not the Spark tests' one, and skipped with the
reason when they are missing, unless DPNOISE_REQUIRE_SPARK=1 (as .ci/run sets), where that is a
failure. The check of what is missing is the one of tests/distributed/conftest.py.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

import dpnoise
from spark_available import spark_missing

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"


def tour_pages() -> list:
    """README.md and the docs pages that hold its former sections (new guide pages join by name)."""
    return [README, DOCS / "getting_started.md", *sorted(DOCS.glob("guide_*.md")), DOCS / "performance.md"]
FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)
SPARK = "dpnoise.distributed.spark"
BLOCK_SECONDS = 30.0  # the blocks take under a second each on a loaded 2-core machine; minutes is a defect
SPARK_TIMEOUT = 600   # seconds for the fresh interpreter that starts Spark (about 25 s on 2 loaded cores)


def python_blocks(text: str) -> list:
    """[(first line number in README.md, source)] of every fenced python block, in order."""
    return [(text.count("\n", 0, m.start(1)) + 1, m.group(1)) for m in FENCE.finditer(text)]


PAGE_IDS = [p.name for p in tour_pages() if p.is_file() and "```python" in p.read_text(encoding="utf-8")]


def _page_blocks(name: str) -> tuple:
    page = README if name == README.name else DOCS / name
    if not page.is_file():
        pytest.skip(f"needs the source tree ({name})")
    blocks = python_blocks(page.read_text(encoding="utf-8"))
    if page == README:
        assert blocks, "README.md has no ```python block: the fence pattern no longer matches"
    return page, blocks


def _compiled(page: Path, line: int, source: str):
    # padded so that tracebacks name the page and the block's own lines
    return compile("\n" * (line - 1) + source, str(page), "exec")


def test_python_blocks_are_found_where_the_readme_has_them():
    text = "intro\n```python\nx = 1\n```\n\n```bash\nls\n```\n```python\ny = x\n```\n"
    assert python_blocks(text) == [(3, "x = 1\n"), (10, "y = x\n")]


def test_the_tour_pages_are_found():
    if not README.is_file():
        pytest.skip("needs the source tree (README.md)")
    names = {p.name for p in tour_pages()}
    assert {"README.md", "getting_started.md", "guide_central.md", "guide_ldp.md", "performance.md"} <= names
    assert all(p.is_file() for p in tour_pages())
    assert {"README.md", "guide_central.md", "guide_ldp.md", "guide_accounting.md"} <= set(PAGE_IDS)


@pytest.mark.parametrize("name", PAGE_IDS)
def test_python_blocks_run_in_order_in_one_namespace(name):
    page, blocks = _page_blocks(name)
    namespace: dict = {"__name__": "__readme__"}
    for line, source in blocks:
        if SPARK in source:
            continue  # test_spark_blocks
        start = time.perf_counter()
        exec(_compiled(page, line, source), namespace)
        seconds = time.perf_counter() - start
        assert seconds < BLOCK_SECONDS, f"{page.name} block at line {line} took {seconds:.0f} s"


_spark_missing = spark_missing  # one check for every Spark test (tests/spark_available.py)


RUNNER = """\
import json, sys
readme, blocks = sys.argv[1], json.load(open(sys.argv[2], encoding="utf-8"))
namespace = {"__name__": "__readme__"}
for line, source in blocks:
    exec(compile("\\n" * (line - 1) + source, readme, "exec"), namespace)
"""


SPARK_PAGE_IDS = [p.name for p in tour_pages() if p.is_file() and SPARK in p.read_text(encoding="utf-8")]


def test_the_spark_blocks_are_found():
    if not README.is_file():
        pytest.skip("needs the source tree (README.md)")
    assert {"README.md", "guide_spark.md"} <= set(SPARK_PAGE_IDS)


@pytest.mark.parametrize("name", SPARK_PAGE_IDS)
def test_spark_blocks(name, tmp_path):
    page, blocks = _page_blocks(name)
    last = max((i for i, (_, source) in enumerate(blocks) if SPARK in source), default=None)
    if last is None:
        pytest.skip(f"{name} has no Spark block")
    reason = _spark_missing()
    if reason:
        if os.environ.get("DPNOISE_REQUIRE_SPARK") == "1":
            pytest.fail(f"DPNOISE_REQUIRE_SPARK=1 but {reason}")
        pytest.skip(reason)
    (tmp_path / "blocks.json").write_text(json.dumps(blocks[:last + 1]), encoding="utf-8")
    (tmp_path / "run_readme.py").write_text(RUNNER, encoding="utf-8")
    env = dict(os.environ)
    env["DPNOISE_CACHE_DIR"] = str(tmp_path / "cache")  # the JVM helper jar: this run's cache, not the user's
    package_parent = str(Path(dpnoise.__file__).resolve().parents[1])  # the dpnoise under test
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_parent, env.get("PYTHONPATH")) if p)
    result = subprocess.run([sys.executable, str(tmp_path / "run_readme.py"), str(page), str(tmp_path / "blocks.json")],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=SPARK_TIMEOUT)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
