// The dpnoise._core extension module: exceptions, then one register_* call per area.
#include "bindings.hpp"
#include "dpnoise/errors.hpp"

namespace py = pybind11;
namespace dpnoise::bindings { void register_ldp_numeric(py::module_& m); }  // register_ldp_numeric.cpp

PYBIND11_MODULE(_core, m) {
    m.doc() = "dpnoise C++ core: ChaCha20 stream families and exact discrete samplers";
    // The exception classes live in Python (dpnoise._errors), so that the pure-Python layers
    // import without this module; here they are only registered for the C++ exceptions.
    py::module_ errors = py::module_::import("dpnoise._errors");
    static py::handle entropy_error = py::object(errors.attr("EntropyError")).release();
    static py::handle invariant_error = py::object(errors.attr("InvariantError")).release();
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const dpnoise::entropy_error& e) {
            py::set_error(entropy_error, e.what());
        } catch (const dpnoise::invariant_error& e) {
            py::set_error(invariant_error, e.what());
        }
    });
    dpnoise::bindings::register_random(m);
    dpnoise::bindings::register_exact(m);
    dpnoise::bindings::register_testing(m);
    dpnoise::bindings::register_categorical(m);
    dpnoise::bindings::register_capi(m);
    dpnoise::bindings::register_selection(m);
    dpnoise::bindings::register_mechanisms(m);
    dpnoise::bindings::register_constant_time(m);
    dpnoise::bindings::register_ldp_unary(m);
    dpnoise::bindings::register_ldp_hashing(m);
    dpnoise::bindings::register_ldp_hadamard(m);
    dpnoise::bindings::register_ldp_zmatrix(m);
    dpnoise::bindings::register_ldp_heavy_hitters(m);
    dpnoise::bindings::register_ldp_numeric(m);
}
