// dpnoise/exact/discrete_gaussian_table.hpp -- the discrete Gaussian of discrete_gaussian.hpp
// from certified tables: a bucket by inversion over certified tail sums of e^{-i^2 c}, a
// uniform offset accepted with probability e^{-x}.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "dpnoise/exact/certified_exp.hpp"
#include "dpnoise/exact/discrete_gaussian.hpp"
#include "dpnoise/exact/exp_fixed_bounds.hpp"
#include "dpnoise/exact/fixed_enclosure.hpp"
#include "dpnoise/exact/lazy_comparison.hpp"
#include "dpnoise/exact/refinement_policy.hpp"
#include "dpnoise/exact/threshold_inversion.hpp"

namespace dpnoise::exact {

// ---------------------------------------------------------------- discrete Gaussian: buckets
// |Y| is proposed as y = j B + o with the bucket j drawn by inversion, P[bucket >= d] = T_d / T_0
// with T_d = sum_{i >= d} e^{-i^2 c}, c = B^2 b / (2a), and the offset o uniform in [0, B);
// y is accepted with probability e^{-(2 j B o + o^2) b / (2a)} = e^{-y^2/(2 sigma^2)} /
// e^{-(jB)^2/(2 sigma^2)}, and y = 0 with a further fair bit (it has one sign, the others two).
// The accepted law is P[|Y| = y] proportional to (1 or 2) e^{-y^2/(2 sigma^2)}: the discrete
// Gaussian's. B = 2^k is the least power of two with sigma / B < 146: for sigma < 146, B = 1
// and the inversion alone gives |Y| (no acceptance step; the thresholds are then those of |Y|
// itself, P[|Y| >= d] = 2 T_d / (2 T_0 - 1), so y = 0 needs no extra bit); above, sigma / B is in [73, 146), so
// about 15 sigma / B <= 2200 buckets cover the mass down to 2^-160 and the acceptance exponent
// is below about 1/70 for typical y, decided by 8 random bits (against 1 - x) almost always.
// The bucket thresholds are certified like every other constant here; the exact path sums the
// series (terms until below the working precision, the rest bounded) at increasing precision.
struct GaussianBuckets {
    static constexpr uint64_t kSigmaPerBucket = 146;

    uint64_t a = 0, b = 1;
    unsigned k = 0;            // B = 2^k
    bool folded = false;       // k = 0: the thresholds are |Y|'s (zero weighted 1, the rest 2)
    Thresholds buckets;        // d = 1..J
    uint64_t x_step = 0;       // floor(2^64 b / (2a)) + 1 > 2^64 b/(2a) (when k > 0)
    uint64_t inv = 0;          // floor(2^P / (2a)), for x·2^32 = N 2^32 / (2a)
    unsigned P = 0;

    // the least k with 146 2^k > floor(sigma); t = floor(sigma) + 1
    static unsigned bits_for(uint64_t t) {
        unsigned k = 0;
        while ((static_cast<u128>(kSigmaPerBucket) << k) <= t - 1) ++k;
        return k;
    }

    // about how many buckets the constructor certifies
    static size_t buckets_for(uint64_t t) { return static_cast<size_t>(15 * ((static_cast<u128>(t) >> bits_for(t)) + 1)); }

    GaussianBuckets() = default;
    GaussianBuckets(uint64_t a_, uint64_t b_, uint64_t t) : a(a_), b(b_), k(bits_for(t)), folded(k == 0) {
        const int L = 3;
        const BigUint A2(static_cast<u128>(a) * 2), Bb(static_cast<u128>(b));
        const BigUint cnum = mul(shift_left(BigUint(1), 2 * k), Bb);  // c = B^2 b / (2a)
        // g_i = e^{-i^2 c}: g_{i+1} = g_i h_i, h_i = e^{-(2i+1)c}, h_{i+1} = h_i e^{-2c}
        FxInterval g = fx_interval(Enclosure{scale_one(L), scale_one(L)});
        FxInterval h = fx_interval(exp_rational(cnum, A2, true, L));
        const FxInterval h_step = fx_interval(exp_rational(mul(BigUint(2), cnum), A2, true, L));
        std::vector<FxInterval> gs;
        for (;;) {
            gs.push_back(g);
            // stop below 2^-160, with at least two terms (the tail bound below needs J >= 2)
            if (gs.size() >= 2 && g.hi.limb[3] == 0 && g.hi.limb[2] == 0 && g.hi.limb[1] == 0 && g.hi.limb[0] < (uint64_t{1} << 32)) break;
            g = fx_mul(g, h);
            h = fx_mul(h, h_step);
            if (gs.size() > 100000) throw std::logic_error("bucket series did not decay");
        }
        // suffix sums T_d; the tail beyond the last term g_{J-1} is at most
        // integral_{J-1}^inf e^{-c x^2} dx <= g_{J-1} / (2 c (J-1)), and 1/(2c(J-1)) = a / (B^2 b (J-1))
        const size_t J = gs.size();
        const BigUint tail_factor = add_small(divmod(BigUint(static_cast<u128>(a)),
                                                     mul(cnum, BigUint(static_cast<u128>(J - 1)))).first, 1);
        std::vector<BigUint> t_lo(J + 1), t_hi(J + 1);
        t_lo[J] = BigUint();
        t_hi[J] = mul(fx_to_big(gs[J - 1].hi), tail_factor);
        for (size_t d = J; d-- > 0;) {
            t_lo[d] = add(t_lo[d + 1], fx_to_big(gs[d].lo));
            t_hi[d] = add(t_hi[d + 1], fx_to_big(gs[d].hi));
        }
        // S_d = T_d / T_0 (or 2 T_d / (2 T_0 - 1) when folded; g_0 = 1 exactly): one certified
        // reciprocal of the denominator (at scale 2^192), then products
        const BigUint S2 = shift_left(BigUint(1), 384), one = shift_left(BigUint(1), 192);
        const BigUint den_lo = folded ? sub(shift_left(t_lo[0], 1), one) : t_lo[0];
        const BigUint den_hi = folded ? sub(shift_left(t_hi[0], 1), one) : t_hi[0];
        auto [inv_lo_q, r1] = divmod(S2, den_hi);
        (void)r1;
        auto [inv_hi_q, r2] = divmod(S2, den_lo);
        const FxInterval inv0{fx_from(inv_lo_q), fx_from(r2.is_zero() ? inv_hi_q : add_small(inv_hi_q, 1))};
        const size_t up = folded ? 1 : 0;
        for (size_t d = 1; d < J; ++d) {
            const FxInterval td{fx_from(shift_left(t_lo[d], up)), fx_from(shift_left(t_hi[d], up))};
            buckets.push(bounds32(fx_mul(td, inv0)));
        }
        buckets.tail = true;
        buckets.finish(J);
        if (k == 0) return;  // no offsets, no acceptance step
        // the acceptance exponent x = N / (2a): 8-bit first look and 32-bit fixed point
        x_step = static_cast<uint64_t>((static_cast<u128>(b) << 64) / (static_cast<u128>(a) * 2)) + 1;  // b/(2a) < 2^-15
        const BigUint two_a(static_cast<u128>(a) * 2);
        P = static_cast<unsigned>(two_a.bit_length()) + 62;
        inv = divmod(shift_left(BigUint(1), P), two_a).first.limb[0];
    }

    // T_d and T_0 enclosed at precision L (the exact path): the terms by the same recurrence as
    // the constructor (g_{i+1} = g_i h_i, h_{i+1} = h_i e^{-2c}, each product rounded outward),
    // until past i >= d and below 2^32 units of 2^-64L; the remainder after term i is at most
    // g_i / (2 c i) (the integral bound), i.e. g_i.hi (a / (B^2 b i) + 1) units.
    RatioEnclosure ratio(uint64_t d, int L) const {
        const BigUint A2(static_cast<u128>(a) * 2), cnum = mul(shift_left(BigUint(1), 2 * k), BigUint(static_cast<u128>(b)));
        const BigUint one = scale_one(L), small = shift_left(BigUint(1), 32);
        const Enclosure step = exp_rational(mul(BigUint(2), cnum), A2, true, L);
        Enclosure gi{one, one}, hi = exp_rational(cnum, A2, true, L);
        Enclosure T0{BigUint(), BigUint()}, Td{BigUint(), BigUint()};
        for (uint64_t i = 0;; ++i) {
            T0.lo = add(T0.lo, gi.lo);
            T0.hi = add(T0.hi, gi.hi);
            if (i >= d) {
                Td.lo = add(Td.lo, gi.lo);
                Td.hi = add(Td.hi, gi.hi);
            }
            if (i >= 1 && i >= d && compare(gi.hi, small) < 0) {
                const BigUint factor = add_small(divmod(BigUint(static_cast<u128>(a)), mul(cnum, BigUint(static_cast<u128>(i)))).first, 1);
                const BigUint rest = mul(gi.hi, factor);
                T0.hi = add(T0.hi, rest);
                Td.hi = add(Td.hi, rest);
                if (!folded) return RatioEnclosure{Td, T0};
                // 2 T_d / (2 T_0 - 1); g_0 = 1 is exact, so subtracting it keeps the enclosure
                return RatioEnclosure{Enclosure{shift_left(Td.lo, 1), shift_left(Td.hi, 1)},
                                      Enclosure{sub(shift_left(T0.lo, 1), one), sub(shift_left(T0.hi, 1), one)}};
            }
            gi = enclosure_mul(gi, hi, L);
            hi = enclosure_mul(hi, step, L);
            if (i > 100000000) throw std::logic_error("bucket series did not decay");
        }
    }
};

// Bucket j from its guide bucket when the guide does not settle it.
template <class Bits, class Policy = NeverForceRefinement>
[[gnu::noinline]] uint64_t gaussian_bucket_scan(Bits& bits, const GaussianBuckets& g, uint32_t bucket) {
    auto exact = [&g](Bits& bb, std::vector<uint64_t>& words, uint64_t d) {
        return lazy_less_ratio(bb, words, [&](int L) { return g.ratio(d, L); });
    };
    return invert_scan<Bits, decltype(exact), Policy>(bits, g.buckets, bucket, exact);
}

// The acceptance R < e^{-x}, x = (2 j B o + o^2) b / (2a), when R's first 8 bits r8 did not
// decide it: R's next 24 bits, then 32-bit fixed-point bounds of e^{-x}, then exactly.
template <class Bits, class Policy = NeverForceRefinement>
[[gnu::noinline]] bool gaussian_offset_accept_slow(Bits& bits, const GaussianBuckets& g, const ExpTables& T,
                                                   uint64_t j, uint64_t o, uint32_t r8) {
    const uint64_t B = uint64_t{1} << g.k;
    // x = N / (2a), N = (2 j B o + o^2) b; x·2^32 in [flo, flo + extra + 3]
    const u128 jbo2 = static_cast<u128>(j) * B * o * 2 + static_cast<u128>(o) * o;  // j < 2^64, B o < 2^60
    u128 N;
    if (__builtin_mul_overflow(jbo2, static_cast<u128>(g.b), &N)) {
        N = ~static_cast<u128>(0);  // a lower bound: x >= 2^64, so e^{-x} is compared from above below
    }
    const unsigned sh = g.P - 32;
    const uint64_t nh = static_cast<uint64_t>(N >> 64), nl = static_cast<uint64_t>(N);
    u128 flo, extra;
    if (sh >= 64) {
        const u128 top = static_cast<u128>(nh) * g.inv + ((static_cast<u128>(nl) * g.inv) >> 64);
        flo = sh - 64 >= 128 ? 0 : top >> (sh - 64);
        extra = sh - 64 >= 64 ? 0 : static_cast<u128>(nh >> (sh - 64));
    } else {
        // small a: N·inv fits comfortably; compute with the 192-bit helper
        const u128 lo = static_cast<u128>(nl) * g.inv, hi = static_cast<u128>(nh) * g.inv;
        const u128 mid = (lo >> 64) + static_cast<uint64_t>(hi);
        flo = shr192_saturated(static_cast<uint64_t>(hi >> 64) + static_cast<uint64_t>(mid >> 64),
                               static_cast<uint64_t>(mid), static_cast<uint64_t>(lo), sh);
        extra = N >> sh;
    }
    const u128 fhi = flo + extra + 3;
    const uint32_t w = (r8 << 24) | static_cast<uint32_t>(bits.bits(24));
    constexpr bool forced = Policy::kForce;
    if (!forced && fhi < (static_cast<u128>(1) << 32) && w < static_cast<uint32_t>((static_cast<u128>(1) << 32) - fhi - 1))
        return true;  // R < 1 - x <= e^{-x}
    if (!forced && w < exp_lower32_fixed(T, fhi)) return true;
    if (!forced && static_cast<uint64_t>(w) >= exp_upper32_fixed(T, flo)) return false;
    std::vector<uint64_t> words{(static_cast<uint64_t>(w) << 32) | bits.bits(32)};
    return lazy_less(bits, words, [&](int L) {
        return exp_rational(mul(BigUint(jbo2), BigUint(static_cast<u128>(g.b))), BigUint(static_cast<u128>(g.a) * 2), true, L);
    });
}

// The rest of one attempt once its bits v (guide bucket, sign, first 8 bits of the acceptance
// uniform, offset o) and the bucket j are known: o accepted with probability e^{-x}, then the
// sign (or, for y = 0, the fair bit). Returns false on rejection (the caller draws afresh).
template <class Bits, class Policy = NeverForceRefinement>
inline bool gaussian_bucket_accept(Bits& bits, const GaussianBuckets& g, const ExpTables& T, uint64_t v, uint64_t o,
                                   uint64_t j, int64_t& y_out) {
    constexpr unsigned kFirst = 8;
    const unsigned gb = g.buckets.guide_bits;
    const uint64_t B = uint64_t{1} << g.k;
    const bool sign = ((v >> gb) & 1) != 0;
    if (o != 0) {
        // R < (r8 + 1)/2^8 <= 1 - ceil(x 2^8)/2^8 <= e^{-x} when r8 + x8 <= 255, with
        // x 2^8 < M x_step / 2^56 for M = 2 j B o + o^2 < 2^64 (x_step > 2^64 b/(2a))
        const uint32_t r8 = static_cast<uint32_t>((v >> (gb + 1)) & ((1u << kFirst) - 1));
        const u128 M = static_cast<u128>(j) * (2 * B * o) + static_cast<u128>(o) * o;
        bool decided = false;
        if ((M >> 64) == 0 && !Policy::kForce) {
            const u128 x8 = ((static_cast<u128>(static_cast<uint64_t>(M)) * g.x_step) >> (64 - kFirst)) + 1;
            decided = r8 + x8 <= (1u << kFirst) - 1;
        }
        if (!decided && !gaussian_offset_accept_slow<Bits, Policy>(bits, g, T, j, o, r8)) return false;
    }
    const u128 y = static_cast<u128>(j) * B + o;
    if (y > static_cast<u128>(INT64_MAX)) throw std::overflow_error("discrete Gaussian sample does not fit in int64");
    if (y == 0) {
        y_out = 0;
        return g.folded || sign;  // unfolded: the fair bit keeps y = 0 half of the time
    }
    y_out = sign ? -static_cast<int64_t>(y) : static_cast<int64_t>(y);
    return true;
}

// One read gives the guide bucket of j, the sign (or, for y = 0, the fair bit), the first 8
// bits of the acceptance uniform and the offset o; on rejection all are dropped and redrawn.
template <class Bits, class Policy = NeverForceRefinement>
inline int64_t discrete_gaussian_buckets(Bits& bits, const GaussianBuckets& g, const ExpTables& T) {
    constexpr unsigned kFirst = 8;
    const unsigned k = g.k, gb = g.buckets.guide_bits;
    const unsigned head = gb + 1 + (k != 0 ? kFirst : 0);
    for (;;) {
        uint64_t v, o = 0;
        if (head + k <= 64) {
            v = bits.bits(head + k);
            o = k != 0 ? v >> head : 0;
        } else {
            v = bits.bits(head);
            o = bits.bits(k);
        }
        const uint32_t bucket = static_cast<uint32_t>(v & ((1u << gb) - 1));
        const uint32_t e = g.buckets.guide[bucket];
        uint64_t j = e >> 1;
        if (!(e & 1) || Policy::kForce)
            j = gaussian_bucket_scan<Bits, Policy>(bits, g, bucket);
        int64_t y;
        if (gaussian_bucket_accept<Bits, Policy>(bits, g, T, v, o, j, y)) return y;
    }
}

// n samples of discrete_gaussian_buckets into out, the same bits read in the same order (so the
// same output), with the common case in one tight loop: the reader's state and the table's
// constants in registers, 64-bit arithmetic for the buckets where it cannot overflow (j <= jlim),
// and a branch-free sign. Everything else (a bucket the guide does not settle, an acceptance
// the first 8 bits do not decide, y = 0, a bucket beyond jlim) goes through the code above.
template <class Bits>
[[gnu::flatten]] inline void discrete_gaussian_buckets_fill(Bits& bits, const GaussianBuckets& g, const ExpTables& T,
                                                           int64_t* out, size_t n) {
    constexpr unsigned kFirst = 8;
    const unsigned k = g.k, gb = g.buckets.guide_bits;
    const unsigned head = gb + 1 + kFirst, width = head + k;
    const uint64_t B = uint64_t{1} << (k < 63 ? k : 0);
    // jlim: the largest j with 2 j B (B-1) + (B-1)^2 < 2^64 and j B + B - 1 <= INT64_MAX
    const u128 b1 = B - 1;
    if (k == 0 || k > 31 || width > 63) {
        for (size_t i = 0; i < n; ++i) out[i] = discrete_gaussian_buckets(bits, g, T);
        return;
    }
    const uint64_t jlim = static_cast<uint64_t>(std::min<u128>((~static_cast<uint64_t>(0) - b1 * b1) / (2 * B * b1),
                                                              (static_cast<u128>(INT64_MAX) - b1) / B));
    const uint64_t mask_g = (uint64_t{1} << gb) - 1, x_step = g.x_step;
    const uint16_t* guide = g.buckets.guide.data();
    Bits r = bits;
    for (size_t i = 0; i < n; ++i) {
        for (;;) {
            const uint64_t v = r.bits_below64(width);
            const uint64_t o = v >> head;
            const uint32_t bucket = static_cast<uint32_t>(v & mask_g);
            const uint32_t e = guide[bucket];
            const uint64_t j = (e & 1) ? e >> 1 : r.lend(bits, [&](Bits& b) { return gaussian_bucket_scan(b, g, bucket); });
            if (j <= jlim && o != 0) {
                const uint64_t r8 = (v >> (gb + 1)) & ((1u << kFirst) - 1);
                const uint64_t M = j * (2 * B * o) + o * o;
                // r8 + floor(M x_step / 2^56) + 1 <= 255 (gaussian_bucket_accept's test), i.e.
                // M x_step < (255 - r8) 2^56, a bound below 2^64: the high word of the
                // product is 0 and its low word is below the bound (no 128-bit sum)
                const u128 prod = static_cast<u128>(M) * x_step;
                const uint64_t limit = ((uint64_t{1} << kFirst) - 1 - r8) << (64 - kFirst);
                if (static_cast<uint64_t>(prod >> 64) == 0 && static_cast<uint64_t>(prod) < limit) {
                    const int64_t y = static_cast<int64_t>(j * B + o);  // > 0
                    const int64_t s = -static_cast<int64_t>((v >> gb) & 1);
                    out[i] = (y ^ s) - s;
                    break;
                }
            }
            int64_t y;
            if (r.lend(bits, [&](Bits& b) { return gaussian_bucket_accept(b, g, T, v, o, j, y); })) {
                out[i] = y;
                break;
            }
        }
    }
    bits = r;
}

// Tables for many discrete Gaussian samples with one sigma^2 = a/b (the buckets above, for
// every sigma; the shared ExpTables serve the rare slow acceptance).
struct DiscreteGaussianTable {
    DiscreteGaussianParams p;
    GaussianBuckets buckets;
    const ExpTables* exp_tables = nullptr;

    // The constructor's cost in units of one certified geometric threshold (about 60 ns here):
    // about 7 per bucket (series terms, suffix sums and a certified ratio each) and a fixed
    // part (big-integer reciprocals and the guide, about 1700 units).
    static size_t entries_for(const DiscreteGaussianParams& q) {
        if (q.a == 0) return 0;
        return 7 * GaussianBuckets::buckets_for(q.t) + 1700;
    }

    DiscreteGaussianTable() = default;
    explicit DiscreteGaussianTable(const DiscreteGaussianParams& params) : p(params) {
        if (p.a == 0) return;
        exp_tables = &ExpTables::get();
        buckets = GaussianBuckets(p.a, p.b, p.t);
    }

};

template <class Bits, class Policy = NeverForceRefinement>
inline int64_t discrete_gaussian_table(Bits& bits, const DiscreteGaussianTable& g) {
    if (g.p.a == 0) return 0;
    return discrete_gaussian_buckets<Bits, Policy>(bits, g.buckets, *g.exp_tables);
}

}  // namespace dpnoise::exact
