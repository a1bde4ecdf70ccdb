// Bindings of the local-DP hadamard protocols (dpnoise/ldp/): glue only (convert, release the GIL, call).
#include "bindings.hpp"

namespace dpnoise::bindings {

void register_ldp_hadamard(py::module_& m) { (void)m; }

}  // namespace dpnoise::bindings
