// Bindings for the exact samplers. Each family has two entry points:
//   NAME(gen, num, den, n, threads)             one parameter for all n samples
//   NAME_each(gen, nums, dens, index, threads)  sample i uses parameter index[i]
// Parameters are validated (GIL held) before any randomness is drawn; the loops run with the
// GIL released.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "dpnoise/exact/bernoulli.hpp"
#include "dpnoise/exact/discrete_gaussian.hpp"
#include "dpnoise/exact/discrete_laplace.hpp"
#include "dpnoise/exact/geometric.hpp"
#include "dpnoise/exact/rational.hpp"
#include "dpnoise/exact/table_samplers.hpp"
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

// Per-element parameters: sample i uses params[index[i]]. With the GIL released and before any
// randomness is drawn, the parameters are built and the indices checked and counted; plan(params, uses) then returns
// draw(bits, k), the sampler for parameter k (it may build tables for the much-used ones).
template <class T, class Param, class Build, class Plan>
py::array_t<T> sample_each(GeneratorHandle& h, const u64_array& nums, const u64_array& dens,
                           const i64_array& index, unsigned threads, Build build, Plan plan) {
    if (nums.size() != dens.size()) throw std::invalid_argument("numerator and denominator arrays differ in length");
    const uint64_t* num = nums.data();
    const uint64_t* den = dens.data();
    const size_t nparams = static_cast<size_t>(nums.size());
    const int64_t* idx = index.data();
    const size_t n = static_cast<size_t>(index.size());
    py::array_t<T> out(static_cast<py::ssize_t>(n));
    T* p = out.mutable_data();
    py::gil_scoped_release release;
    std::vector<Param> params;
    params.reserve(nparams);
    for (size_t k = 0; k < nparams; ++k) params.push_back(build(num[k], den[k]));
    std::vector<size_t> uses(params.size(), 0);
    for (size_t i = 0; i < n; ++i) {
        if (idx[i] < 0 || idx[i] >= static_cast<int64_t>(params.size()))
            throw std::invalid_argument("parameter index out of range");
        ++uses[static_cast<size_t>(idx[i])];
    }
    const auto draw = plan(params, uses);
    random::sample_into(*h.gen, p, n, threads,
                        [&](Bits& bits, size_t i) { return draw(bits, static_cast<size_t>(idx[i])); });
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

// A request this large repays building the tables of table_samplers.hpp; smaller ones use the
// CKS samplers directly. Calibrated by measurement (2026-11-22): a table costs about 40 us plus
// 60 ns per certified entry to build and saves 50-80 ns per sample, so the break-even request
// is about 800 + 1.2 entries samples (from about 900 for geometric(10) to 15000 for the
// discrete Gaussian at sigma 145). Both paths are exact and have the same distribution; the
// choice depends only on (parameter, n), so seeded output stays a function of the calls made.
bool use_tables(size_t n, size_t entries) { return n >= 1024 + entries; }

// Per-element parameters: tables for at most this many distinct values per request.
constexpr size_t kMaxTablesPerRequest = 64;


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
                      unsigned threads) {
            return sample_each<T, Param>(h, nums, dens, index, threads, build,
                                         [&draw](const std::vector<Param>& params, const std::vector<size_t>&) {
                                             return [&](Bits& bits, size_t k) { return draw(bits, params[k]); };
                                         });
        },
        py::arg("gen"), py::arg("nums"), py::arg("dens"), py::arg("index"), py::arg("threads"), doc);
}


template <class Table, class Param, class Build, class MakeTable, class DrawCks>
void def_tabled_family(py::module_& m, const char* name, Build build, MakeTable make_table, DrawCks draw_cks,
                       const char* doc) {
    // NAME: picks the table sampler for large requests; _NAME_cks / _NAME_table force one path
    // (for tests and benchmarks).
    auto run = [build, make_table, draw_cks](GeneratorHandle& h, uint64_t num, uint64_t den, size_t n,
                                                          unsigned threads, int mode) {
        const Param param = build(num, den);
        bool tables = mode == 1;
        if (mode == 0) tables = use_tables(n, make_table.entries(param));
        if (!tables) return sample_same<int64_t, Param>(h, param, n, threads, draw_cks);
        const Table table = make_table(param);
        return make_table.sample(h, table, n, threads);
    };
    m.def(name, [run](GeneratorHandle& h, uint64_t num, uint64_t den, size_t n, unsigned threads) {
              return run(h, num, den, n, threads, 0);
          },
          py::arg("gen"), py::arg("num"), py::arg("den"), py::arg("n"), py::arg("threads"), doc);
    m.def((std::string("_") + name + "_cks").c_str(),
          [run](GeneratorHandle& h, uint64_t num, uint64_t den, size_t n, unsigned threads) {
              return run(h, num, den, n, threads, 2);
          },
          py::arg("gen"), py::arg("num"), py::arg("den"), py::arg("n"), py::arg("threads"));
    m.def((std::string("_") + name + "_table").c_str(),
          [run](GeneratorHandle& h, uint64_t num, uint64_t den, size_t n, unsigned threads) {
              return run(h, num, den, n, threads, 1);
          },
          py::arg("gen"), py::arg("num"), py::arg("den"), py::arg("n"), py::arg("threads"));
    // NAME_each: per-element parameters; a parameter used by enough elements of the request
    // (the same rule as above, on its own count) gets its tables, the others use CKS.
    m.def((std::string(name) + "_each").c_str(),
          [build, make_table, draw_cks](GeneratorHandle& h, const u64_array& nums, const u64_array& dens,
                                                    const i64_array& index, unsigned threads) {
              return sample_each<int64_t, Param>(
                  h, nums, dens, index, threads, build,
                  [&](const std::vector<Param>& params, const std::vector<size_t>& uses) {
                      // at most kMaxTablesPerRequest tables (tens of KiB each), for the most-used
                      // parameters (ties by position): a function of the arguments only
                      std::vector<size_t> candidates;
                      for (size_t k = 0; k < params.size(); ++k)
                          if (use_tables(uses[k], make_table.entries(params[k]))) candidates.push_back(k);
                      std::stable_sort(candidates.begin(), candidates.end(),
                                       [&](size_t x, size_t y) { return uses[x] > uses[y]; });
                      if (candidates.size() > kMaxTablesPerRequest) candidates.resize(kMaxTablesPerRequest);
                      std::vector<std::shared_ptr<const Table>> tables(params.size());
                      for (size_t k : candidates) tables[k] = std::make_shared<const Table>(make_table(params[k]));
                      return [&params, &draw_cks = draw_cks, tables = std::move(tables)](Bits& bits, size_t k) {
                          const Table* table = tables[k].get();
                          return table ? MakeTable::draw(bits, *table) : draw_cks(bits, params[k]);
                      };
                  });
          },
          py::arg("gen"), py::arg("nums"), py::arg("dens"), py::arg("index"), py::arg("threads"), doc);
}

// The table families: build a table, weigh its cost, draw one sample from it (either path,
// for mixed per-element requests), and sample a whole request from it with the sampler chosen
// once per request (one tight loop per path; choosing per sample inside one combined function
// made the small-scale loop 20% slower or faster depending on inlining).
template <exact::GeometricTable::Law L>
struct MakeGeometricTable {
    static constexpr bool kSigned = L == exact::GeometricTable::Law::laplace;
    exact::GeometricTable operator()(const exact::Rational& r) const { return exact::GeometricTable(r.num, r.den, L); }
    size_t entries(const exact::Rational& r) const { return exact::GeometricTable::entries_for(r.num, r.den); }
    static int64_t draw(Bits& bits, const exact::GeometricTable& g) {
        if constexpr (kSigned) return exact::discrete_laplace_table(bits, g);
        else return static_cast<int64_t>(exact::geometric_table(bits, g));
    }
    py::array_t<int64_t> sample(GeneratorHandle& h, const exact::GeometricTable& g, size_t n, unsigned threads) const {
        if (g.t == 0) return sample_same<int64_t>(h, g, n, threads, [](Bits&, const exact::GeometricTable&) { return int64_t{0}; });
        if (!g.direct)
            return sample_same<int64_t>(h, g, n, threads, [](Bits& bits, const exact::GeometricTable& t) {
                return exact::geometric_table_large<kSigned>(bits, t);
            });
        return sample_same<int64_t>(h, g, n, threads, [](Bits& bits, const exact::GeometricTable& t) {
            if constexpr (kSigned) return exact::discrete_laplace_direct(bits, t);
            else return static_cast<int64_t>(exact::geometric_direct(bits, t));
        });
    }
};

struct MakeGaussianTable {
    exact::DiscreteGaussianTable operator()(const exact::DiscreteGaussianParams& p) const {
        return exact::DiscreteGaussianTable(p);
    }
    size_t entries(const exact::DiscreteGaussianParams& p) const { return exact::DiscreteGaussianTable::entries_for(p); }
    static int64_t draw(Bits& bits, const exact::DiscreteGaussianTable& g) { return exact::discrete_gaussian_table(bits, g); }
    py::array_t<int64_t> sample(GeneratorHandle& h, const exact::DiscreteGaussianTable& g, size_t n,
                                unsigned threads) const {
        return sample_same<int64_t>(h, g, n, threads, [](Bits& bits, const exact::DiscreteGaussianTable& t) { return draw(bits, t); });
    }
};

}  // namespace

void register_exact(py::module_& m) {
    def_tabled_family<exact::GeometricTable, exact::Rational>(
        m, "discrete_laplace", build_scale, MakeGeometricTable<exact::GeometricTable::Law::laplace>{}, draw_laplace,
        "Discrete Laplace, scale num/den: P(x) ~ exp(-|x| den/num).");
    def_tabled_family<exact::GeometricTable, exact::Rational>(
        m, "geometric", build_scale, MakeGeometricTable<exact::GeometricTable::Law::geometric>{}, draw_geometric,
        "Geometric on {0,1,...}, scale num/den: P(k) ~ exp(-k den/num).");
    def_tabled_family<exact::DiscreteGaussianTable, exact::DiscreteGaussianParams>(
        m, "discrete_gaussian", build_variance, MakeGaussianTable{}, draw_gaussian,
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
