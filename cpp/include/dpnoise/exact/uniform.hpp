// dpnoise/exact/uniform.hpp -- unbiased uniform integers from random bits.
// uniform_below(n): draw k = bit_length(n-1) bits and reject values >= n (rejection sampling;
// each try succeeds with probability n/2^k > 1/2, so fewer than 2k bits are used on average).
#pragma once
#include <cstdint>
#include <stdexcept>

namespace dpnoise::exact {

// Uniform on {0, ..., n-1}; n >= 1.
template <class Bits>
inline uint64_t uniform_below(Bits& bits, uint64_t n) {
    if (n <= 1) {
        if (n == 0) throw std::invalid_argument("uniform_below: n must be >= 1");
        return 0;
    }
    const unsigned k = 64u - static_cast<unsigned>(__builtin_clzll(n - 1));
    for (;;) {
        const uint64_t x = bits.bits(k);
        if (x < n) return x;
    }
}

// Uniform on {0, ..., m} for any 64-bit m (m = 2^64 - 1 is the whole word).
template <class Bits>
inline uint64_t uniform_at_most(Bits& bits, uint64_t m) {
    if (m == UINT64_MAX) return bits.bits(64);
    return uniform_below(bits, m + 1);
}

}  // namespace dpnoise::exact
