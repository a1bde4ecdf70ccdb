// Bindings for the categorical mechanisms' kernels: k-ary randomized response. Arguments are
// checked with the GIL held and before any randomness is drawn; the loop runs with the GIL
// released, through the request layer (chunk c always reads stream c, so the output does not
// depend on `threads`).
#include "bindings.hpp"
#include "dpnoise/exact/randomized_response.hpp"
#include "dpnoise/mechanism_kernels.hpp"
#include "dpnoise/request.hpp"

namespace dpnoise::bindings {

namespace {

py::array_t<int64_t> randomized_response(GeneratorHandle& h, const py::array& values, uint64_t categories,
                                         const py::int_& gamma_num, const py::int_& gamma_den, unsigned threads) {
    const exact::RandomizedResponseKernel kernel = rr_kernel(categories, gamma_num, gamma_den);
    const i64_array x = integer_array<int64_t>(values, "values must be an integer array of category indices");
    const int64_t* in = x.data();
    const size_t n = static_cast<size_t>(x.size());
    check_below(in, n, categories, "values must be category indices in [0, categories)");
    py::array_t<int64_t> out(std::vector<py::ssize_t>(x.shape(), x.shape() + x.ndim()));
    int64_t* p = out.mutable_data();
    with_family_nogil(h, [&](auto& family) { request::randomized_response(family, kernel, in, p, n, threads); });
    return out;
}

}  // namespace

void def_randomized_response(py::module_& m, const char* name, const char* doc) {
    m.def(name, &randomized_response, py::arg("gen"), py::arg("values"), py::arg("categories"), py::arg("gamma_num"),
          py::arg("gamma_den"), py::arg("threads"), doc);
}

void register_categorical(py::module_& m) {
    def_randomized_response(
        m, "randomized_response",
        "k-ary randomized response (Warner 1965; Kairouz, Oh & Viswanath 2016): each value in\n"
        "[0, categories) is kept with probability 1/(1 + (k-1) e^-gamma), gamma = gamma_num/gamma_den,\n"
        "else replaced by one of the k-1 other categories uniformly. Exact (no floating point).");
}

}  // namespace dpnoise::bindings
