// cpp/tests/seeded_digests.cpp -- digests (FNV-1a 64 of the output bytes) of seeded outputs of
// every core kernel that has an x86-64 form (AVX2, AVX-512, SSE2) beside its portable one:
// the ChaCha20 keystream, the mechanisms' blocked grid release (float64 and float32) and its
// constant-time form (SSE2 clamps, the AVX2 discrete Gaussian scan), the clamps themselves,
// the OLH and FLH support kernels, the Z-matrix sweep and the constant-time unary randomizer.
//
// Not a unit test (the name does not match test_*.cpp, so CMake does not build it): a tool
// whose output must not depend on the CPU or on which kernels were compiled.
// `.ci/cross_compile --run` builds it for this machine (the default kernels, and with
// -DDPNOISE_NO_SIMD) and for the cross target (run under qemu) and requires the three outputs
// to be identical, line for line.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "dpnoise/exact/constant_time/randomized_response.hpp"
#include "dpnoise/ldp/constant_time/mean_mechanisms.hpp"
#include "dpnoise/ldp/constant_time/randomizers.hpp"
#include "dpnoise/ldp/local_hashing.hpp"
#include "dpnoise/ldp/zmatrix_oracle.hpp"
#include "dpnoise/mechanism_kernels.hpp"
#include "dpnoise/mechanism_kernels_constant_time.hpp"
#include "dpnoise/random/chacha20.hpp"
#include "dpnoise/random/generator.hpp"
#include "dpnoise/simd.hpp"
#include "dpnoise/random/public_splitmix.hpp"

using namespace dpnoise;

namespace {

// FNV-1a over the bytes (the same on every little-endian CPU)
template <class T>
uint64_t digest(const std::vector<T>& v) {
    uint64_t h = 0xcbf29ce484222325ULL;
    const auto* p = reinterpret_cast<const unsigned char*>(v.data());
    for (size_t i = 0; i < v.size() * sizeof(T); ++i) h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

template <class T>
void print(const char* name, const std::vector<T>& v) {
    std::printf("%-34s %016llx\n", name, static_cast<unsigned long long>(digest(v)));
}

// the inputs' own randomness (SplitMix64, fixed seed; not the code under test)
struct SplitMix {
    uint64_t s;
    uint64_t next() { return dpnoise::random::PublicSplitMix::mix(s += dpnoise::random::PublicSplitMix::kGamma); }
    uint64_t below(uint64_t n) { return next() % n; }
};

random::StreamKey key(uint32_t w) {
    random::StreamKey k{};
    k.words[0] = w;
    return k;
}

}  // namespace

int main() {
    std::fprintf(stderr, "x86 SIMD kernels compiled: %s\n", kBuiltWithX86Simd ? "yes" : "no");
    SplitMix rng{20261129};
    const unsigned threads = 2;

    // keystream: 4099 blocks across the 32-bit counter carry (whole 16- and 8-block groups and a rest)
    std::vector<uint32_t> words(16 * 4099);
    random::chacha20_stream_blocks(key(1).words, 7, (uint64_t{1} << 32) - 20, 4099, words.data());
    print("chacha20 blocks", words);

    // the blocked grid release (GridBufferCombine: the SSE2/AVX2 combination on x86-64),
    // values in [-4e4, 4e4] with ties and beyond the clamp
    const size_t n = 200003;
    std::vector<double> x(n), out(n);
    for (size_t i = 0; i < n; ++i) x[i] = (static_cast<double>(i) - 100000.0) * 0.40625 + (i % 7 == 0 ? 0.0625 : 0.0);
    std::vector<float> xf(x.begin(), x.end()), outf(n);
    {
        random::ChaCha20Generator g(key(2));
        request::noisy_grid_into<request::DiscreteLaplace>(g, request::DiscreteLaplace::make({7, 2}), x.data(), 1, -3,
                                                           int64_t{1} << 17, out.data(), n, threads);
        print("grid laplace float64", out);
        request::noisy_grid_into<request::DiscreteGaussian>(g, request::DiscreteGaussian::make({9, 4}), xf.data(), 1, -2,
                                                            int64_t{1} << 40, outf.data(), n, threads);
        print("grid gaussian float32", outf);
        request::noisy_grid<request::DiscreteLaplace>(g, request::DiscreteLaplace::make({3, 1}), x.data(), 1, 0,
                                                      int64_t{1} << 20, out.data(), n, threads);
        print("grid laplace per element", out);
    }
    {  // constant time: minsd/maxsd + cvtsd2si clamps and the AVX2 Gaussian scan on x86-64
        random::ChaCha20Generator g(key(3));
        using exact::ct::ConstantTimeDiscreteGaussian;
        using exact::ct::ConstantTimeDiscreteLaplace;
        exact::ct::noisy_grid_constant_time<ConstantTimeDiscreteGaussian>(
            g, ConstantTimeDiscreteGaussian::make({1600, 1}), x.data(), 1, -3, int64_t{1} << 17, out.data(), n, threads);
        print("ct grid gaussian float64", out);
        exact::ct::noisy_grid_constant_time<ConstantTimeDiscreteLaplace>(
            g, ConstantTimeDiscreteLaplace::make({5, 2}), xf.data(), 1, -2, int64_t{1} << 40, outf.data(), n, threads);
        print("ct grid laplace float32", outf);
    }
    {  // the clamps alone, on signed zeros, ties, the bounds and beyond (read from volatile
       // memory: values folded at compile time would test the compiler, not the kernels)
        static volatile double inputs[] = {0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 1e3, -1e3, 1e300, -1e300, 3.75,
                                           4503599627370497.0};
        const double zero = inputs[0], negative_zero = inputs[1];
        std::vector<int64_t> grid;
        std::vector<double> clamped;
        for (const volatile double& input : inputs) {
            const double v = input;
            grid.push_back(exact::ct::to_grid_ct(v, 0.5, 1000.0));
            clamped.push_back(exact::ct::clamp_double_ct(v, -1.0, 2.0));
            clamped.push_back(exact::ct::clamp_double_ct(v, negative_zero, zero));
            clamped.push_back(exact::ct::clamp_double_ct(v, zero, 1.0));
            clamped.push_back(exact::ct::clamp_double_ct(v, -1.0, negative_zero));
        }
        print("ct to_grid", grid);
        print("ct clamp_double", clamped);
    }

    // OLH / FLH support (AVX-512, AVX2 or portable blocks): 2000 users, d = 3000
    {
        const uint64_t users = 2000, d = 3000, k_prime = 50;
        std::vector<uint64_t> seeds(2 * users), pool(2 * k_prime);
        for (auto& s : seeds) s = rng.next();
        for (auto& p : pool) p = rng.next();
        for (uint64_t g : {uint64_t{3}, uint64_t{16}, uint64_t{40}}) {
            std::vector<int64_t> values(users), counts(k_prime * g), support(d, 0);
            for (auto& v : values) v = static_cast<int64_t>(rng.below(g));
            for (auto& c : counts) c = static_cast<int64_t>(rng.below(100));
            ldp::olh_support(seeds.data(), values.data(), users, g, d, support.data(), threads);
            char name[64];
            std::snprintf(name, sizeof name, "olh support g=%llu", static_cast<unsigned long long>(g));
            print(name, support);
            ldp::flh_support(counts.data(), pool.data(), k_prime, g, d, support.data(), threads);
            std::snprintf(name, sizeof name, "flh support g=%llu", static_cast<unsigned long long>(g));
            print(name, support);
        }
    }

    // Z-matrix sweep (AVX-512, popcnt or scalar): 4096 columns, 5 planes, domain 2000
    {
        const size_t nwords = 64;
        const unsigned planes = 5;
        std::vector<uint64_t> sign(nwords, 0), magnitude(planes * nwords, 0);
        ldp::ColumnSums s{sign.data(), magnitude.data(), planes, nwords};
        const size_t reports = 30000;
        std::vector<uint64_t> columns(reports);
        std::vector<int8_t> y(reports);
        for (size_t i = 0; i < reports; ++i) {
            columns[i] = rng.below(64 * nwords);
            y[i] = (rng.next() & 1) ? int8_t{1} : int8_t{-1};
        }
        ldp::zmatrix_accumulate(s, columns.data(), y.data(), reports);
        std::vector<int64_t> sums(2000);
        ldp::zmatrix_sweep(ldp::PublicSignMatrix(key(4)), s, sums.size(), sums.data(), threads);
        print("zmatrix sweep", sums);
    }

    // constant-time unary reports (AVX2 or word-by-word decisions): SUE and OUE, 300 columns
    {
        const exact::ct::RandomizedResponseTable half(exact::RandomizedResponseKernel(2, exact::BigUint(1), exact::BigUint(2)));
        const exact::ct::RandomizedResponseTable full(exact::RandomizedResponseKernel(2, exact::BigUint(1), exact::BigUint(1)));
        const uint64_t columns = 300;
        const size_t users = 3000;
        std::vector<int64_t> items(users);
        for (auto& it : items) it = static_cast<int64_t>(rng.below(columns));
        std::vector<uint64_t> rows(users * ((columns + 63) / 64));
        random::ChaCha20Generator g(key(5));
        exact::ct::unary_constant_time(g, exact::ct::BitChannel(exact::ct::BitChannelKind::symmetric, half), items.data(),
                                       nullptr, columns, rows.data(), users, threads);
        print("ct unary sue", rows);
        exact::ct::unary_constant_time(g, exact::ct::BitChannel(exact::ct::BitChannelKind::optimized, full), items.data(),
                                       nullptr, columns, rows.data(), users, threads);
        print("ct unary oue", rows);
    }
    return 0;
}
