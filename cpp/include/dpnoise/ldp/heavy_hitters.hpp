// dpnoise/ldp/heavy_hitters.hpp -- the kernels of the local-DP heavy-hitters protocols (PEM,
// TreeHist, Bitstogram; the protocols themselves are in Python, src/dpnoise/ldp/heavy_hitters/).
//
// Every heavy-hitters protocol here is a set of G "groups", each a fast-local-hashing frequency
// oracle (FLH: Cormode, Maddock & Maple 2021, PVLDB 14(11), §4.3) over 64-bit keys derived from
// the item:
//   kind 0 (a prefix):  key = x >> shift                          (PEM and TreeHist levels, full items)
//   kind 1 (a bit):     key = 2 aux + ((x >> shift) & 1)          (Bitstogram: aux = public bucket of x)
// Client (one report per user, the whole ε on it): the group l is drawn with probability
// weight_l / W from the SECRET generator before the item is read (so it is independent of the
// data), then a uniform index j in [0, k′_l) into the PUBLIC pool of hash seeds, then the bucket
// h_j(key) in [0, g) is reported by exact g-ary randomized response (exact::RandomizedResponseKernel,
// no floating point). Report: (l, j, y). The server keeps counts[l][j][y] (sufficient statistics)
// and estimates a candidate key's support C(key) = Σ_j counts[l][j][h_j(key)] (hh_support).
//
// Hash family: dpnoise/ldp/hash_family64.hpp (128-bit multiply-add-shift over fmix64-scrambled
// keys, multiply-high reduction). Pool: seed j is words 4j .. 4j+3 of a public stream.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "dpnoise/exact/randomized_response.hpp"
#include "dpnoise/exact/uniform.hpp"
#include "dpnoise/ldp/hash_family64.hpp"
#include "dpnoise/parallel.hpp"
#include "dpnoise/random/stream_fill.hpp"

namespace dpnoise::ldp {

struct HeavyHitterGroup {
    uint64_t cum_weight = 0;  // Σ_{l' <= l} weight_l' (strictly increasing over the groups)
    uint32_t kind = 0;        // 0: prefix key, 1: bit key
    uint32_t shift = 0;       // < 64
    uint64_t k_prime = 1;     // pool indices used by this group, <= the pool size
};

struct HeavyHitters {
    static constexpr size_t kOutputsPerStream = size_t{1} << 16;  // reproducibility unit of the clients
    static constexpr size_t kBlock = 256;                         // candidate keys per aggregation block

    // Weights and pool indices only (the string methods' groups carry their own parameters).
    static void check_weights(const std::vector<HeavyHitterGroup>& groups, uint64_t pool_size) {
        if (groups.empty()) throw std::invalid_argument("groups must not be empty");
        uint64_t prev = 0;
        for (const auto& gr : groups) {
            if (gr.cum_weight <= prev) throw std::invalid_argument("group weights must be positive");
            if (gr.k_prime == 0 || gr.k_prime > pool_size) throw std::invalid_argument("group k_prime must be in [1, pool size]");
            prev = gr.cum_weight;
        }
    }

    static void check_groups(const std::vector<HeavyHitterGroup>& groups, uint64_t pool_size) {
        check_weights(groups, pool_size);
        for (const auto& gr : groups) {
            if (gr.kind > 1) throw std::invalid_argument("group kind must be 0 (prefix) or 1 (bit)");
            if (gr.shift >= 64) throw std::invalid_argument("group shift must be below 64");
        }
    }

    static uint64_t key(const HeavyHitterGroup& gr, uint64_t x, uint64_t aux) {
        return gr.kind == 0 ? x >> gr.shift : (aux << 1) | ((x >> gr.shift) & 1);
    }
};

// The clients' loop of every heavy-hitters method: for user i, the group l (probability
// weight_l / W: l = the first group whose cumulative weight exceeds a uniform u < W, exact, no
// float) drawn from the SECRET generator BEFORE the item is read, then a uniform pool index
// j < k′_l, then the bucket h_j(key_of(group l, i)) in [0, g) by exact g-ary randomized response.
// Groups checked by the caller (check_weights at least). Chunks of kOutputsPerStream users read
// one stream each, so the reports do not depend on `threads`.
template <class Family, class KeyOf>
void hh_clients(Family& family, const exact::RandomizedResponseKernel& kernel, const std::vector<HeavyHitterGroup>& groups,
                const uint64_t* pool, size_t n, int64_t* out_groups, int64_t* indices, int64_t* values, unsigned threads,
                const KeyOf& key_of) {
    const uint64_t g = kernel.k;
    HashFamily64::check_buckets(g);
    std::vector<uint64_t> cumulative;
    for (const auto& gr : groups) cumulative.push_back(gr.cum_weight);
    const uint64_t total = cumulative.back();
    const uint64_t* cum = cumulative.data();
    const HeavyHitterGroup* gr = groups.data();
    const size_t ngroups = groups.size();
    random::for_each_chunk<HeavyHitters::kOutputsPerStream>(
        family, n, threads,
        [&kernel, &key_of, gr, cum, ngroups, total, pool, out_groups, indices, values, g](auto& bits, size_t begin, size_t end) {
            for (size_t i = begin; i < end; ++i) {
                const uint64_t u = exact::uniform_below(bits, total);  // the group first: independent of x
                const size_t l = static_cast<size_t>(std::upper_bound(cum, cum + ngroups, u) - cum);
                const uint64_t j = exact::uniform_below(bits, gr[l].k_prime);
                out_groups[i] = static_cast<int64_t>(l);
                indices[i] = static_cast<int64_t>(j);
                const uint64_t h = HashFamily64::bucket(HashFamily64::seed(pool + 4 * j), key_of(gr[l], i), g);
                values[i] = kernel.respond(bits, static_cast<int64_t>(h));
            }
        });
}

// Clients: groups[i], indices[i], values[i] for items[i] (aux[i] the public bucket when a group
// of kind 1 exists, else ignored and may be null). pool: 4 words per seed, pool_size seeds.
template <class Family>
void hh_privatize(Family& family, const exact::RandomizedResponseKernel& kernel,
                  const std::vector<HeavyHitterGroup>& groups, const uint64_t* pool, uint64_t pool_size,
                  const uint64_t* items, const uint64_t* aux, int64_t* out_groups, int64_t* indices, int64_t* values,
                  size_t n, unsigned threads) {
    HeavyHitters::check_groups(groups, pool_size);
    hh_clients(family, kernel, groups, pool, n, out_groups, indices, values, threads,
               [items, aux](const HeavyHitterGroup& gr, size_t i) { return HeavyHitters::key(gr, items[i], aux ? aux[i] : 0); });
}

// Support of m candidate keys in one group: support[i] = Σ_{j < k′} counts[j g + h_j(keys[i])].
// O(k′ m) hash evaluations (rows with no report skipped), in blocks of keys over `threads`.
inline void hh_support(const int64_t* counts, const uint64_t* pool, uint64_t k_prime, uint64_t g, const uint64_t* keys,
                       size_t m, int64_t* support, unsigned threads) {
    HashFamily64::check_buckets(g);
    std::vector<uint64_t> used;  // the rows with at least one report
    used.reserve(static_cast<size_t>(k_prime));
    for (uint64_t j = 0; j < k_prime; ++j)
        for (uint64_t v = 0; v < g; ++v)
            if (counts[j * g + v] != 0) {
                used.push_back(j);
                break;
            }
    const size_t nblocks = (m + HeavyHitters::kBlock - 1) / HeavyHitters::kBlock;
    parallel_tasks(nblocks, threads, [&](size_t blk) {
        const size_t i0 = blk * HeavyHitters::kBlock, len = std::min(HeavyHitters::kBlock, m - i0);
        uint64_t sk[HeavyHitters::kBlock];
        int64_t acc[HeavyHitters::kBlock] = {};
        for (size_t i = 0; i < len; ++i) sk[i] = HashFamily64::scramble(keys[i0 + i]);
        for (const uint64_t j : used) {
            const HashSeed128 s = HashFamily64::seed(pool + 4 * j);
            const int64_t* row = counts + j * g;
            for (size_t i = 0; i < len; ++i)
                acc[i] += row[static_cast<uint64_t>((static_cast<unsigned __int128>(HashFamily64::hash64(s, sk[i])) * g) >> 64)];
        }
        std::copy(acc, acc + len, support + i0);
    });
}

// Support of the same m keys in G groups that share k′, g and the pool (Bitstogram's per-bit
// oracles: every bit group estimates the keys (t, 0), (t, 1) of every bucket t):
//     support[l m + i] = Σ_{j < k′} counts[(l k′ + j) g + h_j(keys[i])].
// h_j(key) does not depend on the group, so each (seed, key) pair is hashed ONCE and adds the
// G groups' counters of its bucket together, from the transposed table T[j][y][0..G) (a short
// vector add): m × (used seeds) hash evaluations instead of G × m × k′. The lanes are int16
// when every group has at most 2^15 − 1 reports (a support is at most its group's reports),
// else int32 or int64: the sums are exact in every case. Used seeds: any group has a report.
// Memory: the table, k′ g × (G rounded up to a 128-bit vector) lanes, at most twice the counts.
namespace detail {

template <class Lane>
void hh_support_groups_lanes(const int64_t* counts, size_t G, const std::vector<uint64_t>& used, const uint64_t* pool,
                             uint64_t k_prime, uint64_t g, const uint64_t* keys, size_t m, int64_t* support,
                             unsigned threads) {
    constexpr size_t kVector = 16 / sizeof(Lane);  // lanes of one 128-bit vector
    const size_t lanes = (G + kVector - 1) / kVector * kVector;  // padded: whole vectors per bucket row
    std::vector<Lane> table(static_cast<size_t>(k_prime * g) * lanes, Lane{0});
    for (size_t l = 0; l < G; ++l)
        for (uint64_t jy = 0; jy < k_prime * g; ++jy)
            table[static_cast<size_t>(jy) * lanes + l] = static_cast<Lane>(counts[l * k_prime * g + jy]);
    constexpr size_t kKeys = 128;  // keys per task: kKeys × lanes accumulators stay in L1/L2
    const size_t nblocks = (m + kKeys - 1) / kKeys;
    parallel_tasks(nblocks, threads, [&](size_t blk) {
        const size_t i0 = blk * kKeys, len = std::min(kKeys, m - i0);
        uint64_t sk[kKeys];
        std::vector<Lane> acc(kKeys * lanes, Lane{0});
        for (size_t i = 0; i < len; ++i) sk[i] = HashFamily64::scramble(keys[i0 + i]);
        for (const uint64_t j : used) {
            const HashSeed128 s = HashFamily64::seed(pool + 4 * j);
            const Lane* tj = table.data() + static_cast<size_t>(j * g) * lanes;
            for (size_t i = 0; i < len; ++i) {
                const uint64_t y = static_cast<uint64_t>((static_cast<unsigned __int128>(HashFamily64::hash64(s, sk[i])) * g) >> 64);
                const Lane* row = tj + static_cast<size_t>(y) * lanes;
                Lane* a = acc.data() + i * lanes;
                for (size_t l = 0; l < lanes; ++l) a[l] = static_cast<Lane>(a[l] + row[l]);
            }
        }
        for (size_t l = 0; l < G; ++l)
            for (size_t i = 0; i < len; ++i) support[l * m + i0 + i] = static_cast<int64_t>(acc[i * lanes + l]);
    });
}

}  // namespace detail

inline void hh_support_groups(const int64_t* counts, size_t G, const uint64_t* pool, uint64_t k_prime, uint64_t g,
                              const uint64_t* keys, size_t m, int64_t* support, unsigned threads) {
    HashFamily64::check_buckets(g);
    if (G == 0) return;
    std::vector<uint64_t> used;
    int64_t most = 0;  // the largest group's reports
    std::vector<int64_t> reports(G, 0);
    for (uint64_t j = 0; j < k_prime; ++j) {
        bool any = false;
        for (size_t l = 0; l < G; ++l)
            for (uint64_t v = 0; v < g; ++v) {
                const int64_t c = counts[(l * k_prime + j) * g + v];
                if (c < 0 || c > INT64_MAX - reports[l])
                    throw std::invalid_argument("counts must be non-negative with each group's total below 2^63");
                reports[l] += c;
                any = any || c != 0;
            }
        if (any) used.push_back(j);
    }
    for (const int64_t r : reports) most = std::max(most, r);
    if (most < (int64_t{1} << 15))
        detail::hh_support_groups_lanes<int16_t>(counts, G, used, pool, k_prime, g, keys, m, support, threads);
    else if (most < (int64_t{1} << 31))
        detail::hh_support_groups_lanes<int32_t>(counts, G, used, pool, k_prime, g, keys, m, support, threads);
    else
        detail::hh_support_groups_lanes<int64_t>(counts, G, used, pool, k_prime, g, keys, m, support, threads);
}

}  // namespace dpnoise::ldp
