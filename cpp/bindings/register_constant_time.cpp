// Bindings for the constant-time samplers (dpnoise/exact/constant_time/). Glue only: check the
// public parameter, release the GIL, call the request layer with the constant-time law (its
// table is built or taken from the cache before any draw).
//   discrete_laplace_constant_time(gen, num, den, n, threads)    scale num/den, 0 <= scale <= 2^20
//   discrete_gaussian_constant_time(gen, num, den, n, threads)   variance num/den, <= 2^40
//   noisy_grid_constant_time(gen, law, values, k, num, den, bound, threads)      the grid release
//       (float32 values give float32 outputs, anything else float64)
//   noisy_integers_constant_time(gen, law, values, num, den, bound, threads)     the integer release
//       (request::noisy_grid / noisy_integers with constant-time noise and no branch on values;
//        law "laplace": scale num/den, "gaussian": variance num/den)
//   randomized_response_constant_time(gen, values, categories, gamma_num, gamma_den, threads)
//       k-ary randomized response, values clamped to [0, categories) by masks (no range check)
//   _constant_time_laplace_info(num, den)   -> (digits, max_width)           (tests, docs)
//   _constant_time_gaussian_info(num, den)  -> (leaves, entries, inner nodes, tv_bound_log2)
#include <cstdint>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "dpnoise/request_constant_time.hpp"
#include "dpnoise/mechanism_kernels_constant_time.hpp"
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

// The grid release of values as T (float32 stays float32; anything else is cast to float64).
template <class T>
py::array_t<T> noisy_grid(GeneratorHandle& h, const std::string& law, const py::array& values, int k, uint64_t num,
                          uint64_t den, int64_t bound, unsigned threads);

// Calls fn.template operator()<Law>() for the law named `law` (public).
template <class Fn>
void with_law(const std::string& law, Fn&& fn) {
    if (law == "laplace") fn(exact::ct::ConstantTimeDiscreteLaplace{});
    else if (law == "gaussian") fn(exact::ct::ConstantTimeDiscreteGaussian{});
    else throw std::invalid_argument("law must be 'laplace' or 'gaussian'");
}

template <class T>
py::array_t<T> noisy_grid(GeneratorHandle& h, const std::string& law, const py::array& values, int k, uint64_t num,
                          uint64_t den, int64_t bound, unsigned threads) {
    const array_of<T> x = array_of<T>::ensure(values);
    if (!x) throw py::type_error("values must be a real array");
    const size_t n = static_cast<size_t>(x.size());
    py::array_t<T> out = new_array<T>(n);
    T* p = out.mutable_data();
    const T* v = x.data();
    with_law(law, [&](auto tag) {
        using Law = decltype(tag);
        const typename Law::Param param = Law::make({num, den});
        with_family_nogil(h, [&](auto& f) { exact::ct::noisy_grid_constant_time<Law>(f, param, v, 1, k, bound, p, n, threads); });
    });
    return out;
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
        [](GeneratorHandle& h, const std::string& law, const py::array& values, int k, uint64_t num, uint64_t den,
           int64_t bound, unsigned threads) -> py::array {
            if (py::isinstance<py::array_t<float>>(values)) return noisy_grid<float>(h, law, values, k, num, den, bound, threads);
            return noisy_grid<double>(h, law, values, k, num, den, bound, threads);
        },
        py::arg("gen"), py::arg("law"), py::arg("values"), py::arg("k"), py::arg("num"), py::arg("den"), py::arg("bound"),
        py::arg("threads"),
        "noisy_grid with constant-time noise (laplace: scale num/den; gaussian: variance num/den); float32 values give "
        "float32 outputs.");
    m.def(
        "randomized_response_constant_time",
        [](GeneratorHandle& h, const py::array& values, uint64_t categories, const py::int_& gamma_num,
           const py::int_& gamma_den, unsigned threads) {
            const ExactGamma gamma = exact_gamma(gamma_num, gamma_den);
            const auto cached = exact::ct::cached_table(categories, gamma.num, gamma.den);  // before any draw
            const exact::ct::RandomizedResponseTable& table = *cached;
            const i64_array x = integer_array<int64_t>(values, "values must be an integer array of category indices");
            const int64_t* in = x.data();
            const size_t n = static_cast<size_t>(x.size());
            py::array_t<int64_t> out(std::vector<py::ssize_t>(x.shape(), x.shape() + x.ndim()));
            int64_t* p = out.mutable_data();
            with_family_nogil(h, [&](auto& f) { exact::ct::randomized_response_constant_time(f, table, in, p, n, threads); });
            return out;
        },
        py::arg("gen"), py::arg("values"), py::arg("categories"), py::arg("gamma_num"), py::arg("gamma_den"),
        py::arg("threads"),
        "k-ary randomized response in constant time: each value clamped to [0, categories) by masks, kept with\n"
        "probability 1/(1 + (k-1) e^-gamma) (within 2^-120), else one of the k-1 others (within 2^-130 of uniform).");
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
