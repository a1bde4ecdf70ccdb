// dpnoise/exact/geometric.hpp -- the geometric distribution with rational scale t/s:
//   P[Y = y] = (1 - e^{-s/t}) e^{-y s/t},  y = 0, 1, 2, ...
// Canonne, Kamath & Steinke (2020), Algorithm 2 (the part before the sign):
//   repeat: U <- uniform{0..t-1}; accept with probability exp(-U/t)
//   V <- number of successes of Bernoulli(exp(-1)) before the first failure
//   X <- U + t V   (then P[X = x] is proportional to exp(-x/t))
//   Y <- floor(X / s)
#pragma once
#include <cstdint>
#include <stdexcept>

#include "dpnoise/exact/bernoulli.hpp"
#include "dpnoise/exact/uniform.hpp"

namespace dpnoise::exact {

// t = 0 means scale 0: always 0. Requires s >= 1. Throws std::overflow_error if the draw does
// not fit in int64 (possible only for scales near 2^62; never wraps).
template <class Bits>
inline uint64_t geometric_exp(Bits& bits, uint64_t t, uint64_t s) {
    if (t == 0) return 0;
    uint64_t u;
    do {
        u = uniform_below(bits, t);
    } while (!bernoulli_exp_minus_fraction<Bits, uint64_t>(bits, u, t));
    uint64_t v = 0;
    while (bernoulli_exp_minus_one(bits)) ++v;
    const u128 x = static_cast<u128>(t) * v + u;
    const u128 y = s == 1 ? x : x / s;
    if (y > static_cast<u128>(INT64_MAX)) throw std::overflow_error("geometric sample does not fit in int64");
    return static_cast<uint64_t>(y);
}

}  // namespace dpnoise::exact
