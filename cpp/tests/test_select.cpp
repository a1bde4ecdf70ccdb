// C++ unit tests of batched selection (dpnoise/select/): the coins' certified bounds, the exact
// refinement path, thread independence, strides and dtypes, top-k, and input checks. No Python.
// Built and run like test_core (ctest).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <set>
#include <stdexcept>
#include <vector>

#include "dpnoise/random/generator.hpp"
#include "dpnoise/select/select_rows.hpp"

#include "check.hpp"

using namespace dpnoise;

static random::StreamKey key(uint32_t w) { return test_key(w); }

// The 32-bit bounds enclose e^{-gamma g} (long double reference, far more precise than 2^-32)
// for small, table, product and direct gaps, and for tiny and large gamma.
static void test_coin_bounds_enclose() {
    const std::vector<std::pair<uint64_t, uint64_t>> gammas{{1, 2}, {1, 1}, {7, 3}, {1, 4096}, {3, 1000000}, {100, 1}};
    const std::vector<uint64_t> gaps{0, 1, 2, 3, 17, 255, 256, 257, 1000, 65535, 65536, 123457, 10000000, 4000000000ull};
    for (auto [a, b] : gammas) {
        const select::GapCoins coins(a, b);
        for (uint64_t g : gaps) {
            const long double c = std::exp(-static_cast<long double>(a) * static_cast<long double>(g) / static_cast<long double>(b));
            const select::CoinBounds e = coins.bounds(g);
            const long double scaled = c * 4294967296.0L;
            CHECK(static_cast<long double>(e.lo) <= scaled * (1 + 1e-15L));
            CHECK(static_cast<long double>(e.hi) >= scaled * (1 - 1e-15L));
            CHECK(e.hi <= (uint64_t{1} << 32));
            // tight: at most a few units apart where c is not tiny
            CHECK(e.hi - e.lo <= 16);
        }
    }
}

// The fast coin and the forced exact path have the same law: the frequency of acceptance is
// within 6 standard deviations of e^{-gamma g} for both (false alarm < 1e-8 per check).
static void test_coin_law_fast_and_exact() {
    random::ChaCha20Generator gen(key(3));
    auto words = gen.open(gen.reserve(1), 0);
    random::BitReader<random::KeystreamWords> bits(words);
    const select::GapCoins coins(1, 3);
    const int n = 200000, m = 10000;  // the exact path is about 100 times slower
    for (uint64_t g : {1ull, 2ull, 5ull, 300ull}) {
        const double p = std::exp(-static_cast<double>(g) / 3.0);
        int fast = 0, exact = 0;
        for (int i = 0; i < n; ++i) fast += coins.accept(bits, g);
        for (int i = 0; i < m; ++i) exact += coins.accept<decltype(bits), exact::ForceRefinement>(bits, g);
        CHECK(std::fabs(fast - n * p) <= 6 * std::sqrt(n * p * (1 - p)) + 1);
        CHECK(std::fabs(exact - m * p) <= 6 * std::sqrt(m * p * (1 - p)) + 1);
    }
}

// A row-major rows x cols view of v (int32 scores unless told otherwise).
template <class T>
static select::ScoreMatrix matrix_of(const std::vector<T>& v, size_t rows, size_t cols,
                                     select::ScoreType type = select::ScoreType::i32) {
    select::ScoreMatrix s;
    s.data = reinterpret_cast<const char*>(v.data());
    s.type = type;
    s.rows = rows;
    s.cols = cols;
    s.row_stride = static_cast<ptrdiff_t>(cols * sizeof(T));
    s.col_stride = sizeof(T);
    return s;
}

// Seeded output does not depend on threads (several chunks of 64 rows), for all methods and k.
static void test_threads_do_not_change_output() {
    const size_t rows = 300, cols = 50;
    std::vector<int32_t> v(rows * cols);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int32_t>((i * 2654435761u) % 97);
    const auto s = matrix_of(v, rows, cols);
    for (auto m : {select::Method::permute_and_flip, select::Method::exponential_mechanism, select::Method::laplace}) {
        for (size_t k : {size_t{1}, size_t{3}}) {
            std::vector<int64_t> a(rows * k), b(rows * k);
            random::ChaCha20Generator g1(key(9)), g2(key(9));
            select::select_rows(g1, s, m, {1, 2}, k, a.data(), 1);
            select::select_rows(g2, s, m, {1, 2}, k, b.data(), 3);
            CHECK(a == b);
            for (size_t r = 0; r < rows; ++r) {  // distinct, in range
                std::set<int64_t> seen(a.begin() + static_cast<ptrdiff_t>(r * k), a.begin() + static_cast<ptrdiff_t>((r + 1) * k));
                CHECK(seen.size() == k);
                CHECK(*seen.begin() >= 0 && *seen.rbegin() < static_cast<int64_t>(cols));
            }
        }
    }
}

// A strided (transposed) view of the same scores gives the same output as a contiguous copy, and
// float64 scores on the grid 2^0 select like the integers they equal.
static void test_strides_and_types() {
    const size_t rows = 70, cols = 9;
    std::vector<int32_t> v(rows * cols), t(rows * cols);
    std::vector<double> d(rows * cols);
    for (size_t r = 0; r < rows; ++r)
        for (size_t c = 0; c < cols; ++c) {
            v[r * cols + c] = static_cast<int32_t>((r * 7 + c * 13) % 11);
            t[c * rows + r] = v[r * cols + c];
            d[r * cols + c] = static_cast<double>(v[r * cols + c]);
        }
    select::ScoreMatrix tr = matrix_of(t, rows, cols);
    tr.row_stride = sizeof(int32_t);
    tr.col_stride = static_cast<ptrdiff_t>(rows * sizeof(int32_t));
    select::ScoreMatrix dm = matrix_of(d, rows, cols, select::ScoreType::f64);
    dm.grid = true;
    dm.grid_exponent = 0;
    std::vector<int64_t> a(rows), b(rows), c(rows);
    random::ChaCha20Generator g1(key(5)), g2(key(5)), g3(key(5));
    select::select_rows(g1, matrix_of(v, rows, cols), select::Method::permute_and_flip, {2, 3}, 1, a.data(), 1);
    select::select_rows(g2, tr, select::Method::permute_and_flip, {2, 3}, 1, b.data(), 1);
    select::select_rows(g3, dm, select::Method::permute_and_flip, {2, 3}, 1, c.data(), 1);
    CHECK(a == b);
    CHECK(a == c);
}

// Bad arguments are refused before any stream is reserved (the next call's output is unchanged).
static void test_checks_before_draws() {
    std::vector<int32_t> v{1, 2, 3};
    const auto s = matrix_of(v, 1, 3);
    random::ChaCha20Generator g1(key(4)), g2(key(4));
    std::vector<int64_t> out(3);
    CHECK(throws<std::invalid_argument>([&] { select::select_rows(g1, s, select::Method::laplace, {1, 1}, 4, out.data(), 1); }));
    CHECK(throws<std::invalid_argument>([&] { select::select_rows(g1, s, select::Method::laplace, {0, 1}, 1, out.data(), 1); }));
    select::ScoreMatrix empty = s;
    empty.cols = 0;
    CHECK(throws<std::invalid_argument>([&] { select::select_rows(g1, empty, select::Method::permute_and_flip, {1, 1}, 1, out.data(), 1); }));
    select::ScoreMatrix real = s;
    real.type = select::ScoreType::f32;  // real scores without a grid
    CHECK(throws<std::invalid_argument>([&] { select::select_rows(g1, real, select::Method::permute_and_flip, {1, 1}, 1, out.data(), 1); }));
    std::vector<int64_t> a(1), b(1);
    select::select_rows(g1, s, select::Method::exponential_mechanism, {1, 1}, 1, a.data(), 1);
    select::select_rows(g2, s, select::Method::exponential_mechanism, {1, 1}, 1, b.data(), 1);
    CHECK(a == b);
}

// Extreme integer scores: clamped to +-2^61, gaps near 2^62 do not wrap.
static void test_extreme_scores() {
    std::vector<int64_t> v{INT64_MIN, INT64_MAX, 0, INT64_MAX};
    const select::ScoreMatrix s = matrix_of(v, 1, 4, select::ScoreType::i64);
    random::ChaCha20Generator g(key(8));
    for (auto m : {select::Method::permute_and_flip, select::Method::exponential_mechanism, select::Method::laplace}) {
        for (int rep = 0; rep < 50; ++rep) {
            int64_t out = -1;
            select::select_rows(g, s, m, {1, 1}, 1, &out, 1);
            CHECK(out == 1 || out == 3);
        }
    }
}

// Degenerate inputs, for every method: one column always gives 0; a score 10^6 above the rest
// is always the argmax (another candidate has probability below cols e^{-10^6}); a huge gamma
// picks the argmax of distinct scores; k = cols gives a permutation of every row; equal scores
// are chosen uniformly (chi-square, false alarm about 1e-4 per method); two tied maxima far above
// the rest split evenly between those two (binomial, about 6e-7).
static void test_degenerate_inputs() {
    const select::Method methods[] = {select::Method::permute_and_flip, select::Method::exponential_mechanism,
                                      select::Method::laplace};
    random::ChaCha20Generator g(key(21));
    for (auto m : methods) {
        const size_t rows = 200;
        std::vector<int64_t> out(rows * 6);
        const std::vector<int32_t> one(rows, 7);
        select::select_rows(g, matrix_of(one, rows, 1), m, {1, 1}, 1, out.data(), 1);
        for (size_t r = 0; r < rows; ++r) CHECK(out[r] == 0);

        std::vector<int32_t> winner(rows * 6, 0), distinct(rows * 6);
        for (size_t r = 0; r < rows; ++r) {
            winner[r * 6 + r % 6] = 1000000;
            for (size_t c = 0; c < 6; ++c) distinct[r * 6 + c] = static_cast<int32_t>((c + r) % 6);  // max at c = 5 - r % 6
        }
        select::select_rows(g, matrix_of(winner, rows, 6), m, {1, 1}, 1, out.data(), 1);
        for (size_t r = 0; r < rows; ++r) CHECK(out[r] == static_cast<int64_t>(r % 6));
        select::select_rows(g, matrix_of(distinct, rows, 6), m, {uint64_t{1} << 20, 1}, 1, out.data(), 1);
        for (size_t r = 0; r < rows; ++r) CHECK(out[r] == static_cast<int64_t>(5 - r % 6));

        select::select_rows(g, matrix_of(distinct, rows, 6), m, {1, 3}, 6, out.data(), 2);
        for (size_t r = 0; r < rows; ++r) {
            std::set<int64_t> seen(out.begin() + static_cast<ptrdiff_t>(r * 6), out.begin() + static_cast<ptrdiff_t>(r * 6 + 6));
            CHECK(seen.size() == 6 && *seen.begin() == 0 && *seen.rbegin() == 5);
        }

        const size_t n = 20000, cols = 5;
        const std::vector<int32_t> equal(n * cols, -3);
        std::vector<int64_t> pick(n);
        select::select_rows(g, matrix_of(equal, n, cols), m, {2, 1}, 1, pick.data(), 2);
        std::vector<uint64_t> counts(cols, 0);
        for (int64_t c : pick) counts[static_cast<size_t>(c)] += 1;
        CHECK(chi_square(counts, std::vector<double>(cols, 1.0 / cols)) < chi2_critical_1e4(cols - 1));

        std::vector<int32_t> tied(n * 4, 0);
        for (size_t r = 0; r < n; ++r) tied[r * 4] = tied[r * 4 + 2] = 1000000;
        select::select_rows(g, matrix_of(tied, n, 4), m, {1, 1}, 1, pick.data(), 1);
        uint64_t first = 0, others = 0;
        for (int64_t c : pick) {
            first += c == 0;
            others += c != 0 && c != 2;
        }
        CHECK(others == 0);
        CHECK(binomial_close(first, n, 0.5));
    }
}

int main() {
    test_coin_bounds_enclose();
    test_coin_law_fast_and_exact();
    test_threads_do_not_change_output();
    test_strides_and_types();
    test_checks_before_draws();
    test_extreme_scores();
    test_degenerate_inputs();
    return report("test_select");
}
