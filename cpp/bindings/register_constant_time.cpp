// Bindings for the constant-time samplers (dpnoise/exact/constant_time/). Glue only: check the
// public parameter, release the GIL, call the request layer with the constant-time law (its
// table is built or taken from the cache before any draw).
//   discrete_laplace_constant_time(gen, num, den, n, threads)    scale num/den, 0 <= scale <= 2^20
//   discrete_gaussian_constant_time(gen, num, den, n, threads)   variance num/den, <= 2^40
//   _constant_time_laplace_info(num, den)   -> (digits, max_width)           (tests, docs)
//   _constant_time_gaussian_info(num, den)  -> (leaves, entries, inner nodes, tv_bound_log2)
#include <cstdint>

#include "bindings.hpp"
#include "dpnoise/exact/constant_time/laws.hpp"
#include "dpnoise/request.hpp"

namespace dpnoise::bindings {

namespace {

template <class Law>
void def_constant_time(py::module_& m, const char* name, const char* doc) {
    m.def(
        name,
        [](GeneratorHandle& h, uint64_t num, uint64_t den, size_t n, unsigned threads) {
            const typename Law::Param param = Law::make({num, den});  // range checked before any draw
            py::array_t<int64_t> out(static_cast<py::ssize_t>(n));
            int64_t* p = out.mutable_data();
            with_family_nogil(h, [&](auto& family) {
                request::sample_same<Law>(family, param, p, n, threads, request::Path::tables);
            });
            return out;
        },
        py::arg("gen"), py::arg("num"), py::arg("den"), py::arg("n"), py::arg("threads"), doc);
}

}  // namespace

void register_constant_time(py::module_& m) {
    using exact::ct::ConstantTimeDiscreteGaussian;
    using exact::ct::ConstantTimeDiscreteLaplace;
    def_constant_time<ConstantTimeDiscreteLaplace>(
        m, "discrete_laplace_constant_time",
        "Constant-time discrete Laplace, scale num/den in [0, 2^20]: P(x) ~ exp(-|x| den/num).");
    def_constant_time<ConstantTimeDiscreteGaussian>(
        m, "discrete_gaussian_constant_time", "Constant-time discrete Gaussian, variance num/den in [0, 2^40].");
    m.def(
        "_constant_time_laplace_info",
        [](uint64_t num, uint64_t den) {
            const auto p = ConstantTimeDiscreteLaplace::make({num, den});
            const auto t = request::TableCache<ConstantTimeDiscreteLaplace>::get(p);
            return py::make_tuple(t->digits, static_cast<uint64_t>(t->max_width));
        },
        py::arg("num"), py::arg("den"), "Test hook: (binary digits drawn, largest certified threshold width in 2^-128).");
    m.def(
        "_constant_time_gaussian_info",
        [](uint64_t num, uint64_t den) {
            const auto p = ConstantTimeDiscreteGaussian::make({num, den});
            const auto t = request::TableCache<ConstantTimeDiscreteGaussian>::get(p);
            return py::make_tuple(t->terms.size(), t->total_entries(), t->inner_nodes, t->tv_bound_log2);
        },
        py::arg("num"), py::arg("den"),
        "Test hook: (leaf terms, table entries scanned per draw, inner nodes, log2 of the TV bound).");
}

}  // namespace dpnoise::bindings
