"""Compile Cython extensions against the dpnoise under test and import them (the C API tests
and benchmarks/test_bench_capi.py build their .pyx files this way)."""
from __future__ import annotations

import contextlib
import importlib
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Iterator, List, Sequence

import dpnoise

SETUP = """\
from setuptools import Extension, setup
from Cython.Build import cythonize
import dpnoise

extensions = [Extension(name, [name + ".pyx"], include_dirs=[dpnoise.get_include()], extra_compile_args={args!r})
              for name in {names!r}]
setup(ext_modules=cythonize(extensions, quiet=True), script_args=["build_ext", "--inplace"])
"""


@contextlib.contextmanager
def built_extensions(sources: Sequence[Path], work: Path, extra_compile_args: Sequence[str] = ()) -> Iterator[List]:
    """Copy ``sources`` (.pyx files) into ``work``, build them with setuptools and Cython against
    this dpnoise (its include directory and its package on PYTHONPATH), and yield the imported
    modules in the order of ``sources``; ``work`` leaves sys.path on exit. A failed build fails
    the test with the compiler's output."""
    for p in sources:
        shutil.copy(p, work)
    names = tuple(Path(p).stem for p in sources)
    (work / "setup.py").write_text(SETUP.format(args=list(extra_compile_args), names=names))
    env = dict(os.environ)
    package_parent = str(Path(dpnoise.__file__).resolve().parents[1])  # the dpnoise under test
    env["PYTHONPATH"] = os.pathsep.join([package_parent, env.get("PYTHONPATH", "")])
    result = subprocess.run([sys.executable, "setup.py"], cwd=work, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    sys.path.insert(0, str(work))
    try:
        yield [importlib.import_module(name) for name in names]
    finally:
        sys.path.remove(str(work))
