// C++ unit tests of the dpnoise core (no Python). Built by CMake with
// -DDPNOISE_BUILD_CPP_TESTS=ON and run through ctest (tests/test_cpp_core.py does both).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "dpnoise/exact/bernoulli.hpp"
#include "dpnoise/exact/discrete_gaussian.hpp"
#include "dpnoise/exact/randomized_response.hpp"
#include "dpnoise/exact/table_samplers.hpp"
#include "dpnoise/exact/wide_uint.hpp"
#include "dpnoise/random/bit_source.hpp"
#include "dpnoise/random/chacha20.hpp"
#include "dpnoise/random/keystream.hpp"
#include "dpnoise/simd.hpp"

#include "check.hpp"

using namespace dpnoise;

// A bit source whose first bits(k) call returns a chosen value; any further read is recorded
// (it means the comparison was not decided by the first digit) and answered with zeros.
struct ScriptedBits {
    uint64_t first;
    bool used_first = false;
    bool read_more = false;
    uint64_t bits(unsigned) {
        if (!used_first) { used_first = true; return first; }
        read_more = true;
        return 0;
    }
    bool bit() { read_more = true; return false; }
};

static void test_rfc8439_block() {
    uint32_t state[16] = {0x61707865, 0x3320646e, 0x79622d32, 0x6b206574};
    for (int i = 0; i < 8; ++i) {
        const uint32_t b = static_cast<uint32_t>(4 * i);
        state[4 + i] = b | ((b + 1) << 8) | ((b + 2) << 16) | ((b + 3) << 24);
    }
    state[12] = 1; state[13] = 0x09000000; state[14] = 0x4a000000; state[15] = 0;
    uint32_t out[16];
    random::chacha20_block(state, out);
    // RFC 8439 §2.3.2, the block as words
    const uint32_t expect[16] = {0xe4e7f110, 0x15593bd1, 0x1fdd0f50, 0xc47120a3, 0xc7f4d1c7, 0x0368c033,
                                 0x9aaa2204, 0x4e6cd4c3, 0x466482d2, 0x09aa9f07, 0x05d7c214, 0xa2028bd9,
                                 0xd19c12b5, 0xb94e16de, 0xe883d0cb, 0x4e3c50a2};
    for (int i = 0; i < 16; ++i) CHECK(out[i] == expect[i]);
}

// Bernoulli(a/b) through 16-bit digits: over all 2^16 first digits u, exactly floor(a 2^16 / b)
// decide "true" at once, one digit (when b does not divide a 2^16) is undecided and reads on,
// and the rest decide "false": so P[true] = (floor(a 2^16/b) + frac)/2^16 = a/b exactly.
static void test_bernoulli_first_digit_partition(uint64_t a, uint64_t b) {
    uint64_t decided_true = 0, undecided = 0;
    for (uint64_t u = 0; u < 65536; ++u) {
        ScriptedBits s{u};
        const bool r = exact::bernoulli_rational<ScriptedBits, uint64_t>(s, a, b);
        if (s.read_more) ++undecided;
        else if (r) ++decided_true;
    }
    const exact::u128 x = static_cast<exact::u128>(a) << 16;
    CHECK(decided_true == static_cast<uint64_t>(x / b));
    CHECK(undecided == (x % b != 0 ? 1u : 0u));
}

static void test_wide_uint() {
    const exact::u128 big = (static_cast<exact::u128>(0xfedcba9876543210ull) << 64) | 0x0123456789abcdefull;
    exact::WideUint w(big);
    const exact::WideUint sq = exact::wide_multiply(w, w);
    exact::WideUint back = sq;
    back -= sq;
    CHECK(back.is_zero());
    CHECK(w < sq);
    exact::WideUint one(static_cast<exact::u128>(1));
    for (int i = 0; i < 500; ++i) one.double_in_place();
    bool threw = false;
    try {
        for (int i = 0; i < 20; ++i) one.double_in_place();
    } catch (const std::overflow_error&) {
        threw = true;
    }
    CHECK(threw);
}

static void test_gaussian_parameters() {
    exact::DiscreteGaussianParams p(100, 1);  // sigma = 10
    CHECK(p.t == 11);
    exact::DiscreteGaussianParams q(49, 9);   // sigma = 7/3
    CHECK(q.t == 3);
    exact::DiscreteGaussianParams r(1, 4);    // sigma = 1/2
    CHECK(r.t == 1);
}

static void test_bit_reader_consumes_words_in_order() {
    random::StreamKey k{};
    random::KeystreamWords a(k, 3), b(k, 3);
    random::BitReader<random::KeystreamWords> bits(a);
    const uint64_t w0 = b.next_u64(), w1 = b.next_u64();
    CHECK(bits.bits(16) == (w0 & 0xffff));
    CHECK(bits.bits(48) == (w0 >> 16));
    CHECK(bits.bits(64) == w1);
}

// Every guide bucket marked settled must decide D for every w in it: w below lo for exactly the
// first c thresholds, and w above the upper band of threshold c + 1. Checked at both ends of
// each bucket (lo is non-increasing, so the ends bound the whole bucket) by direct counting.
static void check_guide(const exact::Thresholds& th) {
    const size_t m = th.hi_m1.size();
    CHECK(th.lo.size() == m + 2);  // two sentinels
    for (size_t i = 0; i < m; ++i) CHECK(static_cast<uint64_t>(th.lo[i]) <= static_cast<uint64_t>(th.hi_m1[i]) + 1);
    for (size_t i = 1; i < m; ++i) CHECK(th.lo[i] <= th.lo[i - 1]);
    size_t settled = 0;
    for (size_t b = 0; b < th.guide.size(); ++b) {
        const uint32_t wmin = static_cast<uint32_t>(static_cast<uint64_t>(b) << (32 - th.guide_bits));
        const uint32_t wmax = static_cast<uint32_t>(((static_cast<uint64_t>(b) + 1) << (32 - th.guide_bits)) - 1);
        const size_t c = th.guide[b] >> 1;
        size_t at_max = 0;
        while (at_max < m && th.lo[at_max] > wmax) ++at_max;
        CHECK(c == at_max);  // the guide's count: a lower bound for the whole bucket
        if (th.guide[b] & 1) {
            ++settled;
            size_t at_min = 0;
            while (at_min < m && th.lo[at_min] > wmin) ++at_min;
            CHECK(at_min == c);
            CHECK(c < m && wmin > th.hi_m1[c]);
        }
    }
    CHECK(settled > th.guide.size() / 2);
}

static void test_guides() {
    using Law = exact::GeometricTable::Law;
    for (uint64_t t : {1ull, 3ull, 10ull, 146ull})
        for (Law law : {Law::geometric, Law::laplace}) check_guide(exact::GeometricTable(t, 1, law).direct_table);
    check_guide(exact::GeometricTable(1, 2, Law::laplace).direct_table);
    for (uint64_t t : {147ull, 1000000ull, 1000000007ull}) check_guide(exact::GeometricTable(t, 1, Law::laplace).high);
    for (uint64_t a : {1ull, 100ull, 21025ull, 21317ull, 1000000000000ull})
        check_guide(exact::GaussianBuckets(a, 1, exact::DiscreteGaussianParams(a, 1).t).buckets);
}

// The certified bucket thresholds of the discrete Gaussian against an independent long double
// evaluation of the same tail sums: S_d = T_d / T_0 (T_d = sum_{i >= d} e^{-i^2 c}), or
// 2 T_d / (2 T_0 - 1) for sigma < 146 where the table inverts |Y| itself. The long double
// value must lie in [lo, hi] / 2^32 up to its own rounding (1e-15 relative).
static void test_gaussian_bucket_thresholds(uint64_t a, uint64_t b) {
    const exact::DiscreteGaussianParams p(a, b);
    const exact::GaussianBuckets g(a, b, p.t);
    const long double B = std::ldexp(1.0L, static_cast<int>(g.k));
    const long double c = B * B * static_cast<long double>(b) / (2.0L * static_cast<long double>(a));
    std::vector<long double> terms;
    for (uint64_t i = 0;; ++i) {
        const long double x = std::exp(-static_cast<long double>(i) * static_cast<long double>(i) * c);
        terms.push_back(x);
        if (x < 1e-60L) break;
    }
    std::vector<long double> tail(terms.size() + 1, 0.0L);
    for (size_t i = terms.size(); i-- > 0;) tail[i] = tail[i + 1] + terms[i];
    const long double den = g.folded ? 2.0L * tail[0] - 1.0L : tail[0];
    const long double scale = 4294967296.0L;
    for (size_t d = 1; d <= g.buckets.hi_m1.size() && d < tail.size(); ++d) {
        const long double s = (g.folded ? 2.0L * tail[d] : tail[d]) / den * scale;
        CHECK(s >= static_cast<long double>(g.buckets.lo[d - 1]) * (1 - 1e-15L) - 1e-9L);
        CHECK(s <= (static_cast<long double>(g.buckets.hi_m1[d - 1]) + 1) * (1 + 1e-15L) + 1e-9L);
    }
    CHECK(g.folded == (g.k == 0));
}

// A bit source for one uniform R = 0.w t t t ...: the first bits(32) call returns w, every
// later read returns bits of the word `tail` (0: R = w/2^32 exactly; all ones: R just below
// (w + 1)/2^32); later reads are recorded.
struct TailBits {
    uint64_t first, tail;
    bool used_first = false;
    bool read_more = false;
    uint64_t bits(unsigned k) {
        if (!used_first) { used_first = true; return first; }
        read_more = true;
        return k == 64 ? tail : tail & ((uint64_t{1} << k) - 1);
    }
    uint64_t word() { read_more = true; return tail; }
    bool bit() { read_more = true; return (tail & 1) != 0; }
};

// Randomized response: the kernel's certified 32-bit bounds of p = 1/(1 + (k-1) e^-gamma) hold
// against a long double evaluation and are at most 2 units apart; a first word w outside
// [lo, hi) decides without reading further (w < lo keeps, w >= hi does not), and inside the
// band the exact refinement agrees with the real comparison R < p at both ends of R's range.
static void test_randomized_response_bounds(uint64_t k, uint64_t num, uint64_t den) {
    const exact::RandomizedResponseKernel rr(k, exact::BigUint(num), exact::BigUint(den));
    const long double gamma = std::min(static_cast<long double>(num) / static_cast<long double>(den), 65536.0L);
    const long double p = 1.0L / (1.0L + static_cast<long double>(k - 1) * std::exp(-gamma));
    const long double p32 = p * 4294967296.0L;
    const uint64_t lo = rr.keep_bounds.lo, hi = rr.keep_bounds.hi;
    CHECK(static_cast<long double>(lo) <= p32 * (1 + 1e-15L) + 1e-9L);
    CHECK(static_cast<long double>(hi) >= p32 * (1 - 1e-15L) - 1e-9L);
    CHECK(hi >= lo && hi - lo <= 2);
    if (lo > 0) {
        TailBits s{lo - 1, 0};
        CHECK(rr.keep(s) && !s.read_more);
    }
    if (hi <= UINT32_MAX) {
        TailBits s{hi, ~uint64_t{0}};
        CHECK(!rr.keep(s) && !s.read_more);
    }
    for (uint64_t w = lo; w < hi && w <= UINT32_MAX; ++w) {
        for (const uint64_t tail : {uint64_t{0}, ~uint64_t{0}}) {
            // R = 1 - 0 exactly (all ones forever, a probability-0 sequence) against p just below
            // 1 would be decided only at precision ~gamma bits: skipped for large gamma
            if (tail && w == UINT32_MAX && gamma > 64) continue;
            TailBits s{w, tail};
            const bool keep = rr.keep(s);
            CHECK(s.read_more);
            // R = w/2^32 (tail 0) keeps iff w/2^32 < p; R just below (w+1)/2^32 iff (w+1)/2^32 <= p
            const long double edge = static_cast<long double>(w + (tail ? 1 : 0));
            if (std::fabs(edge - p32) > 1e-9L * (1 + p32)) CHECK(keep == (tail ? edge <= p32 : edge < p32));
        }
    }
    // gamma = 0 gives p = 1/k exactly; with k = 4, R = 1/4 exactly is decided (not kept)
    if (num == 0 && k == 4) {
        TailBits s{uint64_t{1} << 30, 0};
        CHECK(!rr.keep(s));
    }
}

static void test_randomized_response_rejects_bad_parameters() {
    int threw = 0;
    try { exact::RandomizedResponseKernel(1, exact::BigUint(1), exact::BigUint(1)); } catch (const std::invalid_argument&) { ++threw; }
    try { exact::RandomizedResponseKernel((uint64_t{1} << 62) + 1, exact::BigUint(1), exact::BigUint(1)); } catch (const std::overflow_error&) { ++threw; }
    try { exact::RandomizedResponseKernel(2, exact::BigUint(1), exact::BigUint()); } catch (const std::invalid_argument&) { ++threw; }
    CHECK(threw == 3);
}

// The x86 SIMD kernels are compiled exactly in x86-64 builds without DPNOISE_NO_SIMD
// (dpnoise/simd.hpp). Elsewhere, and in the forced-portable build (CMake -DDPNOISE_NO_SIMD=ON),
// no SIMD kernel is offered, so every request runs the portable code other CPUs run.
static void test_simd_paths_follow_the_build() {
    using random::ChaCha20Kernel;
#if defined(__x86_64__) && !defined(DPNOISE_NO_SIMD) && (defined(__GNUC__) || defined(__clang__))
    CHECK(kBuiltWithX86Simd);
#else
    CHECK(!kBuiltWithX86Simd);
    for (ChaCha20Kernel k : {ChaCha20Kernel::kAvx2, ChaCha20Kernel::kAvx512vl, ChaCha20Kernel::kAvx512f})
        CHECK(!random::chacha20_kernel_supported(k));
    CHECK(std::string(random::chacha20_backend()) == "portable");
#endif
    CHECK(random::chacha20_kernel_supported(ChaCha20Kernel::kPortable));
}

int main() {
    test_rfc8439_block();
    test_simd_paths_follow_the_build();
    const uint64_t cases[][2] = {{1, 3}, {2, 3}, {1, 2}, {7, 10}, {1, 65536}, {65535, 65536},
                                 {12345, 99991}, {1, (1ull << 47) + 1}, {5, 7 * 11 * 13}};
    for (const auto& c : cases) test_bernoulli_first_digit_partition(c[0], c[1]);
    test_wide_uint();
    test_gaussian_parameters();
    test_bit_reader_consumes_words_in_order();
    test_guides();
    const uint64_t sigma2[][2] = {{1, 4}, {9, 1}, {100, 1}, {21025, 1}, {21317, 1}, {1000000, 1}, {1000000000000ull, 1}, {5, 3}};
    for (const auto& q : sigma2) test_gaussian_bucket_thresholds(q[0], q[1]);
    const uint64_t rr_cases[][3] = {{2, 1, 1}, {2, 30, 1}, {10, 2, 1}, {1000000000, 30, 1}, {3, 1, 1000000000},
                                    {uint64_t{1} << 62, 1, uint64_t{1} << 62}, {3, 0, 1}, {4, 0, 1},
                                    {5, 1000000, 1}, {7, 3ull << 20, 1}, {1000000, 7, 3}};
    for (const auto& c : rr_cases) test_randomized_response_bounds(c[0], c[1], c[2]);
    test_randomized_response_rejects_bad_parameters();
    return report("test_core");
}
