// The dpnoise._core extension module: exceptions, then one register_* call per area.
#include <algorithm>
#include <initializer_list>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "dpnoise/errors.hpp"

namespace py = pybind11;

namespace dpnoise::bindings {
std::vector<ldp_area>& ldp_areas() {
    static std::vector<ldp_area> areas;  // constructed on first use, before any registrar runs
    return areas;
}
}  // namespace dpnoise::bindings

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
                               register_selection, register_mechanisms, register_constant_time, register_prepared})
        register_area(m);
    // local DP: every protocol kernel under one submodule, _core.ldp; each family's file registers
    // itself (DPNOISE_LDP_AREA), and they run in name order
    py::module_ ldp = m.def_submodule("ldp", "local-DP protocol kernels: randomizers, report checks, aggregation");
    std::vector<ldp_area> areas = ldp_areas();
    std::sort(areas.begin(), areas.end(),
              [](const ldp_area& a, const ldp_area& b) { return std::string(a.name) < std::string(b.name); });
    for (const ldp_area& area : areas) area.define(ldp);
}
