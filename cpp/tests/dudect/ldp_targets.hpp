// cpp/tests/dudect/ldp_targets.hpp -- the timing checks' targets for the constant-time local-DP
// randomizers (ldp/constant_time/randomizers.hpp), built into the same harness
// (dudect.cpp, ct_valgrind.cpp compiled with -DDUDECT_LDP_TARGETS). One report of a secret item:
//   ct_sue, ct_oue   a unary report over d = SCALE columns (epsilon = 1)
//   ct_dbitflip      dBitFlip bits over b = min(SCALE, 63) buckets of one public row (keys 0..b-1)
//   ct_hadamard      1-bit Hadamard over D = the power of two >= SCALE rows
//   ct_cms, ct_hcms  count-mean sketch (16 hashes, width m = the power of two >= max(SCALE, 8))
// and, to show that the checks have power, vt_sue: today's exact SUE kernel (geometric skips).
// The secret s in [-2^40, 2^40] becomes the item x = ((s + 2^40) D) >> 41 in [0, D] (a multiply
// and a shift: no division, whose time may depend on its operands); s = 0 gives x = D/2.
// Output classes: unary, dBitFlip and CMS reports with few ones (popcount <= mean - sd) vs many
// (>= mean + sd); Hadamard and HCMS reports whose bit is 0 vs 1.
#pragma once
#include <algorithm>
#include <cmath>
#include <iterator>
#include <cstdint>
#include <string>
#include <vector>

#include "dpnoise/ldp/constant_time/randomizers.hpp"
#include "dpnoise/ldp/unary_encoding.hpp"
#include "targets.hpp"

namespace dudect_ldp_targets {

using namespace dpnoise;
using dudect_targets::BufferWords;
using dudect_targets::Reader;
using dudect_targets::kBound;

enum class Target { ct_sue, ct_oue, ct_dbitflip, ct_hadamard, ct_cms, ct_hcms, vt_sue };
inline const char* const kTargetNames[] = {"ct_sue", "ct_oue", "ct_dbitflip", "ct_hadamard", "ct_cms", "ct_hcms", "vt_sue"};

inline bool parse_target(const std::string& s, Target& t) {
    const auto* first = std::begin(kTargetNames);
    const auto* found = std::find(first, std::end(kTargetNames), s);
    t = static_cast<Target>(found - first);
    return found != std::end(kTargetNames);
}

inline uint64_t power_of_two_at_least(uint64_t v) {
    uint64_t p = 1;
    while (p < v) p <<= 1;
    return p;
}

struct Samplers {
    uint64_t scale, d, b, D, m;
    exact::ct::RandomizedResponseTable half, full;  // k = 2 at gamma/2 and gamma (gamma = 1)
    exact::ct::BitChannel sue, oue, cms_signs;
    exact::ct::SketchHashCT hash;
    ldp::UnaryEncoding vt;
    std::vector<int64_t> keys;
    mutable std::vector<uint64_t> row;  // the last unary / dBitFlip / CMS report
    mutable uint8_t bit = 0;            // the last Hadamard / HCMS bit

    explicit Samplers(uint64_t s)
        : scale(s), d(s < 2 ? 2 : s), b(s < 63 ? (s < 1 ? 1 : s) : 63), D(power_of_two_at_least(s < 2 ? 2 : s)),
          m(power_of_two_at_least(s < 8 ? 8 : s)),
          half(exact::RandomizedResponseKernel(2, exact::BigUint(1), exact::BigUint(2))),
          full(exact::RandomizedResponseKernel(2, exact::BigUint(1), exact::BigUint(1))),
          sue(exact::ct::BitChannelKind::symmetric, half), oue(exact::ct::BitChannelKind::optimized, full),
          cms_signs(exact::ct::cms_sign_channel(half)),
          hash{random::StreamKey{{1, 2, 3, 4, 5, 6, 7, 8}}, 16, 0},
          vt(ldp::UnaryKind::symmetric, d, exact::BigUint(1), exact::BigUint(1)), keys(b), row(d / 64 + m / 64 + 2) {
        hash.width = m;
        for (uint64_t t = 0; t < b; ++t) keys[t] = static_cast<int64_t>(t);
    }

    // the domain the secret is mapped into (public)
    uint64_t domain(Target t) const {
        switch (t) {
            case Target::ct_dbitflip: return b;
            case Target::ct_hadamard: return D - 1;
            case Target::ct_cms:
            case Target::ct_hcms: return uint64_t{1} << 20;
            default: return d - 1;
        }
    }

    int64_t release(Target t, int64_t secret, BufferWords& words) const {
        Reader bits(words);
        const uint64_t x = ((static_cast<uint64_t>(secret) + (uint64_t{1} << 40)) * domain(t)) >> 41;
        switch (t) {  // t is public: the same branch on every measurement of a run
            case Target::ct_sue: sue.row(bits, x, [](uint64_t c) { return c; }, d, row.data()); break;
            case Target::ct_oue: oue.row(bits, x, [](uint64_t c) { return c; }, d, row.data()); break;
            case Target::ct_dbitflip: {
                const int64_t* k = keys.data();
                sue.row(bits, x, [k](uint64_t c) { return static_cast<uint64_t>(k[c]); }, b, row.data());
                break;
            }
            case Target::ct_hadamard: {
                const unsigned t2 = static_cast<unsigned>(__builtin_ctzll(D));
                const uint64_t j = bits.bits(t2);
                bit = static_cast<uint8_t>(exact::ct::hadamard_bit_ct(bits, full, exact::ct::parity64(j & x)));
                return static_cast<int64_t>(j * 2 + bit);
            }
            case Target::ct_cms: {
                const uint64_t l = exact::ct::cms_report_ct(bits, hash, cms_signs, x, reinterpret_cast<uint8_t*>(row.data()));
                return static_cast<int64_t>(l ^ row[0]);
            }
            case Target::ct_hcms: {
                uint64_t l = 0, a = 0;
                bit = static_cast<uint8_t>(exact::ct::hcms_report_ct(bits, hash, full, x, l, a));
                return static_cast<int64_t>((l * m + a) * 2 + bit);
            }
            case Target::vt_sue: vt.privatize(bits, x, row.data()); break;
        }
        uint64_t acc = 0;
        for (size_t w = 0; w < (d + 63) / 64 && w < row.size(); ++w) acc ^= row[w];
        return static_cast<int64_t>(acc);
    }

    // 0: few ones / bit 0; 1: many ones / bit 1; -1: neither (reports of the secret 0)
    int output_class(Target t, int64_t) const {
        if (t == Target::ct_hadamard || t == Target::ct_hcms) return bit;
        uint64_t cols = d, ones = 0;
        double q = 1 / (std::exp(0.5) + 1);  // SUE, dBitFlip, CMS at gamma/2 = 1/2
        if (t == Target::ct_oue) q = 1 / (std::exp(1.0) + 1);
        if (t == Target::ct_dbitflip) cols = b;
        if (t == Target::ct_cms) {
            cols = m;
            q = 1 - q;  // a sign bit is 1 (−1) unless kept at h or flipped elsewhere: about 1 − q
        }
        const uint8_t* bytes = reinterpret_cast<const uint8_t*>(row.data());
        for (uint64_t c = 0; c < cols; ++c) ones += (bytes[c / 8] >> (c % 8)) & 1u;
        const double mean = static_cast<double>(cols) * q, sd = std::sqrt(static_cast<double>(cols) * q * (1 - q));
        const double o = static_cast<double>(ones);
        return o <= mean - sd ? 0 : (o >= mean + sd ? 1 : -1);
    }
};

}  // namespace dudect_ldp_targets
