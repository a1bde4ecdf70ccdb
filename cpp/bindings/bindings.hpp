// Shared declarations of the pybind11 glue (bindings only convert and dispatch).
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <memory>

#include "dpnoise/random/generator.hpp"

namespace dpnoise::bindings {

namespace py = pybind11;

// The layout NumPy expects behind a "BitGenerator" capsule (numpy/random/bitgen.h).
struct numpy_bitgen_t {
    void* state;
    uint64_t (*next_uint64)(void* st);
    uint32_t (*next_uint32)(void* st);
    double (*next_double)(void* st);
    uint64_t (*next_raw)(void* st);
};

// The Python-facing owner of a generator, plus the NumPy interface struct pointing at it.
struct GeneratorHandle {
    std::unique_ptr<random::ChaCha20Generator> gen;
    numpy_bitgen_t bitgen{};
};

void register_random(py::module_& m);
void register_exact(py::module_& m);
void register_capi(py::module_& m);  // the C API capsule (dpnoise/capi.h)

}  // namespace dpnoise::bindings
