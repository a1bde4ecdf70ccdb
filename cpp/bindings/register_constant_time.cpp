// Bindings for the constant-time samplers (dpnoise/exact/constant_time/). Glue only: check the
// public parameter, release the GIL, call the request layer with the constant-time law (its
// table is built or taken from the cache before any draw).
//   discrete_laplace_constant_time(gen, num, den, n, threads)    scale num/den, 0 <= scale <= 2^20
//   discrete_gaussian_constant_time(gen, num, den, n, threads)   variance num/den, <= 2^40
//   noisy_grid_constant_time(gen, law, values, k, num, den, bound, threads)      the grid release
//   noisy_integers_constant_time(gen, law, values, num, den, bound, threads)     the integer release
//       (request::noisy_grid / noisy_integers with constant-time noise and no branch on values;
//        law "laplace": scale num/den, "gaussian": variance num/den)
//   _constant_time_laplace_info(num, den)   -> (digits, max_width)           (tests, docs)
//   _constant_time_gaussian_info(num, den)  -> (leaves, entries, inner nodes, tv_bound_log2)
#include <cstdint>
#include <string>

#include "bindings.hpp"
#include "dpnoise/exact/constant_time/laws.hpp"
#include "dpnoise/exact/constant_time/noisy_release.hpp"
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

// Calls fn.template operator()<Law>() for the law named `law` (public).
template <class Fn>
void with_law(const std::string& law, Fn&& fn) {
    if (law == "laplace") fn(exact::ct::ConstantTimeDiscreteLaplace{});
    else if (law == "gaussian") fn(exact::ct::ConstantTimeDiscreteGaussian{});
    else throw std::invalid_argument("law must be 'laplace' or 'gaussian'");
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
        "noisy_grid_constant_time",
        [](GeneratorHandle& h, const std::string& law, const py::array_t<double, py::array::c_style | py::array::forcecast>& values,
           int k, uint64_t num, uint64_t den, int64_t bound, unsigned threads) {
            const size_t n = static_cast<size_t>(values.size());
            py::array_t<double> out(static_cast<py::ssize_t>(n));
            double* p = out.mutable_data();
            const double* v = values.data();
            with_law(law, [&](auto tag) {
                using Law = decltype(tag);
                const typename Law::Param param = Law::make({num, den});
                with_family_nogil(h, [&](auto& f) { exact::ct::noisy_grid_constant_time<Law>(f, param, v, 1, k, bound, p, n, threads); });
            });
            return out;
        },
        py::arg("gen"), py::arg("law"), py::arg("values"), py::arg("k"), py::arg("num"), py::arg("den"), py::arg("bound"),
        py::arg("threads"), "noisy_grid with constant-time noise (laplace: scale num/den; gaussian: variance num/den).");
    m.def(
        "noisy_integers_constant_time",
        [](GeneratorHandle& h, const std::string& law, const py::array_t<int64_t, py::array::c_style | py::array::forcecast>& values,
           uint64_t num, uint64_t den, int64_t bound, unsigned threads) {
            const size_t n = static_cast<size_t>(values.size());
            py::array_t<int64_t> out(static_cast<py::ssize_t>(n));
            int64_t* p = out.mutable_data();
            const int64_t* v = values.data();
            with_law(law, [&](auto tag) {
                using Law = decltype(tag);
                const typename Law::Param param = Law::make({num, den});
                with_family_nogil(h, [&](auto& f) { exact::ct::noisy_integers_constant_time<Law>(f, param, v, 1, bound, p, n, threads); });
            });
            return out;
        },
        py::arg("gen"), py::arg("law"), py::arg("values"), py::arg("num"), py::arg("den"), py::arg("bound"),
        py::arg("threads"), "noisy_integers with constant-time noise.");
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
