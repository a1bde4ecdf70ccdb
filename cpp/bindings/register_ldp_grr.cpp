// Binding of the local-DP "grr" randomizer (k-ary randomized response): the same exact kernel
// and request path as the central mechanism (register_categorical.cpp), registered under
// _core.ldp so that every LDP randomizer is reached the same way (gen, items, ..., gamma_num,
// gamma_den, threads) with the configuration's exact gamma.
#include "bindings.hpp"

namespace dpnoise::bindings {

static void register_ldp_grr(py::module_& m) {
    def_randomized_response(
        m, "grr_privatize",
        "GRR clients (Warner 1965; Wang et al. 2017, section 4.1): each item (values) in [0, d) (categories)\n"
        "kept with probability e^g/(e^g + d - 1), g = gamma_num/gamma_den, else one of the d - 1 others\n"
        "uniformly, exactly. Returns int64 values of the items' shape.");
}

DPNOISE_LDP_AREA(grr, register_ldp_grr);

}  // namespace dpnoise::bindings
