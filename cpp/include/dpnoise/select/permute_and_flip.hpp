// dpnoise/select/permute_and_flip.hpp -- permute-and-flip (McKenna & Sheldon 2020),
// which is report-noisy-max with exponential noise (Ding et al. 2021), exact.
//
// Permute-and-flip visits the candidates in a uniformly random order and stops at the first
// r accepted with probability p_r = e^{-gamma (q* - q_r)} (q* the round's maximum, whose p = 1,
// so it stops). The coins are independent of the order, so the output is the first accepted
// candidate of a uniform order, i.e. a uniform member of the accepted set A = {r : coin_r = 1}
// (docs/selection.md, Lemma 1). The kernel draws every coin in one sequential pass (8 random bits
// for almost every candidate, none for the maxima) and then one uniform index into A.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "dpnoise/exact/refinement_policy.hpp"
#include "dpnoise/exact/uniform.hpp"
#include "dpnoise/select/candidates.hpp"
#include "dpnoise/select/gap_coins.hpp"

namespace dpnoise::select {

// True when some byte of w is zero (exact as a test; Mycroft's zero-byte trick).
inline bool has_zero_byte(uint64_t w) { return ((w - 0x0101010101010101ull) & ~w & 0x8080808080808080ull) != 0; }

template <class Policy = exact::NeverForceRefinement>
struct PermuteAndFlip {
    const GapCoins* coins;
    std::vector<uint32_t>* accepted;

    // Candidates at least far_gap() below the maximum (almost all of them, usually) accept with
    // probability below 2^-8: a nonzero first byte of their uniform rejects them. The pass takes
    // one 64-bit word per 8 candidates (byte t is candidate t's first byte) and looks at the
    // candidates one by one only when the word has a zero byte or a near candidate is among them.
    template <class Bits>
    size_t operator()(Bits& bits, const int64_t* v, const Candidates& c) const {
        const int64_t m = max_score(v, c);
        const uint64_t far = coins->far_gap();
        // v <= near_floor means gap >= far; scores are within +-2^61, so this cannot wrap
        const int64_t near_floor = (Policy::kForce || far > (uint64_t{1} << 62)) ? INT64_MIN
                                                                                 : m - static_cast<int64_t>(far);
        std::vector<uint32_t>& a = *accepted;
        a.clear();
        auto decide = [&](size_t j, uint64_t r8) {
            const int64_t x = v[c[j]];
            const uint64_t gap = static_cast<uint64_t>(m) - static_cast<uint64_t>(x);  // < 2^62
            if (x <= near_floor && r8 != 0) return;  // R >= 2^-8 > e^{-gamma gap}
            if (gap == 0 && !Policy::kForce) {
                a.push_back(static_cast<uint32_t>(j));
                return;
            }
            if (coins->template accept_with<Bits, Policy>(bits, gap, r8)) a.push_back(static_cast<uint32_t>(j));
        };
        size_t j = 0;
        for (; j + 8 <= c.size; j += 8) {
            const uint64_t w = bits.bits(64);
            bool near = false;
            for (size_t t = 0; t < 8; ++t) near |= v[c[j + t]] > near_floor;
            if (!near && !has_zero_byte(w)) continue;
            for (size_t t = 0; t < 8; ++t) decide(j + t, (w >> (8 * t)) & 0xff);
        }
        for (; j < c.size; ++j) decide(j, bits.bits(8));
        return a.size() == 1 ? a[0] : a[exact::uniform_below(bits, a.size())];
    }
};

}  // namespace dpnoise::select
