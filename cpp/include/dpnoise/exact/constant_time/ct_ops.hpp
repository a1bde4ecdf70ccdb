// dpnoise/exact/constant_time/ct_ops.hpp -- branch-free word operations for the constant-time
// samplers: comparisons that return 0/1 as an integer, masks, conditional negation. Each is
// plain integer arithmetic (no comparison feeds a branch, no value feeds an address), so its
// running time is the same for every input on CPUs whose add/sub/and/or/xor/shift/imul take a
// fixed time (all x86-64 and AArch64 cores; see docs/security.md for the assumptions).
#pragma once
#include <cstdint>

#include "dpnoise/exact/wide_uint.hpp"

namespace dpnoise::exact::ct {

// The optimiser may not turn a value that passed through here into a branch condition it
// reasons about (an empty asm that "may change" the register): a value barrier, as in BearSSL
// and libsodium.
inline uint64_t value_barrier(uint64_t x) {
#if defined(__GNUC__) || defined(__clang__)
    __asm__("" : "+r"(x));
#endif
    return x;
}

// 1 if a < b (unsigned), else 0: the borrow out of a - b (Warren, Hacker's Delight, 2nd ed.,
// section 2-12): borrow = (~a & b) | (~(a ^ b) & (a - b)), top bit.
inline uint64_t lt64(uint64_t a, uint64_t b) {
    const uint64_t d = a - b;
    return value_barrier(((~a & b) | (~(a ^ b) & d)) >> 63);
}

// 1 if a == b, else 0: x = a ^ b is zero iff (x | -x) has a clear top bit.
inline uint64_t eq64(uint64_t a, uint64_t b) {
    const uint64_t x = a ^ b;
    return value_barrier(1u ^ ((x | (0 - x)) >> 63));
}

// 1 if (ah 2^64 + al) < (bh 2^64 + bl), else 0.
inline uint64_t lt128(uint64_t ah, uint64_t al, uint64_t bh, uint64_t bl) {
    return lt64(ah, bh) | (eq64(ah, bh) & lt64(al, bl));
}

// all ones if bit == 1, zero if bit == 0 (bit must be 0 or 1)
inline uint64_t mask_of(uint64_t bit) { return 0 - bit; }

// -x if negative == 1, x if negative == 0, by two's complement: (x ^ m) - m with m = -negative.
inline int64_t conditional_negate(uint64_t x, uint64_t negative) {
    const uint64_t m = mask_of(negative);
    return static_cast<int64_t>((x ^ m) - m);
}

// 1 if a < b as signed integers (flip the top bits, compare unsigned).
inline uint64_t lt_signed(int64_t a, int64_t b) {
    constexpr uint64_t kTop = uint64_t{1} << 63;
    return lt64(static_cast<uint64_t>(a) ^ kTop, static_cast<uint64_t>(b) ^ kTop);
}

// clamp(v, -bound, bound) by masks (0 <= bound < 2^63).
inline int64_t clamp_ct(int64_t v, int64_t bound) {
    const uint64_t above = mask_of(lt_signed(bound, v)), below = mask_of(lt_signed(v, -bound));
    const uint64_t keep = ~(above | below);
    return static_cast<int64_t>((static_cast<uint64_t>(v) & keep) | (static_cast<uint64_t>(bound) & above) |
                                (static_cast<uint64_t>(-bound) & below));
}

// A 128-bit threshold split into words, for the branch-free comparisons.
struct Threshold128 {
    uint64_t hi = 0, lo = 0;
};

inline Threshold128 split(u128 t) { return {static_cast<uint64_t>(t >> 64), static_cast<uint64_t>(t)}; }

// 1 if the 128-bit uniform (uh, ul) is below t: a Bernoulli(t / 2^128) in constant time.
inline uint64_t below(uint64_t uh, uint64_t ul, const Threshold128& t) { return lt128(uh, ul, t.hi, t.lo); }

}  // namespace dpnoise::exact::ct
