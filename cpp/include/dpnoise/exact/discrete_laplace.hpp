// dpnoise/exact/discrete_laplace.hpp -- the discrete Laplace distribution with rational scale
// t/s:  P[Z = z] proportional to exp(-|z| s/t), z in Z.
// Canonne, Kamath & Steinke (2020), Algorithm 2: Y <- geometric(t/s); B <- fair bit;
// reject (Y = 0, B = 1) so that zero is not counted twice; return (1 - 2B) Y.
#pragma once
#include <cstdint>

#include "dpnoise/exact/geometric.hpp"

namespace dpnoise::exact {

template <class Bits>
inline int64_t discrete_laplace(Bits& bits, uint64_t t, uint64_t s) {
    if (t == 0) return 0;
    for (;;) {
        const uint64_t y = geometric_exp(bits, t, s);
        const bool negative = bits.bit();
        if (negative && y == 0) continue;
        return negative ? -static_cast<int64_t>(y) : static_cast<int64_t>(y);
    }
}

}  // namespace dpnoise::exact
