// Test-only entry points (names start with an underscore and end in _for_testing): they reach
// paths of the exact samplers that production calls take too rarely to test statistically,
// and expose certified constants for comparison with high-precision arithmetic. No public API
// calls them.
#include <string>

#include "bindings.hpp"
#include "dpnoise/exact/certified_exp.hpp"
#include "dpnoise/exact/discrete_gaussian_table.hpp"
#include "dpnoise/exact/geometric_table.hpp"
#include "dpnoise/exact/randomized_response.hpp"
#include "dpnoise/exact/rational.hpp"
#include "dpnoise/exact/refinement_policy.hpp"
#include "dpnoise/random/stream_fill.hpp"
#include "dpnoise/request.hpp"

namespace dpnoise::bindings {

namespace {

using Bits = random::BitReader<random::KeystreamWords>;
using Forced = exact::ForceRefinement;

template <class Draw>
py::array_t<int64_t> sample_one_stream(GeneratorHandle& h, size_t n, Draw draw) {
    auto out = new_array<int64_t>(n);
    int64_t* p = out.mutable_data();
    if (!h.gen) throw std::invalid_argument("the forced-refinement hooks take a ChaCha20 generator");
    py::gil_scoped_release release;
    random::sample_into<request::DiscreteLaplace::kOutputsPerStream>(*h.gen, p, n, 1u,
                                                                     [&](Bits& bits, size_t i) { return draw(bits, i); });
    return out;
}

}  // namespace

void register_testing(py::module_& m) {
    m.def(
        "_sample_forced_refinement_for_testing",
        [](const std::string& law, GeneratorHandle& h, uint64_t num, uint64_t den, size_t n) {
            if (law == "discrete_laplace" || law == "geometric") {
                const exact::Rational r = exact::checked_rational(num, den, "scale");
                const bool laplace = law == "discrete_laplace";
                const exact::GeometricTable g(r.num, r.den, laplace ? exact::GeometricTable::Law::laplace
                                                                    : exact::GeometricTable::Law::geometric);
                if (laplace)
                    return sample_one_stream(h, n, [&g](Bits& bits, size_t) { return exact::discrete_laplace_table<Bits, Forced>(bits, g); });
                return sample_one_stream(h, n, [&g](Bits& bits, size_t) {
                    return static_cast<int64_t>(exact::geometric_table<Bits, Forced>(bits, g));
                });
            }
            if (law == "discrete_gaussian") {
                const exact::DiscreteGaussianTable g{exact::DiscreteGaussianParams(num, den)};
                return sample_one_stream(h, n, [&g](Bits& bits, size_t) { return exact::discrete_gaussian_table<Bits, Forced>(bits, g); });
            }
            throw std::invalid_argument("law must be 'discrete_laplace', 'geometric' or 'discrete_gaussian'");
        },
        py::arg("law"), py::arg("gen"), py::arg("num"), py::arg("den"), py::arg("n"),
        "Test hook: n samples of the table sampler for `law` (scale num/den, or variance num/den for\n"
        "the discrete Gaussian) with every decision settled by the exact refinement path.");
    m.def(
        "_exp_enclosure_for_testing",
        [](bool negative, const py::int_& num, const py::int_& den, int L) {
            if (L < 1 || L > 64) throw std::invalid_argument("limbs must be in [1, 64]");
            const exact::Enclosure e = exact::exp_rational(big_from_py(num, "num"), big_from_py(den, "den"), negative, L);
            return py::make_tuple(big_to_py(e.lo), big_to_py(e.hi));
        },
        py::arg("negative"), py::arg("num"), py::arg("den"), py::arg("limbs"),
        "Test hook: [lo, hi] with lo/2^(64 limbs) <= e^(-+num/den) <= hi/2^(64 limbs).");
    m.def(
        "_randomized_response_keep_bounds_for_testing",
        [](uint64_t categories, const py::int_& gamma_num, const py::int_& gamma_den, int L) {
            if (L < 1 || L > 64) throw std::invalid_argument("limbs must be in [1, 64]");
            const exact::RandomizedResponseKernel kernel = rr_kernel(categories, gamma_num, gamma_den);
            const exact::RatioEnclosure p = kernel.keep_probability(L);
            const size_t shift = static_cast<size_t>(64 * L);
            const exact::BigUint lo = exact::divmod(exact::shift_left(p.num.lo, shift), p.den.hi).first;
            const auto [hi_q, hi_r] = exact::divmod(exact::shift_left(p.num.hi, shift), p.den.lo);
            const exact::BigUint hi = hi_r.is_zero() ? hi_q : exact::add_small(hi_q, 1);
            return py::make_tuple(big_to_py(lo), big_to_py(hi), kernel.keep_bounds.lo, kernel.keep_bounds.hi);
        },
        py::arg("categories"), py::arg("gamma_num"), py::arg("gamma_den"), py::arg("limbs"),
        "Test hook: (lo, hi, lo32, hi32) with lo/2^(64 limbs) <= p <= hi/2^(64 limbs) for the keep\n"
        "probability p = 1/(1 + (k-1) e^-gamma) of randomized response, and the kernel's own 32-bit\n"
        "decision bounds lo32 <= p 2^32 <= hi32.");
    m.def(
        "_randomized_response_forced_refinement_for_testing",
        [](GeneratorHandle& h, const i64_array& values, uint64_t categories, const py::int_& gamma_num,
           const py::int_& gamma_den) {
            const exact::RandomizedResponseKernel kernel = rr_kernel(categories, gamma_num, gamma_den);
            const int64_t* in = values.data();
            check_below(values, categories, "values must be category indices in [0, categories)");
            return sample_one_stream(h, static_cast<size_t>(values.size()), [&kernel, in](Bits& bits, size_t i) {
                return kernel.respond<Bits, Forced>(bits, in[i]);
            });
        },
        py::arg("gen"), py::arg("values"), py::arg("categories"), py::arg("gamma_num"), py::arg("gamma_den"),
        "Test hook: randomized response with every keep decision settled by the exact refinement path.");
}

}  // namespace dpnoise::bindings
