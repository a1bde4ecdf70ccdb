"""Where other code finds dpnoise: the C++ headers and the CMake package.

Like ``numpy.get_include()`` and ``pybind11.get_include()`` / ``get_cmake_dir()``:

* ``get_include()``: the directory to put on the include path, so that ``#include
  <dpnoise/dpnoise.hpp>`` (the C++ core, docs/cpp.md) and ``#include <dpnoise/capi.h>`` (the C
  interface of the extension, used by ``dpnoise/capi.pxd``; docs/cython.md) resolve.
* ``get_cmake_dir()``: the directory holding ``dpnoiseConfig.cmake``, for
  ``cmake -Ddpnoise_DIR=...`` and then ``find_package(dpnoise CONFIG REQUIRED)``.

An installed wheel ships both inside the package (``dpnoise/include``,
``dpnoise/share/cmake/dpnoise``), and beside them the complete examples of docs/cpp.md and
docs/cython.md (``dpnoise/examples``). Run from a source checkout, ``get_include()`` returns the
checkout's ``cpp/include``; the CMake package exists only once installed (from a checkout, use
``add_subdirectory`` on it instead).
"""
from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def get_include() -> str:
    """The directory containing ``dpnoise/dpnoise.hpp`` and ``dpnoise/capi.h``.

    Returns
    -------
    str
        An absolute directory path, for ``-I`` or ``include_dirs``.

    Raises
    ------
    FileNotFoundError
        If the headers are neither installed with the package nor present in a source
        checkout around it.

    Examples
    --------
    >>> import os, dpnoise
    >>> os.path.isfile(os.path.join(dpnoise.get_include(), "dpnoise", "dpnoise.hpp"))
    True
    """
    for candidate in (_PACKAGE / "include", _PACKAGE.parent.parent / "cpp" / "include"):
        if (candidate / "dpnoise" / "dpnoise.hpp").is_file():
            return str(candidate)
    raise FileNotFoundError(
        f"dpnoise's C++ headers are not installed with the package at {_PACKAGE}; "
        "install dpnoise from a wheel or an sdist (pip install dpnoise) to get them"
    )


def get_cmake_dir() -> str:
    """The directory containing ``dpnoiseConfig.cmake`` (pass it as ``-Ddpnoise_DIR``).

    Returns
    -------
    str
        An absolute directory path.

    Raises
    ------
    FileNotFoundError
        When dpnoise runs from a source checkout (no installed CMake package there:
        ``add_subdirectory(<checkout>)`` gives the same ``dpnoise::core`` target).
    """
    candidate = _PACKAGE / "share" / "cmake" / "dpnoise"
    if (candidate / "dpnoiseConfig.cmake").is_file():
        return str(candidate)
    raise FileNotFoundError(
        f"dpnoise's CMake package is not installed with the package at {_PACKAGE}; install "
        "dpnoise with pip, or use add_subdirectory() on a source checkout"
    )


__all__ = ["get_cmake_dir", "get_include"]
