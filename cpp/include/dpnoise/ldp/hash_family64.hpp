// dpnoise/ldp/hash_family64.hpp -- a hash family for 64-bit keys (heavy hitters' prefixes and items).
//
// A hash function is named by a seed (a, b) of two 128-bit words (four 64-bit words, low word
// first). A key x in [0, 2^64) hashes to 64 bits by multiply-add-shift with 128-bit arithmetic,
//     H_{a,b}(x) = ((a x + b) mod 2^128) >> 64,
// which is STRONGLY universal for a, b uniform on [0, 2^128): for any x != x', the pair
// (H(x), H(x')) is uniform on [0, 2^64)^2 (Dietzfelbinger 1996, "Universal hashing and k-wise
// independent random variables via integer arithmetic without primes", STACS, Thm 3; Thorup
// 2015, "High speed hashing for integers and strings", §3.3 with w = l = 64 and 2w-bit a, b).
// The 64-bit value is reduced to a bucket in [0, g) by multiply-high (Lemire 2019, "Fast random
// integer generation in an interval", ACM TOMACS 29(1)):
//     h_{a,b}(x) = (H_{a,b}(x) g) >> 64,
// so P[h(x) = v] = 1/g ± 2^-64 and P[h(x) = h(x')] = 1/g up to a relative 2^-128 g^2/4, as for
// the 32-bit family of hash_family.hpp.
//
// As in FLH (hash_family.hpp), keys are first scrambled by a fixed public bijection π of
// [0, 2^64), MurmurHash3's 64-bit finaliser "fmix64" (Appleby 2011): heavy-hitter candidates are
// structured sets (a prefix followed by every η-bit suffix: consecutive keys), whose collisions
// under ONE linear hash function co-vary; π makes them behave like random keys and leaves strong
// universality unchanged (distinct x have distinct π(x)).
#pragma once
#include <cstdint>

#include "dpnoise/ldp/hash_family.hpp"

namespace dpnoise::ldp {

struct HashSeed128 {
    unsigned __int128 a = 0, b = 0;
};

struct HashFamily64 {
    static constexpr uint64_t kMaxBuckets = HashFamily::kMaxBuckets;  // the heavy-hitters oracles use g <= 2^32

    static void check_buckets(uint64_t g) { HashFamily::check_buckets(g); }

    // The seed of words w[0..3]: a = w[1] 2^64 + w[0], b = w[3] 2^64 + w[2].
    static HashSeed128 seed(const uint64_t* w) {
        return HashSeed128{(static_cast<unsigned __int128>(w[1]) << 64) | w[0],
                           (static_cast<unsigned __int128>(w[3]) << 64) | w[2]};
    }

    // π(x): fmix64 (xorshifts and odd multipliers: a bijection of 64-bit words).
    static uint64_t scramble(uint64_t x) {
        return murmur_finaliser<uint64_t>(x, 33, 0xff51afd7ed558ccdULL, 33, 0xc4ceb9fe1a85ec53ULL, 33);
    }

    // H_{a,b}(x): the high 64 bits of a x + b mod 2^128.
    static uint64_t hash64(const HashSeed128& s, uint64_t x) {
        return static_cast<uint64_t>((s.a * x + s.b) >> 64);
    }

    // h_{a,b}(π(x)) in [0, g).
    static uint64_t bucket(const HashSeed128& s, uint64_t x, uint64_t g) {
        return static_cast<uint64_t>((static_cast<unsigned __int128>(hash64(s, scramble(x))) * g) >> 64);
    }
};

}  // namespace dpnoise::ldp
