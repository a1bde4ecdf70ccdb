// dpnoise/exact/bernoulli.hpp -- Bernoulli(p) for rational p and Bernoulli(exp(-gamma)) for
// rational gamma >= 0, with integer arithmetic only.
//
// bernoulli_rational(a, b), p = a/b: compares a uniform u = 0.u1u2... with the binary
// expansion of p produced by long division, digit by digit, and stops at the first digit
// where they differ (u < p iff u has the 0 there). Exact; about 2 random bits per call.
//
// bernoulli_exp_minus(num, den), gamma = num/den: Canonne, Kamath & Steinke (2020),
// "The Discrete Gaussian for Differential Privacy", Algorithm 1:
//   gamma in [0,1]: K <- 1; while Bernoulli(gamma/K): K <- K+1; return K odd.
//     (P[K > k] = gamma^k/k!, so P[K odd] = sum_j (-gamma)^j/j! = exp(-gamma).)
//   gamma > 1: floor(gamma) independent Bernoulli(exp(-1)) trials, then exp(-(gamma - floor)).
#pragma once
#include <cstdint>
#include <type_traits>

#include "dpnoise/exact/wide_uint.hpp"

namespace dpnoise::exact {

// Bernoulli(a/b) with 0 <= a and 1 <= b; a >= b gives true. U is uint64_t, u128 or WideUint,
// and b must leave the top bit of U clear (checked by the callers that build b).
//
// Where the width allows, the comparison takes k = 16 (or 64) digits at once without division:
// with u = the next k random bits and x = a 2^k,
//   (u+1) b <= x  means  u/2^k + 2^-k <= p: the uniform is below p whatever its other bits;
//   u b >= x      means  u/2^k >= p: it is not below p;
//   otherwise p lies strictly inside [u/2^k, (u+1)/2^k) and the comparison continues with
//   the remainder p' = (x - u b)/b against the uniform's next digits.
template <class Bits, class U>
inline bool bernoulli_rational(Bits& bits, U a, const U& b) {
    if (a >= b) return true;
    if (is_zero(a)) return false;
    if constexpr (std::is_same_v<U, uint64_t>) {
        if (b < (uint64_t{1} << 48)) {
            for (;;) {
                const uint64_t x = a << 16;
                const uint64_t low = bits.bits(16) * b;
                if (low + b <= x) return true;
                if (low >= x) return false;
                a = x - low;
            }
        }
        for (;;) {  // b < 2^63: 64 digits at a time in 128-bit arithmetic
            const u128 x = static_cast<u128>(a) << 64;
            const u128 low = static_cast<u128>(bits.bits(64)) * b;
            if (low + b <= x) return true;
            if (low >= x) return false;
            a = static_cast<uint64_t>(x - low);
        }
    } else if constexpr (std::is_same_v<U, u128>) {
        if (b < (static_cast<u128>(1) << 48))
            return bernoulli_rational<Bits, uint64_t>(bits, static_cast<uint64_t>(a), static_cast<uint64_t>(b));
        if (b < (static_cast<u128>(1) << 111)) {
            for (;;) {
                const u128 x = a << 16;
                const u128 low = static_cast<u128>(bits.bits(16)) * b;
                if (low + b <= x) return true;
                if (low >= x) return false;
                a = x - low;
            }
        }
    }
    for (;;) {  // one digit at a time (wide integers, or b too close to the type's limit)
        double_in_place(a);
        const bool digit = a >= b;
        if (digit) a -= b;
        const bool u = bits.bit();
        if (u != digit) return digit;
        if (is_zero(a)) return false;
    }
}

// Bernoulli(1/k) for k >= 1.
template <class Bits>
inline bool bernoulli_one_over(Bits& bits, uint64_t k) {
    return bernoulli_rational<Bits, uint64_t>(bits, 1, k);
}

// Bernoulli(exp(-1)): Algorithm 1 with gamma = 1 (the first trial, Bernoulli(1/1), always succeeds).
template <class Bits>
inline bool bernoulli_exp_minus_one(Bits& bits) {
    if (!bits.bit()) return false;  // K = 2: Bernoulli(1/2) is one fair bit
    uint64_t k = 3;
    while (bernoulli_one_over(bits, k)) ++k;
    return (k & 1u) != 0;
}

// Bernoulli(exp(-num/den)) for 0 <= num < den (Algorithm 1, gamma in [0,1)). When den*K no
// longer fits with a spare bit, the remaining trials continue in the next wider type.
template <class Bits, class U>
inline bool bernoulli_exp_minus_fraction(Bits& bits, const U& num, const U& den, uint64_t k = 1) {
    if (is_zero(num)) return true;
    for (;; ++k) {
        U den_k;
        if (!mul_small_checked(den, k, den_k)) {
            if constexpr (std::is_same_v<U, WideUint>) {
                throw std::overflow_error("bernoulli_exp: exponent denominator too large");
            } else {
                return bernoulli_exp_minus_fraction(bits, widen(num), widen(den), k);
            }
        }
        if (!bernoulli_rational(bits, num, den_k)) break;
    }
    return (k & 1u) != 0;
}

// Bernoulli(exp(-num/den)) for num >= 0, den >= 1.
template <class Bits, class U>
inline bool bernoulli_exp_minus(Bits& bits, U num, const U& den) {
    while (num >= den) {
        num -= den;
        if (!bernoulli_exp_minus_one(bits)) return false;
    }
    return bernoulli_exp_minus_fraction(bits, num, den);
}

}  // namespace dpnoise::exact
