// Bindings for the mechanisms' buffer kernel (dpnoise/mechanism_kernels.hpp, noisy_grid_into):
// a noisy release on the grid 2^k written into a caller's float32 or float64 buffer, which may
// be the input itself. Glue only: check the arrays (dtype, shape, writability, contiguity)
// before any draw, release the GIL, call the kernel.
// Also RandomizedResponse(constant_time=True)'s table, built when the mechanism is constructed
// and held by its plan, so that nothing is built (nothing can fail) after the budget's charge:
//   ConstantTimeRandomizedResponseTable(categories, gamma_num, gamma_den)   certified once
//   randomized_response_constant_time_with(gen, table, values, threads)     the release
#include <memory>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "finite_values.hpp"
#include "dpnoise/mechanism_kernels_constant_time.hpp"
#include "dpnoise/mechanism_kernels.hpp"
#include "dpnoise/request.hpp"

namespace dpnoise::bindings {

namespace {

// values: 1-D, T, any stride that is a whole number of elements; out: 1-D, T, contiguous,
// writable, as long as values. Checked here, before any randomness is drawn.
template <class T>
void into(GeneratorHandle& h, const std::string& law, const py::array& values, int k, uint64_t num, uint64_t den,
          int64_t bound, py::array& out, unsigned threads) {
    constexpr auto size = static_cast<py::ssize_t>(sizeof(T));
    if (values.ndim() != 1 || out.ndim() != 1) throw std::invalid_argument("values and out must be 1-D");
    if (!py::isinstance<py::array_t<T>>(values) || !py::isinstance<py::array_t<T>>(out))
        throw py::type_error("values and out must have the same float dtype");
    if (values.shape(0) != out.shape(0)) throw std::invalid_argument("out must have as many elements as values");
    if (!out.writeable()) throw std::invalid_argument("out must be writable");
    if (out.shape(0) > 1 && out.strides(0) != size) throw std::invalid_argument("out must be contiguous");
    if (values.strides(0) % size != 0) throw std::invalid_argument("values' stride must be a whole number of elements");
    const auto* v = static_cast<const T*>(values.data());
    const ptrdiff_t stride = static_cast<ptrdiff_t>(values.strides(0) / size);
    T* o = static_cast<T*>(out.mutable_data());
    const auto n = static_cast<size_t>(out.shape(0));
    // the grid kernel assumes finite values (NaN would reach an undefined float-to-integer cast)
    if (!all_finite(v, stride, n)) throw std::invalid_argument("values must be finite (found NaN or infinity)");
    if (law == "laplace") {
        const auto param = request::DiscreteLaplace::make({num, den});
        with_family_nogil(h, [&](auto& f) { request::noisy_grid_into<request::DiscreteLaplace>(f, param, v, stride, k, bound, o, n, threads); });
    } else if (law == "gaussian") {
        const auto param = request::DiscreteGaussian::make({num, den});
        with_family_nogil(h, [&](auto& f) { request::noisy_grid_into<request::DiscreteGaussian>(f, param, v, stride, k, bound, o, n, threads); });
    } else {
        throw std::invalid_argument("law must be 'laplace' or 'gaussian'");
    }
}

}  // namespace

void register_mechanisms(py::module_& m) {
    using RRTable = exact::ct::RandomizedResponseTable;
    py::class_<RRTable, std::shared_ptr<RRTable>>(
        m, "ConstantTimeRandomizedResponseTable",
        "The constant-time randomized-response table of (categories, gamma = gamma_num/gamma_den), certified when made "
        "(ValueError for bad parameters).")
        .def(py::init([](uint64_t categories, const py::int_& gamma_num, const py::int_& gamma_den) {
                 const ExactGamma gamma = exact_gamma(gamma_num, gamma_den);
                 return std::const_pointer_cast<RRTable>(exact::ct::cached_table(categories, gamma.num, gamma.den));
             }),
             py::arg("categories"), py::arg("gamma_num"), py::arg("gamma_den"));
    m.def(
        "randomized_response_constant_time_with",
        [](GeneratorHandle& h, const RRTable& table, const py::array& values, unsigned threads) {
            const i64_array x = integer_array<int64_t>(values, "values must be an integer array of category indices");
            py::array_t<int64_t> out(std::vector<py::ssize_t>(x.shape(), x.shape() + x.ndim()));
            // pointers taken with the GIL held; the kernel runs without it
            with_family_nogil(h, [&, in = x.data(), o = out.mutable_data(), n = static_cast<size_t>(x.size())](auto& f) {
                exact::ct::randomized_response_constant_time(f, table, in, o, n, threads);
            });
            return out;
        },
        py::arg("gen"), py::arg("table"), py::arg("values"), py::arg("threads"),
        "randomized_response_constant_time with a table made beforehand (nothing is built here).");
    m.def(
        "noisy_grid_into",
        [](GeneratorHandle& h, const std::string& law, const py::array& values, int k, uint64_t num, uint64_t den,
           int64_t bound, py::array out, unsigned threads) {
            if (py::isinstance<py::array_t<float>>(out)) into<float>(h, law, values, k, num, den, bound, out, threads);
            else if (py::isinstance<py::array_t<double>>(out)) into<double>(h, law, values, k, num, den, bound, out, threads);
            else throw py::type_error("out must be a float32 or float64 array");
            return out;
        },
        py::arg("gen"), py::arg("law"), py::arg("values"), py::arg("k"), py::arg("num"), py::arg("den"),
        py::arg("bound"), py::arg("out"), py::arg("threads"),
        "out[i] = (clamp(round(values[i] / 2^k), +-bound) + exact noise) * 2^k (laplace: scale num/den; gaussian: "
        "variance num/den), in float32 or float64; out may be values itself. Returns out.");
}

}  // namespace dpnoise::bindings
