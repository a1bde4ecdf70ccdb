// C++ unit tests of the portable paths beside the x86-64 kernels (dpnoise/simd.hpp): on x86-64
// every kernel this CPU runs gives the portable kernel's results exactly, and on every CPU the
// portable paths give the x86-64 results, including the bits the x86 instructions define (the
// sign of a zero from minsd/maxsd). Run on x86-64 by tests/test_cpp_core.py (and with
// -DDPNOISE_NO_SIMD=ON, portable only), and on aarch64 under qemu by `.ci/cross_compile --run`.
// Deterministic (no statistics): every check is an exact equality.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "dpnoise/exact/constant_time/discrete_gaussian.hpp"
#include "dpnoise/ldp/constant_time/mean_mechanisms.hpp"
#include "dpnoise/ldp/constant_time/randomizers.hpp"
#include "dpnoise/ldp/hash_family.hpp"
#include "dpnoise/ldp/local_hashing.hpp"
#include "dpnoise/mechanism_kernels.hpp"
#include "dpnoise/mechanism_kernels_constant_time.hpp"
#include "dpnoise/simd.hpp"
#include "dpnoise/random/public_splitmix.hpp"

#include "check.hpp"

using namespace dpnoise;

namespace {

struct Words {  // the inputs' own randomness (SplitMix64; not the code under test)
    uint64_t s;
    uint64_t next() { return dpnoise::random::PublicSplitMix::mix(s += dpnoise::random::PublicSplitMix::kGamma); }
};

uint64_t bits_of(double x) {
    uint64_t b;
    std::memcpy(&b, &x, sizeof b);
    return b;
}

}  // namespace

// The constant-time clamp follows maxsd/minsd (Intel SDM, MAXSD/MINSD: when the operands
// compare equal, zeros of either sign included, the second operand is returned) on every CPU:
// std::fmin/fmax, the old portable path, give the other zero on aarch64 (fminnm/fmaxnm).
// (The inputs are read from volatile memory: folded at compile time, the SSE2 intrinsics do not
// keep the instructions' rule for zeros.)
static volatile double kZeros[2] = {0.0, -0.0};
static void test_clamp_double_follows_minsd_maxsd() {
    using exact::ct::clamp_double_ct;
    const double pz = kZeros[0], nz = kZeros[1];
    CHECK(bits_of(clamp_double_ct(-0.5, nz, pz)) == bits_of(pz));  // min(-0, +0) -> +0
    CHECK(bits_of(clamp_double_ct(pz, nz, 1.0)) == bits_of(nz));   // max(+0, -0) -> -0
    CHECK(bits_of(clamp_double_ct(nz, pz, 1.0)) == bits_of(pz));   // max(-0, +0) -> +0
    CHECK(bits_of(clamp_double_ct(pz, -1.0, nz)) == bits_of(nz));  // min(+0, -0) -> -0
    CHECK(clamp_double_ct(0.25, -1.0, 2.0) == 0.25);
    CHECK(clamp_double_ct(-3.0, -1.0, 2.0) == -1.0);
    CHECK(clamp_double_ct(std::numeric_limits<double>::infinity(), -1.0, 2.0) == 2.0);
    CHECK(clamp_double_ct(-std::numeric_limits<double>::infinity(), -1.0, 2.0) == -1.0);
}

// to_grid_ct rounds ties to even and clamps; grid_output_ct<float> clamps to +-FLT_MAX.
static void test_grid_rounding_and_float_output() {
    using exact::ct::to_grid_ct;
    const double ties[] = {0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5};
    const int64_t even[] = {0, 2, 2, 0, -2, -2, 4};
    for (size_t i = 0; i < 7; ++i) CHECK(to_grid_ct(ties[i], 1.0, 100.0) == even[i]);
    CHECK(to_grid_ct(1e300, 1.0, 100.0) == 100 && to_grid_ct(-1e300, 1.0, 100.0) == -100);
    CHECK(to_grid_ct(5.0, 0.25, 100.0) == 1);  // 1.25 -> 1
    constexpr float kMaxF = std::numeric_limits<float>::max();
    CHECK(exact::ct::grid_output_ct<float>(1e300) == kMaxF && exact::ct::grid_output_ct<float>(-1e300) == -kMaxF);
    CHECK(exact::ct::grid_output_ct<float>(0.1) == static_cast<float>(0.1));
}

// The grid release's block form (SSE2/AVX2 on x86-64, the baseline loop elsewhere: a compiler
// that fused a product into an add would break it) equals its per-element form.
template <class T>
static void check_grid_block_equals_per_element(Words& w) {
    const size_t n = 4099;
    std::vector<T> x(n), block(n), element(n);
    std::vector<int64_t> noise(n);
    for (size_t i = 0; i < n; ++i) {
        x[i] = static_cast<T>(static_cast<double>(static_cast<int64_t>(w.next() % 2000001) - 1000000) * 0.0625);
        if (i % 5 == 0) x[i] = static_cast<T>(static_cast<double>(i) + 0.5);  // ties
        noise[i] = static_cast<int64_t>(w.next() % 200001) - 100000;
    }
    for (int k : {-3, 0, 4}) {
        const request::GridBufferCombine<T> combine{x.data(), 1, request::TimesFactor{std::ldexp(1.0, -k)},
                                                    request::TimesFactor{std::ldexp(1.0, k)}, 50000.0};
        combine.block(block.data(), 0, n, noise.data());
        for (size_t i = 0; i < n; ++i) element[i] = combine(i, noise[i]);
        CHECK(std::memcmp(block.data(), element.data(), n * sizeof(T)) == 0);
    }
}

static void test_grid_block_equals_per_element() {
    Words w{11};
    check_grid_block_equals_per_element<double>(w);
    check_grid_block_equals_per_element<float>(w);
}

// Local hashing: the kernel this CPU runs (AVX-512, AVX2 or portable) counts what the portable
// one counts, block by block, for OLH and for FLH with small (<= 16) and large g.
static void test_hashing_kernels_agree() {
    using ldp::LocalHashing;
    using ldp::detail::HashingKernel;
    Words w{21};
    const HashingKernel best = ldp::detail::best_hashing_kernel();
    if (!kBuiltWithX86Simd) CHECK(best == HashingKernel::portable);
    for (uint64_t g : {uint64_t{2}, uint64_t{5}, uint64_t{16}, uint64_t{40}}) {
        const size_t users = 203;
        std::vector<ldp::detail::SupportTest> tests(users);
        for (auto& t : tests) t = ldp::detail::support_test(ldp::HashSeed{w.next(), w.next()}, w.next() % g, g);
        const uint64_t k_prime = 23;
        std::vector<uint64_t> pool(2 * k_prime);
        for (auto& p : pool) p = w.next();
        std::vector<int64_t> counts(k_prime * g);
        for (auto& c : counts) c = static_cast<int64_t>(w.next() % 50);
        std::vector<uint8_t> used(k_prime, 1);
        used[3] = 0;
        for (uint64_t x0 : {uint64_t{0}, uint64_t{LocalHashing::kBlock} * 7}) {
            alignas(64) int64_t a[LocalHashing::kBlock] = {}, b[LocalHashing::kBlock] = {};
            ldp::detail::olh_block_with(best, tests.data(), users, x0, a);
            ldp::detail::olh_block_with(HashingKernel::portable, tests.data(), users, x0, b);
            CHECK(std::memcmp(a, b, sizeof a) == 0);
            alignas(64) uint64_t keys[LocalHashing::kBlock] = {};
            for (size_t i = 0; i < LocalHashing::kBlock; ++i) keys[i] = ldp::HashFamily::scramble(x0 + i);
            std::vector<int64_t> fa(LocalHashing::kBlock, 0), fb(LocalHashing::kBlock, 0);
            ldp::detail::flh_block_with(best, counts.data(), pool.data(), used.data(), k_prime, g, keys,
                                        LocalHashing::kBlock, fa.data());
            ldp::detail::flh_block_with(HashingKernel::portable, counts.data(), pool.data(), used.data(), k_prime, g,
                                        keys, LocalHashing::kBlock, fb.data());
            CHECK(fa == fb);
        }
    }
}

// The constant-time unary decisions (AVX2 where the CPU has it) and the constant-time discrete
// Gaussian's leaf scan (AVX2 where the CPU has it) equal their portable forms.
static void test_constant_time_kernels_agree() {
    Words w{31};
    alignas(32) uint64_t u[64], k[64];
    for (int round = 0; round < 200; ++round) {
        for (int b = 0; b < 64; ++b) {
            u[b] = w.next();
            k[b] = w.next() % 4;
        }
        const uint64_t x = w.next() % 4;
        const uint64_t sel[2][3] = {{w.next(), (round % 7 == 0) ? ~uint64_t{0} : 0, (round % 2) ? ~uint64_t{0} : 0},
                                    {w.next(), 0, (round % 3) ? ~uint64_t{0} : 0}};
        const uint64_t portable = exact::ct::decide64_portable(u, k, x, sel);
#ifdef DPNOISE_CT_AVX2_DECIDE
        if (random::detail::cpu_has_avx2()) CHECK(exact::ct::decide64_avx2(u, k, x, sel) == portable);
#endif
        (void)portable;
    }
    const exact::ct::DiscreteGaussianTable table(1600, 1);  // sigma = 40: several leaves
    CHECK(!table.terms.empty());
    for (const auto& term : table.terms) {
        for (int round = 0; round < 500; ++round) {
            const uint64_t uh = w.next(), ul = w.next();
            CHECK(exact::ct::count_below(uh, ul, *term.leaf) == exact::ct::count_below_portable(uh, ul, *term.leaf));
        }
        CHECK(exact::ct::count_below(0, 0, *term.leaf) == exact::ct::count_below_portable(0, 0, *term.leaf));
    }
}

int main() {
    test_clamp_double_follows_minsd_maxsd();
    test_grid_rounding_and_float_output();
    test_grid_block_equals_per_element();
    test_hashing_kernels_agree();
    test_constant_time_kernels_agree();
    return report("test_portable_paths");
}
