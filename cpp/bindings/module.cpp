// The dpnoise._core extension module: exceptions, then one register_* call per area.
#include <initializer_list>

#include "bindings.hpp"
#include "dpnoise/errors.hpp"

namespace py = pybind11;

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
    using namespace dpnoise::bindings;
    for (auto register_area : {register_random, register_exact, register_testing, register_categorical, register_capi,
                               register_selection, register_mechanisms, register_constant_time})
        register_area(m);
    // local DP: every protocol kernel under one submodule, _core.ldp
    py::module_ ldp = m.def_submodule("ldp", "local-DP protocol kernels: randomizers, report checks, aggregation");
    for (auto register_area : {register_ldp_grr, register_ldp_unary, register_ldp_hashing, register_ldp_hadamard,
                               register_ldp_zmatrix, register_ldp_heavy_hitters, register_ldp_numeric})
        register_area(ldp);
}
