// dpnoise/exact/wide_uint.hpp -- the integer types of the exact samplers beyond 64 bits:
// u128 (the one 128-bit alias) and FixedUint<N>, an N-limb fixed-width unsigned integer. Two
// widths are used: WideUint = FixedUint<8> (512 bits) for the rare products that do not fit in
// 128 bits (the discrete Gaussian's acceptance exponent in the tails), and Fx = FixedUint<4>
// (fixed_enclosure.hpp) for the 256-bit fixed-point table constants. Arbitrary precision (the
// exact refinement path) is BigUint's job (certified_exp.hpp). Only what the samplers need:
// compare, subtract, shift, multiply; every operation that could overflow throws
// std::overflow_error instead of wrapping.
#pragma once
#include <cstddef>
#include <cstdint>
#include <stdexcept>

namespace dpnoise::exact {

using u128 = unsigned __int128;

template <int N>
struct FixedUint {
    static constexpr int kLimbs = N;  // little-endian 64-bit limbs
    uint64_t limb[N] = {};

    FixedUint() = default;
    explicit FixedUint(u128 v) {
        static_assert(N >= 2, "a u128 needs two limbs");
        limb[0] = static_cast<uint64_t>(v);
        limb[1] = static_cast<uint64_t>(v >> 64);
    }

    bool is_zero() const {
        for (uint64_t l : limb)
            if (l) return false;
        return true;
    }
    bool top_bit() const { return (limb[kLimbs - 1] >> 63) != 0; }

    friend bool operator<(const FixedUint& a, const FixedUint& b) {
        for (int i = kLimbs - 1; i >= 0; --i)
            if (a.limb[i] != b.limb[i]) return a.limb[i] < b.limb[i];
        return false;
    }
    friend bool operator>=(const FixedUint& a, const FixedUint& b) { return !(a < b); }
    friend bool operator==(const FixedUint& a, const FixedUint& b) { return !(a < b) && !(b < a); }

    // Requires *this >= b.
    FixedUint& operator-=(const FixedUint& b) {
        uint64_t borrow = 0;
        for (int i = 0; i < kLimbs; ++i) {
            const u128 d = static_cast<u128>(limb[i]) - b.limb[i] - borrow;
            limb[i] = static_cast<uint64_t>(d);
            borrow = static_cast<uint64_t>(d >> 64) & 1u;
        }
        return *this;
    }

    // Shift left by one bit; throws if the top bit would be lost.
    void double_in_place() {
        if (top_bit()) throw std::overflow_error("WideUint overflow in shift");
        for (int i = kLimbs - 1; i > 0; --i) limb[i] = (limb[i] << 1) | (limb[i - 1] >> 63);
        limb[0] <<= 1;
    }
};

using WideUint = FixedUint<8>;  // 512 bits

// Full product; throws if it needs more than 512 bits.
inline WideUint wide_multiply(const WideUint& a, const WideUint& b) {
    uint64_t r[2 * WideUint::kLimbs] = {};
    for (int i = 0; i < WideUint::kLimbs; ++i) {
        if (!a.limb[i]) continue;
        uint64_t carry = 0;
        for (int j = 0; j < WideUint::kLimbs; ++j) {
            const u128 p = static_cast<u128>(a.limb[i]) * b.limb[j] + r[i + j] + carry;
            r[i + j] = static_cast<uint64_t>(p);
            carry = static_cast<uint64_t>(p >> 64);
        }
        r[i + WideUint::kLimbs] = carry;
    }
    WideUint out;
    for (int i = 0; i < WideUint::kLimbs; ++i) out.limb[i] = r[i];
    for (int i = WideUint::kLimbs; i < 2 * WideUint::kLimbs; ++i)
        if (r[i]) throw std::overflow_error("WideUint overflow in multiply");
    return out;
}

// --- checked arithmetic used by the templated samplers (u64, u128, WideUint) -----------
// mul_small_checked: out = a * k, false if the product would not leave the top bit clear
// (the lazy Bernoulli comparator doubles its remainder, so it needs one spare bit).
inline bool mul_small_checked(uint64_t a, uint64_t k, uint64_t& out) {
    return !__builtin_mul_overflow(a, k, &out) && (out >> 63) == 0;
}
inline bool mul_small_checked(u128 a, uint64_t k, u128& out) {
    return !__builtin_mul_overflow(a, static_cast<u128>(k), &out) && (out >> 127) == 0;
}
inline bool mul_small_checked(const WideUint& a, uint64_t k, WideUint& out) {
    WideUint kk(static_cast<u128>(k));
    out = wide_multiply(a, kk);  // throws on overflow beyond 512 bits
    return !out.top_bit();
}

inline bool is_zero(uint64_t x) { return x == 0; }
inline bool is_zero(u128 x) { return x == 0; }
inline bool is_zero(const WideUint& x) { return x.is_zero(); }
inline void double_in_place(uint64_t& x) { x <<= 1; }
inline void double_in_place(u128& x) { x <<= 1; }
inline void double_in_place(WideUint& x) { x.double_in_place(); }

template <class U> struct wider;
template <> struct wider<uint64_t> { using type = u128; };
template <> struct wider<u128> { using type = WideUint; };
template <class U> inline typename wider<U>::type widen(const U& x) { return typename wider<U>::type(x); }

}  // namespace dpnoise::exact
