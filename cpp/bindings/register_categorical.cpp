// Bindings for the categorical mechanisms' kernels: k-ary randomized response. Arguments are
// checked with the GIL held and before any randomness is drawn; the loop runs with the GIL
// released, through the request layer (chunk c always reads stream c, so the output does not
// depend on `threads`).
#include <string>
#include <vector>

#include "bindings.hpp"
#include "dpnoise/exact/randomized_response.hpp"
#include "dpnoise/mechanism_kernels.hpp"
#include "dpnoise/request.hpp"

namespace dpnoise::bindings {

namespace {

using i64_array = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;

// The category indices as a C-contiguous int64 array (a copy when the layout or dtype differs);
// integer and bool dtypes only, so that no float is silently truncated to a category.
i64_array category_indices(const py::array& values) {
    const char kind = values.dtype().kind();
    if (kind != 'i' && kind != 'u' && kind != 'b') throw py::type_error("values must be an integer array of category indices");
    i64_array x = i64_array::ensure(values);
    if (!x) throw py::type_error("values must be an integer array of category indices");
    return x;
}

}  // namespace

void register_categorical(py::module_& m) {
    m.def(
        "randomized_response",
        [](GeneratorHandle& h, const py::array& values, uint64_t categories, const py::int_& gamma_num,
           const py::int_& gamma_den, unsigned threads) {
            const exact::RandomizedResponseKernel kernel(categories, big_from_py(gamma_num, "gamma_num"),
                                                         big_from_py(gamma_den, "gamma_den"));
            const i64_array x = category_indices(values);
            const int64_t* in = x.data();
            const size_t n = static_cast<size_t>(x.size());
            // every value in [0, k) before any randomness; the message never echoes a value
            for (size_t i = 0; i < n; ++i)
                if (in[i] < 0 || static_cast<uint64_t>(in[i]) >= categories)
                    throw std::invalid_argument("values must be category indices in [0, categories)");
            std::vector<py::ssize_t> shape(x.shape(), x.shape() + x.ndim());
            py::array_t<int64_t> out(shape);
            int64_t* p = out.mutable_data();
            with_family_nogil(h, [&](auto& family) { request::randomized_response(family, kernel, in, p, n, threads); });
            return out;
        },
        py::arg("gen"), py::arg("values"), py::arg("categories"), py::arg("gamma_num"), py::arg("gamma_den"),
        py::arg("threads"),
        "k-ary randomized response (Warner 1965; Kairouz, Oh & Viswanath 2016): each value in\n"
        "[0, categories) is kept with probability 1/(1 + (k-1) e^-gamma), gamma = gamma_num/gamma_den,\n"
        "else replaced by one of the k-1 other categories uniformly. Exact (no floating point).");
}

}  // namespace dpnoise::bindings
