"""dpnoise.get_include() / get_cmake_dir(): where other code finds the headers and the CMake
package, and the umbrella header that includes every public header of the core."""
import re
from pathlib import Path

import pytest

import dpnoise
from dpnoise import _include

ROOT = Path(__file__).resolve().parents[2]


def test_get_include_holds_the_umbrella_and_the_c_api_header():
    include = Path(dpnoise.get_include())
    assert include.is_absolute()
    assert (include / "dpnoise" / "dpnoise.hpp").is_file()
    assert (include / "dpnoise" / "capi.h").is_file()


def test_the_umbrella_includes_every_public_header_of_the_core():
    include = Path(dpnoise.get_include())
    umbrella = (include / "dpnoise" / "dpnoise.hpp").read_text()
    included = set(re.findall(r'#include "(dpnoise/[^"]+)"', umbrella))
    headers = {p.relative_to(include).as_posix() for p in (include / "dpnoise").rglob("*.hpp")}
    # capi.h is the C interface of the Python extension, not part of the C++ core
    assert included == headers - {"dpnoise/dpnoise.hpp"}


def test_from_a_source_checkout_the_headers_are_the_checkouts(monkeypatch):
    if not (ROOT / "cpp" / "include").is_dir():
        pytest.skip("needs the source tree")
    monkeypatch.setattr(_include, "_PACKAGE", ROOT / "src" / "dpnoise")
    assert Path(_include.get_include()) == ROOT / "cpp" / "include"
    with pytest.raises(FileNotFoundError, match="add_subdirectory"):
        _include.get_cmake_dir()


def test_an_installed_layout_is_found(monkeypatch, tmp_path):
    package = tmp_path / "site-packages" / "dpnoise"
    (package / "include" / "dpnoise").mkdir(parents=True)
    (package / "include" / "dpnoise" / "dpnoise.hpp").write_text("#pragma once\n")
    (package / "share" / "cmake" / "dpnoise").mkdir(parents=True)
    (package / "share" / "cmake" / "dpnoise" / "dpnoiseConfig.cmake").write_text("")
    monkeypatch.setattr(_include, "_PACKAGE", package)
    assert _include.get_include() == str(package / "include")
    assert _include.get_cmake_dir() == str(package / "share" / "cmake" / "dpnoise")


def test_a_package_without_headers_says_so(monkeypatch, tmp_path):
    monkeypatch.setattr(_include, "_PACKAGE", tmp_path / "a" / "b" / "dpnoise")
    with pytest.raises(FileNotFoundError, match="headers"):
        _include.get_include()
    with pytest.raises(FileNotFoundError, match="CMake package"):
        _include.get_cmake_dir()


def test_they_take_no_arguments():
    with pytest.raises(TypeError):
        dpnoise.get_include("dpnoise")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        dpnoise.get_cmake_dir(True)  # type: ignore[call-arg]


def test_an_installed_package_ships_the_examples():
    # an installed wheel (CI's `pip install .`) ships docs/examples as dpnoise/examples, with
    # the CMake package next to it; from a source checkout neither exists inside the package
    try:
        dpnoise.get_cmake_dir()
    except FileNotFoundError:
        pytest.skip("dpnoise runs from a source checkout: the examples are in docs/examples")
    examples = Path(dpnoise.__file__).resolve().parent / "examples"
    for name in ("cpp/noise_example.cpp", "cpp/CMakeLists.txt", "cython/noise_loops.pyx"):
        assert (examples / name).is_file(), f"the wheel does not ship examples/{name}"
