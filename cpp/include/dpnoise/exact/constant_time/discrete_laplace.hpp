// dpnoise/exact/constant_time/discrete_laplace.hpp -- the discrete Laplace law with rational
// scale t = num/den (P[Y = y] = (1-q)/(1+q) q^{|y|}, q = e^{-1/t}) in constant time.
//
// Algorithm (proof in docs/security.md, "Constant-time discrete Laplace"):
//   |Y| = N (1 + G), sign uniform, where
//     N ~ Bernoulli(2q / (1 + q))          (P[|Y| >= 1] = 2q/(1+q))
//     G ~ geometric, P[G = g] = (1-q) q^g  (given |Y| >= 1, |Y| - 1 is geometric)
//   and G's binary digits are independent: P[G = g] is proportional to prod_i (q^{2^i})^{g_i},
//   so digit i is Bernoulli(q^{2^i} / (1 + q^{2^i})). Digits 0..m-1 are drawn, with m the least
//   integer such that 2^m / t >= 46, so that P[G >= 2^m] = q^{2^m} <= e^{-46} < 2^-66; the law
//   drawn is G conditioned on G < 2^m (the digits are independent, so truncating them is exactly
//   that conditioning), at total-variation distance P[G >= 2^m] from G.
// Every Bernoulli is "128-bit uniform < T" with a certified 128-bit threshold T, compared
// branch-free (ct_ops.hpp); the number of random bits, operations and memory accesses depends
// on (num, den) only. Supported: 0 <= t <= 2^20 (kMaxScale); t = 0 gives 0.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>

#include "dpnoise/exact/certified_exp.hpp"
#include "dpnoise/exact/constant_time/certified_thresholds.hpp"
#include "dpnoise/exact/constant_time/ct_ops.hpp"

namespace dpnoise::exact::ct {

inline constexpr uint64_t kMaxScaleLog2 = 20;

struct DiscreteLaplaceTable {
    static constexpr unsigned kMaxDigits = 40;
    uint64_t num = 0, den = 1;
    unsigned digits = 0;            // m
    Threshold128 nonzero;           // 2q / (1 + q)
    Threshold128 digit[kMaxDigits]; // q^{2^i} / (1 + q^{2^i})
    u128 max_width = 0;             // the largest certified threshold width (units of 2^-128)
    uint64_t max_abs = 0;           // |Y| <= 2^m < 92 scale + 2 <= 2^27 (every output)

    DiscreteLaplaceTable() = default;
    DiscreteLaplaceTable(uint64_t num_, uint64_t den_) : num(num_), den(den_) {
        check_range(num, den);
        if (num == 0) return;
        // m: the least m with den 2^m >= 46 num (then q^{2^m} = e^{-den 2^m / num} <= e^{-46})
        while ((static_cast<u128>(den) << digits) < static_cast<u128>(46) * num) ++digits;
        max_abs = uint64_t{1} << digits;
        for (int L = 3; L <= 8; ++L) {
            if (build(L)) return;
        }
        throw std::logic_error("constant-time discrete Laplace: thresholds did not converge");
    }

    static void check_range(uint64_t num, uint64_t den) {
        if (den == 0) throw std::invalid_argument("scale: denominator must be positive");
        if (static_cast<u128>(num) > (static_cast<u128>(den) << kMaxScaleLog2))
            throw std::invalid_argument(
                "constant_time=True supports scale in [0, 2^20] (1048576); got scale " + std::to_string(num) + "/" +
                std::to_string(den) + " above it (no variable-time fallback)");
    }

private:
    bool build(int L) {
        const BigUint S = scale_one(L);
        const BigUint N(static_cast<u128>(den)), D(static_cast<u128>(num));
        max_width = 0;
        // q in [ql, qh]; 2q/(1+q) increases with q
        const Enclosure q = exp_rational(N, D, true, L);
        const CertifiedThreshold nz = certify(shift_left(q.lo, 1), add(S, q.lo), shift_left(q.hi, 1), add(S, q.hi));
        nonzero = split(nz.value);
        max_width = nz.width;
        for (unsigned i = 0; i < digits; ++i) {
            const Enclosure x = exp_rational(shift_left(N, i), D, true, L);  // q^{2^i}
            const CertifiedThreshold t = certify(x.lo, add(S, x.lo), x.hi, add(S, x.hi));
            digit[i] = split(t.value);
            if (t.width > max_width) max_width = t.width;
        }
        return max_width <= kMaxWidth;
    }
};

// One constant-time draw: 2 (m + 1) random words and one bit, m + 1 branch-free comparisons.
template <class Bits>
inline int64_t discrete_laplace(Bits& bits, const DiscreteLaplaceTable& t) {
    uint64_t uh = bits.word(), ul = bits.word();
    const uint64_t nonzero = below(uh, ul, t.nonzero);
    uint64_t g = 0;
    for (unsigned i = 0; i < t.digits; ++i) {  // t.digits is public (a function of the scale)
        uh = bits.word();
        ul = bits.word();
        g |= below(uh, ul, t.digit[i]) << i;
    }
    const uint64_t magnitude = (g + 1) & mask_of(nonzero);
    return conditional_negate(magnitude, static_cast<uint64_t>(bits.bit()));
}

}  // namespace dpnoise::exact::ct
