// dpnoise/exact/randomized_response.hpp -- k-ary randomized response, sampled exactly.
//
// Report the true category x with probability
//   p = e^γ / (e^γ + k − 1) = 1 / (1 + (k − 1) e^{−γ}),
// otherwise one of the k − 1 other categories uniformly (Warner 1965, binary; Kairouz, Oh &
// Viswanath 2016, "Extremal Mechanisms for Local Differential Privacy", k-ary randomized
// response). Every output j has P(j | x) / P(j | x') <= p / ((1 − p)/(k − 1)) = e^γ, so the
// mechanism is γ-LDP; γ = num/den is a rational (the caller rounds ε down to it).
//
// "keep" is the decision "uniform real R < p" (lazy_comparison.hpp): R's first 32 bits against
// certified 32-bit bounds of p computed once per kernel; in the band the bounds do not decide
// (a few units of 2^-32), R is extended word by word while p = S / (S + (k − 1) E) is evaluated
// with E a certified enclosure of e^{−γ} (certified_exp.hpp) at increasing precision, until the
// comparison is decided. So P[keep] = p exactly, with no floating point. The other category is
// uniform on k − 1 values by rejection (uniform.hpp). Random bits per value: 32 for the
// decision (plus, with probability about 2^-31, a few words more) and fewer than 2·62 expected
// for the other category: bounded independently of k and γ.
#pragma once
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

#include "dpnoise/exact/certified_exp.hpp"
#include "dpnoise/exact/lazy_comparison.hpp"
#include "dpnoise/exact/refinement_policy.hpp"
#include "dpnoise/exact/uniform.hpp"

namespace dpnoise::exact {

struct RandomizedResponseKernel {
    static constexpr uint64_t kMaxCategories = uint64_t{1} << 62;
    // γ above this is lowered to it (rounding toward more privacy): (k − 1) e^{−γ} is then below
    // 2^62 e^{−65536} < 2^-94000, so the keep probability moves by less than that.
    static constexpr uint64_t kMaxGamma = uint64_t{1} << 16;

    uint64_t k = 2;
    BigUint gamma_num, gamma_den;
    Bounds32 keep_bounds;  // certified: keep_bounds.lo <= p 2^32 <= keep_bounds.hi

    RandomizedResponseKernel() = default;
    RandomizedResponseKernel(uint64_t categories, BigUint num, BigUint den)
        : k(categories), gamma_num(std::move(num)), gamma_den(std::move(den)) {
        if (k < 2) throw std::invalid_argument("categories must be at least 2");
        if (k > kMaxCategories) throw std::overflow_error("categories must be at most 2^62");
        if (gamma_den.is_zero()) throw std::invalid_argument("gamma_den must be positive");
        if (compare(gamma_num, mul(gamma_den, BigUint(static_cast<u128>(kMaxGamma)))) > 0) {
            gamma_num = BigUint(static_cast<u128>(kMaxGamma));
            gamma_den = BigUint(1);
        }
        // p 2^32 enclosed by [floor(2^32 num.lo / den.hi), ceil(2^32 num.hi / den.lo)]
        const RatioEnclosure p = keep_probability(2);
        const BigUint lo = divmod(shift_left(p.num.lo, 32), p.den.hi).first;
        const auto [hi_q, hi_r] = divmod(shift_left(p.num.hi, 32), p.den.lo);
        const BigUint hi = hi_r.is_zero() ? hi_q : add_small(hi_q, 1);
        keep_bounds.lo = lo.limb.size() > 1 || (!lo.is_zero() && lo.limb[0] > UINT32_MAX)
                             ? UINT32_MAX
                             : static_cast<uint32_t>(lo.is_zero() ? 0 : lo.limb[0]);
        keep_bounds.hi = hi.limb.size() > 1 ? (uint64_t{1} << 32) : std::min<uint64_t>(hi.is_zero() ? 0 : hi.limb[0], uint64_t{1} << 32);
    }

    // p = S / (S + (k − 1) e^{−γ}) with numerator and denominator enclosed at precision L
    // (scale S = 2^(64L)); γ = 0 is exact (p = 1/k), so that a dyadic p is decided too.
    RatioEnclosure keep_probability(int L) const {
        const BigUint S = scale_one(L);
        const Enclosure e = gamma_num.is_zero() ? Enclosure{S, S} : exp_rational(gamma_num, gamma_den, true, L);
        const BigUint others(static_cast<u128>(k - 1));
        return RatioEnclosure{Enclosure{S, S}, Enclosure{add(S, mul(others, e.lo)), add(S, mul(others, e.hi))}};
    }

    // Bernoulli(p): R's first 32 bits w against the certified bounds, refined exactly between.
    template <class Bits, class Policy = NeverForceRefinement>
    bool keep(Bits& bits) const {
        const uint32_t w = static_cast<uint32_t>(bits.bits(32));
        if (!Policy::kForce) {
            if (w < keep_bounds.lo) return true;                    // R < (w + 1)/2^32 <= p
            if (static_cast<uint64_t>(w) >= keep_bounds.hi) return false;  // R >= w/2^32 >= p
        }
        return keep_refine(bits, w);
    }

    // The rare band: R = 0.w... compared with p exactly (R's first word completed lazily).
    template <class Bits>
    [[gnu::noinline]] bool keep_refine(Bits& bits, uint32_t w) const {
        std::vector<uint64_t> words{(static_cast<uint64_t>(w) << 32) | bits.bits(32)};
        return lazy_less_ratio(bits, words, [this](int L) { return keep_probability(L); });
    }

    // The report for a true category x in [0, k) (the caller checks the range).
    template <class Bits, class Policy = NeverForceRefinement>
    int64_t respond(Bits& bits, int64_t x) const {
        if (keep<Bits, Policy>(bits)) return x;
        const uint64_t u = uniform_below(bits, k - 1);  // uniform on the k − 1 others
        return static_cast<int64_t>(u < static_cast<uint64_t>(x) ? u : u + 1);
    }
};

}  // namespace dpnoise::exact
