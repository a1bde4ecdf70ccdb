// dpnoise/exact/exp_fixed_bounds.hpp -- fast certified 32-bit bounds of e^{-x} in fixed point:
// the alternating series for small x (the geometric table's acceptance step) and small
// certified tables of e^{-k}, e^{-j/2^8}, e^{-j/2^16} for any f (the discrete Gaussian's).
#pragma once
#include <algorithm>
#include <cstdint>

#include "dpnoise/exact/certified_exp.hpp"
#include "dpnoise/exact/lazy_comparison.hpp"

namespace dpnoise::exact {

// ---------------------------------------------------------------- small certified exponentials
// 64-bit fixed-point helpers (values scaled by 2^64), rounding in a chosen direction.
inline uint64_t mulhi_floor(uint64_t a, uint64_t b) { return static_cast<uint64_t>((static_cast<u128>(a) * b) >> 64); }
inline uint64_t mulhi_ceil(uint64_t a, uint64_t b) {
    const u128 p = static_cast<u128>(a) * b;
    return static_cast<uint64_t>(p >> 64) + (static_cast<uint64_t>(p) != 0 ? 1 : 0);
}

// floor(v / K) for v < 2^61 and 1 <= K <= 5 by a multiplication: with M = floor(2^64/K) + 1,
// v M / 2^64 = v/K + err with 0 <= err < v/2^64 < 1/8 < 1/K, which cannot cross the next
// integer (v/K's fractional part is at most (K-1)/K).
template <uint64_t K>
inline uint64_t div_small(uint64_t v) {
    static_assert(K >= 1 && K <= 5, "div_small is exact only for small K");
    if (K == 1) return v;
    constexpr uint64_t M = UINT64_MAX / K + 1;
    return mulhi_floor(v, M);
}

// One step of the term chains p_k = p_{k-1} x / k, floor and ceil versions; K is a constant so
// the divisions compile to multiplications.
template <uint64_t K>
inline void series_step(uint64_t& fl, uint64_t& cl, uint64_t x) {
    fl = div_small<K>(mulhi_floor(fl, x));
    cl = div_small<K>(mulhi_ceil(cl, x) + (K - 1));  // ceil; x < 2^61 keeps values < 2^61
}

// Partial sums of the alternating series e^{-x} = sum_k (-x)^k / k!, x·2^64 given, 0 <= x < 1/8,
// in 64-bit fixed point with directed rounding (terms decrease, so a partial sum ending with a
// subtracted term is a lower bound and one ending with an added term an upper bound):
//   exp_small_lower: terms k = 0..5 (added terms rounded down, subtracted ones up), error <= x^6/720
//   exp_small_upper: terms k = 0..4 (the opposite rounding),                        error <= x^5/120
// Both are scaled by 2^64 (the upper one as u128, since it may equal 1).
inline uint64_t exp_small_lower(uint64_t x) {
    // chains start at 1 - 2^-64 (floor) and 1 (ceil, represented as UINT64_MAX then +1 below)
    uint64_t fl = UINT64_MAX, cl = UINT64_MAX;
    u128 acc = static_cast<u128>(1) << 64;
    series_step<1>(fl, cl, x); acc -= static_cast<u128>(cl) + 1;   // - x   (rounded up)
    series_step<2>(fl, cl, x); acc += fl;                           // + x^2/2 (down)
    series_step<3>(fl, cl, x); acc -= static_cast<u128>(cl) + 1;   // - x^3/6
    series_step<4>(fl, cl, x); acc += fl;                           // + x^4/24
    series_step<5>(fl, cl, x); acc -= static_cast<u128>(cl) + 1;   // - x^5/120
    return acc >= (static_cast<u128>(1) << 64) ? UINT64_MAX : static_cast<uint64_t>(acc);
}

inline u128 exp_small_upper(uint64_t x) {
    uint64_t fl = UINT64_MAX, cl = UINT64_MAX;
    u128 acc = static_cast<u128>(1) << 64;
    series_step<1>(fl, cl, x); acc -= fl;                           // - x   (rounded down)
    series_step<2>(fl, cl, x); acc += static_cast<u128>(cl) + 1;   // + x^2/2 (up)
    series_step<3>(fl, cl, x); acc -= fl;                           // - x^3/6
    series_step<4>(fl, cl, x); acc += static_cast<u128>(cl) + 1;   // + x^4/24
    return std::min<u128>(acc, static_cast<u128>(1) << 64);
}

// 32-bit bounds of e^{-x} for x·2^64 in [xlo, xhi], 0 <= x < 1/8 (the lower bound of the series
// at xhi, the upper at xlo).
inline Bounds32 exp_small_bounds32(uint64_t xlo, uint64_t xhi) {
    Bounds32 b;
    b.lo = static_cast<uint32_t>(exp_small_lower(xhi) >> 32);
    const u128 up = exp_small_upper(xlo);
    b.hi = static_cast<uint64_t>((up >> 32) + ((up & 0xffffffffu) != 0));
    return b;
}

// ---------------------------------------------------------------- certified e^{-f} in fixed point
// For the discrete Gaussian's acceptance e^{-f} (f known to 32 fraction bits with a certified
// error): e^{-f} = e^{-K} e^{-j1/2^8} e^{-j2/2^16} e^{-delta} is bounded from small certified
// tables and the alternating series of e^{-delta}; where the bounds do not decide, the
// comparison is refined exactly.
struct ExpTables {
    // 64-bit bounds (scaled by 2^64) of e^{-k} (k = 0..24), e^{-j/2^8} and e^{-j/2^16} (j = 0..255)
    uint64_t int_lo[25], f1_lo[256], f2_lo[256];
    u128 int_hi[25], f1_hi[256], f2_hi[256];

    ExpTables() {
        const int L = 2;
        for (unsigned k = 0; k < 25; ++k) set(exp_rational(BigUint(k), BigUint(1), true, L), int_lo[k], int_hi[k], L);
        for (unsigned j = 0; j < 256; ++j) {
            set(exp_rational(BigUint(j), BigUint(256), true, L), f1_lo[j], f1_hi[j], L);
            set(exp_rational(BigUint(j), BigUint(65536), true, L), f2_lo[j], f2_hi[j], L);
        }
    }
    static void set(const Enclosure& e, uint64_t& lo, u128& hi, int L) {
        const size_t drop = static_cast<size_t>(64 * (L - 1));
        const BigUint l = shift_right(e.lo, drop);
        bool lost = false;
        BigUint h = shift_right(e.hi, drop, &lost);
        if (lost) h = add_small(h, 1);
        lo = l.limb.size() > 1 ? UINT64_MAX : (l.is_zero() ? 0 : l.limb[0]);  // e^0 = 1: just below
        hi = h.limb.size() > 1 ? (static_cast<u128>(h.limb[1]) << 64) | h.limb[0] : (h.is_zero() ? 0 : h.limb[0]);
        hi = std::min<u128>(hi, static_cast<u128>(1) << 64);  // every constant here is <= 1
    }
    static const ExpTables& get() {
        static const ExpTables tables;
        return tables;
    }
};

// 32-bit bounds of e^{-f} for f·2^32 in [flo, fhi]: e^{-f} = e^{-K} e^{-j1/2^8} e^{-j2/2^16}
// e^{-delta} with K = floor(f), j1, j2 the next two bytes and delta < 2^-16 the rest; then
// 1 - delta <= e^{-delta} <= 1 - delta + delta^2/2. Lower bounds multiply lower bounds rounding
// down, upper bounds multiply upper bounds rounding up (each upper bound clamped at 1).
inline uint32_t exp_lower32_fixed(const ExpTables& T, u128 fhi) {
    if ((fhi >> 32) >= 24) return 0;
    const unsigned K = static_cast<unsigned>(fhi >> 32);
    const unsigned j1 = static_cast<unsigned>((fhi >> 24) & 255), j2 = static_cast<unsigned>((fhi >> 16) & 255);
    const uint64_t delta = static_cast<uint64_t>(fhi & 0xffff) << 32;  // delta·2^64 < 2^48
    const uint64_t one_minus = ~delta;  // 2^64 - 1 - delta <= (1 - delta)·2^64
    const uint64_t v = mulhi_floor(mulhi_floor(mulhi_floor(T.int_lo[K], T.f1_lo[j1]), T.f2_lo[j2]), one_minus);
    return static_cast<uint32_t>(v >> 32);
}

inline uint64_t exp_upper32_fixed(const ExpTables& T, u128 flo) {
    if ((flo >> 32) >= 24) return 1;  // e^{-f} < e^{-24} < 2^-32
    const u128 one = static_cast<u128>(1) << 64;
    const unsigned K = static_cast<unsigned>(flo >> 32);
    const unsigned j1 = static_cast<unsigned>((flo >> 24) & 255), j2 = static_cast<unsigned>((flo >> 16) & 255);
    const uint64_t delta = static_cast<uint64_t>(flo & 0xffff) << 32;
    const u128 ed = one - delta + (mulhi_ceil(delta, delta) >> 1) + 1;  // >= 1 - delta + delta^2/2
    auto mul_up = [&](u128 a, u128 c) -> u128 {  // ceil(a c / 2^64) for a, c <= 2^64
        if (a >= one) return c;
        if (c >= one) return a;
        const u128 pr = static_cast<u128>(static_cast<uint64_t>(a)) * static_cast<uint64_t>(c);
        return (pr >> 64) + (static_cast<uint64_t>(pr) != 0 ? 1 : 0);
    };
    const u128 v = mul_up(mul_up(mul_up(T.int_hi[K], T.f1_hi[j1]), T.f2_hi[j2]), std::min(ed, one));
    return static_cast<uint64_t>((v >> 32) + ((v & 0xffffffffu) != 0));
}


// floor((x2 2^128 + x1 2^64 + x0) / 2^s), or 2^100 if that would be larger (any such value
// means f >= 2^68, far beyond where e^{-f} matters).
inline u128 shr192_saturated(uint64_t x2, uint64_t x1, uint64_t x0, unsigned s) {
    const unsigned bl = x2 ? 128 + 64 - static_cast<unsigned>(__builtin_clzll(x2))
                      : x1 ? 64 + 64 - static_cast<unsigned>(__builtin_clzll(x1))
                      : x0 ? 64 - static_cast<unsigned>(__builtin_clzll(x0)) : 0;
    const u128 cap = static_cast<u128>(1) << 100;
    if (bl <= s) return 0;
    if (bl - s > 100) return cap;
    if (s >= 128) return static_cast<u128>(x2 >> (s - 128));
    if (s >= 64) {
        const unsigned r = s - 64;
        if (r == 0) return (static_cast<u128>(x2) << 64) | x1;
        return (static_cast<u128>(x2) << (64 - r)) | (x1 >> r);
    }
    // s < 64 and the result has at most 100 bits, so x2 << (128 - s) fits
    const u128 low = s == 0 ? ((static_cast<u128>(x1) << 64) | x0) : ((static_cast<u128>(x1) << (64 - s)) | (x0 >> s));
    return low | (x2 ? (static_cast<u128>(x2) << (128 - s)) : 0);
}

}  // namespace dpnoise::exact
