// dpnoise/ldp/geometric_skip.hpp -- exact gaps between the set bits of a sequence of
// independent Bernoulli(p) bits, p = 1/(e^γ + 1), γ = num/den rational.
//
// The gap Y before the next set bit (the failures before a success) has
//   P[Y >= j] = q^j,  q = 1 − p = e^γ/(e^γ + 1) = 1/(1 + e^{−γ}),
// so the bits can be drawn by skipping: Y, a one, Y', a one, ... (the unary encodings' "other"
// bits, Wang, Blocki, Li & Jha 2017, §4.3; Erlingsson, Pihur & Korolova 2014). Y is sampled
// exactly, with no floating point, in the shape of exact/geometric_table.hpp:
//
//   Y = a H + L,  a = 2^k.  P[Y = y] ∝ q^y = (q^a)^H q^L factorises, so H and L are independent:
//   * H by inversion: H = #{h >= 1 : R < q^{a h}} for one uniform real R, settled by R's first
//     bits against certified 32-bit bounds of the thresholds (a guide table on R's leading
//     bits, exact/threshold_inversion.hpp) and, in the rare undecided band, by comparing R with
//     an enclosure of q^{a h} at increasing precision (exact/lazy_comparison.hpp). Only m
//     thresholds are tabulated: H >= m (probability q^{a m} <= e^{−28}) adds m and draws H again,
//     which is exact because the geometric law is memoryless.
//   * L (only when k >= 1): a uniform l in [0, a) accepted with probability q^l = e^{−l λ},
//     λ = ln(1 + e^{−γ}); R's first 32 bits against bounds of e^{−x} for x in a certified
//     interval around l λ (exp_fixed_bounds.hpp), exactly against an enclosure of q^l otherwise.
//
// k = 0 (a single table over q^j) when the scale 1/λ is at most about 146; otherwise the least
// k with ceil(σ/2^k) <= 32, σ = 1 + e^γ >= 1/λ (as ln(1 + E) >= E/(1 + E)), so that H's table
// stays small and L is accepted with probability above e^{−1/15}. The enclosure of q is
// [S²/(S + E_hi), S²/(S + E_lo)] with E an enclosure of e^{−γ} (certified_exp.hpp) at scale S.
//
// sample(bits, limit) returns min(Y, limit): callers skipping over a finite bit string never
// need more, and a huge scale (ε near 100, p below 10^−43) then costs one draw.
#pragma once
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

#include "dpnoise/exact/certified_exp.hpp"
#include "dpnoise/exact/exp_fixed_bounds.hpp"
#include "dpnoise/exact/fixed_enclosure.hpp"
#include "dpnoise/exact/lazy_comparison.hpp"
#include "dpnoise/exact/refinement_policy.hpp"
#include "dpnoise/exact/threshold_inversion.hpp"

namespace dpnoise::ldp {

using exact::BigUint;
using exact::Enclosure;
using exact::u128;

struct GeometricSkip {
    static constexpr uint64_t kDirectMax = 146;   // k = 0 up to this scale
    static constexpr uint64_t kHighMax = 32;      // otherwise H has scale <= 32
    static constexpr unsigned kMaxLowBits = 40;   // a <= 2^40 (beyond any bit string here)
    static constexpr uint64_t kMaxThresholds = 4096;
    // γ above this is lowered to it (toward more privacy): e^{−γ} < 2^−1400, far below any
    // probability a 2^40-bit string can resolve
    static constexpr uint64_t kMaxGamma = 1024;

    BigUint gamma_num, gamma_den;
    unsigned low_bits = 0;        // k
    uint64_t a = 1;               // 2^k
    exact::Thresholds high;       // S_h = q^{a h}, h = 1..m
    uint64_t lambda_lo = 0, lambda_hi = 0;  // 2^64 λ in [lambda_lo, lambda_hi] (k >= 1 only)

    GeometricSkip() = default;
    GeometricSkip(BigUint num, BigUint den) : gamma_num(std::move(num)), gamma_den(std::move(den)) {
        if (gamma_den.is_zero()) throw std::invalid_argument("gamma_den must be positive");
        if (gamma_num.is_zero()) throw std::invalid_argument("gamma must be positive");
        if (exact::compare(gamma_num, exact::mul(gamma_den, BigUint(static_cast<u128>(kMaxGamma)))) > 0) {
            gamma_num = BigUint(static_cast<u128>(kMaxGamma));
            gamma_den = BigUint(1);
        }
        // σ = 1 + e^γ = (S + E)/E, from below-rounded E: an upper bound; sigma_over(a) is
        // ceil(σ / a), saturated at 2^40
        const int L = 3;
        const Enclosure E = e_minus_gamma(L);
        const BigUint S = exact::scale_one(L);
        auto sigma_over = [&](uint64_t div) -> uint64_t {
            const uint64_t cap = uint64_t{1} << 40;
            if (E.lo.is_zero()) return cap;
            const BigUint den = exact::mul(E.lo, BigUint(static_cast<u128>(div)));
            const auto [qt, r] = exact::divmod(exact::add(S, E.lo), den);
            if (qt.limb.size() > 1 || (!qt.is_zero() && qt.limb[0] >= cap)) return cap;
            return (qt.is_zero() ? 0 : qt.limb[0]) + (r.is_zero() ? 0 : 1);
        };
        if (sigma_over(1) > kDirectMax) {
            low_bits = 1;
            while (low_bits < kMaxLowBits && sigma_over(uint64_t{1} << low_bits) > kHighMax) ++low_bits;
        }
        a = uint64_t{1} << low_bits;
        const uint64_t scale = sigma_over(a);
        const uint64_t m = std::min<uint64_t>(28 * scale + 1, kMaxThresholds);
        // thresholds q^{a h}: Q = q^a enclosed at 2^192 (the Fx scale), powers with outward rounding
        const exact::FxInterval Q = exact::fx_interval(q_power(a, L));
        exact::FxInterval qh = Q;
        for (uint64_t h = 1; h <= m; ++h) {
            high.push(exact::bounds32(qh));
            qh = exact::fx_mul(qh, Q);
        }
        high.tail = false;
        high.finish(std::min<uint64_t>(scale, uint64_t{1} << 20));
        if (low_bits > 0) {
            // λ = ln(1 + E) in [E − E²/2, E] (alternating series, E < 1); 2^64 λ from E at 2^192
            bool lost = false;
            BigUint hi = exact::shift_right(E.hi, 128, &lost);
            if (lost) hi = exact::add_small(hi, 1);
            BigUint sq = exact::shift_right(exact::mul(E.hi, E.hi), 192 + 1, &lost);
            if (lost) sq = exact::add_small(sq, 1);
            const BigUint lo = exact::compare(E.lo, sq) > 0 ? exact::shift_right(exact::sub(E.lo, sq), 128) : BigUint();
            if (hi.limb.size() > 1) throw std::logic_error("geometric skip: lambda out of range");
            lambda_hi = hi.is_zero() ? 0 : hi.limb[0];
            lambda_lo = lo.is_zero() ? 0 : lo.limb[0];
        }
    }

    // e^{−γ} at precision L (scale 2^(64L))
    Enclosure e_minus_gamma(int L) const { return exact::exp_rational(gamma_num, gamma_den, true, L); }

    // q = S/(S + E) enclosed at scale S = 2^(64L)
    Enclosure q_enclosure(int L) const {
        const Enclosure E = e_minus_gamma(L);
        const BigUint S = exact::scale_one(L), S2 = exact::mul(S, S);
        const BigUint lo = exact::divmod(S2, exact::add(S, E.hi)).first;
        const auto [hq, hr] = exact::divmod(S2, exact::add(S, E.lo));
        return Enclosure{lo, hr.is_zero() ? hq : exact::add_small(hq, 1)};
    }

    Enclosure q_power(uint64_t j, int L) const { return exact::enclosure_pow(q_enclosure(L), j, L); }

    // R < q^j exactly, R's leading words in `words` (drawn lazily)
    template <class Bits>
    bool less_q_power(Bits& bits, std::vector<uint64_t>& words, uint64_t j) const {
        return exact::lazy_less(bits, words, [this, j](int L) { return q_power(j, L); });
    }

    // min(Y, limit). Policy = exact::ForceRefinement settles every decision by the exact path
    // (tests of that rare path's law).
    template <class Bits, class Policy = exact::NeverForceRefinement>
    uint64_t sample(Bits& bits, uint64_t limit) const {
        uint64_t y = 0;
        const uint64_t m = high.hi_m1.size();
        for (;;) {
            auto exact_h = [this](Bits& b, std::vector<uint64_t>& words, uint64_t h) { return less_q_power(b, words, a * h); };
            const uint64_t h = exact::invert<Bits, decltype(exact_h)&, Policy>(bits, high, exact_h);
            // a h <= 2^40 2^12: no overflow; y stays below limit + 2^52
            y += a * h;
            if (y >= limit) return limit;
            if (h < m) break;  // H >= m: memoryless, draw H again
        }
        if (low_bits == 0) return y;
        const uint64_t l = sample_low<Bits, Policy>(bits);
        return std::min(limit, y + l);
    }

    // H for a guide bucket the guide does not settle (k = 0 callers that inline the guide)
    template <class Bits>
    [[gnu::noinline]] uint64_t scan_bucket(Bits& bits, uint32_t bucket) const {
        auto exact_h = [this](Bits& b, std::vector<uint64_t>& words, uint64_t h) { return less_q_power(b, words, a * h); };
        return exact::invert_scan(bits, high, bucket, exact_h);
    }

    // L: uniform l in [0, 2^k) accepted with probability q^l
    template <class Bits, class Policy = exact::NeverForceRefinement>
    uint64_t sample_low(Bits& bits) const {
        for (;;) {
            const uint64_t l = bits.bits(low_bits);
            if (l == 0) return 0;  // q^0 = 1
            const uint32_t w = static_cast<uint32_t>(bits.bits(32));
            // x = l λ with 2^64 x in [xlo, xhi]; x < 1/15 here (a λ < a/(σ − 1) and σ > 16 a)
            const u128 xlo = static_cast<u128>(l) * lambda_lo, xhi = static_cast<u128>(l) * lambda_hi + 1;
            if (xhi >> 61) throw std::logic_error("geometric skip: acceptance exponent out of range");
            const uint64_t xl = static_cast<uint64_t>(xlo), xh = static_cast<uint64_t>(xhi);
            (void)xl;
            (void)xh;
            if constexpr (!Policy::kForce) {
                // R < 1 − x_hi <= e^{−x}: R < (w + 1)/2^32 <= that
                if ((static_cast<u128>(w) + 1) << 32 <= (static_cast<u128>(1) << 64) - xh) return l;
                const exact::Bounds32 b = exact::exp_small_bounds32(xl, xh);
                if (w < b.lo) return l;
                if (static_cast<uint64_t>(w) >= b.hi) continue;
            }
            std::vector<uint64_t> words{(static_cast<uint64_t>(w) << 32) | bits.bits(32)};
            if (less_q_power_slow(bits, words, l)) return l;
        }
    }

    template <class Bits>
    [[gnu::noinline]] bool less_q_power_slow(Bits& bits, std::vector<uint64_t>& words, uint64_t j) const {
        return less_q_power(bits, words, j);
    }
};

}  // namespace dpnoise::ldp
