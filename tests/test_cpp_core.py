"""Builds the C++ core's unit tests (cpp/tests: test_core, test_request, test_select) with CMake and runs them through ctest."""
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(shutil.which("cmake") is None or not (ROOT / "cpp" / "tests").is_dir(),
                    reason="needs cmake and the source tree")
def test_cpp_core_unit_tests(tmp_path):
    build = tmp_path / "build"
    subprocess.run(["cmake", "-S", str(ROOT), "-B", str(build), "-DDPNOISE_BUILD_CPP_TESTS=ON",
                    "-DCMAKE_BUILD_TYPE=Release"], check=True, capture_output=True)
    subprocess.run(["cmake", "--build", str(build), "--target", "test_core", "test_request", "test_select"], check=True, capture_output=True)
    result = subprocess.run(["ctest", "--test-dir", str(build), "--output-on-failure"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
