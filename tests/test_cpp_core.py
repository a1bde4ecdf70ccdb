"""Builds the C++ core's unit tests (every cpp/tests/test_*.cpp: core, request, select, ldp) with CMake and runs
them through ctest; checks that the extension's type stubs (_core.pyi) name only what the extension has."""
import ast
import os
import shutil
import subprocess
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CROSS_CXX = "aarch64-linux-gnu-g++"


@pytest.mark.skipif(shutil.which("cmake") is None or not (ROOT / "cpp" / "tests").is_dir(),
                    reason="needs cmake and the source tree")
def test_cpp_core_unit_tests(tmp_path: Path) -> None:
    build = tmp_path / "build"
    subprocess.run(["cmake", "-S", str(ROOT), "-B", str(build), "-DDPNOISE_BUILD_CPP_TESTS=ON",
                    "-DCMAKE_BUILD_TYPE=Release"], check=True, capture_output=True)
    subprocess.run(["cmake", "--build", str(build), "--target", "cpp_tests"], check=True, capture_output=True)
    result = subprocess.run(["ctest", "--test-dir", str(build), "--output-on-failure"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    # every cpp/tests/test_*.cpp ran (the glob found them all)
    expected = sorted(p.stem for p in (ROOT / "cpp" / "tests").glob("test_*.cpp"))
    assert len(expected) >= 4 and all(f"{name} " in result.stdout for name in expected), result.stdout


def test_every_core_header_compiles_for_aarch64(tmp_path: Path) -> None:
    """The core builds on CPUs other than x86-64 (aarch64 wheels, Apple silicon): every header under
    cpp/include/dpnoise, included from one unit, compiles for aarch64 at the project's warning flags.
    An x86 intrinsic, target("...") attribute or __builtin_cpu_supports outside the DPNOISE_X86_SIMD
    guard (dpnoise/simd.hpp) fails here. .ci/cross_compile checks every binding and test unit too.
    Needs the cross compiler (apt-get install g++-aarch64-linux-gnu); DPNOISE_REQUIRE_CROSS=1 turns
    its absence from a skip into a failure."""
    if shutil.which(CROSS_CXX) is None:
        if os.environ.get("DPNOISE_REQUIRE_CROSS") == "1":
            pytest.fail(f"{CROSS_CXX} is missing and DPNOISE_REQUIRE_CROSS=1")
        pytest.skip(f"needs {CROSS_CXX}")
    include = ROOT / "cpp" / "include"
    headers = sorted(p.relative_to(include).as_posix() for p in (include / "dpnoise").rglob("*.hpp"))
    assert len(headers) > 50  # the glob found the core
    unit = tmp_path / "every_header.cpp"
    unit.write_text("".join(f'#include "{h}"\n' for h in headers) + "int main() { return 0; }\n")
    result = subprocess.run([CROSS_CXX, "-std=gnu++17", "-O3", "-Wall", "-Wextra", "-Wconversion", "-fsyntax-only",
                             f"-I{include}", str(unit)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-4000:]
    assert "warning:" not in result.stderr, result.stderr[-4000:]


def _stubbed(tree: ast.Module) -> Iterator[tuple[str, str]]:
    """(namespace, name) of every function, class and constant stubbed in _core.pyi: namespace ""
    for the module, "ldp" for the members of `class ldp` (the _core.ldp submodule)."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            yield "", node.name
            if isinstance(node, ast.ClassDef) and node.name == "ldp":
                for member in node.body:
                    if isinstance(member, ast.FunctionDef):
                        yield "ldp", member.name
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            yield "", node.target.id


def test_stubs_match_the_extension() -> None:
    """_core.pyi stubs exactly the extension's names: nothing stubbed that does not exist, and every
    LDP kernel under _core.ldp (none left at the top level) is stubbed."""
    from dpnoise import _core

    tree = ast.parse((ROOT / "src" / "dpnoise" / "_core.pyi").read_text())
    stubbed = set(_stubbed(tree))
    missing = sorted(f"{ns}.{name}".lstrip(".") for ns, name in stubbed
                     if not hasattr(_core.ldp if ns else _core, name))
    assert not missing, f"stubbed in _core.pyi but not in the extension: {missing}"
    assert isinstance(_core.ldp, types.ModuleType) and _core.ldp.__name__ == "dpnoise._core.ldp"
    unstubbed = sorted(name for name in dir(_core.ldp) if not name.startswith("__") and ("ldp", name) not in stubbed)
    assert not unstubbed, f"_core.ldp functions without a stub: {unstubbed}"
