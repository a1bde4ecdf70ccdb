// dpnoise/exact/lazy_comparison.hpp -- the one random decision of the table samplers:
// "uniform real R < c", settled by R's leading bits against certified bounds of c and, in the
// rare undecided band, by drawing more words of R while c is evaluated at increasing precision.
#pragma once
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "dpnoise/exact/certified_exp.hpp"
#include "dpnoise/exact/fixed_enclosure.hpp"

namespace dpnoise::exact {

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
    b.lo = v.lo.limb[3] >= 1 ? UINT32_MAX : static_cast<uint32_t>(v.lo.limb[2] >> 32);
    const bool rest = (v.hi.limb[2] & 0xffffffffu) != 0 || v.hi.limb[1] != 0 || v.hi.limb[0] != 0;
    b.hi = (v.hi.limb[3] << 32) + (v.hi.limb[2] >> 32) + (rest ? 1 : 0);
    return b;
}

}  // namespace dpnoise::exact
