// dpnoise/ldp/string_pem.hpp -- the kernels of the heavy-hitters method "string_pem": prefix
// extension over the BYTES of strings of up to max_length bytes (the protocol itself is in
// Python, src/dpnoise/ldp/heavy_hitters/string_pem.py; docs/heavy_hitters.md).
//
// A string x of len(x) bytes is read as x⊥, its bytes followed by a terminator symbol. Level l
// (l = 0 .. L-1) reports the prefix of b_l symbols of x⊥:
//     P_l(x) = x[:b_l]            (incomplete) when len(x) >= b_l,
//     P_l(x) = x⊥                 (complete)   when len(x) <  b_l,
// so a complete prefix is the whole string, and it is the same at every later level.
// The prefix is turned into a 64-bit key by a keyed polynomial hash over the prime field
// F_p, p = 2^61 - 1 (Carter & Wegman 1979; Dietzfelbinger et al. 1992, "Polynomial hash functions
// are reliable", ICALP): the prefix's bytes as little-endian 32-bit words w_1..w_m (the last one
// zero-padded), followed by w_{m+1} = 2 len + complete, evaluated by Horner's rule at the public
// key k in [1, p). Two different (bytes, complete) pairs give different coefficient vectors
// (their last words differ unless their lengths, hence word counts, agree), so they collide for
// at most m + 1 <= 18 values of k: probability <= 18/p < 2^-56 per pair.
//
// Bit prefixes (the methods "pem" and "treehist" over strings, whose levels add η bits, not
// bytes): the first `bits` bits of x⊥, P(x) = the first bits of x (bytes read most significant
// bit first; incomplete) when 8 len(x) >= bits, else x⊥ (complete). An incomplete prefix is hashed
// as its ceil(bits/8) bytes with the bits past `bits` cleared, so a prefix of b symbols is the
// prefix of 8b bits (string_pem's keys are these). Within one level every incomplete prefix has
// the same byte count, so the argument above still bounds the collisions.
// Bitstogram over strings (kind 1 groups of string_hh_privatize): bit t of the padded form of x,
// its max_length bytes (zero-padded) then one byte holding len(x), most significant bit first.
//
// Client (one report per user, the whole ε on it): the level l is drawn from the SECRET generator
// before the item is read, uniformly, or with public integer weights w_l (exact: a uniform
// u < sum w, l = the first level whose cumulative weight exceeds u; no float), then a uniform index j < k′ into the PUBLIC pool of
// 128-bit hash seeds, and the bucket h_j(key) in [0, g) is reported by exact g-ary randomized
// response: the fast-local-hashing oracle of the other heavy-hitters methods (heavy_hitters.hpp,
// hash_family64.hpp; Cormode, Maddock & Maple 2021, PVLDB 14(11), §4.3). Report: (l, j, y), the
// same schema as every heavy-hitters method, so the server's counts and support sums (hh_support)
// are theirs.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "dpnoise/exact/randomized_response.hpp"
#include "dpnoise/exact/uniform.hpp"
#include "dpnoise/ldp/hash_family64.hpp"
#include "dpnoise/ldp/heavy_hitters.hpp"
#include "dpnoise/parallel.hpp"
#include "dpnoise/random/stream_fill.hpp"

namespace dpnoise::ldp {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the prefix hash reads little-endian words");

struct StringPrefixHash {
    static constexpr uint64_t kPrime = (uint64_t{1} << 61) - 1;

    static void check_key(uint64_t k) {
        if (k == 0 || k >= kPrime) throw std::invalid_argument("the prefix-hash key must be in [1, 2^61 - 1)");
    }

    // a b mod p (a, b < p): the Mersenne reduction of the 122-bit product
    static uint64_t mul_mod(uint64_t a, uint64_t b) {
        const unsigned __int128 r = static_cast<unsigned __int128>(a) * b;
        uint64_t s = (static_cast<uint64_t>(r) & kPrime) + static_cast<uint64_t>(r >> 61);
        return s >= kPrime ? s - kPrime : s;
    }

    static uint64_t add_mod(uint64_t a, uint64_t w) {  // a < p, w < 2^32
        const uint64_t s = a + w;
        return s >= kPrime ? s - kPrime : s;
    }

    // The key of the first `bits` bits of x⊥ (x: len bytes at p; bits >= 1).
    static uint64_t prefix_key_bits(uint64_t k, const unsigned char* p, size_t len, uint64_t bits) {
        const bool complete = 8 * static_cast<uint64_t>(len) < bits;
        const size_t m = complete ? len : static_cast<size_t>((bits + 7) / 8);
        const unsigned rest = complete ? 0u : static_cast<unsigned>(bits % 8);  // bits kept of the last byte
        uint64_t h = 0;
        size_t i = 0;
        const size_t whole = rest ? m - 1 : m;  // bytes read as they are
        for (; i + 4 <= whole; i += 4) {
            uint32_t w;
            std::memcpy(&w, p + i, 4);  // little-endian (static_assert below)
            h = add_mod(mul_mod(h, k), w);
        }
        if (i < m) {
            uint32_t w = 0;
            for (size_t t = 0; i + t < m; ++t) {
                uint32_t byte = p[i + t];
                if (rest && i + t == m - 1) byte &= (0xFFu << (8 - rest)) & 0xFFu;
                w |= byte << (8 * t);
            }
            h = add_mod(mul_mod(h, k), w);
        }
        return add_mod(mul_mod(h, k), static_cast<uint32_t>(2 * m + (complete ? 1 : 0)));
    }

    // The key of the first b symbols of x⊥ (b >= 1): the prefix of 8b bits.
    static uint64_t prefix_key(uint64_t k, const unsigned char* p, size_t len, size_t b) {
        return prefix_key_bits(k, p, len, b > len ? 8 * static_cast<uint64_t>(len) + 1 : 8 * static_cast<uint64_t>(b));
    }

    // Bit t (most significant first) of x's max_length bytes, zero-padded, followed by len(x) as one byte.
    static uint64_t padded_bit(const unsigned char* p, size_t len, size_t max_length, uint64_t t) {
        const uint64_t byte = t / 8, shift = 7 - t % 8;
        if (byte < len) return (p[byte] >> shift) & 1u;
        if (byte < max_length) return 0;
        return (static_cast<uint64_t>(len) >> shift) & 1u;
    }
};

// Packed strings: item i is data[offsets[i] .. offsets[i+1]) (offsets non-decreasing, n + 1 of them).
struct PackedStrings {
    const unsigned char* data = nullptr;
    const int64_t* offsets = nullptr;
    size_t n = 0;

    const unsigned char* at(size_t i) const { return data + offsets[i]; }
    size_t length(size_t i) const { return static_cast<size_t>(offsets[i + 1] - offsets[i]); }
};

// keys[i] = the key of the first prefix[i] symbols (bits: bits) of item i's x⊥ (prefix[i] >= 1).
inline void string_prefix_keys(uint64_t hash_key, const PackedStrings& s, const int64_t* prefix, uint64_t* keys,
                               unsigned threads, bool bits = false) {
    StringPrefixHash::check_key(hash_key);
    constexpr size_t kBlock = size_t{1} << 14;
    parallel_tasks((s.n + kBlock - 1) / kBlock, threads, [&](size_t blk) {
        const size_t end = std::min(s.n, (blk + 1) * kBlock);
        for (size_t i = blk * kBlock; i < end; ++i)
            keys[i] = bits ? StringPrefixHash::prefix_key_bits(hash_key, s.at(i), s.length(i), static_cast<uint64_t>(prefix[i]))
                           : StringPrefixHash::prefix_key(hash_key, s.at(i), s.length(i), static_cast<size_t>(prefix[i]));
    });
}

// Clients of the heavy-hitters methods over strings (hh_clients: secret group, pool index,
// exact g-ary randomized response). Group kinds: 0, the key of the first `shift` bits of x⊥
// (shift >= 1: prefix levels, and a whole string with shift > 8 max_length); 1, the key
// 2 aux[i] + padded_bit(x, shift) (Bitstogram; shift < 8 (max_length + 1), aux the public bucket).
template <class Family>
void string_hh_privatize(Family& family, const exact::RandomizedResponseKernel& kernel,
                         const std::vector<HeavyHitterGroup>& groups, const uint64_t* pool, uint64_t pool_size,
                         uint64_t hash_key, uint64_t max_length, const PackedStrings& s, const uint64_t* aux,
                         int64_t* out_groups, int64_t* indices, int64_t* values, unsigned threads) {
    HeavyHitters::check_weights(groups, pool_size);
    StringPrefixHash::check_key(hash_key);
    for (const auto& gr : groups) {
        if (gr.kind > 1) throw std::invalid_argument("group kind must be 0 (bit prefix) or 1 (padded bit)");
        if (gr.kind == 0 && gr.shift == 0) throw std::invalid_argument("prefix groups must have at least 1 bit");
        if (gr.kind == 1 && (gr.shift >= 8 * (max_length + 1) || !aux))
            throw std::invalid_argument("bit groups need aux and a bit below 8 (max_length + 1)");
    }
    for (size_t i = 0; i < s.n; ++i)
        if (s.length(i) > max_length) throw std::invalid_argument("items must be at most max_length bytes");
    hh_clients(family, kernel, groups, pool, s.n, out_groups, indices, values, threads,
               [hash_key, max_length, &s, aux](const HeavyHitterGroup& gr, size_t i) {
                   return gr.kind == 0 ? StringPrefixHash::prefix_key_bits(hash_key, s.at(i), s.length(i), gr.shift)
                                       : (aux[i] << 1) | StringPrefixHash::padded_bit(s.at(i), s.length(i),
                                                                                     static_cast<size_t>(max_length), gr.shift);
               });
}

// string_pem's clients: levels[l] = b_l symbols (strictly increasing, >= 1); cumulative: empty
// (uniform levels) or cumulative[l] = w_0 + ... + w_l for integer weights w_l >= 1 (strictly
// increasing, one per level, total < 2^62); pool: 4 words per seed, k_prime <= pool_size seeds used.
// The level of b symbols is the group of kind 0 over 8b bits (same keys, same draws).
template <class Family>
void string_pem_privatize(Family& family, const exact::RandomizedResponseKernel& kernel,
                          const std::vector<uint64_t>& levels, const std::vector<uint64_t>& cumulative,
                          const uint64_t* pool, uint64_t pool_size, uint64_t k_prime, uint64_t hash_key,
                          const PackedStrings& s, int64_t* out_levels, int64_t* indices, int64_t* values,
                          unsigned threads) {
    if (levels.empty()) throw std::invalid_argument("levels must not be empty");
    for (size_t l = 0; l < levels.size(); ++l)
        if (levels[l] == 0 || (l && levels[l] <= levels[l - 1]) || levels[l] > (uint64_t{1} << 28))
            throw std::invalid_argument("levels must be strictly increasing prefix lengths in [1, 2^28]");
    if (!cumulative.empty()) {
        if (cumulative.size() != levels.size())
            throw std::invalid_argument("level weights must have one entry per level");
        for (size_t l = 0; l < cumulative.size(); ++l)
            if (cumulative[l] <= (l ? cumulative[l - 1] : 0))
                throw std::invalid_argument("cumulative level weights must be strictly increasing (weights >= 1)");
        if (cumulative.back() >= (uint64_t{1} << 62)) throw std::invalid_argument("level weights must sum below 2^62");
    }
    if (k_prime == 0 || k_prime > pool_size) throw std::invalid_argument("k_prime must be in [1, pool size]");
    std::vector<HeavyHitterGroup> groups;
    for (size_t l = 0; l < levels.size(); ++l)
        groups.push_back(HeavyHitterGroup{cumulative.empty() ? l + 1 : cumulative[l], 0,
                                          static_cast<uint32_t>(8 * levels[l]), k_prime});
    string_hh_privatize(family, kernel, groups, pool, pool_size, hash_key, UINT64_MAX / 16, s, nullptr, out_levels,
                        indices, values, threads);
}

}  // namespace dpnoise::ldp
