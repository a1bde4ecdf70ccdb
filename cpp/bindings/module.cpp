// The dpnoise._core extension module: exceptions, then one register_* call per area.
#include "bindings.hpp"
#include "dpnoise/errors.hpp"

namespace py = pybind11;

PYBIND11_MODULE(_core, m) {
    m.doc() = "dpnoise C++ core: ChaCha20 generator and exact discrete samplers";
    static py::exception<void> dp_error(m, "DPError", PyExc_Exception);
    static py::exception<dpnoise::entropy_error> entropy_error(m, "EntropyError", dp_error.ptr());
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const dpnoise::entropy_error& e) {
            py::set_error(entropy_error, e.what());
        }
    });
    dpnoise::bindings::register_random(m);
    dpnoise::bindings::register_exact(m);
}
