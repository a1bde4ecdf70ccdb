// Bindings for the exact samplers. Each family has two entry points:
//   NAME(gen, num, den, n, threads)             one parameter for all n samples
//   NAME_each(gen, nums, dens, index, threads)  sample i uses parameter index[i]
// Parameters are validated (GIL held) before any randomness is drawn; the loops run with the
// GIL released.
#include <string>
#include <vector>

#include "bindings.hpp"
#include "dpnoise/exact/bernoulli.hpp"
#include "dpnoise/exact/discrete_gaussian.hpp"
#include "dpnoise/exact/discrete_laplace.hpp"
#include "dpnoise/exact/geometric.hpp"
#include "dpnoise/exact/rational.hpp"
#include "dpnoise/exact/uniform.hpp"
#include "dpnoise/random/stream_fill.hpp"

namespace dpnoise::bindings {

namespace {

using Bits = random::BitReader<random::KeystreamWords>;
using u64_array = py::array_t<uint64_t, py::array::c_style | py::array::forcecast>;
using i64_array = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;

template <class T, class Param, class Draw>
py::array_t<T> sample_same(GeneratorHandle& h, const Param& param, size_t n, unsigned threads, Draw draw) {
    py::array_t<T> out(static_cast<py::ssize_t>(n));
    T* p = out.mutable_data();
    py::gil_scoped_release release;
    random::sample_into(*h.gen, p, n, threads, [&](Bits& bits, size_t) { return draw(bits, param); });
    return out;
}

template <class T, class Param, class Build, class Draw>
py::array_t<T> sample_each(GeneratorHandle& h, const u64_array& nums, const u64_array& dens,
                           const i64_array& index, unsigned threads, Build build, Draw draw) {
    if (nums.size() != dens.size()) throw std::invalid_argument("numerator and denominator arrays differ in length");
    std::vector<Param> params;
    params.reserve(static_cast<size_t>(nums.size()));
    for (py::ssize_t k = 0; k < nums.size(); ++k) params.push_back(build(nums.data()[k], dens.data()[k]));
    const int64_t* idx = index.data();
    const size_t n = static_cast<size_t>(index.size());
    for (size_t i = 0; i < n; ++i)
        if (idx[i] < 0 || idx[i] >= static_cast<int64_t>(params.size()))
            throw std::invalid_argument("parameter index out of range");
    py::array_t<T> out(static_cast<py::ssize_t>(n));
    T* p = out.mutable_data();
    py::gil_scoped_release release;
    random::sample_into(*h.gen, p, n, threads,
                        [&](Bits& bits, size_t i) { return draw(bits, params[static_cast<size_t>(idx[i])]); });
    return out;
}

exact::Rational build_scale(uint64_t num, uint64_t den) { return exact::checked_rational(num, den, "scale"); }
exact::Rational build_probability(uint64_t num, uint64_t den) {
    const exact::Rational r = exact::checked_rational(num, den, "p");
    if (r.num > r.den) throw std::invalid_argument("p must be in [0, 1]");
    return r;
}
exact::Rational build_gamma(uint64_t num, uint64_t den) { return exact::checked_rational(num, den, "gamma"); }
exact::DiscreteGaussianParams build_variance(uint64_t num, uint64_t den) { return exact::DiscreteGaussianParams(num, den); }

auto draw_laplace = [](Bits& bits, const exact::Rational& r) { return exact::discrete_laplace(bits, r.num, r.den); };
auto draw_geometric = [](Bits& bits, const exact::Rational& r) {
    return static_cast<int64_t>(exact::geometric_exp(bits, r.num, r.den));
};
auto draw_gaussian = [](Bits& bits, const exact::DiscreteGaussianParams& p) { return exact::discrete_gaussian(bits, p); };
auto draw_bernoulli = [](Bits& bits, const exact::Rational& r) {
    return exact::bernoulli_rational<Bits, uint64_t>(bits, r.num, r.den);
};
auto draw_bernoulli_exp = [](Bits& bits, const exact::Rational& r) {
    return exact::bernoulli_exp_minus<Bits, uint64_t>(bits, r.num, r.den);
};

template <class T, class Param, class Build, class Draw>
void def_family(py::module_& m, const char* name, Build build, Draw draw, const char* doc) {
    m.def(
        name,
        [build, draw](GeneratorHandle& h, uint64_t num, uint64_t den, size_t n, unsigned threads) {
            const Param param = build(num, den);
            return sample_same<T, Param>(h, param, n, threads, draw);
        },
        py::arg("gen"), py::arg("num"), py::arg("den"), py::arg("n"), py::arg("threads"), doc);
    m.def(
        (std::string(name) + "_each").c_str(),
        [build, draw](GeneratorHandle& h, const u64_array& nums, const u64_array& dens, const i64_array& index,
                      unsigned threads) { return sample_each<T, Param>(h, nums, dens, index, threads, build, draw); },
        py::arg("gen"), py::arg("nums"), py::arg("dens"), py::arg("index"), py::arg("threads"), doc);
}

}  // namespace

void register_exact(py::module_& m) {
    def_family<int64_t, exact::Rational>(m, "discrete_laplace", build_scale, draw_laplace,
                                         "Discrete Laplace, scale num/den: P(x) ~ exp(-|x| den/num).");
    def_family<int64_t, exact::Rational>(m, "geometric", build_scale, draw_geometric,
                                         "Geometric on {0,1,...}, scale num/den: P(k) ~ exp(-k den/num).");
    def_family<int64_t, exact::DiscreteGaussianParams>(m, "discrete_gaussian", build_variance, draw_gaussian,
                                                       "Discrete Gaussian, variance num/den.");
    def_family<bool, exact::Rational>(m, "bernoulli", build_probability, draw_bernoulli, "Bernoulli(num/den).");
    def_family<bool, exact::Rational>(m, "bernoulli_exp", build_gamma, draw_bernoulli_exp,
                                      "Bernoulli(exp(-num/den)).");
    m.def(
        "integers",
        [](GeneratorHandle& h, int64_t low, uint64_t span_minus_one, size_t n, unsigned threads) {
            if (static_cast<__int128>(low) + static_cast<__int128>(span_minus_one) > INT64_MAX)
                throw std::overflow_error("integers: low + span exceeds int64");
            return sample_same<int64_t, uint64_t>(h, span_minus_one, n, threads, [low](Bits& bits, uint64_t m) {
                // low + u computed in unsigned arithmetic: the caller guarantees low + m <= INT64_MAX.
                return static_cast<int64_t>(static_cast<uint64_t>(low) + exact::uniform_at_most(bits, m));
            });
        },
        py::arg("gen"), py::arg("low"), py::arg("span_minus_one"), py::arg("n"), py::arg("threads"),
        "Uniform integers on [low, low + span_minus_one].");
}

}  // namespace dpnoise::bindings
