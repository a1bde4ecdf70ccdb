// dpnoise/exact/geometric_table.hpp -- the geometric and discrete Laplace laws of
// geometric.hpp and discrete_laplace.hpp from certified tables: inversion for scales up to 146,
// Y = H 2^k + L (H by inversion, L by certified rejection) above.
#pragma once
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "dpnoise/exact/certified_exp.hpp"
#include "dpnoise/exact/exp_fixed_bounds.hpp"
#include "dpnoise/exact/fixed_enclosure.hpp"
#include "dpnoise/exact/lazy_comparison.hpp"
#include "dpnoise/exact/refinement_policy.hpp"
#include "dpnoise/exact/threshold_inversion.hpp"

namespace dpnoise::exact {

// ---------------------------------------------------------------- geometric / discrete Laplace
// Y with P[Y = y] proportional to q^y, q = e^{-s/t}, y >= 0 (geometric_exp's law):
//
// * small scales (t <= 146 s): Y by inversion, P[Y >= k] = e^{-k s/t}; for the discrete
//   Laplace, |Y| by inversion with P[|Y| >= k] = 2 e^{-k s/t} / (1 + e^{-s/t}) and a fair sign
//   (this is the discrete Laplace law with scale t/s: P[Y = y] = (1-q)/(1+q) q^{|y|}).
// * large scales: Y = H 2^k + L with L = Y mod 2^k, where 2^k s < t/16. H and L are independent
//   (the law of Y factorises as (q^{2^k})^H q^L); H is geometric with the small scale
//   t/(s 2^k) <= 32 (inversion) and L, with P[L = l] proportional to e^{-l s/t} on [0, 2^k), is
//   a uniform k-bit l accepted with probability e^{-x}, x = l s/t < 1/16: first by 8 bits of
//   the uniform against a lower bound of 1 - x <= e^{-x} (one multiplication), and only when
//   those do not decide (about x + 2^-7 of the time) by 32 bits against the series bounds of
//   exp_small_*, then exactly. For the discrete Laplace a sign bit is drawn with l (it is
//   independent of everything else, and discarded with l on rejection) and "-0" is rejected as
//   in CKS Algorithm 2.
struct GeometricTable {
    static constexpr uint64_t kDirectMax = 146;  // direct path: scales up to 146
    static constexpr uint64_t kHighMax = 32;     // large path: H has scale <= 32 (table in L1)
    enum class Law { geometric, laplace };       // which law the direct-path table serves

    uint64_t t = 0, s = 1;
    Law law = Law::geometric;
    bool direct = false;
    Thresholds direct_table;             // direct: Y (geometric) or |Y| (laplace)
    unsigned low_bits = 0;               // k
    uint64_t x_step = 0;                 // floor(2^64 s / t) + 1 > 2^64 s/t
    u128 x_recip = 0;                    // floor(2^128 s / t)
    u128 high_a = 0;                     // s 2^k
    Thresholds high;                     // H = Y >> k, P[H >= h] = e^{-h s 2^k / t}

    GeometricTable() = default;
    GeometricTable(uint64_t t_, uint64_t s_, Law law_) : t(t_), s(s_), law(law_) {
        if (t == 0) return;
        if (s == 0) throw std::invalid_argument("scale denominator must be >= 1");
        const int L = 3;
        const BigUint T(static_cast<u128>(t));
        if (is_direct(t, s)) {
            direct = true;
            build_power_thresholds(direct_table, law == Law::laplace, BigUint(static_cast<u128>(s)), T, (t + s - 1) / s, L);
            return;
        }
        low_bits = low_bits_for(t, s);
        high_a = static_cast<u128>(s) << low_bits;  // < t/16 < 2^60
        const u128 hi_num = static_cast<u128>(s) << 64;
        x_step = static_cast<uint64_t>(hi_num / t) + 1;  // s/t < 1/146: fits
        x_recip = (static_cast<u128>(x_step - 1) << 64) | static_cast<uint64_t>((static_cast<u128>(hi_num % t) << 64) / t);
        build_power_thresholds(high, false, BigUint(high_a), T,
                               static_cast<uint64_t>((static_cast<u128>(t) + high_a - 1) / high_a), L);
    }

    static bool is_direct(uint64_t t, uint64_t s) { return static_cast<u128>(t) <= static_cast<u128>(kDirectMax) * s; }

    // the least k with ceil(t / (s 2^k)) <= 32; then t / (s 2^k) > 16, so l s/t < 1/16 for l < 2^k
    static unsigned low_bits_for(uint64_t t, uint64_t s) {
        unsigned k = 0;
        while ((static_cast<u128>(t) + (static_cast<u128>(s) << k) - 1) / (static_cast<u128>(s) << k) > kHighMax) ++k;
        return k;
    }

    // certified thresholds the constructor computes (the guide is a cheap sweep on top)
    static size_t entries_for(uint64_t t, uint64_t s) {
        if (t == 0) return 0;
        if (is_direct(t, s)) return 28 * ((t + s - 1) / s) + 1;
        return 28 * kHighMax + 1;
    }

    // thresholds e^{-k a/T} (geometric) or 2 e^{-k a/T} / (1 + e^{-a/T}) (laplace), k = 1..28 ceil(T/a)
    static void build_power_thresholds(Thresholds& out, bool laplace, const BigUint& a, const BigUint& T,
                                       uint64_t scale_ceil, int L) {
        const FxInterval q = fx_interval(exp_rational(a, T, true, L));
        FxInterval two_over{};
        if (laplace) {
            // 2/(1+q), enclosed: [2 S^2 / (S + q.hi), 2 S^2 / (S + q.lo)]
            const BigUint S = scale_one(L), S2x2 = shift_left(mul(S, S), 1);
            auto [lo_q, lo_r] = divmod(S2x2, add(S, fx_to_big(q.hi)));
            (void)lo_r;
            auto [hi_q, hi_r] = divmod(S2x2, add(S, fx_to_big(q.lo)));
            two_over = FxInterval{fx_from(lo_q), fx_from(hi_r.is_zero() ? hi_q : add_small(hi_q, 1))};
        }
        const uint64_t m = 28 * scale_ceil + 1;
        FxInterval qk = q;
        for (uint64_t k = 1; k <= m; ++k) {
            out.push(bounds32(laplace ? fx_mul(qk, two_over) : qk));
            qk = fx_mul(qk, q);
        }
        out.tail = true;
        out.finish(scale_ceil);
    }

};


// R < e^{-k a / t} exactly
template <class Bits>
inline bool less_power(Bits& b, std::vector<uint64_t>& words, uint64_t k, u128 a, uint64_t t) {
    return lazy_less(b, words, [&](int L) {
        return exp_rational(mul(BigUint(static_cast<u128>(k)), BigUint(a)), BigUint(static_cast<u128>(t)), true, L);
    });
}

// The rare part of the large-scale L acceptance: R < e^{-l s/t} for a uniform R whose first
// `First` bits r did not decide it against 1 - x. Kept out of line so that the common path
// stays small.
template <unsigned First, class Bits, class Policy = NeverForceRefinement>
[[gnu::noinline]] bool accept_low_part_slow(Bits& bits, const GeometricTable& g, uint64_t l, uint32_t r) {
    // x 2^64 in [xlo, xlo + 2): l floor(2^128 s/t) / 2^64, rounded down
    const uint64_t r_hi = static_cast<uint64_t>(g.x_recip >> 64), r_lo = static_cast<uint64_t>(g.x_recip);
    const uint64_t xlo = static_cast<uint64_t>(static_cast<u128>(l) * r_hi + ((static_cast<u128>(l) * r_lo) >> 64));
    constexpr bool forced = Policy::kForce;
    const uint32_t w = (r << (32 - First)) | static_cast<uint32_t>(bits.bits(32 - First));  // R's next bits
    if constexpr (!forced) {
        if (w < static_cast<uint32_t>((~(xlo + 2)) >> 32)) return true;  // R < 1 - x <= e^{-x}
        // most calls end in rejection: e^{-x} <= 1 - x + x^2/2 < (2^64 - xlo + floor(xh^2/2^65) + 1)
        // / 2^64 with xh = xlo + 2 > x 2^64, so R >= w/2^32 >= that rejects without the series
        const uint64_t xh = xlo + 2;
        const u128 up = (static_cast<u128>(1) << 64) - xlo + ((static_cast<u128>(xh) * xh) >> 65) + 1;
        if ((static_cast<u128>(w) << 32) >= up) return false;
        const Bounds32 b = exp_small_bounds32(xlo, xlo + 2);
        if (w < b.lo) return true;
        if (static_cast<uint64_t>(w) >= b.hi) return false;
    }
    std::vector<uint64_t> words{(static_cast<uint64_t>(w) << 32) | bits.bits(32)};
    return less_power(bits, words, l, g.s, g.t);
}

// H for the large-scale path from the bucket of its uniform, when the guide does not settle it.
template <class Bits, class Policy = NeverForceRefinement>
[[gnu::noinline]] uint64_t geometric_high_scan(Bits& bits, const GeometricTable& g, uint32_t bucket) {
    auto exact = [&g](Bits& b, std::vector<uint64_t>& words, uint64_t kk) { return less_power(b, words, kk, g.high_a, g.t); };
    return invert_scan<Bits, decltype(exact), Policy>(bits, g.high, bucket, exact);
}

// The large-scale path: Y (Signed = false) or the discrete Laplace sign * Y (Signed = true).
// One read of k + guide_bits + 8 (+ 1) bits gives l, the first 8 bits of L's acceptance
// uniform, H's bucket and the sign; on rejection all of them are dropped (unused independent
// bits may always be discarded) and drawn afresh.
template <bool Signed, class Bits, class Policy = NeverForceRefinement>
inline int64_t geometric_table_large(Bits& bits, const GeometricTable& g) {
    constexpr unsigned kFirst = 8;  // bits of L's acceptance uniform in the first look
    const unsigned k = g.low_bits, gb = g.high.guide_bits;
    const unsigned extra = kFirst + gb + (Signed ? 1 : 0);
    const uint64_t mask = (uint64_t{1} << k) - 1;  // k <= 59
    for (;;) {
        uint64_t l, v;
        if (k + extra <= 64) {
            v = bits.bits(k + extra);
            l = v & mask;
            v >>= k;
        } else {
            l = bits.bits(k);
            v = bits.bits(extra);
        }
        const uint32_t r = static_cast<uint32_t>(v & ((1u << kFirst) - 1));
        // R < (r + 1) / 2^8 <= 1 - ceil(x 2^8) / 2^8 <= 1 - x <= e^{-x}, with
        // x 2^8 < l x_step / 2^56 (x_step > 2^64 s/t; l x_step < 2^60 + 2^k, no overflow)
        const uint32_t x8 = static_cast<uint32_t>((l * g.x_step) >> (64 - kFirst)) + 1;
        if (r + x8 > (1u << kFirst) - 1 || Policy::kForce) {
            if (!accept_low_part_slow<kFirst, Bits, Policy>(bits, g, l, r)) continue;
        }
        v >>= kFirst;
        const uint32_t bucket = static_cast<uint32_t>(v & ((1u << gb) - 1));
        const uint32_t e = g.high.guide[bucket];
        uint64_t h = e >> 1;
        if (!(e & 1) || Policy::kForce)
            h = geometric_high_scan<Bits, Policy>(bits, g, bucket);
        // Y = h 2^k + l <= INT64_MAX exactly when h < 2^(63 - k), as l < 2^k
        if ((h >> (63 - k)) != 0) throw std::overflow_error("sample does not fit in int64");
        const int64_t y = static_cast<int64_t>((h << k) | l);
        if (!Signed) return y;
        const bool negative = ((v >> gb) & 1) != 0;
        if (negative && y == 0) continue;  // "-0": CKS Algorithm 2 rejects it
        return negative ? -y : y;
    }
}

// n samples of geometric_table_large<Signed> into out, the same bits read in the same order (so
// the same output), in one tight loop: the reader's state and the table's constants in
// registers, a branch-free sign. The rare steps (L's acceptance not decided by 8 bits, a bucket
// the guide does not settle) are the functions above.
template <bool Signed, class Bits>
[[gnu::flatten]] inline void geometric_table_large_fill(Bits& bits, const GeometricTable& g, int64_t* out, size_t n) {
    constexpr unsigned kFirst = 8;
    const unsigned k = g.low_bits, gb = g.high.guide_bits;
    const unsigned width = k + kFirst + gb + (Signed ? 1 : 0);
    if (width > 63) {
        for (size_t i = 0; i < n; ++i) out[i] = geometric_table_large<Signed>(bits, g);
        return;
    }
    const uint64_t mask = (uint64_t{1} << k) - 1, mask_g = (uint64_t{1} << gb) - 1, x_step = g.x_step;
    const uint16_t* guide = g.high.guide.data();
    Bits r = bits;
    for (size_t i = 0; i < n; ++i) {
        for (;;) {
            uint64_t v = r.bits_below64(width);
            const uint64_t l = v & mask;
            v >>= k;
            const uint32_t r8 = static_cast<uint32_t>(v & ((1u << kFirst) - 1));
            const uint32_t x8 = static_cast<uint32_t>((l * x_step) >> (64 - kFirst)) + 1;  // as geometric_table_large
            if (r8 + x8 > (1u << kFirst) - 1 && !r.lend(bits, [&](Bits& b) { return accept_low_part_slow<kFirst>(b, g, l, r8); }))
                continue;
            v >>= kFirst;
            const uint32_t bucket = static_cast<uint32_t>(v & mask_g);
            const uint32_t e = guide[bucket];
            const uint64_t h = (e & 1) ? e >> 1 : r.lend(bits, [&](Bits& b) { return geometric_high_scan(b, g, bucket); });
            if ((h >> (63 - k)) != 0) throw std::overflow_error("sample does not fit in int64");
            const int64_t y = static_cast<int64_t>((h << k) | l);
            if constexpr (Signed) {
                const uint64_t negative = (v >> gb) & 1;
                if (negative && y == 0) continue;  // "-0": CKS Algorithm 2 rejects it
                const int64_t s = -static_cast<int64_t>(negative);
                out[i] = (y ^ s) - s;
            } else {
                out[i] = y;
            }
            break;
        }
    }
    bits = r;
}

// The direct path (t/s <= 146) alone, for callers that dispatch once per request.
template <class Bits, class Policy = NeverForceRefinement>
inline uint64_t geometric_direct(Bits& bits, const GeometricTable& g) {
    auto exact = [&](Bits& b, std::vector<uint64_t>& words, uint64_t k) { return less_power(b, words, k, g.s, g.t); };
    return invert<Bits, decltype(exact)&, Policy>(bits, g.direct_table, exact);
}

template <class Bits, class Policy = NeverForceRefinement>
inline int64_t discrete_laplace_direct(Bits& bits, const GeometricTable& g) {
    // |Y| = #{k >= 1 : R < 2 q^k/(1+q)}, q = e^{-s/t}, then a fair sign; the bucket of R and
    // the sign come from one read (the sign is dropped when |Y| = 0)
    const unsigned gb = g.direct_table.guide_bits;
    const uint64_t v = bits.bits(gb + 1);
    auto exact = [&](Bits& b, std::vector<uint64_t>& words, uint64_t k) {
        return lazy_less_ratio(b, words, [&](int L) {
            const BigUint T(static_cast<u128>(g.t)), Sd(static_cast<u128>(g.s));
            const Enclosure qk = exp_rational(mul(BigUint(static_cast<u128>(k)), Sd), T, true, L);
            const Enclosure q = exp_rational(Sd, T, true, L);
            const BigUint S = scale_one(L);
            return RatioEnclosure{Enclosure{shift_left(qk.lo, 1), shift_left(qk.hi, 1)},
                                  Enclosure{add(S, q.lo), add(S, q.hi)}};
        });
    };
    const uint64_t a = invert_bucket<Bits, decltype(exact)&, Policy>(
        bits, g.direct_table, static_cast<uint32_t>(v & ((1u << gb) - 1)), exact);
    if (a > static_cast<uint64_t>(INT64_MAX)) throw std::overflow_error("sample does not fit in int64");
    return (v >> gb) != 0 ? -static_cast<int64_t>(a) : static_cast<int64_t>(a);
}

// Either path, chosen per call (for mixed per-element requests and other C++ callers).
template <class Bits, class Policy = NeverForceRefinement>
inline uint64_t geometric_table(Bits& bits, const GeometricTable& g) {
    if (g.t == 0) return 0;
    if (!g.direct) return static_cast<uint64_t>(geometric_table_large<false, Bits, Policy>(bits, g));
    if (g.law != GeometricTable::Law::geometric) throw std::logic_error("table built for the discrete Laplace");
    return geometric_direct<Bits, Policy>(bits, g);
}

template <class Bits, class Policy = NeverForceRefinement>
inline int64_t discrete_laplace_table(Bits& bits, const GeometricTable& g) {
    if (g.t == 0) return 0;
    if (!g.direct) return geometric_table_large<true, Bits, Policy>(bits, g);
    if (g.law != GeometricTable::Law::laplace) throw std::logic_error("table built for the geometric law");
    return discrete_laplace_direct<Bits, Policy>(bits, g);
}

}  // namespace dpnoise::exact
