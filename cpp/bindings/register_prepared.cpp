// Bindings for prepared parameters: a law, a grid release or a randomized-response kernel whose
// parameter is checked and converted once (request::Prepared, request.hpp) and then serves
// many calls. Glue only: the Python layer keeps these objects (a Generator's recently used
// scalar parameters, a mechanism's plans) and calls them with one crossing per release.
//   PreparedDiscreteLaplace(num, den) ... .draw(gen)      one value: the same draw as
//                                                        discrete_laplace(gen, num, den, 1, 1)[0]
//   GridRelease(law, num, den, k, bound)                  a mechanism plan's kernel:
//       .real(gen, x) / .integer(gen, x)                  one value (the same draw as the array
//                                                        kernels on one value)
//       .array(gen, values, threads) / .integers(...)     noisy_grid_into (float64, a new array) /
//                                                        noisy_integers
//       .into(gen, values, out, threads)                  noisy_grid_into (float32 or float64)
//   CategoricalRelease(categories, gamma_num, gamma_den)  randomized response: .one(gen, v), .array(...)
// Arguments are checked with the GIL held, before any randomness is drawn. A single value is
// drawn with the GIL held (no loop: a few hundred nanoseconds); arrays release it.
#include <pybind11/stl.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "finite_values.hpp"
// NumPy's C API in this unit only, for its scalars: a scalar draw returns numpy.int64 or
// numpy.bool_, as the array path's element does, made here without a second call from Python
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL dpnoise_prepared_ARRAY_API
#include <numpy/arrayobject.h>

#include "dpnoise/exact/randomized_response.hpp"
#include "dpnoise/mechanism_kernels.hpp"
#include "dpnoise/parallel.hpp"
#include "dpnoise/request.hpp"

namespace dpnoise::bindings {

namespace {

// One value with the GIL held: the generator's own lock serialises the stream (NumPy bit
// generators: their Python lock, taken by with_family).
template <class F>
void with_family_held(GeneratorHandle& h, F&& f) {
    h.with_family([&](auto& family) { f(family); });
}

// The NumPy scalar of a draw: numpy.int64 or numpy.bool_ (the descriptors live as long as NumPy).
PyArray_Descr* descr_of(int type) {
    PyArray_Descr* d = PyArray_DescrFromType(type);
    if (!d) throw py::error_already_set();
    return d;  // a reference kept for the life of the module
}
inline py::object numpy_scalar(int64_t v) {
    static PyArray_Descr* const d = descr_of(NPY_INT64);
    PyObject* o = PyArray_Scalar(&v, d, nullptr);
    if (!o) throw py::error_already_set();
    return py::reinterpret_steal<py::object>(o);
}
inline py::object numpy_scalar(bool v) {
    static PyArray_Descr* const d = descr_of(NPY_BOOL);
    npy_bool b = v ? NPY_TRUE : NPY_FALSE;
    PyObject* o = PyArray_Scalar(&b, d, nullptr);
    if (!o) throw py::error_already_set();
    return py::reinterpret_steal<py::object>(o);
}

template <class Law, class Out>
void def_prepared_law(py::module_& m, const char* name, const char* doc) {
    using P = request::Prepared<Law>;
    py::class_<P, std::shared_ptr<P>>(m, name, doc)
        .def(py::init([](uint64_t num, uint64_t den) { return std::make_shared<P>(Law::make({num, den})); }),
             py::arg("num"), py::arg("den"))
        .def(
            "draw",
            [](const P& p, GeneratorHandle& h) {
                Out out{};
                with_family_held(h, [&](auto& family) { request::sample_same<Law>(family, p, &out, 1, 1); });
                return numpy_scalar(out);
            },
            py::arg("gen"),
            "One value as a NumPy scalar (the small-request sampler: the same draw as the unprepared request of one value).")
        .def(
            "draw_n",
            [](const P& p, GeneratorHandle& h, size_t n, unsigned threads) {
                auto out = new_array<Out>(n);
                Out* o = out.mutable_data();
                with_family_nogil(h, [&](auto& family) { request::sample_same<Law>(family, p, o, n, threads); });
                return out;
            },
            py::arg("gen"), py::arg("n"), py::arg("threads"), "n values by the prepared rule (request.hpp).")
        .def_property_readonly("has_tables", [](const P& p) { return static_cast<bool>(p.table); },
                               "Whether the tables were built when prepared (their cost is within the prepared limit).");
}

// all_finite over up to `threads` threads, one contiguous slice each, for arrays of 2^20 values
// or more (a pass over memory, shared like the draws that follow it; smaller ones on this thread).
template <class T>
bool all_finite_over_threads(const T* v, ptrdiff_t stride, size_t n, unsigned threads) {
    constexpr size_t kMinPerThread = size_t{1} << 19;
    const size_t parts = std::min<size_t>(threads, n / kMinPerThread);
    if (parts <= 1) return all_finite(v, stride, n);
    std::atomic<bool> finite{true};
    parallel_tasks(parts, threads, [&](size_t t) {
        const size_t b = t * n / parts, e = (t + 1) * n / parts;
        if (!all_finite(v + static_cast<ptrdiff_t>(b) * stride, stride, e - b)) finite.store(false, std::memory_order_relaxed);
    });
    return finite.load();
}

// A mechanism plan's grid kernel: law "laplace" (scale num/den) or "gaussian" (variance num/den),
// grid exponent k (None: integers), clamp bound.
class GridRelease {
public:
    GridRelease(const std::string& law, uint64_t num, uint64_t den, std::optional<int> k, int64_t bound)
        : k_(k), bound_(bound) {
        if (law == "laplace") laplace_ = std::make_shared<request::Prepared<request::DiscreteLaplace>>(request::DiscreteLaplace::make({num, den}));
        else if (law == "gaussian") gaussian_ = std::make_shared<request::Prepared<request::DiscreteGaussian>>(request::DiscreteGaussian::make({num, den}));
        else throw std::invalid_argument("law must be 'laplace' or 'gaussian'");
        // every check the kernels make, here, when the plan is prepared (before any charge):
        // nothing the kernels check can then fail after a budget has been charged
        if (k_) {
            if (*k_ < -1022 || *k_ > 970) throw std::invalid_argument("grid exponent k must be in [-1022, 970]");
            if (bound < 0 || bound > request::GridKernel::kMaxBound) throw std::invalid_argument("bound must be in [0, 2^52]");
        } else if (bound < 0 || bound >= static_cast<int64_t>(exact::kMaxRationalPart)) {
            throw std::invalid_argument("bound must be in [0, 2^62)");
        }
    }

    template <class F>
    void with_law(F&& f) const {
        if (laplace_) f(request::DiscreteLaplace{}, *laplace_);
        else f(request::DiscreteGaussian{}, *gaussian_);
    }

    double real(GeneratorHandle& h, double x) const {
        const int k = grid();
        double out = 0;
        with_law([&](auto law, const auto& p) {
            using Law = decltype(law);
            with_family_held(h, [&](auto& f) { request::noisy_grid<Law>(f, p, &x, 1, k, bound_, &out, 1, 1); });
        });
        return out;
    }

    int64_t integer(GeneratorHandle& h, int64_t x) const {
        integers_only();
        int64_t out = 0;
        with_law([&](auto law, const auto& p) {
            using Law = decltype(law);
            with_family_held(h, [&](auto& f) { request::noisy_integers<Law>(f, p, &x, 1, bound_, &out, 1, 1); });
        });
        return out;
    }

    py::array_t<double> array(GeneratorHandle& h, const py::array& values, unsigned threads) const {
        const int k = grid();
        const f64_array v = f64_array::ensure(values);
        if (!v) throw py::type_error("values must be a float64 array");
        const double* in = v.data();
        const auto n = static_cast<size_t>(v.size());
        bool finite = true;
        {  // NaN and infinity refused before any draw, as release() does (the grid kernel assumes it)
            std::optional<py::gil_scoped_release> unlocked;
            if (n > 4096) unlocked.emplace();
            finite = all_finite_over_threads(in, ptrdiff_t{1}, n, threads);
        }
        if (!finite) throw std::invalid_argument("values must be finite (found NaN or infinity)");
        auto out = new_array<double>(n);
        double* o = out.mutable_data();
        with_law([&](auto law, const auto& p) {
            using Law = decltype(law);
            with_family_nogil(h, [&](auto& f) { request::noisy_grid_into<Law>(f, p, in, ptrdiff_t{1}, k, bound_, o, n, threads); });
        });
        return out;
    }

    py::array_t<int64_t> integers(GeneratorHandle& h, const py::array& values, unsigned threads) const {
        integers_only();
        const i64_array v = integer_array<int64_t>(values, "values must be an integer array");
        auto out = new_array<int64_t>(static_cast<size_t>(v.size()));
        const int64_t* in = v.data();
        int64_t* o = out.mutable_data();
        const auto n = static_cast<size_t>(v.size());
        with_law([&](auto law, const auto& p) {
            using Law = decltype(law);
            with_family_nogil(h, [&](auto& f) { request::noisy_integers<Law>(f, p, in, 1, bound_, o, n, threads); });
        });
        return out;
    }

    // values: 1-D float32/float64, any whole-element stride; out: 1-D, the same dtype, contiguous,
    // writable, as long as values (it may be values itself). Checked before any draw.
    template <class T>
    void into_typed(GeneratorHandle& h, const py::array& values, py::array& out, unsigned threads) const {
        constexpr auto size = static_cast<py::ssize_t>(sizeof(T));
        if (values.ndim() != 1 || out.ndim() != 1) throw std::invalid_argument("values and out must be 1-D");
        if (!py::isinstance<py::array_t<T>>(values)) throw py::type_error("values and out must have the same float dtype");
        if (values.shape(0) != out.shape(0)) throw std::invalid_argument("out must have as many elements as values");
        if (!out.writeable()) throw std::invalid_argument("out must be writable");
        if (out.shape(0) > 1 && out.strides(0) != size) throw std::invalid_argument("out must be contiguous");
        if (values.strides(0) % size != 0) throw std::invalid_argument("values' stride must be a whole number of elements");
        const int k = grid();
        const auto* v = static_cast<const T*>(values.data());
        const ptrdiff_t stride = static_cast<ptrdiff_t>(values.strides(0) / size);
        T* o = static_cast<T*>(out.mutable_data());
        const auto n = static_cast<size_t>(out.shape(0));
        with_law([&](auto law, const auto& p) {
            using Law = decltype(law);
            with_family_nogil(h, [&](auto& f) { request::noisy_grid_into<Law>(f, p, v, stride, k, bound_, o, n, threads); });
        });
    }

    // The fast lane of a mechanism's release of an array (one crossing): values (1-D float32 or
    // float64, any whole-element stride) checked finite, then charge() (a Python callable, or
    // None: the budget's spend, with the GIL held), then the noise, written into out (1-D,
    // contiguous, writable; it may be values itself) or, out None (float64 only), into a new
    // array, both by the buffer kernel noisy_grid_into. Validate, charge, draw: nothing is drawn
    // when a check or the charge raises, and nothing can fail once the draws begin (the buffer
    // kernel clamps, never throws; 0.9.0 used the raising noisy_grid for a new array).
    py::object release(GeneratorHandle& h, const py::array& values, const py::object& out, unsigned threads,
                       const py::object& charge) const {
        if (values.ndim() != 1) throw std::invalid_argument("values must be 1-D");
        const bool f32 = py::isinstance<py::array_t<float>>(values);
        if (!f32 && !py::isinstance<py::array_t<double>>(values)) throw py::type_error("values must be float32 or float64");
        const auto n = static_cast<size_t>(values.shape(0));
        const py::ssize_t size = f32 ? 4 : 8;
        if (values.strides(0) % size != 0) throw std::invalid_argument("values' stride must be a whole number of elements");
        const ptrdiff_t stride = static_cast<ptrdiff_t>(values.strides(0) / size);
        bool finite = true;
        {
            std::optional<py::gil_scoped_release> unlocked;
            if (n > 4096) unlocked.emplace();
            if (f32) finite = all_finite_over_threads(static_cast<const float*>(values.data()), stride, n, threads);
            else finite = all_finite_over_threads(static_cast<const double*>(values.data()), stride, n, threads);
        }
        if (!finite) throw std::invalid_argument("value must be finite (found NaN or infinity)");
        py::array target;
        const bool given = !out.is_none();
        if (!given) {
            if (f32) throw std::invalid_argument("float32 values need out (the release of float32 is written into it)");
        } else {
            target = py::reinterpret_borrow<py::array>(out);
            if (target.ndim() != 1 || static_cast<size_t>(target.shape(0)) != n) throw std::invalid_argument("out must be 1-D, as long as values");
            if (f32 ? !py::isinstance<py::array_t<float>>(target) : !py::isinstance<py::array_t<double>>(target))
                throw py::type_error("out must have the values' dtype");
            if (!target.writeable()) throw std::invalid_argument("out must be writable");
            if (n > 1 && target.strides(0) != size) throw std::invalid_argument("out must be contiguous");
        }
        const int k = grid();
        if (!charge.is_none()) charge();  // the budget: before any noise, after every check
        if (given) {
            if (f32) into_typed<float>(h, values, target, threads);
            else into_typed<double>(h, values, target, threads);
            return std::move(target);
        }
        auto result = new_array<double>(n);
        double* o = result.mutable_data();
        const auto* in = static_cast<const double*>(values.data());
        with_law([&](auto law, const auto& p) {
            using Law = decltype(law);
            with_family_nogil(h, [&](auto& f) { request::noisy_grid_into<Law>(f, p, in, stride, k, bound_, o, n, threads); });
        });
        return std::move(result);
    }

    py::array into(GeneratorHandle& h, const py::array& values, py::array out, unsigned threads) const {
        if (py::isinstance<py::array_t<float>>(out)) into_typed<float>(h, values, out, threads);
        else if (py::isinstance<py::array_t<double>>(out)) into_typed<double>(h, values, out, threads);
        else throw py::type_error("out must be a float32 or float64 array");
        return out;
    }

    bool has_tables() const { return laplace_ ? static_cast<bool>(laplace_->table) : static_cast<bool>(gaussian_->table); }

private:
    int grid() const {
        if (!k_) throw std::invalid_argument("this release has no grid (integers): call integer()/integers()");
        return *k_;
    }
    void integers_only() const {
        if (k_) throw std::invalid_argument("this release is on a grid: call real()/array()/into()");
    }

    std::shared_ptr<request::Prepared<request::DiscreteLaplace>> laplace_;
    std::shared_ptr<request::Prepared<request::DiscreteGaussian>> gaussian_;
    std::optional<int> k_;
    int64_t bound_;
};

// k-ary randomized response with its exact gamma, built once (RandomizedResponse's plan).
class CategoricalRelease {
public:
    CategoricalRelease(uint64_t categories, const py::int_& gamma_num, const py::int_& gamma_den)
        : kernel_(rr_kernel(categories, gamma_num, gamma_den)), categories_(categories) {}

    int64_t one(GeneratorHandle& h, int64_t v) const {
        check_below(&v, 1, categories_, "values must be category indices in [0, categories)");
        int64_t out = 0;
        with_family_held(h, [&](auto& f) { request::randomized_response(f, kernel_, &v, &out, 1, 1); });
        return out;
    }

    py::array_t<int64_t> array(GeneratorHandle& h, const py::array& values, unsigned threads) const {
        const i64_array x = integer_array<int64_t>(values, "values must be an integer array of category indices");
        const int64_t* in = x.data();
        const auto n = static_cast<size_t>(x.size());
        check_below(in, n, categories_, "values must be category indices in [0, categories)");
        py::array_t<int64_t> out(std::vector<py::ssize_t>(x.shape(), x.shape() + x.ndim()));
        int64_t* o = out.mutable_data();
        with_family_nogil(h, [&](auto& f) { request::randomized_response(f, kernel_, in, o, n, threads); });
        return out;
    }

private:
    exact::RandomizedResponseKernel kernel_;
    uint64_t categories_;
};

}  // namespace

void register_prepared(py::module_& m) {
    if (_import_array() < 0) throw py::error_already_set();
    def_prepared_law<request::DiscreteLaplace, int64_t>(m, "PreparedDiscreteLaplace", "Discrete Laplace of scale num/den, prepared once.");
    def_prepared_law<request::Geometric, int64_t>(m, "PreparedGeometric", "Geometric of scale num/den, prepared once.");
    def_prepared_law<request::DiscreteGaussian, int64_t>(m, "PreparedDiscreteGaussian", "Discrete Gaussian of variance num/den, prepared once.");
    def_prepared_law<request::Bernoulli, bool>(m, "PreparedBernoulli", "Bernoulli(num/den), prepared once.");
    def_prepared_law<request::BernoulliExp, bool>(m, "PreparedBernoulliExp", "Bernoulli(exp(-num/den)), prepared once.");

    py::class_<GridRelease, std::shared_ptr<GridRelease>>(
        m, "GridRelease",
        "A mechanism plan's kernel, prepared once: round(x / 2^k) clamped to +-bound, plus exact noise (laplace: "
        "scale num/den; gaussian: variance num/den), times 2^k; k=None: integers clamped to +-bound.")
        .def(py::init<const std::string&, uint64_t, uint64_t, std::optional<int>, int64_t>(), py::arg("law"),
             py::arg("num"), py::arg("den"), py::arg("k"), py::arg("bound"))
        .def("real", &GridRelease::real, py::arg("gen"), py::arg("x"))
        .def("integer", &GridRelease::integer, py::arg("gen"), py::arg("x"))
        .def("array", &GridRelease::array, py::arg("gen"), py::arg("values"), py::arg("threads"))
        .def("integers", &GridRelease::integers, py::arg("gen"), py::arg("values"), py::arg("threads"))
        .def("into", &GridRelease::into, py::arg("gen"), py::arg("values"), py::arg("out"), py::arg("threads"))
        .def("release", &GridRelease::release, py::arg("gen"), py::arg("values"), py::arg("out"), py::arg("threads"),
             py::arg("charge"),
             "Check values finite, call charge() (or nothing for None), then draw into out (or a new float64 array).")
        .def_property_readonly("has_tables", &GridRelease::has_tables);

    py::class_<CategoricalRelease, std::shared_ptr<CategoricalRelease>>(
        m, "CategoricalRelease", "k-ary randomized response with an exact gamma, prepared once.")
        .def(py::init<uint64_t, const py::int_&, const py::int_&>(), py::arg("categories"), py::arg("gamma_num"),
             py::arg("gamma_den"))
        .def("one", &CategoricalRelease::one, py::arg("gen"), py::arg("value"))
        .def("array", &CategoricalRelease::array, py::arg("gen"), py::arg("values"), py::arg("threads"));
}

}  // namespace dpnoise::bindings
