// dpnoise/ldp/hash_family.hpp -- the hash family of the local-hashing protocols (OLH, FLH).
//
// A hash function is named by a seed (a, b) of two 64-bit words. An item x in [0, 2^32) hashes
// to 32 bits by multiply-add-shift,
//     H_{a,b}(x) = ((a x + b) mod 2^64) >> 32,
// which is STRONGLY universal for a, b uniform on [0, 2^64): for any x != x', the pair
// (H(x), H(x')) is uniform on [0, 2^32)^2 (Dietzfelbinger 1996, "Universal hashing and k-wise
// independent random variables via integer arithmetic without primes", STACS, Thm 3; Thorup
// 2015, "High speed hashing for integers and strings", §3.3: w-bit keys, l-bit values, 2w-bit
// a, b, here w = l = 32). The 32-bit value is reduced to a bucket in [0, g) by multiply-high
// (Lemire 2019, "Fast random integer generation in an interval", ACM TOMACS 29(1)),
//     h_{a,b}(x) = (H_{a,b}(x) g) >> 32,
// with no division and no modulo. Bucket v is the set of 32-bit values [L_v, L_{v+1}),
// L_v = ceil(v 2^32 / g), of size floor(2^32/g) or ceil(2^32/g). So for x != x' and a random
// seed, P[h(x) = v] = |B_v| / 2^32 = 1/g ± 2^-32 and P[h(x) = h(x')] = Σ_v (|B_v|/2^32)^2,
// which lies in [1/g, 1/g + 2^-64 g/4] (exactly 1/g when g is a power of two): the
// collision probability 1/g that the OLH estimator assumes, up to a relative 2^-64 g^2/4.
//
// FLH shares k′ hash functions among all users, so its variance also depends on how the
// collisions of one item with several others co-vary under one function. For a linear family
// they do for structured item sets (items x, x + 1, x + 2 collide together when a is near a
// bucket width: measured 1.5x the independent-collision variance on items 0..4). FLH therefore
// hashes scrambled keys, H_{a,b}(π(x)), π the MurmurHash3 32-bit finaliser (Appleby 2011,
// "fmix32"), a fixed public bijection of [0, 2^32): strong universality is unchanged (distinct x
// have distinct π(x)) and structured item sets behave like random ones (measured 1.00x).
// OLH, whose users hash independently, needs only pairwise independence and hashes x directly.
//
// The aggregation side tests "h(x) = v" without reducing: h(x) = v iff H(x) ∈ [L_v, L_{v+1})
// iff (a x + b − L_v 2^32) mod 2^64 < (L_{v+1} − L_v) 2^32, and a x + b steps by a from one item
// to the next, so scanning consecutive items costs one 64-bit add and one compare per item.
#pragma once
#include <cstdint>
#include <stdexcept>

namespace dpnoise::ldp {

// MurmurHash3's xorshift-multiply finaliser (Appleby 2011) on 32- or 64-bit words: a bijection
// (xorshifts and odd multipliers), fmix32 and fmix64 by their constants.
template <class Word>
constexpr Word murmur_finaliser(Word x, unsigned r1, Word m1, unsigned r2, Word m2, unsigned r3) {
    x ^= x >> r1;
    x *= m1;
    x ^= x >> r2;
    x *= m2;
    return x ^ (x >> r3);
}

struct HashSeed {
    uint64_t a = 0, b = 0;
};

struct HashFamily {
    static constexpr uint64_t kMaxItems = uint64_t{1} << 32;    // items are 32-bit keys
    static constexpr uint64_t kMaxBuckets = uint64_t{1} << 32;  // g <= 2^32: H g fits 64 bits

    static void check_buckets(uint64_t g) {
        if (g < 2) throw std::invalid_argument("g (hash buckets) must be at least 2");
        if (g > kMaxBuckets) throw std::invalid_argument("g (hash buckets) must be at most 2^32");
    }

    // H_{a,b}(x): the 32-bit multiply-add-shift value (x < 2^32).
    static uint32_t hash32(HashSeed s, uint64_t x) { return static_cast<uint32_t>((s.a * x + s.b) >> 32); }

    // π(x): MurmurHash3's fmix32 (xorshifts and odd multipliers: a bijection of 32-bit words).
    static uint64_t scramble(uint64_t x) {
        return murmur_finaliser<uint32_t>(static_cast<uint32_t>(x), 16, 0x85ebca6bu, 13, 0xc2b2ae35u, 16);
    }

    // h_{a,b}(x) in [0, g): multiply-high reduction of the 32-bit value.
    static uint64_t bucket(HashSeed s, uint64_t x, uint64_t g) { return (static_cast<uint64_t>(hash32(s, x)) * g) >> 32; }

    // L_v = ceil(v 2^32 / g): the first 32-bit value of bucket v (v <= g; L_g = 2^32).
    static uint64_t bucket_start(uint64_t v, uint64_t g) {
        // v 2^32 + g − 1 <= 2^64 − 1 for v <= g <= 2^32 (v = g = 2^32 is excluded by v < 2^32 or
        // handled: L_g is 2^32 by definition)
        if (v >= g) return uint64_t{1} << 32;
        return ((v << 32) + (g - 1)) / g;
    }
};

}  // namespace dpnoise::ldp
