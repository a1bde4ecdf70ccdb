// dpnoise/ldp/walsh_hadamard.hpp -- the fast Walsh–Hadamard transform, in place, in integers.
//
// out[x] = Σ_j in[j] H[j, x] with H[j, x] = (−1)^{popcount(j & x)} (the Sylvester–Hadamard
// matrix of order D = 2^t, natural order), by t butterfly passes (Fino & Algazi 1976,
// "Unified matrix treatment of the fast Walsh–Hadamard transform"): O(D log D) additions.
// Integer arithmetic, so the result is exact; the caller bounds Σ |in[j]| below 2^63 (then
// no partial sum overflows: every partial sum is a signed sum of a subset of the inputs).
#pragma once
#include <cstddef>
#include <cstdint>
#include <stdexcept>

namespace dpnoise::ldp {

inline bool is_power_of_two(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

// The least power of two >= v (v >= 1, v <= 2^63).
inline uint64_t next_power_of_two(uint64_t v) {
    if (v == 0 || v > (uint64_t{1} << 63)) throw std::invalid_argument("next_power_of_two: v must be in [1, 2^63]");
    uint64_t p = 1;
    while (p < v) p <<= 1;
    return p;
}

// H[j, x] as a bit: 0 for +1, 1 for −1.
inline unsigned hadamard_sign_bit(uint64_t row, uint64_t col) {
    return static_cast<unsigned>(__builtin_popcountll(row & col) & 1);
}

// In place on a[0 .. D), D a power of two.
inline void walsh_hadamard_transform(int64_t* a, uint64_t D) {
    if (!is_power_of_two(D)) throw std::invalid_argument("the transform length must be a power of two");
    for (uint64_t h = 1; h < D; h <<= 1)
        for (uint64_t i = 0; i < D; i += 2 * h)
            for (uint64_t j = i; j < i + h; ++j) {
                const int64_t u = a[j], v = a[j + h];
                a[j] = u + v;
                a[j + h] = u - v;
            }
}

}  // namespace dpnoise::ldp
