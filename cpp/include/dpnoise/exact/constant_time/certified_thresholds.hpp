// dpnoise/exact/constant_time/certified_thresholds.hpp -- the 128-bit fixed-point thresholds of
// the constant-time samplers, computed at table-build time from certified enclosures
// (certified_exp.hpp: integer Taylor series with outward rounding). Every threshold T of a
// probability p comes with a certified bound |p - T / 2^128| <= width / 2^128, which enters the
// samplers' statistical-distance bound (docs/security.md, "Constant-time sampling").
#pragma once
#include <cstdint>
#include <stdexcept>

#include "dpnoise/exact/certified_exp.hpp"
#include "dpnoise/exact/wide_uint.hpp"

namespace dpnoise::exact::ct {

inline u128 to_u128(const BigUint& b) {
    if (b.limb.size() > 2) throw std::overflow_error("constant-time threshold beyond 2^128");
    u128 r = 0;
    if (b.limb.size() > 0) r = b.limb[0];
    if (b.limb.size() > 1) r |= static_cast<u128>(b.limb[1]) << 64;
    return r;
}

// A probability p certified in [lo_num / lo_den, hi_num / hi_den] (all >= 0, dens > 0, p < 1),
// turned into T = floor(2^128 lo_num / lo_den) (a lower bound of p 2^128) and the certified
// width ceil(2^128 hi_num / hi_den) - T; p 2^128 lies in [T, T + width].
struct CertifiedThreshold {
    u128 value = 0;
    u128 width = 0;
};

inline CertifiedThreshold certify(const BigUint& lo_num, const BigUint& lo_den, const BigUint& hi_num,
                                  const BigUint& hi_den) {
    const auto lo = divmod(shift_left(lo_num, 128), lo_den);
    const auto hi = divmod(shift_left(hi_num, 128), hi_den);
    const BigUint up = hi.second.is_zero() ? hi.first : add_small(hi.first, 1);
    const BigUint one128 = shift_left(BigUint(1), 128);
    if (compare(lo.first, one128) >= 0) throw std::logic_error("constant-time threshold: probability >= 1");
    CertifiedThreshold t;
    t.value = to_u128(lo.first);
    // the upper bound may reach 2^128 (p close to 1): cap the width computation there
    const BigUint capped = compare(up, one128) > 0 ? one128 : up;
    if (compare(capped, lo.first) < 0) throw std::logic_error("constant-time threshold: empty enclosure");
    const BigUint w = sub(capped, lo.first);
    t.width = compare(w, one128) >= 0 ? ~static_cast<u128>(0) : to_u128(w);
    return t;
}

// The largest width we accept from a table builder before retrying at a higher precision:
// 2^8 units of 2^-128, i.e. every threshold within 2^-120 of its probability.
inline constexpr u128 kMaxWidth = 256;

}  // namespace dpnoise::exact::ct
