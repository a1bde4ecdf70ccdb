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
#include <algorithm>
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
        prepare_fast();
    }

    // m in [−2^K, 2^K] with E[m / 2^K] = (2 clip(v) − low − high)/(high − low) exactly.
    template <class Bits>
    int64_t map(Bits& bits, double v) const {
        if (!(v > low)) return -kOne;  // clipped to low (v is finite: checked by the caller)
        if (!(v < high)) return kOne;
        const DyadicDouble x = split_double(v);
        const int s = lowest_exponent(x);
        u128 q, r, W;
        if (exact_qr(v, x, s, q, r, W)) {
            const bool up = exact::bernoulli_rational<Bits, u128>(bits, r, W);
            return 2 * static_cast<int64_t>(q + (up ? 1 : 0)) - kOne;
        }
        return map_wide(bits, x, s);
    }

    // ------------------------------------------------------------ the hot loop's map
    // The same m as map(), from the same random bits (seeded outputs do not change), without
    // the exact quotient in the common case. With u = (v − low)/(high − low) and u 2^32 = q + f,
    // map() rounds up when a uniform R < f, comparing R's 16-bit digits with f's (bernoulli_rational),
    // so its first two decisions need only floor(u 2^64) >> 16 = q 2^16 + d1 (d1 = f's first digit):
    // R's first digit below d1 rounds up, above it does not, equal (probability 2^-16) continues
    // exactly. floor(u 2^64) is enclosed in [U − M, U + M] by fixed-point integer arithmetic
    // (prepare_fast: values as integers of unit 2^S, S = E − 61, truncated; one multiplication by
    // a 64-bit reciprocal of the width); when the enclosure does not fix q and d1 (probability
    // about M/2^16), or d1 = 0 (map() reads no bit when f = 0), or map() would take its wide
    // branch, map() itself runs. `local` is the hot loop's reader copy; rare steps run on `owner`
    // (BitReader::lend), so that the copy's address never escapes the loop.
    template <class Bits>
    int64_t map_fast(Bits& local, Bits& owner, double v) const {
        if (!(v > low)) return -kOne;
        if (!(v < high)) return kOne;
        int64_t q;
        uint64_t d1;
        if (__builtin_expect(!first_digit(v, q, d1), 0))
            return local.lend(owner, [&](Bits& bb) { return map(bb, v); });
        const uint64_t r1 = local.bits(16);
        if (__builtin_expect(r1 == d1, 0))
            return local.lend(owner, [&](Bits& bb) { return map_after_digit(bb, v, r1); });
        return 2 * (q + (r1 < d1 ? 1 : 0)) - kOne;
    }

    // For low < v < high: q = floor(u 2^32) and d1 = the next 16 bits of u (1 <= d1), fixed by the
    // fixed-point enclosure; false when map() must run (no fixed point for these bounds, map()'s
    // wide branch, an enclosure that does not fix them, or d1 = 0). No random bits.
    bool first_digit(double v, int64_t& q, uint64_t& d1) const {
        if (!fast_) return false;
        uint64_t b, m;
        int ev;
        decode(v, b, m, ev);
        // map()'s 128-bit branch needs v's lowest set bit at 2^(E − 94) or above
        if (__builtin_expect(m != 0 && ev + __builtin_ctzll(m) < min_exp_, 0)) return false;
        const uint64_t U = fixed_u64(v);
        const uint64_t ulo = U > margin_ ? U - margin_ : 0;
        const uint64_t uhi = U > UINT64_MAX - margin_ ? UINT64_MAX : U + margin_;
        const uint64_t top = ulo >> 16;
        d1 = top & 0xffff;
        q = static_cast<int64_t>(ulo >> 32);
        return (uhi >> 16) == top && d1 != 0;
    }

    // The fixed point alone (fixed_enabled() only), for v in [low, high]: U with |u 2^64 − U| < margin_,
    // u = (v − low)/(high − low) (the enclosure proved at prepare_fast). No random bits, no branch
    // on v but the exponent's shift direction.
    uint64_t fixed_u64(double v) const {
        uint64_t b, m;
        int ev;
        decode(v, b, m, ev);
        const int t = ev - S_;  // v / 2^S = m 2^t, |v| < 2^E: t <= 8
        const uint64_t xm = t >= 0 ? (m << t) : (t > -64 ? m >> -t : 0);
        const uint64_t sign = uint64_t{0} - (b >> 63);  // branch-free: signs may be coin flips
        const int64_t xc = static_cast<int64_t>((xm ^ sign) - sign);
        int64_t a = xc - lo_f_;
        a &= ~(a >> 63);                     // max(a, 0): v > low, a clamp toward the truth
        a = std::min(a, w_);                 // v < high: likewise
        const uint64_t an = static_cast<uint64_t>(a) << norm_;  // < 2^64
        // U = an (2^64 + rinv_) / 2^64 = an + mulhi(an, rinv_), saturated below 2^64
        const uint64_t hi_part = static_cast<uint64_t>((static_cast<u128>(an) * rinv_) >> 64);
        uint64_t U;
        const bool over = __builtin_add_overflow(an, hi_part, &U);
        return over ? UINT64_MAX : U;
    }

    // v's bits b, and |v| = m 2^ev (m the significand with its hidden bit, not reduced)
    static void decode(double v, uint64_t& b, uint64_t& m, int& ev) {
        std::memcpy(&b, &v, sizeof b);
        const unsigned e = static_cast<unsigned>((b >> 52) & 0x7ff);
        const uint64_t f = b & ((uint64_t{1} << 52) - 1);
        m = e ? (f | (uint64_t{1} << 52)) : f;
        ev = e ? static_cast<int>(e) - 1075 : -1074;
    }

    bool fast_enabled() const { return fast_; }
    bool fixed_enabled() const { return fixed_; }
    uint64_t fast_margin() const { return margin_; }

    // ------------------------------------------------------------ the coarse position
    // U32 with |u 2^32 − U32| < 10 from 32 x 32-bit products (vectorisable), for v in [low, high],
    // where coarse_enabled(): the fixed point's a (as fixed_u64), then a32 = floor(a 2^norm / 2^32),
    // W32 = floor(W 2^norm / 2^32) in [2^31, 2^32), r = min(floor(2^63 / W32), 2^32 − 1) and
    // U32 = min(floor(a32 r / 2^31), 2^32 − 1). The error: r's < 2 costs a32 2/2^31 <= 4, a32's < 1
    // costs 2^32/W32 <= 2, W32's < 1 costs a32 2^32/(W32 W 2^norm/2^32) <= 2, the floor 1, clamping
    // nothing more, and |u − a/W| < 3.01/W <= 2^-38 (prepare_fast) under 1 (docs/ldp_numeric.md,
    // "Duchi's bit, direct"). xc = trunc(v / 2^S) is one multiplication by the power of two 2^-S and
    // a truncating conversion: exact whatever the rounding mode, because the product is exact
    // unless it is subnormal (below 1: it truncates to 0 even when rounded or flushed), and a
    // subnormal v (which flush-to-zero reads as 0) gives a product below 1 too when the bounds'
    // magnitude 2^E is at least 2^-961 (else coarse_enabled() is false; Python hands narrower
    // bounds to the kernel scaled to [1, 2)).
    bool coarse_enabled() const { return coarse_; }
    double coarse_scale() const { return inv_unit_; }
    int64_t coarse_low() const { return lo_f_; }
    int64_t coarse_width() const { return w_; }
    unsigned coarse_norm() const { return norm_; }
    uint64_t coarse_reciprocal() const { return r31_; }

    uint64_t coarse_u32(double x) const {  // x in [low, high]
        int64_t a = static_cast<int64_t>(x * inv_unit_) - lo_f_;
        a = a < 0 ? 0 : a;
        a = a > w_ ? w_ : a;
        const uint64_t a32 = (static_cast<uint64_t>(a) << norm_) >> 32;
        const uint64_t U = (a32 * r31_) >> 31;
        return U < 0xffffffffu ? U : 0xffffffffu;
    }

    // For v in [low, high] without the fixed point: U = min(floor(u 2^64), 2^64 − 1), so
    // |u 2^64 − U| <= 1, from map()'s exact 128-bit quotient (u 2^32 = q + r/W, r < W < 2^95:
    // floor(u 2^64) = q 2^32 + floor(r 2^32/W)); false in map()'s wide case.
    bool exact_u64(double v, uint64_t& U) const {
        if (!(v > low)) {
            U = 0;
            return true;
        }
        if (!(v < high)) {
            U = UINT64_MAX;
            return true;
        }
        const DyadicDouble x = split_double(v);
        u128 q, r, W;
        if (!exact_qr(v, x, lowest_exponent(x), q, r, W)) return false;
        U = static_cast<uint64_t>((q << kBits) + (r << kBits) / W);  // q < 2^32: below 2^64
        return true;
    }

    // u = A/W exactly (arbitrary-size integers), for v in [low, high]: the direct decisions'
    // refinement (A = 0 at low, A = W at high).
    void exact_fraction(double v, exact::BigUint& A, exact::BigUint& W) const {
        const DyadicDouble x = split_double(v);
        const int s = lowest_exponent(x);
        const exact::BigUint lom = magnitude(lo, s), him = magnitude(hi, s);
        W = difference(hi, him, lo, lom);
        if (!(v > low))
            A = exact::BigUint();
        else if (!(v < high))
            A = W;
        else
            A = difference(x, magnitude(x, s), lo, lom);
    }

private:
    // fixed point of the hot loop: v ~ xc 2^S (xc = trunc(v / 2^S)), low ~ lo_f_ 2^S (floor);
    // W = w_ = hi_f − lo_f_ in [2^(L−1), 2^L), normalised W' = W 2^norm_ in [2^63, 2^64), and
    // rinv_ = floor(2^128 / W') − 2^64 (W' > 2^63; 2^64 − 1 when W' = 2^63): u 2^64 ~ a' (2^64 +
    // rinv_)/2^64 with a' = a 2^norm_
    bool fixed_ = false;  // the fixed point's enclosure (fixed_u64, coarse_u32) is valid
    bool fast_ = false;   // and map_fast may use it (map()'s 128-bit branch for the bounds)
    int S_ = 0, min_exp_ = 0;
    int64_t lo_f_ = 0, w_ = 0;
    uint64_t rinv_ = 0;
    unsigned norm_ = 0;
    uint64_t margin_ = 0;
    bool coarse_ = false;
    double inv_unit_ = 0;  // 2^-S
    uint64_t r31_ = 0;     // min(floor(2^63 / W32), 2^32 − 1)

    static int64_t floor_fixed(const DyadicDouble& d, int S) {  // floor(d / 2^S), |d| < 2^(S + 61)
        if (!d.mantissa) return 0;
        const int sh = d.exponent - S;
        if (sh >= 0) {
            const int64_t mag = static_cast<int64_t>(d.mantissa << sh);
            return d.negative ? -mag : mag;
        }
        const unsigned k = static_cast<unsigned>(-sh);
        const uint64_t q = k >= 64 ? 0 : d.mantissa >> k;
        const bool rem = k >= 64 || (d.mantissa & ((uint64_t{1} << k) - 1)) != 0;
        return d.negative ? -static_cast<int64_t>(q + (rem ? 1 : 0)) : static_cast<int64_t>(q);
    }

    // The enclosure: with A = v/2^S − low/2^S, W_t = (high − low)/2^S, a = min(max(xc − lo_f, 0), W)
    // and W = hi_f − lo_f: |A − a| < 2 and |W_t − W| < 1, so |u − a/W| <= (2W + a)/(W_t W) < 3.01/W
    // for W >= 2^40. With a' = a 2^norm <= W' < 2^64 and r = 2^64 + rinv in (2^128/W' − 2, 2^128/W']
    // (W' = 2^63: r = 2^65 − 1): |a' 2^64/W' − a' r/2^64| < 2 a'/2^64 < 2, plus 1 for the floor
    // (and saturating below 2^64 only lowers U toward floor(u 2^64) <= 2^64 − 1). So |u 2^64 − U| <
    // 2^66/W + 4 and M = floor(2^66/W) + 8 encloses floor(u 2^64).
    void prepare_fast() {
        const int E = std::ilogb(std::max(std::fabs(low), std::fabs(high))) + 1;  // max(|low|, |high|) < 2^E
        S_ = E - 61;
        min_exp_ = E - 94;
        lo_f_ = floor_fixed(lo, S_);
        const int64_t W = floor_fixed(hi, S_) - lo_f_;
        if (W < (int64_t{1} << 40)) return;  // width far below the magnitude: map() as it is
        const unsigned L = 64u - static_cast<unsigned>(__builtin_clzll(static_cast<uint64_t>(W)));
        norm_ = 64 - L;
        w_ = W;
        const uint64_t Wn = static_cast<uint64_t>(W) << norm_;  // in [2^63, 2^64)
        // floor(2^128 / W') − 2^64 = floor((2^128 − 2^64 W') / W'), computed without 2^128
        const u128 rest = ~static_cast<u128>(0) - (static_cast<u128>(Wn) << 64) + 1;  // 2^128 − 2^64 W'
        const u128 r = rest / Wn;
        rinv_ = r > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(r);  // W' = 2^63: 2^64 − 1
        margin_ = static_cast<uint64_t>((static_cast<u128>(1) << 66) / static_cast<u128>(W)) + 8;
        fixed_ = true;  // the enclosure holds for any bounds of this width (the direct decisions)
        // map_fast also needs map()'s 128-bit branch for the bounds (else map() is wide for every value)
        fast_ = !(lo.mantissa && lo.exponent < min_exp_) && !(hi.mantissa && hi.exponent < min_exp_);
        // coarse_u32's conversion: 2^-S a normal double, and a subnormal v (or one flushed to 0)
        // below 2^(-1022 - S) <= 1, so that it truncates to 0 as it should
        if (E >= -961 && E <= 1024) {
            const uint64_t W32 = Wn >> 32;  // in [2^31, 2^32)
            r31_ = std::min<uint64_t>((uint64_t{1} << 63) / W32, 0xffffffffu);
            inv_unit_ = std::ldexp(1.0, -S_);
            coarse_ = true;
        }
    }

    // q = floor(u 2^K), r and W with u 2^K = q + r/W, A and W below 2^95 (false: map_wide's case).
    bool exact_qr(double v, const DyadicDouble& x, int s, u128& q, u128& r, u128& W) const {
        i128 X, Lo, Hi;
        if (!(fits(x, s, X) && fits(lo, s, Lo) && fits(hi, s, Hi))) return false;
        const u128 A = static_cast<u128>(X - Lo);  // 0 < A < W < 2^95
        W = static_cast<u128>(Hi - Lo);
        const u128 scaled = A << kBits;
        // q = floor(scaled / W) without a 128-bit division: a double estimate, corrected in
        // exact integer arithmetic (the estimate only saves time; q and r are exact)
        // (v − low) 2^32/(high − low) in double (two roundings of 2^-53 each): within 1 of q
        const double est = (v - low) * scale;
        q = est < 0 ? 0 : static_cast<uint64_t>(est);
        while (q * W > scaled) --q;
        while (scaled - q * W >= W) ++q;
        r = scaled - q * W;
        return true;
    }

public:
    // map() after R's first digit r1 equalled f's first one: bernoulli_rational's loop (16-bit
    // digits, the same for its 64- and 128-bit widths) from its second step, exactly.
    template <class Bits>
    [[gnu::noinline]] int64_t map_after_digit(Bits& bits, double v, uint64_t r1) const {
        const DyadicDouble x = split_double(v);
        const int s = lowest_exponent(x);
        u128 q, a, W;
        if (!exact_qr(v, x, s, q, a, W)) throw std::logic_error("map_after_digit: outside the 128-bit branch");
        bool up;
        for (uint64_t digit = r1;; digit = bits.bits(16)) {
            const u128 X = a << 16, lowp = static_cast<u128>(digit) * W;
            if (lowp + W <= X) { up = true; break; }
            if (lowp >= X) { up = false; break; }
            a = X - lowp;
        }
        return 2 * static_cast<int64_t>(q + (up ? 1 : 0)) - kOne;
    }

private:
    // the unit of the exact arithmetic: the lowest set bit among x, low and high (zeros aside)
    int lowest_exponent(const DyadicDouble& x) const {
        int s = x.mantissa ? x.exponent : INT32_MAX;
        if (lo.mantissa && lo.exponent < s) s = lo.exponent;
        if (hi.mantissa && hi.exponent < s) s = hi.exponent;
        return s;
    }

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
