// dpnoise/select/exponential_mechanism.hpp -- the exponential mechanism (McSherry & Talwar
// 2007), P(r) proportional to e^{gamma q_r}, exact: rejection sampling from the uniform
// proposal, accepting r with probability e^{-gamma (q* - q_r)} (<= 1, q* the round's maximum).
// An accepted proposal is r with probability proportional to (1/n) e^{gamma (q_r - q*)}: the
// exponential mechanism's law. The expected number of proposals is n / sum_r e^{-gamma (q* - q_r)},
// at most n. Equivalent to Gumbel-max, and top-k by peeling equals the one-shot Gumbel top-k
// (Durfee & Rogers 2019).
#pragma once
#include <cstddef>
#include <cstdint>

#include "dpnoise/exact/refinement_policy.hpp"
#include "dpnoise/exact/uniform.hpp"
#include "dpnoise/select/candidates.hpp"
#include "dpnoise/select/gap_coins.hpp"

namespace dpnoise::select {

template <class Policy = exact::NeverForceRefinement>
struct ExponentialMechanism {
    const GapCoins* coins;

    template <class Bits>
    size_t operator()(Bits& bits, const int64_t* v, const Candidates& c) const {
        const int64_t m = max_score(v, c);
        for (;;) {
            const size_t j = c.size == 1 ? 0 : static_cast<size_t>(exact::uniform_below(bits, c.size));
            const uint64_t gap = static_cast<uint64_t>(m) - static_cast<uint64_t>(v[c[j]]);
            if (coins->template accept<Bits, Policy>(bits, gap)) return j;
        }
    }
};

}  // namespace dpnoise::select
