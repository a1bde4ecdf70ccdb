"""Other C++ code using dpnoise's core: the example of docs/cpp.md built with CMake against
(a) the source tree (add_subdirectory), (b) an installed package (cmake --install, then
find_package from a separate project) and (c) the package inside an installed wheel
(dpnoise.get_cmake_dir()), then run and compared with what Python's dpnoise draws for the
same seed. Skipped when cmake or a C++ compiler is missing.
"""
import shutil
import subprocess
from fractions import Fraction
from pathlib import Path

import pytest

import dpnoise

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "docs" / "examples" / "cpp"

needs_cmake = pytest.mark.skipif(
    shutil.which("cmake") is None or not (shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")),
    reason="needs cmake and a C++ compiler",
)
needs_source = pytest.mark.skipif(not (EXAMPLE / "noise_example.cpp").is_file(), reason="needs the source tree")


def cmake(*args, cwd=None):
    result = subprocess.run(["cmake", *map(str, args)], cwd=cwd, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    return result.stdout


def generator_args():
    return ["-G", "Ninja"] if shutil.which("ninja") else []


def build_example(build, *configure_args):
    cmake("-S", EXAMPLE, "-B", build, *generator_args(), "-DCMAKE_BUILD_TYPE=Release", *configure_args)
    cmake("--build", build, "--parallel", "2")
    return build / "noise_example"


def run(program, *args):
    result = subprocess.run([str(program), *map(str, args)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    lines = dict(line.split(": ", 1) for line in result.stdout.strip().splitlines())
    return lines


def check_example_output(program):
    """Seeded: the same numbers as Python's dpnoise for the same seed and the same requests
    (100,000 values: Python's table path, chunks of 65,536 from streams 1-2 and 3-4, the
    per-call sampler for the count from stream 5). Secure: keyed from the OS, different on
    every run."""
    out = run(program, 11)
    assert out["secure"] == "no"
    g = dpnoise.default_rng(11)
    laplace = g.discrete_laplace(Fraction(3, 2), size=100_000)
    gaussian = g.discrete_gaussian(variance=Fraction(9, 4), size=100_000)
    count = 1234 + int(g.discrete_laplace(2, size=1)[0])
    assert [int(x) for x in out["discrete_laplace scale=3/2"].split()] == laplace[:10].tolist()
    assert int(out["discrete_laplace scale=3/2 sum"]) == int(laplace.sum())
    assert [int(x) for x in out["discrete_gaussian variance=9/4"].split()] == gaussian[:10].tolist()
    assert int(out["discrete_gaussian variance=9/4 sum"]) == int(gaussian.sum())
    assert int(out["noisy count"]) == count
    first, second = run(program), run(program)
    assert first["secure"] == second["secure"] == "yes"
    assert first["discrete_laplace scale=3/2"] != second["discrete_laplace scale=3/2"]
    assert len(first["discrete_gaussian variance=9/4"].split()) == 10


@needs_cmake
@needs_source
def test_example_builds_against_the_source_tree(tmp_path):
    program = build_example(tmp_path / "build", f"-DDPNOISE_SOURCE_DIR={ROOT}")
    check_example_output(program)


@needs_cmake
@needs_source
def test_example_builds_against_an_installed_package(tmp_path):
    prefix = tmp_path / "prefix"
    cmake("-S", ROOT, "-B", tmp_path / "core", *generator_args())
    cmake("--install", tmp_path / "core", "--prefix", prefix)
    assert (prefix / "include" / "dpnoise" / "dpnoise.hpp").is_file()
    assert (prefix / "include" / "dpnoise" / "capi.h").is_file()
    config = prefix / "share" / "cmake" / "dpnoise"
    assert {p.name for p in config.iterdir()} >= {"dpnoiseConfig.cmake", "dpnoiseConfigVersion.cmake",
                                                  "dpnoiseTargets.cmake"}
    # Our warning flags stay ours: the imported target must not impose them on its users.
    assert "-Wconversion" not in (config / "dpnoiseTargets.cmake").read_text()
    # a separate project that knows only the prefix (find_package; no path into the source tree)
    program = build_example(tmp_path / "build", f"-DCMAKE_PREFIX_PATH={prefix}")
    check_example_output(program)


@needs_cmake
@needs_source
def test_example_builds_against_the_package_in_an_installed_wheel(tmp_path):
    try:
        cmake_dir = dpnoise.get_cmake_dir()
    except FileNotFoundError:
        pytest.skip("dpnoise runs from a source checkout: no CMake package inside it")
    program = build_example(tmp_path / "build", f"-Ddpnoise_DIR={cmake_dir}")
    check_example_output(program)


@pytest.mark.skipif(shutil.which("cc") is None or shutil.which("c++") is None, reason="needs cc and c++")
@pytest.mark.parametrize("compiler, suffix", [("cc", ".c"), ("c++", ".cpp")])
def test_the_c_api_header_compiles_without_python(tmp_path, compiler, suffix):
    source = tmp_path / ("use_capi" + suffix)
    source.write_text(
        "#include <dpnoise/capi.h>\n"
        "int main(void) { dpnoise_capi api; api.version = DPNOISE_CAPI_VERSION;\n"
        "  return api.version == 2 && sizeof(dpnoise_capi) > 2 * sizeof(uint32_t) ? 0 : 1; }\n"
    )
    subprocess.run([compiler, "-Wall", "-Wextra", "-Werror", "-I", dpnoise.get_include(), str(source),
                    "-o", str(tmp_path / "use_capi")], check=True)
    subprocess.run([str(tmp_path / "use_capi")], check=True)


@needs_cmake
@needs_source
def test_example_defaults_to_an_optimised_build(tmp_path):
    # the documented CMakeLists.txt builds Release when no build type is given (issue 23, 16)
    cmake("-S", EXAMPLE, "-B", tmp_path / "build", *generator_args(), f"-DDPNOISE_SOURCE_DIR={ROOT}")
    cache = (tmp_path / "build" / "CMakeCache.txt").read_text()
    assert "CMAKE_BUILD_TYPE:STRING=Release" in cache
