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
template <class Bits, class U>
inline bool bernoulli_rational(Bits& bits, U a, const U& b) {
    if (a >= b) return true;
    if (is_zero(a)) return false;
    if constexpr (std::is_same_v<U, uint64_t>) {
        if (b <= (uint64_t{1} << 32)) {
            // 32 digits of p at a time: D = floor(a 2^32 / b) against 32 random bits.
            for (;;) {
                const uint64_t x = a << 32;
                const uint64_t digits = x / b;
                a = x % b;
                const uint64_t u = bits.bits(32);
                if (u != digits) return u < digits;
                if (a == 0) return false;
            }
        }
    }
    for (;;) {
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
    uint64_t k = 2;
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
