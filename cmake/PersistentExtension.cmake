# The extension module, built where a reinstall finds it again.
#
# pip builds in a fresh isolated environment on every `pip install`, and scikit-build-core then
# deletes CMakeCache.txt and CMakeFiles/ of its build directory ("new isolated environment,
# clearing cache"), and CMakeFiles/ is where the object files are. So `pip install .` followed by
# `pip install '.[test]'` compiled the whole extension twice, persistent build-dir or not.
#
# Under scikit-build-core this file replaces the extension target by a nested build of the same
# CMakeLists.txt (DPNOISE_INNER_BUILD=ON) in ${CMAKE_BINARY_DIR}/extension, a directory that
# scikit-build-core leaves alone. The nested build is configured and built on every install:
# with the third-party headers staged at a fixed path (StageHeaders.cmake) its compile commands
# do not change with pip's temporary paths, so Ninja recompiles exactly the units whose sources
# changed, and nothing at all for a reinstall of the same sources. The module it makes is
# installed into the wheel like any other file.
find_package(Python REQUIRED COMPONENTS Interpreter Development.Module)
find_package(pybind11 CONFIG REQUIRED)

set(_dpnoise_extension_dir "${CMAKE_BINARY_DIR}/extension")
set(_dpnoise_extension_args
  -DDPNOISE_BUILD_PYTHON=ON -DDPNOISE_INNER_BUILD=ON
  "-DCMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE}"
  "-DCMAKE_CXX_COMPILER=${CMAKE_CXX_COMPILER}"
  "-DCMAKE_CXX_FLAGS=${CMAKE_CXX_FLAGS}"
  "-DCMAKE_MAKE_PROGRAM=${CMAKE_MAKE_PROGRAM}"
  "-Dpybind11_DIR=${pybind11_DIR}"
  "-DPython_EXECUTABLE=${Python_EXECUTABLE}")
foreach(_var IN ITEMS CMAKE_INTERPROCEDURAL_OPTIMIZATION CMAKE_DISABLE_PRECOMPILE_HEADERS Python_INCLUDE_DIR DPNOISE_NO_SIMD)
  if(DEFINED ${_var})
    list(APPEND _dpnoise_extension_args "-D${_var}=${${_var}}")
  endif()
endforeach()

add_custom_target(dpnoise_extension ALL
  COMMAND "${CMAKE_COMMAND}" -S "${CMAKE_SOURCE_DIR}" -B "${_dpnoise_extension_dir}" -G "${CMAKE_GENERATOR}"
          ${_dpnoise_extension_args}
  COMMAND "${CMAKE_COMMAND}" --build "${_dpnoise_extension_dir}" --target _core
  COMMENT "Building the extension module in ${_dpnoise_extension_dir} (kept between installs)"
  VERBATIM USES_TERMINAL)

install(CODE "
  file(GLOB _dpnoise_module \"${_dpnoise_extension_dir}/_core*${CMAKE_SHARED_MODULE_SUFFIX}\")
  list(LENGTH _dpnoise_module _dpnoise_count)
  if(NOT _dpnoise_count EQUAL 1)
    message(FATAL_ERROR \"expected one extension module in ${_dpnoise_extension_dir}, found: \${_dpnoise_module}\")
  endif()
  file(INSTALL \${_dpnoise_module} DESTINATION \"\${CMAKE_INSTALL_PREFIX}/dpnoise\")
")
