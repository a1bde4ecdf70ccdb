// dpnoise/ldp/local_hashing.hpp -- the local-hashing frequency oracles: OLH and FLH.
//
// OLH (optimized local hashing; Wang, Blocki, Li & Jha 2017, "Locally differentially private
// protocols for frequency estimation", USENIX Security, §4.4): user i draws a hash seed s_i
// (two uniform 64-bit words, from the SECRET generator, independent of the item) and reports
// (s_i, y_i), y_i = GRR_g(h_{s_i}(x_i)): the bucket kept with p = e^γ/(e^γ + g − 1), else one of
// the g − 1 others uniformly, by the exact kernel exact::RandomizedResponseKernel (no floating
// point). The server counts the support C(x) = #{i : y_i = h_{s_i}(x)}.
//
// FLH (fast local hashing; Cormode, Maddock & Maple 2021, "Frequency estimation under local
// differential privacy", PVLDB 14(11), §4.3): the seed is an index j_i into a PUBLIC pool of k′
// seeds (drawn uniformly from the secret generator by the user, sent in the report); the server
// counts reports per (j, y) and evaluates C(x) = Σ_j count[j, h_j(x)], O(n + k′ d).
//
// The hash family is dpnoise/ldp/hash_family.hpp. Clients draw from the secret stream family in
// chunks (chunk c from stream c: the output does not depend on `threads`). Aggregation loops
// run over blocks of items (a block's counters stay in L1) with a vectorised inner loop
// compiled for AVX-512, AVX2 or baseline x86-64 and chosen at run time (x86-64 only:
// DPNOISE_X86_SIMD, dpnoise/simd.hpp; other CPUs compile the portable form); blocks are spread
// over `threads`. Memory: O(d + batch).
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "dpnoise/exact/randomized_response.hpp"
#include "dpnoise/exact/uniform.hpp"
#include "dpnoise/ldp/hash_family.hpp"
#include "dpnoise/parallel.hpp"
#include "dpnoise/random/stream_fill.hpp"
#include "dpnoise/simd.hpp"  // DPNOISE_X86_SIMD: the AVX-512 and AVX2 aggregation kernels

namespace dpnoise::ldp {

struct LocalHashing {
    static constexpr size_t kOutputsPerStream = size_t{1} << 16;  // reproducibility unit of the clients
    static constexpr size_t kBlock = 2048;                        // items per aggregation block (16 KiB of counters)
};

// ------------------------------------------------------------------------------ clients
// OLH: seeds[2i], seeds[2i+1] = (a_i, b_i) uniform 64-bit words; values[i] = GRR_g(h(x_i)).
// items in [0, 2^32) and kernel.k = g, checked by the caller.
template <class Family>
void olh_privatize(Family& family, const exact::RandomizedResponseKernel& kernel, const int64_t* items,
                   uint64_t* seeds, int64_t* values, size_t n, unsigned threads) {
    const uint64_t g = kernel.k;
    random::for_each_chunk<LocalHashing::kOutputsPerStream>(
        family, n, threads, [&kernel, items, seeds, values, g](auto& bits, size_t begin, size_t end) {
            for (size_t i = begin; i < end; ++i) {
                const HashSeed s{bits.bits(64), bits.bits(64)};  // the seed first: independent of x
                seeds[2 * i] = s.a;
                seeds[2 * i + 1] = s.b;
                const uint64_t h = HashFamily::bucket(s, static_cast<uint64_t>(items[i]), g);
                values[i] = kernel.respond(bits, static_cast<int64_t>(h));
            }
        });
}

// FLH: indices[i] uniform in [0, k′) (exact, by rejection); values[i] = GRR_g(h_{pool[j]}(π(x_i)))
// (π = HashFamily::scramble).
// pool: 2 k′ words, (a_j, b_j) = (pool[2j], pool[2j+1]).
template <class Family>
void flh_privatize(Family& family, const exact::RandomizedResponseKernel& kernel, const uint64_t* pool,
                   uint64_t k_prime, const int64_t* items, int64_t* indices, int64_t* values, size_t n,
                   unsigned threads) {
    if (k_prime == 0) throw std::invalid_argument("k_prime must be positive");
    const uint64_t g = kernel.k;
    random::for_each_chunk<LocalHashing::kOutputsPerStream>(
        family, n, threads, [&kernel, pool, k_prime, items, indices, values, g](auto& bits, size_t begin, size_t end) {
            for (size_t i = begin; i < end; ++i) {
                const uint64_t j = exact::uniform_below(bits, k_prime);
                indices[i] = static_cast<int64_t>(j);
                const HashSeed s{pool[2 * j], pool[2 * j + 1]};
                const uint64_t h = HashFamily::bucket(s, HashFamily::scramble(static_cast<uint64_t>(items[i])), g);
                values[i] = kernel.respond(bits, static_cast<int64_t>(h));
            }
        });
}

// ------------------------------------------------------------------------- aggregation
namespace detail {

// One user's test, prepared once per batch: for item x the user supports x iff
//   (a x + offset) as a signed 64-bit value < threshold,
// offset = b − L_y 2^32 + 2^63 and threshold = ((L_{y+1} − L_y) 2^32) XOR 2^63 (an unsigned
// comparison u < T written as the signed comparison of u + 2^63 and T XOR 2^63).
struct SupportTest {
    uint64_t a, offset;
    int64_t threshold;
};

inline SupportTest support_test(HashSeed s, uint64_t y, uint64_t g) {
    const uint64_t lo = HashFamily::bucket_start(y, g), hi = HashFamily::bucket_start(y + 1, g);
    constexpr uint64_t kSign = uint64_t{1} << 63;
    return SupportTest{s.a, s.b - (lo << 32) + kSign, static_cast<int64_t>(((hi - lo) << 32) ^ kSign)};
}

// Counts, for the items x0 .. x0 + kBlock − 1, the number of supporting users into `neg`
// (kBlock int64, zeroed by the caller; the generic form counts down, the AVX-512 form up). V: a GCC vector of int64 lanes; users are taken
// U at a time so that each load and store of a counter vector serves U users.
// GCC 12 warns -Wmaybe-uninitialized about z, step and thr (x86-64 and aarch64), whose lanes
// are all stored by the loop over l before any is read: it does not follow lane-by-lane
// stores into vector arrays. Silenced for this function only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
template <class V, int U>
[[gnu::always_inline]] inline void olh_block(const SupportTest* tests, size_t n, uint64_t x0, int64_t* neg) {
    constexpr int L = static_cast<int>(sizeof(V) / sizeof(int64_t));
    constexpr size_t kVecs = LocalHashing::kBlock / static_cast<size_t>(L);
    typedef uint64_t UV __attribute__((vector_size(sizeof(V))));  // wrap-around lanes
    V* counters = reinterpret_cast<V*>(neg);
    for (size_t u0 = 0; u0 < n; u0 += U) {
        UV z[U], step[U];
        V thr[U];
        for (int u = 0; u < U; ++u) {
            const bool real = u0 + static_cast<size_t>(u) < n;
            const SupportTest t = real ? tests[u0 + static_cast<size_t>(u)] : SupportTest{0, 0, INT64_MIN};
            const uint64_t base = t.a * x0 + t.offset;
            for (int l = 0; l < L; ++l) {
                z[u][l] = base + t.a * static_cast<uint64_t>(l);
                step[u][l] = t.a * static_cast<uint64_t>(L);
                thr[u][l] = t.threshold;  // INT64_MIN for padding: never below it
            }
        }
        for (size_t j = 0; j < kVecs; ++j) {
            V c = counters[j];
            for (int u = 0; u < U; ++u) {
                c -= ((V)z[u] < thr[u]);  // the comparison is −1 where the user supports the item
                z[u] += step[u];
            }
            counters[j] = c;
        }
    }
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

typedef int64_t v8i64 __attribute__((vector_size(64)));
typedef int64_t v4i64 __attribute__((vector_size(32)));
typedef int64_t v2i64 __attribute__((vector_size(16)));

#ifdef DPNOISE_X86_SIMD
// AVX-512: the compare writes a mask register and the count is a masked subtraction (3
// instructions per user and 8 items); 8 users per load and store of a counter vector.
__attribute__((target("avx512f,avx512vl,avx512dq,avx512bw"))) inline void olh_block_avx512(const SupportTest* tests,
                                                                                          size_t n, uint64_t x0,
                                                                                          int64_t* neg) {
    constexpr int U = 8;
    const __m512i lane = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
    const __m512i one = _mm512_set1_epi64(1);
    for (size_t u0 = 0; u0 < n; u0 += U) {
        __m512i z[U], step[U], thr[U];
        for (int u = 0; u < U; ++u) {
            const bool real = u0 + static_cast<size_t>(u) < n;
            const SupportTest t = real ? tests[u0 + static_cast<size_t>(u)] : SupportTest{0, 0, INT64_MIN};
            const __m512i av = _mm512_set1_epi64(static_cast<long long>(t.a));
            z[u] = _mm512_add_epi64(_mm512_set1_epi64(static_cast<long long>(t.a * x0 + t.offset)), _mm512_mullo_epi64(av, lane));
            step[u] = _mm512_set1_epi64(static_cast<long long>(8 * t.a));
            thr[u] = _mm512_set1_epi64(t.threshold);
        }
        for (size_t i = 0; i < LocalHashing::kBlock; i += 8) {
            __m512i c = _mm512_load_si512(neg + i);
            for (int u = 0; u < U; ++u) {
                c = _mm512_mask_add_epi64(c, _mm512_cmplt_epi64_mask(z[u], thr[u]), c, one);
                z[u] = _mm512_add_epi64(z[u], step[u]);
            }
            _mm512_store_si512(neg + i, c);
        }
    }
}
__attribute__((target("avx2"))) inline void olh_block_avx2(const SupportTest* t, size_t n, uint64_t x0, int64_t* neg) {
    olh_block<v4i64, 4>(t, n, x0, neg);
}
#endif  // DPNOISE_X86_SIMD
inline void olh_block_portable(const SupportTest* t, size_t n, uint64_t x0, int64_t* neg) {
    olh_block<v2i64, 4>(t, n, x0, neg);
}

// The widest aggregation kernel this build and CPU can run; every level counts the same support.
enum class HashingKernel { portable, avx2, avx512 };
inline HashingKernel best_hashing_kernel() {
#ifdef DPNOISE_X86_SIMD
    static const HashingKernel best =
        __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
                __builtin_cpu_supports("avx512bw")
            ? HashingKernel::avx512
            : (__builtin_cpu_supports("avx2") ? HashingKernel::avx2 : HashingKernel::portable);
    return best;
#else
    return HashingKernel::portable;
#endif
}

inline void olh_block_with(HashingKernel kernel, const SupportTest* t, size_t n, uint64_t x0, int64_t* neg) {
#ifdef DPNOISE_X86_SIMD
    if (kernel == HashingKernel::avx512) return olh_block_avx512(t, n, x0, neg);
    if (kernel == HashingKernel::avx2) return olh_block_avx2(t, n, x0, neg);
#endif
    (void)kernel;
    olh_block_portable(t, n, x0, neg);
}

// FLH: support[x] += rows[j][h_j(π(x))] for the items of one block (keys[i] = π(x0 + i)).
template <int Dummy = 0>
[[gnu::always_inline]] inline void flh_block(const int64_t* counts, const uint64_t* pool, const uint8_t* used,
                                             uint64_t k_prime, uint64_t g, const uint64_t* keys, size_t len,
                                             int64_t* acc) {
    for (uint64_t j = 0; j < k_prime; ++j) {
        if (!used[j]) continue;
        const int64_t* row = counts + j * g;
        const uint64_t a = pool[2 * j], b = pool[2 * j + 1];
        for (size_t i = 0; i < len; ++i) acc[i] += row[(((a * keys[i] + b) >> 32) * g) >> 32];
    }
}
#ifdef DPNOISE_X86_SIMD
// AVX-512 with g <= 16: a row of counts fits two registers, and the lookup row[h_j(x)] of 8
// items is one permute (vpermt2q) instead of a gather; 4 pool seeds per pass over the block.
__attribute__((target("avx512f,avx512vl,avx512dq,avx512bw"))) inline void flh_block_avx512_small_g(
    const int64_t* counts, const uint64_t* pool, const uint8_t* used, uint64_t k_prime, uint64_t g,
    const uint64_t* keys, size_t len, int64_t* acc) {
    constexpr int U = 4;
    alignas(64) int64_t local[LocalHashing::kBlock] = {};
    const __m512i gv = _mm512_set1_epi64(static_cast<long long>(g));
    const __mmask8 lo_mask = static_cast<__mmask8>(g >= 8 ? 0xff : (1u << g) - 1);
    const __mmask8 hi_mask = static_cast<__mmask8>(g <= 8 ? 0 : (1u << (g - 8)) - 1);
    uint64_t j = 0;
    while (j < k_prime) {
        __m512i av[U], bv[U], r0[U], r1[U];
        int m = 0;
        for (; j < k_prime && m < U; ++j) {
            if (!used[j]) continue;
            const int64_t* row = counts + j * g;
            av[m] = _mm512_set1_epi64(static_cast<long long>(pool[2 * j]));
            bv[m] = _mm512_set1_epi64(static_cast<long long>(pool[2 * j + 1]));
            r0[m] = _mm512_maskz_loadu_epi64(lo_mask, row);
            r1[m] = _mm512_maskz_loadu_epi64(hi_mask, row + 8);
            ++m;
        }
        for (; m < U; ++m) av[m] = bv[m] = r0[m] = r1[m] = _mm512_setzero_si512();  // all-zero rows add nothing
        for (size_t i = 0; i < LocalHashing::kBlock; i += 8) {
            const __m512i key = _mm512_load_si512(keys + i);
            __m512i c = _mm512_load_si512(local + i);
            for (int u = 0; u < U; ++u) {
                const __m512i z = _mm512_add_epi64(_mm512_mullo_epi64(av[u], key), bv[u]);  // vpmullq: AVX512DQ
                const __m512i bucket = _mm512_srli_epi64(_mm512_mul_epu32(_mm512_srli_epi64(z, 32), gv), 32);
                c = _mm512_add_epi64(c, _mm512_permutex2var_epi64(r0[u], bucket, r1[u]));
            }
            _mm512_store_si512(local + i, c);
        }
    }
    for (size_t i = 0; i < len; ++i) acc[i] += local[i];
}
__attribute__((target("avx512f,avx512vl,avx512dq,avx512bw"))) inline void flh_block_avx512(
    const int64_t* counts, const uint64_t* pool, const uint8_t* used, uint64_t k_prime, uint64_t g,
    const uint64_t* keys, size_t len, int64_t* acc) {
    if (g <= 16) flh_block_avx512_small_g(counts, pool, used, k_prime, g, keys, len, acc);
    else flh_block(counts, pool, used, k_prime, g, keys, len, acc);
}
__attribute__((target("avx2"))) inline void flh_block_avx2(const int64_t* counts, const uint64_t* pool,
                                                           const uint8_t* used, uint64_t k_prime, uint64_t g,
                                                           const uint64_t* keys, size_t len, int64_t* acc) {
    flh_block(counts, pool, used, k_prime, g, keys, len, acc);
}
#endif  // DPNOISE_X86_SIMD

inline void flh_block_with(HashingKernel kernel, const int64_t* counts, const uint64_t* pool, const uint8_t* used,
                           uint64_t k_prime, uint64_t g, const uint64_t* keys, size_t len, int64_t* acc) {
#ifdef DPNOISE_X86_SIMD
    if (kernel == HashingKernel::avx512) return flh_block_avx512(counts, pool, used, k_prime, g, keys, len, acc);
    if (kernel == HashingKernel::avx2) return flh_block_avx2(counts, pool, used, k_prime, g, keys, len, acc);
#endif
    (void)kernel;
    flh_block(counts, pool, used, k_prime, g, keys, len, acc);
}

}  // namespace detail

// OLH support counts: support[x] += #{i : values[i] = h_{seeds_i}(x)} for x < d (seeds as in
// olh_privatize, values in [0, g), checked by the caller). O(n d) hash tests, O(n) scratch.
inline void olh_support(const uint64_t* seeds, const int64_t* values, size_t n, uint64_t g, uint64_t d,
                        int64_t* support, unsigned threads) {
    HashFamily::check_buckets(g);
    if (d > HashFamily::kMaxItems) throw std::invalid_argument("domain_size must be at most 2^32 for local hashing");
    std::vector<detail::SupportTest> tests(n);
    for (size_t i = 0; i < n; ++i)
        tests[i] = detail::support_test(HashSeed{seeds[2 * i], seeds[2 * i + 1]}, static_cast<uint64_t>(values[i]), g);
    const size_t nblocks = static_cast<size_t>((d + LocalHashing::kBlock - 1) / LocalHashing::kBlock);
    const detail::HashingKernel kernel = detail::best_hashing_kernel();
    parallel_tasks(nblocks, threads, [&](size_t blk) {
        alignas(64) int64_t neg[LocalHashing::kBlock] = {};
        const uint64_t x0 = static_cast<uint64_t>(blk) * LocalHashing::kBlock;
        detail::olh_block_with(kernel, tests.data(), n, x0, neg);
        const size_t len = static_cast<size_t>(std::min<uint64_t>(LocalHashing::kBlock, d - x0));
        for (size_t i = 0; i < len; ++i) support[x0 + i] += neg[i];
    });
}

// FLH support counts from the per-(pool index, value) counts (k′ rows of g): support[x] =
// Σ_j counts[j][h_j(π(x))] for x < d. O(k′ d) hash evaluations (rows with no report skipped).
inline void flh_support(const int64_t* counts, const uint64_t* pool, uint64_t k_prime, uint64_t g, uint64_t d,
                        int64_t* support, unsigned threads) {
    HashFamily::check_buckets(g);
    if (d > HashFamily::kMaxItems) throw std::invalid_argument("domain_size must be at most 2^32 for local hashing");
    std::vector<uint8_t> used(static_cast<size_t>(k_prime), 0);
    for (uint64_t j = 0; j < k_prime; ++j)
        for (uint64_t v = 0; v < g && !used[j]; ++v) used[j] = counts[j * g + v] != 0;
    const size_t nblocks = static_cast<size_t>((d + LocalHashing::kBlock - 1) / LocalHashing::kBlock);
    const detail::HashingKernel kernel = detail::best_hashing_kernel();
    parallel_tasks(nblocks, threads, [&](size_t blk) {
        const uint64_t x0 = static_cast<uint64_t>(blk) * LocalHashing::kBlock;
        const size_t len = static_cast<size_t>(std::min<uint64_t>(LocalHashing::kBlock, d - x0));
        int64_t* acc = support + x0;
        std::fill(acc, acc + len, int64_t{0});
        alignas(64) uint64_t keys[LocalHashing::kBlock] = {};  // π(x) of the block, shared by all seeds
        for (size_t i = 0; i < len; ++i) keys[i] = HashFamily::scramble(x0 + i);
        detail::flh_block_with(kernel, counts, pool, used.data(), k_prime, g, keys, len, acc);
    });
}

}  // namespace dpnoise::ldp
