// C++ unit tests of the request layer (dpnoise/request.hpp), the mechanisms' fused kernels
// (dpnoise/mechanism_kernels.hpp) and the parameter conversion
// (dpnoise/parameters.hpp): no Python. Built and run like test_core (ctest).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <vector>

#include "dpnoise/parameters.hpp"
#include "dpnoise/random/generator.hpp"
#include "dpnoise/mechanism_kernels.hpp"
#include "dpnoise/request.hpp"

#include "check.hpp"

using namespace dpnoise;

static random::StreamKey key(uint32_t w) { return test_key(w); }

// The output of a seeded request does not depend on the number of threads, and two
// generators with the same key give the same output (several chunks, one partial).
static void test_threads_do_not_change_output() {
    const size_t n = 3 * request::DiscreteLaplace::kOutputsPerStream + 1234;
    std::vector<int64_t> a(n), b(n);
    random::ChaCha20Generator g1(key(1)), g2(key(1));
    const auto p = request::DiscreteLaplace::make({7, 2});
    request::sample_same<request::DiscreteLaplace>(g1, p, a.data(), n, 1);
    request::sample_same<request::DiscreteLaplace>(g2, p, b.data(), n, 3);
    CHECK(a == b);
    // the next request of each reads fresh streams, the same ones
    request::sample_same<request::DiscreteLaplace>(g1, p, a.data(), 100, 1);
    request::sample_same<request::DiscreteLaplace>(g2, p, b.data(), 100, 2);
    CHECK(std::vector<int64_t>(a.begin(), a.begin() + 100) == std::vector<int64_t>(b.begin(), b.begin() + 100));
}

// The table cache: a second request with the same parameter builds nothing, the output is the
// same as with an empty cache, and the cache holds at most its capacity.
static void test_table_cache() {
    using Cache = request::TableCache<request::DiscreteGaussian>;
    Cache::clear();
    const size_t n = 50000;
    const auto p = request::DiscreteGaussian::make({100, 1});  // sigma 10: tables for n >= 1024 + cost
    CHECK(request::use_tables(n, request::DiscreteGaussian::table_cost(p)));
    std::vector<int64_t> a(n), b(n);
    random::ChaCha20Generator g1(key(2)), g2(key(2));
    const auto [held0, hits0, built0] = Cache::stats();
    request::sample_same<request::DiscreteGaussian>(g1, p, a.data(), n, 1);
    const auto [held1, hits1, built1] = Cache::stats();
    CHECK(built1 == built0 + 1);
    CHECK(held1 == held0 + 1);
    request::sample_same<request::DiscreteGaussian>(g2, p, b.data(), n, 1);
    const auto [held2, hits2, built2] = Cache::stats();
    CHECK(built2 == built1);  // reused
    CHECK(hits2 == hits1 + 1);
    CHECK(a == b);            // same streams, same tables: same output
    for (uint64_t v = 1; v <= Cache::kCapacity + 5; ++v) Cache::get(request::DiscreteGaussian::make({v * 1000, 1}));
    CHECK(std::get<0>(Cache::stats()) == Cache::kCapacity);
    (void)held2;
    (void)hits0;
}

// The switch rule depends on (parameter, n) only; forcing either path gives the same law (the
// statistical tests check the distributions) and a different draw sequence.
static void test_paths() {
    const auto p = request::DiscreteLaplace::make({10, 1});
    const size_t cost = request::DiscreteLaplace::table_cost(p);
    CHECK(!request::use_tables(1023 + cost, cost));
    CHECK(request::use_tables(1024 + cost, cost));
    std::vector<int64_t> a(5000), b(5000);
    random::ChaCha20Generator g1(key(3)), g2(key(3));
    request::sample_same<request::DiscreteLaplace>(g1, p, a.data(), a.size(), 1, request::Path::small);
    request::sample_same<request::DiscreteLaplace>(g2, p, b.data(), b.size(), 1, request::Path::tables);
    CHECK(a != b);
}

// Per-element parameters: an index out of range is refused before any stream is reserved.
static void test_each_checks_indices_first() {
    random::ChaCha20Generator g(key(4)), fresh(key(4));
    const std::vector<request::DiscreteLaplace::Param> params = {request::DiscreteLaplace::make({1, 1})};
    const std::vector<int64_t> index = {0, 1};
    std::vector<int64_t> out(2);
    CHECK(throws<std::invalid_argument>([&] {
        request::sample_each<request::DiscreteLaplace>(g, params, index.data(), out.data(), 2, 1);
    }));
    CHECK(g.reserve(1).first_stream == fresh.reserve(1).first_stream);  // nothing was reserved
}

// The grid kernel: rounding ties to even, the clamp, exact reconstruction, and zero noise
// (scale 0) leaves round(x / 2^k) 2^k.
static void test_noisy_grid() {
    random::ChaCha20Generator g(key(5));
    const auto zero = request::DiscreteLaplace::make({0, 1});
    const std::vector<double> x = {0.5, 1.5, 2.5, -0.5, -1.5, 0.75, 1e300, -1e300, 3.0, -0.0};
    std::vector<double> out(x.size());
    request::noisy_grid<request::DiscreteLaplace>(g, zero, x.data(), 1, -1, 100, out.data(), x.size(), 1);
    // grid 2^-1: x 2 rounded to even: 1, 3, 5, -1, -3, 1.5 -> 2, clamp 100, -100, 6, 0
    const std::vector<double> expect = {0.5, 1.5, 2.5, -0.5, -1.5, 1.0, 50.0, -50.0, 3.0, 0.0};
    CHECK(out == expect);
    // grid 2^0 with ties: 0.5 -> 0, 1.5 -> 2, 2.5 -> 2
    request::noisy_grid<request::DiscreteLaplace>(g, zero, x.data(), 1, 0, 100, out.data(), 3, 1);
    CHECK(out[0] == 0.0 && out[1] == 2.0 && out[2] == 2.0);
    // a strided input (every second element)
    request::noisy_grid<request::DiscreteLaplace>(g, zero, x.data(), 2, 0, 100, out.data(), 3, 1);
    CHECK(out[0] == 0.0 && out[1] == 2.0 && out[2] == -2.0);  // 0.5, 2.5, -1.5
    // extreme exponents take the ldexp path: 2^-1074 grid, x = 3 * 2^-1074
    const double tiny = std::ldexp(3.0, -1074);
    request::noisy_grid<request::DiscreteLaplace>(g, zero, &tiny, 1, -1074, 100, out.data(), 1, 1);
    CHECK(out[0] == tiny);
    // output beyond a double: refused, never inf (DBL_MAX 2^-1000 rounds up to 2^24, and
    // 2^24 2^1000 = 2^1024 overflows)
    const double big = std::numeric_limits<double>::max();
    CHECK(throws<std::overflow_error>([&] {
        request::noisy_grid<request::DiscreteLaplace>(g, zero, &big, 1, 1000, int64_t{1} << 30, out.data(), 1, 1);
    }));
    CHECK(throws<std::invalid_argument>([&] {
        request::noisy_grid<request::DiscreteLaplace>(g, zero, &big, 1, 0, (int64_t{1} << 52) + 1, out.data(), 1, 1);
    }));
    // the noisy values are the sampler's: same streams as a plain request with the same key
    random::ChaCha20Generator g1(key(6)), g2(key(6));
    const auto p = request::DiscreteLaplace::make({5, 1});
    const size_t n = 70000;
    std::vector<double> zeros(n, 0.0), noisy(n);
    std::vector<int64_t> plain(n);
    request::noisy_grid<request::DiscreteLaplace>(g1, p, zeros.data(), 1, 0, 1 << 20, noisy.data(), n, 2);
    request::sample_same<request::DiscreteLaplace>(g2, p, plain.data(), n, 1);
    bool same = true;
    for (size_t i = 0; i < n; ++i) same = same && noisy[i] == static_cast<double>(plain[i]);
    CHECK(same);
}

static void test_noisy_integers() {
    random::ChaCha20Generator g(key(7));
    const auto zero = request::DiscreteLaplace::make({0, 1});
    const std::vector<int64_t> x = {5, -5, INT64_MAX, INT64_MIN};
    std::vector<int64_t> out(x.size());
    request::noisy_integers<request::DiscreteLaplace>(g, zero, x.data(), 1, 3, out.data(), x.size(), 1);
    CHECK((out == std::vector<int64_t>{3, -3, 3, -3}));
}

// parameters.hpp agrees with the rule of _rational.py on representative values.
static void test_parameter_conversion() {
    using parameters::Kind;
    auto eq = [](exact::Rational r, uint64_t num, uint64_t den) { return r.num == num && r.den == den; };
    CHECK(eq(parameters::from_double(0.5, Kind::scale, "scale"), 1, 2));
    CHECK(eq(parameters::from_double(10.0, Kind::scale, "scale"), 10, 1));
    CHECK(eq(parameters::from_double(-0.0, Kind::scale, "scale"), 0, 1));
    CHECK(eq(parameters::from_double(std::ldexp(1.0, 62), Kind::scale, "scale"), uint64_t{1} << 62, 1));
    CHECK(throws<std::overflow_error>([] { parameters::from_double(std::ldexp(1.0, 63), Kind::scale, "scale"); }));
    // below 2^-62: the least multiple of 2^-62 above (rounded up, more noise)
    CHECK(eq(parameters::from_double(std::ldexp(3.0, -70), Kind::scale, "scale"), 1, uint64_t{1} << 62));
    CHECK(eq(parameters::from_double(std::ldexp(1.0, -62), Kind::scale, "scale"), 1, uint64_t{1} << 62));
    // 0.1 = 3602879701896397 / 2^55: exact
    CHECK(eq(parameters::from_double(0.1, Kind::scale, "scale"), 3602879701896397ull, uint64_t{1} << 55));
    // sigma 0.1: sigma^2 = 3602879701896397^2 / 2^110 does not fit: rounded up within 2^96
    const exact::Rational v = parameters::from_double(0.1, Kind::sigma, "sigma");
    CHECK(static_cast<long double>(v.num) / static_cast<long double>(v.den) >= 0.01L);
    CHECK(static_cast<exact::u128>(v.num) * v.den <= (exact::u128(1) << 96));
    CHECK(eq(parameters::from_double(3.0, Kind::sigma, "sigma"), 9, 1));
    CHECK(throws<std::overflow_error>([] { parameters::from_double(std::ldexp(1.0, 31) + 1, Kind::sigma, "sigma"); }));
    // probabilities: nearest multiple of 2^-62 beyond 62 fraction bits, ties to even
    CHECK(eq(parameters::from_double(0.25, Kind::probability, "p"), 1, 4));
    CHECK(eq(parameters::from_double(1.0, Kind::probability, "p"), 1, 1));
    CHECK(eq(parameters::from_double(std::ldexp(1.0, -63), Kind::probability, "p"), 0, uint64_t{1} << 62));     // tie -> even 0
    CHECK(eq(parameters::from_double(std::ldexp(3.0, -63), Kind::probability, "p"), 2, uint64_t{1} << 62));     // 1.5 -> 2
    CHECK(throws<std::invalid_argument>([] { parameters::from_double(1.5, Kind::probability, "p"); }));
    CHECK(throws<std::invalid_argument>([] { parameters::from_double(-1.0, Kind::scale, "scale"); }));
    CHECK(throws<std::invalid_argument>([] { parameters::from_double(std::nan(""), Kind::scale, "scale"); }));
    CHECK(throws<std::invalid_argument>([] {
        parameters::from_double(std::numeric_limits<double>::infinity(), Kind::scale, "scale");
    }));
    // arrays: distinct values ascending, -0.0 == 0.0, an index per element
    const std::vector<double> xs = {2.0, -0.0, 0.5, 2.0, 0.0};
    const parameters::Table t = parameters::convert_array(xs.data(), 1, xs.size(), Kind::scale, "scale");
    CHECK(t.params.size() == 3);
    CHECK((t.index == std::vector<int64_t>{2, 0, 1, 2, 0}));
    CHECK(eq(t.params[1], 1, 2));
}

int main() {
    test_threads_do_not_change_output();
    test_table_cache();
    test_paths();
    test_each_checks_indices_first();
    test_noisy_grid();
    test_noisy_integers();
    test_parameter_conversion();
    return report("test_request");
}
