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

template <class Policy = exact::NeverForceRefinement>
struct PermuteAndFlip {
    const GapCoins* coins;
    std::vector<uint32_t>* accepted;

    template <class Bits>
    size_t operator()(Bits& bits, const int64_t* v, const Candidates& c) const {
        const int64_t m = max_score(v, c);
        std::vector<uint32_t>& a = *accepted;
        a.clear();
        for (size_t j = 0; j < c.size; ++j) {
            // m >= v, both within +-2^61 (score_rows.hpp): the gap fits 63 bits
            const uint64_t gap = static_cast<uint64_t>(m) - static_cast<uint64_t>(v[c[j]]);
            if (coins->template accept<Bits, Policy>(bits, gap)) a.push_back(static_cast<uint32_t>(j));
        }
        return a.size() == 1 ? a[0] : a[exact::uniform_below(bits, a.size())];
    }
};

}  // namespace dpnoise::select
