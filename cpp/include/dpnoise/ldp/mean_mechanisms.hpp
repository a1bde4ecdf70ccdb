// dpnoise/ldp/mean_mechanisms.hpp -- the randomizers of the numeric mean oracles, exact.
//
// Every user's value is first on the input grid t = m / 2^K (numeric_grid.hpp). Then:
//
// Duchi (Duchi, Jordan & Wainwright, JASA 2018, §4.2.3, one dimension; Wang et al., ICDE 2019,
// Alg. 1). Fresh reports (layout 2, from 0.11.0) decide "R < 1/2 + κ(u − 1/2)" on the value's exact
// position u directly (duchi_direct_chunk, below; the same law); memoised answers keep the grid
// first (layout 1), as follows: the bit b = 1 (report +C) with probability 1/2 + t (e^ε − 1)/(2(e^ε + 1)), else
// b = 0 (report −C), C = (e^ε + 1)/(e^ε − 1). P(b | t)/P(b | t') <= (1 + κ)/(1 − κ) = e^ε with
// κ = tanh(ε/2). 1BitMean (Ding, Kulkarni & Yekhanin, NeurIPS 2017, §2.1) is the same bit:
// P(1) = 1/(e^ε + 1) + (x/m)(e^ε − 1)/(e^ε + 1) with x/m = (t + 1)/2.
// The decision "uniform R < c(m)" reads R's first 64-bit word against certified 64-bit bounds of
// c(m) = 1/2 + m κ / 2^(K+1) (from a certified enclosure of κ); in the band they do not decide
// (a few units of 2^-64) it is refined exactly with c = (S(2^K + m) + e(2^K − m)) /
// (2^(K+1)(S + e)), e an enclosure of e^{−γ} at scale S (lazy_comparison.hpp).
//
// Piecewise (Wang et al., ICDE 2019, Alg. 2) on a dyadic output grid, with C replaced by the
// dyadic C~ = Z / 2^G >= C = (e^{ε/2} + 1)/(e^{ε/2} − 1) (rounded up: more noise). The continuous
// mechanism: with probability (C~ + 1)/(2 C~) = (Z + 2^G)/(2Z), Y uniform on the window
// [ℓ, ℓ + C~ − 1], ℓ = (C~ + 1) t/2 − (C~ − 1)/2, else uniform on [−C~, C~] outside it. Its
// densities inside and outside differ by ((C~ + 1)/(C~ − 1))² <= e^ε (equality at C~ = C) and
// E[Y] = t. The report is Y rounded at random to the grid z / 2^G (up with probability equal to
// Y's fractional part): post-processing, so still ε-LDP, and unbiased. Every breakpoint lies on
// the fine grid 2^-(G+K+1), so Y is drawn as a uniform fine cell plus a uniform point in it,
// and the rounding coin has the dyadic probability (2 rem + 1)/2^(K+2): all integer draws.
// docs/ldp_numeric.md proves ε-LDP and unbiasedness of this grid version.
//
// Hybrid (Wang et al., ICDE 2019, §III-C): Piecewise with probability α, Duchi otherwise,
// α = 1 − e^{−ε/2} (above ε* ≈ 0.61) or 0; "R >= e^{−γ/2}" decided like the Duchi bit.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "dpnoise/simd.hpp"  // DPNOISE_X86_SIMD: the project's one x86 switch

#include "dpnoise/exact/certified_exp.hpp"
#include "dpnoise/exact/lazy_comparison.hpp"
#include "dpnoise/exact/uniform.hpp"
#include "dpnoise/ldp/numeric_grid.hpp"
#include "dpnoise/random/stream_fill.hpp"

namespace dpnoise::ldp {

// 64-bit bounds [lo, hi] (hi up to 2^64) of a constant c in [0, 1] from an enclosure at L = 2.
struct Bounds64 {
    uint64_t lo = 0;
    u128 hi = 0;
};

inline Bounds64 bounds64(const exact::Enclosure& e) {  // e at scale 2^128
    Bounds64 b;
    bool lost = false;
    const exact::BigUint lo = exact::shift_right(e.lo, 64);
    exact::BigUint hi = exact::shift_right(e.hi, 64, &lost);
    if (lost) hi = exact::add_small(hi, 1);
    b.lo = lo.limb.size() > 1 ? UINT64_MAX : (lo.is_zero() ? 0 : lo.limb[0]);
    b.hi = hi.limb.size() > 1 ? (static_cast<u128>(hi.limb[1]) << 64) | hi.limb[0] : (hi.is_zero() ? 0 : hi.limb[0]);
    if (b.hi > (static_cast<u128>(1) << 64)) b.hi = static_cast<u128>(1) << 64;
    return b;
}

// e^{−num/den} at precision L, with γ = 0 exact.
inline exact::Enclosure exp_minus(const exact::BigUint& num, const exact::BigUint& den, int L) {
    if (num.is_zero()) return {exact::scale_one(L), exact::scale_one(L)};
    return exact::exp_rational(num, den, true, L);
}

struct MeanMechanism {
    enum Method : int { kDuchi = 0, kPiecewise = 1, kHybrid = 2 };
    static constexpr unsigned K = InputGrid::kBits;
    // Reproducibility unit (reports per secret stream); a multiple of 8 (packed bits).
    static constexpr size_t kReportsPerStream = size_t{1} << 16;
    // Z <= 2^40 (C~ − C < 2^-G <= 2^-33 C~), or G = 8 for the largest C (ε < 2^-33): Z < 2^61.
    static constexpr int kZBits = 40;
    static constexpr int kMinG = 8;

    Method method;
    InputGrid grid;
    exact::BigUint gamma_num, gamma_den, half_den;  // γ = num/den; γ/2 = num/half_den
    Bounds64 kappa;                                  // κ 2^64 = tanh(γ/2) 2^64
    Bounds64 keep_duchi;                             // e^{−γ/2} 2^64 (hybrid: P(Duchi))
    bool hybrid_mixes = false;                       // hybrid with α > 0
    uint64_t kappa_gap = 0;                          // κhi − κlo (a few units)
    uint64_t half_minus_kappa = 0;                   // floor((2^64 − κlo)/2): the direct bit's c(0)
    uint64_t kappa32 = 0, coarse_c0 = 0;             // floor(κlo/2^32), floor((2^32 − kappa32)/2)
    uint64_t Z = 0;                                  // piecewise: C~ = Z / 2^G
    unsigned G = 0;

    MeanMechanism(Method m, double low, double high, exact::BigUint num, exact::BigUint den, bool mix)
        : method(m), grid(low, high), gamma_num(std::move(num)), gamma_den(std::move(den)), hybrid_mixes(mix) {
        if (gamma_den.is_zero()) throw std::invalid_argument("gamma_den must be positive");
        if (gamma_num.is_zero()) throw std::invalid_argument("epsilon must be positive");
        if (exact::compare(gamma_num, exact::mul(gamma_den, exact::BigUint(static_cast<u128>(1000)))) > 0)
            throw std::invalid_argument("epsilon must be at most 1000");
        half_den = exact::add(gamma_den, gamma_den);
        // κ = (1 − e)/(1 + e), e = e^{−γ}: decreasing in e
        const exact::BigUint S = exact::scale_one(2);
        const exact::Enclosure e = exp_minus(gamma_num, gamma_den, 2);
        const exact::BigUint klo = exact::divmod(exact::shift_left(sat_sub(S, e.hi), 128), exact::add(S, e.hi)).first;
        const auto [khq, khr] = exact::divmod(exact::shift_left(sat_sub(S, e.lo), 128), exact::add(S, e.lo));
        kappa = bounds64({klo, khr.is_zero() ? khq : exact::add_small(khq, 1)});
        if (kappa.hi - kappa.lo >= (static_cast<u128>(1) << 30)) throw std::logic_error("kappa's bounds are too wide");
        kappa_gap = static_cast<uint64_t>(kappa.hi - kappa.lo);
        half_minus_kappa = static_cast<uint64_t>(((static_cast<u128>(1) << 64) - kappa.lo) >> 1);
        kappa32 = kappa.lo >> 32;
        coarse_c0 = ((uint64_t{1} << 32) - kappa32) >> 1;
        keep_duchi = bounds64(exp_minus(gamma_num, half_den, 2));
        piecewise_grid();
    }

    static exact::BigUint sat_sub(const exact::BigUint& a, const exact::BigUint& b) {
        return exact::compare(a, b) > 0 ? exact::sub(a, b) : exact::BigUint();
    }

    // Z = ceil(C_hi 2^G) with C_hi >= C = (1 + e)/(1 − e), e = e^{−γ/2} (increasing in e: use
    // e.hi), and G the largest with Z <= 2^40 (at least kMinG).
    void piecewise_grid() {
        const int L = 4;
        const exact::BigUint S = exact::scale_one(L);
        const exact::Enclosure e = exp_minus(gamma_num, half_den, L);
        if (exact::compare(e.hi, S) >= 0) throw std::invalid_argument("epsilon too small for the piecewise grid");
        const exact::BigUint num = exact::add(S, e.hi), den = exact::sub(S, e.hi);
        const exact::BigUint c_floor = exact::divmod(num, den).first;  // >= 1
        const int b = static_cast<int>(c_floor.bit_length());
        if (b + kMinG > 61) throw std::invalid_argument("epsilon too small for the piecewise grid");
        G = static_cast<unsigned>(std::max(kZBits - b, kMinG));
        const auto [q, r] = exact::divmod(exact::shift_left(num, G), den);
        const exact::BigUint z = r.is_zero() ? q : exact::add_small(q, 1);
        Z = z.limb[0];
    }

    // ---------------------------------------------------------------- Duchi's bit
    // "R < 1/2 + m κ / 2^(K+1)" exactly.
    template <class Bits>
    bool duchi_bit(Bits& bits, int64_t m) const {
        const bool neg = m < 0;
        const u128 am = static_cast<u128>(neg ? -m : m);
        const u128 half = static_cast<u128>(1) << 63;
        const u128 dlo = (am * kappa.lo) >> (K + 1);
        const u128 prod_hi = am * kappa.hi;
        const u128 dhi = (prod_hi >> (K + 1)) + ((prod_hi & ((static_cast<u128>(1) << (K + 1)) - 1)) ? 1 : 0);
        const u128 lo = neg ? half - dhi : half + dlo;  // lo <= c 2^64 <= hi
        const u128 hi = neg ? half - dlo : half + dhi;
        return decide64(bits, lo, hi, [&](Bits& b, uint64_t w) { return duchi_refine(b, w, m); });
    }

    // duchi_bit with the hot loop's reader copy `local`: the same bits and the same answer, the
    // first comparison without a branch on the random bits; the rare rest on `owner` (lend).
    // duchi_bit's bounds lo <= c(m) 2^64 <= hi, with one 64 x 64 product: am κhi = am κlo +
    // am (κhi − κlo), the difference a few units (kappa_gap, set in the constructor)
    // Without a branch on m's sign (a coin flip for values spread around the midpoint): with
    // s = all ones when m < 0, |m| = (m ^ s) − s, and lo = half ± (dhi or dlo) by the same mask.
    void duchi_bounds(int64_t m, u128& lo, u128& hi) const {
        const uint64_t s64 = static_cast<uint64_t>(m >> 63);
        const uint64_t am = (static_cast<uint64_t>(m) ^ s64) - s64;  // <= 2^K
        const u128 s = static_cast<u128>(static_cast<i128>(m >> 63));
        const u128 half = static_cast<u128>(1) << 63;
        const u128 prod_lo = static_cast<u128>(am) * kappa.lo;
        const u128 dlo = prod_lo >> (K + 1);
        const u128 dhi = (prod_lo + am * kappa_gap + ((static_cast<u128>(1) << (K + 1)) - 1)) >> (K + 1);
        const u128 x = (dhi & s) | (dlo & ~s), y = (dlo & s) | (dhi & ~s);  // m < 0: (dhi, dlo)
        lo = half + ((x ^ s) - s);  // m < 0: half − dhi; else half + dlo
        hi = half + ((y ^ s) - s);
    }

    template <class Bits>
    bool duchi_bit_fast(Bits& local, Bits& owner, int64_t m) const {
        u128 lo, hi;
        duchi_bounds(m, lo, hi);
        const uint64_t w32 = local.bits(32);
        const bool yes = (static_cast<u128>(w32) + 1) << 32 <= lo, no = static_cast<u128>(w32) << 32 >= hi;
        if (__builtin_expect(!(yes | no), 0))
            return local.lend(owner, [&](Bits& b) { return decide64_after32(b, w32, lo, hi, [&](Bits& bb, uint64_t w) {
                return duchi_refine(bb, w, m);
            }); });
        return yes;
    }

    template <class Bits>
    bool hybrid_uses_duchi_fast(Bits& local, Bits& owner) const {
        if (!hybrid_mixes) return true;
        const uint64_t w32 = local.bits(32);
        const bool yes = (static_cast<u128>(w32) + 1) << 32 <= keep_duchi.lo;
        const bool no = static_cast<u128>(w32) << 32 >= keep_duchi.hi;
        if (__builtin_expect(!(yes | no), 0))
            return local.lend(owner, [&](Bits& b) {
                return decide64_after32(b, w32, keep_duchi.lo, keep_duchi.hi, [this](Bits& bb, uint64_t w) {
                    std::vector<uint64_t> words{w};
                    return exact::lazy_less(bb, words, [this](int L) { return exp_minus(gamma_num, half_den, L); });
                });
            });
        return yes;
    }

    // decide64 after its first 32 bits w32 left the question open.
    template <class Bits, class Refine>
    [[gnu::noinline]] static bool decide64_after32(Bits& bits, uint64_t w32, u128 lo, u128 hi, Refine&& refine) {
        const uint64_t w = (w32 << 32) | bits.bits(32);
        if (static_cast<u128>(w) + 1 <= lo) return true;
        if (static_cast<u128>(w) >= hi) return false;
        return refine(bits, w);
    }

    // "R < c" given 64-bit bounds lo <= c 2^64 <= hi: R's first 32 bits decide unless they fall
    // in the band [lo, hi) / 2^32 (probability about 2^-31); then its first 64 bits, then refine.
    template <class Bits, class Refine>
    static bool decide64(Bits& bits, u128 lo, u128 hi, Refine&& refine) {
        const uint64_t w32 = bits.bits(32);
        if ((static_cast<u128>(w32) + 1) << 32 <= lo) return true;  // R < (w32 + 1)/2^32 <= c
        if (static_cast<u128>(w32) << 32 >= hi) return false;       // R >= w32/2^32 >= c
        const uint64_t w = (w32 << 32) | bits.bits(32);
        if (static_cast<u128>(w) + 1 <= lo) return true;  // R < (w + 1)/2^64 <= c
        if (static_cast<u128>(w) >= hi) return false;      // R >= w/2^64 >= c
        return refine(bits, w);
    }

    // grid point m: u = A/W with A = 2^K + m, W = 2^(K+1)
    template <class Bits>
    [[gnu::noinline]] bool duchi_refine(Bits& bits, uint64_t w, int64_t m) const {
        return duchi_exact(bits, w, exact::BigUint(static_cast<u128>(InputGrid::kOne + m)),
                           exact::BigUint(static_cast<u128>(2 * InputGrid::kOne)));
    }

    // "R < c" exactly, c = (A + e (W − A)) / (W (1 + e)) = 1/2 + κ(u − 1/2) at u = A/W, e = e^{−γ},
    // R's first 64-bit word w (the lazy comparison draws the rest): both layouts' last step
    template <class Bits>
    bool duchi_exact(Bits& bits, uint64_t w, const exact::BigUint& A, const exact::BigUint& W) const {
        const exact::BigUint rest = exact::sub(W, A);
        std::vector<uint64_t> words{w};
        return exact::lazy_less_ratio(bits, words, [&](int L) {
            const exact::BigUint S = exact::scale_one(L);
            const exact::Enclosure e = exp_minus(gamma_num, gamma_den, L);
            const exact::BigUint base = exact::mul(A, S);
            return exact::RatioEnclosure{
                exact::Enclosure{exact::add(base, exact::mul(e.lo, rest)), exact::add(base, exact::mul(e.hi, rest))},
                exact::Enclosure{exact::mul(W, exact::add(S, e.lo)), exact::mul(W, exact::add(S, e.hi))}};
        });
    }

    // ---------------------------------------------------------------- Duchi's bit, direct
    // Layout 2 (0.11.0) of the Duchi bit, from the value itself. P(b = 1 | m) = 1/2 + m κ/2^(K+1)
    // is linear in m and the grid's rounding has E[m/2^K] = 2u − 1, u = (clip(v) − low)/(high − low),
    // so the two steps together give P(b = 1 | v) = 1/2 + κ (u − 1/2) = c(u) exactly: one comparison
    // "uniform R < c(u)" draws the same law without the rounding's bits (docs/ldp_numeric.md,
    // "Duchi's bit, direct").
    // With U ≈ u 2^64 (|u 2^64 − U| <= M) and κ 2^64 in [κlo, κlo + gap], c(u) 2^64 = (2^64 − κ 2^64)/2
    // + κ 2^64 U/2^64 lies in [center − E, center + E), center = floor((2^64 − κlo)/2) +
    // floor(κlo U / 2^64), E = gap + M + 2: the first term is off by [−gap/2, 1), the second by
    // (κ − κlo) 2^64 u in [0, gap], κlo (u 2^64 − U)/2^64 in [−M, M] and the floor's [0, 1).
    uint64_t direct_slack(uint64_t M) const { return kappa_gap + M + 2; }

    uint64_t direct_center(uint64_t U) const {
        return half_minus_kappa + static_cast<uint64_t>((static_cast<u128>(kappa.lo) * U) >> 64);  // < 2^64
    }

    // The coarse step, from the grid's U32 (|u 2^32 − U32| < 10): C = coarse_c0 + floor(kappa32 U32 /
    // 2^32) is within 14 of c(u) 2^32. κ 2^32 is in [kappa32, kappa32 + 2) (gap < 2^30), so
    // coarse_c0 is within 1 of (1 − κ) 2^31, and kappa32 U32/2^32 within 2 u + kappa32 10/2^32 < 12
    // of κ u 2^32, plus 1 for the floor. With the slack kCoarseSlack (64, well above 14), R's top word
    // w32 decides "R < c" when w32 < C − slack and "R >= c" when w32 >= C + slack; otherwise (about
    // 2^-25 of values) direct_refine decides.
    static constexpr int64_t kCoarseSlack = 64;

    int64_t coarse_c(uint64_t U32) const { return static_cast<int64_t>(coarse_c0 + ((kappa32 * U32) >> 32)); }

    // v (finite) clipped to the bounds, and c(u) 2^64's enclosure [center − slack, center + slack)
    // from the fixed point where the grid has one, else from the exact quotient; false (slack
    // 2^64 − 1) in map()'s wide case, where only the exact comparison decides.
    double clip(double v) const {
        v = v < grid.low ? grid.low : v;  // exact
        return v > grid.high ? grid.high : v;
    }

    bool direct_bounds(double x, uint64_t& center, uint64_t& slack) const {  // x clipped
        uint64_t U = 0;
        const bool fast = grid.fixed_enabled();
        const bool bounded = fast ? (U = grid.fixed_u64(x), true) : grid.exact_u64(x, U);
        center = direct_center(U);
        slack = bounded ? direct_slack(fast ? grid.fast_margin() + 1 : 1) : ~uint64_t{0};
        return bounded;
    }

    // The 32-bit step for R's top word w32 < 2^32: yes = 1 when R < c for every such R ((w32 + 1)
    // 2^32 <= center − slack), undecided = 1 when neither that nor R >= c for all (w32 2^32 >= center
    // + slack) holds. Arithmetic only: the answer is a coin flip, and a branch on it mispredicts half
    // the time (bounds saturate toward undecided: below 0, and at or above 2^64).
    static void direct_first(uint64_t w32, uint64_t center, uint64_t slack, unsigned& yes, unsigned& undecided) {
        uint64_t lo, hi;
        const bool under = __builtin_sub_overflow(center, slack, &lo);
        const bool over = __builtin_add_overflow(center, slack, &hi);
        lo &= uint64_t{under} - 1;                                              // max(center − slack, 0)
        const uint64_t hi32 = ((hi >> 32) + ((hi & 0xffffffffu) != 0)) | (uint64_t{over} << 33);  // ceil(hi/2^32)
        const uint64_t y = (w32 - (lo >> 32)) >> 63;                            // w32 < floor(lo/2^32)
        const uint64_t n = 1 - ((w32 - hi32) >> 63);                            // w32 >= hi32
        yes = static_cast<unsigned>(y);
        undecided = static_cast<unsigned>(1 - y - n);
    }

    // The comparison after a first word w32 the coarse step left open (or without a coarse step):
    // w32 against the 64-bit bounds, then R's next 32 bits from `bits` against them (neither with
    // no bounds, map()'s wide grid), then exactly
    // with c = (A + e (W − A)) / (W (1 + e)), e = e^{−γ}, u = A/W (the same c: 1/2 + κ(u − 1/2)
    // with κ = (1 − e)/(1 + e)).
    template <class Bits>
    [[gnu::noinline]] bool direct_refine(Bits& bits, uint64_t w32, double v) const {  // v clipped
        uint64_t center, E;
        const bool bounded = direct_bounds(v, center, E);
        unsigned yes, undecided;
        direct_first(w32, center, E, yes, undecided);  // the same top word against 64-bit bounds
        if (!undecided) return yes != 0;
        const uint64_t w = (w32 << 32) | bits.bits(32);
        if (bounded) {
            const u128 lo = center > E ? center - E : 0, hi = static_cast<u128>(center) + E;
            if (static_cast<u128>(w) + 1 <= lo) return true;  // R < (w + 1)/2^64 <= c
            if (static_cast<u128>(w) >= hi) return false;      // R >= w/2^64 >= c
        }
        exact::BigUint A, W;
        grid.exact_fraction(v, A, W);
        return duchi_exact(bits, w, A, W);
    }

    // ---------------------------------------------------------------- hybrid's choice
    // true (report with Duchi) with probability e^{−γ/2}; false (Piecewise) with 1 − e^{−γ/2}.
    template <class Bits>
    bool hybrid_uses_duchi(Bits& bits) const {
        if (!hybrid_mixes) return true;
        return decide64(bits, keep_duchi.lo, keep_duchi.hi, [this](Bits& b, uint64_t w) {
            std::vector<uint64_t> words{w};
            return exact::lazy_less(b, words, [this](int L) { return exp_minus(gamma_num, half_den, L); });
        });
    }

    // ---------------------------------------------------------------- Piecewise on the grid
    // The report z in [−Z, Z] (value z / 2^G in [−C~, C~]). In fine units (2^-(K+1) of z) the
    // window is [left, left + Q 2^(K+1)) and the range [−Z 2^(K+1), Z 2^(K+1)); unit cells of z
    // are 2^(K+1) fine units. A uniform fine position F over the chosen region (inside: the window;
    // outside: the rest, whose two pieces are separated by a whole number of cells) is drawn as
    // F = hi 2^(K+1) + lo, hi uniform below the region's cell count, and of lo only what decides
    // the cell (a carry across a cell edge, or which side of the window edge). Given the cell,
    // the position is uniform over the cell's covered fine range [r0, r1), so rounding up has
    // probability E[(2 rem + 1)/2^(K+2)] = (r0 + r1)/2^(K+2): one fair bit for a fully covered
    // cell, an exact dyadic coin for the (at most four) partially covered ones.
    template <class Bits>
    int64_t piecewise(Bits& bits, int64_t m) const {
        constexpr unsigned fine = K + 1;
        constexpr i128 cell = i128{1} << fine;
        const i128 P = static_cast<i128>(Z) + (i128{1} << G), Q = static_cast<i128>(Z) - (i128{1} << G);
        const i128 left = P * m - Q * (i128{1} << K);  // window start, fine units
        const i128 right = left + Q * cell;             // window end
        const i128 low_end = -static_cast<i128>(Z) * cell, high_end = -low_end;
        const i128 left_cell = left >> fine;                       // floor
        const uint64_t left_lo = static_cast<uint64_t>(left - left_cell * cell);  // in [0, 2^(K+1))
        // inside with probability (Z + 2^G)/(2Z), exactly (16 random bits at a time)
        const bool inside = exact::bernoulli_rational<Bits, uint64_t>(bits, static_cast<uint64_t>(P), 2 * Z);
        i128 c;  // the cell (z0 = floor of the fine position / 2^(K+1))
        if (inside) {
            // X = left + hi 2^(K+1) + lo: cell left_cell + hi, plus 1 when left_lo + lo >= 2^(K+1)
            const i128 hi = static_cast<i128>(exact::uniform_below(bits, static_cast<uint64_t>(Q)));
            const bool carry = left_lo && exact::bernoulli_rational<Bits, uint64_t>(bits, left_lo, uint64_t{1} << fine);
            c = left_cell + hi + (carry ? 1 : 0);
        } else {
            // F in [0, P 2^(K+1)): X = low_end + F below the window (F < before), else
            // X = low_end + F + Q 2^(K+1) (the window skipped: a whole number of cells)
            const i128 hi = static_cast<i128>(exact::uniform_below(bits, static_cast<uint64_t>(P)));
            const i128 before = left - low_end;
            const i128 before_cell = before >> fine;
            const uint64_t before_lo = static_cast<uint64_t>(before - before_cell * cell);
            bool after;
            if (hi != before_cell) {
                after = hi > before_cell;
            } else {  // F < before iff lo < before_lo: probability before_lo / 2^(K+1)
                after = !(before_lo && exact::bernoulli_rational<Bits, uint64_t>(bits, before_lo, uint64_t{1} << fine));
            }
            c = hi - static_cast<i128>(Z) + (after ? Q : 0);
        }
        // the covered fine range [r0, r1) of cell c within the chosen region
        const i128 c0 = c * cell, c1 = c0 + cell;
        i128 r0 = 0, r1 = cell;
        if (inside) {
            if (left > c0) r0 = left - c0;
            if (right < c1) r1 = right - c0;
        } else {
            if (c0 < left && left < c1) r1 = left - c0;      // the piece below the window ends here
            if (c0 < right && right < c1) r0 = right - c0;   // the piece above it starts here
            if (low_end > c0) r0 = low_end - c0;
            if (high_end < c1) r1 = high_end - c0;
        }
        bool up;
        if (r0 == 0 && r1 == cell) {
            up = bits.bit();
        } else {
            up = bits.bits(fine + 1) < static_cast<uint64_t>(r0 + r1);  // P = (r0 + r1)/2^(K+2)
        }
        return static_cast<int64_t>(c) + (up ? 1 : 0);
    }
};

// ---------------------------------------------------------------- the client loop
// values: n k doubles (row-major, finite: checked by the caller); k >= 1. Outputs (each may be
// null when the method does not use it): coords (n, when k > 1), bits (ceil(n/8) packed:
// Duchi's bit; hybrid: the report's kind, 1 = Duchi), ints (n: Piecewise's z; hybrid: z, or
// Duchi's bit). Chunk c reads secret stream c: the output does not depend on `threads`.
template <int M, bool Multi, class Bits>
[[gnu::flatten]] void mean_chunk_of(const MeanMechanism& mm, Bits& bits, const double* values, uint64_t k,
                                    int64_t* coords, uint8_t* packed, int64_t* ints, size_t begin, size_t end) {
    Bits local = bits;  // in registers; the rare steps run on `bits` (BitReader::lend)
    for (size_t i = begin; i < end; i += 8) {
        const size_t stop = std::min<size_t>(end - i, 8);
        unsigned byte = 0;
        for (size_t b = 0; b < stop; ++b) {
            const size_t u = i + b;
            uint64_t j = 0;
            if constexpr (Multi) {
                j = exact::uniform_below(local, k);
                coords[u] = static_cast<int64_t>(j);
            }
            const int64_t m = mm.grid.map_fast(local, bits, values[u * k + j]);
            if constexpr (M == MeanMechanism::kDuchi) {
                byte |= (mm.duchi_bit_fast(local, bits, m) ? 1u : 0u) << b;
            } else if constexpr (M == MeanMechanism::kPiecewise) {
                ints[u] = mm.piecewise(local, m);
            } else {
                if (mm.hybrid_uses_duchi_fast(local, bits)) {
                    byte |= 1u << b;
                    ints[u] = mm.duchi_bit_fast(local, bits, m) ? 1 : 0;
                } else {
                    ints[u] = mm.piecewise(local, m);
                }
            }
        }
        if constexpr (M != MeanMechanism::kPiecewise) packed[i / 8] = static_cast<uint8_t>(byte);
    }
    bits = local;
}

// The direct Duchi loop (layout 2), block by block: for each block of up to kDirectBlock values
// of the chunk, (k > 1) every value's coordinate (uniform_below(k), in order), then one 64-bit
// word per two values (value 2i the low half, 2i + 1 the high half: R's first 32 bits), then, in
// order, the further bits of the values the first word left undecided (direct_refine, through the
// bit reader: first any bits it holds from before the block's words, e.g. the last coordinate's
// word, then the words after the block's). Where the
// grid has its coarse step, the first word is compared with the coarse bounds (an AVX-512 kernel
// eight values at a time where the CPU has one, the same integers as the portable loop);
// otherwise every value goes through direct_refine.
inline constexpr size_t kDirectBlock = 2048;  // a multiple of 8: whole packed bytes per block

// The coarse step over values x[0, n) (clipped inside) with top words w32 (word j's low half for
// value 2j, high half for 2j + 1): packed "yes" bits into out[0, ceil(n/8)), the indices of
// undecided values appended to pending; returns their count.
inline size_t duchi_coarse_portable(const MeanMechanism& mm, const double* x, const uint64_t* words, size_t n,
                                    uint8_t* out, uint32_t* pending) {
    const InputGrid& g = mm.grid;
    const int64_t E = MeanMechanism::kCoarseSlack;
    size_t np = 0;
    for (size_t i = 0; i < n; i += 8) {
        const size_t stop = std::min<size_t>(n - i, 8);
        unsigned byte = 0;
        for (size_t b = 0; b < stop; ++b) {
            const size_t j = i + b;
            const int64_t C = mm.coarse_c(g.coarse_u32(mm.clip(x[j])));
            const int64_t w32 = static_cast<int64_t>((words[j / 2] >> (32 * (j & 1))) & 0xffffffffu);
            const unsigned yes = w32 < C - E, no = w32 >= C + E;
            byte |= yes << b;
            pending[np] = static_cast<uint32_t>(j);
            np += 1u - yes - no;
        }
        out[i / 8] = static_cast<uint8_t>(byte);
    }
    return np;
}

#ifdef DPNOISE_X86_SIMD
#define DPNOISE_MEAN_AVX512_DIRECT "avx512f,avx512dq,avx512vl"
__attribute__((target(DPNOISE_MEAN_AVX512_DIRECT))) inline size_t duchi_coarse_avx512(
    const MeanMechanism& mm, const double* x, const uint64_t* words, size_t n, uint8_t* out, uint32_t* pending) {
    const InputGrid& g = mm.grid;
    const __m512d low = _mm512_set1_pd(g.low), high = _mm512_set1_pd(g.high), scale = _mm512_set1_pd(g.coarse_scale());
    const __m512i lo_f = _mm512_set1_epi64(g.coarse_low()), w = _mm512_set1_epi64(g.coarse_width());
    const __m512i zero = _mm512_setzero_si512(), u32max = _mm512_set1_epi64(0xffffffffLL);
    const __m512i r31 = _mm512_set1_epi64(static_cast<long long>(g.coarse_reciprocal()));
    const __m512i k32 = _mm512_set1_epi64(static_cast<long long>(mm.kappa32));
    const __m512i c0 = _mm512_set1_epi64(static_cast<long long>(mm.coarse_c0));
    const __m512i slack = _mm512_set1_epi64(MeanMechanism::kCoarseSlack);
    const __m128i norm = _mm_cvtsi32_si128(static_cast<int>(g.coarse_norm()));
    const __mmask8 all = 0xff;
    size_t np = 0, i = 0;
    for (; i + 8 <= n; i += 8) {
        // 64 lines ahead (an address as an integer: near the end it lies past the array)
        _mm_prefetch(reinterpret_cast<const char*>(reinterpret_cast<uintptr_t>(x + i) + 4096), _MM_HINT_T0);
        // the maskz forms with every lane selected: the plain intrinsics pass GCC 12 an undefined
        // vector that -Wmaybe-uninitialized reports (the same instructions)
        __m512d v = _mm512_loadu_pd(x + i);
        v = _mm512_maskz_min_pd(all, _mm512_maskz_max_pd(all, v, low), high);  // clip (finite: no NaN)
        const __m512i xc = _mm512_maskz_cvttpd_epi64(all, _mm512_mul_pd(v, scale));
        __m512i a = _mm512_maskz_max_epi64(all, _mm512_sub_epi64(xc, lo_f), zero);
        a = _mm512_maskz_min_epi64(all, a, w);
        const __m512i a32 = _mm512_maskz_srli_epi64(all, _mm512_maskz_sll_epi64(all, a, norm), 32);
        const __m512i P = _mm512_maskz_mul_epu32(all, a32, r31);
        const __m512i U = _mm512_maskz_min_epu64(all, _mm512_maskz_srli_epi64(all, P, 31), u32max);
        const __m512i C = _mm512_add_epi64(c0, _mm512_maskz_srli_epi64(all, _mm512_maskz_mul_epu32(all, k32, U), 32));
        const __m512i w32 =
            _mm512_maskz_cvtepu32_epi64(all, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(words + i / 2)));
        const __mmask8 yes = _mm512_cmplt_epi64_mask(w32, _mm512_sub_epi64(C, slack));
        const __mmask8 no = _mm512_cmpge_epi64_mask(w32, _mm512_add_epi64(C, slack));
        out[i / 8] = static_cast<uint8_t>(yes);
        unsigned open = static_cast<unsigned>(static_cast<uint8_t>(~(yes | no)));
        while (__builtin_expect(open != 0, 0)) {  // rare: about 2^-25 of values
            pending[np++] = static_cast<uint32_t>(i + static_cast<size_t>(__builtin_ctz(open)));
            open &= open - 1;
        }
    }
    if (i < n) {  // the last n % 8 values (i is a multiple of 8: word i/2's low half is value i)
        const size_t before = np;
        np += duchi_coarse_portable(mm, x + i, words + i / 2, n - i, out + i / 8, pending + np);
        for (size_t p = before; p < np; ++p) pending[p] += static_cast<uint32_t>(i);
    }
    return np;
}
#endif  // DPNOISE_X86_SIMD

// 1: the AVX-512 coarse kernel, 0: the portable loop (chosen once; a test hook may switch it
// while other threads read it, hence atomic).
inline std::atomic<int>& duchi_coarse_level() {
#ifdef DPNOISE_X86_SIMD
    static std::atomic<int> level{__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                                          __builtin_cpu_supports("avx512vl")
                                      ? 1
                                      : 0};
#else
    static std::atomic<int> level{0};
#endif
    return level;
}

inline size_t duchi_coarse(const MeanMechanism& mm, const double* x, const uint64_t* words, size_t n, uint8_t* out,
                           uint32_t* pending) {
#ifdef DPNOISE_X86_SIMD
    if (duchi_coarse_level().load(std::memory_order_relaxed) == 1)
        return duchi_coarse_avx512(mm, x, words, n, out, pending);
#endif
    return duchi_coarse_portable(mm, x, words, n, out, pending);
}

template <bool Multi, class Bits>
[[gnu::flatten]] void duchi_direct_chunk(const MeanMechanism& mm, Bits& bits, const double* values, uint64_t k,
                                         int64_t* coords, uint8_t* packed, size_t begin, size_t end) {
    alignas(64) uint64_t words[kDirectBlock / 2];
    alignas(64) double gathered[Multi ? kDirectBlock : 1];
    uint32_t pending[kDirectBlock];
    const bool coarse = mm.grid.coarse_enabled();
    Bits local = bits;  // in registers; the rare refinements run on `bits` (BitReader::lend)
    for (size_t b0 = begin; b0 < end; b0 += kDirectBlock) {
        const size_t nb = std::min(kDirectBlock, end - b0);
        const double* x = values + b0;
        if constexpr (Multi) {
            for (size_t i = 0; i < nb; ++i) {
                const uint64_t j = exact::uniform_below(local, k);
                coords[b0 + i] = static_cast<int64_t>(j);
                gathered[i] = values[(b0 + i) * k + j];
            }
            x = gathered;
        }
        for (size_t i = 0; i < (nb + 1) / 2; ++i) words[i] = local.word();
        uint8_t* out = packed + b0 / 8;  // b0 is a multiple of 8
        size_t np;
        if (coarse) {
            np = duchi_coarse(mm, x, words, nb, out, pending);
        } else {  // no coarse step for these bounds: every value through direct_refine
            for (size_t i = 0; i < nb; ++i) pending[i] = static_cast<uint32_t>(i);
            std::memset(out, 0, (nb + 7) / 8);
            np = nb;
        }
        for (size_t p = 0; p < np; ++p) {  // in order; R's further bits from the reader (see above)
            const size_t i = pending[p];
            const uint64_t w32 = (words[i / 2] >> (32 * (i & 1))) & 0xffffffffu;
            const double xi = mm.clip(x[i]);
            if (local.lend(bits, [&](Bits& bb) { return mm.direct_refine(bb, w32, xi); }))
                out[i / 8] = static_cast<uint8_t>(out[i / 8] | (1u << (i % 8)));
        }
    }
    bits = local;
}

// The client loop as it was before the fast grid (grid.map, duchi_bit, hybrid_uses_duchi on the
// shared reader): the reference the tests compare mean_chunk's reports with, bit for bit.
template <class Bits>
void mean_chunk_reference(const MeanMechanism& mm, Bits& bits, const double* values, uint64_t k, int64_t* coords,
                          uint8_t* packed, int64_t* ints, size_t begin, size_t end) {
    for (size_t i = begin; i < end; i += 8) {
        const size_t stop = std::min<size_t>(end - i, 8);
        unsigned byte = 0;
        for (size_t b = 0; b < stop; ++b) {
            const size_t u = i + b;
            uint64_t j = 0;
            if (k > 1) {
                j = exact::uniform_below(bits, k);
                coords[u] = static_cast<int64_t>(j);
            }
            const int64_t m = mm.grid.map(bits, values[u * k + j]);
            if (mm.method == MeanMechanism::kDuchi) {
                byte |= (mm.duchi_bit(bits, m) ? 1u : 0u) << b;
            } else if (mm.method == MeanMechanism::kPiecewise) {
                ints[u] = mm.piecewise(bits, m);
            } else if (mm.hybrid_uses_duchi(bits)) {
                byte |= 1u << b;
                ints[u] = mm.duchi_bit(bits, m) ? 1 : 0;
            } else {
                ints[u] = mm.piecewise(bits, m);
            }
        }
        if (mm.method != MeanMechanism::kPiecewise) packed[i / 8] = static_cast<uint8_t>(byte);
    }
}

// How a client loop reads its stream. Piecewise and hybrid reports are the same in every
// layout; the Duchi bit is drawn from the grid index (1: 0.3 to 0.10, and the memoised answers of
// daily collection forever, so that an upgraded device sends the same permanent answers) or
// directly from the value (2: fresh reports from 0.11.0), with the same law.
enum class MeanLayout : int { kGridFirst = 1, kDirect = 2, kReference = 0 };

template <class Bits>
void mean_chunk(const MeanMechanism& mm, Bits& bits, const double* values, uint64_t k, int64_t* coords,
                uint8_t* packed, int64_t* ints, size_t begin, size_t end, MeanLayout layout) {
    const bool multi = k > 1;
    switch (mm.method) {
        case MeanMechanism::kDuchi:
            if (layout == MeanLayout::kDirect)
                return multi ? duchi_direct_chunk<true>(mm, bits, values, k, coords, packed, begin, end)
                             : duchi_direct_chunk<false>(mm, bits, values, k, coords, packed, begin, end);
            return multi ? mean_chunk_of<MeanMechanism::kDuchi, true>(mm, bits, values, k, coords, packed, ints, begin, end)
                         : mean_chunk_of<MeanMechanism::kDuchi, false>(mm, bits, values, k, coords, packed, ints, begin, end);
        case MeanMechanism::kPiecewise:
            return multi ? mean_chunk_of<MeanMechanism::kPiecewise, true>(mm, bits, values, k, coords, packed, ints, begin, end)
                         : mean_chunk_of<MeanMechanism::kPiecewise, false>(mm, bits, values, k, coords, packed, ints, begin, end);
        case MeanMechanism::kHybrid:
            return multi ? mean_chunk_of<MeanMechanism::kHybrid, true>(mm, bits, values, k, coords, packed, ints, begin, end)
                         : mean_chunk_of<MeanMechanism::kHybrid, false>(mm, bits, values, k, coords, packed, ints, begin, end);
    }
}

inline void check_finite(const double* values, size_t count) {
    // an all-ones exponent (NaN, ±inf) is the one that carries into bit 63 when 2^52 is added to
    // the exponent field: and, add, or on the bits, which the compiler vectorises
    constexpr uint64_t kExponent = uint64_t{0x7ff} << 52, kCarry = uint64_t{1} << 52;
    uint64_t bad = 0;
    for (size_t i = 0; i < count; ++i) {
        uint64_t b;
        std::memcpy(&b, values + i, sizeof b);
        bad |= (b & kExponent) + kCarry;
    }
    if (bad >> 63) throw std::invalid_argument("values must be finite: NaN and infinity are refused");
}

template <class Family>
void mean_privatize(Family& family, const MeanMechanism& mm, const double* values, size_t n, uint64_t k,
                    int64_t* coords, uint8_t* packed, int64_t* ints, unsigned threads, MeanLayout layout) {
    check_finite(values, n * k);  // before any randomness
    random::for_each_chunk<MeanMechanism::kReportsPerStream>(
        family, n, threads, [&mm, values, k, coords, packed, ints, layout](auto& bits, size_t begin, size_t end) {
            if (layout == MeanLayout::kReference)
                mean_chunk_reference(mm, bits, values, k, coords, packed, ints, begin, end);
            else
                mean_chunk(mm, bits, values, k, coords, packed, ints, begin, end, layout);
        });
}

// ---------------------------------------------------------------- the server
// A batch's exact sums (MeanScratch) and the kernels that add them in 64-bit lanes live in
// mean_server_lanes.hpp, included here at namespace scope (it includes only what it needs).
}  // namespace dpnoise::ldp
#include "dpnoise/ldp/mean_server_lanes.hpp"
namespace dpnoise::ldp {

// Per coordinate: users, duchi_users, duchi_ones (int64), pm_sum (128-bit two's complement, 2
// uint64 limbs little-endian), pm_sum_squares (192-bit, 3 limbs). A batch is checked whole and
// summed into scratch first; the state changes only when the batch is valid.
struct MeanState {
    int64_t* users;
    int64_t* duchi_users;
    int64_t* duchi_ones;
    uint64_t* pm_sum;          // k x 2
    uint64_t* pm_sum_squares;  // k x 3
    uint64_t k;
};

inline void add_limbs(uint64_t* dst, const uint64_t* src, int limbs) {
    unsigned carry = 0;
    for (int i = 0; i < limbs; ++i) {
        const u128 t = static_cast<u128>(dst[i]) + src[i] + carry;
        dst[i] = static_cast<uint64_t>(t);
        carry = static_cast<unsigned>(t >> 64);
    }
}

inline void commit(const MeanState& st, uint64_t j, const MeanScratch& s) {
    st.users[j] += s.users;
    st.duchi_users[j] += s.duchi_users;
    st.duchi_ones[j] += s.duchi_ones;
    const uint64_t sum[2] = {static_cast<uint64_t>(s.sum), static_cast<uint64_t>(s.sum >> 64)};
    add_limbs(st.pm_sum + 2 * j, sum, 2);
    const uint64_t sq[3] = {static_cast<uint64_t>(s.sq_lo), static_cast<uint64_t>(s.sq_lo >> 64), s.sq_hi};
    add_limbs(st.pm_sum_squares + 3 * j, sq, 3);
}

// One pass over a batch into per-coordinate scratch sums, specialised by method and by whether
// there are coordinates; `ok` collects every check (the caller commits only when it holds).
template <int M, bool Multi>
inline void mean_sum(MeanScratch* scratch, uint64_t k, int64_t Z, const int64_t* coords, const uint8_t* packed,
                     const int64_t* ints, size_t n, bool& coords_ok, bool& values_ok) {
    bool cok = true, vok = true;
    if constexpr (M == MeanMechanism::kDuchi && !Multi) {
        int64_t ones = 0;
        const size_t bytes = (n + 7) / 8;
        size_t i = 0;
        for (; i + 8 <= bytes; i += 8) {
            uint64_t w;
            std::memcpy(&w, packed + i, 8);
            ones += __builtin_popcountll(w);
        }
        for (; i < bytes; ++i) ones += __builtin_popcount(packed[i]);
        scratch[0].users += static_cast<int64_t>(n);
        scratch[0].duchi_users += static_cast<int64_t>(n);
        scratch[0].duchi_ones += ones;
        return;
    } else {
        if constexpr (!Multi && M != MeanMechanism::kDuchi) {
            if (static_cast<uint64_t>(Z) <= kLaneMaxZ) {
                MeanScratch local;
                values_ok = lane_batch_dispatch(ints, M == MeanMechanism::kHybrid ? packed : nullptr, n,
                                                static_cast<uint64_t>(Z), local);
                scratch[0] = local;
                return;
            }
        }
        MeanScratch local;
        for (size_t i = 0; i < n; ++i) {
            MeanScratch* s = &local;
            if constexpr (Multi) {
                const int64_t c = coords[i];
                const bool in = c >= 0 && static_cast<uint64_t>(c) < k;
                cok &= in;
                s = scratch + (in ? c : 0);
            }
            ++s->users;
            const unsigned bit = M != MeanMechanism::kPiecewise ? (packed[i / 8] >> (i % 8)) & 1u : 0u;
            if (M == MeanMechanism::kDuchi) {
                ++s->duchi_users;
                s->duchi_ones += bit;
            } else if (M == MeanMechanism::kHybrid) {  // branch-free: the kind is a coin flip
                const int64_t v = ints[i];
                const int64_t duchi = bit;
                const bool z_in = v >= -Z && v <= Z;
                vok &= duchi ? (v & ~int64_t{1}) == 0 : z_in;
                s->duchi_users += duchi;
                s->duchi_ones += duchi & v;
                s->add_z((duchi || !z_in) ? 0 : v);
            } else {
                const int64_t z = ints[i];
                const bool in = z >= -Z && z <= Z;
                vok &= in;
                s->add_z(in ? z : 0);
            }
        }
        if constexpr (!Multi) {
            scratch[0] = local;
        }
    }
    coords_ok = cok;
    values_ok = vok;
}

// coords: n int64 in [0, k) or null (k = 1); packed: ceil(n/8) bytes or null; ints: n or null.
inline void mean_accumulate(const MeanState& st, MeanMechanism::Method method, int64_t Z, const int64_t* coords,
                            const uint8_t* packed, const int64_t* ints, size_t n) {
    const uint64_t k = st.k;
    if (k > 1 && !coords) throw std::invalid_argument("mean reports: 'coordinates' missing");
    if (method != MeanMechanism::kPiecewise && !packed) throw std::invalid_argument("mean reports: bits missing");
    if (method != MeanMechanism::kDuchi && !ints) throw std::invalid_argument("mean reports: 'values' missing");
    if (packed && n % 8 && (packed[n / 8] >> (n % 8)) != 0)
        throw std::invalid_argument("mean reports: padding bits after the last report must be 0");
    std::vector<MeanScratch> scratch(k);
    bool coords_ok = true, values_ok = true;
    auto run = [&](auto m_tag) {
        constexpr int M = decltype(m_tag)::value;
        if (k > 1)
            mean_sum<M, true>(scratch.data(), k, Z, coords, packed, ints, n, coords_ok, values_ok);
        else
            mean_sum<M, false>(scratch.data(), k, Z, coords, packed, ints, n, coords_ok, values_ok);
    };
    switch (method) {
        case MeanMechanism::kDuchi: run(std::integral_constant<int, MeanMechanism::kDuchi>{}); break;
        case MeanMechanism::kPiecewise: run(std::integral_constant<int, MeanMechanism::kPiecewise>{}); break;
        case MeanMechanism::kHybrid: run(std::integral_constant<int, MeanMechanism::kHybrid>{}); break;
    }
    if (!coords_ok) throw std::invalid_argument("mean reports: 'coordinates' must be in [0, dimensions)");
    if (!values_ok) throw std::invalid_argument("mean reports: 'values' out of the report range");
    for (uint64_t j = 0; j < k; ++j) commit(st, j, scratch[j]);
}

}  // namespace dpnoise::ldp
