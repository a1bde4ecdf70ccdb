// dpnoise/exact/table_samplers.hpp -- the same exact distributions as geometric.hpp,
// discrete_laplace.hpp and discrete_gaussian.hpp, faster for many samples with one parameter.
//
// Every random decision here has the form "uniform real R < c" for a constant c (a tail
// probability, or an acceptance probability e^{-x}). Each c gets certified integer bounds
// (certified_exp.hpp: Taylor series with outward rounding, no floating point), and R's bits
// are drawn only as far as the bounds need: usually 8 to 13 bits decide, then up to 32 against
// 32-bit bounds, and in the rare band that 32 bits do not decide (about 2^-31), more words of
// R while c is evaluated at increasing precision until the comparison is decided. Each decision
// is therefore an exact Bernoulli(c), and R's bits, being independent, may be drawn lazily.
//
// * Geometric and discrete Laplace, scale t/s <= 146: inversion of Y (or |Y|) over certified
//   tail thresholds, with a guide table on R's first 12 or 13 bits (Thresholds, invert()).
// * Larger scales: Y = H 2^k + L, H by inversion and L by certified rejection.
// * Discrete Gaussian: |Y| = j B + o with the bucket j by inversion over certified tail sums
//   of e^{-i^2 c}, the offset o uniform and accepted with probability e^{-x} (B = 1, no
//   acceptance, for sigma < 146).
//
// Tables cost O(entries) to build, so callers use these samplers for large requests only; the
// output distribution is identical either way.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "dpnoise/exact/certified_exp.hpp"
#include "dpnoise/exact/discrete_gaussian.hpp"
#include "dpnoise/exact/uniform.hpp"

namespace dpnoise::exact {

// Test hook: when set, every trial settles its decisive comparison by the exact refinement
// path (the path taken in production only when 32 bits do not decide), to test it statistically.
inline std::atomic<bool> g_force_refinement{false};
inline std::atomic<bool>& force_refinement_for_testing() { return g_force_refinement; }

// ---------------------------------------------------------------- fixed 256-bit enclosures
// Values scaled by 2^192 (one integer limb, three fraction limbs), for fast table building.
struct Fx {
    uint64_t w[4] = {0, 0, 0, 0};  // little-endian
};

inline Fx fx_from(const BigUint& b) {
    if (b.limb.size() > 4) throw std::overflow_error("table constant beyond 2^64");
    Fx r;
    for (size_t i = 0; i < b.limb.size(); ++i) r.w[i] = b.limb[i];
    return r;
}

// floor or ceil of a * b / 2^192
inline Fx fx_mul(const Fx& a, const Fx& b, bool round_up) {
    uint64_t p[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int i = 0; i < 4; ++i) {
        uint64_t carry = 0;
        for (int j = 0; j < 4; ++j) {
            const u128 t = static_cast<u128>(a.w[i]) * b.w[j] + p[i + j] + carry;
            p[i + j] = static_cast<uint64_t>(t);
            carry = static_cast<uint64_t>(t >> 64);
        }
        p[i + 4] = carry;
    }
    if (p[7] != 0) throw std::overflow_error("table constant product beyond 2^64");
    Fx r;
    r.w[0] = p[3]; r.w[1] = p[4]; r.w[2] = p[5]; r.w[3] = p[6];
    if (round_up && (p[0] | p[1] | p[2])) {
        for (int i = 0; i < 4 && ++r.w[i] == 0; ++i) {}
    }
    return r;
}

struct FxInterval {
    Fx lo, hi;
};

inline BigUint fx_to_big(const Fx& x) {
    BigUint b;
    b.limb.assign(x.w, x.w + 4);
    b.trim();
    return b;
}

inline FxInterval fx_interval(const Enclosure& e) { return {fx_from(e.lo), fx_from(e.hi)}; }
inline FxInterval fx_mul(const FxInterval& a, const FxInterval& b) { return {fx_mul(a.lo, b.lo, false), fx_mul(a.hi, b.hi, true)}; }

// ---------------------------------------------------------------- exact comparisons
// R < num/den for a uniform real R whose leading 64-bit words are `words` (drawn lazily), with
// num and den enclosed by eval(L) -> {num, den} at precision L (den > 0). Decided when
// R_hi * den_hi <= num_lo (then R < num/den) or R_lo * den_lo >= num_hi (then R >= num/den),
// with R in [R_lo, R_hi) = [prefix, prefix + 1) / 2^(64L).
struct RatioEnclosure {
    Enclosure num, den;
};

template <class Bits, class Eval>
inline bool lazy_less_ratio(Bits& bits, std::vector<uint64_t>& words, Eval&& eval) {
    // precision L >= the words already drawn, so that R's prefix and the constants share 2^(64L)
    for (int L = std::max(2, static_cast<int>(words.size()));; L *= 2) {
        while (words.size() < static_cast<size_t>(L)) words.push_back(bits.word());
        BigUint r_lo;
        r_lo.limb.assign(words.rbegin(), words.rend());  // words[0] is the most significant
        r_lo.trim();
        const BigUint r_hi = add_small(r_lo, 1);
        const RatioEnclosure c = eval(L);
        const size_t shift = static_cast<size_t>(64 * L);
        if (compare(mul(r_hi, c.den.hi), shift_left(c.num.lo, shift)) <= 0) return true;
        if (compare(mul(r_lo, c.den.lo), shift_left(c.num.hi, shift)) >= 0) return false;
        if (L > (1 << 16)) throw std::runtime_error("exact comparison did not terminate");
    }
}

template <class Bits, class Eval>
inline bool lazy_less(Bits& bits, std::vector<uint64_t>& words, Eval&& eval) {
    return lazy_less_ratio(bits, words, [&](int L) {
        const BigUint one = scale_one(L);
        return RatioEnclosure{eval(L), Enclosure{one, one}};
    });
}

// 32-bit bounds of a constant c in [0, 1]: a uniform R whose top 32 bits are w satisfies
// R < c for sure when w < lo, and R >= c for sure when w >= hi (hi may be 2^32).
struct Bounds32 {
    uint32_t lo = 0;
    uint64_t hi = 0;
};

inline Bounds32 bounds32(const FxInterval& v) {
    Bounds32 b;
    // value scaled by 2^192 in 4 limbs; the fraction's top 32 bits are the high half of w[2]
    b.lo = v.lo.w[3] >= 1 ? UINT32_MAX : static_cast<uint32_t>(v.lo.w[2] >> 32);
    const bool rest = (v.hi.w[2] & 0xffffffffu) != 0 || v.hi.w[1] != 0 || v.hi.w[0] != 0;
    b.hi = (v.hi.w[3] << 32) + (v.hi.w[2] >> 32) + (rest ? 1 : 0);
    return b;
}

// ---------------------------------------------------------------- inversion over thresholds
// Thresholds 1 > S_1 >= S_2 >= ... >= S_m > 0 with 32-bit bounds; invert() returns
// D = #{d >= 1 : R < S_d} for one uniform R (d <= m, or unbounded when `tail` is set, in which
// case thresholds beyond m are compared exactly). Since the S_d decrease, {d : R < S_d} is a
// prefix: the first 32 bits of R settle D unless they fall in the uncertain band of S_{D+1}.
// Usually fewer do: R's first guide_bits bits name a bucket, and in most buckets (all but a few
// percent of the mass) every R gives the same D, which the guide table then holds. R's further
// bits are drawn only when needed (they are independent, so drawing them later is exact).
struct Thresholds {
    static constexpr unsigned kGuideBits = 13;  // at most; finish() picks fewer for small scales
    unsigned guide_bits = kGuideBits;
    std::vector<uint32_t> lo;     // lo[d-1] for S_d, non-increasing
    std::vector<uint32_t> hi_m1;  // hi[d-1] - 1 (hi >= 1 always; hi = 2^32 is stored as 2^32 - 1)
    bool tail = false;          // thresholds continue beyond m (compared exactly)
    // guide[b] = 2 c + settled, c = #{i : lo[i] > w} at the largest w whose top guide_bits are
    // b: a lower bound for every w in that bucket, from which a short forward scan finds the
    // count (Chen & Asau 1974's indexed search). `settled` marks buckets in which every w
    // already decides D = c (no lower bound inside the bucket, and the whole bucket at or
    // above S_{c+1}'s upper bound): there one load answers.
    std::vector<uint16_t> guide;  // 16 bits: every table here has m < 2^15 thresholds

    void push(const struct Bounds32& b);
    void finish(uint64_t scale = 0);  // scale: about 1/(1 - S_1); sizes the guide
};

inline void Thresholds::push(const Bounds32& b) {
    lo.push_back(b.lo);
    hi_m1.push_back(static_cast<uint32_t>(std::max<uint64_t>(b.hi, 1) - 1));
}

inline void Thresholds::finish(uint64_t scale) {
    // lo must be non-increasing for the prefix property; enforce it (lowering a lower bound
    // keeps it valid)
    for (size_t i = 1; i < lo.size(); ++i) lo[i] = std::min(lo[i], lo[i - 1]);
    // about 256 buckets per threshold spacing near R = 1, where the mass is (at most 2^13
    // buckets, 16 KiB): the unsettled buckets then carry a few percent of the mass
    guide_bits = kGuideBits;
    if (scale) {
        unsigned g = 6;
        while (g < kGuideBits && (uint64_t{1} << g) < 256 * scale) ++g;
        guide_bits = g;
    }
    guide.resize(size_t{1} << guide_bits);
    const size_t m = hi_m1.size();
    if (2 * m + 1 > UINT16_MAX) throw std::logic_error("too many thresholds for a 16-bit guide");
    // #{i : lo[i] > w} is the length of a prefix (lo is non-increasing) and shrinks as w grows:
    // one sweep over the buckets in increasing w finds it at each bucket's ends
    size_t at_min = m;
    for (size_t b = 0; b < guide.size(); ++b) {
        const uint32_t wmin = static_cast<uint32_t>(static_cast<uint64_t>(b) << (32 - guide_bits));
        const uint32_t wmax = static_cast<uint32_t>(((static_cast<uint64_t>(b) + 1) << (32 - guide_bits)) - 1);
        while (at_min > 0 && lo[at_min - 1] <= wmin) --at_min;
        size_t c = at_min;
        while (c > 0 && lo[c - 1] <= wmax) --c;
        const bool settled = c < m && at_min == c && wmin > hi_m1[c];
        guide[b] = static_cast<uint16_t>(2 * c + (settled ? 1 : 0));
        at_min = c;  // the next bucket starts above this one's wmax
    }
    // sentinels: lo[m] = lo[m+1] = 0 is never > w, so the scan below needs no bounds check
    lo.push_back(0);
    lo.push_back(0);
}


// The rare end of invert(): the first 32 bits w of R left D undecided between k and more.
template <class Bits, class Exact>
[[gnu::noinline]] uint64_t invert_refine(Bits& bits, const Thresholds& th, uint32_t w, uint64_t k, Exact& less_exact) {
    const size_t m = th.hi_m1.size();
    if (k == m && !th.tail) return m;
    // compare R exactly with S_{k+1}, S_{k+2}, ... (R's first word completed lazily)
    std::vector<uint64_t> words{(static_cast<uint64_t>(w) << 32) | bits.bits(32)};
    uint64_t d = k;
    while ((d < m || th.tail) && less_exact(bits, words, d + 1)) ++d;
    return d;
}

// invert_bucket() for a bucket that its guide entry does not settle: R's next 32 - guide_bits
// bits complete w, then the scan.
template <class Bits, class Exact>
[[gnu::noinline]] uint64_t invert_scan(Bits& bits, const Thresholds& th, uint32_t bucket, Exact& less_exact) {
    const size_t m = th.hi_m1.size();  // lo carries two zero sentinels beyond m
    const unsigned rest = 32 - th.guide_bits;
    const uint32_t w = (bucket << rest) | static_cast<uint32_t>(bits.bits(rest));
    size_t k = th.guide[bucket] >> 1;
    k += th.lo[k] > w ? 1 : 0;  // two branch-free steps settle almost every unsettled bucket
    k += th.lo[k] > w ? 1 : 0;
    while (th.lo[k] > w) ++k;  // R < S_d for sure for d <= k (stops at a sentinel)
    if (!force_refinement_for_testing().load(std::memory_order_relaxed)) {
        if (k < m && w > th.hi_m1[k]) return k;  // w >= hi: R >= S_{k+1} for sure
    }
    return invert_refine(bits, th, w, k, less_exact);
}

// D for a uniform R whose first guide_bits bits are `bucket` (already drawn); R's later bits
// are drawn from `bits` only when the bucket does not settle D.
template <class Bits, class Exact>
inline uint64_t invert_bucket(Bits& bits, const Thresholds& th, uint32_t bucket, Exact&& less_exact) {
    const uint32_t g = th.guide[bucket];
    if ((g & 1) && !force_refinement_for_testing().load(std::memory_order_relaxed)) return g >> 1;
    return invert_scan(bits, th, bucket, less_exact);
}

template <class Bits, class Exact>
inline uint64_t invert(Bits& bits, const Thresholds& th, Exact&& less_exact) {
    return invert_bucket(bits, th, static_cast<uint32_t>(bits.bits(th.guide_bits)), less_exact);
}

// ---------------------------------------------------------------- small certified exponentials
// 64-bit fixed-point helpers (values scaled by 2^64), rounding in a chosen direction.
inline uint64_t mulhi_floor(uint64_t a, uint64_t b) { return static_cast<uint64_t>((static_cast<u128>(a) * b) >> 64); }
inline uint64_t mulhi_ceil(uint64_t a, uint64_t b) {
    const u128 p = static_cast<u128>(a) * b;
    return static_cast<uint64_t>(p >> 64) + (static_cast<uint64_t>(p) != 0 ? 1 : 0);
}

// Partial sums of the alternating series e^{-x} = sum_k (-x)^k / k!, x·2^64 given, 0 <= x < 1/8,
// in 64-bit fixed point with directed rounding (terms decrease, so a partial sum ending with a
// subtracted term is a lower bound and one ending with an added term an upper bound):
//   lower: terms k = 0..5 at x = xhi (added terms rounded down, subtracted ones up), error <= x^6/720
//   upper: terms k = 0..4 at x = xlo (the opposite rounding),                       error <= x^5/120
// Both are returned scaled by 2^64 (the upper one as u128, since it may equal 1).
// One step of the term chains p_k = p_{k-1} x / k, floor and ceil versions; K is a constant so
// the divisions compile to multiplications.
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

template <uint64_t K>
inline void series_step(uint64_t& fl, uint64_t& cl, uint64_t x) {
    fl = div_small<K>(mulhi_floor(fl, x));
    cl = div_small<K>(mulhi_ceil(cl, x) + (K - 1));  // ceil; x < 2^61 keeps values < 2^61
}

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

// 32-bit bounds of e^{-x} for x·2^64 in [xlo, xhi], 0 <= x < 1/8.
inline Bounds32 exp_small_bounds32(uint64_t xlo, uint64_t xhi) {
    Bounds32 b;
    b.lo = static_cast<uint32_t>(exp_small_lower(xhi) >> 32);
    const u128 up = exp_small_upper(xlo);
    b.hi = static_cast<uint64_t>((up >> 32) + ((up & 0xffffffffu) != 0));
    return b;
}

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
template <unsigned First, class Bits>
[[gnu::noinline]] bool accept_low_part_slow(Bits& bits, const GeometricTable& g, uint64_t l, uint32_t r) {
    // x 2^64 in [xlo, xlo + 2): l floor(2^128 s/t) / 2^64, rounded down
    const uint64_t r_hi = static_cast<uint64_t>(g.x_recip >> 64), r_lo = static_cast<uint64_t>(g.x_recip);
    const uint64_t xlo = static_cast<uint64_t>(static_cast<u128>(l) * r_hi + ((static_cast<u128>(l) * r_lo) >> 64));
    const bool forced = force_refinement_for_testing().load(std::memory_order_relaxed);
    const uint32_t w = (r << (32 - First)) | static_cast<uint32_t>(bits.bits(32 - First));  // R's next bits
    if (!forced) {
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
template <class Bits>
[[gnu::noinline]] uint64_t geometric_high_scan(Bits& bits, const GeometricTable& g, uint32_t bucket) {
    auto exact = [&g](Bits& b, std::vector<uint64_t>& words, uint64_t kk) { return less_power(b, words, kk, g.high_a, g.t); };
    return invert_scan(bits, g.high, bucket, exact);
}

// The large-scale path: Y (Signed = false) or the discrete Laplace sign * Y (Signed = true).
// One read of k + guide_bits + 8 (+ 1) bits gives l, the first 8 bits of L's acceptance
// uniform, H's bucket and the sign; on rejection all of them are dropped (unused independent
// bits may always be discarded) and drawn afresh.
template <bool Signed, class Bits>
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
        if (r + x8 > (1u << kFirst) - 1 || force_refinement_for_testing().load(std::memory_order_relaxed)) {
            if (!accept_low_part_slow<kFirst>(bits, g, l, r)) continue;
        }
        v >>= kFirst;
        const uint32_t bucket = static_cast<uint32_t>(v & ((1u << gb) - 1));
        const uint32_t e = g.high.guide[bucket];
        uint64_t h = e >> 1;
        if (!(e & 1) || force_refinement_for_testing().load(std::memory_order_relaxed))
            h = geometric_high_scan(bits, g, bucket);
        // Y = h 2^k + l <= INT64_MAX exactly when h < 2^(63 - k), as l < 2^k
        if ((h >> (63 - k)) != 0) throw std::overflow_error("sample does not fit in int64");
        const int64_t y = static_cast<int64_t>((h << k) | l);
        if (!Signed) return y;
        const bool negative = ((v >> gb) & 1) != 0;
        if (negative && y == 0) continue;  // "-0": CKS Algorithm 2 rejects it
        return negative ? -y : y;
    }
}

// The direct path (t/s <= 146) alone, for callers that dispatch once per request.
template <class Bits>
inline uint64_t geometric_direct(Bits& bits, const GeometricTable& g) {
    return invert(bits, g.direct_table, [&](Bits& b, std::vector<uint64_t>& words, uint64_t k) {
        return less_power(b, words, k, g.s, g.t);
    });
}

template <class Bits>
inline int64_t discrete_laplace_direct(Bits& bits, const GeometricTable& g) {
    // |Y| = #{k >= 1 : R < 2 q^k/(1+q)}, q = e^{-s/t}, then a fair sign; the bucket of R and
    // the sign come from one read (the sign is dropped when |Y| = 0)
    const unsigned gb = g.direct_table.guide_bits;
    const uint64_t v = bits.bits(gb + 1);
    const uint64_t a = invert_bucket(bits, g.direct_table, static_cast<uint32_t>(v & ((1u << gb) - 1)),
                                     [&](Bits& b, std::vector<uint64_t>& words, uint64_t k) {
        return lazy_less_ratio(b, words, [&](int L) {
            const BigUint T(static_cast<u128>(g.t)), Sd(static_cast<u128>(g.s));
            const Enclosure qk = exp_rational(mul(BigUint(static_cast<u128>(k)), Sd), T, true, L);
            const Enclosure q = exp_rational(Sd, T, true, L);
            const BigUint S = scale_one(L);
            return RatioEnclosure{Enclosure{shift_left(qk.lo, 1), shift_left(qk.hi, 1)},
                                  Enclosure{add(S, q.lo), add(S, q.hi)}};
        });
    });
    if (a > static_cast<uint64_t>(INT64_MAX)) throw std::overflow_error("sample does not fit in int64");
    return (v >> gb) != 0 ? -static_cast<int64_t>(a) : static_cast<int64_t>(a);
}

// Either path, chosen per call (for mixed per-element requests and other C++ callers).
template <class Bits>
inline uint64_t geometric_table(Bits& bits, const GeometricTable& g) {
    if (g.t == 0) return 0;
    if (!g.direct) return static_cast<uint64_t>(geometric_table_large<false>(bits, g));
    if (g.law != GeometricTable::Law::geometric) throw std::logic_error("table built for the discrete Laplace");
    return geometric_direct(bits, g);
}

template <class Bits>
inline int64_t discrete_laplace_table(Bits& bits, const GeometricTable& g) {
    if (g.t == 0) return 0;
    if (!g.direct) return geometric_table_large<true>(bits, g);
    if (g.law != GeometricTable::Law::laplace) throw std::logic_error("table built for the geometric law");
    return discrete_laplace_direct(bits, g);
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
            if (gs.size() >= 2 && g.hi.w[3] == 0 && g.hi.w[2] == 0 && g.hi.w[1] == 0 && g.hi.w[0] < (uint64_t{1} << 32)) break;
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
template <class Bits>
[[gnu::noinline]] uint64_t gaussian_bucket_scan(Bits& bits, const GaussianBuckets& g, uint32_t bucket) {
    auto exact = [&g](Bits& bb, std::vector<uint64_t>& words, uint64_t d) {
        return lazy_less_ratio(bb, words, [&](int L) { return g.ratio(d, L); });
    };
    return invert_scan(bits, g.buckets, bucket, exact);
}

// The acceptance R < e^{-x}, x = (2 j B o + o^2) b / (2a), when R's first 8 bits r8 did not
// decide it: R's next 24 bits, then 32-bit fixed-point bounds of e^{-x}, then exactly.
template <class Bits>
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
    const bool forced = force_refinement_for_testing().load(std::memory_order_relaxed);
    if (!forced && fhi < (static_cast<u128>(1) << 32) && w < static_cast<uint32_t>((static_cast<u128>(1) << 32) - fhi - 1))
        return true;  // R < 1 - x <= e^{-x}
    if (!forced && w < exp_lower32_fixed(T, fhi)) return true;
    if (!forced && static_cast<uint64_t>(w) >= exp_upper32_fixed(T, flo)) return false;
    std::vector<uint64_t> words{(static_cast<uint64_t>(w) << 32) | bits.bits(32)};
    return lazy_less(bits, words, [&](int L) {
        return exp_rational(mul(BigUint(jbo2), BigUint(static_cast<u128>(g.b))), BigUint(static_cast<u128>(g.a) * 2), true, L);
    });
}

// One read gives the guide bucket of j, the sign (or, for y = 0, the fair bit), the first 8
// bits of the acceptance uniform and the offset o; on rejection all are dropped and redrawn.
template <class Bits>
inline int64_t discrete_gaussian_buckets(Bits& bits, const GaussianBuckets& g, const ExpTables& T) {
    constexpr unsigned kFirst = 8;
    const unsigned k = g.k, gb = g.buckets.guide_bits;
    const unsigned head = gb + 1 + (k != 0 ? kFirst : 0);
    const uint64_t B = uint64_t{1} << k;
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
        const bool sign = ((v >> gb) & 1) != 0;
        const uint32_t e = g.buckets.guide[bucket];
        uint64_t j = e >> 1;
        if (!(e & 1) || force_refinement_for_testing().load(std::memory_order_relaxed))
            j = gaussian_bucket_scan(bits, g, bucket);
        if (o != 0) {
            // R < (r8 + 1)/2^8 <= 1 - ceil(x 2^8)/2^8 <= e^{-x} when r8 + x8 <= 255, with
            // x 2^8 < M x_step / 2^56 for M = 2 j B o + o^2 < 2^64 (x_step > 2^64 b/(2a))
            const uint32_t r8 = static_cast<uint32_t>((v >> (gb + 1)) & ((1u << kFirst) - 1));
            const u128 M = static_cast<u128>(j) * (2 * B * o) + static_cast<u128>(o) * o;
            bool decided = false;
            if ((M >> 64) == 0 && !force_refinement_for_testing().load(std::memory_order_relaxed)) {
                const u128 x8 = ((static_cast<u128>(static_cast<uint64_t>(M)) * g.x_step) >> (64 - kFirst)) + 1;
                decided = r8 + x8 <= (1u << kFirst) - 1;
            }
            if (!decided && !gaussian_offset_accept_slow(bits, g, T, j, o, r8)) continue;
        }
        const u128 y = static_cast<u128>(j) * B + o;
        if (y > static_cast<u128>(INT64_MAX)) throw std::overflow_error("discrete Gaussian sample does not fit in int64");
        if (y == 0) {
            if (g.folded || sign) return 0;  // unfolded: the fair bit keeps y = 0 half of the time
            continue;
        }
        return sign ? -static_cast<int64_t>(y) : static_cast<int64_t>(y);
    }
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

template <class Bits>
inline int64_t discrete_gaussian_table(Bits& bits, const DiscreteGaussianTable& g) {
    if (g.p.a == 0) return 0;
    return discrete_gaussian_buckets(bits, g.buckets, *g.exp_tables);
}

}  // namespace dpnoise::exact
