// Bindings for the exact samplers and the mechanisms' grid kernel. Glue only: convert the
// arguments, release the GIL, call the request layer (dpnoise/request.hpp), which holds the
// policy (algorithm choice, tables and their cache, streams per chunk, threads).
//   NAME(gen, num, den, n, threads)             one rational parameter for all n samples
//   NAME_each(gen, nums, dens, index, threads)  sample i uses nums[index[i]] / dens[index[i]]
//   NAME_array(gen, values, name, threads)      sample i uses values[i] (float64 or int64),
//                                               converted exactly in C++ (parameters.hpp)
//   _NAME_cks / _NAME_table                     one path forced (tests, benchmarks)
#include <string>
#include <vector>

#include "bindings.hpp"
#include "dpnoise/parameters.hpp"
#include "dpnoise/mechanism_kernels.hpp"
#include "dpnoise/request.hpp"

namespace dpnoise::bindings {

namespace {

using exact::Rational;

parameters::Kind kind_of(const std::string& name) {
    if (name == "scale" || name == "gamma") return parameters::Kind::scale;
    if (name == "variance") return parameters::Kind::variance;
    if (name == "sigma") return parameters::Kind::sigma;
    if (name == "p") return parameters::Kind::probability;
    throw std::invalid_argument("unknown parameter name '" + name + "'");
}

// A 1-D view (pointer, stride in elements) of a float64 or int64 array, or a converted copy.
template <class T>
struct Strided {
    py::array_t<T> keep;
    const T* data;
    ptrdiff_t stride;
    size_t n;
};

template <class T>
Strided<T> strided(const py::array& a) {
    if (a.ndim() == 1 && py::isinstance<py::array_t<T>>(a) && a.strides(0) % static_cast<py::ssize_t>(sizeof(T)) == 0) {
        auto arr = py::array_t<T>::ensure(a);
        return {arr, arr.data(), static_cast<ptrdiff_t>(a.strides(0) / static_cast<py::ssize_t>(sizeof(T))),
                static_cast<size_t>(a.shape(0))};
    }
    auto arr = array_of<T>::ensure(a);
    if (!arr) throw py::type_error("cannot convert the array");
    return {arr, arr.data(), 1, static_cast<size_t>(arr.size())};
}

template <class Law, class Out>
void def_law(py::module_& m, const char* name, const char* doc) {
    auto same = [](GeneratorHandle& h, uint64_t num, uint64_t den, size_t n, unsigned threads, request::Path path) {
        const typename Law::Param param = Law::make({num, den});
        auto out = new_array<Out>(n);
        Out* p = out.mutable_data();
        with_family_nogil(h, [&](auto& family) { request::sample_same<Law>(family, param, p, n, threads, path); });
        return out;
    };
    m.def(name, [same](GeneratorHandle& h, uint64_t num, uint64_t den, size_t n, unsigned threads) {
              return same(h, num, den, n, threads, request::Path::automatic);
          },
          py::arg("gen"), py::arg("num"), py::arg("den"), py::arg("n"), py::arg("threads"), doc);
    if constexpr (request::kHasTables<Law>) {
        m.def((std::string("_") + name + "_cks").c_str(),
              [same](GeneratorHandle& h, uint64_t num, uint64_t den, size_t n, unsigned threads) {
                  return same(h, num, den, n, threads, request::Path::small);
              },
              py::arg("gen"), py::arg("num"), py::arg("den"), py::arg("n"), py::arg("threads"));
        m.def((std::string("_") + name + "_table").c_str(),
              [same](GeneratorHandle& h, uint64_t num, uint64_t den, size_t n, unsigned threads) {
                  return same(h, num, den, n, threads, request::Path::tables);
              },
              py::arg("gen"), py::arg("num"), py::arg("den"), py::arg("n"), py::arg("threads"));
        m.def((std::string("_") + name + "_cache_stats").c_str(), []() { return request::TableCache<Law>::stats(); },
              "Test hook: (tables held, cache hits, tables built) of this law's table cache.");
        m.def((std::string("_") + name + "_cache_clear").c_str(), []() { request::TableCache<Law>::clear(); },
              "Test hook: empty this law's table cache.");
    }
    m.def((std::string(name) + "_each").c_str(),
          [](GeneratorHandle& h, const u64_array& nums, const u64_array& dens, const i64_array& index, unsigned threads) {
              if (nums.size() != dens.size()) throw std::invalid_argument("numerator and denominator arrays differ in length");
              const uint64_t* num = nums.data();
              const uint64_t* den = dens.data();
              const size_t nparams = static_cast<size_t>(nums.size());
              const int64_t* idx = index.data();
              const size_t n = static_cast<size_t>(index.size());
              auto out = new_array<Out>(n);
              Out* p = out.mutable_data();
              std::vector<typename Law::Param> params;
              {
                  py::gil_scoped_release release;
                  std::vector<Rational> rationals(nparams);
                  for (size_t k = 0; k < nparams; ++k) rationals[k] = {num[k], den[k]};
                  params = request::make_params<Law>(rationals);
              }
              with_family_nogil(h, [&](auto& family) { request::sample_each<Law>(family, params, idx, p, n, threads); });
              return out;
          },
          py::arg("gen"), py::arg("nums"), py::arg("dens"), py::arg("index"), py::arg("threads"), doc);
    m.def((std::string(name) + "_array").c_str(),
          [](GeneratorHandle& h, const py::array& values, const std::string& pname, unsigned threads) {
              const parameters::Kind kind = kind_of(pname);
              const bool is_float = values.dtype().kind() == 'f';
              if (!is_float && values.dtype().kind() != 'i' && values.dtype().kind() != 'u')
                  throw py::type_error(pname + " must contain real numbers");
              const auto fv = is_float ? strided<double>(values) : Strided<double>{{}, nullptr, 0, 0};
              const auto iv = is_float ? Strided<int64_t>{{}, nullptr, 0, 0} : strided<int64_t>(values);
              const size_t n = is_float ? fv.n : iv.n;
              auto out = new_array<Out>(n);
              Out* p = out.mutable_data();
              parameters::Table table;
              std::vector<typename Law::Param> params;
              {
                  py::gil_scoped_release release;
                  table = is_float ? parameters::convert_array(fv.data, fv.stride, n, kind, pname.c_str())
                                   : parameters::convert_array(iv.data, iv.stride, n, kind, pname.c_str());
                  params = request::make_params<Law>(table.params);
              }
              with_family_nogil(h, [&](auto& family) { request::sample_each<Law>(family, params, table.index.data(), p, n, threads); });
              return out;
          },
          py::arg("gen"), py::arg("values"), py::arg("name"), py::arg("threads"),
          "Per-element float64 or int64 parameters, converted exactly in C++ (rounded toward more noise when they do not fit).");
}

}  // namespace

void register_exact(py::module_& m) {
    def_law<request::DiscreteLaplace, int64_t>(m, "discrete_laplace", "Discrete Laplace, scale num/den: P(x) ~ exp(-|x| den/num).");
    def_law<request::Geometric, int64_t>(m, "geometric", "Geometric on {0,1,...}, scale num/den: P(k) ~ exp(-k den/num).");
    def_law<request::DiscreteGaussian, int64_t>(m, "discrete_gaussian", "Discrete Gaussian, variance num/den.");
    def_law<request::Bernoulli, bool>(m, "bernoulli", "Bernoulli(num/den).");
    def_law<request::BernoulliExp, bool>(m, "bernoulli_exp", "Bernoulli(exp(-num/den)).");
    m.def(
        "integers",
        [](GeneratorHandle& h, int64_t low, uint64_t span_minus_one, size_t n, unsigned threads) {
            const auto param = request::Uniform::make(low, span_minus_one);
            auto out = new_array<int64_t>(n);
            int64_t* p = out.mutable_data();
            with_family_nogil(h, [&](auto& family) { request::sample_same<request::Uniform>(family, param, p, n, threads); });
            return out;
        },
        py::arg("gen"), py::arg("low"), py::arg("span_minus_one"), py::arg("n"), py::arg("threads"),
        "Uniform integers on [low, low + span_minus_one].");
    m.def(
        "convert_parameters",
        [](const py::array& values, const std::string& pname) {
            const parameters::Kind kind = kind_of(pname);
            const bool is_float = values.dtype().kind() == 'f';
            parameters::Table table;
            if (is_float) {
                const auto v = strided<double>(values);
                py::gil_scoped_release release;
                table = parameters::convert_array(v.data, v.stride, v.n, kind, pname.c_str());
            } else {
                const auto v = strided<int64_t>(values);
                py::gil_scoped_release release;
                table = parameters::convert_array(v.data, v.stride, v.n, kind, pname.c_str());
            }
            auto nums = new_array<uint64_t>(table.params.size()), dens = new_array<uint64_t>(table.params.size());
            for (size_t k = 0; k < table.params.size(); ++k) {
                nums.mutable_data()[k] = table.params[k].num;
                dens.mutable_data()[k] = table.params[k].den;
            }
            auto index = new_array<int64_t>(table.index.size());
            std::copy(table.index.begin(), table.index.end(), index.mutable_data());
            return py::make_tuple(nums, dens, index);
        },
        py::arg("values"), py::arg("name"),
        "The exact conversion NAME_array uses: (nums, dens, index) for float64/int64 parameters.");
    m.def(
        "noisy_grid",
        [](GeneratorHandle& h, const std::string& law, const py::array& values, int k, uint64_t num, uint64_t den,
           int64_t bound, unsigned threads) {
            const auto v = strided<double>(values);
            auto out = new_array<double>(v.n);
            double* p = out.mutable_data();
            if (law == "laplace") {
                const auto param = request::DiscreteLaplace::make({num, den});
                with_family_nogil(h, [&](auto& f) { request::noisy_grid<request::DiscreteLaplace>(f, param, v.data, v.stride, k, bound, p, v.n, threads); });
            } else if (law == "gaussian") {
                const auto param = request::DiscreteGaussian::make({num, den});
                with_family_nogil(h, [&](auto& f) { request::noisy_grid<request::DiscreteGaussian>(f, param, v.data, v.stride, k, bound, p, v.n, threads); });
            } else {
                throw std::invalid_argument("law must be 'laplace' or 'gaussian'");
            }
            return out;
        },
        py::arg("gen"), py::arg("law"), py::arg("values"), py::arg("k"), py::arg("num"), py::arg("den"),
        py::arg("bound"), py::arg("threads"),
        "round(values / 2^k) clamped to +-bound, plus exact noise (laplace: scale num/den; gaussian: variance num/den), times 2^k.");
    m.def(
        "noisy_integers",
        [](GeneratorHandle& h, const std::string& law, const py::array& values, uint64_t num, uint64_t den, int64_t bound,
           unsigned threads) {
            const auto v = strided<int64_t>(values);
            auto out = new_array<int64_t>(v.n);
            int64_t* p = out.mutable_data();
            if (law == "laplace") {
                const auto param = request::DiscreteLaplace::make({num, den});
                with_family_nogil(h, [&](auto& f) { request::noisy_integers<request::DiscreteLaplace>(f, param, v.data, v.stride, bound, p, v.n, threads); });
            } else if (law == "gaussian") {
                const auto param = request::DiscreteGaussian::make({num, den});
                with_family_nogil(h, [&](auto& f) { request::noisy_integers<request::DiscreteGaussian>(f, param, v.data, v.stride, bound, p, v.n, threads); });
            } else {
                throw std::invalid_argument("law must be 'laplace' or 'gaussian'");
            }
            return out;
        },
        py::arg("gen"), py::arg("law"), py::arg("values"), py::arg("num"), py::arg("den"), py::arg("bound"),
        py::arg("threads"), "values (int64) clamped to +-bound, plus exact noise.");
}

}  // namespace dpnoise::bindings
