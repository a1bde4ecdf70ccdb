# Third-party headers at one fixed path, so that a reinstall compiles nothing.
#
# pip builds the extension inside a fresh isolated environment on every install, and the
# pybind11 and NumPy headers live under that environment's temporary site-packages. Their paths
# are part of every compile command, and Ninja recompiles a unit whose command changed. So the
# persistent build directory (pyproject.toml: tool.scikit-build.build-dir) would save nothing:
# `pip install .` followed by `pip install '.[test]'` compiled the whole extension twice.
#
# The headers are copied, by content, under the build tree, and the targets include them from
# there. configure_file(COPYONLY) leaves a file (and its time stamp) alone when its content is
# unchanged, so the same pybind11 and NumPy versions give the same commands and the same inputs:
# the second install reconfigures, finds everything up to date and only packs the wheel.

# Copies every file under `source_dir` to `dest_dir`, keeping the layout; unchanged files are
# left untouched.
function(dpnoise_stage_headers source_dir dest_dir)
  file(GLOB_RECURSE _staged RELATIVE "${source_dir}" "${source_dir}/*")
  foreach(_file IN LISTS _staged)
    configure_file("${source_dir}/${_file}" "${dest_dir}/${_file}" COPYONLY)
  endforeach()
endfunction()

set(DPNOISE_STAGED_INCLUDE "${CMAKE_BINARY_DIR}/staged-include")

# pybind11: its headers target is an imported target; point it at the staged copy.
get_target_property(_pybind11_include pybind11::pybind11_headers INTERFACE_INCLUDE_DIRECTORIES)
list(GET _pybind11_include 0 _pybind11_include)
dpnoise_stage_headers("${_pybind11_include}/pybind11" "${DPNOISE_STAGED_INCLUDE}/pybind11/pybind11")
set_target_properties(pybind11::pybind11_headers PROPERTIES
  INTERFACE_INCLUDE_DIRECTORIES "${DPNOISE_STAGED_INCLUDE}/pybind11")

# NumPy: numpy/random/bitgen.h (the BitGenerator capsule struct) and the array C-API.
execute_process(COMMAND "${Python_EXECUTABLE}" -c "import numpy; print(numpy.get_include())"
                OUTPUT_VARIABLE _numpy_include OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _np_status)
if(NOT _np_status EQUAL 0)
  message(FATAL_ERROR "NumPy is needed at build time (numpy/random/bitgen.h, numpy/arrayobject.h)")
endif()
dpnoise_stage_headers("${_numpy_include}/numpy" "${DPNOISE_STAGED_INCLUDE}/numpy/numpy")
set(DPNOISE_NUMPY_INCLUDE "${DPNOISE_STAGED_INCLUDE}/numpy")
