"""Every complete example in docs/*.md, extracted, built and run, so a page cannot drift from the
code again (issue 23, defects 14-16).

A page marks a complete example by an HTML comment on the line before a fenced block:

    <!-- example: cpp/noise_example.cpp -->
    ```cpp
    ...
    ```

The name is a path inside the example's directory (its first part names the directory; one
page may hold several directories). The blocks of one directory are written to a fresh
directory, and then:

* ``*.py`` blocks whose name does not start with ``setup`` are run with this interpreter
  (after any ``*.sh`` block of the directory, when both exist, they are run by it instead);
* a ``*.sh`` block is the documented build-and-run recipe and is run literally with ``sh -e``,
  ``python`` being this interpreter: CMake recipes, ``python setup.py build_ext``, the
  programs themselves. So a C++ example is compiled with the installed headers (or the
  CMake package), and a Cython one built with setuptools, exactly as the page says;
* a ``*.cpp`` block with neither a recipe nor a CMakeLists.txt is compiled with
  ``c++ -std=c++17 -O2 -I dpnoise.get_include() -pthread`` and run.

A directory's expected output, if any, is checked by the test of that page's area; here an
example passes when every step exits with status 0 (the examples check themselves where it
matters, e.g. with assert). A block whose name matches a file under docs/examples must equal it
(the wheel ships those files).

Needs a C++ compiler and cmake for the C++ and CMake examples, Cython and setuptools for the
Cython one: those are skipped, with the reason, only when the tool is missing.
"""
from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import dpnoise

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
EXAMPLES = DOCS / "examples"
MARK = re.compile(r"^<!-- example: ([\w./-]+) -->\s*\n```[\w+-]*\n(.*?)^```\s*$", re.M | re.S)
TIMEOUT = 240  # seconds per step (a CMake configure and build on a loaded 2-core machine)


def marked_blocks() -> dict:
    """{(page, directory): {relative name: text}} of every marked block in docs/*.md."""
    found: dict = {}
    if not DOCS.is_dir():
        return found
    for page in sorted(DOCS.glob("*.md")):
        for match in MARK.finditer(page.read_text(encoding="utf-8")):
            name, text = match.group(1), match.group(2)
            directory = name.split("/", 1)[0] if "/" in name else "."
            found.setdefault((page.name, directory), {})[name] = text
    return found


BLOCKS = marked_blocks()


def test_the_docs_mark_their_complete_examples():
    if not DOCS.is_dir():
        pytest.skip("needs the source tree (docs/)")
    pages = {page for page, _ in BLOCKS}
    # the pages whose examples were found broken (issue 23) mark theirs; others may join
    assert {"cpp.md", "cython.md", "integrations.md", "accounting.md"} <= pages


@pytest.mark.parametrize("page, directory", sorted(BLOCKS), ids=[f"{p}:{d}" for p, d in sorted(BLOCKS)])
def test_shipped_example_files_equal_the_docs(page, directory):
    for name, text in BLOCKS[(page, directory)].items():
        shipped = EXAMPLES / name
        if shipped.is_file():
            assert shipped.read_text(encoding="utf-8") == text, f"docs/{page} is out of date with docs/examples/{name}"


def test_every_shipped_example_is_in_the_docs():
    if not EXAMPLES.is_dir():
        pytest.skip("needs the source tree (docs/examples)")
    documented = {name for blocks in BLOCKS.values() for name in blocks}
    shipped = {str(p.relative_to(EXAMPLES)) for p in EXAMPLES.rglob("*") if p.is_file()}
    assert shipped <= documented, f"files under docs/examples shown by no page: {sorted(shipped - documented)}"


def _tool_needs(files: dict) -> list:
    needs = []
    names = " ".join(files)
    text = " ".join(files.values())
    if ".cpp" in names or "CMakeLists.txt" in names or "cmake " in text:
        if not (shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")):
            needs.append("a C++ compiler")
    if "CMakeLists.txt" in names or "cmake " in text:
        if shutil.which("cmake") is None:
            needs.append("cmake")
    if ".pyx" in names:
        for module in ("Cython", "setuptools"):
            try:
                __import__(module)
            except ImportError:
                needs.append(module)
        if not (shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")):
            needs.append("a C compiler")
    return needs


def _env(work: Path) -> dict:
    """`python` is this interpreter, and it imports the dpnoise under test."""
    bin_dir = work / ".bin"
    bin_dir.mkdir(exist_ok=True)
    shim = bin_dir / "python"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    shim.chmod(shim.stat().st_mode | stat.S_IEXEC)
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(bin_dir), env.get("PATH", "")])
    package_parent = str(Path(dpnoise.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join([package_parent, env.get("PYTHONPATH", "")])
    return env


def _cmake_package_dir(tmp: Path) -> str:
    """dpnoise's CMake package: the installed one, or (running from a checkout) the checkout's
    package installed into a temporary prefix, as `cmake --install` would put it."""
    try:
        return dpnoise.get_cmake_dir()
    except FileNotFoundError:
        prefix = tmp / "prefix"
        for args in (["-S", str(ROOT), "-B", str(tmp / "core")], ["--install", str(tmp / "core"), "--prefix", str(prefix)]):
            result = subprocess.run(["cmake", *args], capture_output=True, text=True, timeout=TIMEOUT)
            assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
        return str(prefix / "share" / "cmake" / "dpnoise")


def _run(cmd, cwd: Path, env: dict) -> str:
    result = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    assert result.returncode == 0, (f"{cmd} failed ({result.returncode}):\n" + result.stdout[-4000:]
                                    + result.stderr[-4000:])
    return result.stdout


@pytest.mark.parametrize("page, directory", sorted(BLOCKS), ids=[f"{p}:{d}" for p, d in sorted(BLOCKS)])
def test_example_builds_and_runs(page, directory, tmp_path):
    files = BLOCKS[(page, directory)]
    needs = _tool_needs(files)
    if needs:
        pytest.skip(f"docs/{page} {directory}: needs {', '.join(needs)}")
    for name, text in files.items():
        target = tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    work = tmp_path / directory
    env = _env(tmp_path)
    scripts = sorted(n for n in files if n.endswith(".sh"))
    if any("get_cmake_dir()" in files[n] for n in scripts):
        try:
            dpnoise.get_cmake_dir()
        except FileNotFoundError:  # from a checkout: point the recipe at a freshly installed package
            env["DPNOISE_TEST_CMAKE_DIR"] = _cmake_package_dir(tmp_path)
            shim = tmp_path / ".bin" / "python"
            shim.write_text(
                "#!/bin/sh\n"
                f'if [ "$*" = "-c import dpnoise; print(dpnoise.get_cmake_dir())" ]; then '
                'echo "$DPNOISE_TEST_CMAKE_DIR"; exit 0; fi\n'
                f'exec "{sys.executable}" "$@"\n')
    if scripts:
        for name in scripts:
            _run(["sh", "-e", str(tmp_path / name)], work, env)
        return
    ran = False
    for name in sorted(files):
        if name.endswith(".cpp"):
            exe = tmp_path / (Path(name).stem + ".bin")
            compiler = shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")
            _run([compiler, "-std=c++17", "-O2", "-I", dpnoise.get_include(), str(tmp_path / name), "-o", str(exe),
                  "-pthread"], work, env)
            _run([str(exe)], work, env)
            ran = True
        elif name.endswith(".py") and not Path(name).name.startswith("setup"):
            _run([sys.executable, str(tmp_path / name)], work, env)
            ran = True
    assert ran, f"docs/{page} {directory}: nothing to run (mark a .py, .cpp or .sh block)"
