// dpnoise/exact/fixed_enclosure.hpp -- 256-bit fixed-point enclosures [lo, hi] of constants
// (scaled by 2^192), multiplied with outward rounding: the fast arithmetic the table builders
// use to certify thousands of thresholds.
#pragma once
#include <cstdint>
#include <stdexcept>

#include "dpnoise/exact/certified_exp.hpp"
#include "dpnoise/exact/wide_uint.hpp"

namespace dpnoise::exact {

// Values scaled by 2^192 (one integer limb, three fraction limbs), for fast table building.
using Fx = FixedUint<4>;

inline Fx fx_from(const BigUint& b) {
    if (b.limb.size() > 4) throw std::overflow_error("table constant beyond 2^64");
    Fx r;
    for (size_t i = 0; i < b.limb.size(); ++i) r.limb[i] = b.limb[i];
    return r;
}

// floor or ceil of a * b / 2^192
inline Fx fx_mul(const Fx& a, const Fx& b, bool round_up) {
    uint64_t p[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int i = 0; i < 4; ++i) {
        uint64_t carry = 0;
        for (int j = 0; j < 4; ++j) {
            const u128 t = static_cast<u128>(a.limb[i]) * b.limb[j] + p[i + j] + carry;
            p[i + j] = static_cast<uint64_t>(t);
            carry = static_cast<uint64_t>(t >> 64);
        }
        p[i + 4] = carry;
    }
    if (p[7] != 0) throw std::overflow_error("table constant product beyond 2^64");
    Fx r;
    r.limb[0] = p[3]; r.limb[1] = p[4]; r.limb[2] = p[5]; r.limb[3] = p[6];
    if (round_up && (p[0] | p[1] | p[2])) {
        for (int i = 0; i < 4 && ++r.limb[i] == 0; ++i) {}
    }
    return r;
}

struct FxInterval {
    Fx lo, hi;
};

inline BigUint fx_to_big(const Fx& x) {
    BigUint b;
    b.limb.assign(x.limb, x.limb + 4);
    b.trim();
    return b;
}

inline FxInterval fx_interval(const Enclosure& e) { return {fx_from(e.lo), fx_from(e.hi)}; }
inline FxInterval fx_mul(const FxInterval& a, const FxInterval& b) { return {fx_mul(a.lo, b.lo, false), fx_mul(a.hi, b.hi, true)}; }

}  // namespace dpnoise::exact
