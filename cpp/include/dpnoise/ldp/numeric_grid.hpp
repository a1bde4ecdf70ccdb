// dpnoise/ldp/numeric_grid.hpp -- a double in [low, high] mapped exactly to the input grid of
// the numeric LDP mechanisms: t = m / 2^K in [-1, 1], m an integer in [-2^K, 2^K], K = 32.
//
// The value is clipped to [low, high] first. Its exact position u = (v − low)/(high − low) in
// [0, 1] is a rational (v, low and high are doubles, i.e. dyadic rationals). With
// u 2^K = j + r/W (j an integer, 0 <= r < W), the grid index is j + 1 with probability r/W and
// j otherwise (randomized rounding: E[index] = u 2^K exactly), decided by the exact comparison
// "uniform R < r/W" (bernoulli_rational, or the lazy comparison for wide integers). Then
// m = 2 index − 2^K, so E[t] = 2u − 1 = (2v − low − high)/(high − low) exactly. No floating
// point arithmetic decides anything: the doubles are split into integer mantissas and exponents.
//
// Fast path: when all three numbers are integers below 2^94 in units of the smallest of their
// ulps (every value within 2^40 of the bounds' scale), the arithmetic is in 128 bits. Otherwise
// (a value far finer than the bounds, e.g. 1e-20 with bounds (0, 1)) the same computation runs
// with arbitrary-size integers: slower, equally exact. docs/ldp_numeric.md, "Input grid".
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "dpnoise/exact/bernoulli.hpp"
#include "dpnoise/exact/certified_exp.hpp"
#include "dpnoise/exact/lazy_comparison.hpp"

namespace dpnoise::ldp {

using exact::u128;
using i128 = __int128;

// x = (negative ? −1 : 1) mantissa 2^exponent with an odd mantissa (0: mantissa 0).
struct DyadicDouble {
    bool negative = false;
    uint64_t mantissa = 0;
    int exponent = 0;
};

inline DyadicDouble split_double(double x) {
    uint64_t b;
    std::memcpy(&b, &x, sizeof b);
    DyadicDouble d;
    d.negative = (b >> 63) != 0;
    const int e = static_cast<int>((b >> 52) & 0x7ff);
    const uint64_t f = b & ((uint64_t{1} << 52) - 1);
    if (e == 0x7ff) throw std::invalid_argument("values must be finite: NaN and infinity are refused");
    d.mantissa = e == 0 ? f : (f | (uint64_t{1} << 52));
    d.exponent = e == 0 ? -1074 : e - 1075;
    if (d.mantissa == 0) {
        d.negative = false;
        return d;
    }
    const int tz = __builtin_ctzll(d.mantissa);
    d.mantissa >>= tz;
    d.exponent += tz;
    return d;
}

struct InputGrid {
    static constexpr unsigned kBits = 32;  // K: t = m / 2^K
    static constexpr int64_t kOne = int64_t{1} << kBits;
    static constexpr int kFastBits = 94;  // integers below 2^94: A 2^K < 2^126 fits 128 bits

    double low, high;
    DyadicDouble lo, hi;
    double scale;  // 2^32 / (high − low), rounded: only for the estimate of q

    InputGrid(double low_, double high_) : low(low_), high(high_), lo(split_double(low_)), hi(split_double(high_)) {
        if (!(low < high)) throw std::invalid_argument("bounds must satisfy low < high");
        if (!std::isfinite(high - low)) throw std::invalid_argument("bounds: high - low must be finite");
        scale = 4294967296.0 / (high - low);
    }

    // m in [−2^K, 2^K] with E[m / 2^K] = (2 clip(v) − low − high)/(high − low) exactly.
    template <class Bits>
    int64_t map(Bits& bits, double v) const {
        if (!(v > low)) return -kOne;  // clipped to low (v is finite: checked by the caller)
        if (!(v < high)) return kOne;
        const DyadicDouble x = split_double(v);
        int s = x.mantissa ? x.exponent : INT32_MAX;
        if (lo.mantissa && lo.exponent < s) s = lo.exponent;
        if (hi.mantissa && hi.exponent < s) s = hi.exponent;
        i128 X, Lo, Hi;
        if (fits(x, s, X) && fits(lo, s, Lo) && fits(hi, s, Hi)) {
            const u128 A = static_cast<u128>(X - Lo), W = static_cast<u128>(Hi - Lo);  // 0 < A < W < 2^95
            const u128 scaled = A << kBits;
            // q = floor(scaled / W) without a 128-bit division: a double estimate, corrected in
            // exact integer arithmetic (the estimate only saves time; q and r are exact)
            // (v − low) 2^32/(high − low) in double (two roundings of 2^-53 each): within 1 of q
            const double est = (v - low) * scale;
            u128 q = est < 0 ? 0 : static_cast<uint64_t>(est);
            while (q * W > scaled) --q;
            while (scaled - q * W >= W) ++q;
            const u128 r = scaled - q * W;
            const bool up = exact::bernoulli_rational<Bits, u128>(bits, r, W);
            return 2 * static_cast<int64_t>(q + (up ? 1 : 0)) - kOne;
        }
        return map_wide(bits, x, s);
    }

private:
    // |x| / 2^s as a signed 128-bit integer when below 2^kFastBits.
    static bool fits(const DyadicDouble& d, int s, i128& out) {
        if (!d.mantissa) {
            out = 0;
            return true;
        }
        const int shift = d.exponent - s;
        const int width = 64 - __builtin_clzll(d.mantissa);
        if (shift + width > kFastBits) return false;
        const i128 mag = static_cast<i128>(static_cast<u128>(d.mantissa) << shift);
        out = d.negative ? -mag : mag;
        return true;
    }

    static exact::BigUint magnitude(const DyadicDouble& d, int s) {
        return d.mantissa ? exact::shift_left(exact::BigUint(d.mantissa), static_cast<size_t>(d.exponent - s))
                          : exact::BigUint();
    }

    // b − a for b >= a given as signed magnitudes.
    static exact::BigUint difference(const DyadicDouble& b, const exact::BigUint& bm, const DyadicDouble& a,
                                     const exact::BigUint& am) {
        if (b.negative == a.negative) return b.negative ? exact::sub(am, bm) : exact::sub(bm, am);
        return exact::add(bm, am);  // b >= 0 > a
    }

    template <class Bits>
    [[gnu::noinline]] int64_t map_wide(Bits& bits, const DyadicDouble& x, int s) const {
        const exact::BigUint xm = magnitude(x, s), lom = magnitude(lo, s), him = magnitude(hi, s);
        const exact::BigUint A = difference(x, xm, lo, lom), W = difference(hi, him, lo, lom);
        const auto [q, r] = exact::divmod(exact::shift_left(A, kBits), W);
        std::vector<uint64_t> words;
        const exact::RatioEnclosure c{exact::Enclosure{r, r}, exact::Enclosure{W, W}};
        const bool up = !r.is_zero() && exact::lazy_less_ratio(bits, words, [&c](int) { return c; });
        const int64_t j = q.is_zero() ? 0 : static_cast<int64_t>(q.limb[0]);  // q < 2^K
        return 2 * (j + (up ? 1 : 0)) - kOne;
    }
};

}  // namespace dpnoise::ldp
